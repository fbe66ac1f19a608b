//! The task files of each team as last read, so that listing a team's tasks
//! reads only the files that changed since, not every file every time.
//!
//! Each team's cache watches `tasks/{team}/` with its own inotify instance
//! and, before answering, drains the events queued so far: the kernel queues
//! an event inside the system call that changed the file, so every change
//! made before the drain — by this process, another teamhost process or
//! Claude Code (which rewrites task files in place) — is seen. A listing
//! under the task-list lock is therefore exact; one without it is as fresh
//! as a direct read would be. Only the files named by events are read again.
//! When the kernel drops events (queue overflow) or the directory is
//! replaced, everything is read again.
//!
//! Without inotify (no instances left), each listing checks every file's
//! identity (inode, size, modification and change time) and reads again
//! what changed, plus any file whose stamp was racy when read
//! ([`super::stamp`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::inotify::{Inotify, GONE, OVERFLOW};
use super::stamp::{is_racy, Stamp};
use crate::durable::read_json;
use crate::error::{Error, Result};
use crate::store::names::parse_task_id;
use crate::store::Task;

/// Every team's cache, by tasks directory.
#[derive(Debug, Default)]
pub(super) struct TaskCaches {
    teams: Mutex<HashMap<PathBuf, TeamTasks>>,
    /// Never use inotify (tests of stat mode).
    stat_only: bool,
}

#[derive(Debug, Default)]
struct TeamTasks {
    /// inotify on the directory; `None`: stat mode (or not set up yet).
    watch: Option<Inotify>,
    /// Whether `entries` holds a full listing (kept current by events).
    complete: bool,
    /// Ids whose files changed since they were read.
    dirty: BTreeSet<u64>,
    entries: BTreeMap<u64, Entry>,
    /// The highest id of a quarantined `{id}.json.corrupt-*` file.
    aside_max: u64,
}

#[derive(Debug)]
struct Entry {
    stamp: Stamp,
    /// `None`: the file did not parse (reported when read).
    task: Option<Task>,
    /// Modified just before it was read ([`super::stamp::RACY`]).
    racy: bool,
}

impl TaskCaches {
    /// Runs `f` on the current tasks of `dir`, readable ones by id.
    pub(super) fn with<R>(
        &self,
        dir: &Path,
        f: impl FnOnce(&mut dyn Iterator<Item = &Task>) -> R,
    ) -> Result<R> {
        let mut teams = self.teams.lock().unwrap_or_else(|p| p.into_inner());
        let team = teams.entry(dir.to_path_buf()).or_default();
        team.refresh(dir, self.stat_only)?;
        let mut tasks = team.entries.values().filter_map(|e| e.task.as_ref());
        Ok(f(&mut tasks))
    }

    /// Every readable task of `dir`, by id.
    pub(super) fn list(&self, dir: &Path) -> Result<Vec<Task>> {
        self.with(dir, |tasks| tasks.cloned().collect())
    }

    /// The highest id in use in `dir`: task files (readable or not) and
    /// quarantined ones.
    pub(super) fn max_id(&self, dir: &Path) -> Result<u64> {
        let mut teams = self.teams.lock().unwrap_or_else(|p| p.into_inner());
        let team = teams.entry(dir.to_path_buf()).or_default();
        team.refresh(dir, self.stat_only)?;
        let on_disk = team.entries.keys().next_back().copied().unwrap_or(0);
        Ok(on_disk.max(team.aside_max))
    }

    /// A cache that never uses inotify, for tests of stat mode.
    #[cfg(test)]
    pub(super) fn stat_only() -> TaskCaches {
        TaskCaches {
            stat_only: true,
            ..TaskCaches::default()
        }
    }

    /// Drops what is known of `dir` (its team was deleted).
    pub(super) fn forget(&self, dir: &Path) {
        self.teams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(dir);
    }
}

impl TeamTasks {
    fn refresh(&mut self, dir: &Path, stat_only: bool) -> Result<()> {
        if self.watch.is_none() && !stat_only {
            // Watch first, then list: a change between the two is an event.
            self.watch = Inotify::watch(
                dir,
                libc::IN_CREATE
                    | libc::IN_MODIFY
                    | libc::IN_CLOSE_WRITE
                    | libc::IN_MOVED_TO
                    | libc::IN_MOVED_FROM
                    | libc::IN_DELETE
                    | libc::IN_ATTRIB
                    | libc::IN_DELETE_SELF
                    | libc::IN_MOVE_SELF,
            );
            self.complete = false;
        }
        let Some(watch) = &self.watch else {
            return self.scan(dir, true);
        };
        let (mut reset, mut gone) = (false, false);
        let (dirty, aside_max) = (&mut self.dirty, &mut self.aside_max);
        watch.drain(|mask, name| {
            if mask & OVERFLOW != 0 {
                reset = true;
            } else if mask & GONE != 0 {
                gone = true;
            } else if let Some(id) = task_file_id(name) {
                dirty.insert(id);
            } else if let Some(id) = aside_file_id(name) {
                *aside_max = (*aside_max).max(id);
            }
        });
        if gone {
            // The directory was removed or replaced: start over next time.
            self.watch = None;
            self.complete = false;
            return self.scan(dir, true);
        }
        if reset || !self.complete {
            self.dirty.clear();
            self.scan(dir, false)?;
            self.complete = true;
            return Ok(());
        }
        for id in std::mem::take(&mut self.dirty) {
            let path = dir.join(format!("{id}.json"));
            match std::fs::metadata(&path) {
                Ok(meta) => {
                    self.entries.insert(id, read_entry(&path, &meta));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.entries.remove(&id);
                }
                Err(e) => return Err(Error::io("stat", &path, e)),
            }
        }
        Ok(())
    }

    /// Lists `dir` and reads the files that are new or changed. With
    /// `trust_stamps` (stat mode), an unchanged identity keeps the entry,
    /// unless it was racy; otherwise every file is read.
    fn scan(&mut self, dir: &Path, trust_stamps: bool) -> Result<()> {
        let listing = match std::fs::read_dir(dir) {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.entries.clear();
                return Ok(());
            }
            Err(e) => return Err(Error::io("read", dir, e)),
        };
        let mut seen = BTreeSet::new();
        for entry in listing.filter_map(|e| e.ok()) {
            let name = entry.file_name();
            let name = name.as_encoded_bytes();
            if let Some(id) = aside_file_id(name) {
                self.aside_max = self.aside_max.max(id);
                continue;
            }
            let Some(id) = task_file_id(name) else {
                continue;
            };
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue; // removed meanwhile
            };
            seen.insert(id);
            let keep = trust_stamps
                && self
                    .entries
                    .get(&id)
                    .is_some_and(|e| !e.racy && e.stamp == Stamp::of(&meta));
            if !keep {
                self.entries.insert(id, read_entry(&path, &meta));
            }
        }
        self.entries.retain(|id, _| seen.contains(id));
        Ok(())
    }
}

/// Reads one task file whose metadata is `meta`.
fn read_entry(path: &Path, meta: &std::fs::Metadata) -> Entry {
    let task = match read_json::<Task>(path) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("skipping an unreadable task: {e}");
            None
        }
    };
    Entry {
        stamp: Stamp::of(meta),
        task,
        racy: is_racy(meta),
    }
}

/// `{id}.json` → id.
fn task_file_id(name: &[u8]) -> Option<u64> {
    let stem = name.strip_suffix(b".json")?;
    parse_task_id(std::str::from_utf8(stem).ok()?).ok()
}

/// `{id}.json.corrupt-…` → id.
fn aside_file_id(name: &[u8]) -> Option<u64> {
    let at = name.windows(14).position(|w| w == b".json.corrupt-")?;
    parse_task_id(std::str::from_utf8(&name[..at]).ok()?).ok()
}

#[cfg(test)]
mod tests;
