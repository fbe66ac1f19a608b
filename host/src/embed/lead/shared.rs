//! A lead's seat in a store shared by several hosts (host failover): the
//! lead's run record (`team-lead`, its seat in [`RunRecord::lead`]) and
//! [`Host::adopt_lead`], which brings the lead back on a host that took a
//! dead host's lease over.
//!
//! | when | what |
//! |---|---|
//! | the lead starts ([`Host::start_lead`]) or is resumed here ([`Host::resume_led`]) | this host's lease on the team taken; the lead's run record written naming this host, with the seat; the seat's keeper rewrites it after each change (`record.rs`) |
//! | the lead ends here (it deleted its team, failed or was stopped) | the record removed, at the revision the keeper wrote last, unless this host lost its lease (the adopter owns it then) |
//! | its host dies; a standby takes the lease over ([`Host::adopt_with_lead`]) | [`Host::adopt_lead`]: the record rewritten naming the standby (`generation + 1`), the lead started there with the seat the record kept and its goal given again |
//!
//! **What an adopted lead keeps and loses.** The seat is in the store and
//! goes on: formed, who it spawned from which entry, what it gave, its
//! spawns and refusals over its life (so `max_spawns_total` and the purse
//! are not reset). Its conversation, saved state and own spent record
//! lived in the dead machine's home and are lost: it is given its goal
//! again (from the record), followed by the adoption's report, and reads
//! the task list and its teammates as any lead does. Its own permission
//! requests still waiting are answerable (they are in the store).
//!
//! **Which component.** Only the standby's own `[lead]` component whose
//! SHA-256 is the record's leads: the record is a host's, never a
//! teammate's, and the component runs with the lead's grant, so it is not
//! fetched from the shelf by hash alone. A standby without a `[lead]` (or
//! with another component) refuses the lead, saying why; the record keeps
//! naming the dead host and the lead is not run anywhere.

use std::sync::Arc;

use crate::embed::attach::ClaimEvidence;
use crate::embed::grant::LeadSpec;
use crate::embed::lead::seat::LeadSeat;
use crate::embed::lead::start::check_spec;
use crate::embed::{Host, SpawnRequest};
use crate::error::{Error, Result};
use crate::home::lead_record::LeadRecord;
use crate::store::config::LEAD_NAME;
use crate::store::{blocking, LeaseState, OutgoingMessage, Revision, RunRecord, Team};

/// The lead's run record with `seat`, naming host `me`.
fn lead_run(seat: &LeadRecord, req: &SpawnRequest, me: &str) -> Result<RunRecord> {
    Ok(RunRecord {
        name: LEAD_NAME.to_string(),
        host: me.to_string(),
        generation: 1,
        component_sha256: seat.component_sha256.clone(),
        component_name: seat
            .component
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        cwd: req.cwd.clone(),
        worktree: false,
        settings: serde_json::to_value(&req.settings).map_err(|e| Error::Encode(e.to_string()))?,
        started_at: crate::protocol::time::now_ms(),
        adopted_from: None,
        lead: Some(serde_json::to_value(seat).map_err(|e| Error::Encode(e.to_string()))?),
    })
}

impl Host {
    /// Writes the lead's run record naming this host, with `seat` as it is
    /// now, when the store has failover and leases are on (this host's
    /// lease on `t` is taken first), hands it to the seat's keeper and
    /// removes it when the lead ends here. Nothing otherwise.
    ///
    /// A record left by an earlier lead is replaced (`generation + 1`)
    /// unless another host owns it: the one it names, when that host's
    /// lease is held on another machine or by a process of this one that
    /// still runs; or the host that took that lease over. Then this fails
    /// naming the owner, and the lead must not run here. (A pid reused since errs on the side of refusing.)
    pub(super) async fn share_lead_seat(
        &self,
        t: &Team,
        seat: &Arc<LeadSeat>,
        req: &SpawnRequest,
    ) -> Result<()> {
        self.ensure_lease(t.name()).await?;
        if self.team_lease(t.name()).is_none() {
            return Ok(());
        }
        let backend = self.inner.store.backend().clone();
        if backend.failover().is_none() {
            return Ok(());
        }
        let me = self.host_identity().clone();
        let mut run = lead_run(&seat.snapshot(), req, &me.id)?;
        let (b, team) = (backend.clone(), t.name().to_string());
        let written = blocking("writing the lead's run record", move || {
            let f = b.failover().expect("checked above");
            let existing = f
                .read_runs(&team)?
                .into_iter()
                .find(|(r, _)| r.name == LEAD_NAME);
            let expect = match existing {
                None => None,
                Some((old, rev)) => {
                    if old.host != me.id {
                        let leases = f.read_leases(&team)?;
                        let lease = leases.iter().find(|(l, _)| l.host == old.host);
                        let owner = match lease.map(|(l, _)| &l.state) {
                            Some(LeaseState::TakenOver { by, .. }) if *by != me.id => {
                                Some(by.clone())
                            }
                            // Held by a host that may be alive: another
                            // machine's, or a process of this one that runs.
                            Some(LeaseState::Held)
                                if lease.is_some_and(|(l, _)| {
                                    l.hostname != me.hostname
                                        || crate::home::process::runs_elsewhere(l.pid, None)
                                }) =>
                            {
                                Some(old.host.clone())
                            }
                            _ => None,
                        };
                        if let Some(by) = owner {
                            return Err(Error::Spawn(format!(
                                "team {team}'s lead runs on host {by} (its run record in the store names that host, which took it over or still holds its lease): it is not started here too; stop that host first, or let it lead"
                            )));
                        }
                        run.adopted_from = Some(old.host.clone());
                    }
                    run.generation = old.generation + 1;
                    Some(rev)
                }
            };
            match f.write_run(&team, &run, expect)? {
                Some(rev) => Ok((run, rev)),
                None => Err(Error::Spawn(format!(
                    "the lead's run record in team {team} changed while it was written: another host wrote it"
                ))),
            }
        })
        .await?;
        let (run, rev) = written;
        seat.keeper.share(backend, run, rev);
        Ok(())
    }

    /// Removes the lead's run record once the lead has ended here, at the
    /// revision its keeper wrote last, unless this host lost its lease
    /// (the adopter owns the record) or the record was never shared.
    pub(super) fn forget_lead_run_when_done(&self, t: &Team, seat: Arc<LeadSeat>) {
        let Some(mut state) = self.state_receiver(t.name(), LEAD_NAME) else {
            return;
        };
        let lease = self.team_lease(t.name());
        let team = t.name().to_string();
        tokio::spawn(async move {
            let _ = state.wait_for(|s| s.is_finished()).await;
            if lease.as_ref().is_some_and(|l| l.lost().borrow().is_some()) {
                return;
            }
            let Some((store, rev)) = seat.keeper.shared_at() else {
                return;
            };
            seat.keeper.unshare();
            let removed = crate::blocking::try_run("removing the lead's run record", move || {
                match store.failover() {
                    Some(f) => f.remove_run(&team, LEAD_NAME, rev),
                    None => Ok(false),
                }
            })
            .await;
            match removed {
                Ok(true) => {}
                Ok(false) => {
                    tracing::debug!("the lead's run record was not removed: gone or rewritten")
                }
                Err(e) => tracing::warn!(error = %e, "the lead's run record was not removed"),
            }
        });
    }

    /// Takes over the lead whose run record `run` (read at `rev`) names a
    /// host whose lease this host has just taken over, with `spec` (the
    /// standby's `[lead]` and `[[catalogue]]`); see the module docs. `Err`
    /// says why the lead was not taken over (the record then still names
    /// the dead host).
    pub(in crate::embed) async fn adopt_lead(
        &self,
        t: &Team,
        run: RunRecord,
        rev: Revision,
        spec: Option<&LeadSpec>,
    ) -> std::result::Result<(), String> {
        let Some(spec) = spec else {
            return Err("it is the team's lead component, and this host was given no lead to run it with: stand by with the led team's manifest (its [lead] and [[catalogue]]) to take the lead over".into());
        };
        let spec = spec.clone();
        check_spec(&spec).map_err(|e| e.to_string())?;
        let seat_json = run
            .lead
            .clone()
            .ok_or("its run record carries no seat: refused")?;
        let mut record: LeadRecord = serde_json::from_value(seat_json)
            .map_err(|e| format!("its seat in the run record does not parse ({e}): refused"))?;
        if record.component_sha256 != run.component_sha256 {
            return Err(format!(
                "its run record names the component hash {} and its seat {}: refused",
                run.component_sha256, record.component_sha256
            ));
        }
        let component = std::path::absolute(&spec.component).map_err(|e| e.to_string())?;
        let check = record.clone();
        let checked = component.clone();
        crate::blocking::try_run("checking the lead's component", move || {
            check.check_component(&checked)
        })
        .await
        .map_err(|e| {
            format!("{e} (this host's [lead] component is not the one that led the team)")
        })?;
        if self.running(t.name()).iter().any(|n| n == LEAD_NAME) {
            return Err("a lead already runs in this host".into());
        }
        record.component = component;
        let me = self.host_identity().id.clone();
        let req = self.lead_request(t, &spec).map_err(|e| e.to_string())?;
        let mut ours = lead_run(&record, &req, &me).map_err(|e| e.to_string())?;
        ours.generation = run.generation + 1;
        ours.adopted_from = Some(run.host.clone());
        let backend = self.inner.store.backend().clone();
        let (b, team, o) = (backend.clone(), t.name().to_string(), ours.clone());
        let written = blocking("rewriting the lead's run record", move || {
            match b.failover() {
                Some(f) => f.write_run(&team, &o, Some(rev)),
                None => Ok(None),
            }
        })
        .await
        .map_err(|e| e.to_string())?;
        let Some(new_rev) = written else {
            return Err("another host rewrote its run record first: it leads the team".into());
        };
        self.launch_adopted_lead(t, spec, record, req, (backend, ours, new_rev))
            .await
            .map_err(|e| format!("could not start it here: {e}"))
    }

    /// Starts the adopted lead: its member entry marked in-process here,
    /// its goal given again, its seat (shared at `shared`) kept here and
    /// in the store from now on, its runner started.
    async fn launch_adopted_lead(
        &self,
        t: &Team,
        spec: LeadSpec,
        record: LeadRecord,
        req: SpawnRequest,
        shared: (Arc<dyn crate::store::TeamStore>, RunRecord, Revision),
    ) -> Result<()> {
        let prepared = crate::backends::assembly::prepare(self.spawn_env(t)?.runtime, &req).await?;
        let mode = req.settings.permission_mode();
        let (lead, goal) = (t.clone(), record.goal.clone());
        let member = blocking("updating the lead", move || {
            let member = lead.update_member(LEAD_NAME, |m| {
                m.mode = Some(mode.as_str().to_string());
                m.backend_type = Some("in-process".into());
                m.tmux_pane_id = Some("in-process".into());
                m.is_active = Some(false);
                m.clone()
            })?;
            // The conversation that held the goal died with its host.
            if !goal.trim().is_empty() {
                lead.deliver(LEAD_NAME, OutgoingMessage::new("user", goal))?;
            }
            Ok(member)
        })
        .await?;
        let resumed = self
            .gather_resumed(t, LEAD_NAME, ClaimEvidence::TaskList)
            .await?;
        let seat = Arc::new(LeadSeat::new(self, t.clone(), spec, record));
        let (store, run, rev) = shared;
        seat.keeper.share(store, run, rev);
        seat.keeper.keep(|| seat.snapshot()).await?;
        self.launch_lead(t, &req, prepared, member, seat.clone(), Some(resumed))
            .await?;
        self.forget_lead_run_when_done(t, seat);
        Ok(())
    }
}
