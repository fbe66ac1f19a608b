//! Signed lead entries at the inbox: a [`LeadGuard`] installed on a
//! [`Store`](super::Store) signs what a lead writes into a keyed inbox, and
//! screens what a keyed teammate reads from its own (the scheme is
//! [`crate::protocol::lead_sig`]'s).
//!
//! | side | when | what the guard does |
//! |---|---|---|
//! | lead | [`Team::append_entries`](super::Team::append_entries) to an inbox it holds a key for, from `team-lead`, `user` or `system` | adds `lead_sig` (the entry's last key) |
//! | teammate | every read of its own inbox ([`Team::read_inbox`](super::Team::read_inbox), `unread`, `take_where`) | an entry that claims the lead and does not verify is handed on **forged**: its `text` behind an [`UNVERIFIED_MARK`] line and `verified: false` (so no protocol message is parsed out of it), and one warning is logged |
//! | teammate | an entry consumed | its `msg_id` is spent: the same entry written again later is a replay, forged |
//!
//! The entry on disk and in the history stays as the lead wrote it; only
//! what this process's readers see changes. Private keys live in this
//! guard, in memory, and go nowhere else.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::InboxMessage;
use crate::protocol::lead_sig::{
    self, LeadSigningKey, LeadVerifyKey, SignedFields, Verdict, SIG_FIELD,
};

/// How a forged entry's text starts, before the reason and the original
/// text; the model reading it sees that the lead did not send it.
pub const UNVERIFIED_MARK: &str = "[unverified: this message claims to come from ";

/// The entry key set to `false` on a forged entry a reader sees.
pub const VERIFIED_FIELD: &str = "verified";

/// Signs and screens lead entries for one process (see the module docs).
#[derive(Default)]
pub struct LeadGuard {
    verify: Option<Verifying>,
    signers: Mutex<HashMap<String, Arc<LeadSigningKey>>>,
}

impl std::fmt::Debug for LeadGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadGuard")
            .field("verifies_for", &self.verify.as_ref().map(|v| &v.agent))
            .field("signs_for", &self.signers.lock().map(|s| s.len()).ok())
            .finish()
    }
}

/// The teammate side: whose inbox, which key, since when.
struct Verifying {
    agent: String,
    lead_name: String,
    key: LeadVerifyKey,
    earliest_ms: i64,
    spent: Mutex<HashSet<String>>,
    warned: Mutex<HashSet<String>>,
}

impl LeadGuard {
    /// A guard that only signs, for keys added with [`LeadGuard::sign_for`].
    pub fn signing() -> LeadGuard {
        LeadGuard::default()
    }

    /// A guard for the teammate `agent` holding `key`, started at
    /// `start_ms` (Unix ms), whose lead is `lead_name`: it screens that
    /// inbox as the module docs say.
    pub fn verifying(agent: &str, lead_name: &str, key: LeadVerifyKey, start_ms: i64) -> Self {
        let earliest_ms = lead_sig::earliest_accepted_ms(start_ms, key.key_time_ms);
        LeadGuard {
            verify: Some(Verifying {
                agent: agent.to_string(),
                lead_name: lead_name.to_string(),
                key,
                earliest_ms,
                spent: Mutex::default(),
                warned: Mutex::default(),
            }),
            signers: Mutex::default(),
        }
    }

    /// Whether this guard screens `agent`'s inbox (it holds that
    /// teammate's lead key).
    pub fn verifies_for(&self, agent: &str) -> bool {
        self.verify.as_ref().is_some_and(|v| v.agent == agent)
    }

    /// From now on, lead entries written into `agent`'s inbox are signed
    /// with `key` (replacing an earlier key for that inbox).
    pub fn sign_for(&self, agent: &str, key: Arc<LeadSigningKey>) {
        if let Ok(mut s) = self.signers.lock() {
            s.insert(agent.to_lowercase(), key);
        }
    }

    /// Forgets `agent`'s key (the teammate left, or failed to start).
    pub fn forget(&self, agent: &str) {
        if let Ok(mut s) = self.signers.lock() {
            s.remove(&agent.to_lowercase());
        }
    }

    /// Signs `entry` when it goes into a keyed inbox from a lead sender.
    pub(crate) fn sign(&self, to: &str, entry: &mut InboxMessage) {
        if !lead_sig::is_lead_sender(&entry.from) {
            return;
        }
        let Some(key) = self
            .signers
            .lock()
            .ok()
            .and_then(|s| s.get(&to.to_lowercase()).cloned())
        else {
            return;
        };
        if entry.msg_id.is_none() {
            entry.msg_id = Some(uuid::Uuid::new_v4().to_string());
        }
        entry.extra.remove(SIG_FIELD);
        let sig = key.sign(&fields(entry));
        entry.extra.insert(SIG_FIELD.into(), Value::String(sig));
    }

    /// The entry as `agent`'s readers in this process see it: unchanged,
    /// or marked forged (see the module docs).
    pub(crate) fn screen(&self, agent: &str, entry: &mut InboxMessage) {
        let Some(v) = self.verify.as_ref().filter(|v| v.agent == agent) else {
            return;
        };
        let sig = entry
            .extra
            .get(SIG_FIELD)
            .and_then(Value::as_str)
            .map(str::to_string);
        let verdict = {
            let spent = v.spent.lock().map(|s| s.clone()).unwrap_or_default();
            lead_sig::classify(
                Some(&v.key),
                &v.lead_name,
                &fields(entry),
                sig.as_deref(),
                |id| spent.contains(id),
                v.earliest_ms,
            )
        };
        let Verdict::Forged(why) = verdict else {
            return;
        };
        let fingerprint = format!(
            "{}\u{0}{}\u{0}{}",
            entry.msg_id.as_deref().unwrap_or(""),
            entry.timestamp,
            entry.text
        );
        if v.warned.lock().is_ok_and(|mut w| w.insert(fingerprint)) {
            tracing::warn!(
                teammate = %agent,
                from = %entry.from,
                msg_id = %entry.msg_id.as_deref().unwrap_or("-"),
                "forged lead entry: {why}; shown to the model as unverified, its protocol content not acted on"
            );
        }
        entry.text = format!(
            "{UNVERIFIED_MARK}{} but {why}; your lead did not send it, and nothing in it was acted on]\n{}",
            entry.from, entry.text
        );
        entry
            .extra
            .insert(VERIFIED_FIELD.into(), Value::Bool(false));
    }

    /// Records consumed entries of `agent`'s: their `msg_id`s are spent.
    pub(crate) fn spend(&self, agent: &str, taken: &[InboxMessage]) {
        let Some(v) = self.verify.as_ref().filter(|v| v.agent == agent) else {
            return;
        };
        if let Ok(mut spent) = v.spent.lock() {
            spent.extend(
                taken
                    .iter()
                    .filter(|e| lead_sig::claims_lead(&e.from, &v.lead_name))
                    .filter_map(|e| e.msg_id.clone()),
            );
        }
    }
}

/// The original text of an entry a [`LeadGuard`] marked forged, for code
/// that turns a forged answer into a refusal; `None` for any other entry.
pub fn forged_original(entry: &InboxMessage) -> Option<&str> {
    if entry.extra.get(VERIFIED_FIELD) != Some(&Value::Bool(false)) {
        return None;
    }
    entry
        .text
        .strip_prefix(UNVERIFIED_MARK)
        .and_then(|rest| rest.split_once("]\n"))
        .map(|(_, original)| original)
}

fn fields(e: &InboxMessage) -> SignedFields<'_> {
    SignedFields {
        msg_id: e.msg_id.as_deref().unwrap_or(""),
        from: &e.from,
        timestamp: &e.timestamp,
        text: &e.text,
        summary: e.summary.as_deref(),
        color: e.color.as_deref(),
        from_plugin: e.from_plugin.as_deref(),
    }
}
