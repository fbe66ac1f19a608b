//! [`Host`]: its state, its constructors and what it gives access to (the
//! store, the home, the runtime, a team). What it does is in the files of
//! their purpose: spawning (`spawn.rs`), talking and watching
//! (`watching.rs`), stopping (`stopping.rs`); its settings in
//! `options.rs`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::{Event, HostOptions, TeammateInfo, TeammateState};
use crate::backends::Spawned;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::runner::wake::WakeHub;
use crate::runner::watch::TeamWatch;
use crate::runtime::Runtime;
use crate::store::{NewTeam, Store, Team, TeamConfig};

/// What runs once, on the blocking pool, just before a team's state is
/// deleted: the team, still whole, and its teammates as this host last saw
/// them ([`Host::before_delete`](Host::before_delete)).
pub type LastLook = Box<dyn FnOnce(&Team, Vec<TeammateInfo>) + Send>;

/// Runs teams of WebAssembly teammates inside the caller's tokio runtime.
/// Cheap to clone; all clones drive the same teammates. Spawning needs a
/// multi-threaded tokio runtime.
#[derive(Clone)]
pub struct Host {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) store: Store,
    /// The machine-local home: component cache, logs, worktrees, process
    /// records. Apart from the store, which may live elsewhere.
    pub(super) home: Home,
    pub(super) runtime: Runtime,
    pub(super) hub: Arc<WakeHub>,
    pub(super) events: broadcast::Sender<Event>,
    pub(super) opts: HostOptions,
    pub(super) teammates: Mutex<super::running::Running>,
    /// The teammates [`Host::compile`] works for, by `(team, name)`, until
    /// they are spawned: `Compiling`, then `Starting`.
    pub(super) joining: Mutex<BTreeMap<(String, String), TeammateState>>,
    /// File watches of the teams this host runs teammates of.
    pub(super) watches: Mutex<HashMap<String, TeamWatch>>,
    /// The leases this host holds, and the fence of its store.
    pub(super) leases: Arc<super::lease::table::HostLeases>,
    /// What to run once before a team's state is deleted, by team
    /// ([`Host::before_delete`]).
    pub(super) last_looks: Mutex<HashMap<String, LastLook>>,
    /// Spawns under way and stops closing their teams to new ones
    /// (`starting.rs`).
    pub(super) starts: Arc<super::starting::Starts>,
}

impl Host {
    /// A host over `home` with default options.
    pub fn new(home: Home) -> Result<Host> {
        Host::with_options(home, HostOptions::default())
    }

    /// A host over `home` with `opts`: teams in the file store under
    /// `home`, machine-local files under `home` too.
    pub fn with_options(home: Home, opts: HostOptions) -> Result<Host> {
        Host::with_store(home.clone(), Store::new(home), opts)
    }

    /// A host whose teams live in `store` (any backend) and whose
    /// machine-local files (component cache, logs, worktrees, process
    /// records) live under `home`. The store's observer is replaced by the
    /// host's own, which wakes its teammates.
    ///
    /// The first host of a process also removes what killed hosts left of
    /// their Bash calls ([`crate::tools::cgroup::sweep_dead_hosts`]).
    pub fn with_store(home: Home, store: Store, opts: HostOptions) -> Result<Host> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| {
            crate::tools::cgroup::sweep_dead_hosts();
        });
        let cache = opts
            .cache_dir
            .clone()
            .unwrap_or_else(|| home.component_cache());
        let runtime = Runtime::new(Some(cache)).map_err(|e| Error::Component {
            path: PathBuf::new(),
            message: format!("cannot start the WebAssembly engine: {e:#}"),
        })?;
        let (events, _) = broadcast::channel(opts.event_capacity);
        let hub = Arc::new(WakeHub::new(events.clone()));
        let me = opts
            .identity
            .clone()
            .unwrap_or_else(|| super::lease::HostIdentity::this_process().clone());
        let (leases, store) = super::lease::table::HostLeases::new(me, opts.lease, store);
        let store = store.with_observer(hub.clone());
        // The keys of `sign_lead_entries` live in this host's memory and
        // in the home's keyring (0600), for the lead's commands.
        let store = match store.lead_guard() {
            None if opts.backends.sign_lead_entries => {
                let ring = Arc::new(crate::home::lead_keys::HomeKeyring::new(home.clone()));
                store.with_lead_guard(Arc::new(crate::store::LeadGuard::from_keyring(ring)))
            }
            _ => store,
        };
        Ok(Host {
            inner: Arc::new(Inner {
                store,
                home,
                runtime,
                hub,
                events,
                opts,
                teammates: Mutex::default(),
                joining: Mutex::new(BTreeMap::new()),
                watches: Mutex::new(HashMap::new()),
                leases,
                last_looks: Mutex::new(HashMap::new()),
                starts: Arc::default(),
            }),
        })
    }

    /// The store (its writes wake this host's teammates).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The machine-local home (component cache, logs, worktrees, process
    /// records).
    pub fn home(&self) -> &Home {
        &self.inner.home
    }

    /// Which models this host's teammates may call, and through what
    /// ([`HostOptions::models`]).
    pub fn model_access(&self) -> &super::ModelAccess {
        &self.inner.opts.models
    }

    /// The shared WebAssembly runtime (engine and component cache).
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// The team called `name`.
    pub fn team(&self, name: &str) -> Result<Team> {
        self.inner.store.team(name)
    }

    /// Creates a team with the caller as its lead (`team-lead`).
    pub fn create_team(&self, name: &str, new: NewTeam) -> Result<TeamConfig> {
        self.team(name)?.create(new)
    }
}

pub(super) fn info(team: &str, s: &Spawned) -> TeammateInfo {
    TeammateInfo {
        team: team.to_string(),
        name: s.member.name.clone(),
        agent_id: s.member.agent_id.clone(),
        color: s.member.color.clone().unwrap_or_default(),
        state: s.state.borrow().clone(),
        turns: s.turns.load(Ordering::Relaxed),
    }
}

pub(super) fn watch_of(state: TeammateState) -> tokio::sync::watch::Receiver<TeammateState> {
    tokio::sync::watch::channel(state).1
}
