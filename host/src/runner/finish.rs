//! How a runner ends: an approved shutdown, a failure, or a kill. Each one
//! leaves the team consistent: the member is removed from the config, its
//! unfinished tasks return to `pending`, and the lead is told in the
//! reference's words.

use super::Runner;
use crate::protocol::{ShutdownApproved, WireMessage};
use crate::store::OutgoingMessage;
use crate::teammate::TeammateState;

pub use crate::protocol::HOST_SENDER;

impl Runner {
    /// The guest approved `request_id`: `shutdown_approved` to the lead, then
    /// leave the team.
    pub(super) async fn stop_approved(&mut self, request_id: String) -> TeammateState {
        let approved = ShutdownApproved::new(request_id, self.name()).with_pane(
            self.instance.agent().fixed.identity.pane_id.clone(),
            self.instance.agent().fixed.identity.backend_type.clone(),
        );
        let msg = OutgoingMessage::new(self.name(), approved.to_text())
            .color(Some(self.color().to_string()));
        self.tell_lead(msg).await;
        self.leave(false, None).await;
        TeammateState::Completed
    }

    /// The guest trapped or broke a limit.
    pub(super) async fn stop_failed(&mut self, reason: String) -> TeammateState {
        tracing::warn!(teammate = %self.name(), %reason, "teammate failed");
        self.leave(true, Some(format!("{} failed: {reason}", self.name())))
            .await;
        TeammateState::Failed(reason)
    }

    /// The host stopped the teammate.
    pub(super) async fn stop_killed(&mut self) -> TeammateState {
        self.leave(true, None).await;
        TeammateState::Killed
    }

    /// Unassigns the teammate's tasks, removes it from the config and tells
    /// the lead (`why` first, when given).
    async fn leave(&mut self, terminated: bool, why: Option<String>) {
        // A lead component stays its team's lead member (the team is its
        // config): its end is logged, nothing is removed or told to itself.
        if self.is_lead() {
            tracing::info!(team = %self.team().name(), why = ?why, "the team's lead component stopped");
            return;
        }
        let (team, name, id) = (
            self.team().clone(),
            self.name().to_string(),
            self.agent_id().to_string(),
        );
        let result = tokio::task::spawn_blocking(move || {
            let unassigned = team.unassign_agent(&name, &id, terminated)?;
            match team.remove_member(&name) {
                Ok(_) | Err(crate::Error::MemberNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            Ok(unassigned.notification)
        })
        .await;
        let notice = match result {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => format!(
                "{} stopped, but its tasks or membership could not be updated: {e}",
                self.name()
            ),
            Err(e) => format!(
                "{} stopped, but cleaning up after it failed: {e}",
                self.name()
            ),
        };
        let text = match why {
            Some(why) => format!("{why}. {notice}"),
            None => notice,
        };
        self.tell_lead(OutgoingMessage::new(HOST_SENDER, text))
            .await;
    }
}
