//! The drop box: group commit of inbox appends across processes.
//!
//! Threads of one process already share a locked write (`combine.rs`).
//! Writers in different processes cannot join that batch, so each paid a
//! whole locked, synced rewrite of the inbox per message, one after another.
//! The drop box lets them share one:
//!
//! 1. A writer that finds the inbox's flock held by another process leaves
//!    its entries in `{inbox}.drops/` (a new file, renamed into place, not
//!    synced) before it waits for the lock ([`Parcel::leave`]).
//! 2. Whoever holds the lock next, to append or to take, folds every drop it
//!    finds into the inbox ([`Pending::fold`]) and writes the inbox once,
//!    synced, as always; only then does it remove the drops it folded
//!    ([`Pending::settle`]).
//! 3. The writer, given the flock in its turn, finds its drop gone: its
//!    entries were written (and synced) by an earlier holder, and it returns
//!    at once, without the lock directory, a look at the inbox or a write
//!    ([`Parcel::committed`]). It folds nothing then: the next writer in
//!    line whose drop is still waiting writes all that came meanwhile, in
//!    one write.
//!
//! Under contention a holder writes everything that waited behind it; a
//! writer that did not wait leaves no drop and writes as before.
//!
//! **Exactly once, even across a crash.** Only entries with a `msg_id`
//! (every entry teamhost stamps) go through the drop box, and a holder folds
//! only entries whose `msg_id` is not in the inbox already. A holder that
//! dies after its write but before removing the drops leaves them behind;
//! the next holder finds their entries in the inbox and just removes them.
//! A writer whose own drop is still there checks the inbox for its entries
//! the same way ([`Parcel::held_by`]). That holds because every teamhost
//! rewrite of the inbox that may remove entries (a take) folds the drops
//! first, so entries leave the inbox only after their drops are gone;
//! Claude Code marks entries read but never removes them.
//!
//! **What a drop cannot promise.** A writer that dies after leaving its drop
//! and before its turn comes may still have its entries delivered, by the
//! next holder (as a write that completed just before a crash would be);
//! until another append or take of that inbox comes, they wait in the drop.
//! A drop that does not parse is kept as `.bad` beside it, not folded and
//! not deleted; its writer, finding it there, reports an error.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::super::InboxMessage;
use crate::error::{Error, Result};

/// Where the drops for `inbox` wait: `{inbox}.drops/`.
pub(super) fn drops_dir(inbox: &Path) -> PathBuf {
    let mut name = inbox.as_os_str().to_os_string();
    name.push(".drops");
    PathBuf::from(name)
}

/// Whether entries may go through the drop box: each has a `msg_id`, the
/// identity a holder checks before folding them.
pub(super) fn can_drop(entries: &[InboxMessage]) -> bool {
    !entries.is_empty() && entries.iter().all(|e| e.msg_id.is_some())
}

/// One writer's drop (its parcel of entries), once left.
#[derive(Debug)]
pub(super) struct Parcel {
    path: PathBuf,
    /// Its entries' `msg_id`s.
    ids: Vec<String>,
}

impl Parcel {
    /// Leaves `entries` as a drop for `inbox`: written to a temporary name
    /// and renamed into place, so a holder never reads half of it. Not
    /// synced: the holder's write of the inbox is what makes them durable.
    pub(super) fn leave(inbox: &Path, entries: &[InboxMessage]) -> Result<Parcel> {
        let dir = drops_dir(inbox);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        // Named by time first: a holder folds drops in the order they came.
        let stem = format!(
            "{nanos:020}-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        );
        let path = dir.join(format!("{stem}.json"));
        let part = dir.join(format!("{stem}.part"));
        let bytes = serde_json::to_vec(entries)
            .map_err(|e| Error::HostTask(format!("an inbox entry did not serialise: {e}")))?;
        // The directory is made by the first drop and stays.
        let written = match std::fs::write(&part, &bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(Error::io("mkdir", &dir, e)),
                }
                std::fs::write(&part, &bytes)
            }
            other => other,
        };
        let written = written
            .map_err(|e| Error::io("write", &part, e))
            .and_then(|()| {
                std::fs::rename(&part, &path).map_err(|e| Error::io("rename", &path, e))
            });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
        let ids = entries.iter().filter_map(|e| e.msg_id.clone()).collect();
        Ok(Parcel { path, ids })
    }

    /// The drop's file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Asked under the inbox's lock: whether an earlier holder wrote this
    /// drop's entries (it removes a drop only after its synced write). A drop
    /// a holder could not parse is an error, never a success.
    pub(super) fn committed(&self) -> Result<bool> {
        if self.path.exists() {
            return Ok(false);
        }
        let bad = bad_path(&self.path);
        if bad.exists() {
            return Err(Error::HostTask(format!(
                "this message's drop could not be read back by the inbox's holder; kept as {}",
                bad.display()
            )));
        }
        Ok(true)
    }

    /// Asked under the inbox's lock: whether `inbox` holds this drop's
    /// entries already (an earlier holder wrote them and died before
    /// removing the drop, which is removed now).
    pub(super) fn held_by(&self, inbox: &[InboxMessage]) -> bool {
        let held = self
            .ids
            .iter()
            .all(|id| inbox.iter().any(|m| m.msg_id.as_deref() == Some(id)));
        if held {
            let _ = std::fs::remove_file(&self.path);
        }
        held
    }

    /// Removes the drop (its entries were written by this holder, or it is
    /// given up because an error ends the append).
    pub(super) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The drops a holder folded into the inbox, to remove once the inbox is
/// written.
#[derive(Debug, Default)]
pub(super) struct Pending {
    folded: Vec<PathBuf>,
}

impl Pending {
    /// Appends to `inbox` (the document the holder is about to write) the
    /// entries of every drop waiting for `path`, in the order they were left,
    /// except those already in it (by `msg_id`). Returns whether any entry was
    /// added. Called with the inbox's lock held.
    pub(super) fn fold(path: &Path, inbox: &mut Vec<InboxMessage>) -> Result<Pending> {
        let dir = drops_dir(path);
        let listing = match std::fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pending::default()),
            Err(e) => return Err(Error::io("read the directory", &dir, e)),
        };
        let mut names: Vec<PathBuf> = listing
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        if names.is_empty() {
            return Ok(Pending::default());
        }
        names.sort();
        let mut present: HashSet<String> = inbox.iter().filter_map(|m| m.msg_id.clone()).collect();
        let mut folded = Vec::with_capacity(names.len());
        for drop in names {
            let entries: Vec<InboxMessage> = match std::fs::read(&drop) {
                Ok(bytes) => match serde_json::from_slice(&bytes) {
                    Ok(entries) => entries,
                    Err(e) => {
                        let bad = bad_path(&drop);
                        tracing::warn!(drop = %drop.display(), kept = %bad.display(), error = %e,
                            "an inbox drop does not parse; kept aside, not delivered");
                        let _ = std::fs::rename(&drop, &bad);
                        continue;
                    }
                },
                // Its writer gave it up (an error ended its append).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("read", &drop, e)),
            };
            for entry in entries {
                let fresh = match &entry.msg_id {
                    Some(id) => present.insert(id.clone()),
                    // Never left by teamhost ([`can_drop`]); taken as is.
                    None => true,
                };
                if fresh {
                    inbox.push(entry);
                }
            }
            folded.push(drop);
        }
        Ok(Pending { folded })
    }

    /// Removes the folded drops: called only after the inbox holding their
    /// entries was written and synced. Their writers, given the lock, then
    /// find them gone.
    pub(super) fn settle(self) {
        for drop in self.folded {
            if let Err(e) = std::fs::remove_file(&drop) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(drop = %drop.display(), error = %e,
                        "could not remove a folded inbox drop (the next holder will)");
                }
            }
        }
    }
}

fn bad_path(drop: &Path) -> PathBuf {
    drop.with_extension("bad")
}

#[cfg(test)]
mod tests;
