//! [`Host::start_lead`]: run a lead component as its team's lead member
//! (`team-lead`, the config's `leadAgentId`), through the same assembly and
//! runner as a teammate, with a [`LeadSeat`] in its seat; and
//! [`Host::wait_lead`], for whoever waits for its end.
//!
//! The team's config is written here, with the lead as its only member, so
//! the lead has an inbox from its first turn; the team is *unformed* until
//! the lead's `create-team`. The goal is the lead's first message, from
//! `user`. The lead claims no tasks, sends no idle notification to itself,
//! and its runner ends after the turn in which it deleted the team.

use std::sync::Arc;

use crate::backends::assembly::{self, Placement};
use crate::embed::attach::lead_env;
use crate::embed::grant::LeadSpec;
use crate::embed::lead::seat::LeadSeat;
use crate::embed::{Host, SpawnRequest, TeammateInfo, TeammateState};
use crate::error::{Error, Result};
use crate::home::lead_record::LeadRecord;
use crate::store::config::LEAD_NAME;
use crate::store::{Member, NewTeam, OutgoingMessage, Team};
use crate::teammate::Resumed;

impl Host {
    /// Starts `spec`'s lead component as the lead of a new team `team` and
    /// returns it as a [`TeammateInfo`] (name `team-lead`).
    ///
    /// Fails before anything is written for a catalogue with two entries of
    /// one name, an entry or lead whose component is missing, or
    /// `max_teammates` or `max_spawns_total` 0; with [`Error::TeamExists`] when the team is
    /// there already; and, the team's config removed again, when the lead's
    /// component cannot be loaded or instantiated.
    pub async fn start_lead(&self, team: &str, spec: LeadSpec) -> Result<TeammateInfo> {
        check_spec(&spec)?;
        let mut record = LeadRecord::starting(&spec.component)?;
        record.goal = spec.goal.clone();
        let t = self.team(team)?;
        let req = self.lead_request(&t, &spec)?;
        let prepared = assembly::prepare(self.spawn_env(&t)?.runtime, &req).await?;
        t.create(NewTeam {
            lead_model: req.settings.model.clone(),
            cwd: Some(prepared.dir.display().to_string()),
            ..NewTeam::default()
        })?;
        let undo = |e: Error| {
            if let Err(e2) = crate::backends::teardown::delete_team(
                &self.inner.home,
                &t,
                true,
                self.inner.opts.backends.stop_timeout,
            ) {
                tracing::error!(team = %t.name(), error = %e2, "could not undo a failed lead start");
            }
            e
        };
        let mode = req.settings.permission_mode();
        let member = t
            .update_member(LEAD_NAME, |m| {
                m.mode = Some(mode.as_str().to_string());
                m.clone()
            })
            .map_err(undo)?;
        t.deliver(LEAD_NAME, OutgoingMessage::new("user", spec.goal.clone()))
            .map_err(undo)?;
        let seat = Arc::new(LeadSeat::new(self, t.clone(), spec, record));
        // Kept before its first turn: a led team is resumable from here on.
        seat.keeper.keep(|| seat.snapshot()).await.map_err(undo)?;
        // On a shared store, in the lead's run record too: a standby
        // adopts the lead from there if this host dies.
        self.share_lead_seat(&t, &seat, &req).await.map_err(undo)?;
        let info = self
            .launch_lead(&t, &req, prepared, member, seat.clone(), None)
            .await
            .map_err(undo)?;
        self.forget_lead_run_when_done(&t, seat);
        Ok(info)
    }

    /// The lead's request: `spec`'s component in its directory (made
    /// here), with its settings; it claims no tasks. Its directory passes
    /// the layout check.
    pub(super) fn lead_request(&self, t: &Team, spec: &LeadSpec) -> Result<SpawnRequest> {
        std::fs::create_dir_all(&spec.cwd).map_err(|e| {
            Error::Spawn(format!(
                "the lead's directory {} cannot be made: {e}",
                spec.cwd.display()
            ))
        })?;
        let mut req = SpawnRequest::new(LEAD_NAME, &spec.component, &spec.goal, &spec.cwd);
        req.settings = spec.settings.clone();
        req.settings.auto_claim = false;
        req.settings
            .notifications
            .get_or_insert(self.inner.opts.notifications);
        self.check_layout(t.name(), &req)?;
        Ok(req)
    }

    /// Instantiates the lead's registered `member` with `seat` in its seat
    /// (what a resumed one takes over in `resumed`), attaches the seat to
    /// its meters and starts its runner.
    pub(super) async fn launch_lead(
        &self,
        t: &Team,
        req: &SpawnRequest,
        prepared: assembly::Prepared,
        member: Member,
        seat: Arc<LeadSeat>,
        resumed: Option<Resumed>,
    ) -> Result<TeammateInfo> {
        let env = lead_env(self.spawn_env(t)?, seat.clone());
        let log = env.log_dir.join(t.name()).join(format!("{LEAD_NAME}.log"));
        let place = Placement {
            backend_type: "in-process".into(),
            pane_id: "in-process".into(),
            log: Some(log),
            resumed,
        };
        let ready = assembly::instantiate(&env, t, member, req, prepared, place).await?;
        // Before its first turn: what the seat writes for the lead counts
        // with the lead's own team bytes, its refusals by the lead's turns,
        // its gifts in its model budget.
        seat.attach(ready.budget().clone(), ready.turns(), ready.model().clone());
        let spawned = ready.run(&env);
        Ok(self.keep(t, spawned))
    }

    /// Waits until `team`'s lead, started by [`Host::start_lead`] in this
    /// host, has ended, and returns how: `Completed` after it deleted its
    /// team, `Failed` with the reason, `Killed`. `None` when this host runs
    /// no lead of `team`.
    pub async fn wait_lead(&self, team: &str) -> Option<TeammateState> {
        let mut rx = self
            .inner
            .teammates
            .lock()
            .expect("teammates lock")
            .get(&(team.to_string(), LEAD_NAME.to_string()))
            .map(|s| s.state.clone())?;
        let end = rx.wait_for(|s| s.is_finished()).await.ok()?.clone();
        Some(end)
    }
}

/// The checks nothing needs to be written for.
pub(super) fn check_spec(spec: &LeadSpec) -> Result<()> {
    if spec.max_teammates == 0 || spec.max_spawns_total == 0 {
        return Err(Error::Spawn(
            "max_teammates or max_spawns_total is 0: a lead needs at least one teammate".into(),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for entry in &spec.catalogue {
        if !seen.insert(entry.name.as_str()) {
            return Err(Error::Spawn(format!(
                "the catalogue names {:?} twice: give each entry its own name",
                entry.name
            )));
        }
        if !entry.component.is_file() {
            return Err(Error::Spawn(format!(
                "catalogue entry {:?}: its component {} is not a file",
                entry.name,
                entry.component.display()
            )));
        }
    }
    Ok(())
}
