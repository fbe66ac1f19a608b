//! Stopping what teamhost started for a team, from any teamhost process:
//! the processes and panes its records (`{home}/started/{team}/`, kept by
//! [`crate::home::started`], re-exported here) name. A recycled pid is
//! never signalled: a record names one process by pid and start time.
//! A tmux pane is killed only when it still runs the recorded process:
//! teamhost never kills a pane it did not start.
//!
//! Also here: waiting for any process (child or not) to end through a pidfd,
//! without polling.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::Result;
use crate::home::Home;

pub(crate) use crate::home::process::pidfd_open;
use crate::home::started::{list, remove};

/// What [`stop_all`] did, by member name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StopReport {
    /// Stopped by SIGTERM (they left the team cleanly).
    pub stopped: Vec<String>,
    /// Still running after the timeout: SIGKILLed.
    pub killed: Vec<String>,
    /// Already gone.
    pub gone: Vec<String>,
    /// tmux panes closed (ones still open after their process ended).
    pub panes_closed: Vec<String>,
}

/// Stops every process recorded for `team`: SIGTERM (a teammate then leaves
/// the team cleanly: its tasks go back to `pending`, the lead is told), then
/// SIGKILL for any still running after `timeout`; closes the recorded tmux
/// panes that are still open; removes the records. Blocking.
pub fn stop_all(home: &Home, team: &str, timeout: Duration) -> Result<StopReport> {
    let mut report = StopReport::default();
    let records = list(home, team)?;
    let mut running = Vec::new();
    for rec in &records {
        match rec.open_if_running() {
            Some(fd) => {
                signal(rec.pid, libc::SIGTERM);
                running.push((rec, fd));
            }
            None => report.gone.push(rec.name.clone()),
        }
    }
    let deadline = Instant::now() + timeout;
    for (rec, fd) in &running {
        let left = deadline.saturating_duration_since(Instant::now());
        if wait_exit(fd, Some(left)).unwrap_or(true) {
            report.stopped.push(rec.name.clone());
        } else {
            signal(rec.pid, libc::SIGKILL);
            let _ = wait_exit(fd, Some(Duration::from_secs(5)));
            report.killed.push(rec.name.clone());
        }
    }
    for rec in &records {
        if let Some(pane) = &rec.pane_id {
            if super::panes::kill_pane_if_ours(rec.tmux_socket.as_deref(), pane, rec.pid) {
                report.panes_closed.push(rec.name.clone());
            }
        }
        remove(home, team, &rec.name)?;
    }
    Ok(report)
}

/// Sends `sig` to `pid`; a process already gone is fine.
pub(crate) fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) has no memory effects.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Blocks until the process of `fd` ends (`true`) or `timeout` passes
/// (`false`). `None` waits for ever.
pub(crate) fn wait_exit(fd: &OwnedFd, timeout: Option<Duration>) -> io::Result<bool> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .as_millis()
                .min(i32::MAX as u128) as i32,
        };
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n > 0 {
            return Ok(true);
        }
        if n == 0 {
            return Ok(false);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::started::Started;

    #[test]
    fn a_process_is_named_by_pid_and_start_time() {
        let me = std::process::id();
        let rec = Started::new("me", "process", me);
        assert!(rec.start_time.is_some());
        assert!(rec.open_if_running().is_some());
        let recycled = Started {
            start_time: rec.start_time.map(|t| t + 1),
            ..rec
        };
        assert!(recycled.open_if_running().is_none());
    }

    #[test]
    fn waiting_on_a_pidfd_sees_a_child_end() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let fd = pidfd_open(child.id()).unwrap();
        assert!(!wait_exit(&fd, Some(Duration::from_millis(20))).unwrap());
        signal(child.id(), libc::SIGKILL);
        assert!(wait_exit(&fd, Some(Duration::from_secs(10))).unwrap());
        child.wait().unwrap();
    }
}
