//! Sleeping until a lock directory someone else holds is removed: inotify on
//! its parent directory, woken by the `rmdir` (or a rename away), with a
//! deadline. Where inotify is unavailable (no instances left), it falls back
//! to short sleeps, the only polling left in the lock.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::super::inotify::{Inotify, GONE};

/// How long a waiter sleeps between checks when inotify is unavailable.
const FALLBACK_SLEEP: Duration = Duration::from_millis(20);

/// Returns when `dir` is removed or renamed away, when `until` passes, or
/// (harmlessly) a little early; the caller checks again either way.
pub(super) fn until_removed(dir: &Path, until: Instant) {
    let watch = dir.parent().and_then(|parent| {
        Inotify::watch(
            parent,
            libc::IN_DELETE | libc::IN_MOVED_FROM | libc::IN_DELETE_SELF,
        )
    });
    let Some(watch) = watch else {
        let left = until.saturating_duration_since(Instant::now());
        std::thread::sleep(left.min(FALLBACK_SLEEP));
        return;
    };
    if !dir.exists() {
        return; // gone between the caller's mkdir and the watch
    }
    let name = dir.file_name().map(|n| n.as_bytes()).unwrap_or_default();
    while watch.wait(until) {
        let mut removed = false;
        watch.drain(|mask, event| removed |= mask & GONE != 0 || event == name);
        if removed {
            return;
        }
    }
}
