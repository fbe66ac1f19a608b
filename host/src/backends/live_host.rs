//! Whether a live teamhost host runs a team on this machine: the one answer
//! every command that would destroy or take over a team asks first —
//! `teamhost run --replace`, a plain `teamhost run` of a team that exists,
//! `teamhost run --resume` ([`Host::resume`](crate::embed::Host::resume)),
//! `teamhost team delete` with or without `--force`
//! ([`teardown::delete_team`](super::teardown::delete_team)) and
//! [`Host::delete_team`](crate::embed::Host::delete_team). Each refuses while
//! [`find`] names a host, saying which process it is, since when it runs,
//! and how to stop it ([`LiveHost::refusal`]). There is no flag to override
//! it: deleting the files a running host uses loses what it is doing (a
//! permission request waiting for the lead vanished, the run hung, then
//! failed on a directory it was still writing). Stop the host first; it
//! deletes the team itself unless it was started with `--keep`.
//!
//! What is read, all machine-local, under the home:
//!
//! | record | written by | names |
//! |---|---|---|
//! | `{home}/kept/{team}/host.json` | `teamhost run` when it creates or resumes the team ([`claim`], [`crate::home::run_claim`]) | the run's process, from before its first teammate is spawned |
//! | `{home}/kept/{team}/{name}.spawn.json` | [`Host::spawn`](crate::embed::Host::spawn), a resume ([`crate::home::spawn_record`]) | the host running teammate `name` |
//! | `{home}/started/{team}/{name}.json` | the process and tmux backends ([`crate::home::started`]) | the host that started `name`'s process |
//!
//! Each names its host by pid and start time (`/proc/{pid}/stat`), so a
//! recycled pid is never taken for the host. A host is live when that
//! process still runs and is not the one asking (a host may delete its own
//! team). Spawn and process records count only for the team's current
//! members: a teammate that left the team says nothing about who runs it.
//!
//! What this cannot see, and so does not guard: a team whose lead is Claude
//! Code (its teammates, and a `teamhost teammate` it started, write none of
//! these records: as far as teamhost can tell no host of its own runs it),
//! and a host on another machine sharing a NATS store (its records are in
//! its own home).

use crate::error::{Error, Result};
use crate::home::process::{runs, runs_elsewhere, start_time};
use crate::home::{run_claim, spawn_record, Home};
use crate::store::Team;

/// A live host running a team, as [`find`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveHost {
    /// The team.
    pub team: String,
    /// The host's process.
    pub pid: u32,
    /// When that process started (Unix milliseconds), when it can be told.
    pub since_ms: Option<u64>,
    /// Its command line, shortened, when it can be read.
    pub command: Option<String>,
    /// The teammates it runs, by its records (possibly none yet).
    pub teammates: Vec<String>,
}

impl LiveHost {
    /// "team "t" is still run by teamhost process 42 (`teamhost run
    /// team.toml`, running since 2025-01-02 10:11:12, 3m 4s ago; teammates
    /// a, b)".
    pub fn describe(&self) -> String {
        let mut about = Vec::new();
        if let Some(c) = &self.command {
            about.push(format!("`{c}`"));
        }
        if let Some(ms) = self.since_ms {
            about.push(format!("running since {}", since(ms)));
        }
        let mut s = format!(
            "team {:?} is still run by teamhost process {}",
            self.team, self.pid
        );
        if !about.is_empty() {
            s.push_str(&format!(" ({})", about.join(", ")));
        }
        if !self.teammates.is_empty() {
            s.push_str(&format!(" with teammates {}", self.teammates.join(", ")));
        }
        s
    }

    /// How to stop it.
    pub fn how_to_stop(&self) -> String {
        format!(
            "stop that host first: `teamhost stop {}`, Ctrl-C where it runs, or `kill {}` (each stops its teammates and it deletes the team itself, unless it was started with --keep; a second Ctrl-C or kill forces it, leaving the team's files as they are)",
            self.team, self.pid
        )
    }

    /// The error refusing `what` (e.g. "`teamhost team delete` would delete
    /// the files it is using") while this host runs the team.
    pub fn refusal(&self, what: &str) -> Error {
        Error::TeamRunning {
            team: self.team.clone(),
            pid: self.pid,
            message: format!("{}: {what}; {}", self.describe(), self.how_to_stop()),
        }
    }
}

/// The live host, other than this process, running `team` on this machine,
/// if any (see the module docs for what counts). Blocking: reads a few small
/// files under the home and `/proc`.
pub fn find(home: &Home, team: &Team) -> Result<Option<LiveHost>> {
    let name = team.name();
    // Members now; when the config cannot be read (no team, a corrupt
    // file), every record counts.
    let members = team.config().ok().map(|c| c.member_names());
    let counts = |who: &str| members.as_ref().is_none_or(|m| m.iter().any(|n| n == who));
    let alive = runs_elsewhere;
    // Every (pid, teammate) a record names a live host for.
    let mut hosts: Vec<(u32, Option<String>)> = Vec::new();
    match run_claim::read(home, name) {
        Ok(Some(r)) if alive(r.host_pid, r.host_start_time) => hosts.push((r.host_pid, None)),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "skipping an unreadable host record"),
    }
    for r in spawn_record::list(home, name)? {
        if counts(&r.name) && alive(r.host_pid, r.host_start_time) {
            hosts.push((r.host_pid, Some(r.name)));
        }
    }
    for r in crate::home::started::list(home, name)? {
        if counts(&r.name) && alive(r.host_pid, r.host_start_time) {
            hosts.push((r.host_pid, Some(r.name)));
        }
    }
    let Some(&(pid, _)) = hosts.first() else {
        return Ok(None);
    };
    let mut teammates: Vec<String> = hosts
        .iter()
        .filter(|(p, _)| *p == pid)
        .filter_map(|(_, n)| n.clone())
        .collect();
    teammates.sort();
    teammates.dedup();
    Ok(Some(LiveHost {
        team: name.to_string(),
        pid,
        since_ms: start_time(pid).and_then(start_ms),
        command: command_of(pid),
        teammates,
    }))
}

/// Fails with [`LiveHost::refusal`] when a live host runs `team`.
/// Blocking.
pub fn refuse_if_live(home: &Home, team: &Team, what: &str) -> Result<()> {
    match find(home, team)? {
        Some(host) => Err(host.refusal(what)),
        None => Ok(()),
    }
}

/// The hosts that ran `team` on this machine and no longer run (what a
/// crash or a forced stop left), newest first, by pid.
pub fn dead_hosts(home: &Home, team: &str) -> Vec<u32> {
    let mut seen: Vec<(u64, u32, Option<u64>)> = Vec::new();
    if let Ok(Some(r)) = run_claim::read(home, team) {
        seen.push((r.claimed_at, r.host_pid, r.host_start_time));
    }
    for r in spawn_record::list(home, team).unwrap_or_default() {
        seen.push((r.spawned_at, r.host_pid, r.host_start_time));
    }
    seen.sort_by(|a, b| b.cmp(a));
    let mut out: Vec<u32> = Vec::new();
    for (_, pid, start) in seen {
        if !out.contains(&pid) && !runs(pid, start) {
            out.push(pid);
        }
    }
    out
}

/// Unix milliseconds of a process start time in clock ticks since boot.
fn start_ms(ticks: u64) -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let boot: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|h| *h > 0)?;
    Some(boot * 1000 + ticks * 1000 / hz)
}

/// "2025-01-02 10:11:12, 3m 4s ago" in local time.
fn since(ms: u64) -> String {
    let at = chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| format!("{ms} ms"));
    let ago = crate::protocol::time::now_ms().saturating_sub(ms) / 1000;
    let ago = match ago {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {}s", s / 60, s % 60),
        s => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    };
    format!("{at}, {ago} ago")
}

/// The command line of `pid`, its program by file name, at most 120
/// characters.
fn command_of(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut words = raw
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned());
    let program = words.next()?;
    let program = std::path::Path::new(&program)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or(program);
    let line = std::iter::once(program)
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ");
    let line = crate::protocol::describe::printable_line(&line).into_owned();
    Some(if line.chars().count() > 120 {
        line.chars().take(119).collect::<String>() + "…"
    } else {
        line
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::write_json;
    use crate::home::run_claim::{claim, HostRecord};
    use crate::store::{NewTeam, Store};

    #[test]
    fn a_claim_by_a_live_process_is_found_and_one_by_a_dead_process_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        let team = Store::new(home.clone()).team("t").unwrap();
        team.create(NewTeam::default()).unwrap();
        // This process's own claim: it may delete its own team.
        claim(&home, "t").unwrap();
        assert_eq!(find(&home, &team).unwrap(), None);
        assert_eq!(dead_hosts(&home, "t"), Vec::<u32>::new(), "this one runs");

        // Another live process (a child sleeping) claims it.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let record = HostRecord {
            host_pid: child.id(),
            host_start_time: start_time(child.id()),
            claimed_at: crate::protocol::time::now_ms(),
        };
        write_json(&home.run_claim("t"), &record).unwrap();
        let live = find(&home, &team).unwrap().expect("a live host");
        assert_eq!(live.pid, child.id());
        assert!(live.since_ms.is_some());
        assert!(live.command.as_deref().unwrap().starts_with("sleep 30"));
        let e = live.refusal("deleting it would lose its work").to_string();
        assert!(
            e.contains(&format!("still run by teamhost process {}", child.id())),
            "{e}"
        );
        assert!(
            e.contains("running since") && e.contains(&format!("kill {}", child.id())),
            "{e}"
        );
        assert!(refuse_if_live(&home, &team, "x").is_err());

        // The same pid with another start time is another process.
        let recycled = HostRecord {
            host_start_time: record.host_start_time.map(|t| t + 1),
            ..record.clone()
        };
        write_json(&home.run_claim("t"), &recycled).unwrap();
        assert_eq!(find(&home, &team).unwrap(), None);

        write_json(&home.run_claim("t"), &record).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(find(&home, &team).unwrap(), None, "its host died");
        assert_eq!(dead_hosts(&home, "t"), vec![record.host_pid]);
    }
}
