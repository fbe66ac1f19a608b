//! The guest's captured stdout and stderr: one append-only log file per
//! teammate, capped at [`Limits::max_log_bytes`](crate::sandbox::Limits).
//!
//! A log file already at its cap when the teammate starts is rotated once to
//! `{name}.log.1` (replacing an older one); where that is impossible the
//! guest's output is cut at once. Output that would cross the cap
//! is cut there, a single note line says so, and everything the guest writes
//! afterwards is dropped. A write never fails and never blocks on the cap:
//! the guest is told every byte was written, so a noisy guest neither stalls
//! nor breaks the host.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use anyhow::Context as _;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// The note written once where the log is cut.
pub(crate) fn cut_note(max: u64) -> String {
    format!(
        "\n[teamhost: log cut at {max} bytes (max_log_bytes); later output of this teammate is dropped]\n"
    )
}

/// A capped log shared by the guest's stdout and stderr.
#[derive(Clone)]
pub(crate) struct CappedLog {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    /// Held open while a turn runs (from the instance's making through its
    /// first turn, then from [`CappedLog::hold`] to [`CappedLog::release`]),
    /// so a guest's line (often several writes: `eprintln!` writes its
    /// pieces one by one) costs no open of its own; outside a turn each
    /// write opens and closes it, so an idle teammate holds no descriptor
    /// for its log, even when a write lands after its turn (wasmtime-wasi
    /// writes a stream's buffer from a task of its own).
    path: PathBuf,
    /// The open file, while a turn runs and something was written.
    file: Option<File>,
    /// A turn is running: a file opened for a write is kept.
    held: bool,
    /// Bytes in the file.
    written: u64,
    max: u64,
    /// The note is written; everything else is dropped.
    cut: bool,
}

impl CappedLog {
    /// Opens `path` for appending (creating its directory), rotating it to
    /// `.log.1` first when it is already at `max` bytes.
    pub(crate) fn open(path: &Path, max: u64) -> anyhow::Result<CappedLog> {
        let opened = || {
            crate::durable::open_in_parent(path, append)
                .with_context(|| format!("cannot open log {}", path.display()))
        };
        let mut file = opened()?;
        // Only a regular file is rotated (the process backend may hand over
        // its own stderr, `/proc/self/fd/2`); one that cannot be is used as
        // it is, and the cap cuts the guest's output at once.
        let mut written = file.metadata().map_or(0, |m| m.len());
        if written >= max && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
            let mut old = PathBuf::from(path);
            old.as_mut_os_string().push(".1");
            match std::fs::rename(path, &old) {
                Ok(()) => {
                    file = opened()?;
                    written = file.metadata().map_or(0, |m| m.len());
                }
                Err(e) => {
                    tracing::warn!(log = %path.display(), error = %e, "cannot rotate a full guest log")
                }
            }
        }
        Ok(CappedLog {
            inner: Arc::new(Mutex::new(Inner {
                path: path.to_path_buf(),
                // Kept for the first turn, which follows at once.
                file: Some(file),
                held: true,
                written,
                max,
                cut: false,
            })),
        })
    }

    /// Writes what fits of `buf` under the cap; the rest is dropped (with
    /// the note, the first time). Errors of the file are dropped too: the log
    /// is a courtesy, never a reason to fail the guest.
    pub(super) fn take(&self, buf: &[u8]) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.cut {
            return;
        }
        let room = inner.max.saturating_sub(inner.written);
        let fits = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let inner = &mut *inner;
        let file = match &mut inner.file {
            Some(file) => file,
            slot => match append(&inner.path) {
                Ok(file) => slot.insert(file),
                Err(_) => return,
            },
        };
        if fits > 0 && file.write_all(&buf[..fits]).is_ok() {
            inner.written += fits as u64;
        }
        if fits < buf.len() {
            inner.cut = true;
            let note = cut_note(inner.max);
            let _ = file.write_all(note.as_bytes());
            inner.file = None;
        }
        if !inner.held {
            inner.file = None;
        }
    }

    /// A turn starts: the file, once opened for a write, stays open until
    /// [`CappedLog::release`].
    pub(crate) fn hold(&self) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).held = true;
    }

    /// A turn ended (or an instance waits without one): the file is closed,
    /// and every later write opens and closes it until the next
    /// [`CappedLog::hold`].
    pub(crate) fn release(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.held = false;
        inner.file = None;
    }
}

/// Opens `path` for appending, creating it.
fn append(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

impl IsTerminal for CappedLog {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedLog {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for CappedLog {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.take(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_cut_at_its_cap_with_one_note_and_later_output_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/a.log");
        let log = CappedLog::open(&path, 10).unwrap();
        log.take(b"12345678");
        log.take(b"abcdef");
        log.take(b"dropped");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("12345678ab{}", cut_note(10)));
    }

    #[test]
    fn a_turn_s_writes_share_one_descriptor_until_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let log = CappedLog::open(&path, 1000).unwrap();
        log.take(b"one ");
        // Moved away mid-turn: the turn's later writes follow the file
        // already open, none opens the path again.
        let moved = dir.path().join("moved.log");
        std::fs::rename(&path, &moved).unwrap();
        log.take(b"two");
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "one two");
        assert!(!path.exists());
        // Released (the turn ended): the next write opens the path again,
        // and closes it after itself.
        log.release();
        log.take(b"three");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three");
        std::fs::rename(&path, &moved).unwrap();
        log.take(b"four");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "four");
        // Held again (the next turn): one descriptor until the release.
        log.hold();
        log.take(b" five");
        std::fs::rename(&path, &moved).unwrap();
        log.take(b" six");
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "four five six");
    }

    #[test]
    fn a_full_log_is_rotated_once_when_the_teammate_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, "0123456789").unwrap();
        let log = CappedLog::open(&path, 10).unwrap();
        log.take(b"new");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let old = dir.path().join("a.log.1");
        assert_eq!(std::fs::read_to_string(old).unwrap(), "0123456789");
    }
}
