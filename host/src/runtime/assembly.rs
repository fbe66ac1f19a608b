//! One way to assemble an agent's context: [`Assembly`] turns who it is
//! ([`Identity`]), where it works (its capability directory), how it runs
//! (mode, tool rules, limits) and, for a sub-agent, its parent's
//! [`SharedParts`] into the [`AgentCtx`] its store holds and the
//! [`InstanceConfig`] its sandbox is made from ([`Assembled`]).
//!
//! Every path that makes an agent goes through [`Assembly::assemble`]: the
//! in-process spawn, `Host::attach` and resume (`backends::assembly`), a
//! sub-agent (`subagents::Seat`), and glue tests and embedders through
//! [`AgentCtx::builder`]. A new part of a teammate's context is added here,
//! once.

use std::path::PathBuf;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::budget::TreeBudget;
use super::lead_host::LeadHost;
use super::permissions::Permissions;
use super::state::{
    AgentCtx, Coordination, Fixed, Identity, ModelSeat, StateSeat, TeamSeat, ToolSeat,
};
use super::subagent_host::SubagentHost;
use super::{InstanceConfig, Stopping};
use crate::home::kept::{ClaimLedger, SavedState};
use crate::hooks::Hooks;
use crate::protocol::PermissionRequest;
use crate::sandbox::{DirAccess, Limits, PermissionMode, ToolRules};
use crate::store::Team;
use crate::tools::{ToolBox, ToolLimits};

/// What a teammate's context shares with every sub-agent it starts (they
/// get it unchanged): the team and its lead, the limits, the hooks, the
/// host's hidden directories, where guest output goes, and the budget of
/// the whole tree.
#[derive(Clone)]
pub struct SharedParts {
    /// The team's store handle.
    pub team: Team,
    /// The lead's member name.
    pub lead: String,
    /// Resource and coordination limits.
    pub limits: Limits,
    /// What the tools may do (output size, Bash's budget and time).
    pub tool_limits: ToolLimits,
    /// The lead's hooks.
    pub hooks: Arc<Hooks>,
    /// Host directories never named to a guest.
    pub hidden_dirs: Vec<PathBuf>,
    /// Fallback poll while waiting on the store.
    pub poll_interval: Duration,
    /// File receiving the guest's stdout and stderr; discarded when `None`.
    pub log: Option<PathBuf>,
    /// The tree's budgets: `None` for a teammate, which gets a new one over
    /// its own directory; a sub-agent's parent's, to which its directory is
    /// added.
    pub budget: Option<Arc<TreeBudget>>,
}

impl SharedParts {
    /// The parts of a teammate of `team` whose lead is `lead`, with the
    /// defaults: [`Limits::default`], [`ToolLimits::default`], no hooks, no
    /// hidden directories, a 500 ms poll, no log, a budget of its own.
    pub fn new(team: Team, lead: impl Into<String>) -> Self {
        SharedParts {
            team,
            lead: lead.into(),
            limits: Limits::default(),
            tool_limits: ToolLimits::default(),
            hooks: Default::default(),
            hidden_dirs: Vec::new(),
            poll_interval: Duration::from_millis(500),
            log: None,
            budget: None,
        }
    }
}

/// The parts of one agent's context that are its own. [`Assembly::new`]
/// gives the defaults: mode `default`, no tool rules, a teammate (not a
/// sub-agent), plans waiting for the lead, a fresh wake and stop signal, no
/// saved state, no claim ledger, no sub-agents, no model (every call
/// `denied`), nothing from an earlier life.
pub struct Assembly {
    shared: SharedParts,
    identity: Identity,
    dir: PathBuf,
    mode: PermissionMode,
    rules: ToolRules,
    sub_agent: bool,
    auto_approve_plans: bool,
    wake: Arc<Notify>,
    stopping: Stopping,
    saved_state: Option<SavedState>,
    claims: Option<ClaimLedger>,
    subagents: Option<Arc<dyn SubagentHost>>,
    lead_seat: Option<Arc<dyn LeadHost>>,
    model: ModelSeat,
    earlier_requests: Vec<PermissionRequest>,
    pending_plan: Option<String>,
    network: Option<crate::network::NetworkSettings>,
    fetch_tape: Option<Arc<crate::network::FetchTape>>,
}

/// An assembled agent: the state its store holds and what its sandboxed
/// instance is made from.
pub struct Assembled {
    /// The context the teamhost interfaces are implemented on.
    pub agent: AgentCtx,
    /// The instance's directory, file access, limits and log.
    pub instance: InstanceConfig,
}

/// The capability directory could not be opened for the agent's tools.
#[derive(Debug)]
pub struct ToolsUnavailable {
    /// The directory.
    pub dir: PathBuf,
    /// Why.
    pub error: crate::tools::ToolError,
}

impl Assembly {
    /// Agent `identity`, working in `dir` (canonical), with `shared`; the
    /// rest at the defaults listed on [`Assembly`].
    pub fn new(shared: SharedParts, identity: Identity, dir: impl Into<PathBuf>) -> Self {
        Assembly {
            shared,
            identity,
            dir: dir.into(),
            mode: PermissionMode::Default,
            rules: ToolRules::default(),
            sub_agent: false,
            auto_approve_plans: false,
            wake: Arc::new(Notify::new()),
            stopping: Stopping::default(),
            saved_state: None,
            claims: None,
            subagents: None,
            lead_seat: None,
            model: ModelSeat {
                client: crate::model::ModelClient::disabled(),
                sink: None,
                clock: Default::default(),
                at_end: None,
            },
            earlier_requests: Vec::new(),
            pending_plan: None,
            network: None,
            fetch_tape: None,
        }
    }

    /// The permission mode and tool rules.
    pub fn permissions(mut self, mode: PermissionMode, rules: ToolRules) -> Self {
        self.mode = mode;
        self.rules = rules;
        self
    }

    /// Makes it a sub-agent ([`Permissions::for_subagent`]): its mode and
    /// rules must already be at most its parent's, and its
    /// [`SharedParts::budget`] its parent's.
    pub fn sub_agent(mut self) -> Self {
        self.sub_agent = true;
        self
    }

    /// Approve submitted plans at once (the reference's behaviour).
    pub fn auto_approve_plans(mut self, yes: bool) -> Self {
        self.auto_approve_plans = yes;
        self
    }

    /// The signals it shares with its runner and its host: woken when its
    /// inbox changes, and told when the host stops it.
    pub fn signals(mut self, wake: Arc<Notify>, stopping: Stopping) -> Self {
        self.wake = wake;
        self.stopping = stopping;
        self
    }

    /// Where the host keeps its saved state and its claims (a teammate the
    /// host may resume).
    pub fn kept(mut self, saved_state: SavedState, claims: ClaimLedger) -> Self {
        self.saved_state = Some(saved_state);
        self.claims = Some(claims);
        self
    }

    /// Its model capability.
    pub fn model(mut self, model: ModelSeat) -> Self {
        self.model = model;
        self
    }

    /// Its network ([`crate::network::NetworkSettings`]); `None`, the
    /// default, gives its Bash no network at all.
    pub fn network(mut self, settings: Option<crate::network::NetworkSettings>) -> Self {
        self.network = settings;
        self
    }

    /// Where its WebFetch fetches are recorded or replayed from (a run with
    /// cassettes); none by default.
    pub fn fetch_tape(mut self, tape: Option<Arc<crate::network::FetchTape>>) -> Self {
        self.fetch_tape = tape;
        self
    }

    /// Its sub-agents.
    pub fn subagents(mut self, host: Arc<dyn SubagentHost>) -> Self {
        self.subagents = Some(host);
        self
    }

    /// Its lead's seat: this agent is its team's lead.
    pub fn lead_seat(mut self, seat: Arc<dyn LeadHost>) -> Self {
        self.lead_seat = Some(seat);
        self
    }

    /// What a resumed teammate takes over: its permission requests and its
    /// plan still waiting for the lead.
    pub fn earlier_life(
        mut self,
        open_requests: Vec<PermissionRequest>,
        pending_plan: Option<String>,
    ) -> Self {
        self.earlier_requests = open_requests;
        self.pending_plan = pending_plan;
        self
    }

    /// The shared parts, as its sub-agents will get them once assembled
    /// (with the tree's budget filled in by [`Assembly::assemble`]).
    pub fn shared(&self) -> &SharedParts {
        &self.shared
    }

    /// Opens the tools on the directory, draws the budget (a new tree's,
    /// or the parent's with this directory added), and builds the context
    /// and the instance config. Fails only when the directory cannot be
    /// opened.
    pub fn assemble(self) -> Result<Assembled, ToolsUnavailable> {
        let network = self.network.clone();
        let self_dir = self.dir.clone();
        let log = self.shared.log.clone();
        let tape = self.fetch_tape.clone();
        let tools = ToolBox::open(&self.dir, self.shared.tool_limits.clone()).map_err(|error| {
            ToolsUnavailable {
                dir: self.dir.clone(),
                error,
            }
        })?;
        let tools = Arc::new(tools);
        let budget = match &self.shared.budget {
            None => TreeBudget::new(&self.shared.limits, tools.clone()),
            Some(parent) => {
                parent.disk().add_dir(tools.clone());
                parent.clone()
            }
        };
        let instance = InstanceConfig {
            dir: self.dir.clone(),
            access: DirAccess::for_teammate(self.mode, &self.rules),
            limits: self.shared.limits.clone(),
            log: self.shared.log.clone(),
        };
        let permissions = if self.sub_agent {
            Permissions::for_subagent(self.mode, self.rules, &self.dir)
        } else {
            Permissions::new(self.mode, self.rules, &self.dir)
        }
        .with_earlier_requests(self.earlier_requests);
        let shared = self.shared;
        let agent = AgentCtx {
            fixed: Fixed {
                identity: self.identity,
                lead: shared.lead,
                limits: shared.limits,
                budget,
            },
            team: TeamSeat {
                store: shared.team,
                wake: self.wake,
                poll_interval: shared.poll_interval,
                stopping: self.stopping,
                auto_approve_plans: self.auto_approve_plans,
                hooks: shared.hooks,
                claims: self.claims,
            },
            tools: ToolSeat {
                tools,
                hidden_dirs: shared.hidden_dirs,
                network: None,
            },
            state: StateSeat {
                saved: self.saved_state,
                saves_turn: AtomicU32::new(0),
            },
            subagents: self.subagents,
            lead_seat: self.lead_seat,
            permissions,
            coordination: Coordination {
                pending_plan: self.pending_plan,
                ..Coordination::default()
            },
            model: self.model,
        };
        let mut agent = agent;
        if let Some(settings) = &network {
            let line = super::interfaces::LeadLine::new(&agent.fixed, &agent.team);
            let asker = super::interfaces::NetworkAsker::new(
                line,
                agent.fixed.limits.ask_timeout,
                agent.fixed.limits.max_pending_requests,
            );
            let seat = super::NetworkSeat::new(settings, Arc::new(asker), log.as_deref(), tape)
                .map_err(|why| ToolsUnavailable {
                    dir: self_dir.clone(),
                    error: crate::tools::ToolError::Invalid(format!(
                        "the teammate's network settings: {why}"
                    )),
                })?;
            agent.tools.network = Some(Arc::new(seat));
        }
        Ok(Assembled { agent, instance })
    }
}

impl AgentCtx {
    /// A builder for the state of teammate `name` of `team`, working in
    /// `dir`: for glue tests and embedders that drive the interfaces
    /// without a component. `name` must be a member of the team.
    pub fn builder(team: Team, name: &str, dir: impl Into<PathBuf>) -> AgentCtxBuilder {
        AgentCtxBuilder {
            team,
            name: name.to_string(),
            dir: dir.into(),
            mode: PermissionMode::Default,
            rules: ToolRules::default(),
            limits: Limits::default(),
            auto_approve_plans: false,
            hooks: Default::default(),
            network: None,
        }
    }
}

/// Builds an [`AgentCtx`] for a registered member through [`Assembly`],
/// with the defaults a spawned teammate gets: mode `default`, no tool
/// rules, default limits, no hooks, no model (every call `denied`), plans
/// waiting for the lead.
pub struct AgentCtxBuilder {
    team: Team,
    name: String,
    dir: PathBuf,
    mode: PermissionMode,
    rules: ToolRules,
    limits: Limits,
    auto_approve_plans: bool,
    hooks: Arc<Hooks>,
    network: Option<crate::network::NetworkSettings>,
}

impl AgentCtxBuilder {
    /// Its network (none by default).
    pub fn network(mut self, settings: crate::network::NetworkSettings) -> Self {
        self.network = Some(settings);
        self
    }

    /// The permission mode.
    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The allowed and denied tool rules.
    pub fn rules(mut self, rules: ToolRules) -> Self {
        self.rules = rules;
        self
    }

    /// The resource and coordination limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Approve submitted plans at once (the reference's behaviour).
    pub fn auto_approve_plans(mut self, yes: bool) -> Self {
        self.auto_approve_plans = yes;
        self
    }

    /// The lead's hooks.
    pub fn hooks(mut self, hooks: Arc<Hooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Reads the member's entry and the lead's name from the team and opens
    /// the tools on the directory. Fails when the team or the member does
    /// not exist, or the directory cannot be opened.
    pub fn build(self) -> crate::Result<AgentCtx> {
        let config = self.team.config()?;
        let member =
            config
                .member(&self.name)
                .cloned()
                .ok_or_else(|| crate::Error::MemberNotFound {
                    team: self.team.name().to_string(),
                    name: self.name.clone(),
                    members: config.member_names(),
                })?;
        let identity = Identity {
            name: member.name.clone(),
            agent_id: member.agent_id.clone(),
            team: self.team.name().to_string(),
            color: member.color.clone().unwrap_or_default(),
            agent_type: member
                .agent_type
                .clone()
                .unwrap_or_else(|| "general-purpose".into()),
            model: member.model.clone().unwrap_or_default(),
            plan_mode_required: member.plan_mode_required.unwrap_or(false),
            backend_type: "in-process".into(),
            pane_id: "in-process".into(),
        };
        let shared = SharedParts {
            limits: self.limits,
            hooks: self.hooks,
            ..SharedParts::new(self.team, config.lead_name())
        };
        let assembled = Assembly::new(shared, identity, self.dir)
            .permissions(self.mode, self.rules)
            .auto_approve_plans(self.auto_approve_plans)
            .network(self.network)
            .assemble()
            .map_err(ToolsUnavailable::into_error)?;
        Ok(assembled.agent)
    }
}

impl ToolsUnavailable {
    /// The error a teammate's spawn reports: the directory cannot be opened
    /// for its tools.
    pub fn into_error(self) -> crate::Error {
        crate::Error::Spawn(format!(
            "cannot open {} for the teammate's tools: {}",
            self.dir.display(),
            self.error
        ))
    }
}
