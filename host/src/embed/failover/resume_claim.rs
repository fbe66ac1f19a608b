//! Resume and adopt on one shared team (host failover): before [`Host::resume`]
//! respawns anything on a store with failover, it settles in the store who
//! runs each teammate, so that a resume and an adopting host never both run
//! one.
//!
//! | what the store shows | what resume does |
//! |---|---|
//! | the lease of this machine's dead host (same `hostname`, `pid` that of a spawn record's `host_pid`: resume has found that process dead), `Held` | compare-and-swapped to `TakenOver { by: this host }` at the revision read, at once (the holder is known dead here: no lease to wait out); a lost race is read again |
//! | that lease `TakenOver { by: B }` | B (an adopting host) owns the teammates whose records it rewrote; a record B has not rewritten (B is mid-takeover, or refused the teammate) still names the dead host and is claimed as below: the record's compare-and-swap decides, and the loser does not start the teammate |
//! | a lease `Released` | its host ended cleanly: nobody runs its teammates |
//! | a teammate's run record naming this host, a dead host of this machine, a released host or a host with no lease | respawned here: its record rewritten naming this host (`generation + 1`, `adopted_from`), compare-and-swapped at the revision read, BEFORE it is respawned; removed when it ends here |
//! | no run record | respawned here: a record created first ([`run_record_of`]) |
//! | a run record naming any other host (live, or an adopter) | NOT respawned, its tasks and mail left alone; [`ResumeReport::adopted_elsewhere`](crate::embed::ResumeReport::adopted_elsewhere) names the host |
//! | a record rewritten by another host between the read and the swap | that host runs it: left to it, as above |
//!
//! Nothing a teammate writes reaches these decisions: leases and run records
//! are written by hosts only, spawn records live in this host's home.

use std::collections::{BTreeMap, BTreeSet};

use crate::embed::failover::run_record::run_record_of;
use crate::embed::lease::HostIdentity;
use crate::embed::Host;
use crate::error::{Error, Result};
use crate::home::spawn_record::SpawnRecord;
use crate::store::{blocking, Failover, HostLease, LeaseState, Revision, RunRecord, TeamStore};

/// How many times the leases are read again after a lost race.
const TRIES: usize = 5;

/// Who runs what in a team, as a resume on this machine settled it.
#[derive(Debug, Default)]
pub(in crate::embed) struct Claims {
    /// Hosts whose teammates this resume may run: this one, the dead local
    /// hosts whose leases it took, hosts whose lease was released.
    free: BTreeSet<String>,
    /// Hosts of this machine that died (their pid is a spawn record's and
    /// resume found it dead), this one excepted.
    dead_here: BTreeSet<String>,
    /// Every lease, by host.
    leases: BTreeMap<String, HostLease>,
    /// Every run record with its revision, by teammate.
    runs: BTreeMap<String, (RunRecord, Revision)>,
    /// Dead local hosts whose lease this resume took over.
    pub(in crate::embed) taken: Vec<String>,
}

/// Where one teammate goes.
pub(in crate::embed) enum Claim {
    /// Respawn it here; its record names this host at this revision.
    Here(Revision),
    /// Another host runs it (or owns it): its id.
    Elsewhere(String),
}

impl Claims {
    /// The host that owns `run`'s teammate, when not this resume: the
    /// adopter of its host's lease if it was taken over, else its host.
    fn owner(&self, run: &RunRecord) -> Option<String> {
        // A record still naming a dead host of this machine is claimed by
        // its compare-and-swap, whoever holds that host's lease: an
        // adopter that took the lease over but has not rewritten the record
        // (mid-takeover, or it refused the teammate) then loses its own
        // swap on the record and does not start it.
        if self.free.contains(&run.host) || self.dead_here.contains(&run.host) {
            return None;
        }
        match self.leases.get(&run.host).map(|l| &l.state) {
            None | Some(LeaseState::Released) => None,
            Some(LeaseState::TakenOver { by, .. }) => Some(by.clone()),
            Some(LeaseState::Held) => Some(run.host.clone()),
        }
    }
}

impl Host {
    /// Takes over the leases of this machine's dead hosts of `team` (the
    /// `host_pid`s of `records`) and reads who runs what: `None` when this
    /// host holds no lease on `team` or its store has no failover (nothing
    /// to settle).
    pub(in crate::embed) async fn claim_dead_leases(
        &self,
        team: &str,
        records: &BTreeMap<String, SpawnRecord>,
    ) -> Result<Option<Claims>> {
        if self.team_lease(team).is_none() {
            return Ok(None);
        }
        let backend = self.inner.store.backend().clone();
        if backend.failover().is_none() {
            return Ok(None);
        }
        let me = self.host_identity().clone();
        let dead: BTreeSet<u32> = records.values().map(|r| r.host_pid).collect();
        let t = team.to_string();
        let claims = blocking("settling who runs the teammates", move || {
            let f = backend.failover().expect("checked above");
            settle(f, &t, &me, &dead)
        })
        .await?;
        Ok(Some(claims))
    }

    /// Settles `name`'s teammate before a respawn: its run record rewritten
    /// (or created from `spawn`) naming this host, or the host that owns it.
    pub(in crate::embed) async fn claim_member(
        &self,
        team: &str,
        claims: &Claims,
        spawn: &SpawnRecord,
    ) -> Result<Claim> {
        let me = self.host_identity().clone();
        let existing = claims.runs.get(&spawn.name).cloned();
        if let Some((run, _)) = &existing {
            if let Some(owner) = claims.owner(run) {
                return Ok(Claim::Elsewhere(owner));
            }
        }
        let (ours, expect) = match existing {
            // Already ours (an earlier resume by this process wrote it).
            Some((run, rev)) if run.host == me.id => return Ok(Claim::Here(rev)),
            Some((run, rev)) => {
                let mut ours = run.clone();
                ours.adopted_from = Some(run.host.clone());
                ours.host = me.id.clone();
                ours.generation = run.generation + 1;
                ours.started_at = crate::protocol::time::now_ms();
                (ours, Some(rev))
            }
            None => (run_record_of(spawn, &me), None),
        };
        let backend = self.inner.store.backend().clone();
        let (t, name, o) = (team.to_string(), spawn.name.clone(), ours.clone());
        blocking("writing the run record", move || {
            let f = failover_of(&*backend)?;
            if let Some(rev) = f.write_run(&t, &o, expect)? {
                return Ok(Claim::Here(rev));
            }
            // Lost the race: whoever wrote it runs it now.
            let host = f
                .read_runs(&t)?
                .into_iter()
                .find(|(r, _)| r.name == name)
                .map(|(r, _)| r.host)
                .unwrap_or_else(|| "another host".to_string());
            Ok(Claim::Elsewhere(host))
        })
        .await
    }

    /// Removes the run record written at `rev` for a teammate whose respawn
    /// failed: nobody runs it (logged when it fails).
    pub(in crate::embed) async fn unclaim_member(&self, team: &str, name: &str, rev: Revision) {
        let backend = self.inner.store.backend().clone();
        let (t, n) = (team.to_string(), name.to_string());
        let removed = blocking("removing a run record", move || {
            failover_of(&*backend)?.remove_run(&t, &n, rev)
        })
        .await;
        if let Err(e) = removed {
            tracing::warn!(teammate = %name, error = %e, "a run record was not removed");
        }
    }
}

/// Reads `team`'s leases and run records; takes over the `Held` leases of
/// hosts of this machine (`me.hostname`) whose pid is in `dead`, other than
/// `me`. A lost race reads everything again.
fn settle(f: &dyn Failover, team: &str, me: &HostIdentity, dead: &BTreeSet<u32>) -> Result<Claims> {
    'again: for _ in 0..TRIES {
        let leases = f.read_leases(team)?;
        let mut claims = Claims::default();
        claims.free.insert(me.id.clone());
        for (lease, rev) in leases {
            let dead_here =
                lease.host != me.id && lease.hostname == me.hostname && dead.contains(&lease.pid);
            if dead_here {
                claims.dead_here.insert(lease.host.clone());
            }
            match &lease.state {
                LeaseState::Held if dead_here => {
                    let mut taken = lease.clone();
                    taken.state = LeaseState::TakenOver {
                        by: me.id.clone(),
                        at: crate::protocol::time::now_ms(),
                    };
                    if f.write_lease(team, &taken, Some(rev))?.is_none() {
                        tracing::info!(team, host = %lease.host, "its lease moved on while resume took it: reading again");
                        continue 'again;
                    }
                    tracing::info!(team, host = %lease.host, "took over the lease of this machine's dead host");
                    claims.free.insert(lease.host.clone());
                    claims.taken.push(lease.host.clone());
                    claims.leases.insert(lease.host.clone(), taken);
                    continue;
                }
                LeaseState::TakenOver { by, .. } if by == &me.id => {
                    claims.free.insert(lease.host.clone());
                }
                LeaseState::Released => {
                    claims.free.insert(lease.host.clone());
                }
                _ => {}
            }
            claims.leases.insert(lease.host.clone(), lease);
        }
        claims.runs = f
            .read_runs(team)?
            .into_iter()
            .map(|(r, rev)| (r.name.clone(), (r, rev)))
            .collect();
        return Ok(claims);
    }
    Err(Error::Spawn(format!(
        "team {team}'s leases kept changing while resume read them ({TRIES} tries): another host is taking them over; run the resume again"
    )))
}

fn failover_of(store: &dyn TeamStore) -> Result<&dyn Failover> {
    store
        .failover()
        .ok_or_else(|| Error::Spawn("the team's store keeps no run records".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryFailover;

    fn lease(host: &HostIdentity, state: LeaseState) -> HostLease {
        HostLease {
            host: host.id.clone(),
            hostname: host.hostname.clone(),
            pid: host.pid,
            lease_ms: 10_000,
            renewed_at: 0,
            state,
        }
    }

    fn run(name: &str, host: &HostIdentity) -> RunRecord {
        RunRecord {
            name: name.into(),
            host: host.id.clone(),
            generation: 1,
            component_sha256: "0".repeat(64),
            component_name: "probe.wasm".into(),
            cwd: ".".into(),
            worktree: false,
            settings: serde_json::Value::Null,
            started_at: 0,
            adopted_from: None,
            lead: None,
        }
    }

    #[test]
    fn a_dead_local_hosts_held_lease_is_taken_and_others_are_left_to_their_owners() {
        let f = MemoryFailover::default();
        let me = HostIdentity::new("m", 10);
        let dead = HostIdentity::new("m", 11);
        let adopted = HostIdentity::new("m", 12);
        let adopter = HostIdentity::new("other", 13);
        let live = HostIdentity::new("other", 14);
        let released = HostIdentity::new("m", 15);
        let taken = LeaseState::TakenOver {
            by: adopter.id.clone(),
            at: 0,
        };
        for l in [
            lease(&dead, LeaseState::Held),
            lease(&adopted, taken),
            lease(&adopter, LeaseState::Held),
            lease(&live, LeaseState::Held),
            lease(&released, LeaseState::Released),
        ] {
            f.write_lease("t", &l, None).unwrap().unwrap();
        }
        for (name, host) in [
            ("a", &dead),
            ("b", &adopted),
            ("c", &adopter),
            ("d", &live),
            ("e", &released),
        ] {
            f.write_run("t", &run(name, host), None).unwrap().unwrap();
        }
        // Spawn records here name the dead hosts 11 and 12 (and the live
        // host's pid 14, which is not of this machine: not taken).
        let claims = settle(&f, "t", &me, &[11, 12, 14].into()).unwrap();
        assert_eq!(claims.taken, vec![dead.id.clone()]);
        let now = f.read_leases("t").unwrap();
        let of = |h: &HostIdentity| now.iter().find(|(l, _)| l.host == h.id).unwrap().0.clone();
        assert!(
            matches!(&of(&dead).state, LeaseState::TakenOver { by, .. } if by == &me.id),
            "{now:?}"
        );
        assert_eq!(of(&live).state, LeaseState::Held);
        let owner = |n: &str| claims.owner(&claims.runs[n].0);
        assert_eq!(owner("a"), None, "the dead host's: respawned here");
        assert_eq!(
            owner("b"),
            None,
            "its host's lease was taken over but the adopter has not rewritten the record: claimed by the record's swap"
        );
        assert_eq!(owner("c"), Some(adopter.id.clone()), "the adopter runs it");
        assert_eq!(owner("d"), Some(live.id.clone()), "a live host runs it");
        assert_eq!(owner("e"), None, "released: nobody runs it");
    }
}
