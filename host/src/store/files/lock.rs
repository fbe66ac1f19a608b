//! Cross-process locks around every read-modify-write of a shared file.
//!
//! A lock on `F` is two locks taken in order, and both are held for the whole
//! read-modify-write cycle:
//!
//! 1. **`F.flock`**, an ordinary file locked with `flock(2)` through `fd-lock`.
//!    It orders teamhost processes among themselves, and the kernel drops it the
//!    instant its holder dies, so a crashed teamhost never blocks anyone.
//! 2. **`F.lock/`**, a directory made with `mkdir` and removed with `rmdir`: the
//!    reference CLI's convention (proper-lockfile; stale after 10 s by mtime).
//!    Taking it too means teamhost and a Claude Code process sharing a home never
//!    interleave. While held, a background thread refreshes its mtime every two
//!    seconds so a long hold is never mistaken for a stale one.
//!
//! When `F.lock/` already exists, the flock holder can tell whether a crashed
//! teamhost left it: every teamhost holder records the directory's identity
//! (device, inode, change time) in `F.flock`. A matching leftover is removed at
//! once; anything else is a foreign lock and is waited for, then treated as
//! stale after [`LockOptions::stale`] without refresh, exactly as the reference
//! does. Waiting is bounded by [`LockOptions::timeout`] and ends in
//! [`Error::LockTimeout`], never in a dropped write.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
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
///
/// The parent directory of `target` is created when missing. `f` runs at most
/// once; its result is returned after the lock is released.
pub fn with_lock<T>(target: &Path, opts: &LockOptions, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let started = Instant::now();
    let flock_path = flock_file_for(target);
    let file = open_flock_file(&flock_path)?;
    let mut lock = fd_lock::RwLock::new(file);
    let mut backoff = Backoff::new();
    loop {
        match lock.try_write() {
            Ok(guard) => return with_dir_lock(target, &guard, started, opts, f),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(Error::io("flock", &flock_path, e)),
        }
        if started.elapsed() >= opts.timeout {
            return Err(Error::LockTimeout {
                path: target.to_path_buf(),
                lock_dir: lock_dir_for(target),
                waited: started.elapsed(),
                holder: format!("another teamhost process holds {}", flock_path.display()),
            });
        }
        backoff.sleep();
    }
}

fn open_flock_file(path: &Path) -> Result<File> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    };
    match open() {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
            }
            open().map_err(|e| Error::io("open", path, e))
        }
        Err(e) => Err(Error::io("open", path, e)),
    }
}

/// Second stage: with the flock held, take the reference's mkdir lock.
fn with_dir_lock<T>(
    target: &Path,
    flock: &File,
    started: Instant,
    opts: &LockOptions,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let dir = lock_dir_for(target);
    let mut backoff = Backoff::new();
    loop {
        match std::fs::create_dir(&dir) {
            Ok(()) => break,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                if let Some(age) = foreign_lock_age(&dir, flock)? {
                    if age >= opts.stale {
                        tracing::warn!(lock = %dir.display(), ?age, "removing stale lock directory");
                        remove_dir_if_present(&dir)?;
                        continue;
                    }
                    if started.elapsed() >= opts.timeout {
                        return Err(Error::LockTimeout {
                            path: target.to_path_buf(),
                            lock_dir: dir.clone(),
                            waited: started.elapsed(),
                            holder: format!(
                                "another program (Claude Code?) refreshed {} {:.1?} ago",
                                dir.display(),
                                age
                            ),
                        });
                    }
                    backoff.sleep();
                }
                // else: a crashed teamhost's leftover, already removed; retry now.
            }
            Err(e) => return Err(Error::io("mkdir", &dir, e)),
        }
    }
    record_owner(&dir, flock)?;
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

/// Identity of a lock directory, recorded in the flock file by its teamhost holder.
fn dir_identity(meta: &std::fs::Metadata) -> String {
    format!(
        "{} {} {} {}\n",
        meta.dev(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

fn record_owner(dir: &Path, flock: &File) -> Result<()> {
    let meta = std::fs::metadata(dir).map_err(|e| Error::io("stat", dir, e))?;
    let id = dir_identity(&meta);
    flock
        .write_all_at(id.as_bytes(), 0)
        .and_then(|()| flock.set_len(id.len() as u64))
        .map_err(|e| Error::io("write", dir, e))
}

/// Returns `None` when the existing lock directory was left by a teamhost process
/// that died holding it (and removes it), else the directory's age by mtime.
fn foreign_lock_age(dir: &Path, flock: &File) -> Result<Option<Duration>> {
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("stat", dir, e)),
    };
    let mut buf = [0u8; 128];
    let n = flock.read_at(&mut buf, 0).unwrap_or(0);
    if &buf[..n] == dir_identity(&meta).as_bytes() {
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

/// Exponential backoff with jitter: 100 µs doubling to 10 ms.
struct Backoff {
    next: Duration,
}

impl Backoff {
    fn new() -> Self {
        Backoff {
            next: Duration::from_micros(100),
        }
    }
    fn sleep(&mut self) {
        let jitter = fastrand::u64(0..=self.next.as_micros() as u64 / 2);
        std::thread::sleep(self.next + Duration::from_micros(jitter));
        self.next = (self.next * 2).min(Duration::from_millis(10));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn quick() -> LockOptions {
        LockOptions {
            timeout: Duration::from_millis(300),
            stale: Duration::from_secs(10),
        }
    }

    #[test]
    fn lock_dir_exists_only_while_held() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("sub/inbox.json");
        let dir = lock_dir_for(&target);
        with_lock(&target, &quick(), || {
            assert!(dir.is_dir(), "mkdir lock must be held inside the closure");
            Ok(())
        })
        .unwrap();
        assert!(!dir.exists());
        assert!(flock_file_for(&target).is_file());
    }

    #[test]
    fn threads_never_overlap_inside_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let target = Arc::new(tmp.path().join("f.json"));
        let inside = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (target, inside, total) = (target.clone(), inside.clone(), total.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        with_lock(&target, &LockOptions::default(), || {
                            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            total.fetch_add(1, Ordering::SeqCst);
                            Ok(())
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(total.load(Ordering::SeqCst), 200);
    }

    #[test]
    fn a_fresh_foreign_lock_directory_is_waited_for_then_times_out_clearly() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("config.json");
        std::fs::create_dir(lock_dir_for(&target)).unwrap();
        let err = with_lock(&target, &quick(), || Ok(())).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::LockTimeout { .. }), "{msg}");
        assert!(msg.contains("config.json.lock"), "{msg}");
        // The foreign lock is left alone.
        assert!(lock_dir_for(&target).is_dir());
    }

    #[test]
    fn a_stale_foreign_lock_directory_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("config.json");
        let dir = lock_dir_for(&target);
        std::fs::create_dir(&dir).unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        File::open(&dir)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
        let ran = with_lock(&target, &quick(), || Ok(true)).unwrap();
        assert!(ran);
    }

    #[test]
    fn a_lock_directory_left_by_a_dead_teamhost_holder_is_taken_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("inbox.json");
        let dir = lock_dir_for(&target);
        // Simulate a holder that died after mkdir + record, before rmdir.
        std::fs::create_dir(&dir).unwrap();
        let f = open_flock_file(&flock_file_for(&target)).unwrap();
        record_owner(&dir, &f).unwrap();
        drop(f);
        let t = Instant::now();
        with_lock(&target, &quick(), || Ok(())).unwrap();
        assert!(t.elapsed() < quick().timeout, "must not wait for staleness");
    }
}
