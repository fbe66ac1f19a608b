//! [`Seat`]: one agent's sub-agents — what they are made from
//! ([`SeatConfig`]), the registry, and a sub-agent's instance, built
//! through the one [`Assembly`] (at start, and again when a message resumes
//! it). Starting one and the other [`SubagentHost`](crate::runtime::subagent_host::SubagentHost)
//! calls are in `start.rs`.

use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, Weak};

use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use super::child::{lock, Child, Command};
use super::{Definitions, SubagentLimits};
use crate::home::Home;
use crate::model::ModelClient;
use crate::runtime::subagent_host::SubagentError;
use crate::runtime::{
    Assembled, Assembly, Identity, Instance, ModelSeat, Runtime, SharedParts, TreeBudget,
};
use crate::store::Team;

/// What a seat's sub-agents are made from: the owner's parts, as they were
/// at spawn, and what is the seat's own (depth, limits, definitions,
/// counts).
#[derive(Clone)]
pub struct SeatConfig {
    /// The engine, linker and warm component cache.
    pub runtime: Runtime,
    /// The owner's component (a sub-agent without a definition's runs it).
    pub component: PathBuf,
    /// The machine-local home (worktrees).
    pub home: Home,
    /// The owner's shared parts, which every sub-agent gets unchanged: the
    /// team (for the owner's inbox, and whose names a sub-agent's may not
    /// take), the lead, limits, tool limits, hooks, hidden directories,
    /// poll, and the log its stdout and stderr go to. Their budget is
    /// [`SeatConfig::budget`].
    pub shared: SharedParts,
    /// The owner.
    pub identity: Identity,
    /// The owner's capability directory (canonical).
    pub dir: PathBuf,
    /// The owner's model client: its sub-agents share its meter.
    pub client: ModelClient,
    /// The owner's depth: 0 for a teammate.
    pub depth: u32,
    /// Recursion protection.
    pub limits_sub: SubagentLimits,
    /// The definitions the host trusts.
    pub definitions: Arc<Definitions>,
    /// The teammate's counts, shared by its whole tree.
    pub tree: Arc<super::Tree>,
    /// The teammate's budgets, shared by its whole tree: every sub-agent
    /// draws from them (memory, disk, team writes, sub-agents started).
    pub budget: Arc<TreeBudget>,
    /// The owner is a fork of its parent: it may not fork in turn.
    pub forked: bool,
}

impl SeatConfig {
    /// The team.
    pub(crate) fn team(&self) -> &Team {
        &self.shared.team
    }
}

/// One agent's sub-agents. Dropping it (the agent's instance ended) kills
/// every one still alive.
pub struct Seat {
    pub(super) cfg: SeatConfig,
    pub(super) this: Weak<Seat>,
    /// When the owner is itself a sub-agent: its record.
    pub(super) me: Option<Arc<Child>>,
    pub(super) children: Mutex<Vec<Arc<Child>>>,
    pub(super) started: AtomicUsize,
    /// Notifications for an owner that is a sub-agent (a teammate gets
    /// them in its inbox).
    queue: Mutex<Vec<String>>,
    arrived: Notify,
}

impl Drop for Seat {
    fn drop(&mut self) {
        for c in lock(&self.children).iter() {
            let _ = c.commands.send(Command::Kill { parent_gone: true });
        }
    }
}

impl Seat {
    /// A teammate's seat.
    pub fn new(cfg: SeatConfig) -> Arc<Seat> {
        Seat::with_owner(cfg, None)
    }

    fn with_owner(cfg: SeatConfig, me: Option<Arc<Child>>) -> Arc<Seat> {
        Arc::new_cyclic(|this| Seat {
            cfg,
            this: this.clone(),
            me,
            children: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
            queue: Mutex::new(Vec::new()),
            arrived: Notify::new(),
        })
    }

    /// Sub-agents of this seat's owner running now.
    pub fn running(&self) -> usize {
        lock(&self.children)
            .iter()
            .filter(|c| c.is_running())
            .count()
    }

    /// Its owner's depth (0: a teammate).
    pub fn depth(&self) -> u32 {
        self.cfg.depth
    }

    /// The notifications queued for the owner (a sub-agent), taken.
    pub(crate) fn take_queue(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.queue))
    }

    /// Waits until a notification is queued for the owner.
    pub(crate) async fn arrival(&self) {
        self.arrived.notified().await
    }

    /// Hands a child's notification to this seat's owner: a teammate's
    /// inbox (a message from `teamhost`, which wakes it), or, for a
    /// sub-agent, its queue.
    pub(crate) async fn deliver(&self, text: String) {
        if self.me.is_some() {
            lock(&self.queue).push(text);
            self.arrived.notify_one();
            return;
        }
        let team = self.cfg.team().clone();
        let to = self.cfg.identity.name.clone();
        let msg = crate::store::OutgoingMessage::new(crate::protocol::HOST_SENDER, text);
        let sent = crate::blocking::try_run("a notification", move || team.send(&to, msg)).await;
        if sent.is_err() {
            tracing::warn!(teammate = %self.cfg.identity.name, "a sub-agent's notification could not be delivered");
        }
    }

    pub(super) fn find(&self, to: &str) -> Option<Arc<Child>> {
        lock(&self.children)
            .iter()
            .find(|c| c.id == to || c.name.as_deref() == Some(to))
            .cloned()
    }

    /// The id of this seat's `n`th sub-agent: `a` and 16 hex digits, as the
    /// reference's, derived from the owner's agent id so a replayed run
    /// gets the same ids (cassettes are keyed by them).
    pub(super) fn id_for(&self, n: usize) -> String {
        let digest = Sha256::digest(format!("{}#{n}", self.cfg.identity.agent_id));
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("a{hex}")
    }

    /// Builds the sub-agent's instance: its own sandbox on its directory,
    /// its own context (assembled from this seat's parts, at most the
    /// parent's), its own seat one level deeper (at start, and again when
    /// a message resumes it after its end).
    pub(crate) async fn instantiate(
        &self,
        child: &Arc<Child>,
    ) -> Result<(Instance, Arc<Seat>), SubagentError> {
        let runtime = self.cfg.runtime.clone();
        let path = child.component.clone();
        // A sub-agent has no network, so no wasi:http either.
        let http = crate::runtime::WasiHttpGrant::NotGranted;
        let pre = crate::blocking::run("component loading", move || runtime.prepare(&path, http))
            .await
            .map_err(|e| unavailable("the sub-agent's component cannot be loaded", e.to_string()))?
            .map_err(|e| {
                unavailable(
                    "the sub-agent's component cannot be loaded",
                    format!("{e:#}"),
                )
            })?;
        let own = Seat::with_owner(self.child_config(child), Some(child.clone()));
        let Assembled { agent, instance } = self
            .assembly(child, own.cfg.identity.clone())
            .subagents(own.clone())
            .assemble()
            .map_err(|e| {
                unavailable(
                    "the sub-agent's directory cannot be opened",
                    e.error.to_string(),
                )
            })?;
        let instance = Instance::new(&self.cfg.runtime, &pre, agent, &instance)
            .await
            .map_err(|e| {
                let why = format!("{e:#}");
                if why.starts_with("memory limit: ") {
                    // Its tree's memory is taken: a refusal, not a fault.
                    SubagentError::Denied(format!(
                        "the sub-agent could not be started: {why}; wait for a sub-agent to \
                         finish, or do this work yourself"
                    ))
                } else {
                    unavailable("the sub-agent could not be started", why)
                }
            })?;
        Ok((instance, own))
    }

    /// What the child's own seat makes its sub-agents from: this seat's,
    /// one level deeper, with the child as the owner.
    fn child_config(&self, child: &Child) -> SeatConfig {
        SeatConfig {
            depth: child.depth,
            forked: child.forked,
            dir: child.dir.clone(),
            component: child.component.clone(),
            client: child.client.clone(),
            identity: Identity {
                name: child.full_name.clone(),
                agent_id: format!("{}@{}", child.full_name, self.cfg.team().name()),
                agent_type: child.subagent_type.clone(),
                plan_mode_required: false,
                ..self.cfg.identity.clone()
            },
            ..self.cfg.clone()
        }
    }

    /// The child's [`Assembly`]: a sub-agent in this seat's tree (its
    /// budget), with its narrowed mode and rules and its model client. It
    /// never asks the lead, so nothing of it waits on a stop signal; it
    /// saves no state and records no claims (it lives as long as its
    /// parent).
    fn assembly(&self, child: &Child, identity: Identity) -> Assembly {
        let shared = SharedParts {
            budget: Some(self.cfg.budget.clone()),
            ..self.cfg.shared.clone()
        };
        Assembly::new(shared, identity, &child.dir)
            .sub_agent()
            .permissions(child.mode, child.rules.clone())
            .model(ModelSeat {
                client: child.client.clone(),
                sink: None,
                clock: Default::default(),
                at_end: None,
            })
    }
}

/// A sub-agent that cannot be made for a reason of the host's.
fn unavailable(what: &str, e: String) -> SubagentError {
    SubagentError::Unavailable(format!("{what}: {e}"))
}
