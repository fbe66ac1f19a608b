//! Removing a team for good, the one way the CLI (`teamhost team delete`,
//! `teamhost run --replace`) and the embedding API (`Host::delete_team`) all
//! use: refuse while a live host runs it ([`super::live_host`]), stop what
//! teamhost started for it on this machine, delete its state from the
//! store, and remove its teammates' clean worktrees.

use std::time::Duration;

use super::started::{self, StopReport};
use crate::error::Result;
use crate::home::Home;
use crate::store::Team;
use crate::worktree::Cleanup;

/// What [`delete_team`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Teardown {
    /// The processes and panes stopped (only with `force`).
    pub stopped: StopReport,
    /// Worktrees removed, and the ones kept because they have changes.
    pub worktrees: Cleanup,
}

/// Deletes `team`. First of all, with or without `force`, it is refused
/// while a live host other than this process runs the team
/// ([`crate::Error::TeamRunning`], see [`super::live_host`]): stop that host
/// instead. Without `force` it is refused while members other than
/// the lead remain ([`crate::Error::TeamNotEmpty`]) and nothing is stopped.
/// With `force`, every process teamhost recorded for the team under `home`
/// gets SIGTERM (a teammate then leaves cleanly), SIGKILL after `timeout`,
/// and the recorded tmux panes still open are closed, before the team's
/// state is deleted, with what this machine kept to resume it
/// ([`Home::forget_team`]). Worktrees without changes are removed; the others are
/// kept and listed. Blocking.
pub fn delete_team(home: &Home, team: &Team, force: bool, timeout: Duration) -> Result<Teardown> {
    super::live_host::refuse_if_live(
        home,
        team,
        "deleting the team now would delete the tasks, inboxes and requests it is using",
    )?;
    let stopped = if force && team.exists() {
        started::stop_all(home, team.name(), timeout)?
    } else {
        StopReport::default()
    };
    team.delete(force)?;
    home.forget_team(team.name())?;
    let worktrees = crate::worktree::cleanup(home, team.name())?;
    Ok(Teardown { stopped, worktrees })
}
