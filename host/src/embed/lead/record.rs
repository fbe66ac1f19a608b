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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::home::lead_record::LeadRecord;
use crate::home::Home;

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
        }
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
        crate::blocking::try_run("keeping the lead's seat", move || {
            let mut on_disk = written.lock().unwrap_or_else(|p| p.into_inner());
            if number > *on_disk {
                record.write(&home, &team)?;
                *on_disk = number;
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
}
