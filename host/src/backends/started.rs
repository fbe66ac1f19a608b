//! What teamhost started for a team, on disk, so that any teamhost process can
//! stop it: one record per external teammate in
//! `{home}/started/{team}/{name}.json`, written when its process starts
//! and removed when the host sees it end. Machine-local: a pid means nothing
//! on another machine, so these records live in the home, not in the team
//! store.
//!
//! ```json
//! {"name":"alice","backend":"tmux","pid":4242,"startTime":889911,
//!  "paneId":"%3","tmuxSocket":"/tmp/s/sock","hostPid":4100,"startedAt":1767225600000}
//! ```
//!
//! `startTime` is the process's start time from `/proc/{pid}/stat` (clock ticks
//! since boot): with the pid it names one process for good, so a recycled pid
//! is never signalled. A tmux pane is killed only when it still runs the
//! recorded process: teamhost never kills a pane it did not start.
//!
//! Also here: waiting for any process (child or not) to end through a pidfd,
//! without polling.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::durable::{read_json, write_json};
use crate::error::{Error, Result};
use crate::home::Home;

/// One started teammate process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    /// Member name.
    pub name: String,
    /// `process` or `tmux`.
    pub backend: String,
    /// The `teamhost teammate` process.
    pub pid: u32,
    /// Its start time (`/proc/{pid}/stat` field 22), when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
    /// The tmux pane (`%N`), for the tmux backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    /// The tmux server's socket, when not tmux's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_socket: Option<PathBuf>,
    /// The teamhost process that started it.
    pub host_pid: u32,
    /// That process's start time, naming it for good (records written
    /// before it was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_start_time: Option<u64>,
    /// Unix milliseconds.
    pub started_at: u64,
}

impl Started {
    /// A record for `pid`, stamped now, its start time read from `/proc`.
    pub fn new(name: &str, backend: &str, pid: u32) -> Started {
        Started {
            name: name.to_string(),
            backend: backend.to_string(),
            pid,
            start_time: start_time(pid),
            pane_id: None,
            tmux_socket: None,
            host_pid: std::process::id(),
            host_start_time: start_time(std::process::id()),
            started_at: crate::protocol::time::now_ms(),
        }
    }

    /// Whether the host that started it still runs and is not this
    /// process (its pid, and its start time when recorded, match).
    pub fn host_alive_elsewhere(&self) -> bool {
        super::live_host::runs_elsewhere(self.host_pid, self.host_start_time)
    }

    /// A pidfd for the recorded process if it is still the same process.
    pub fn open_if_running(&self) -> Option<OwnedFd> {
        let fd = pidfd_open(self.pid).ok()?;
        // Checked after opening: from here on the pidfd names this process
        // even if the pid is recycled.
        // A zombie has ended: only its parent has not read its status yet.
        if is_zombie(self.pid) {
            return None;
        }
        match (self.start_time, start_time(self.pid)) {
            (Some(want), Some(now)) if want != now => None,
            (_, None) => None,
            _ => Some(fd),
        }
    }
}

/// `{home}/started/{team}`.
pub fn dir(home: &Home, team: &str) -> PathBuf {
    home.started_dir(team)
}

fn path(home: &Home, team: &str, name: &str) -> Result<PathBuf> {
    home.started(team, name)
}

/// Writes (or replaces) `rec`.
pub fn record(home: &Home, team: &str, rec: &Started) -> Result<()> {
    let dir = dir(home, team);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    write_json(&path(home, team, &rec.name)?, rec)
}

/// Removes `name`'s record; a missing one is fine.
pub fn remove(home: &Home, team: &str, name: &str) -> Result<()> {
    let p = path(home, team, name)?;
    match std::fs::remove_file(&p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("remove", p, e)),
        _ => Ok(()),
    }
}

/// Every record of `team`, by name. Unreadable ones are skipped with a warning.
pub fn list(home: &Home, team: &str) -> Result<Vec<Started>> {
    let dir = dir(home, team);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let p = entry.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        match read_json::<Started>(&p) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "skipping an unreadable process record"),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

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

/// A pidfd (Linux ≥ 5.3) for `pid`: readable once the process has ended,
/// whoever its parent is.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just gave us this descriptor; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
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

/// Field 22 of `/proc/{pid}/stat` (start time, clock ticks since boot).
/// The start time of process `pid` (`/proc/{pid}/stat` field 22), when it
/// can be read: with the pid it names one process for good.
pub fn start_time_of(pid: u32) -> Option<u64> {
    start_time(pid)
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: fields
    // are counted after its last ')'. Field 3 is the first one after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
