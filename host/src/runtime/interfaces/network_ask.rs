//! The network's questions (issue 46). A host no rule of the teammate's
//! names is a `permission_request` for tool `Network`, input
//! `{"host": …, "port": …}`, sent to the lead like any tool call's
//! (so `[approvals]` routes it to the lead, the person or the policy, and
//! the live view shows it), with one suggestion: allow
//! `Network(domain:HOST)` for the session.
//!
//! | answer | the proxy's [`Answer`] |
//! |---|---|
//! | denied, malformed, bound to another call, forged, none in `ask_timeout`, the host stopping | [`Answer::No`], with the reason |
//! | allowed, with an `addRules` allow update naming `Network(domain:HOST)` (the person's "allow and remember") | [`Answer::ForTheRun`]: this host, on any allowed port, until the teammate ends |
//! | allowed otherwise | [`Answer::Once`]: this connection |
//!
//! At most `max_pending_requests` questions wait at once (a flood of
//! connections to new names is refused, not queued to the lead).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use super::ask::random_suffix;
use super::lead_line::LeadLine;
use crate::network::{Answer, Asker, BoxFuture, Target};
use crate::protocol::{PermissionGrant, PermissionOutcome, PermissionRequest};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::GuestError;

/// The tool name a network question carries.
pub(crate) const NETWORK_TOOL: &str = "Network";

/// Asks the teammate's lead about hosts (see the module docs).
pub(crate) struct NetworkAsker {
    line: LeadLine,
    timeout: Duration,
    max_pending: usize,
    pending: AtomicUsize,
}

impl NetworkAsker {
    /// Asks on `line`, waiting `timeout` for each answer, at most
    /// `max_pending` at once.
    pub(crate) fn new(line: LeadLine, timeout: Duration, max_pending: usize) -> NetworkAsker {
        NetworkAsker {
            line,
            timeout,
            max_pending,
            pending: AtomicUsize::new(0),
        }
    }

    async fn ask_lead(&self, target: &Target) -> Answer {
        if let Some(why) = self.line.stopping() {
            return Answer::No(format!(
                "the host is stopping ({why}): nobody can answer, so nothing was asked"
            ));
        }
        let host = target.host.to_string();
        let input = json!({"host": host, "port": target.port});
        let rule = format!("domain:{host}");
        let request = PermissionRequest::new(
            self.line.me(),
            NETWORK_TOOL,
            format!("toolu_{}", random_suffix(24)),
            format!("Network {target} (no network rule of the teammate names this host)"),
            input.clone(),
        )
        .with_suggestions(vec![json!({
            "type": "addRules",
            "rules": [{"toolName": NETWORK_TOOL, "ruleContent": rule}],
            "behavior": "allow",
            "destination": "session",
        })]);
        if let Err(e) = self.line.send(&request).await {
            return Answer::No(said(&e));
        }
        let id = request.request_id.clone();
        let response = match self.line.wait_for_answer(&id, self.timeout).await {
            Ok(r) => r,
            Err(e) => return Answer::No(said(&e)),
        };
        if let Some(why) =
            response.binding_mismatch(Some(&request.tool_use_id), NETWORK_TOOL, &input)
        {
            return Answer::No(format!("the answer to {id} is for another call ({why})"));
        }
        match response.outcome() {
            Err(e) => Answer::No(format!("the answer to {id} is malformed ({e})")),
            Ok(PermissionOutcome::Denied(why)) => Answer::No(format!("{id} was denied: {why}")),
            Ok(PermissionOutcome::Allowed(grant)) if remembers(grant, &rule) => Answer::ForTheRun,
            Ok(PermissionOutcome::Allowed(_)) => Answer::Once,
        }
    }
}

impl Asker for NetworkAsker {
    fn ask<'a>(&'a self, target: &'a Target) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            if self.pending.fetch_add(1, Ordering::SeqCst) >= self.max_pending {
                self.pending.fetch_sub(1, Ordering::SeqCst);
                return Answer::No(format!(
                    "{} network question(s) already wait for an answer (max_pending_requests)",
                    self.max_pending
                ));
            }
            let answer = self.ask_lead(target).await;
            self.pending.fetch_sub(1, Ordering::SeqCst);
            answer
        })
    }
}

/// Whether `grant` carries an allow update for `Network(rule)`.
fn remembers(grant: &PermissionGrant, rule: &str) -> bool {
    grant.permission_updates.iter().any(|u| {
        u["type"] == "addRules"
            && u["behavior"] == "allow"
            && u["rules"].as_array().is_some_and(|rules| {
                rules.iter().any(|r: &Value| {
                    r["toolName"] == NETWORK_TOOL && r["ruleContent"].as_str() == Some(rule)
                })
            })
    })
}

/// What a failed ask tells the proxy (and so the program that connected).
fn said(e: &GuestError) -> String {
    match e.as_wit() {
        Some(
            WitError::Denied(m)
            | WitError::NotFound(m)
            | WitError::Conflict(m)
            | WitError::Invalid(m)
            | WitError::Unavailable(m),
        ) => m.clone(),
        None => "the host could not reach the teammate's inbox".into(),
    }
}
