//! Run records (host failover): what this host runs in a team whose lease it
//! holds, kept in the store ([`crate::store::failover`]) so that another
//! host can start it again when this one dies.
//!
//! | when | what |
//! |---|---|
//! | spawn, between the member's registration and its runner's start ([`crate::backends::SpawnEnv::before_start`], beside the spawn record) | the teammate's [`RunRecord`] (generation 1, this host's id), created; its component's bytes put on the store's shelf, once per hash per host process |
//! | takeover ([`Host::adopt`](crate::embed::Host::adopt)) | the record rewritten naming this host, `generation + 1` |
//! | the teammate ends on this host | the record removed, compare-and-swapped on the revision this host wrote: a record another host has rewritten since is left alone |
//! | this host lost its lease | nothing: the adopter owns the record now |
//!
//! Only a host holding a lease on the team writes records
//! ([`Host::team_lease`](crate::embed::Host::team_lease)); nothing a teammate can
//! write reaches them (the request comes from the host's manifest or its
//! lead, the hash from the component's bytes).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use crate::embed::lease::{HostIdentity, TeamLease};
use crate::embed::Host;
use crate::error::{Error, Result};
use crate::home::spawn_record::SpawnRecord;
use crate::store::{Failover, Revision, RunRecord, Team};

/// The run record a spawn record describes, naming host `me`, generation 1.
pub(in crate::embed) fn run_record_of(spawn: &SpawnRecord, me: &HostIdentity) -> RunRecord {
    RunRecord {
        name: spawn.name.clone(),
        host: me.id.clone(),
        generation: 1,
        component_sha256: spawn.component_sha256.clone(),
        component_name: spawn
            .component
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        cwd: spawn.cwd.clone(),
        worktree: spawn.worktree,
        settings: serde_json::to_value(&spawn.settings).unwrap_or_default(),
        started_at: crate::protocol::time::now_ms(),
        adopted_from: None,
        lead: None,
    }
}

/// Shelves the component at `path` (SHA-256 `hash`) unless this process
/// already did for this store: `(store address, hash)` pairs. The set's lock
/// is held across the upload, so teammates spawned at once with one
/// component upload it once: two uploads of the same chunks at once make a
/// replicated stream hold the second's answers until it times out (2 s on a
/// three-node cluster, measured), which delayed every spawn but the first.
fn shelve_once(failover: &dyn Failover, path: &std::path::Path, hash: &str) -> Result<()> {
    static SHELVED: OnceLock<Mutex<HashSet<(usize, String)>>> = OnceLock::new();
    let key = (
        failover as *const dyn Failover as *const () as usize,
        hash.to_string(),
    );
    let mut shelved = SHELVED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if shelved.contains(&key) {
        return Ok(());
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    let kept = failover.put_component(&bytes)?;
    if kept != hash {
        return Err(Error::Spawn(format!(
            "component {} changed while it was spawned (SHA-256 {hash} when loaded, {kept} now)",
            path.display()
        )));
    }
    shelved.insert(key);
    Ok(())
}

impl Host {
    /// Writes `spawn`'s run record in `team` when this host holds a lease
    /// there, and shelves its component: the revision written, `None` when
    /// no lease is held (nothing to do) . Called from the spawn's
    /// `before_start` hook (synchronous: store calls block this thread).
    pub(in crate::embed) fn record_run(
        &self,
        team: &Team,
        spawn: &SpawnRecord,
    ) -> Result<Option<Revision>> {
        if self.team_lease(team.name()).is_none() {
            return Ok(None);
        }
        let backend = self.inner.store.backend().clone();
        let Some(failover) = backend.failover() else {
            return Ok(None);
        };
        shelve_once(failover, &spawn.component, &spawn.component_sha256)?;
        let run = run_record_of(spawn, self.host_identity());
        // A record left by an earlier teammate of this name (its host died
        // and nobody adopted it, or it ended without removing it): replaced,
        // since the member was registered afresh.
        let existing = failover
            .read_runs(team.name())?
            .into_iter()
            .find(|(r, _)| r.name == run.name)
            .map(|(_, rev)| rev);
        match failover.write_run(team.name(), &run, existing)? {
            Some(rev) => Ok(Some(rev)),
            None => Err(Error::Spawn(format!(
                "{}'s run record in team {} changed while it was written: another host wrote it",
                run.name,
                team.name()
            ))),
        }
    }

    /// Removes `name`'s run record (written at `rev`) once its teammate has
    /// finished on this host, unless this host's lease was lost by then
    /// (the adopter owns the record) or another host rewrote it.
    pub(in crate::embed) fn forget_run_when_done(&self, team: &Team, name: &str, rev: Revision) {
        let Some(mut state) = self.state_receiver(team.name(), name) else {
            return;
        };
        let lease: Option<Arc<TeamLease>> = self.team_lease(team.name());
        let (host, team, name) = (self.clone(), team.name().to_string(), name.to_string());
        tokio::spawn(async move {
            let _ = state.wait_for(|s| s.is_finished()).await;
            if lease.as_ref().is_some_and(|l| l.lost().borrow().is_some()) {
                return;
            }
            let removed = crate::blocking::try_run("removing a run record", move || {
                let backend = host.inner.store.backend().clone();
                match backend.failover() {
                    Some(f) => f.remove_run(&team, &name, rev).map(|r| (r, name)),
                    None => Ok((false, name)),
                }
            })
            .await;
            match removed {
                Ok((false, name)) => {
                    tracing::debug!(teammate = %name, "run record not removed: another host rewrote it")
                }
                Err(e) => tracing::warn!(error = %e, "a run record was not removed"),
                Ok((true, _)) => {}
            }
        });
    }
}
