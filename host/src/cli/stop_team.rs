//! `teamhost stop TEAM`: stops a whole team, like `docker stop`.
//!
//! 1. The live host running it (`teamhost run`, found by its records with
//!    [`live_host::find`]) gets SIGTERM, sent through a pidfd opened before
//!    its start time is checked again, so a recycled pid is never
//!    signalled. That is the run's own stop (`cli/run/stop.rs`): it shuts
//!    every teammate down through the shutdown protocol, prints its
//!    summary where it runs, and deletes the team unless it was started
//!    with `--keep`. This waits for the host to end (`--timeout`); one still
//!    running then gets a second SIGTERM, the run's forced stop (teammates
//!    stopped where they are, the team's files left as they are).
//! 2. Teammate processes whose records remain after that (a host that
//!    crashed left them) are stopped as `team delete --force` does
//!    ([`started::stop_all`]): SIGTERM, so they leave the team cleanly,
//!    SIGKILL after the timeout.
//!
//! It says what it stopped. A team nothing of teamhost runs on this
//! machine is not an error: there is nothing to stop (as `docker stop` of a
//! stopped container); that includes a deleted team (`ps -a`'s `deleted`).
//! A name neither the store nor this machine's records know is an error
//! listing the teams that exist. A team whose lead is Claude Code has no teamhost
//! host: stop it from Claude Code.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::team_state::{Process, State, TeamState};
use super::Output;
use crate::backends::started::{self, wait_exit};
use crate::home::process::{pidfd_open, runs};
use crate::home::Home;
use crate::store::Store;

/// Arguments of `teamhost stop`.
#[derive(Debug, Args)]
pub struct StopArgs {
    /// The team to stop.
    team: String,
    /// Seconds to wait for the host to shut its teammates down before
    /// forcing it (and for teammate processes before SIGKILL).
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    timeout: u64,
}

/// What `stop` did.
#[derive(Debug, Default, Serialize)]
struct Stopped {
    team: String,
    /// The host that shut the team down, if one ran it.
    host: Option<u32>,
    /// The teammates it ran, by its records.
    teammates: Vec<String>,
    /// Whether the host had to be forced (second SIGTERM).
    forced: bool,
    /// Teammate processes of a gone host: stopped, killed.
    processes: started::StopReport,
}

pub(super) fn stop(home: &Home, store: &Store, out: &Output, a: StopArgs) -> anyhow::Result<()> {
    let team = store.team(&a.team)?;
    let timeout = Duration::from_secs(a.timeout);
    let state = TeamState::of(home, &team)?;
    let mut done = Stopped {
        team: team.name().to_string(),
        ..Default::default()
    };
    if let Some(host) = state.host.as_ref().filter(|h| h.alive) {
        done.teammates = state
            .teammates
            .iter()
            .filter(|t| t.process.pid == host.pid)
            .map(|t| t.name.clone())
            .collect();
        if let Some(forced) = stop_host(host, timeout)? {
            done.host = Some(host.pid);
            done.forced = forced;
        }
    }
    done.processes = started::stop_all(home, team.name(), timeout)?;
    let p = &done.processes;
    if done.host.is_none() && p.stopped.is_empty() && p.killed.is_empty() {
        if state.state == State::Deleted {
            // As `docker stop` of a removed container's leftovers: nothing
            // runs, so nothing to do, and no pointer back to `ps -a`.
            return out.print(&done, || {
                format!(
                    "nothing to stop: team {} was deleted and nothing of it runs on this machine",
                    team.name()
                )
            });
        }
        if team.config().is_err() && state.host.is_none() {
            anyhow::bail!(
                "no team {:?} on this machine or in the store; {}",
                team.name(),
                super::team::existing_teams(store)
            );
        }
        return out.print(&done, || {
            format!(
                "nothing to stop: no teamhost host or teammate process runs team {} on this machine",
                team.name()
            )
        });
    }
    out.print(&done, || describe(&done, a.timeout))
}

/// SIGTERM to the host, then waits for it to end; a second SIGTERM forces
/// it after `timeout`. `None` when it was already gone; else whether it had
/// to be forced.
fn stop_host(host: &Process, timeout: Duration) -> anyhow::Result<Option<bool>> {
    // The pidfd names the process from now on; the start time is checked
    // after it is opened, so the process signalled is the recorded one.
    let Ok(fd) = pidfd_open(host.pid) else {
        return Ok(None);
    };
    if !runs(host.pid, host.start_time) {
        return Ok(None);
    }
    if !send(&fd, libc::SIGTERM)? {
        return Ok(None);
    }
    if wait_exit(&fd, Some(timeout)).unwrap_or(true) {
        return Ok(Some(false));
    }
    eprintln!(
        "teamhost stop: host {} did not end within {}s: forcing it (its teammates are stopped where they are)",
        host.pid,
        timeout.as_secs()
    );
    send(&fd, libc::SIGTERM)?;
    if !wait_exit(&fd, Some(Duration::from_secs(10))).unwrap_or(true) {
        send(&fd, libc::SIGKILL)?;
        let _ = wait_exit(&fd, Some(Duration::from_secs(5)));
    }
    Ok(Some(true))
}

/// Sends `sig` through the pidfd: `false` when the process has ended.
fn send(fd: &OwnedFd, sig: libc::c_int) -> anyhow::Result<bool> {
    // SAFETY: pidfd_send_signal takes a descriptor we own, a signal
    // number, no siginfo (null) and no flags; it touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ESRCH) => Ok(false),
        _ => Err(anyhow::anyhow!(
            "cannot signal the host: {e} (is it another user's? stop it where it runs)"
        )),
    }
}

/// "stopped team t: host 1234 shut down alice, bob".
fn describe(done: &Stopped, timeout: u64) -> String {
    let mut lines = Vec::new();
    if let Some(pid) = done.host {
        let who = if done.teammates.is_empty() {
            "its teammates".to_string()
        } else {
            done.teammates.join(", ")
        };
        lines.push(if done.forced {
            format!(
                "stopped team {}: host {pid} did not shut {who} down within {timeout}s and was forced; the team's files are left as they are (`teamhost team delete {} --force` removes them)",
                done.team, done.team
            )
        } else {
            format!(
                "stopped team {}: host {pid} shut {who} down and ended (it deletes the team unless it ran with --keep)",
                done.team
            )
        });
    }
    let p = &done.processes;
    if !p.stopped.is_empty() {
        lines.push(format!(
            "stopped teammate process(es): {}",
            p.stopped.join(", ")
        ));
    }
    if !p.killed.is_empty() {
        lines.push(format!("killed after {timeout}s: {}", p.killed.join(", ")));
    }
    lines.join("\n")
}
