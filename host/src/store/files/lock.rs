//! Cross-process locks around every read-modify-write of a shared file.
//!
//! A lock on `F` is three locks taken in order, all held for the whole
//! read-modify-write cycle:
//!
//! 1. **This process's gate for `F`** ([`gate`]): threads of one process
//!    queue for `F` in arrival order and sleep until the holder hands the
//!    lock to the next one. Nobody polls.
//! 2. **`F.flock`**, an ordinary file locked with `flock(2)`. It orders
//!    teamhost processes among themselves, and the kernel drops it the
//!    instant its holder dies, so a crashed teamhost never blocks anyone.
//!    When another process holds it, a helper thread blocks in `flock` (which
//!    has no timeout) and hands the lock over when the kernel grants it; the
//!    waiter gives up at its deadline.
//! 3. **`F.lock/`**, a directory made with `mkdir` and removed with `rmdir`:
//!    the reference CLI's convention (proper-lockfile; stale after 10 s by
//!    mtime). Taking it too means teamhost and a Claude Code process sharing
//!    a home never interleave. While held, a background thread refreshes its
//!    mtime every two seconds so a long hold is never mistaken for a stale
//!    one. A waiter for a foreign holder sleeps on inotify until the
//!    directory goes (or until it would turn stale).
//!
//! When `F.lock/` already exists, the flock holder can tell whether a crashed
//! teamhost left it: every teamhost holder records the directory's identity
//! (device, inode, change time), its pid and what it is doing in `F.flock`. A
//! matching leftover is removed at once; anything else is a foreign lock and
//! is waited for, then treated as stale after [`LockOptions::stale`] without
//! refresh, exactly as the reference does. Waiting is bounded by
//! [`LockOptions::timeout`] and ends in [`Error::LockTimeout`] naming the
//! real holder (this process and what it is doing, another teamhost process
//! by pid, or a foreign program), never in a dropped write.

mod gate;
mod inotify_wait;
mod waiter;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, Result};

/// How long to wait for a lock and when a foreign lock counts as abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockOptions {
    /// Longest wait before [`Error::LockTimeout`]. Default 30 s.
    pub timeout: Duration,
    /// Age (by mtime) after which a lock directory nobody refreshes is removed.
    /// Default 10 s, the reference's value; do not lower it when sharing a home
    /// with Claude Code, which refreshes its locks every 5 s.
    pub stale: Duration,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            timeout: Duration::from_secs(30),
            stale: Duration::from_secs(10),
        }
    }
}

/// The reference's lock directory for `target`: `target` + `.lock`.
pub fn lock_dir_for(target: &Path) -> PathBuf {
    path_with_suffix(target, ".lock")
}

/// teamhost's flock file for `target`: `target` + `.flock`.
pub fn flock_file_for(target: &Path) -> PathBuf {
    path_with_suffix(target, ".flock")
}

/// Runs `f` while holding the exclusive cross-process lock on `target`.
/// `what` says what the holder does ("a config update"), for the error a
/// waiter that times out reports.
///
/// The parent directory of `target` must exist: a lock never makes a
/// directory, so a write that comes after its team was deleted fails here
/// (`NotFound`) instead of bringing the team's directory back. `f` runs at
/// most once; its result is returned after the lock is released.
pub fn with_lock<T>(
    target: &Path,
    opts: &LockOptions,
    what: &'static str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    match with_lock_unless(target, opts, what, &mut || {}, &mut || false, f)? {
        Locked::Ran(value) => Ok(value),
        Locked::Needless => unreachable!("never needless"),
    }
}

/// What [`with_lock_unless`] did.
pub(super) enum Locked<T> {
    /// It took the lock and ran `f`.
    Ran(T),
    /// The wait made the lock needless: `f` did not run.
    Needless,
}

/// [`with_lock`] for a caller whose need for the lock may pass while it
/// waits (the drop box, `drops.rs`). `on_wait` runs once, before waiting,
/// when another process holds the flock (not when the lock is free or held
/// only by this process's other threads). When it ran, `needless` is asked
/// as soon as the flock is granted: when it says so, the flock is released
/// at once, without the lock directory, and `f` does not run.
pub(super) fn with_lock_unless<T>(
    target: &Path,
    opts: &LockOptions,
    what: &'static str,
    on_wait: &mut dyn FnMut(),
    needless: &mut dyn FnMut() -> bool,
    f: impl FnOnce() -> Result<T>,
) -> Result<Locked<T>> {
    let started = Instant::now();
    let deadline = started + opts.timeout;
    let timeout = |lock_dir: PathBuf, holder: String| Error::LockTimeout {
        path: target.to_path_buf(),
        lock_dir,
        waited: started.elapsed(),
        holder,
    };
    let _turn = gate::enter(target, what, deadline).map_err(|holder| {
        timeout(
            lock_dir_for(target),
            format!("held by this process for {holder}"),
        )
    })?;
    let flock_path = flock_file_for(target);
    let mut waited = false;
    let mut noting = || {
        waited = true;
        on_wait();
    };
    let file = match acquire_flock(&flock_path, deadline, &mut noting)? {
        Some(file) => file,
        None => {
            return Err(timeout(
                lock_dir_for(target),
                format!("held by {}", recorded_holder(&flock_path)),
            ))
        }
    };
    if waited && needless() {
        return Ok(Locked::Needless); // dropping the file releases the flock
    }
    let result = with_dir_lock(target, &file, what, started, deadline, opts, f);
    drop(file); // closing the last descriptor releases the flock
    result.map(Locked::Ran)
}

/// Takes the flock on `path`, waiting until `deadline`; `None` on timeout.
/// `on_wait` runs before a wait.
fn acquire_flock(
    path: &Path,
    deadline: Instant,
    on_wait: &mut dyn FnMut(),
) -> Result<Option<File>> {
    let file = open_flock_file(path)?;
    if try_flock(&file).map_err(|e| Error::io("flock", path, e))? {
        return Ok(Some(file));
    }
    drop(file);
    if Instant::now() >= deadline {
        return Ok(None); // not waiting at all (a zero timeout)
    }
    on_wait();
    // Another process holds it. flock(2) cannot time out, so a helper thread
    // blocks in it (`waiter.rs`); if this waiter has gone by the time the
    // kernel grants the lock, the helper's send fails and dropping the file
    // releases it.
    let (tx, rx) = mpsc::sync_channel::<Result<File>>(1);
    waiter::wait_for(path.to_path_buf(), tx, open_flock_file)?;
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(got) => got.map(Some),
        Err(_) => Ok(None),
    }
}

/// Tries to take the flock without waiting: `Ok(false)` when another open
/// file description holds it.
fn try_flock(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(e)
    }
}

fn open_flock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open", path, e))
}

/// Third stage: with the flock held, take the reference's mkdir lock.
fn with_dir_lock<T>(
    target: &Path,
    flock: &File,
    what: &'static str,
    started: Instant,
    deadline: Instant,
    opts: &LockOptions,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let dir = lock_dir_for(target);
    loop {
        match std::fs::create_dir(&dir) {
            Ok(()) => break,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                let Some(age) = foreign_lock_age(&dir, flock)? else {
                    continue; // a crashed teamhost's leftover, already removed
                };
                if age >= opts.stale {
                    tracing::warn!(lock = %dir.display(), ?age, "removing stale lock directory");
                    remove_dir_if_present(&dir)?;
                    continue;
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(Error::LockTimeout {
                        path: target.to_path_buf(),
                        lock_dir: dir.clone(),
                        waited: started.elapsed(),
                        holder: format!(
                            "held by another program (Claude Code?), which refreshed {} {:.1?} ago",
                            dir.display(),
                            age
                        ),
                    });
                }
                // Sleep until the directory goes, or until it would turn
                // stale, or the deadline.
                let until = deadline.min(now + (opts.stale - age));
                inotify_wait::until_removed(&dir, until);
            }
            Err(e) => return Err(Error::io("mkdir", &dir, e)),
        }
    }
    record_owner(&dir, flock, what)?;
    refresher().hold(&dir);
    let result = f();
    refresher().release(&dir);
    if let Err(e) = std::fs::remove_dir(&dir) {
        if e.kind() != ErrorKind::NotFound {
            tracing::warn!(lock = %dir.display(), error = %e, "could not remove lock directory");
        }
    }
    result
}

/// Identity of a lock directory, recorded in the flock file by its teamhost
/// holder (the first line of the record).
fn dir_identity(meta: &std::fs::Metadata) -> String {
    format!(
        "{} {} {} {}",
        meta.dev(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

/// Length a lock's record is padded to, so that every record overwrites
/// the one before it whole and none needs the file cut to its length.
const RECORD_LEN: usize = 192;

/// Writes `identity\npid what\n` into the flock file, padded with a line
/// of blanks to [`RECORD_LEN`]. Readers look at the first two lines only,
/// so what a longer record left beyond the padding is never read; a record
/// longer than the padding cuts the file to its own length.
fn record_owner(dir: &Path, flock: &File, what: &str) -> Result<()> {
    let meta = std::fs::metadata(dir).map_err(|e| Error::io("stat", dir, e))?;
    let mut record = format!("{}\n{} {what}\n", dir_identity(&meta), std::process::id());
    let cut = record.len() >= RECORD_LEN;
    if !cut {
        record.extend(std::iter::repeat_n(' ', RECORD_LEN - 1 - record.len()));
        record.push('\n');
    }
    flock
        .write_all_at(record.as_bytes(), 0)
        .and_then(|()| match cut {
            true => flock.set_len(record.len() as u64),
            false => Ok(()),
        })
        .map_err(|e| Error::io("write", dir, e))
}

/// Who last held the lock of `flock_path`, from its record: "teamhost
/// process 1234 (a config update)".
fn recorded_holder(flock_path: &Path) -> String {
    let text = std::fs::read_to_string(flock_path).unwrap_or_default();
    match text.lines().nth(1).and_then(|l| l.split_once(' ')) {
        Some((pid, what)) if pid.parse::<u32>().is_ok() => {
            format!(
                "teamhost process {pid} ({what}), per {}",
                flock_path.display()
            )
        }
        _ => format!("another teamhost process (see {})", flock_path.display()),
    }
}

/// Returns `None` when the existing lock directory was left by a teamhost process
/// that died holding it (and removes it), else the directory's age by mtime.
fn foreign_lock_age(dir: &Path, flock: &File) -> Result<Option<Duration>> {
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("stat", dir, e)),
    };
    let mut buf = [0u8; 256];
    let n = flock.read_at(&mut buf, 0).unwrap_or(0);
    let recorded = buf[..n].split(|b| *b == b'\n').next().unwrap_or_default();
    if recorded == dir_identity(&meta).as_bytes() {
        tracing::debug!(lock = %dir.display(), "removing lock left by a crashed teamhost process");
        remove_dir_if_present(dir)?;
        return Ok(None);
    }
    let modified = meta.modified().map_err(|e| Error::io("stat", dir, e))?;
    Ok(Some(
        SystemTime::now()
            .duration_since(modified)
            .unwrap_or(Duration::ZERO),
    ))
}

fn remove_dir_if_present(dir: &Path) -> Result<()> {
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("rmdir", dir, e)),
    }
}

fn path_with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Keeps held lock directories fresh: one thread for the process, started on
/// first use, touching every held directory's mtime every two seconds.
struct Refresher {
    held: Mutex<HashMap<PathBuf, usize>>,
}

const REFRESH_EVERY: Duration = Duration::from_secs(2);

fn refresher() -> &'static Refresher {
    static R: OnceLock<Refresher> = OnceLock::new();
    R.get_or_init(|| {
        std::thread::Builder::new()
            .name("teamhost-lock-refresh".into())
            .spawn(|| loop {
                std::thread::sleep(REFRESH_EVERY);
                let dirs: Vec<PathBuf> = refresher()
                    .held
                    .lock()
                    .map(|h| h.keys().cloned().collect())
                    .unwrap_or_default();
                for dir in dirs {
                    let now = std::fs::FileTimes::new().set_modified(SystemTime::now());
                    if let Err(e) = File::open(&dir).and_then(|f| f.set_times(now)) {
                        tracing::debug!(lock = %dir.display(), error = %e, "lock refresh failed");
                    }
                }
            })
            .expect("spawning the lock refresh thread");
        Refresher {
            held: Mutex::new(HashMap::new()),
        }
    })
}

impl Refresher {
    fn hold(&self, dir: &Path) {
        if let Ok(mut h) = self.held.lock() {
            *h.entry(dir.to_path_buf()).or_insert(0) += 1;
        }
    }
    fn release(&self, dir: &Path) {
        if let Ok(mut h) = self.held.lock() {
            if let Some(n) = h.get_mut(dir) {
                *n -= 1;
                if *n == 0 {
                    h.remove(dir);
                }
            }
        }
    }
}

/// For tests: holds `target`'s flock as another process would (a
/// descriptor of its own), until the returned file is dropped.
#[cfg(test)]
pub(crate) fn hold_flock_elsewhere(target: &Path) -> File {
    let file = open_flock_file(&flock_file_for(target)).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }, 0);
    file
}

#[cfg(test)]
mod tests;
