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
    pub(super) fn drain_watches(&self, mut each: impl FnMut(i32, u32, &[u8])) {
        let mut buf = [0u8; 8192];
        loop {
            // SAFETY: reading into a buffer we own.
            let len =
                unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if len <= 0 {
                return; // EAGAIN: nothing more queued (or an error: nothing to read)
            }
            parse(&buf[..len as usize], &mut each);
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
fn parse(buf: &[u8], each: &mut impl FnMut(i32, u32, &[u8])) {
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
