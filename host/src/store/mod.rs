//! Team state: the types every backend stores (config, members, inbox
//! entries, tasks, usage), the rules that act on them, and the seam —
//! [`TeamStore`] — that backends implement. [`Store`] and [`Team`] are the
//! handles the rest of the crate uses; neither knows where state lives.
//!
//! Nothing here knows wasm, the runner, the sandbox or the CLI (a check in
//! `scripts/check-layers` keeps it so).
//!
//! | file | owns |
//! |---|---|
//! | `backend.rs` | [`TeamStore`] and [`backend::TaskTxn`]: what a backend must do, and why it is synchronous |
//! | `names.rs` | which team and agent names are accepted, sanitising, ids; `names/new_name.rs`: what a new member may be called (no look-alike of the lead, the person, the host or another member) |
//! | `config.rs` | the team and its members; member rules (unique names, colours); the team's lead key, public half |
//! | `mailbox.rs` | inbox entries; sending, broadcasting, consuming |
//! | `lead_guard.rs` | [`LeadGuard`]: signing lead entries into keyed inboxes (a launch key, or the team's key for a recipient), screening the inboxes this process reads for its teammates |
//! | `history_cache.rs` | [`HistoryCache`]: re-reading histories by reading only what was appended |
//! | `tasks.rs` | the shared task list and its rules (ids, dependencies, claims) |
//! | `task_writes.rs` | one pass over the task list, and the event that says what it wrote, stamped at the write ([`TasksWritten`]) |
//! | `usage.rs` | per-teammate model usage records |
//! | `files/` | [`FileStore`]: the reference CLI's files under a home directory (the default) |
//! | `fenced.rs` | [`FencedStore`]: a store whose writes first ask a [`fenced::Fence`] (a host's lease) |
//! | `memory.rs` | [`MemoryStore`]: everything in memory, for fast tests |
//! | `nats/` | [`NatsStore`]: teams on a NATS JetStream server, shared across hosts |

pub mod backend;
pub mod config;
mod deliver_many;
pub mod failover;
mod failover_memory;
pub mod fenced;
pub mod files;
pub mod history_cache;
pub mod lead_guard;
pub mod mailbox;
pub mod memory;
pub mod names;
pub mod nats;
mod task_writes;
pub mod tasks;
pub mod usage;

#[cfg(test)]
mod contract_tests;

use std::sync::Arc;

pub use backend::TeamStore;
pub use config::{Member, NewMember, NewTeam, TeamConfig, TEAM_LEAD_KEY_FIELD};
pub use failover::{Failover, HostLease, LeaseState, Revision, RunRecord};
pub use failover_memory::MemoryFailover;
pub use fenced::{Fence, FencedStore};
pub use files::{FileStore, LockOptions};
pub use history_cache::HistoryCache;
pub use lead_guard::{LeadGuard, LeadKeyring};
pub use mailbox::{InboxMessage, OutgoingMessage};
pub use memory::MemoryStore;
pub use names::agent_id;
pub use nats::{NatsSecurity, NatsStore, NatsUrl};
pub use tasks::{ClaimOutcome, ClaimRefusal, NewTask, Task, TaskStatus, TaskUpdate, Unassigned};
pub use usage::ModelUsage;

use crate::error::Result;

/// Runs a store call on one of tokio's blocking threads and waits for it
/// ([`crate::blocking::try_run`]). The store is synchronous ([`backend`]
/// says why); an async caller that called it on its own thread would hold
/// a runtime worker through the store's locks and synced writes, and a
/// group commit (`files/combine.rs`) could then take in no more callers at
/// once than the runtime has workers.
pub(crate) use crate::blocking::try_run as blocking;

/// The tasks one pass over a team's task list wrote, as they were written,
/// and when: stamped inside the pass (under the list's lock, or in the
/// attempt a compare-and-swap store committed), so the stamps of two passes
/// are in the order of their writes, whatever order their events arrive in.
/// A reader that shows task changes beside messages (stamped at their
/// writing too) orders both by these stamps, and sees every state a task
/// went through, not the list as it is when the event is handled.
#[derive(Debug, Clone, PartialEq)]
pub struct TasksWritten {
    /// When the pass wrote them.
    pub at: std::time::SystemTime,
    /// The tasks it created or changed, as written (a removed task is not
    /// in it).
    pub tasks: Vec<Task>,
}

impl Eq for TasksWritten {}

/// A change to a team's state, reported to a [`StoreObserver`]: by a
/// [`Store`] handle right after its own write is durable, and by a
/// backend's change feed ([`Team::watch`]) for writes by anyone. The runner
/// uses it to wake a teammate without polling; the view to redraw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreEvent {
    /// Messages were appended to `agent`'s inbox (a feed may also report a
    /// take, which rewrites the inbox: a wake-up that finds nothing).
    InboxAppended {
        /// Sanitised team name.
        team: String,
        /// Recipient name (its file stem, when heard through a feed).
        agent: String,
    },
    /// Entries were taken from `agent`'s inbox by this store: its unread
    /// entries changed, and there is nothing new to read (a runner is not
    /// woken). Only a store reports it; a feed hears a take as
    /// [`StoreEvent::InboxAppended`].
    InboxTaken {
        /// Sanitised team name.
        team: String,
        /// Whose inbox.
        agent: String,
    },
    /// A task was created, changed or deleted.
    TasksChanged {
        /// Sanitised team name.
        team: String,
        /// What this process's pass wrote, as it was at the write; `None`
        /// when heard through a feed (another process wrote it: read the
        /// list for its state).
        written: Option<TasksWritten>,
    },
    /// The config was rewritten, or the team created or deleted.
    ConfigChanged {
        /// Sanitised team name.
        team: String,
    },
}

impl StoreEvent {
    /// The (sanitised) name of the team the change is in.
    pub fn team(&self) -> &str {
        match self {
            StoreEvent::InboxAppended { team, .. }
            | StoreEvent::InboxTaken { team, .. }
            | StoreEvent::TasksChanged { team, .. }
            | StoreEvent::ConfigChanged { team } => team,
        }
    }
}

/// Receives [`StoreEvent`]s. Called synchronously after each write (or on a
/// feed's thread); keep it cheap (notify a channel or a `tokio::sync::Notify`).
pub trait StoreObserver: Send + Sync {
    /// One change was written.
    fn changed(&self, event: &StoreEvent);

    /// Who this observer is, for echoes: a task pass of a [`Store`] whose
    /// observer has this key tells it what it wrote, and a feed reporting
    /// to an observer of the same key may leave that write out
    /// ([`backend::TaskTxn::announced_to`]). The default is the observer's
    /// address; an observer that passes events on to another returns that
    /// one's key.
    fn echo_key(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>() as usize
    }
}

/// Entry point to the teams of one backend. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn TeamStore>,
    observer: Option<Arc<dyn StoreObserver>>,
    lead_guard: Option<Arc<LeadGuard>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .field("observer", &self.observer.is_some())
            .field("lead_guard", &self.lead_guard)
            .finish()
    }
}

impl Store {
    /// The reference-compatible file store under `home`, with default lock
    /// options and no observer.
    pub fn new(home: impl AsRef<std::path::Path>) -> Self {
        Store::with_backend(Arc::new(FileStore::new(home)))
    }

    /// A store over any backend.
    pub fn with_backend(backend: Arc<dyn TeamStore>) -> Self {
        Store {
            backend,
            observer: None,
            lead_guard: None,
        }
    }

    /// A fresh, empty in-memory store.
    pub fn in_memory() -> Self {
        Store::with_backend(Arc::new(MemoryStore::new()))
    }

    /// Installs the observer told about every write this store makes.
    pub fn with_observer(mut self, observer: Arc<dyn StoreObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Installs the guard that signs lead entries into keyed inboxes and
    /// screens a keyed teammate's own inbox ([`LeadGuard`]).
    pub fn with_lead_guard(mut self, guard: Arc<LeadGuard>) -> Self {
        self.lead_guard = Some(guard);
        self
    }

    /// The installed [`LeadGuard`], if any.
    pub fn lead_guard(&self) -> Option<&Arc<LeadGuard>> {
        self.lead_guard.as_ref()
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn TeamStore> {
        &self.backend
    }

    /// The file backend, when this store is one (for tools and tests that
    /// deal with the reference's files themselves).
    pub fn file_store(&self) -> Option<&FileStore> {
        self.kind().downcast_ref::<FileStore>()
    }

    /// The NATS backend, when this store is one (for what only a NATS
    /// server has: its URL and security for a child process, `teamhost
    /// store`'s export and import).
    pub fn nats_store(&self) -> Option<&NatsStore> {
        self.kind().downcast_ref::<NatsStore>()
    }

    /// The backend whose kind this store is: the one underneath a fence
    /// ([`FencedStore`]), else the backend itself. The one place a backend
    /// is downcast.
    fn kind(&self) -> &dyn std::any::Any {
        let any: &dyn std::any::Any = &*self.backend;
        match any.downcast_ref::<FencedStore>() {
            Some(fenced) => &**fenced.inner() as &dyn std::any::Any,
            None => any,
        }
    }

    /// The team called `name` (sanitised; it need not exist yet).
    pub fn team(&self, name: &str) -> Result<Team> {
        Ok(Team {
            name: names::sanitize_team_name(name)?,
            store: self.clone(),
        })
    }

    /// Names of the teams that exist, sorted.
    pub fn list_teams(&self) -> Result<Vec<String>> {
        self.backend.list_teams()
    }

    /// The key of the installed observer ([`StoreObserver::echo_key`]).
    fn observer_key(&self) -> Option<usize> {
        self.observer.as_ref().map(|o| o.echo_key())
    }

    fn emit(&self, event: StoreEvent) {
        if let Some(o) = &self.observer {
            o.changed(&event);
        }
    }
}

/// One team. Obtained from [`Store::team`]; its methods live in
/// `config.rs`, `mailbox.rs`, `tasks.rs` and `usage.rs`.
#[derive(Debug, Clone)]
pub struct Team {
    name: String,
    store: Store,
}

impl Team {
    /// The sanitised team name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store this team belongs to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Where the team's config lives, for messages.
    pub fn location(&self) -> std::path::PathBuf {
        self.backend().config_location(&self.name)
    }

    /// This team's files, when its store is the file store (for tools and
    /// tests that deal with the reference's files themselves). Code that
    /// works with any store never needs it.
    pub fn file_paths(&self) -> Option<files::TeamPaths> {
        self.store.file_store()?.paths(&self.name).ok()
    }

    /// Starts the store's change feed for this team (see
    /// [`TeamStore::watch`]); it runs until the guard is dropped.
    pub fn watch(&self, observer: Arc<dyn StoreObserver>) -> Result<Box<dyn backend::FeedGuard>> {
        self.backend().watch(&self.name, observer)
    }

    fn backend(&self) -> &dyn TeamStore {
        &*self.store.backend
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
    let team = Store::new(tmp.path()).team("t").unwrap();
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
