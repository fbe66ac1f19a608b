//! Whole-file JSON reads and atomic replacement: how every file teamhost
//! keeps is written so that a crash never leaves a torn one, and how a file
//! that does not parse is moved aside instead of written over. Below both
//! the team store (`store/files/`) and the machine-local home
//! ([`crate::home`]), which write through it; it uses nothing of theirs.
//!
//! Every write of a file the reference reads makes a new file (the two
//! files only teamhost reads that are rewritten many times a second, a
//! model conversation and a usage record, reuse a spare instead:
//! [`stage_in_spare`]): `<file>.tmp.<8 hex>` in the same directory
//! (the reference's own naming for inbox writes), written, flushed to disk
//! (`fdatasync`), then renamed over the target. A crash leaves the old file
//! or the new one, never a torn one, and a file once in place is never
//! written again: a reader that opened it keeps reading that version whole,
//! however many writes follow. This matters because Claude Code reads
//! inboxes, `config.json` and task files without a lock and does not read
//! again when what it read does not parse. An inbox a take empties is `[]`
//! written the same way, never truncated (an empty file is not JSON to
//! Claude Code).
//!
//! The cost is an inode created and freed per write (about 0.12 ms of CPU
//! on this project's machine class, hidden behind the sync; the freeing
//! is done by a thread of its own, not in the writer's rename:
//! `durable/reaper.rs`). Earlier versions
//! avoided it for files rewritten under their lock: the new content went
//! into a sibling `<file>.swap`, rewritten in place, and was exchanged with
//! the file (`renameat2(RENAME_EXCHANGE)`); an emptied inbox was truncated
//! in place. Both rewrote an inode a reader could still hold, and Claude
//! Code could read a torn or empty file. Every file teamhost
//! rewrites under its lock is one the reference reads, so there is one
//! scheme for all of them; `docs/ARCHITECTURE.md` ("Writes, syncs and
//! caches") has what it costs. A `<file>.swap` an older version left is
//! removed by the next locked write of its file ([`write_json_locked`]),
//! and a task's goes with the task.
//!
//! Readers still check what they read (`read_bytes`, `read_parsed`):
//! Claude Code rewrites `config.json` and task files in place, and an older
//! teamhost sharing the team may still exchange `.swap` files, so an
//! unlocked read can meet a file half written.
//!
//! A file that does not parse is never overwritten. Readers report it
//! ([`Error::Corrupt`]); writers move it aside to `<file>.corrupt-<timestamp>`,
//! log both paths, and start a fresh file.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

mod group;
mod reaper;
pub use group::commit_grouped;
use reaper::rename_into_place;

/// Reads and parses `path`. `Ok(None)` when the file does not exist; a file that
/// does not parse is left where it is and reported as [`Error::Corrupt`].
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    read_parsed(path, |bytes| serde_json::from_slice(bytes).map(Some), None)
}

/// How often an unlocked reader reads a file again that did not parse
/// before it reports it corrupt.
const TORN_READ_RETRIES: usize = 8;

/// Reads `path` and parses it with `parse` (`missing` when it does not
/// exist). A file that does not parse is read again, up to
/// [`TORN_READ_RETRIES`] times, before it is reported as [`Error::Corrupt`]:
/// a reader without the lock can meet a torn file. teamhost never writes
/// into a file in place any more, but Claude Code rewrites `config.json`
/// and task files in place, and an older teamhost may still exchange a
/// `.swap` sibling and rewrite it in place (module docs). Reading again
/// opens the file as it is now, which is whole once that write is done. A
/// file that is really corrupt fails every time.
fn read_parsed<T>(
    path: &Path,
    parse: impl Fn(&[u8]) -> serde_json::Result<T>,
    missing: T,
) -> Result<T> {
    let mut attempt = 0;
    loop {
        let Some(bytes) = read_bytes(path)? else {
            return Ok(missing);
        };
        match parse(&bytes) {
            Ok(v) => return Ok(v),
            Err(_) if attempt < TORN_READ_RETRIES => {
                attempt += 1;
                std::thread::yield_now();
            }
            Err(source) => {
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    moved_to: None,
                    source,
                })
            }
        }
    }
}

/// Reads `path` for a read-modify-write (the caller holds its lock). A file that
/// does not parse is moved aside and reported in the log; the caller then sees
/// `Ok(None)` and starts a fresh file, so the write it is making is not lost.
pub fn read_json_for_update<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let Some(bytes) = read_bytes(path)? else {
        return Ok(None);
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Ok(Some(v)),
        Err(source) => {
            let moved_to = quarantine(path)?;
            let err = Error::Corrupt {
                path: path.to_path_buf(),
                moved_to: Some(moved_to),
                source,
            };
            tracing::warn!("{err}");
            Ok(None)
        }
    }
}

/// Like [`read_json`], but a file that does not parse is moved aside first and
/// the [`Error::Corrupt`] names both paths. For files that cannot be rebuilt
/// from nothing (a team config, a task): the caller fails, the next write starts
/// fresh.
pub fn read_json_or_move_aside<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match read_json(path) {
        Err(Error::Corrupt { path, source, .. }) => {
            let moved_to = Some(quarantine(&path)?);
            Err(Error::Corrupt {
                path,
                moved_to,
                source,
            })
        }
        other => other,
    }
}

/// Moves a corrupt file aside to `<file>.corrupt-<UTC timestamp>` and returns
/// the new path. Never overwrites an earlier quarantined copy.
pub fn quarantine(path: &Path) -> Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let mut target = with_suffix(path, &format!(".corrupt-{stamp}"));
    let mut n = 1;
    while target.exists() {
        n += 1;
        target = with_suffix(path, &format!(".corrupt-{stamp}-{n}"));
    }
    std::fs::rename(path, &target).map_err(|e| Error::io("rename", path, e))?;
    Ok(target)
}

/// Serialises `value` as pretty JSON (two-space indent, like the reference) and
/// atomically replaces `path` with it.
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Encode(format!("cannot serialise {}: {e}", path.display())))?;
    write_atomic(path, &bytes)
}

/// Atomically replaces `path` with `bytes`: temp file in the same directory,
/// `fdatasync`, rename. The parent directory is created when missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, true, None)
}

/// [`write_atomic`], calling `staged` with the new version's metadata once
/// it is synced and before it is renamed over `path`: a cache that records
/// it then knows the file the rename makes visible (same inode, size and
/// modification time; the rename changes only the change time) from the
/// moment it is there. Not called when the write fails before the rename.
pub fn write_atomic_staged(
    path: &Path,
    bytes: &[u8],
    staged: &mut dyn FnMut(&std::fs::Metadata),
) -> Result<()> {
    replace(path, bytes, true, Some(staged))
}

/// [`write_json`] for a file the caller holds the lock of (an inbox, a
/// config, a task): a new file renamed over `path`, like every write, and
/// a `<file>.swap` an older teamhost staged its writes in is removed. Only
/// under the file's lock: an older teamhost uses that sibling under the
/// same lock. The removal costs one failed `unlink` (a cached lookup) when
/// there is nothing to remove.
pub fn write_json_locked<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    write_json(path, value)?;
    remove_stale_swap(path)
}

/// The sibling older versions staged a locked write in (`<file>.swap`).
/// Only teamhost ever made one; nothing reads it.
pub fn swap_path(path: &Path) -> PathBuf {
    with_suffix(path, ".swap")
}

/// Removes `path`'s `.swap` sibling when an older version left one.
pub fn remove_stale_swap(path: &Path) -> Result<()> {
    let swap = swap_path(path);
    match std::fs::remove_file(&swap) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", &swap, e)),
    }
}

/// [`write_json`] without the `fdatasync`: readers still see the old or the
/// new file whole, but a machine crash may leave either (or an empty file).
/// For records that only show something (model usage), never for protocol
/// state.
pub fn write_json_relaxed<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Encode(format!("cannot serialise {}: {e}", path.display())))?;
    replace(path, &bytes, false, None)
}

/// [`write_json_relaxed`] for a record rewritten often by one writer that
/// only teamhost reads, through a checking reader ([`read_json`]): written
/// over the file's spare and exchanged ([`stage_in_spare`]), so a rewrite
/// makes and frees no inode. A model usage record is rewritten up to ten
/// times a second per calling teammate.
pub fn rewrite_json_relaxed<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Encode(format!("cannot serialise {}: {e}", path.display())))?;
    stage_in_spare(path, &bytes)?.commit()
}

/// A new version of a file, written beside it but not yet in place: for a
/// write of several files that share their syncs. [`stage_json`] each,
/// [`Staged::sync`] each, then [`Staged::commit`] each (or hand each to
/// [`commit_grouped`], which flushes all that wait at once). The same
/// guarantees as [`write_json_locked`] for each file; dropped uncommitted,
/// the new version is removed and the file is as it was.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    /// Open until the commit: a new version (not a spare, whose open file
    /// holds its lock) is closed before its rename (see `commit`).
    file: Option<File>,
    committed: bool,
    /// Staged in the file's spare ([`stage_in_spare`]): put in place by an
    /// exchange, and the spare is kept when dropped.
    spare: bool,
}

/// Writes `value` as the next version of `path`, not synced and not in
/// place ([`Staged`]).
pub fn stage_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<Staged> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Encode(format!("cannot serialise {}: {e}", path.display())))?;
    stage_bytes(path, &bytes)
}

/// Writes `bytes` as the next version of `path` in a new
/// `<file>.tmp.<8 hex>`, not synced and not in place ([`Staged`]). The
/// parent directory is created when missing.
pub fn stage_bytes(path: &Path, bytes: &[u8]) -> Result<Staged> {
    let tmp = with_suffix(path, &format!(".tmp.{:08x}", fastrand::u32(..)));
    let file = create_in_parent(path, &tmp, |t| File::create(t))?;
    // From here a failure drops `staged`, which removes the new version.
    let staged = Staged {
        tmp,
        path: path.to_path_buf(),
        file: Some(file),
        committed: false,
        spare: false,
    };
    staged
        .file()
        .write_all(bytes)
        .map_err(|e| Error::io("write", &staged.tmp, e))?;
    Ok(staged)
}

/// [`stage_bytes`] for a file only teamhost reads, rewritten often by one
/// writer (a model conversation): the new version is written over the
/// file's spare, `<file>.spare` (the version before last), in place, and
/// [`Staged::commit`] exchanges the two names (`renameat2(RENAME_EXCHANGE)`).
/// No inode is made or freed per write, which on ext4 is most of a small
/// write's cost when thousands of files churn (the inode allocator skips
/// every recently freed inode, one by one).
///
/// The same crash guarantee as [`stage_bytes`]: the file is always a whole
/// version (the spare is the one written in place), and once synced and
/// exchanged the new version is in place. The cost is for readers: one
/// that opened the file before an exchange holds the spare, which the next
/// write rewrites, so readers must check what they read ([`read_json`]
/// does, and reads again). That is why Claude Code's files never use this
/// (it reads without checking; see the module docs). Writers of one file
/// take turns: the spare is locked (`flock`) from staging until the
/// staged version is committed or dropped, so two writers (a teammate's
/// old life finishing a write while its new life starts one) never write
/// the spare at once. Where exchanging names is not supported, the commit
/// renames the spare over the file, and the next write makes a new spare.
pub fn stage_in_spare(path: &Path, bytes: &[u8]) -> Result<Staged> {
    let spare = spare_path(path);
    // Never through a symbolic link: the spare is written in place, and a
    // link planted under its name would aim that write elsewhere.
    let open = |t: &Path| {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(t)
    };
    let file = loop {
        let file = create_in_parent(path, &spare, open)?;
        lock_exclusive(&file).map_err(|e| Error::io("lock", &spare, e))?;
        // The lock may have come after another writer's exchange made this
        // inode the file itself: then open the spare again.
        if still_named(&file, &spare).map_err(|e| Error::io("stat", &spare, e))? {
            break file;
        }
    };
    let staged = Staged {
        tmp: spare,
        path: path.to_path_buf(),
        file: Some(file),
        committed: false,
        spare: true,
    };
    // Written from the start, then cut to length: a longer new version
    // (the usual case: a conversation grows) reuses the spare's blocks.
    let file = staged.file();
    (&*file)
        .write_all(bytes)
        .and_then(|()| file.set_len(bytes.len() as u64))
        .map_err(|e| Error::io("write", &staged.tmp, e))?;
    Ok(staged)
}

/// Where [`stage_in_spare`] keeps `path`'s spare. Whoever removes the file
/// for good removes this too.
pub fn spare_path(path: &Path) -> PathBuf {
    with_suffix(path, ".spare")
}

/// Opens `path` with `open`, making its directory first only when the
/// open finds it missing (a log appended to, on every start).
pub(crate) fn open_in_parent(
    path: &Path,
    open: impl Fn(&Path) -> std::io::Result<File>,
) -> Result<File> {
    create_in_parent(path, path, open)
}

/// Opens `tmp` with `open`, making `path`'s directory first when it is
/// missing.
fn create_in_parent(
    path: &Path,
    tmp: &Path,
    open: impl Fn(&Path) -> std::io::Result<File>,
) -> Result<File> {
    match open(tmp) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let parent = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
            open(tmp)
        }
        other => other,
    }
    .map_err(|e| Error::io("create", tmp, e))
}

/// Whether `file` is still the inode named `path`.
fn still_named(file: &File, path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    Ok(match std::fs::metadata(path) {
        Ok(named) => (named.dev(), named.ino()) == (held.dev(), held.ino()),
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    })
}

/// Waits for an exclusive `flock` on `file`, released when it is closed.
fn lock_exclusive(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: `flock` only reads the descriptor, which `file` keeps
        // open for the duration of the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl Staged {
    /// The new version's open file (open from staging to the commit).
    fn file(&self) -> &File {
        self.file
            .as_ref()
            .expect("a staged file is open until committed")
    }

    /// Flushes the new version to disk (`fdatasync`).
    pub fn sync(&self) -> Result<()> {
        self.file()
            .sync_data()
            .map_err(|e| Error::io("sync", &self.tmp, e))
    }

    /// Puts the new version in place (a rename over the file, or for a
    /// spare an exchange of the two names).
    pub fn commit(mut self) -> Result<()> {
        if self.spare && exchange(&self.tmp, &self.path)? {
            self.committed = true;
            return Ok(());
        }
        if !self.spare {
            // Closed before the rename, as `replace` does: the close is
            // heard under the temporary name, which a change feed ignores,
            // so the file is heard once, renamed into place. (A spare's
            // open file holds its lock until the name is taken.)
            drop(self.file.take());
        }
        rename_into_place(&self.tmp, &self.path)?;
        self.committed = true;
        if self.spare {
            return Ok(());
        }
        remove_stale_swap(&self.path)
    }
}

/// Exchanges the names `a` and `b`: `Ok(false)` when `b` does not exist yet
/// or the filesystem cannot exchange names (the caller renames instead).
fn exchange(a: &Path, b: &Path) -> Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|e| Error::io("rename", p, std::io::Error::other(e)))
        };
        let (ca, cb) = (c(a)?, c(b)?);
        // SAFETY: both are valid NUL-terminated paths that outlive the call.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                ca.as_ptr(),
                libc::AT_FDCWD,
                cb.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if r == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::EINVAL) | Some(libc::ENOSYS) => Ok(false),
            _ => Err(Error::io("exchange", a, e)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Ok(false)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed && !self.spare {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn replace(
    path: &Path,
    bytes: &[u8],
    sync: bool,
    staged: Option<&mut dyn FnMut(&std::fs::Metadata)>,
) -> Result<()> {
    let tmp = with_suffix(path, &format!(".tmp.{:08x}", fastrand::u32(..)));
    let result = (|| {
        let mut f = match File::create(&tmp) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let parent = path.parent().unwrap_or(Path::new("."));
                std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
                File::create(&tmp)
            }
            other => other,
        }
        .map_err(|e| Error::io("create", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| Error::io("write", &tmp, e))?;
        if sync {
            f.sync_data().map_err(|e| Error::io("sync", &tmp, e))?;
        }
        if let Some(staged) = staged {
            staged(&f.metadata().map_err(|e| Error::io("stat", &tmp, e))?);
        }
        // Closed before the rename: the close is then heard under the
        // temporary name, which a change feed ignores, and the file is heard
        // once, renamed into place (closed after it, it was heard twice,
        // the second time often in another read of the feed's queue).
        drop(f);
        rename_into_place(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Reads a JSON array file: a file that is not there, or empty, is an
/// empty array. teamhost writes an emptied inbox as `[]`; an empty file is
/// what an older version's in-place emptying (truncate, then `[]`) left when
/// it was caught half-way or interrupted by a crash.
pub fn read_array<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    read_parsed(
        path,
        |b| {
            if b.iter().all(u8::is_ascii_whitespace) {
                Ok(Vec::new())
            } else {
                serde_json::from_slice(b)
            }
        },
        Vec::new(),
    )
}

/// [`read_array`] for a read-modify-write (the caller holds the lock): a
/// file that does not parse is moved aside and logged, and the caller starts
/// a fresh array ([`read_json_for_update`]).
pub fn read_array_for_update<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    match read_array(path) {
        Err(Error::Corrupt { path, source, .. }) => {
            let moved_to = quarantine(&path)?;
            tracing::warn!(
                "{}",
                Error::Corrupt {
                    path,
                    moved_to: Some(moved_to),
                    source,
                }
            );
            Ok(Vec::new())
        }
        other => other,
    }
}

/// The bytes of `path`, read whole from one version of it: the read is
/// kept only when the file it read was not changed while it read (its
/// change time is the same before and after) and is still the one `path`
/// names. Otherwise it reads again, up to [`TORN_READ_RETRIES`] times, then
/// gives its last read (which the parse then checks). A file teamhost
/// wrote never changes once in place; the check is for the writers that
/// rewrite in place (Claude Code's config and task writes, an older
/// teamhost's `.swap` exchange), and a read that meets a rename merely
/// reads the newer file.
fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    use std::os::unix::fs::MetadataExt;
    let io = |e: std::io::Error| Error::io("read", path, e);
    let mut last = None;
    for _ in 0..=TORN_READ_RETRIES {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let before = f.metadata().map_err(io)?;
        let bytes = read_sized(&mut f, before.len()).map_err(io)?;
        let after = f.metadata().map_err(io)?;
        let named = std::fs::metadata(path).ok();
        let steady = (before.ctime(), before.ctime_nsec()) == (after.ctime(), after.ctime_nsec())
            && named.is_some_and(|n| (n.dev(), n.ino()) == (after.dev(), after.ino()));
        if steady {
            return Ok(Some(bytes));
        }
        last = Some(bytes);
        std::thread::yield_now();
    }
    Ok(last)
}

/// Reads `f` to its end, expecting `size` bytes (its length a moment ago):
/// a file that did not change takes one read of it all and one that finds
/// the end. (`read_to_end` would first ask the file's size and position
/// again, two more system calls per read of the store's every file.)
fn read_sized(f: &mut File, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    // One byte more than expected, so the read that finds the end needs
    // no new buffer.
    let mut buf = vec![0u8; usize::try_from(size).unwrap_or(0).saturating_add(1).max(64)];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn write_then_read_round_trips_and_leaves_no_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("a/b.json");
        write_json(&p, &json!({"x": [1, 2]})).unwrap();
        let v: Value = read_json(&p).unwrap().unwrap();
        assert_eq!(v, json!({"x": [1, 2]}));
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("b.json")]);
    }

    /// Every `(mask, name)` queued on `fd` now (a non-blocking inotify).
    #[cfg(target_os = "linux")]
    fn inotify_events(fd: i32) -> Vec<(u32, String)> {
        let mut buf = [0u8; 4096];
        let mut seen = Vec::new();
        loop {
            // SAFETY: reading into a buffer we own.
            let len = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if len <= 0 {
                return seen;
            }
            let mut at = 0;
            while at < len as usize {
                // SAFETY: the kernel wrote whole events; read unaligned.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let start = at + std::mem::size_of::<libc::inotify_event>();
                let name = &buf[start..start + ev.len as usize];
                let name = name.split(|b| *b == 0).next().unwrap_or_default();
                seen.push((ev.mask, String::from_utf8_lossy(name).into_owned()));
                at = start + ev.len as usize;
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_staged_version_is_closed_before_its_rename_so_a_watcher_hears_it_once() {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("inbox.json");
        std::fs::write(&p, b"[]").unwrap();
        // SAFETY: plain system calls on a descriptor this test owns.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(fd >= 0);
        let dir = std::ffi::CString::new(tmp.path().as_os_str().as_bytes()).unwrap();
        let mask = libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE;
        // SAFETY: as above; `dir` is a valid C string.
        assert!(unsafe { libc::inotify_add_watch(fd, dir.as_ptr(), mask) } >= 0);
        let staged = stage_bytes(&p, b"[1]").unwrap();
        staged.sync().unwrap();
        staged.commit().unwrap();
        let heard: Vec<_> = inotify_events(fd)
            .into_iter()
            .filter(|(_, name)| name == "inbox.json")
            .collect();
        // SAFETY: closing the descriptor this test opened.
        unsafe { libc::close(fd) };
        assert_eq!(heard, [(libc::IN_MOVED_TO, "inbox.json".to_string())]);
        assert_eq!(std::fs::read(&p).unwrap(), b"[1]");
    }

    #[test]
    fn missing_file_reads_as_none() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(read_json::<Value>(&tmp.path().join("no.json"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn corrupt_file_is_reported_by_readers_and_left_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("c.json");
        std::fs::write(&p, b"[{\"from\":").unwrap();
        let err = read_json::<Value>(&p).unwrap_err().to_string();
        assert!(
            err.contains("c.json") && err.contains("not valid JSON"),
            "{err}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), b"[{\"from\":");
    }

    #[test]
    fn corrupt_file_is_moved_aside_by_writers_with_its_bytes_intact() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("c.json");
        std::fs::write(&p, b"not json").unwrap();
        assert!(read_json_for_update::<Value>(&p).unwrap().is_none());
        assert!(!p.exists());
        let aside: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(aside.len(), 1);
        let name = aside[0].file_name().unwrap().to_string_lossy().to_string();
        assert!(name.starts_with("c.json.corrupt-"), "{name}");
        assert_eq!(std::fs::read(&aside[0]).unwrap(), b"not json");
    }

    /// What Claude Code needs: a reader that opened the file keeps its
    /// version whole, whatever is written after; every write is a new inode.
    #[test]
    fn every_write_is_a_new_inode_and_an_open_reader_keeps_its_version() {
        use std::io::{Read, Seek};
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("inbox.json");
        // Each version held open by a reader, so no inode can be reused.
        let mut readers: Vec<(File, u64, Value)> = Vec::new();
        for n in 0..12 {
            // Both writers, the empty array included (what a take leaves).
            let v = if n % 4 == 3 {
                json!([])
            } else {
                json!((0..n * 50)
                    .map(|i| format!("message {i}"))
                    .collect::<Vec<_>>())
            };
            if n % 2 == 0 {
                write_json_locked(&p, &v).unwrap();
            } else {
                write_json(&p, &v).unwrap();
            }
            let f = File::open(&p).unwrap();
            let ino = f.metadata().unwrap().ino();
            assert!(
                readers.iter().all(|(_, i, _)| *i != ino),
                "write {n} made a new file"
            );
            readers.push((f, ino, v));
        }
        for (f, ino, v) in &mut readers {
            f.rewind().unwrap();
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).unwrap();
            assert_eq!(&serde_json::from_slice::<Value>(&bytes).unwrap(), v);
            assert_eq!(f.metadata().unwrap().ino(), *ino);
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"[]", "emptied: `[]`");
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("inbox.json")]);
    }

    #[test]
    fn a_locked_write_removes_the_swap_sibling_an_older_version_left() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("config.json");
        write_json(&p, &json!({"members": []})).unwrap();
        std::fs::write(swap_path(&p), b"{\"members\": [1]}").unwrap();
        write_json_locked(&p, &json!({"members": [2]})).unwrap();
        assert!(!swap_path(&p).exists());
        let v: Value = read_json(&p).unwrap().unwrap();
        assert_eq!(v, json!({"members": [2]}));
        // Nothing to remove: nothing else happens.
        write_json_locked(&p, &json!({"members": [3]})).unwrap();
        assert!(!swap_path(&p).exists());
    }

    #[test]
    fn an_empty_array_file_reads_empty_and_is_not_moved_aside() {
        // What an older version's in-place emptying left when caught
        // half-way (truncated, not yet written).
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("inbox.json");
        std::fs::write(&p, b"").unwrap();
        assert!(read_array::<Value>(&p).unwrap().is_empty());
        assert!(read_array_for_update::<Value>(&p).unwrap().is_empty());
        assert!(
            p.exists(),
            "an empty file is not corrupt: nothing moved aside"
        );
    }

    /// The spare: a checking reader of a file rewritten over and over in
    /// place (over its spare, then exchanged) only ever gets whole
    /// versions, and no inode is made per rewrite.
    #[test]
    fn a_file_kept_in_a_spare_is_read_whole_and_reuses_its_two_inodes() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("usage/a.json");
        // Version n is n repeated (n % 40 + 1) times: lengths go up and down.
        let version = |n: u32| vec![n; (n % 40 + 1) as usize];
        rewrite_json_relaxed(&p, &version(0)).unwrap();
        rewrite_json_relaxed(&p, &version(1)).unwrap();
        let inodes = |p: &Path| {
            let mut v = vec![
                std::fs::metadata(p).unwrap().ino(),
                std::fs::metadata(spare_path(p)).unwrap().ino(),
            ];
            v.sort();
            v
        };
        let two = inodes(&p);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for n in 2..3_000 {
                    rewrite_json_relaxed(&p, &version(n)).unwrap();
                }
                done.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            let mut reads = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) || reads < 100 {
                let v: Vec<u32> = read_json(&p).unwrap().expect("always there");
                assert_eq!(v, version(v[0]), "read {reads} is one whole version");
                reads += 1;
            }
        });
        assert_eq!(
            inodes(&p),
            two,
            "the file and its spare are the same two inodes"
        );
        let v: Vec<u32> = read_json(&p).unwrap().unwrap();
        assert_eq!(v, version(2_999));
    }

    /// A link planted where the spare goes is refused, never written
    /// through.
    #[test]
    fn a_link_in_place_of_the_spare_is_refused_and_its_target_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere.txt");
        std::fs::write(&target, b"keep me").unwrap();
        let p = tmp.path().join("a.json");
        std::os::unix::fs::symlink(&target, spare_path(&p)).unwrap();
        let e = rewrite_json_relaxed(&p, &[1]).unwrap_err();
        assert!(e.to_string().contains("a.json.spare"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        assert!(!p.exists());
    }
}
