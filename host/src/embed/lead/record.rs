//! Keeping a lead's seat on this machine after each change
//! ([`RecordKeeper`]), as [`LeadRecord`] (`home::lead_record`): what
//! [`Host::resume_led`](crate::embed::Host::resume_led) goes on from.
//!
//! Every write replaces the file whole and is synced before the act that
//! changed the seat is answered, so a host killed at any point leaves the
//! seat as it was before that act or after it. A spawn is kept twice:
//! charged before it runs (a crash in between leaves the budget given and
//! the spawn counted: never more given than the purse held) and again with
//! its teammate.
//!
//! **On a store shared by several hosts** (a lease held on the team), the
//! same snapshot is also written into the lead's run record
//! ([`RunRecord::lead`]), compare-and-swapped on the revision this keeper
//! wrote last ([`RecordKeeper::share`]): what a host adopting the lead goes
//! on from when this machine dies (`shared.rs`). A swap
//! that loses means another host rewrote the record, that is, took the lead
//! over: the write fails with [`Error::LeaseLost`] naming that host, and
//! this keeper writes the store no more.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::home::lead_record::LeadRecord;
use crate::home::Home;
use crate::store::{Revision, RunRecord, TeamStore};

/// Writes a seat's record in the order its changes were made: a snapshot
/// taken later never loses to one taken earlier, however the blocking
/// pool orders the writes.
pub(super) struct RecordKeeper {
    home: Home,
    team: String,
    /// What every snapshot keeps of the start: the component and its hash.
    base: LeadRecord,
    /// Snapshots numbered in the order they were taken.
    taken: Mutex<u64>,
    next: AtomicU64,
    /// The number of the snapshot on disk.
    written: Arc<Mutex<u64>>,
    /// The lead's run record in a shared store, once shared.
    shared: Arc<Mutex<Option<Shared>>>,
}

/// The lead's run record as this keeper last wrote it.
struct Shared {
    store: Arc<dyn TeamStore>,
    run: RunRecord,
    rev: Revision,
}

impl Shared {
    /// Writes `record` into the run record at the revision written last;
    /// [`Error::LeaseLost`] naming the host that rewrote it when the swap
    /// loses.
    fn write(&mut self, team: &str, record: &LeadRecord) -> Result<()> {
        let failover = self
            .store
            .failover()
            .ok_or_else(|| Error::Spawn("the store keeps no run records".into()))?;
        let mut run = self.run.clone();
        run.lead = Some(serde_json::to_value(record).map_err(|e| Error::Encode(e.to_string()))?);
        match failover.write_run(team, &run, Some(self.rev))? {
            Some(rev) => {
                self.run = run;
                self.rev = rev;
                Ok(())
            }
            None => {
                let by = failover
                    .read_runs(team)?
                    .into_iter()
                    .find(|(r, _)| r.name == run.name)
                    .map(|(r, _)| r.host)
                    .unwrap_or_else(|| "unknown (the record is gone)".into());
                Err(Error::LeaseLost {
                    team: team.to_string(),
                    by,
                })
            }
        }
    }
}

impl RecordKeeper {
    pub(super) fn new(home: &Home, team: &str, base: LeadRecord) -> RecordKeeper {
        RecordKeeper {
            home: home.clone(),
            team: team.to_string(),
            base,
            taken: Mutex::new(0),
            next: AtomicU64::new(1),
            written: Arc::new(Mutex::new(0)),
            shared: Arc::new(Mutex::new(None)),
        }
    }

    /// From now on every snapshot is also written into `run`, the lead's
    /// run record in `store` (written at revision `rev`).
    pub(super) fn share(&self, store: Arc<dyn TeamStore>, run: RunRecord, rev: Revision) {
        *self.shared.lock().unwrap_or_else(|p| p.into_inner()) = Some(Shared { store, run, rev });
    }

    /// The lead's run record's revision as this keeper wrote it last, and
    /// the store; `None` when not shared.
    pub(super) fn shared_at(&self) -> Option<(Arc<dyn TeamStore>, Revision)> {
        let shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.as_ref().map(|s| (s.store.clone(), s.rev))
    }

    /// Stops writing the store (the lead's record was removed or lost).
    pub(super) fn unshare(&self) {
        *self.shared.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// What every snapshot keeps of the start.
    pub(super) fn base(&self) -> &LeadRecord {
        &self.base
    }

    /// Takes a snapshot with `snapshot` (numbered under a lock, so a later
    /// number is a later look at the seat) and writes it, synced, unless a
    /// later one is on disk already.
    pub(super) async fn keep(&self, snapshot: impl FnOnce() -> LeadRecord) -> Result<()> {
        let (number, record) = {
            let _order = self.taken.lock().unwrap_or_else(|p| p.into_inner());
            (self.next.fetch_add(1, Ordering::SeqCst), snapshot())
        };
        let (home, team, written) = (self.home.clone(), self.team.clone(), self.written.clone());
        let shared = self.shared.clone();
        crate::blocking::try_run("keeping the lead's seat", move || {
            let mut on_disk = written.lock().unwrap_or_else(|p| p.into_inner());
            if number > *on_disk {
                record.write(&home, &team)?;
                *on_disk = number;
                let mut shared = shared.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(s) = shared.as_mut() {
                    if let Err(e) = s.write(&team, &record) {
                        if matches!(e, Error::LeaseLost { .. }) {
                            *shared = None;
                        }
                        return Err(e);
                    }
                }
            }
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_latest_snapshot_is_the_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let keeper = RecordKeeper::new(&home, "t", LeadRecord::default());
        let mut seat = LeadRecord {
            formed: true,
            spawns: 1,
            ..LeadRecord::default()
        };
        let first = seat.clone();
        keeper.keep(move || first).await.unwrap();
        seat.refused_total = 2;
        let second = seat.clone();
        keeper.keep(move || second).await.unwrap();
        assert_eq!(LeadRecord::load(&home, "t").unwrap(), Some(seat));
    }

    fn lead_run(host: &str) -> RunRecord {
        RunRecord {
            name: "team-lead".into(),
            host: host.into(),
            generation: 1,
            component_sha256: "ab".repeat(32),
            component_name: "lead.wasm".into(),
            cwd: "/work".into(),
            worktree: false,
            settings: serde_json::Value::Null,
            started_at: 0,
            adopted_from: None,
            lead: None,
        }
    }

    #[tokio::test]
    async fn a_shared_seat_follows_each_change_until_another_host_rewrites_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let store: Arc<dyn TeamStore> = Arc::new(crate::store::MemoryStore::new());
        let f = store.failover().unwrap();
        let rev = f.write_run("t", &lead_run("a"), None).unwrap().unwrap();
        let keeper = RecordKeeper::new(&home, "t", LeadRecord::default());
        keeper.share(store.clone(), lead_run("a"), rev);
        let seat = LeadRecord {
            formed: true,
            spawns: 2,
            given_microdollars: 200_000,
            ..LeadRecord::default()
        };
        let kept = seat.clone();
        keeper.keep(move || kept).await.unwrap();
        let (run, rev) = f.read_runs("t").unwrap().remove(0);
        let stored: LeadRecord = serde_json::from_value(run.lead.clone().unwrap()).unwrap();
        assert_eq!((stored, run.host.as_str()), (seat.clone(), "a"));

        // Host b adopts the lead: a's next write loses, names b, and a
        // writes the store no more (its home record still follows).
        let mut theirs = run.clone();
        theirs.host = "b".into();
        f.write_run("t", &theirs, Some(rev)).unwrap().unwrap();
        let later = LeadRecord {
            spawns: 3,
            ..seat.clone()
        };
        let kept = later.clone();
        let err = keeper.keep(move || kept).await.unwrap_err();
        assert!(
            matches!(&err, Error::LeaseLost { by, .. } if by == "b"),
            "{err}"
        );
        assert!(keeper.shared_at().is_none());
        let (run, _) = f.read_runs("t").unwrap().remove(0);
        let stored: LeadRecord = serde_json::from_value(run.lead.unwrap()).unwrap();
        assert_eq!(stored.spawns, 2, "b's record is left as b wrote it");
    }
}
