//! The records of what teamhost started for a team, on disk, so that any teamhost process can
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
//! Stopping what they name is `backends::started`'s.

use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::process::start_time;
use super::Home;
use crate::durable::{read_json, write_json};
use crate::error::{Error, Result};

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
            host_start_time: super::process::own_start_time(),
            started_at: crate::protocol::time::now_ms(),
        }
    }

    /// Whether the host that started it still runs and is not this
    /// process (its pid, and its start time when recorded, match).
    pub fn host_alive_elsewhere(&self) -> bool {
        super::process::runs_elsewhere(self.host_pid, self.host_start_time)
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

impl Started {
    /// A pidfd for the recorded process if it is still the same process.
    pub fn open_if_running(&self) -> Option<OwnedFd> {
        let fd = super::process::pidfd_open(self.pid).ok()?;
        // Checked after opening: from here on the pidfd names this process
        // even if the pid is recycled.
        // A zombie has ended: only its parent has not read its status yet.
        if super::process::is_zombie(self.pid) {
            return None;
        }
        match (self.start_time, start_time(self.pid)) {
            (Some(want), Some(now)) if want != now => None,
            (_, None) => None,
            _ => Some(fd),
        }
    }
}
