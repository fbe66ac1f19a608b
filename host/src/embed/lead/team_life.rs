//! The team's life as the lead sees it: forming it (`create_team`), asking a
//! teammate to shut down, and deleting the team once every teammate has
//! left (waiting for those that approved their shutdown).

use std::sync::atomic::Ordering;

use crate::embed::lead::seat::{unavailable, LeadSeat};
use crate::protocol::{ShutdownRequest, WireMessage};
use crate::runtime::lead_host::LeadError;
use crate::store::OutgoingMessage;

/// How long a TeamDelete waits for teammates the lead asked to shut down.
const STOPPING_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

impl LeadSeat {
    pub(super) async fn create_team_now(
        &self,
        name: String,
        description: Option<String>,
    ) -> Result<String, LeadError> {
        if let Some(text) = &description {
            self.check_text("the team description", text)?;
        }
        if self.formed.swap(true, Ordering::SeqCst) {
            return Err(LeadError::Conflict(format!(
                "team {} is already formed: TeamDelete first",
                self.team.name()
            )));
        }
        if let Some(text) = &description {
            if let Err(e) = self.count_text("the team description", text) {
                self.formed.store(false, Ordering::SeqCst);
                return Err(e);
            }
        }
        let team = self.team.clone();
        let written = crate::blocking::try_run("writing the team", move || {
            team.update_config(|c| {
                c.description = description.clone();
                Ok(())
            })
        })
        .await;
        if let Err(e) = written.map_err(unavailable) {
            self.formed.store(false, Ordering::SeqCst);
            return Err(e);
        }
        self.keep().await;
        // The WIT contract: the team's real name, whatever `name` said
        // (the host names the lead's team; the toolbox tells a model).
        let _ = name;
        Ok(self.team.name().to_string())
    }

    pub(super) async fn shutdown_now(
        &self,
        name: String,
        reason: Option<String>,
    ) -> Result<String, LeadError> {
        if let Some(text) = &reason {
            self.check_text("the shutdown reason", text)?;
        }
        if name == self.lead_name() || !self.members()?.iter().any(|m| m.name == name) {
            return Err(LeadError::NotFound(format!(
                "{name:?} is not a teammate in the lead's team"
            )));
        }
        if let Some(text) = &reason {
            self.count_text("the shutdown reason", text)?;
        }
        let request = ShutdownRequest::new(&name, self.lead_name(), reason);
        let id = request.request_id.clone();
        self.asked_to_stop
            .lock()
            .expect("asked lock")
            .insert(name.clone());
        // Kept before it is sent: a resume asks again whoever was asked
        // and has not approved.
        self.keep().await;
        let (team, lead) = (self.team.clone(), self.lead_name());
        crate::blocking::try_run("sending a shutdown request", move || {
            team.send(&name, OutgoingMessage::new(lead, request.to_text()))
        })
        .await
        .map_err(unavailable)?;
        Ok(id)
    }

    /// The members left once those that approved their shutdown have gone:
    /// waits (on the host's events, at most [`STOPPING_WAIT`]) while every
    /// member left has approved a shutdown this lead asked for, so a
    /// TeamDelete right after the approvals is not refused for teammates on
    /// their way out (nothing would wake the lead to try again once they are
    /// gone). A member that has not approved yet (it may be waiting for an
    /// answer from this very lead) is refused at once.
    pub(super) async fn members_once_stopped(
        &self,
    ) -> Result<Vec<crate::store::Member>, LeadError> {
        let mut events = self.host()?.events();
        let deadline = tokio::time::Instant::now() + STOPPING_WAIT;
        loop {
            let members = self.members()?;
            let all_stopping = {
                let asked = self.asked_to_stop.lock().expect("asked lock").clone();
                members.iter().all(|m| asked.contains(&m.name))
                    && self.approved_shutdown(&members)?
            };
            if members.is_empty() || !all_stopping {
                return Ok(members);
            }
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_elapsed) => return Ok(members),
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return Ok(members),
                // An event or a lag: look again.
                Ok(_) => {}
            }
        }
    }

    /// Whether every one of `members` has sent the lead a
    /// `shutdown_approved` (in its inbox or history).
    pub(super) fn approved_shutdown(
        &self,
        members: &[crate::store::Member],
    ) -> Result<bool, LeadError> {
        let lead = self.lead_name();
        let mut mail = self.team.history(lead).map_err(unavailable)?;
        mail.extend(self.team.read_inbox(lead).map_err(unavailable)?);
        Ok(members.iter().all(|m| {
            mail.iter().any(|msg| {
                msg.from == m.name
                    && msg.text.contains("shutdown_approved")
                    && matches!(
                        crate::protocol::ProtocolMessage::parse(&msg.text),
                        crate::protocol::Parsed::Protocol(
                            crate::protocol::ProtocolMessage::ShutdownApproved(_)
                        )
                    )
            })
        }))
    }

    pub(super) async fn delete_now(&self) -> Result<(), LeadError> {
        self.require_formed()?;
        let members = self.members_once_stopped().await?;
        if !members.is_empty() {
            return Err(LeadError::Conflict(format!(
                "teammates are still members: [{}]; shut them down first",
                members
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let host = self.host()?;
        // The lead's own runner is inside this call: kept out of the
        // delete's kills, and ended by `ended` once its turn returns.
        let key = (self.team.name().to_string(), self.lead_name().to_string());
        let lead = host
            .inner
            .teammates
            .lock()
            .expect("teammates lock")
            .remove(&key);
        self.ended.store(true, Ordering::SeqCst);
        let deleted = host.delete_team(self.team.name()).await;
        if let Some(lead) = lead {
            host.inner
                .teammates
                .lock()
                .expect("teammates lock")
                .insert(key, lead);
        }
        match deleted {
            Ok(_) => {
                self.formed.store(false, Ordering::SeqCst);
                Ok(())
            }
            Err(e) => {
                self.ended.store(false, Ordering::SeqCst);
                Err(unavailable(e))
            }
        }
    }
}
