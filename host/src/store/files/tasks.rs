//! `tasks/{team}/`: one `{id}.json` per task, `.highwatermark` (the highest
//! id a deleted task had, a bare decimal without newline, as the reference
//! writes it) and `.lock` (the empty file whose lock guards the whole list).
//!
//! A pass ([`update`]) holds the list lock (`.lock` → the reference's
//! `.lock.lock` directory) for its whole cycle, plus the per-task lock
//! (`{id}.json.lock`) of each file it reads for changing and rewrites, so
//! neither another teamhost process nor a Claude Code process can
//! interleave. A pass runs its change once.

use super::lock::{with_lock, LockOptions};
use super::own_writes::OwnWrites;
use super::paths::TeamPaths;
use super::task_cache::TaskCaches;
use crate::durable::{read_json_or_move_aside, swap_path, write_atomic, write_json_locked};
use crate::error::{Error, Result};
use crate::store::backend::{TaskTxn, TasksChange};
use crate::store::names::parse_task_id;
use crate::store::Task;

/// Every readable task, by numeric id (from the cache, which reads only
/// the files that changed). A task file that does not parse is skipped with
/// a warning.
pub(super) fn list(paths: &TeamPaths, caches: &TaskCaches) -> Result<Vec<Task>> {
    caches.list(paths.tasks_dir())
}

/// Runs `change` once under the list lock.
pub(super) fn update(
    paths: &TeamPaths,
    lock: &LockOptions,
    caches: &TaskCaches,
    own: &OwnWrites,
    change: TasksChange<'_>,
) -> Result<()> {
    let target = paths.tasks_lock_target();
    if !target.exists() {
        // Not for a team that is gone: its task list is not made again.
        if !paths.team_dir().is_dir() {
            return Err(super::deleted::deleted(paths));
        }
        // The reference keeps `.lock` as an empty regular file.
        std::fs::create_dir_all(paths.tasks_dir())
            .map_err(|e| Error::io("create", paths.tasks_dir(), e))?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&target)
            .map_err(|e| Error::io("create", &target, e))?;
    }
    with_lock(&target, lock, "a task list pass", || {
        change(&mut FileTasks {
            paths,
            lock,
            caches,
            own,
            announced: None,
        })
    })
    .map_err(|e| match paths.tasks_dir().exists() {
        true => e,
        false => super::deleted::deleted(paths),
    })
}

/// A pass over the files, inside the list lock.
struct FileTasks<'a> {
    paths: &'a TeamPaths,
    lock: &'a LockOptions,
    caches: &'a TaskCaches,
    /// Where each file written is noted, under its lock, when the pass's
    /// observer hears of it ([`TaskTxn::announced_to`]).
    own: &'a OwnWrites,
    announced: Option<usize>,
}

impl FileTasks<'_> {
    /// Writes `task` to `path` (its lock held), marked as this store's
    /// write when the pass's observer hears of it.
    fn write(&self, path: &std::path::Path, task: &Task) -> Result<()> {
        let Some(observer) = self.announced else {
            return write_json_locked(path, task);
        };
        let mark = self.own.writing(path, observer);
        write_json_locked(path, task)?;
        mark.done();
        Ok(())
    }
}

impl TaskTxn for FileTasks<'_> {
    fn next_id(&mut self) -> Result<u64> {
        let on_disk = self.caches.max_id(self.paths.tasks_dir())?;
        Ok(on_disk.max(highwatermark(self.paths)?) + 1)
    }

    fn get(&mut self, id: &str) -> Result<Option<Task>> {
        // A corrupt file is moved aside (its id stays used) and reported.
        read_json_or_move_aside(&self.paths.task(id)?)
    }

    fn all(&mut self) -> Result<Vec<Task>> {
        // Exact: the cache drains every change queued before this point, and
        // no other writer of the list can act while the list lock is held.
        list(self.paths, self.caches)
    }

    fn scan(&mut self, f: &mut dyn FnMut(&[&Task])) -> Result<()> {
        // Exact as `all` is; the cache's own tasks, lent.
        self.caches.with(self.paths.tasks_dir(), |tasks| {
            let lent: Vec<&Task> = tasks.collect();
            f(&lent)
        })
    }

    fn put(&mut self, task: &Task) -> Result<()> {
        let path = self.paths.task(&task.id)?;
        with_lock(&path, self.lock, "a task write", || self.write(&path, task))
    }

    fn modify(
        &mut self,
        id: &str,
        f: &mut dyn FnMut(&mut Task) -> Result<bool>,
    ) -> Result<Option<Task>> {
        let path = self.paths.task(id)?;
        with_lock(&path, self.lock, "a task update", || {
            let Some(mut task) = read_json_or_move_aside::<Task>(&path)? else {
                return Ok(None);
            };
            if f(&mut task)? {
                self.write(&path, &task)?;
            }
            Ok(Some(task))
        })
    }

    fn remove(&mut self, id: &str) -> Result<()> {
        let n = parse_task_id(id)?;
        if n > highwatermark(self.paths)? {
            write_atomic(&self.paths.highwatermark(), n.to_string().as_bytes())?;
        }
        let path = self.paths.task(id)?;
        with_lock(&path, self.lock, "a task deletion", || {
            // With a `.swap` sibling an older version may have left.
            for file in [swap_path(&path), path.clone()] {
                match std::fs::remove_file(&file) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io("remove", &file, e)),
                }
            }
            Ok(())
        })
    }

    fn announced_to(&mut self, observer: usize) {
        self.announced = Some(observer);
    }
}

fn highwatermark(paths: &TeamPaths) -> Result<u64> {
    let path = paths.highwatermark();
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok(s.trim().parse().unwrap_or_else(|_| {
            tracing::warn!(file = %path.display(), "ignoring unreadable .highwatermark");
            0
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(Error::io("read", path, e)),
    }
}
