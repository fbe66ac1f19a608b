//! Whole-file JSON reads and atomic replacement.
//!
//! Writes go to `<file>.tmp.<8 hex>` in the same directory (the reference's own
//! naming for inbox writes), are flushed to disk, then renamed over the target:
//! a crash leaves the old file or the new one, never a torn one.
//!
//! A file rewritten under its lock ([`write_json_locked`]) is replaced
//! without creating a file each time: the new content goes into a sibling
//! `<file>.swap`, rewritten in place and synced, and the two are exchanged
//! in one atomic step (`renameat2(RENAME_EXCHANGE)`), so `<file>.swap` then
//! holds the previous version for the next write. A reader that opened the
//! file before an exchange and still reads it when the next write rewrites
//! that inode (now `<file>.swap`) in place would see a torn file: readers
//! check that the file did not change under them and is still the one the
//! path names, and read again when it is not (`read_bytes`), and read again
//! a file that does not parse before calling it corrupt (`read_parsed`).
//! So readers see the old file or the new one whole, as with a rename. Creating and freeing an inode per
//! write is the dearest part of a write on some file systems (ext4 without a
//! journal scans every recently freed inode on each allocation), and a busy
//! team writes thousands of times a minute.
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
/// a reader without the lock can meet a torn file. A file written under its
/// lock is exchanged with its `.swap` sibling, and the next write rewrites
/// that sibling in place; a reader that opened the file before the exchange
/// and still reads it then sees that rewrite half done. Reading again opens
/// the file the exchange put in place, which is whole. A file that is really
/// corrupt fails every time.
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
        .map_err(|e| Error::Invalid(format!("cannot serialise {}: {e}", path.display())))?;
    write_atomic(path, &bytes)
}

/// Atomically replaces `path` with `bytes`: temp file in the same directory,
/// `fdatasync`, rename. The parent directory is created when missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, true)
}

/// [`write_json`] for a file the caller holds the lock of: the new content is
/// written into `<file>.swap` and exchanged with the file (module docs), so
/// no file is created once both exist. Only under the file's lock: two
/// writers of one `.swap` would mix their bytes.
pub fn write_json_locked<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Invalid(format!("cannot serialise {}: {e}", path.display())))?;
    let swap = swap_path(path);
    let written = (|| {
        let mut f = match File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&swap)
        {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let parent = path.parent().unwrap_or(Path::new("."));
                std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
                File::options()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&swap)
            }
            other => other,
        }
        .map_err(|e| Error::io("create", &swap, e))?;
        f.write_all(&bytes)
            .and_then(|()| f.sync_data())
            .map_err(|e| Error::io("write", &swap, e))
    })();
    written?;
    match exchange(&swap, path) {
        Ok(()) => Ok(()),
        // No file yet, or a file system without the exchange: a rename does.
        Err(e)
            if e.kind() == ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::EINVAL)
                || e.raw_os_error() == Some(libc::ENOSYS) =>
        {
            std::fs::rename(&swap, path).map_err(|e| Error::io("rename", &swap, e))
        }
        Err(e) => Err(Error::io("exchange", path, e)),
    }
}

/// The sibling a locked write stages its content in.
pub fn swap_path(path: &Path) -> PathBuf {
    with_suffix(path, ".swap")
}

/// Swaps the names `a` and `b` atomically (both must exist).
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: two valid C strings; no memory is handed to the kernel to keep.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// [`write_json`] without the `fdatasync`: readers still see the old or the
/// new file whole, but a machine crash may leave either (or an empty file).
/// For records that only show something (model usage), never for protocol
/// state.
pub fn write_json_relaxed<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Invalid(format!("cannot serialise {}: {e}", path.display())))?;
    replace(path, &bytes, false)
}

fn replace(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
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
        std::fs::rename(&tmp, path).map_err(|e| Error::io("rename", &tmp, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Empties the JSON array at `path` in place: truncated, `[]` written,
/// synced. No new file (the inode stays): on a file system where creating
/// files is costly this is most of a take's cost saved. Torn, the file is
/// empty (0 bytes), which readers of an array take for `[]` — the very
/// content intended — so a crash or a concurrent reader sees `[]`, nothing,
/// or (before the truncation is durable) the old array, never a mixture.
/// Only for a result with nothing in it: anything else is replaced whole.
pub fn empty_array_in_place(path: &Path) -> Result<()> {
    let mut f = match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("open", path, e)),
    };
    f.set_len(0)
        .and_then(|()| f.write_all(b"[]"))
        .and_then(|()| f.sync_data())
        .map_err(|e| Error::io("empty", path, e))
}

/// Reads a JSON array file: a file that is not there, or empty (an
/// [`empty_array_in_place`] caught half-way), is an empty array.
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
/// names (no exchange happened meanwhile). Otherwise it reads again, up to
/// [`TORN_READ_RETRIES`] times, then gives its last read (which the parse
/// then checks).
fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
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
        let mut bytes = Vec::with_capacity(before.len() as usize);
        f.read_to_end(&mut bytes).map_err(io)?;
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

    #[test]
    fn a_locked_write_swaps_two_files_and_creates_none_once_both_exist() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("inbox.json");
        write_json_locked(&p, &json!(["one"])).unwrap();
        write_json_locked(&p, &json!(["two"])).unwrap();
        let inodes = |p: &Path| {
            let mut v = vec![
                std::fs::metadata(p).unwrap().ino(),
                std::fs::metadata(swap_path(p)).unwrap().ino(),
            ];
            v.sort();
            v
        };
        let pair = inodes(&p);
        for n in 0..5 {
            write_json_locked(&p, &json!([n])).unwrap();
            assert_eq!(inodes(&p), pair, "the same two files, exchanged");
            let v: Value = read_json(&p).unwrap().unwrap();
            assert_eq!(v, json!([n]));
            let before: Value = read_json(&swap_path(&p)).unwrap().unwrap();
            assert_ne!(before, v, "the sibling holds the previous version");
        }
    }

    #[test]
    fn an_array_emptied_in_place_reads_empty_at_every_step() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("inbox.json");
        write_json(&p, &json!([{"from": "a"}])).unwrap();
        empty_array_in_place(&p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"[]");
        // Caught half-way (truncated, not yet written): still an empty array.
        std::fs::write(&p, b"").unwrap();
        assert!(read_array::<Value>(&p).unwrap().is_empty());
        assert!(read_array_for_update::<Value>(&p).unwrap().is_empty());
        assert!(
            p.exists(),
            "an empty file is not corrupt: nothing moved aside"
        );
        // Missing: nothing to empty, nothing created.
        let gone = tmp.path().join("gone.json");
        empty_array_in_place(&gone).unwrap();
        assert!(!gone.exists());
    }
}
