//! Which process wrote a record: every record the home keeps of a host or
//! a teammate process names it by pid and start time (`/proc/{pid}/stat`
//! field 22, clock ticks since boot), so a recycled pid is never taken for
//! the process that wrote it.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

/// The start time of process `pid` (`/proc/{pid}/stat` field 22), when it
/// can be read: with the pid it names one process for good.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: fields
    // are counted after its last ')'. Field 3 is the first one after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// This process's start time: [`start_time`] of its own pid, read once per
/// pid (every spawn stamps its records with it; a forked child, whose pid
/// differs, reads its own).
pub fn own_start_time() -> Option<u64> {
    static OWN: std::sync::Mutex<Option<(u32, Option<u64>)>> = std::sync::Mutex::new(None);
    let me = std::process::id();
    let mut own = OWN.lock().unwrap_or_else(|p| p.into_inner());
    match *own {
        Some((pid, start)) if pid == me => start,
        _ => {
            let start = start_time(me);
            *own = Some((me, start));
            start
        }
    }
}

/// Whether the host process named by `pid` and `start` still runs and is
/// not this process: what every record's `host_alive_elsewhere` asks.
pub(crate) fn runs_elsewhere(pid: u32, start: Option<u64>) -> bool {
    pid != std::process::id() && runs(pid, start)
}

/// Whether process `pid` runs and, when `start` is known, is the one that
/// started then.
pub(crate) fn runs(pid: u32, start: Option<u64>) -> bool {
    match (start, start_time(pid)) {
        (_, None) => false,
        (Some(want), Some(now)) => want == now,
        (None, Some(_)) => true,
    }
}

/// A pidfd (Linux ≥ 5.3) for `pid`: readable once the process has ended,
/// whoever its parent is; from then on it names that process even if the
/// pid is recycled.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just gave us this descriptor; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether `pid` has ended and only waits for its parent to read its
/// status (state `Z` in `/proc/{pid}/stat`).
pub(crate) fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}
