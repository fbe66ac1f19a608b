//! tmux panes as the host touches them outside spawning: running `tmux`
//! against the right server, telling whether a pane still runs the process
//! teamhost recorded, reading a dead pane's exit status, killing a pane only
//! when it is teamhost's. Shared by the tmux backend, the external-teammate
//! monitor and the process records' `stop_all`.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

use crate::error::{Error, Result};

/// A tmux client command for `socket` (`tmux -S socket`, or tmux's own
/// choice: `$TMUX`'s server, else the default one).
pub(crate) fn tmux(socket: Option<&Path>) -> std::process::Command {
    let mut c = std::process::Command::new("tmux");
    if let Some(s) = socket {
        c.arg("-S").arg(s);
    }
    c.stdin(std::process::Stdio::null());
    c
}

/// Runs a tmux command and returns its trimmed stdout, or an error quoting
/// tmux's own message.
pub(crate) fn run(mut cmd: std::process::Command, what: &str) -> Result<String> {
    let out = cmd.output().map_err(|e| {
        Error::Backend(format!(
            "cannot run tmux to {what}: {e}; install tmux (apt-get install tmux) or use --teammate-mode process"
        ))
    })?;
    if !out.status.success() {
        return Err(Error::Backend(format!(
            "tmux could not {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether `pane` exists and runs (or ran) process `pid`.
pub(crate) fn is_ours(socket: Option<&Path>, pane: &str, pid: u32) -> bool {
    let mut c = tmux(socket);
    c.args([
        "display-message",
        "-p",
        "-t",
        pane,
        "#{pane_id} #{pane_pid}",
    ])
    .stderr(std::process::Stdio::null());
    match c.output() {
        Ok(out) if out.status.success() => {
            String::from_utf8_lossy(&out.stdout).trim() == format!("{pane} {pid}")
        }
        _ => false,
    }
}

/// Kills `pane` if it still belongs to process `pid` (so a pane of the user's
/// is never touched, even if it somehow got a recorded id). Returns whether a
/// pane was killed; a pane or server already gone is not an error.
pub(crate) fn kill_pane_if_ours(socket: Option<&Path>, pane: &str, pid: u32) -> bool {
    if !is_ours(socket, pane, pid) {
        return false;
    }
    let mut c = tmux(socket);
    c.args(["kill-pane", "-t", pane])
        .stderr(std::process::Stdio::null());
    c.status().is_ok_and(|s| s.success())
}

/// The first lines (at most five, the blank ones left out) that `pane`
/// shows while it still belongs to process `pid`, made printable and joined
/// with ` / `: what a command that died at once said (its stderr reaches
/// the pane). `None` when the pane is gone or shows nothing.
pub(crate) fn pane_said(socket: Option<&Path>, pane: &str, pid: u32) -> Option<String> {
    if !is_ours(socket, pane, pid) {
        return None;
    }
    let mut c = tmux(socket);
    c.args(["capture-pane", "-p", "-J", "-S", "-", "-t", pane])
        .stderr(std::process::Stdio::null());
    let out = c.output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(5)
        .collect();
    if lines.is_empty() {
        return None;
    }
    let said = crate::protocol::describe::printable_line(&lines.join(" / ")).into_owned();
    Some(if said.chars().count() > 600 {
        format!("{}…", said.chars().take(600).collect::<String>())
    } else {
        said
    })
}

/// How long [`dead_status`] keeps asking tmux for a dead pane's status.
const DEAD_STATUS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// The exit status of `pane`'s dead process `pid`, when tmux kept it. tmux
/// notices the death and collects the status on its own schedule (and has no
/// event to wait on; tmux 3.3 sometimes marks a pane dead and never collects
/// the status at all), so a pane shown alive, or dead without a status, is
/// asked again every 10 ms for up to [`DEAD_STATUS_PATIENCE`]; so is a tmux
/// command that fails for another reason than a missing pane or server (a
/// server slow under load). A pane or server that is gone, or a pane holding
/// another process, answers `None` at once.
pub(crate) fn dead_status(socket: Option<&Path>, pane: &str, pid: u32) -> PaneEnd {
    let mut dead = false;
    let deadline = std::time::Instant::now() + DEAD_STATUS_PATIENCE;
    while std::time::Instant::now() < deadline {
        let mut c = tmux(socket);
        c.args([
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_id} #{pane_pid} #{pane_dead} #{pane_dead_status}",
        ]);
        let Ok(out) = c.output() else {
            return PaneEnd::Gone;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = text.split_whitespace().collect();
        match f.as_slice() {
            [p, pp, "1", code] if *p == pane && *pp == pid.to_string() => {
                return match code.parse::<i32>() {
                    Ok(c) => PaneEnd::Status(ExitStatus::from_raw(c << 8)),
                    Err(_) => PaneEnd::DeadWithoutStatus,
                };
            }
            // Dead without its status collected yet.
            [p, pp, "1"] if *p == pane && *pp == pid.to_string() => dead = true,
            // Still alive to tmux.
            [p, pp, "0", ..] if *p == pane && *pp == pid.to_string() => {}
            // Another process in that pane: not ours to report.
            [_, _, ..] => return PaneEnd::Gone,
            // The pane is gone (tmux prints nothing for a missing pane).
            _ if out.status.success() => return PaneEnd::Gone,
            // The server is gone, or the pane: nothing will come.
            _ if ["no server running", "can't find"]
                .iter()
                .any(|gone| String::from_utf8_lossy(&out.stderr).contains(gone)) =>
            {
                return PaneEnd::Gone
            }
            // tmux failed otherwise (busy, starting): ask again.
            _ => {}
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if dead {
        PaneEnd::DeadWithoutStatus
    } else {
        PaneEnd::Gone
    }
}

/// How a pane's process ended, as far as tmux tells ([`dead_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaneEnd {
    /// Its exit status.
    Status(ExitStatus),
    /// The pane is dead but tmux never collected the status.
    DeadWithoutStatus,
    /// The pane is gone (closed under it), or holds another process.
    Gone,
}
