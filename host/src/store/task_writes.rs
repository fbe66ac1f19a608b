//! One pass over a team's task list, and what it tells this process's
//! observers: the tasks it wrote, as written, stamped inside the pass
//! ([`TasksWritten`]). Every task change of [`Team`] goes through
//! [`Team::write_tasks`], so a reader of the events (the run's event lines)
//! orders task changes by when they were written and sees each state a task
//! went through, as it does messages by their timestamps.

use super::backend::TaskTxn;
use super::{StoreEvent, Task, TasksWritten, Team};
use crate::error::Result;

impl Team {
    /// Runs one pass over the task list (the backend's `update_tasks`) and,
    /// when it wrote anything, tells this process's observers what it
    /// wrote, stamped inside the pass ([`TasksWritten`]): a reader orders
    /// task changes by when they were written, and sees each state a task
    /// went through, however late it handles the event. The pass may run
    /// more than once (a compare-and-swap store retries it): only the last
    /// run's writes and stamp count.
    pub(super) fn write_tasks(
        &self,
        change: &mut dyn FnMut(&mut dyn TaskTxn) -> Result<()>,
    ) -> Result<()> {
        let mut written: Option<(TasksWritten, bool)> = None;
        let observer = self.store.observer_key();
        self.backend().update_tasks(self.name(), &mut |txn| {
            // What this pass writes, this store's observer hears below, in
            // order: the backend's feed to it need not echo it.
            if let Some(key) = observer {
                txn.announced_to(key);
            }
            let mut seen = Recording {
                inner: txn,
                tasks: Vec::new(),
                removed: false,
            };
            change(&mut seen)?;
            let Recording { tasks, removed, .. } = seen;
            written = Some((
                TasksWritten {
                    at: std::time::SystemTime::now(),
                    tasks,
                },
                removed,
            ));
            Ok(())
        })?;
        if let Some((written, removed)) = written {
            if removed || !written.tasks.is_empty() {
                self.emit(StoreEvent::TasksChanged {
                    team: self.name().into(),
                    written: Some(written),
                });
            }
        }
        Ok(())
    }
}

/// A pass's [`TaskTxn`] that keeps what it writes: every task put, and
/// every task a `modify` changed, as stored (the last write of a task wins).
struct Recording<'a> {
    inner: &'a mut dyn TaskTxn,
    tasks: Vec<Task>,
    removed: bool,
}

impl Recording<'_> {
    fn keep(&mut self, task: &Task) {
        self.tasks.retain(|t| t.id != task.id);
        self.tasks.push(task.clone());
    }
}

impl TaskTxn for Recording<'_> {
    fn next_id(&mut self) -> Result<u64> {
        self.inner.next_id()
    }

    fn get(&mut self, id: &str) -> Result<Option<Task>> {
        self.inner.get(id)
    }

    fn all(&mut self) -> Result<Vec<Task>> {
        self.inner.all()
    }

    fn scan(&mut self, f: &mut dyn FnMut(&[&Task])) -> Result<()> {
        self.inner.scan(f)
    }

    fn put(&mut self, task: &Task) -> Result<()> {
        self.inner.put(task)?;
        self.keep(task);
        Ok(())
    }

    fn modify(
        &mut self,
        id: &str,
        f: &mut dyn FnMut(&mut Task) -> Result<bool>,
    ) -> Result<Option<Task>> {
        let mut changed = false;
        let task = self.inner.modify(id, &mut |t| {
            changed = f(t)?;
            Ok(changed)
        })?;
        if let (true, Some(t)) = (changed, &task) {
            self.keep(t);
        }
        Ok(task)
    }

    fn remove(&mut self, id: &str) -> Result<()> {
        self.inner.remove(id)?;
        self.tasks.retain(|t| t.id != id);
        self.removed = true;
        Ok(())
    }

    fn announced_to(&mut self, observer: usize) {
        self.inner.announced_to(observer);
    }
}
