//! Whole-file JSON reads and atomic replacement.
//!
//! Writes go to `<file>.tmp.<8 hex>` in the same directory (the reference's own
//! naming for inbox writes), are flushed to disk, then renamed over the target:
//! a crash leaves the old file or the new one, never a torn one.
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
    let Some(bytes) = read_bytes(path)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| Error::Corrupt {
            path: path.to_path_buf(),
            moved_to: None,
            source,
        })
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

fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", path, e)),
    }
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
}
