//! How many sub-agents a teammate has, across its whole tree, for the
//! live view and `teamhost status`: the counters, and the record
//! ([`TreeRecord`], kept by [`crate::home::subagent_counts`] at
//! `{home}/subagents/{team}/{name}.json`) rewritten whenever a sub-agent
//! starts, finishes or is resumed.
//!
//! The home, not the team's store: sub-agents are this machine's (they live
//! in the teammate's process), like the process records under `started/`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::SubagentLimits;
use crate::home::Home;

use crate::home::subagent_counts::{path, TreeRecord};

/// One teammate's counters, shared by every seat of its tree.
#[derive(Debug)]
pub struct Tree {
    path: Option<PathBuf>,
    limits: SubagentLimits,
    running: AtomicUsize,
    started: AtomicUsize,
    deepest: AtomicU32,
    alive: AtomicUsize,
    /// Serialises the writes: each writes the counters as they are then.
    write: Mutex<()>,
    /// Wakes waiters after each change ([`Tree::until`]). A `Notify`, not
    /// a watch channel: every teammate holds a tree for its whole life, and
    /// a watch channel's shared part is a third of a KiB more per teammate.
    changes: tokio::sync::Notify,
}

impl Tree {
    /// The counters of teammate `name` of `team`, recorded under `home`.
    pub fn new(home: &Home, team: &str, name: &str, limits: SubagentLimits) -> Arc<Tree> {
        Arc::new(Tree {
            path: path(home, team, name),
            limits,
            running: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
            deepest: AtomicU32::new(0),
            alive: AtomicUsize::new(0),
            write: Mutex::new(()),
            changes: tokio::sync::Notify::new(),
        })
    }

    /// Waits until the counters satisfy `done` (checked after every change).
    pub async fn until(&self, done: impl Fn(&TreeRecord) -> bool) {
        loop {
            // Registered before the look: a change between the look and the
            // wait still wakes it.
            let changed = self.changes.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if done(&self.record()) {
                return;
            }
            changed.await;
        }
    }

    fn changed(&self) {
        self.changes.notify_waiters();
    }

    /// The counters now.
    pub fn record(&self) -> TreeRecord {
        TreeRecord {
            running: self.running.load(Ordering::SeqCst),
            started: self.started.load(Ordering::SeqCst),
            deepest: self.deepest.load(Ordering::SeqCst),
            max_depth: self.limits.max_depth,
            max_running: self.limits.max_running,
            alive: self.alive.load(Ordering::SeqCst),
        }
    }

    /// A sub-agent at `depth` started (counted at once; [`Tree::saved`]
    /// writes the record).
    pub(crate) fn started(&self, depth: u32) {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.deepest.fetch_max(depth, Ordering::SeqCst);
        self.running.fetch_add(1, Ordering::SeqCst);
        self.alive.fetch_add(1, Ordering::SeqCst);
        self.changed();
    }

    /// A sub-agent's task ended for good (after its cleanup).
    pub(crate) fn gone(self: &Arc<Self>) {
        let _ = self
            .alive
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.changed();
        self.save();
    }

    /// Writes the record now and returns when it is written (so what the
    /// parent says next, the record already shows).
    pub(crate) async fn saved(self: &Arc<Self>) {
        let me = self.clone();
        let _ = tokio::task::spawn_blocking(move || me.write()).await;
    }

    pub(crate) fn resumed(self: &Arc<Self>) {
        self.running.fetch_add(1, Ordering::SeqCst);
        self.changed();
        self.save();
    }

    pub(crate) fn ended(self: &Arc<Self>) {
        let _ = self
            .running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.changed();
        self.save();
    }

    /// Writes the record off the executor, without fsync (a view's record
    /// need not survive a crash); a failure only costs the view its line.
    fn save(self: &Arc<Self>) {
        if self.path.is_none() {
            return;
        }
        let me = self.clone();
        let write = move || me.write();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(write)),
            Err(_) => write(),
        }
    }

    fn write(&self) {
        let Some(path) = &self.path else {
            return;
        };
        // The counters are read under the lock: the last write holds the
        // last values, whatever order the writes ran in.
        let _guard = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let record = self.record();
        if let Err(e) = crate::durable::write_json_relaxed(path, &record) {
            tracing::debug!(error = %e, ?record, "the sub-agent record was not written");
        }
    }
}
