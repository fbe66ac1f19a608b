//! What runs a team on this machine, read from the home's records (the
//! run's claim, spawn records, process records: see `home/`): the host that
//! runs it and the teammate processes it started, each alive or dead. A pid
//! counts as alive only while its start time (`/proc/{pid}/stat`) is the
//! one recorded: a recycled pid is dead. Shared by `ps`, `team list`,
//! `stop` and `logs -f`.

use serde::Serialize;

use crate::backends::live_host;
use crate::home::process::{runs, start_time};
use crate::home::{run_claim, spawn_record, started, Home};
use crate::store::Team;

/// A team's state as `team list` and `ps` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum State {
    /// A live host runs it and a teammate is in a turn; or, with no
    /// teamhost host, a member says it is active (a lead elsewhere).
    Running,
    /// A live host runs it and every teammate waits; or nothing of
    /// teamhost ever ran it and no member is active.
    Idle,
    /// The host that ran it is gone (ended, stopped or crashed).
    Stopped,
    /// Its files are gone from the store (its lead or `team delete`
    /// deleted it) and no live host runs it; this machine still keeps
    /// records of it (a lead's kept conversation, decisions, process
    /// records), which is why `ps -a` shows it.
    Deleted,
}

impl State {
    /// How it is printed.
    pub(super) fn name(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Idle => "idle",
            State::Stopped => "stopped",
            State::Deleted => "deleted",
        }
    }
}

/// A process a record names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Process {
    /// Its pid.
    pub pid: u32,
    /// Its recorded start time, when the record has one.
    #[serde(skip)]
    pub start_time: Option<u64>,
    /// Whether it runs, and is the process the record names.
    pub alive: bool,
}

impl Process {
    fn of(pid: u32, start: Option<u64>) -> Process {
        Process {
            pid,
            start_time: start,
            alive: runs(pid, start),
        }
    }

    /// "1234 alive" / "1234 dead".
    pub(super) fn describe(&self) -> String {
        format!("{} {}", self.pid, if self.alive { "alive" } else { "dead" })
    }
}

/// One teammate the records say a host ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Teammate {
    /// Member name.
    pub name: String,
    /// `in-process`, `process` or `tmux`.
    pub backend: String,
    /// The process it runs in: its own (`process`, `tmux`) or its host's.
    pub process: Process,
}

/// What runs one team on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct TeamState {
    /// Team name.
    pub team: String,
    /// Running, idle, stopped or deleted.
    pub state: State,
    /// Members but the lead (0 when the config cannot be read).
    pub members: usize,
    /// The host: the live one, else the newest that ran it; none when no
    /// teamhost host ever ran it on this machine.
    pub host: Option<Process>,
    /// The teammates of the records, by name.
    pub teammates: Vec<Teammate>,
}

impl TeamState {
    /// Reads `team`'s records and `/proc`. Blocking (a few small files).
    pub(super) fn of(home: &Home, team: &Team) -> crate::error::Result<TeamState> {
        let name = team.name();
        let config = team.config().ok();
        // Gone from the store, but this machine keeps records of it.
        let recorded = home.kept_dir(name).is_dir() || home.started_dir(name).is_dir();
        let deleted = config.is_none() && !team.try_exists().unwrap_or(true);
        let members: Vec<_> = config
            .as_ref()
            .map(|c| {
                c.members
                    .iter()
                    .filter(|m| m.name != crate::store::config::LEAD_NAME)
                    .collect()
            })
            .unwrap_or_default();
        let any_active = members.iter().any(|m| m.is_active == Some(true));
        let live = live_host::find(home, team)?;
        let host = match &live {
            // Its start time from the record that named it.
            Some(h) => Some(Process::of(h.pid, recorded_start(home, name, h.pid))),
            None => live_host::dead_hosts(home, name)
                .first()
                .map(|&pid| Process {
                    pid,
                    start_time: None,
                    alive: false,
                }),
        };
        let state = match (&live, &host) {
            (None, Some(_)) if deleted => State::Deleted,
            (None, None) if deleted && recorded => State::Deleted,
            (Some(_), _) if any_active => State::Running,
            (Some(_), _) => State::Idle,
            (None, Some(_)) => State::Stopped,
            (None, None) if any_active => State::Running,
            (None, None) => State::Idle,
        };
        Ok(TeamState {
            team: name.to_string(),
            state,
            members: members.len(),
            host,
            teammates: teammates(home, name)?,
        })
    }
}

/// The teammates the spawn and process records name: a process record
/// (its own process) wins over the spawn record (its host's).
fn teammates(home: &Home, team: &str) -> crate::error::Result<Vec<Teammate>> {
    let mut out: Vec<Teammate> = started::list(home, team)?
        .into_iter()
        .map(|r| Teammate {
            process: Process::of(r.pid, r.start_time),
            name: r.name,
            backend: r.backend,
        })
        .collect();
    for r in spawn_record::list(home, team)? {
        if out.iter().any(|t| t.name == r.name) {
            continue;
        }
        out.push(Teammate {
            name: r.name,
            backend: r.backend,
            process: Process::of(r.host_pid, r.host_start_time),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The start time of host `pid` as the record that found it alive gives
/// it: of the records naming `pid`, the one whose start time is the
/// process's now (`None` when those records have none).
fn recorded_start(home: &Home, team: &str, pid: u32) -> Option<u64> {
    let now = start_time(pid)?;
    let mut recorded = Vec::new();
    if let Ok(Some(r)) = run_claim::read(home, team) {
        recorded.push((r.host_pid, r.host_start_time));
    }
    for r in spawn_record::list(home, team).unwrap_or_default() {
        recorded.push((r.host_pid, r.host_start_time));
    }
    for r in started::list(home, team).unwrap_or_default() {
        recorded.push((r.host_pid, r.host_start_time));
    }
    recorded
        .into_iter()
        .find(|&(p, s)| p == pid && s == Some(now))
        .and_then(|(_, s)| s)
}
