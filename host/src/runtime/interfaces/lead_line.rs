//! The teammate's line to its lead, on which a question waits: a
//! `permission_request` sent to the lead's inbox, and the lead's
//! `permission_response` taken from the teammate's own (see
//! [`ask.rs`](super::ask) for the rules). Owned data only, so a question
//! can also be asked from beside a tool call: the network proxy asks about
//! an unnamed host while the Bash call that connects is running
//! ([`super::network_ask`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::blocking;
use crate::protocol::{
    Parsed, PermissionRequest, PermissionResponse, ProtocolMessage, WireMessage,
};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::state::{Fixed, TeamSeat};
use crate::runtime::{GuestError, Stopping};
use crate::store::{OutgoingMessage, Team};

/// What asking the lead needs (see the module docs).
#[derive(Clone)]
pub(crate) struct LeadLine {
    store: Team,
    me: String,
    color: String,
    lead: String,
    wake: Arc<Notify>,
    poll: Duration,
    stopping: Stopping,
}

impl LeadLine {
    /// The line of the teammate `fixed` describes, in `team`.
    pub(crate) fn new(fixed: &Fixed, team: &TeamSeat) -> LeadLine {
        LeadLine {
            store: team.store.clone(),
            me: fixed.identity.name.clone(),
            color: fixed.identity.color.clone(),
            lead: fixed.lead.clone(),
            wake: team.wake.clone(),
            poll: team.poll_interval,
            stopping: team.stopping.clone(),
        }
    }

    /// The teammate's name.
    pub(crate) fn me(&self) -> &str {
        &self.me
    }

    /// Why the host is stopping the teammate, if it is: no answer can come.
    pub(crate) fn stopping(&self) -> Option<String> {
        self.stopping.reason().map(str::to_string)
    }

    /// Sends `request` to the lead's inbox. A store failure is told to the
    /// guest (`unavailable`), not trapped.
    pub(crate) async fn send(&self, request: &PermissionRequest) -> Result<(), GuestError> {
        let (team, lead) = (self.store.clone(), self.lead.clone());
        let msg = OutgoingMessage::new(&self.me, request.to_text()).color(Some(self.color.clone()));
        blocking(move || team.send(&lead, msg).map(|_| ()))
            .await
            .map_err(|e| {
                e.trap_to_wit(|e| WitError::Unavailable(format!("could not ask the lead: {e}")))
            })
    }

    /// Waits for the lead's `permission_response` to `id`, consuming it.
    pub(crate) async fn wait_for_answer(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Result<PermissionResponse, GuestError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let (team, me, lead, want) = (
                self.store.clone(),
                self.me.clone(),
                self.lead.clone(),
                id.to_string(),
            );
            let taken = blocking(move || {
                team.take_where(&me, |m| {
                    // A forged answer (a lead entry that did not verify) is
                    // taken too: it counts as a refusal, as the reference has it.
                    let text = crate::store::lead_guard::forged_original(m).unwrap_or(&m.text);
                    m.from == lead
                        && matches!(ProtocolMessage::parse(text),
                            Parsed::Protocol(ProtocolMessage::PermissionResponse(r)) if r.request_id == want)
                })
            })
            .await
            .map_err(|e| {
                e.trap_to_wit(|e| WitError::Unavailable(format!("could not read the inbox: {e}")))
            })?;
            if let Some(m) = taken.first() {
                if crate::store::lead_guard::forged_original(m).is_some() {
                    let why = format!(
                        "an answer to {id} claimed to come from the lead but did not verify (forged); the call was not run"
                    );
                    self.record_denial(id, &why).await;
                    return Err(WitError::Denied(why).into());
                }
                if let Parsed::Protocol(ProtocolMessage::PermissionResponse(r)) =
                    ProtocolMessage::parse(&m.text)
                {
                    return Ok(r);
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                let why = format!(
                    "no answer from the lead to {id} within {timeout:?} (ask_timeout); the call was not run"
                );
                self.record_denial(id, &why).await;
                return Err(WitError::Denied(why).into());
            }
            let nap = (deadline - now).min(self.poll);
            let stopping = self.stopping.clone();
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(nap) => {}
                reason = stopping.stopped() => {
                    let why = format!(
                        "the host is stopping ({reason}): the lead's answer to {id} can no longer come; the call was not run"
                    );
                    self.record_denial(id, &why).await;
                    return Err(WitError::Denied(why).into());
                }
            }
        }
    }

    /// Records the denial a timeout or a stop gave `id` in the teammate's
    /// history, from the host (never from the lead): the request is
    /// answered, so `teamhost status` and the live view stop offering it to
    /// the lead.
    pub(crate) async fn record_denial(&self, id: &str, why: &str) {
        let (team, me) = (self.store.clone(), self.me.clone());
        let text = PermissionResponse::deny(id, why).to_text();
        let recorded = blocking(move || {
            team.record_in_history(
                &me,
                OutgoingMessage::new(crate::protocol::HOST_SENDER, text),
            )
        })
        .await;
        if recorded.is_err() {
            tracing::warn!(teammate = %self.me, request = id, "could not record the denied request as answered");
        }
    }
}
