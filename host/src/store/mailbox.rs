//! Inboxes and the history of consumed messages (`teams/{team}/inboxes/{agent}.json` and `history/{agent}.jsonl` in the file store).
//!
//! An inbox is a JSON array of entries `{from, text, summary?, timestamp,
//! color?, from_plugin?, msgV, msg_id, type, read}` (and a 2.1.332 lead's
//! `lead_sig` last, kept with other unknown keys). Consuming follows the current reference:
//! taken entries are removed from the array, and legacy entries already flagged
//! `read: true` count as consumed. Nothing is lost: before an entry leaves the
//! inbox it is appended to `teams/{team}/history/{agent}.jsonl` (outside
//! `inboxes/`, where the reference never looks), under the same lock. A crash
//! between the two steps can leave a message both in history and still unread;
//! it is then delivered again and `msg_id` tells the copies apart — delivery is
//! at least once, never zero times.
//!
//! A message may also go to the history without passing through the inbox
//! ([`Team::record_in_history`]): the runner does that for the lead's idle
//! notifications its [notification level](crate::runner::notify) keeps out
//! of the inbox. Such entries are stamped like delivered ones and marked
//! `read: true`. The history is in the order entries reached it, so one
//! recorded directly may precede messages sent earlier but consumed later.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{StoreEvent, Team};
use crate::error::{Error, Result};
use crate::protocol::time::timestamp_now;

/// Where a reader stopped in a history, for reading only what came after.
/// Opaque: only the backend that made it understands it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryCursor {
    /// Which version of the history (a file's inode; a memory generation).
    pub epoch: u64,
    /// How far into it (bytes; entries).
    pub offset: u64,
}

/// What [`TeamStore::history_since`](super::TeamStore::history_since) read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryChunk {
    /// The history is not the one the cursor was made on (replaced,
    /// truncated, removed): `entries` start from its beginning and whatever
    /// the reader kept must be dropped.
    pub restarted: bool,
    /// Entries after the cursor, oldest first.
    pub entries: Vec<InboxMessage>,
    /// Where to read from next time.
    pub cursor: HistoryCursor,
}

/// One inbox entry, as on disk. Unknown fields are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxMessage {
    /// Sender name.
    pub from: String,
    /// Plain text, or a protocol message as a JSON string.
    pub text: String,
    /// Short preview for a reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// ISO 8601 time of sending (`2026-11-21T22:24:52.591Z`).
    #[serde(default)]
    pub timestamp: String,
    /// Sender's colour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// The plugin or hook that sent it through SendMessage (Claude Code
    /// 2.1.332); covered by a lead's signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_plugin: Option<String>,
    /// Envelope version (`1`); absent on entries from older writers.
    #[serde(rename = "msgV", default, skip_serializing_if = "Option::is_none")]
    pub msg_v: Option<u32>,
    /// Unique message id (UUID); absent on entries from older writers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<String>,
    /// Envelope type (`"message"`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Legacy consumption flag: `true` means already consumed.
    #[serde(default)]
    pub read: bool,
    /// Fields written by other programs, preserved as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InboxMessage {
    /// Whether `other` is this very message (as sent: sender, time, text
    /// and id), whatever happened to it since (`read`, `consumedAt`).
    pub fn same_message(&self, other: &InboxMessage) -> bool {
        self.from == other.from
            && self.timestamp == other.timestamp
            && self.text == other.text
            && self.msg_id == other.msg_id
    }
}

/// A message to deliver; [`Team::deliver`] stamps the envelope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutgoingMessage {
    /// Sender name.
    pub from: String,
    /// Text (plain or protocol JSON).
    pub text: String,
    /// Optional preview.
    pub summary: Option<String>,
    /// Sender's colour (omitted for the lead, as the reference does).
    pub color: Option<String>,
}

impl OutgoingMessage {
    /// A message from `from` with `text`, no summary, no colour.
    pub fn new(from: impl Into<String>, text: impl Into<String>) -> Self {
        OutgoingMessage {
            from: from.into(),
            text: text.into(),
            ..Default::default()
        }
    }

    /// Sets the summary.
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }

    /// Sets the colour.
    pub fn color(mut self, color: Option<String>) -> Self {
        self.color = color;
        self
    }

    /// The on-disk entry, stamped now with a fresh `msg_id`.
    pub fn into_entry(self) -> InboxMessage {
        InboxMessage {
            from: self.from,
            text: self.text,
            summary: self.summary,
            timestamp: timestamp_now(),
            color: self.color,
            from_plugin: None,
            msg_v: Some(1),
            msg_id: Some(uuid::Uuid::new_v4().to_string()),
            kind: Some("message".into()),
            read: false,
            extra: Map::new(),
        }
    }
}

impl Team {
    /// Appends a message to `to`'s inbox without checking membership (for
    /// protocol plumbing such as the spawn prompt). Returns the entry written.
    pub fn deliver(&self, to: &str, msg: OutgoingMessage) -> Result<InboxMessage> {
        let mut entry = msg.into_entry();
        if let Some(guard) = self.store().lead_guard() {
            guard.sign(self.name(), to, &mut entry);
        }
        self.append_as_is(to, std::slice::from_ref(&entry))?;
        Ok(entry)
    }

    /// Sends to a member of the team. A name that is not a member is refused
    /// with [`Error::MemberNotFound`] listing the members (the reference would
    /// create an inbox nobody reads).
    pub fn send(&self, to: &str, msg: OutgoingMessage) -> Result<InboxMessage> {
        let name = self.member_name(to)?;
        self.deliver(&name, msg)
    }

    /// The name of the member `to` (a name or an agent id), or
    /// [`Error::MemberNotFound`] listing the members.
    fn member_name(&self, to: &str) -> Result<String> {
        let config = self.config()?;
        match config.member(to) {
            Some(member) => Ok(member.name.clone()),
            None => Err(Error::MemberNotFound {
                team: self.name().to_string(),
                name: to.to_string(),
                members: config.member_names(),
            }),
        }
    }

    /// Sends `msgs` to a member in one write: one synced rewrite of its inbox
    /// for all of them, in order, all or none. Returns the entries written.
    /// Refuses a name that is not a member as [`Team::send`] does.
    pub fn send_all(&self, to: &str, msgs: Vec<OutgoingMessage>) -> Result<Vec<InboxMessage>> {
        let name = self.member_name(to)?;
        let mut entries: Vec<InboxMessage> = msgs.into_iter().map(|m| m.into_entry()).collect();
        if let Some(guard) = self.store().lead_guard() {
            for entry in &mut entries {
                guard.sign(self.name(), &name, entry);
            }
        }
        if !entries.is_empty() {
            self.append_as_is(&name, &entries)?;
        }
        Ok(entries)
    }

    /// Sends one copy to every member except the sender; returns the recipients.
    pub fn broadcast(&self, msg: OutgoingMessage) -> Result<Vec<String>> {
        let config = self.config()?;
        let recipients: Vec<String> = config
            .members
            .iter()
            .filter(|m| m.name != msg.from)
            .map(|m| m.name.clone())
            .collect();
        // One entry each (its own `msg_id`), signed for its recipient where
        // a lead guard holds a key, all written together: the file store
        // shares their syncs (`store/files/fanout.rs`).
        let guard = self.store().lead_guard();
        let batch: Vec<(String, Vec<InboxMessage>)> = recipients
            .iter()
            .map(|to| {
                let mut entry = msg.clone().into_entry();
                if let Some(guard) = guard {
                    guard.sign(self.name(), to, &mut entry);
                }
                (to.clone(), vec![entry])
            })
            .collect();
        for (to, _) in &batch {
            super::names::agent_file_stem(to)?;
        }
        self.append_batch(&batch)?;
        Ok(recipients)
    }

    /// Writes `batch` (`(agent, entries)`, names already checked, entries
    /// already signed) as one group commit, and tells the observer of each
    /// inbox. On an error some inboxes may have been written and others not.
    pub(super) fn append_batch(&self, batch: &[(String, Vec<InboxMessage>)]) -> Result<()> {
        let written = match self.store().observer_key() {
            // Each told just below, whatever came of the batch.
            Some(key) => self
                .backend()
                .append_inboxes_announced(self.name(), batch, key),
            None => self.backend().append_inboxes(self.name(), batch),
        };
        // Told even when the batch failed part-way: some inboxes may have
        // been written, and a runner woken for nothing only looks again.
        for (to, _) in batch {
            self.emit(StoreEvent::InboxAppended {
                team: self.name().into(),
                agent: to.clone(),
            });
        }
        written
    }

    /// Appends already-stamped entries to `to`'s inbox in one atomic write.
    /// With a [`LeadGuard`](super::LeadGuard) holding a key for `to`, lead
    /// entries are signed on the way (`lead_sig`).
    pub fn append_entries(&self, to: &str, entries: &[InboxMessage]) -> Result<()> {
        let lead_named = |e: &InboxMessage| crate::protocol::lead_sig::is_lead_sender(&e.from);
        match self.store().lead_guard() {
            // Only lead-named entries are signed; a keyed teammate's own
            // writes into its inbox go through its guard's ledger.
            Some(guard)
                if guard.verifies_for(self.name(), to) || entries.iter().any(lead_named) =>
            {
                let mut signed = entries.to_vec();
                for e in &mut signed {
                    guard.sign(self.name(), to, e);
                }
                self.append_as_is(to, &signed)
            }
            _ => self.append_as_is(to, entries),
        }
    }

    /// [`Team::append_entries`] without the guard: the entries are already
    /// signed where they need to be.
    pub(super) fn append_as_is(&self, to: &str, entries: &[InboxMessage]) -> Result<()> {
        super::names::agent_file_stem(to)?;
        let key = self.store().observer_key();
        let written = match key {
            // Announced just below: the feed to the same observer may
            // leave the write's echo out.
            Some(key) => self
                .backend()
                .append_inbox_announced(self.name(), to, entries, key),
            None => self.backend().append_inbox(self.name(), to, entries),
        };
        // Announced even when the write failed: while it was under way the
        // feed may have taken another process's write to this inbox for
        // it, and a reader woken for nothing only looks again.
        if written.is_ok() || key.is_some() {
            self.emit(StoreEvent::InboxAppended {
                team: self.name().into(),
                agent: to.into(),
            });
        }
        written
    }

    /// Every entry of `agent`'s inbox, consumed or not (a snapshot).
    pub fn read_inbox(&self, agent: &str) -> Result<Vec<InboxMessage>> {
        super::names::agent_file_stem(agent)?;
        let mut all = self.backend().read_inbox(self.name(), agent)?;
        if let Some(guard) = self.store().lead_guard() {
            for e in &mut all {
                guard.screen(self.name(), agent, e);
            }
        }
        Ok(all)
    }

    /// The entries of `agent`'s inbox not yet consumed, oldest first.
    pub fn unread(&self, agent: &str) -> Result<Vec<InboxMessage>> {
        let mut all = self.read_inbox(agent)?;
        all.retain(|m| !m.read);
        Ok(all)
    }

    /// Consumes every unread entry: removes them (and legacy `read: true`
    /// entries) from the inbox after recording them in the history. Returns the
    /// unread ones, oldest first.
    pub fn take_unread(&self, agent: &str) -> Result<Vec<InboxMessage>> {
        self.take_where(agent, |_| true)
    }

    /// Consumes the unread entries `pick` selects, leaving the rest unread in
    /// order. Legacy `read: true` entries are moved to the history as well.
    /// `pick` may be asked again about the same entry on a retry.
    pub fn take_where(
        &self,
        agent: &str,
        mut pick: impl FnMut(&InboxMessage) -> bool,
    ) -> Result<Vec<InboxMessage>> {
        super::names::agent_file_stem(agent)?;
        let Some(guard) = self.store().lead_guard() else {
            return self.take_announced(agent, &mut |m| pick(m));
        };
        // `pick` sees each entry as this process's readers do (a forged
        // one marked), and what is taken is spent against replays.
        let mut taken = self.take_announced(agent, &mut |m| {
            let mut seen = m.clone();
            guard.screen(self.name(), agent, &mut seen);
            pick(&seen)
        })?;
        guard.screen_taken(self.name(), agent, &mut taken);
        Ok(taken)
    }

    /// The backend's take, told to this store's observer when it took
    /// anything ([`StoreEvent::InboxTaken`]); the feed to that observer may
    /// then leave the rewrite's echo out, which would only wake the taker
    /// to find nothing.
    fn take_announced(
        &self,
        agent: &str,
        pick: &mut dyn FnMut(&InboxMessage) -> bool,
    ) -> Result<Vec<InboxMessage>> {
        let Some(key) = self.store().observer_key() else {
            return self.backend().take_from_inbox(self.name(), agent, pick);
        };
        let taken = self
            .backend()
            .take_from_inbox_announced(self.name(), agent, pick, key)?;
        if !taken.is_empty() {
            self.emit(StoreEvent::InboxTaken {
                team: self.name().into(),
                agent: agent.into(),
            });
        }
        Ok(taken)
    }

    /// Appends `msg` to `agent`'s history without putting it in the inbox, as
    /// if it had been delivered and consumed at once: the entry is stamped as
    /// [`Team::deliver`] stamps one (fresh `msg_id`, `timestamp`), with `read:
    /// true`, and gets `consumedAt` like every history line. Serialised with
    /// takes from that inbox, so its line never interleaves with entries
    /// being consumed. The inbox is not touched and no store event is
    /// emitted: nobody is woken, there is nothing new to read. Returns the
    /// entry written.
    pub fn record_in_history(&self, agent: &str, msg: OutgoingMessage) -> Result<InboxMessage> {
        super::names::agent_file_stem(agent)?;
        let mut entry = msg.into_entry();
        entry.read = true;
        if let Some(guard) = self.store().lead_guard() {
            guard.note_own(self.name(), agent, &entry);
        }
        self.backend()
            .record_in_history(self.name(), agent, &entry)?;
        Ok(entry)
    }

    /// Every message `agent` consumed, oldest first. Entries that cannot be
    /// read back (only possible if someone edited the history) are skipped
    /// with a warning. In a keyed teammate's own process, a lead entry that
    /// did not verify comes back marked forged, as it was when consumed
    /// ([`LeadGuard`](super::LeadGuard)).
    pub fn history(&self, agent: &str) -> Result<Vec<InboxMessage>> {
        super::names::agent_file_stem(agent)?;
        let mut entries = self
            .backend()
            .history_since(self.name(), agent, HistoryCursor::default())?
            .entries;
        if let Some(guard) = self.store().lead_guard() {
            for e in &mut entries {
                guard.screen_history(self.name(), agent, e);
            }
        }
        Ok(entries)
    }

    /// The `msg_id` of every entry `agent` consumed (its history, as
    /// stored: nothing screened), for a [`LeadGuard`](super::LeadGuard)
    /// that must refuse them written again. None for an agent without a
    /// history.
    pub fn consumed_msg_ids(&self, agent: &str) -> Result<Vec<String>> {
        super::names::agent_file_stem(agent)?;
        Ok(self
            .backend()
            .history_since(self.name(), agent, HistoryCursor::default())?
            .entries
            .into_iter()
            .filter_map(|e| e.msg_id)
            .collect())
    }

    /// Agents (by file stem) with an inbox or a history in this team, sorted.
    pub fn agents_with_mail(&self) -> Result<Vec<String>> {
        self.backend().agents_with_mail(self.name())
    }
}

/// Entries as they go into a history: each gets `consumedAt` (`at`, ISO
/// 8601). Every backend stamps consumed entries with this.
pub fn consumed(entries: &[InboxMessage], at: &str) -> Vec<InboxMessage> {
    entries
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.extra
                .insert("consumedAt".into(), Value::String(at.to_string()));
            e
        })
        .collect()
}

/// [`consumed`], stamped now.
pub fn consumed_now(entries: &[InboxMessage]) -> Vec<InboxMessage> {
    consumed(entries, &timestamp_now())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::store::{NewTeam, Store, StoreObserver};

    /// Records every store event.
    #[derive(Default)]
    struct Seen(Mutex<Vec<StoreEvent>>);

    impl StoreObserver for Seen {
        fn changed(&self, event: &StoreEvent) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    #[test]
    fn record_in_history_appends_a_read_entry_without_touching_the_inbox_or_waking_anyone() {
        let tmp = tempfile::tempdir().unwrap();
        let seen = Arc::new(Seen::default());
        let store = Store::new(tmp.path()).with_observer(seen.clone());
        let team = store.team("t").unwrap();
        team.create(NewTeam::default()).unwrap();
        team.deliver("team-lead", OutgoingMessage::new("a", "unread one"))
            .unwrap();
        let before = seen.0.lock().unwrap().len();

        let entry = team
            .record_in_history(
                "team-lead",
                OutgoingMessage::new("w", "quiet").color(Some("blue".into())),
            )
            .unwrap();

        assert!(entry.read);
        assert_eq!(entry.msg_v, Some(1));
        assert!(entry.msg_id.is_some());
        let mut history = team.history("team-lead").unwrap();
        assert_eq!(history.len(), 1, "only the recorded entry: {history:?}");
        let consumed_at = history[0].extra.remove("consumedAt");
        assert!(consumed_at.is_some_and(|v| v.is_string()));
        assert_eq!(history[0], entry);
        let line =
            std::fs::read_to_string(team.file_paths().unwrap().history("team-lead").unwrap())
                .unwrap();
        let raw: Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(raw["read"], Value::Bool(true), "{raw}");
        let inbox = team.read_inbox("team-lead").unwrap();
        assert_eq!(inbox.len(), 1);
        assert_eq!(inbox[0].text, "unread one");
        assert_eq!(seen.0.lock().unwrap().len(), before, "no store event");

        // Consuming later appends after it: both are in the history.
        team.take_unread("team-lead").unwrap();
        let texts: Vec<String> = team
            .history("team-lead")
            .unwrap()
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(texts, ["quiet", "unread one"]);
    }
}
