//! What makes the view redraw: inotify on the team's files (its config,
//! inboxes and tasks, whoever writes them) and, inside `teamhost run`, the
//! host's own events. Both become [`Input::Changed`] on one channel; the view
//! reads the board again once per burst, never on a timer.
//!
//! Only writes to `*.json` files and watched directories appearing or going
//! count:
//! the store's lock directories, flock files and temporary files change with
//! every read and write and would make the view redraw for ever.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::Mutex;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use crate::error::{Error, Result};
use crate::host::{Event, Host};
use crate::runner::watch::is_read_only;
use crate::store::Team;

use super::Input;

/// A live watch on one team's files; dropping it stops watching.
///
/// Three directories are watched, each without recursion (a recursive watch
/// would follow every lock directory the store creates and removes): the
/// team's directory (`config.json`), its `inboxes/` and its task directory.
/// Nothing is created to watch it, so watching a Claude Code team writes
/// nothing; a directory that appears later is watched from the change that
/// reports it on ([`FileChanges::ensure`]).
pub struct FileChanges {
    watcher: Mutex<RecommendedWatcher>,
    wanted: Vec<PathBuf>,
    watched: Mutex<Vec<PathBuf>>,
    team: String,
}

impl std::fmt::Debug for FileChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileChanges")
            .field("team", &self.team)
            .finish_non_exhaustive()
    }
}

impl FileChanges {
    /// Starts watching `team` and sends [`Input::Changed`] to `tx` on every
    /// write that matters.
    pub fn start(team: &Team, tx: Sender<Input>) -> Result<FileChanges> {
        let paths = team.paths();
        let wanted = vec![
            paths.team_dir().to_path_buf(),
            paths.inboxes_dir(),
            paths.tasks_dir().to_path_buf(),
        ];
        let dirs = wanted.clone();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if matters(&event, &dirs) {
                let _ = tx.send(Input::Changed);
            }
        })
        .map_err(|e| watch_error(team.name(), e))?;
        let changes = FileChanges {
            watcher: Mutex::new(watcher),
            wanted,
            watched: Mutex::new(Vec::new()),
            team: team.name().to_string(),
        };
        changes.ensure()?;
        Ok(changes)
    }

    /// Watches those of the team's directories that exist and are not
    /// watched yet. The views call it after each change, so `inboxes/` or
    /// the task directory created after the view started are followed too.
    pub fn ensure(&self) -> Result<()> {
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        // A removed directory took its watch with it.
        watched.retain(|d| d.is_dir());
        let mut watcher = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
        for d in &self.wanted {
            if d.is_dir() && !watched.contains(d) {
                watcher
                    .watch(d, RecursiveMode::NonRecursive)
                    .map_err(|e| watch_error(&self.team, e))?;
                watched.push(d.clone());
            }
        }
        Ok(())
    }
}

/// A write to a `*.json` file, or a watched directory appearing or going.
fn matters(event: &notify::Event, dirs: &[PathBuf]) -> bool {
    if is_read_only(&event.kind) {
        return false;
    }
    event
        .paths
        .iter()
        .any(|p| is_data_file(p) || dirs.iter().any(|w| w == p))
}

fn is_data_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".json"))
}

fn watch_error(team: &str, e: notify::Error) -> Error {
    Error::Invalid(format!(
        "cannot watch the files of team {team:?} for changes: {e}"
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
                | Ok(Event::InboxChanged { team: t, .. })
                | Ok(Event::Model { team: t, .. }) => t == team,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if ours && tx.send(Input::Changed).is_err() {
                return;
            }
        }
    })
}
