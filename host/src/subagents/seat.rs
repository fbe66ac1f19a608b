//! [`Seat`]: one agent's sub-agents — the registry, the checks at start
//! (at most the parent, depth and count limits), and the
//! [`SubagentHost`] calls the glue makes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, watch, Notify};

use super::driver::{self, Command};
use super::{narrow, Definitions, SubagentLimits};
use crate::home::Home;
use crate::hooks::Hooks;
use crate::model::ModelClient;
use crate::runtime::subagent_host::{
    BoxFuture, Caller, StartRequest, Started, SubagentContext, SubagentError, SubagentHost,
    SubagentInfo, SubagentStatus,
};
use crate::runtime::{
    AgentCtx, Coordination, DirAccess, Fixed, Identity, Instance, InstanceConfig, ModelSeat,
    Permissions, Runtime, TreeBudget,
};
use crate::sandbox::Limits;
use crate::store::Team;
use crate::tools::ToolLimits;

/// What a seat's sub-agents are made from: the owner's fixed part, as it
/// was at spawn.
#[derive(Clone)]
pub struct SeatConfig {
    /// The engine, linker and warm component cache.
    pub runtime: Runtime,
    /// The owner's component (a sub-agent without a definition's runs it).
    pub component: PathBuf,
    /// The machine-local home (worktrees).
    pub home: Home,
    /// The team (for the owner's inbox, and whose names a sub-agent's may not take).
    pub team: Team,
    /// The owner.
    pub identity: Identity,
    /// The lead's name.
    pub lead: String,
    /// The owner's limits; each sub-agent gets the same.
    pub limits: Limits,
    /// The owner's tool limits; each sub-agent gets the same.
    pub tool_limits: ToolLimits,
    /// The lead's hooks.
    pub hooks: Arc<Hooks>,
    /// Host directories never named to a guest.
    pub hidden_dirs: Vec<PathBuf>,
    /// The owner's capability directory (canonical).
    pub dir: PathBuf,
    /// The owner's model client: its sub-agents share its meter.
    pub client: ModelClient,
    /// Fallback poll while waiting on the store.
    pub poll_interval: Duration,
    /// The owner's depth: 0 for a teammate.
    pub depth: u32,
    /// Recursion protection.
    pub limits_sub: SubagentLimits,
    /// The definitions the host trusts.
    pub definitions: Arc<Definitions>,
    /// Where the sub-agents' stdout and stderr go (the owner's log).
    pub log: Option<PathBuf>,
    /// The teammate's counts, shared by its whole tree.
    pub tree: Arc<super::Tree>,
    /// The teammate's budgets, shared by its whole tree: every sub-agent
    /// draws from them (memory, disk, team writes, sub-agents started).
    pub budget: Arc<TreeBudget>,
}

/// One sub-agent, shared by its seat (the parent's), its own seat and its
/// task.
pub(crate) struct Child {
    pub id: String,
    pub name: Option<String>,
    pub description: String,
    pub subagent_type: String,
    pub depth: u32,
    pub worktree: Option<PathBuf>,
    pub tool_use_id: Option<String>,
    /// Its identity name (`{parent}.{id}`).
    pub full_name: String,
    /// Its parent's identity name.
    pub parent: String,
    pub system_prompt: Option<String>,
    pub client: ModelClient,
    /// What a resumption's fresh instance is made of.
    pub component: PathBuf,
    pub dir: PathBuf,
    pub mode: crate::sandbox::PermissionMode,
    pub rules: crate::sandbox::ToolRules,
    /// Its kept conversation (`model.history` after a resumption).
    pub transcript: crate::model::Transcript,
    pub state: Mutex<ChildState>,
    /// Bumped each time it finishes (completed, failed, killed).
    pub finished: watch::Sender<u64>,
    pub commands: mpsc::UnboundedSender<Command>,
    pub tool_uses: AtomicU32,
    /// The text of its last `report`.
    pub reported: Mutex<String>,
}

/// A sub-agent's changing state.
pub(crate) struct ChildState {
    pub status: SubagentStatus,
    pub output: String,
    pub duration_ms: u64,
    /// Notify the parent when it finishes (background, or resumed).
    pub notify: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Child {
    pub(crate) fn info(&self) -> SubagentInfo {
        let s = lock(&self.state);
        SubagentInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            subagent_type: self.subagent_type.clone(),
            status: s.status,
            output: s.output.clone(),
            depth: self.depth,
            worktree: self.worktree.as_ref().map(|p| p.display().to_string()),
            total_tokens: self.client.tokens_used(),
            total_tool_use_count: self.tool_uses.load(Ordering::Relaxed),
            total_duration_ms: s.duration_ms,
        }
    }

    fn is_running(&self) -> bool {
        lock(&self.state).status == SubagentStatus::Running
    }
}

/// One agent's sub-agents. Dropping it (the agent's instance ended) kills
/// every one still alive.
pub struct Seat {
    cfg: SeatConfig,
    this: Weak<Seat>,
    /// When the owner is itself a sub-agent: its record.
    me: Option<Arc<Child>>,
    children: Mutex<Vec<Arc<Child>>>,
    started: AtomicUsize,
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
        let team = self.cfg.team.clone();
        let to = self.cfg.identity.name.clone();
        let msg = crate::store::OutgoingMessage::new(crate::protocol::HOST_SENDER, text);
        let sent = tokio::task::spawn_blocking(move || team.send(&to, msg)).await;
        if !matches!(sent, Ok(Ok(_))) {
            tracing::warn!(teammate = %self.cfg.identity.name, "a sub-agent's notification could not be delivered");
        }
    }

    fn find(&self, to: &str) -> Option<Arc<Child>> {
        lock(&self.children)
            .iter()
            .find(|c| c.id == to || c.name.as_deref() == Some(to))
            .cloned()
    }

    /// The id of this seat's `n`th sub-agent: `a` and 16 hex digits, as the
    /// reference's, derived from the owner's agent id so a replayed run
    /// gets the same ids (cassettes are keyed by them).
    fn id_for(&self, n: usize) -> String {
        let digest = Sha256::digest(format!("{}#{n}", self.cfg.identity.agent_id));
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("a{hex}")
    }

    async fn start_inner(
        &self,
        caller: Caller,
        req: StartRequest,
    ) -> Result<Started, SubagentError> {
        let denied = SubagentError::Denied;
        if req.prompt.trim().is_empty() {
            return Err(SubagentError::Invalid(
                "the sub-agent's prompt is empty".into(),
            ));
        }
        let depth = self.cfg.depth + 1;
        let lim = self.cfg.limits_sub;
        if depth > lim.max_depth {
            return Err(denied(format!(
                "a sub-agent at depth {depth} is deeper than the host allows ({}, max_depth): do this work yourself",
                lim.max_depth
            )));
        }
        if self.running() >= lim.max_running {
            return Err(denied(format!(
                "{} sub-agents already run (max_running {}): wait for one to finish",
                self.running(),
                lim.max_running
            )));
        }
        // The definition.
        let def = match req.subagent_type.as_deref() {
            None | Some("general-purpose") => None,
            Some(t) => Some(self.cfg.definitions.get(t).cloned().ok_or_else(|| {
                let names = self.cfg.definitions.names();
                SubagentError::NotFound(format!(
                    "there is no agent definition {t:?}; the host knows: general-purpose{}{}",
                    if names.is_empty() { "" } else { ", " },
                    names.join(", ")
                ))
            })?),
        };
        let background = req.background || def.as_ref().is_some_and(|d| d.background);
        let wants_worktree = req.worktree || def.as_ref().is_some_and(|d| d.worktree);
        // At most the parent.
        let asked_mode = req
            .mode
            .as_deref()
            .or(def.as_ref().and_then(|d| d.permission_mode.as_deref()));
        let mode = narrow::mode(asked_mode, caller.mode).map_err(denied)?;
        let rules = narrow::rules(&caller.rules, def.as_ref().and_then(|d| d.tools.as_deref()))
            .map_err(SubagentError::Invalid)?;
        if let Some(name) = &req.name {
            crate::store::names::agent_file_stem(name)
                .map_err(|e| SubagentError::Invalid(format!("sub-agent name: {e}")))?;
            if self.find(name).is_some() {
                return Err(SubagentError::Invalid(format!(
                    "a sub-agent named {name:?} exists already; pick another name"
                )));
            }
            let team = self.cfg.team.clone();
            let is_member = tokio::task::spawn_blocking(move || team.config())
                .await
                .ok()
                .and_then(|c| c.ok())
                .is_some_and(|c| c.member(name).is_some());
            if is_member || name == crate::protocol::HOST_SENDER {
                return Err(SubagentError::Invalid(format!(
                    "{name:?} is a member of the team; a sub-agent's name must not be one"
                )));
            }
        }
        let n = self.started.fetch_add(1, Ordering::SeqCst);
        if n >= lim.max_total {
            self.started.fetch_sub(1, Ordering::SeqCst);
            return Err(denied(format!(
                "this agent already started {} sub-agents (max_total): no more in its life",
                lim.max_total
            )));
        }
        // One life-long count for the whole tree; a start that fails later
        // (its instance does not fit, say) stays counted, so a loop of
        // failing starts ends too.
        if let Err(e) = self.cfg.budget.start_subagent() {
            self.started.fetch_sub(1, Ordering::SeqCst);
            return Err(denied(e));
        }
        let id = self.id_for(n + 1);
        let full_name = format!("{}.{id}", self.cfg.identity.name);
        let model = req
            .model
            .as_deref()
            .or(def.as_ref().and_then(|d| d.model.as_deref()))
            .filter(|m| *m != "inherit");
        // Its conversation, kept for a resumption; one left by an earlier
        // life of the same id is not its own.
        let transcript =
            crate::home::kept::conversation(&self.cfg.home, self.cfg.team.name(), &full_name)
                .map(crate::model::Transcript::at)
                .map_err(|e| SubagentError::Unavailable(e.to_string()))?;
        let _ = transcript.remove();
        let client = self
            .cfg
            .client
            .sub_agent(&full_name, model, Some(transcript.clone()))
            .map_err(denied)?;
        // Where it works.
        let worktree = if wants_worktree {
            let (home, team, name, dir) = (
                self.cfg.home.clone(),
                self.cfg.team.name().to_string(),
                full_name.clone(),
                self.cfg.dir.clone(),
            );
            let made = tokio::task::spawn_blocking(move || {
                crate::worktree::create_from(&home, &team, &name, &dir)
            })
            .await
            .map_err(|e| SubagentError::Unavailable(format!("worktree creation panicked: {e}")))?
            .map_err(|e| match e {
                crate::Error::Worktree(m) | crate::Error::Encode(m) => SubagentError::Denied(m),
                other => SubagentError::Unavailable(other.to_string()),
            })?;
            Some(made)
        } else {
            None
        };
        let dir = worktree.clone().unwrap_or_else(|| self.cfg.dir.clone());
        let component = def
            .as_ref()
            .and_then(|d| d.component.clone())
            .unwrap_or_else(|| self.cfg.component.clone());
        let (commands, rx) = mpsc::unbounded_channel();
        let child = Arc::new(Child {
            id: id.clone(),
            name: req.name.clone(),
            description: req.description.clone(),
            subagent_type: def
                .as_ref()
                .map_or_else(|| "general-purpose".to_string(), |d| d.name.clone()),
            depth,
            worktree: worktree.clone(),
            tool_use_id: req.tool_use_id.clone(),
            full_name: full_name.clone(),
            parent: self.cfg.identity.name.clone(),
            system_prompt: def
                .as_ref()
                .map(|d| d.prompt.clone())
                .filter(|p| !p.trim().is_empty()),
            client: client.clone(),
            component: component.clone(),
            dir: dir.clone(),
            mode,
            rules: rules.clone(),
            transcript,
            state: Mutex::new(ChildState {
                status: SubagentStatus::Running,
                output: String::new(),
                duration_ms: 0,
                notify: background,
            }),
            finished: watch::channel(0).0,
            commands,
            tool_uses: AtomicU32::new(0),
            reported: Mutex::new(String::new()),
        });
        let made = self.instantiate(&child).await;
        let (instance, own) = match made {
            Ok(made) => made,
            Err(e) => {
                if let Some(wt) = &worktree {
                    let (home, wt) = (self.cfg.home.clone(), wt.clone());
                    let _ = tokio::task::spawn_blocking(move || {
                        crate::worktree::remove_if_clean(&home, &wt)
                    })
                    .await;
                }
                return Err(e);
            }
        };
        lock(&self.children).push(child.clone());
        // Counted before its task can end it; from here a caller that goes
        // away (its own turn killed) takes it along.
        self.cfg.tree.started(depth);
        let mut done = child.finished.subscribe();
        let guard = (!background).then(|| KillOnDrop(Some(child.clone())));
        tokio::spawn(driver::drive(driver::Drive {
            instance,
            own,
            child: child.clone(),
            parent: self.this.clone(),
            rx,
            prompt: req.prompt,
            home: self.cfg.home.clone(),
            tree: self.cfg.tree.clone(),
        }));
        self.cfg.tree.saved().await;
        if background {
            return Ok(Started::Launched(child.info()));
        }
        // Synchronous: wait for its end.
        let _ = done.wait_for(|n| *n >= 1).await;
        if let Some(mut g) = guard {
            g.0 = None;
        }
        Ok(Started::Finished(child.info()))
    }

    /// Builds the sub-agent's instance: its own sandbox on its directory,
    /// its own context, its own seat one level deeper (at start, and again
    /// when a message resumes it after its end).
    pub(crate) async fn instantiate(
        &self,
        child: &Arc<Child>,
    ) -> Result<(Instance, Arc<Seat>), SubagentError> {
        let (component, dir, mode, rules, client) = (
            child.component.as_path(),
            child.dir.as_path(),
            child.mode,
            child.rules.clone(),
            child.client.clone(),
        );
        let unavailable =
            |what: &str, e: String| SubagentError::Unavailable(format!("{what}: {e}"));
        let runtime = self.cfg.runtime.clone();
        let path = component.to_path_buf();
        let pre = tokio::task::spawn_blocking(move || runtime.prepare(&path))
            .await
            .map_err(|e| unavailable("component loading panicked", e.to_string()))?
            .map_err(|e| {
                unavailable(
                    "the sub-agent's component cannot be loaded",
                    format!("{e:#}"),
                )
            })?;
        let tools =
            crate::tools::ToolBox::open(dir, self.cfg.tool_limits.clone()).map_err(|e| {
                unavailable("the sub-agent's directory cannot be opened", e.to_string())
            })?;
        let tools = Arc::new(tools);
        // Its directory (a worktree, or the parent's) counts against the
        // tree's one disk budget.
        self.cfg.budget.disk().add_dir(tools.clone());
        let mut cfg = self.cfg.clone();
        cfg.depth = child.depth;
        cfg.dir = dir.to_path_buf();
        cfg.component = component.to_path_buf();
        cfg.client = client.clone();
        cfg.identity = Identity {
            name: child.full_name.clone(),
            agent_id: format!("{}@{}", child.full_name, self.cfg.team.name()),
            agent_type: child.subagent_type.clone(),
            plan_mode_required: false,
            ..self.cfg.identity.clone()
        };
        let own = Seat::with_owner(cfg.clone(), Some(child.clone()));
        let agent = AgentCtx {
            fixed: Fixed {
                team: self.cfg.team.clone(),
                identity: cfg.identity.clone(),
                lead: self.cfg.lead.clone(),
                limits: self.cfg.limits.clone(),
                wake: Arc::new(Notify::new()),
                poll_interval: self.cfg.poll_interval,
                // A sub-agent never asks the lead: nothing of it waits.
                stopping: Default::default(),
                auto_approve_plans: false,
                tools,
                hooks: self.cfg.hooks.clone(),
                hidden_dirs: self.cfg.hidden_dirs.clone(),
                subagents: Some(own.clone()),
                // A sub-agent saves no state of its own: it lives as long as
                // its parent.
                saved_state: None,
                // Nor claims a resume would hand back.
                claims: None,
                budget: self.cfg.budget.clone(),
                state_saves_turn: Default::default(),
            },
            permissions: Permissions::for_subagent(mode, rules.clone(), dir),
            coordination: Coordination::default(),
            model: ModelSeat {
                client,
                sink: None,
                clock: Default::default(),
                at_end: None,
            },
        };
        let config = InstanceConfig {
            dir: dir.to_path_buf(),
            access: DirAccess::for_teammate(mode, &rules),
            limits: self.cfg.limits.clone(),
            log: self.cfg.log.clone(),
        };
        let instance = Instance::new(&self.cfg.runtime, &pre, agent, &config)
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
}

/// Kills a synchronous sub-agent whose caller stopped waiting.
struct KillOnDrop(Option<Arc<Child>>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            let _ = c.commands.send(Command::Kill { parent_gone: true });
        }
    }
}

impl SubagentHost for Seat {
    fn start(
        &self,
        caller: Caller,
        req: StartRequest,
    ) -> BoxFuture<'_, Result<Started, SubagentError>> {
        Box::pin(self.start_inner(caller, req))
    }

    fn knows(&self, to: &str) -> bool {
        self.find(to).is_some()
    }

    fn send(&self, to: &str, message: String) -> Result<SubagentInfo, SubagentError> {
        let child = self.find(to).ok_or_else(|| {
            SubagentError::NotFound(format!("this agent has no sub-agent {to:?}"))
        })?;
        child
            .commands
            .send(Command::Message(message))
            .map_err(|_| {
                SubagentError::NotFound(format!(
                    "sub-agent {} has ended for good (stopped, or its instance is gone); start a new one",
                    child.id
                ))
            })?;
        Ok(child.info())
    }

    fn output(&self, id: &str) -> Result<SubagentInfo, SubagentError> {
        self.find(id)
            .map(|c| c.info())
            .ok_or_else(|| SubagentError::NotFound(format!("this agent has no sub-agent {id:?}")))
    }

    fn stop(&self, id: &str) -> Result<SubagentInfo, SubagentError> {
        let child = self.find(id).ok_or_else(|| {
            SubagentError::NotFound(format!("this agent has no sub-agent {id:?}"))
        })?;
        if !child.is_running() {
            return Err(SubagentError::Invalid(format!(
                "sub-agent {} is not running (it is {})",
                child.id,
                lock(&child.state).status.as_str()
            )));
        }
        let _ = child.commands.send(Command::Kill { parent_gone: false });
        Ok(child.info())
    }

    fn wait(
        &self,
        id: &str,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<SubagentInfo, SubagentError>> {
        let found = self
            .find(id)
            .ok_or_else(|| SubagentError::NotFound(format!("this agent has no sub-agent {id:?}")));
        Box::pin(async move {
            let child = found?;
            let mut ended = child.finished.subscribe();
            if child.is_running() {
                let seen = *ended.borrow_and_update();
                let _ = tokio::time::timeout(timeout, ended.wait_for(|n| *n > seen)).await;
            }
            Ok(child.info())
        })
    }

    fn list(&self) -> Vec<SubagentInfo> {
        lock(&self.children).iter().map(|c| c.info()).collect()
    }

    fn context(&self) -> Option<SubagentContext> {
        self.me.as_ref().map(|c| SubagentContext {
            id: c.id.clone(),
            parent: c.parent.clone(),
            system_prompt: c.system_prompt.clone(),
            depth: c.depth,
        })
    }

    fn report(&self, text: String) {
        if let Some(c) = &self.me {
            *lock(&c.reported) = text;
        }
    }

    fn count_tool_use(&self) {
        if let Some(c) = &self.me {
            c.tool_uses.fetch_add(1, Ordering::Relaxed);
        }
    }
}
