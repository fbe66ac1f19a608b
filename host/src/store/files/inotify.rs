//! A small safe wrapper over Linux inotify for the file store's own needs:
//! draining a directory's change events without blocking (the task cache),
//! sleeping until a name is removed (the lock), and the change feed's
//! watches on a team's directories (`watch.rs`), each with only the events
//! it needs: a watch with `IN_OPEN` wakes its reader for every read of
//! every file in the directory.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

/// The kernel dropped events (the queue overflowed): re-read everything.
pub(super) const OVERFLOW: u32 = libc::IN_Q_OVERFLOW;
/// The watched directory itself went away or was replaced.
pub(super) const GONE: u32 =
    libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED | libc::IN_UNMOUNT;

/// One inotify instance, non-blocking, closed on drop.
#[derive(Debug)]
pub(super) struct Inotify {
    fd: OwnedFd,
}

impl Inotify {
    /// A new instance watching `dir` for `mask`; `None` when the kernel
    /// refuses (no instances or watches left, no such directory).
    pub(super) fn watch(dir: &Path, mask: u32) -> Option<Inotify> {
        let inotify = Inotify::new().ok()?;
        inotify.add(dir, mask).ok()?;
        Some(inotify)
    }

    /// A new instance watching nothing yet.
    pub(super) fn new() -> std::io::Result<Inotify> {
        // SAFETY: a plain syscall; the descriptor is owned at once.
        unsafe {
            let raw = libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK);
            if raw < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Inotify {
                fd: OwnedFd::from_raw_fd(raw),
            })
        }
    }

    /// Watches `dir` for `mask` too; returns the watch's descriptor (the
    /// same one again for a directory already watched).
    pub(super) fn add(&self, dir: &Path, mask: u32) -> std::io::Result<i32> {
        let path = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), mask) };
        if wd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(wd)
    }

    /// Hands every event queued now to `each(mask, name)` without waiting.
    /// Every change made before this call (by any process) is among them.
    pub(super) fn drain(&self, mut each: impl FnMut(u32, &[u8])) {
        self.drain_watches(|_, mask, name| each(mask, name));
    }

    /// [`Inotify::drain`], with each event's watch descriptor:
    /// `each(watch, mask, name)`.
    pub(super) fn drain_watches(&self, each: impl FnMut(i32, u32, &[u8])) {
        self.drain_read_by_read(false, each);
    }

    /// [`Inotify::drain_watches`], less each `IN_CLOSE_WRITE` that comes
    /// right after an `IN_MOVED_TO` of the same file in the same read (a
    /// file renamed into place and then closed by its writer). Both were
    /// queued before that read, so whatever is done about the first, after
    /// the read, stands for both. Never across two reads: a write between
    /// them is another process's as likely as not, and must be reported.
    pub(super) fn drain_folding_closes(&self, each: impl FnMut(i32, u32, &[u8])) {
        self.drain_read_by_read(true, each);
    }

    fn drain_read_by_read(&self, fold: bool, mut each: impl FnMut(i32, u32, &[u8])) {
        let mut buf = [0u8; 8192];
        loop {
            // SAFETY: reading into a buffer we own.
            let len =
                unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if len <= 0 {
                return; // EAGAIN: nothing more queued (or an error: nothing to read)
            }
            let mut renamed: Option<(i32, &[u8])> = None;
            parse(&buf[..len as usize], &mut |wd, mask, name| {
                let closes_the_renamed = fold
                    && mask & libc::IN_CLOSE_WRITE != 0
                    && renamed.is_some_and(|(w, n)| w == wd && n == name);
                renamed = (mask & libc::IN_MOVED_TO != 0 && !name.is_empty()).then_some((wd, name));
                if !closes_the_renamed {
                    each(wd, mask, name);
                }
            });
        }
    }

    /// Waits until an event is queued (`true`) or `stop` is readable or
    /// closed at its other end (`false`), however long that takes.
    pub(super) fn wait_unless(&self, stop: std::os::fd::BorrowedFd<'_>) -> bool {
        loop {
            let mut pfds = [
                libc::pollfd {
                    fd: self.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfds.
            match unsafe { libc::poll(pfds.as_mut_ptr(), 2, -1) } {
                n if n > 0 => {
                    if pfds[1].revents != 0 {
                        return false;
                    }
                    if pfds[0].revents & libc::POLLIN != 0 {
                        return true;
                    }
                    if pfds[0].revents != 0 {
                        return false; // the inotify descriptor failed
                    }
                }
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                _ => return false,
            }
        }
    }

    /// Waits until an event is queued or `until` passes; `true` when one is.
    pub(super) fn wait(&self, until: Instant) -> bool {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            match unsafe { libc::poll(&mut pfd, 1, ms) } {
                0 => return false,
                n if n > 0 => return true,
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                _ => return false,
            }
        }
    }
}

/// Splits a buffer of `inotify_event`s.
fn parse<'b>(buf: &'b [u8], each: &mut impl FnMut(i32, u32, &'b [u8])) {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    let mut at = 0;
    while at + HEADER <= buf.len() {
        // SAFETY: the kernel wrote a whole event header at `at`.
        let ev: libc::inotify_event =
            unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
        let end = (at + HEADER + ev.len as usize).min(buf.len());
        let name = buf[at + HEADER..end]
            .split(|b| *b == 0)
            .next()
            .unwrap_or_default();
        each(ev.wd, ev.mask, name);
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of the drains, as a plain function.
    type Drain = fn(&Inotify, &mut dyn FnMut(i32, u32, &[u8]));

    /// The events `drain` hands over now, as `(mask, name)`.
    fn drained(inotify: &Inotify, drain: Drain) -> Vec<(u32, String)> {
        let mut seen = Vec::new();
        drain(inotify, &mut |_, mask, name| {
            seen.push((mask, String::from_utf8_lossy(name).into_owned()))
        });
        seen
    }

    fn folding(i: &Inotify, each: &mut dyn FnMut(i32, u32, &[u8])) {
        i.drain_folding_closes(each)
    }

    fn plain(i: &Inotify, each: &mut dyn FnMut(i32, u32, &[u8])) {
        i.drain_watches(each)
    }

    #[test]
    fn a_close_after_a_rename_into_place_is_folded_within_one_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let mask = libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE;
        let (staged, inbox) = (dir.path().join("a.json.tmp.1"), dir.path().join("a.json"));
        let write_and_rename = || {
            let f = std::fs::File::create(&staged).unwrap();
            std::fs::rename(&staged, &inbox).unwrap();
            drop(f); // closed after the rename, as some writers do
        };
        let (moved, closed) = (libc::IN_MOVED_TO, libc::IN_CLOSE_WRITE);
        let a = || "a.json".to_string();

        // Both in one read: the close is folded into the rename.
        let inotify = Inotify::watch(dir.path(), mask).unwrap();
        write_and_rename();
        assert_eq!(drained(&inotify, folding), [(moved, a())]);
        // Without folding, both are handed over.
        write_and_rename();
        assert_eq!(drained(&inotify, plain), [(moved, a()), (closed, a())]);
        // A rename read in one drain, then a close of the same file: the
        // close is another write, handed over.
        write_and_rename();
        let mut first = drained(&inotify, folding);
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .open(&inbox)
                .unwrap(),
        );
        first.extend(drained(&inotify, folding));
        assert_eq!(first, [(moved, a()), (closed, a())]);
        // Another file's close after the rename is never folded.
        write_and_rename();
        drop(std::fs::File::create(dir.path().join("b.json")).unwrap());
        assert_eq!(
            drained(&inotify, folding),
            [(moved, a()), (closed, "b.json".to_string())]
        );
    }
}
