//! [`OwnWrites`]: the task and inbox files this file store wrote for an
//! observer that hears of them anyway, by identity, so that observer's
//! change feed can drop their echoes.
//!
//! A task pass of this process tells its observers what it wrote, stamped
//! inside the pass (`store/task_writes.rs`): those events are in the order
//! of writing. inotify then reports the same write again, later and
//! without content, and an observer that reads the list on it (the run's
//! reporter) reads it as it is *then*, possibly after later writes whose
//! own events have not arrived yet, and prints states out of order. An
//! inbox write announced to the observer (an append, a take that left
//! nothing unread: `inbox.rs`) would, echoed, only wake its reader a second
//! time to find nothing. So a file whose identity is one this store gave
//! it for that observer is not reported by the feed; a file another
//! process wrote (a `teamhost teammate`, the CLI, Claude Code) has another
//! identity and is.
//!
//! While a write is under way its path is marked ([`OwnWrites::writing`]):
//! the file's lock is held, so nothing else writes that file meanwhile and
//! an event for it then is this write's, or an earlier one's that this
//! write read and carries on. Once written, the file's identity
//! is kept instead: device, inode and change time (to the nanosecond),
//! read while the lock is still held, so no writer that takes the lock can
//! replace it in between; an inode reused later by another process's file
//! has another change time, or, within one tick of that clock, another
//! path or size (the path is part of what is kept). The feed's check and
//! the store's marks take one lock, so an event is never judged between
//! the two. The store keeps the last [`KEPT`] writes; an echo older than
//! that is reported (an extra read for an observer, never a missed
//! change).

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many of the latest writes are remembered.
pub(super) const KEPT: usize = 4096;

/// `(device, inode, ctime seconds, ctime nanoseconds, size)`, kept with the
/// file's path: an inode freed and given to another file within one tick of
/// the change-time clock (a few milliseconds, a second on some file
/// systems) then still differs by its path, or at the same path by its
/// size, and a file another process wrote is not taken for this store's.
type Identity = (u64, u64, i64, i64, u64);

/// A file's path and [`Identity`].
type KeptWrite = (PathBuf, Identity);

/// The files this store is writing and wrote last, each with the key
/// of the observer told of it. Shared by the store and every feed it
/// starts.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// Paths being written now, and for whom.
    writing: HashMap<PathBuf, usize>,
    order: VecDeque<KeptWrite>,
    told: HashMap<KeptWrite, usize>,
}

fn identity(path: &Path) -> Option<Identity> {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.ctime(), m.ctime_nsec(), m.size()))
}

/// A write under way ([`OwnWrites::writing`]); [`Writing::done`] keeps
/// what it wrote, dropping it without that forgets the mark.
pub(super) struct Writing<'a> {
    own: &'a OwnWrites,
    path: &'a Path,
    observer: usize,
}

impl OwnWrites {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks `path` as being written by this store for the observer
    /// `observer` ([`crate::store::StoreObserver::echo_key`]). Call it with
    /// the lock that guards `path` held, before the write.
    pub(super) fn writing<'a>(&'a self, path: &'a Path, observer: usize) -> Writing<'a> {
        self.kept().writing.insert(path.to_path_buf(), observer);
        Writing {
            own: self,
            path,
            observer,
        }
    }

    /// Whether the file at `path` now is one this store is writing or
    /// wrote for `observer` (`false` for a file that is gone or unreadable
    /// and not being written).
    pub(super) fn told(&self, path: &Path, observer: usize) -> bool {
        let id = identity(path);
        let k = self.kept();
        k.writing.get(path) == Some(&observer)
            || id.is_some_and(|id| k.told.get(&(path.to_path_buf(), id)) == Some(&observer))
    }
}

impl Writing<'_> {
    /// The write landed: keeps the file's identity (the lock still held).
    pub(super) fn done(self) {
        if let Some(id) = identity(self.path) {
            let mut k = self.own.kept();
            let key = (self.path.to_path_buf(), id);
            if k.told.insert(key.clone(), self.observer).is_none() {
                k.order.push_back(key);
                if k.order.len() > KEPT {
                    if let Some(old) = k.order.pop_front() {
                        k.told.remove(&old);
                    }
                }
            }
        }
        // `Drop` clears the mark, after the identity is kept.
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        let mut k = self.own.kept();
        if k.writing.get(self.path) == Some(&self.observer) {
            k.writing.remove(self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(own: &OwnWrites, path: &Path, observer: usize) {
        let w = own.writing(path, observer);
        assert!(own.told(path, observer), "a write under way is told");
        std::fs::write(path, b"{}").unwrap();
        w.done();
    }

    #[test]
    fn a_file_written_here_is_told_to_its_observer_only_and_a_rewrite_elsewhere_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.json");
        let own = OwnWrites::default();
        write(&own, &path, 7);
        assert!(own.told(&path, 7));
        assert!(!own.told(&path, 8), "another observer was not told");
        assert!(own.kept().writing.is_empty());
        // Another writer's replace: a new inode under the same name.
        crate::durable::write_atomic(&path, b"{ }").unwrap();
        assert!(!own.told(&path, 7));
        // A write that failed leaves no mark.
        drop(own.writing(&path, 7));
        assert!(!own.told(&path, 7));
        // Gone: not told.
        std::fs::remove_file(&path).unwrap();
        assert!(!own.told(&path, 7));
    }

    #[test]
    fn the_same_inode_at_another_path_is_not_taken_for_a_file_written_here() {
        // A hard link: one inode, one change time, two paths. So does an
        // inode freed and reused by another process's file within one tick
        // of the change-time clock.
        let dir = tempfile::tempdir().unwrap();
        let (mine, other) = (dir.path().join("alice.json"), dir.path().join("bob.json"));
        std::fs::write(&mine, b"[]").unwrap();
        std::fs::hard_link(&mine, &other).unwrap();
        let own = OwnWrites::default();
        own.writing(&mine, 7).done();
        assert_eq!(identity(&mine), identity(&other));
        assert!(own.told(&mine, 7));
        assert!(
            !own.told(&other, 7),
            "another path's file was taken for this one"
        );
    }

    #[test]
    fn only_the_latest_writes_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let own = OwnWrites::default();
        let first = dir.path().join("first.json");
        write(&own, &first, 1);
        for i in 0..KEPT {
            write(&own, &dir.path().join(format!("{i}.json")), 1);
        }
        assert!(!own.told(&first, 1), "the oldest write is forgotten");
        assert!(own.told(&dir.path().join(format!("{}.json", KEPT - 1)), 1));
        assert_eq!(own.kept().order.len(), KEPT);
    }
}
