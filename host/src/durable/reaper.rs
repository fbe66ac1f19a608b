//! Renaming a new version into place without freeing the old one on the
//! writer's time.
//!
//! A rename over an existing file drops the old version's last link, and
//! when nobody has it open the kernel frees its inode and blocks inside
//! the `rename` call: on ext4 a tenth to a few tenths of a millisecond,
//! more when many files were freed lately. That time sits between the
//! new version's sync and the writer's return — for an inbox, between a
//! send and the moment its reader can wake. [`rename_into_place`] first
//! opens the old version (`O_PATH`: no read, no lock, only a reference),
//! so the rename only unlinks it, and hands that reference to one
//! process-wide thread that closes it, which is when the inode is freed.
//!
//! Nothing else changes: the new version is in place when the rename
//! returns, exactly as before, and readers see the same files. The old
//! version's blocks are kept a moment longer: the thread, once woken,
//! closes what a burst of writes hands it every few milliseconds, so that
//! a burst costs one wake-up, not one per write (each a context switch on
//! the writer's core). A lone write costs the thread two (its own and the
//! pause's end), off the writer's time. At most [`PENDING`] old
//! versions wait for the thread; past that (or when the thread cannot
//! start, or no descriptor is left) the writer frees the old version
//! itself, as a plain rename would.

use std::fs::File;
use std::path::Path;
use std::sync::mpsc;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// How many old versions may wait to be freed. Small: each holds a file
/// descriptor, and a burst beyond it costs only the old behaviour.
pub(crate) const PENDING: usize = 64;

/// Renames `tmp` over `path`, leaving the old version of `path` (if any)
/// to be freed off the caller's thread (see the module docs). The same
/// outcome and errors as `std::fs::rename(tmp, path)`.
pub(crate) fn rename_into_place(tmp: &Path, path: &Path) -> Result<()> {
    let old = hold(path);
    std::fs::rename(tmp, path).map_err(|e| Error::io("rename", tmp, e))?;
    if let Some(old) = old {
        release(old);
    }
    Ok(())
}

/// A reference to what `path` names now, without following a final
/// symbolic link; `None` when there is nothing there or no descriptor to
/// spare (the rename then frees it itself).
fn hold(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path)
        .ok()
}

/// What the closing thread is handed.
enum Job {
    /// An old version to close (and so free).
    Close(File),
    /// Answered once everything handed in before it is closed.
    #[cfg(test)]
    Mark(mpsc::Sender<()>),
}

/// Hands `old` to the closing thread; closes it here when the thread is
/// busy with [`PENDING`] others or is not running.
fn release(old: File) {
    if let Some(queue) = closer() {
        // A full or closed queue gives the file back, dropped here.
        let _ = queue.try_send(Job::Close(old));
    }
}

/// The closing thread's queue, started on first use; `None` when the
/// thread could not be started.
fn closer() -> Option<&'static mpsc::SyncSender<Job>> {
    static QUEUE: OnceLock<Option<mpsc::SyncSender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::sync_channel::<Job>(PENDING);
            std::thread::Builder::new()
                .name("teamhost-reaper".into())
                .spawn(move || {
                    // Woken by the first old version of a burst, it then
                    // pauses between draining rounds until a round finds
                    // nothing: the rest of the burst is queued without a
                    // wake-up each (a writer's `try_send` wakes the thread
                    // only while it waits in `recv`).
                    while let Ok(job) = rx.recv() {
                        do_job(job);
                        loop {
                            std::thread::sleep(BURST_PAUSE);
                            let mut any = false;
                            while let Ok(job) = rx.try_recv() {
                                do_job(job);
                                any = true;
                            }
                            if !any {
                                break;
                            }
                        }
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// How long the closing thread pauses between draining rounds during a
/// burst. Short against the queue: at [`PENDING`] per pause a burst may
/// reach 32,000 writes a second before a writer frees an old version itself.
const BURST_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

fn do_job(job: Job) {
    match job {
        Job::Close(old) => drop(old),
        #[cfg(test)]
        Job::Mark(done) => {
            let _ = done.send(());
        }
    }
}

/// Waits until every old version handed in so far is closed.
#[cfg(test)]
pub(crate) fn drained() {
    let (tx, rx) = mpsc::channel();
    closer()
        .expect("the closing thread runs")
        .send(Job::Mark(tx))
        .unwrap();
    rx.recv().unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_new_version_is_in_place_when_the_rename_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.json");
        std::fs::write(&path, b"old").unwrap();
        let tmp = dir.path().join("inbox.json.tmp.1");
        std::fs::write(&tmp, b"new").unwrap();
        rename_into_place(&tmp, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(!tmp.exists());
    }

    #[test]
    fn a_first_version_needs_nothing_to_hold() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.json");
        let tmp = dir.path().join("new.json.tmp.1");
        std::fs::write(&tmp, b"first").unwrap();
        rename_into_place(&tmp, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
    }

    #[test]
    fn a_missing_new_version_is_the_renames_error_and_the_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.json");
        std::fs::write(&path, b"kept").unwrap();
        let err = rename_into_place(&dir.path().join("absent.tmp"), &path).unwrap_err();
        assert!(err.to_string().contains("rename"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
    }

    #[test]
    fn a_link_in_the_targets_place_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let aim = dir.path().join("elsewhere");
        std::fs::write(&aim, b"untouched").unwrap();
        let path = dir.path().join("inbox.json");
        std::os::unix::fs::symlink(&aim, &path).unwrap();
        let tmp = dir.path().join("inbox.json.tmp.1");
        std::fs::write(&tmp, b"new").unwrap();
        rename_into_place(&tmp, &path).unwrap();
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read(&aim).unwrap(), b"untouched");
    }

    /// Descriptors this process holds on files under `dir` that are gone.
    fn held_deleted(dir: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|l| l.starts_with(dir) && l.to_string_lossy().ends_with(" (deleted)"))
            .count()
    }

    #[test]
    fn old_versions_are_freed_once_the_thread_drains_even_past_its_queue() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.json");
        std::fs::write(&path, b"0").unwrap();
        let rounds = PENDING * 4;
        for i in 1..=rounds {
            let tmp = dir.path().join(format!("busy.json.tmp.{i}"));
            std::fs::write(&tmp, i.to_string()).unwrap();
            rename_into_place(&tmp, &path).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), rounds.to_string());
        drained();
        assert_eq!(
            held_deleted(dir.path()),
            0,
            "an old version is still held open"
        );
    }
}
