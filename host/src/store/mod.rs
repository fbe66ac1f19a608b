//! The team on disk, in the reference CLI's exact format: paths and names,
//! locks and atomic writes, team config, mailboxes and the task list.
//!
//! No wasm and no async runtime here: the CLI, the runner and tests all call
//! these functions directly. Every read-modify-write of a shared file runs under
//! [`lock::with_lock`]; every write is an atomic replace ([`atomic`]).
//!
//! | file | owns |
//! |---|---|
//! | `paths.rs` | the home directory, path layout, name checks |
//! | `lock.rs` | the cross-process lock (flock + the reference's mkdir lock) |
//! | `atomic.rs` | JSON reads, atomic replace, moving corrupt files aside |
//! | `config.rs` | `teams/{team}/config.json`: the team and its members |
//! | `mailbox.rs` | `teams/{team}/inboxes/{agent}.json` and consumed-message history |
//! | `history_cache.rs` | [`HistoryCache`]: re-reading histories by parsing only what was appended |
//! | `tasks.rs` | `tasks/{team}/{id}.json`: the shared task list |

pub mod atomic;
pub mod config;
pub mod history_cache;
pub mod lock;
pub mod mailbox;
pub mod paths;
pub mod tasks;
pub mod usage;

use std::sync::Arc;

pub use config::{Member, NewMember, NewTeam, TeamConfig};
pub use history_cache::HistoryCache;
pub use lock::LockOptions;
pub use mailbox::{InboxMessage, OutgoingMessage};
pub use paths::{agent_id, Home, TeamPaths};
pub use tasks::{ClaimOutcome, ClaimRefusal, NewTask, Task, TaskStatus, TaskUpdate, Unassigned};
pub use usage::ModelUsage;

use crate::error::Result;

/// A change this process made to a team's files, reported to the
/// [`StoreObserver`] right after the write is on disk. The runner uses it to
/// wake a teammate without polling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreEvent {
    /// Messages were appended to `agent`'s inbox.
    InboxAppended {
        /// Sanitised team name.
        team: String,
        /// Recipient name.
        agent: String,
    },
    /// A task was created, changed or deleted.
    TasksChanged {
        /// Sanitised team name.
        team: String,
    },
    /// `config.json` was rewritten.
    ConfigChanged {
        /// Sanitised team name.
        team: String,
    },
}

/// Receives [`StoreEvent`]s. Called synchronously after each write; keep it cheap
/// (notify a channel or a `tokio::sync::Notify`).
pub trait StoreObserver: Send + Sync {
    /// One change was written.
    fn changed(&self, event: &StoreEvent);
}

/// Entry point to the on-disk teams under one home directory. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    home: Home,
    lock: LockOptions,
    observer: Option<Arc<dyn StoreObserver>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("home", &self.home)
            .field("lock", &self.lock)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl Store {
    /// A store over `home` with default lock options and no observer.
    pub fn new(home: Home) -> Self {
        Store {
            home,
            lock: LockOptions::default(),
            observer: None,
        }
    }

    /// Replaces the lock options (wait bound, staleness).
    pub fn with_lock_options(mut self, lock: LockOptions) -> Self {
        self.lock = lock;
        self
    }

    /// Installs the observer told about every write this store makes.
    pub fn with_observer(mut self, observer: Arc<dyn StoreObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The home directory.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// The team called `name` (sanitised; it need not exist yet).
    pub fn team(&self, name: &str) -> Result<Team> {
        Ok(Team {
            paths: self.home.team_paths(name)?,
            store: self.clone(),
        })
    }

    /// Names of the teams that have a `config.json`, sorted.
    pub fn list_teams(&self) -> Result<Vec<String>> {
        let dir = self.home.teams_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(crate::Error::io("read", dir, e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("config.json").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }

    fn emit(&self, event: StoreEvent) {
        if let Some(o) = &self.observer {
            o.changed(&event);
        }
    }
}

/// One team's files. Obtained from [`Store::team`]; its methods live in
/// `config.rs`, `mailbox.rs` and `tasks.rs`.
#[derive(Debug, Clone)]
pub struct Team {
    paths: TeamPaths,
    store: Store,
}

impl Team {
    /// The sanitised team name.
    pub fn name(&self) -> &str {
        self.paths.name()
    }

    /// Every path of this team.
    pub fn paths(&self) -> &TeamPaths {
        &self.paths
    }

    /// The store this team belongs to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn lock_opts(&self) -> &LockOptions {
        &self.store.lock
    }

    fn emit(&self, event: StoreEvent) {
        self.store.emit(event);
    }
}

/// For tests: team `t` in a fresh temporary home, with the lead and one
/// member per name of `members`. Keep the directory alive while the team is
/// used.
#[cfg(test)]
pub(crate) fn test_team(members: &[&str]) -> (tempfile::TempDir, Team) {
    let tmp = tempfile::tempdir().unwrap();
    let team = Store::new(Home::new(tmp.path())).team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in members {
        team.add_member(NewMember {
            name: name.to_string(),
            ..Default::default()
        })
        .unwrap();
    }
    (tmp, team)
}
