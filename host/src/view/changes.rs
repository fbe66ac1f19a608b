//! What makes the view redraw: inotify on the team's files (its config,
//! inboxes and tasks, whoever writes them) and, inside `teamhost run`, the
//! host's own events. Both become [`Input::Changed`] on one channel; the view
//! reads the board again once per burst, never on a timer.
//!
//! Only writes to `*.json` files and the removal of a watched directory count:
//! the store's lock directories, flock files and temporary files change with
//! every read and write and would make the view redraw for ever.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::error::{Error, Result};
use crate::host::{Event, Host};
use crate::store::Team;

use super::Input;

/// A live watch on one team's files; dropping it stops watching.
pub struct FileChanges {
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for FileChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileChanges").finish_non_exhaustive()
    }
}

impl FileChanges {
    /// Starts watching `team` and sends [`Input::Changed`] to `tx` on every
    /// write that matters.
    pub fn start(team: &Team, tx: Sender<Input>) -> Result<FileChanges> {
        // The team directory recursively (config, inboxes, even when
        // `inboxes/` appears later) and the task directory when it exists:
        // nothing is created, so watching a Claude Code team writes nothing.
        let paths = team.paths();
        let mut dirs = vec![(paths.team_dir().to_path_buf(), RecursiveMode::Recursive)];
        if paths.tasks_dir().is_dir() {
            dirs.push((paths.tasks_dir().to_path_buf(), RecursiveMode::NonRecursive));
        }
        let watched: Vec<PathBuf> = dirs.iter().map(|(d, _)| d.clone()).collect();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if matters(&event, &watched) {
                let _ = tx.send(Input::Changed);
            }
        })
        .map_err(|e| watch_error(team, e))?;
        for (d, mode) in &dirs {
            watcher.watch(d, *mode).map_err(|e| watch_error(team, e))?;
        }
        Ok(FileChanges { _watcher: watcher })
    }
}

fn matters(event: &notify::Event, watched: &[PathBuf]) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
        EventKind::Access(_) => return false,
        _ => {}
    }
    event
        .paths
        .iter()
        .any(|p| is_data_file(p) || watched.iter().any(|w| w == p))
}

fn is_data_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".json"))
}

fn watch_error(team: &Team, e: notify::Error) -> Error {
    Error::Invalid(format!(
        "cannot watch the files of team {:?} for changes: {e}",
        team.name()
    ))
}

/// Forwards `host`'s events about `team` to `tx` until the channel closes.
/// Needs a tokio runtime.
pub fn forward_host_events(
    host: &Host,
    team: &str,
    tx: Sender<Input>,
) -> tokio::task::JoinHandle<()> {
    let mut events = host.events();
    let team = team.to_string();
    tokio::spawn(async move {
        loop {
            let ours = match events.recv().await {
                Ok(Event::StateChanged { team: t, .. })
                | Ok(Event::TurnStarted { team: t, .. })
                | Ok(Event::TasksChanged { team: t })
                | Ok(Event::InboxChanged { team: t, .. }) => t == team,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if ours && tx.send(Input::Changed).is_err() {
                return;
            }
        }
    })
}
