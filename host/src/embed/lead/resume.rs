//! [`Host::resume_led`]: bring back a team whose lead is a component after
//! its host died. The teammates come back as every team's do
//! ([`Host::resume`]); the lead comes back beside them, as the lead member
//! it was:
//!
//! | what | from | becomes |
//! |---|---|---|
//! | its seat: formed, who it spawned from which entry, what it gave, its spawns and refusals over its life | its record (`record.rs`), its component checked by SHA-256 | the same seat: its purse and its life-long limits go on, not from zero |
//! | its conversation, its saved state, what it spent | what is kept of it as of any teammate (`home::kept`) | `model.history`, `state.load`, its budgets going on |
//! | the message its cut turn was handling | its turn journal | delivered again |
//! | its own permission requests waiting for the person | its mail | still answerable |
//! | a teammate it asked to stop that has not approved | its record and its mail | asked again (the resume withdraws the shutdown requests a dead host left unread) |
//! | the resume itself | [`ResumeReport`] | its next message, from `teamhost` |
//!
//! The goal is not delivered again: the lead had it in its first life.
//!
//! On a shared store the lead's run record is settled first (`shared.rs`):
//! a lead a standby adopted after this machine's host died runs there, and
//! the resume is refused before anything comes back.

use std::sync::Arc;

use crate::embed::attach::ClaimEvidence;
use crate::embed::grant::LeadSpec;
use crate::embed::lead::seat::LeadSeat;
use crate::embed::lead::start::check_spec;
use crate::embed::{Host, ResumeReport, TeammateInfo};
use crate::error::{Error, Result};
use crate::home::lead_record::LeadRecord;
use crate::protocol::{ShutdownRequest, WireMessage};
use crate::store::config::LEAD_NAME;
use crate::store::OutgoingMessage;

/// Why a teammate is asked to stop again after a resume.
const ASKED_AGAIN: &str =
    "asked again: the lead's host stopped before you answered, and the team was resumed";

impl Host {
    /// Brings back `team`, whose lead was a component of this machine's
    /// teamhost, after its host died: its teammates ([`Host::resume`]),
    /// then its lead with `spec` (the catalogue and settings it leads
    /// with; its goal is not delivered again), its seat as it was kept.
    /// Returns the teammates' report and the lead.
    ///
    /// Fails, before anything is brought back, when the team has no lead
    /// record here (its lead was not such a component: resume it with
    /// [`Host::resume`]), when `spec`'s component is not the one that led
    /// the team, for the reasons [`Host::resume`] fails, and when the
    /// lead's component cannot be loaded (its teammates are back by then).
    pub async fn resume_led(
        &self,
        team: &str,
        spec: LeadSpec,
    ) -> Result<(ResumeReport, TeammateInfo)> {
        check_spec(&spec)?;
        let t = self.team(team)?;
        let (home, name, component) = (
            self.inner.home.clone(),
            t.name().to_string(),
            spec.component.clone(),
        );
        let record = crate::blocking::try_run("reading the lead's seat", move || {
            let record = LeadRecord::load(&home, &name)?.ok_or_else(|| {
                Error::Spawn(format!(
                    "team {name:?} has no lead component's record on this machine: its lead was \
                     not a component this machine's teamhost started; resume it without a lead \
                     component (no --lead, no [lead])"
                ))
            })?;
            record.check_component(&component)?;
            Ok(record)
        })
        .await?;
        if self.running(team).iter().any(|n| n == LEAD_NAME) {
            return Err(Error::Spawn(format!(
                "team {team:?}'s lead already runs in this host: there is nothing to resume"
            )));
        }
        let req = self.lead_request(&t, &spec)?;
        let seat = Arc::new(LeadSeat::new(self, t.clone(), spec, record));
        // On a shared store, settled before anything comes back: a lead a
        // standby adopted meanwhile is not started twice.
        self.share_lead_seat(&t, &seat, &req).await?;
        let report = self.resume(team).await?;
        let prepared =
            crate::backends::assembly::prepare(self.spawn_env(&t)?.runtime, &req).await?;
        let mode = req.settings.permission_mode();
        let lead = t.clone();
        let member = crate::blocking::try_run("updating the lead", move || {
            lead.update_member(LEAD_NAME, |m| {
                m.mode = Some(mode.as_str().to_string());
                m.backend_type = Some("in-process".into());
                m.tmux_pane_id = Some("in-process".into());
                m.is_active = Some(false);
                m.clone()
            })
        })
        .await?;
        self.redeliver_interrupted(&t, LEAD_NAME).await?;
        let resumed = self
            .gather_resumed(&t, LEAD_NAME, ClaimEvidence::Ledger)
            .await?;
        seat.ask_again_to_stop().await;
        let info = self
            .launch_lead(&t, &req, prepared, member, seat.clone(), Some(resumed))
            .await?;
        self.forget_lead_run_when_done(&t, seat);
        Ok((report, info))
    }
}

impl LeadSeat {
    /// Sends a new shutdown request to every teammate this lead asked to
    /// stop in an earlier life that is still a member and has not approved:
    /// the resume withdrew what was unread, and the lead may be waiting for
    /// them to go.
    async fn ask_again_to_stop(&self) {
        let asked = self.asked_to_stop.lock().expect("asked lock").clone();
        let Ok(members) = self.members() else {
            return;
        };
        for member in members.iter().filter(|m| asked.contains(&m.name)) {
            if self
                .approved_shutdown(std::slice::from_ref(member))
                .unwrap_or(false)
            {
                continue;
            }
            let request =
                ShutdownRequest::new(&member.name, self.lead_name(), Some(ASKED_AGAIN.into()));
            let (team, to, lead) = (self.team.clone(), member.name.clone(), self.lead_name());
            let sent = crate::blocking::try_run("asking again to shut down", move || {
                team.send(&to, OutgoingMessage::new(lead, request.to_text()))
            })
            .await;
            if let Err(e) = sent {
                tracing::warn!(teammate = %member.name, error = %e, "could not ask a teammate to stop again");
            }
        }
    }
}
