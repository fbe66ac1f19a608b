//! How many sub-agents a teammate has, across its whole tree, for the
//! live view and `teamhost status`: a small record under the host's home,
//! `{home}/subagents/{team}/{name}.json`, rewritten whenever a sub-agent
//! starts, finishes or is resumed.
//!
//! The home, not the team's store: sub-agents are this machine's (they live
//! in the teammate's process), like the process records under `started/`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::SubagentLimits;
use crate::home::Home;

/// What `teamhost status` and the view show about a teammate's sub-agents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeRecord {
    /// Running now, at any depth.
    pub running: usize,
    /// Started over the teammate's life, at any depth.
    pub started: usize,
    /// The deepest one started (1: the teammate's own).
    pub deepest: u32,
    /// The depth limit.
    pub max_depth: u32,
    /// The limit of running sub-agents per agent.
    pub max_running: usize,
    /// Sub-agents whose task still exists: running, or ended and waiting
    /// to be resumed (0 once everything a teammate started is gone,
    /// worktrees cleaned up included).
    #[serde(default)]
    pub alive: usize,
}

impl TreeRecord {
    /// For a narrow column: `subs 2/5 d2/2` (running / started, deepest /
    /// depth limit).
    pub fn short(&self) -> String {
        format!(
            "subs {}/{} d{}/{}",
            self.running, self.started, self.deepest, self.max_depth
        )
    }

    /// In a few words: `2 running, 5 started, depth 2/2`.
    pub fn describe(&self) -> String {
        format!(
            "sub-agents: {} running, {} started, depth {}/{}",
            self.running, self.started, self.deepest, self.max_depth
        )
    }
}

/// Where `name`'s record is.
pub fn path(home: &Home, team: &str, name: &str) -> Option<PathBuf> {
    home.subagent_counts(team, name).ok()
}

/// `name`'s record, if it ever started a sub-agent on this machine.
pub fn read(home: &Home, team: &str, name: &str) -> Option<TreeRecord> {
    let text = std::fs::read_to_string(path(home, team, name)?).ok()?;
    serde_json::from_str(&text).ok()
}

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
    /// The counters after each change, for waiters ([`Tree::until`]).
    changes: tokio::sync::watch::Sender<TreeRecord>,
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
            changes: tokio::sync::watch::channel(TreeRecord::default()).0,
        })
    }

    /// Waits until the counters satisfy `done` (checked after every change).
    pub async fn until(&self, done: impl Fn(&TreeRecord) -> bool) {
        let mut rx = self.changes.subscribe();
        let _ = rx.wait_for(|_| done(&self.record())).await;
    }

    fn changed(&self) {
        self.changes.send_replace(self.record());
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
