//! What tells two versions of a file apart without reading them: inode,
//! size, modification and change times. Caches of parsed files (tasks,
//! configs) keep the stamp of what they read and read again when it
//! changed.
//!
//! A stamp read within [`RACY`] of the file's last modification is *racy*:
//! on a file system with coarse timestamps a second write in the same clock
//! tick, of the same size, would leave the stamp unchanged (git's "racily
//! clean" problem). A cache does not trust a racy stamp it got by reading;
//! it may trust one it recorded right after its own write, under the file's
//! lock, since any later write then comes after the stat that follows it.

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime};

/// A stamp read this soon after the file's modification is racy.
pub(super) const RACY: Duration = Duration::from_millis(100);

/// One version of a file, as its metadata shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// Whether `self` can be the file `staged` was taken of, after a
    /// rename: the same inode, size and modification time (a rename
    /// changes the change time only).
    pub(super) fn is_renamed(&self, staged: &Stamp) -> bool {
        self.ino == staged.ino && self.size == staged.size && self.mtime == staged.mtime
    }

    /// The stamp of `meta`.
    pub(super) fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// Whether `meta`'s file was modified within [`RACY`] of now.
pub(super) fn is_racy(meta: &std::fs::Metadata) -> bool {
    meta.modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_none_or(|age| age < RACY)
}
