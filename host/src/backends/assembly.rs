//! Assembling a component teammate, in one place: checking a request before
//! anything is written ([`prepare`]), its worktree ([`isolate`]), its tools,
//! its [`AgentCtx`](crate::runtime::AgentCtx), its sandboxed instance
//! ([`instantiate`]), and its runner ([`Ready::run`]). The in-process
//! backend runs these steps in order; `Host::attach` (a `teamhost teammate`
//! process) runs the last two for a member its lead registered; the process
//! and tmux backends use the first two before starting their child.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::{BackendKind, SpawnEnv, Spawned};
use crate::error::{Error, Result};
use crate::runner::{Runner, RunnerConfig, RunnerLinks};
use crate::runtime::{
    AgentCtx, Coordination, DirAccess, Fixed, Identity, Instance, InstanceConfig, Permissions,
    Runtime,
};
use crate::store::{Member, Team};
use crate::teammate::{Isolation, SpawnRequest, TeammateState};

/// Compiles `req`'s component, or takes it from the cache (a second load of
/// the same file costs one read and hash). Called from [`prepare`] to fail
/// early and from [`instantiate`] to get the instance-pre (whose state type
/// is private to the runtime, hence the macro).
macro_rules! load {
    ($runtime:expr, $req:expr) => {{
        let runtime = $runtime.clone();
        let path = $req.component.clone();
        tokio::task::spawn_blocking(move || runtime.prepare(&path))
            .await
            .map_err(|e| Error::Invalid(format!("component loading panicked: {e}")))?
            .map_err(|e| Error::Component {
                path: $req.component.clone(),
                message: format!("{e:#}"),
            })
    }};
}

/// Gives a registered member its own git worktree when `req` asks for one
/// (`{home}/worktrees/{team}/{name}`, recorded as its `worktreePath` and
/// `cwd`), and makes that the directory it works in.
pub(crate) fn isolate(
    home: &crate::store::Home,
    team: &Team,
    req: &SpawnRequest,
    member: Member,
    prepared: &mut Prepared,
) -> Result<Member> {
    match req.isolation {
        Isolation::None => Ok(member),
        Isolation::Worktree => {
            let wt = crate::worktree::create(home, team.name(), &member.name, &prepared.dir)?;
            let shown = wt.display().to_string();
            let member = team.update_member(&member.name, |m| {
                m.worktree_path = Some(shown.clone());
                m.cwd = Some(shown.clone());
                m.clone()
            })?;
            prepared.dir = wt;
            Ok(member)
        }
    }
}

/// A request checked and its component compiled (and cached); nothing
/// written yet.
pub(crate) struct Prepared {
    /// The capability directory, canonical.
    pub dir: PathBuf,
}

/// Checks `req`'s directory and compiles or loads its component, so that a
/// bad request fails before the team is touched (its mode and tool rules
/// are typed: they were parsed where the request was made).
pub(crate) async fn prepare(runtime: &Runtime, req: &SpawnRequest) -> Result<Prepared> {
    let dir = req.cwd.canonicalize().map_err(|e| {
        Error::Invalid(format!(
            "the teammate's directory {} cannot be used: {e}",
            req.cwd.display()
        ))
    })?;
    if !dir.is_dir() {
        return Err(Error::Invalid(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    load!(runtime, req)?;
    Ok(Prepared { dir })
}

/// Where the runner says it runs, and where the guest's output goes.
pub(crate) struct Placement {
    /// `backendType` reported in `shutdown_approved`.
    pub backend_type: String,
    /// `paneId` reported in `shutdown_approved`.
    pub pane_id: String,
    /// File receiving the guest's stdout and stderr; discarded when `None`.
    pub log: Option<PathBuf>,
    /// What a resumed teammate takes over from its earlier life; `None`
    /// for a teammate that starts afresh (what an earlier teammate of its
    /// name left on this machine is then cleared: `store::kept::clear_life`).
    pub resumed: Option<crate::teammate::Resumed>,
}

/// An instantiated teammate whose runner has not started.
pub(crate) struct Ready {
    runner: Runner,
    member: Member,
    auto_claim: bool,
    inject: mpsc::UnboundedSender<String>,
    kill: watch::Sender<bool>,
    stopping: crate::runtime::Stopping,
    state: watch::Receiver<TeammateState>,
}

/// Builds the sandboxed instance of the registered `member`.
pub(crate) async fn instantiate(
    env: &SpawnEnv<'_>,
    team: &Team,
    member: Member,
    req: &SpawnRequest,
    prepared: Prepared,
    place: Placement,
) -> Result<Ready> {
    let lead = team.config()?.lead_name().to_string();
    if place.resumed.is_none() {
        crate::store::kept::clear_life(&env.home, team.name(), &member.name)?;
    }
    let Prepared { dir } = prepared;
    let (mode, rules) = (req.settings.permission_mode(), req.settings.rules.clone());
    let resumed = place.resumed.clone();
    let journal = crate::store::kept::TurnJournal::of(&env.home, team.name(), &member.name)?;
    let task_note = crate::store::kept::TaskNote::of(&env.home, team.name(), &member.name)?;
    let claims = crate::store::kept::ClaimLedger::of(&env.home, team.name(), &member.name)?;
    let pre = load!(env.runtime, req)?;
    let name = member.name.clone();
    let color = member.color.clone().unwrap_or_default();
    let defaults = crate::tools::ToolLimits::default();
    let tool_limits = crate::tools::ToolLimits {
        max_output_bytes: req.settings.limits.max_tool_output_bytes,
        // Bash's process tree gets the teammate's own memory and CPU budget.
        bash_memory_bytes: req.settings.limits.memory_bytes as u64,
        bash_cpu: req.settings.limits.cpu_per_turn,
        // No Bash call outlives the turn's wall-time limit.
        bash_timeout: defaults.bash_timeout.min(req.settings.limits.wall_per_turn),
        max_bash_timeout: defaults
            .max_bash_timeout
            .min(req.settings.limits.wall_per_turn),
        ..defaults
    };
    let tools = crate::tools::ToolBox::open(&dir, tool_limits).map_err(|e| {
        Error::Invalid(format!(
            "cannot open {} for the teammate's tools: {e}",
            dir.display()
        ))
    })?;
    // The host knows an in-process teammate's state; one in its own process
    // is followed through `isActive` (`RunnerConfig::active_after`).
    let in_process = place.backend_type == BackendKind::InProcess.as_str();
    let registration = env.hub.register(team.name(), &name);
    let wake = registration.wake.clone();
    let rules_for_access = rules.clone();
    let stopping = crate::runtime::Stopping::default();
    let seat = super::model_seat::model_seat(env, team, &name, req, resumed.is_some())?;
    let tools = Arc::new(tools);
    // One budget for the teammate and everything it starts.
    let budget = crate::runtime::TreeBudget::new(&req.settings.limits, tools.clone());
    // Over its life: a resumed teammate goes on from what it spent (a fresh
    // one's record went with `clear_life` above).
    let spent = crate::store::kept::SpentRecord::of(&env.home, team.name(), &member.name)?;
    if let Some(earlier) = spent.load()? {
        budget.restore(earlier);
    }
    budget.keep_in(spent);
    let mut agent = AgentCtx {
        fixed: Fixed {
            team: team.clone(),
            identity: Identity {
                name: name.clone(),
                agent_id: member.agent_id.clone(),
                team: team.name().to_string(),
                color: color.clone(),
                agent_type: req
                    .settings
                    .agent_type
                    .clone()
                    .unwrap_or_else(|| "general-purpose".into()),
                model: req.settings.model.clone().unwrap_or_default(),
                plan_mode_required: req.settings.plan_mode_required,
                backend_type: place.backend_type,
                pane_id: place.pane_id,
            },
            lead: lead.clone(),
            limits: req.settings.limits.clone(),
            wake: wake.clone(),
            poll_interval: env.poll_interval,
            stopping: stopping.clone(),
            auto_approve_plans: env.auto_approve_plans,
            tools,
            hooks: env.hooks.clone(),
            hidden_dirs: hidden_dirs(env, team),
            subagents: None,
            budget: budget.clone(),
            state_saves_turn: Default::default(),
            saved_state: Some(crate::store::kept::SavedState::of(
                &env.home,
                team.name(),
                &name,
            )?),
            claims: Some(claims.clone()),
        },
        permissions: Permissions::new(mode, rules, &dir).with_earlier_requests(
            resumed
                .as_ref()
                .map(|r| r.open_requests.clone())
                .unwrap_or_default(),
        ),
        coordination: Coordination {
            pending_plan: resumed.as_ref().and_then(|r| r.pending_plan.clone()),
            ..Coordination::default()
        },
        model: seat,
    };
    // Sub-agents (issue 15): made from this teammate's own fixed part.
    agent.fixed.subagents = Some(crate::subagents::Seat::new(crate::subagents::SeatConfig {
        runtime: env.runtime.clone(),
        component: req.component.clone(),
        home: env.home.clone(),
        team: team.clone(),
        identity: agent.fixed.identity.clone(),
        lead: lead.clone(),
        limits: req.settings.limits.clone(),
        tool_limits: agent.fixed.tools.limits().clone(),
        hooks: env.hooks.clone(),
        hidden_dirs: agent.fixed.hidden_dirs.clone(),
        dir: dir.clone(),
        client: agent.model.client.clone(),
        poll_interval: env.poll_interval,
        depth: 0,
        limits_sub: Default::default(),
        definitions: req.settings.agents.clone().unwrap_or_default(),
        log: place.log.clone(),
        tree: crate::subagents::Tree::new(&env.home, team.name(), &name, Default::default()),
        budget,
    }));
    let instance_config = InstanceConfig {
        dir,
        access: DirAccess::for_teammate(mode, &rules_for_access),
        limits: req.settings.limits.clone(),
        log: place.log,
    };
    let instance = match Instance::new(env.runtime, &pre, agent, &instance_config).await {
        Ok(i) => i,
        Err(e) => {
            env.hub.unregister(team.name(), &name);
            return Err(Error::Component {
                path: req.component.clone(),
                message: format!("cannot start it: {e:#}"),
            });
        }
    };
    let (inject_tx, inject_rx) = mpsc::unbounded_channel();
    let (kill_tx, kill_rx) = watch::channel(false);
    let (state_tx, state_rx) = watch::channel(TeammateState::Starting);
    let runner = Runner {
        instance,
        team: team.clone(),
        name,
        agent_id: member.agent_id.clone(),
        color,
        lead,
        config: RunnerConfig {
            auto_claim: req.settings.auto_claim,
            poll_interval: env.fallback_poll(),
            notifications: req.settings.notifications.unwrap_or_default(),
            active_after: if in_process {
                crate::runner::ACTIVE_AFTER
            } else {
                Duration::ZERO
            },
        },
        // An in-process member is registered idle (`in_process.rs`).
        recorded_active: in_process.then_some(false),
        resumed: resumed.is_some(),
        handed_back: resumed.and_then(|r| r.task),
        journal: Some(journal),
        task_note: Some(task_note),
        note_open: false,
        claims: Some(claims),
        links: RunnerLinks {
            wake,
            listening: registration.listening,
            injected: inject_rx,
            kill: kill_rx,
            state: state_tx,
            events: env.events.clone(),
            turns: Arc::new(AtomicU64::new(0)),
            busy: Arc::new(AtomicBool::new(true)),
            pending_injections: Arc::new(AtomicUsize::new(0)),
        },
    };
    Ok(Ready {
        runner,
        member,
        auto_claim: req.settings.auto_claim,
        inject: inject_tx,
        kill: kill_tx,
        stopping,
        state: state_rx,
    })
}

impl Ready {
    /// Starts the runner as a tokio task.
    pub(crate) fn run(self, env: &SpawnEnv<'_>) -> Spawned {
        let Ready {
            runner,
            member,
            auto_claim,
            inject,
            kill,
            stopping,
            state,
        } = self;
        let turns = runner.links.turns.clone();
        let busy = runner.links.busy.clone();
        let pending_injections = runner.links.pending_injections.clone();
        let hub = env.hub.clone();
        let (team_name, name) = (runner.team.name().to_string(), member.name.clone());
        let join = tokio::spawn(async move {
            let end = runner.run().await;
            hub.unregister(&team_name, &name);
            end
        });
        Spawned {
            member,
            backend: BackendKind::InProcess,
            state,
            inject: Some(inject),
            kill,
            stopping,
            turns,
            busy,
            pending_injections,
            auto_claim,
            stop_grace: Duration::from_millis(500),
            join,
        }
    }
}

/// The host directories a teammate's tool errors never name.
fn hidden_dirs(env: &SpawnEnv<'_>, team: &Team) -> Vec<PathBuf> {
    let mut dirs = vec![env.home.root().to_path_buf()];
    if let Some(files) = team.store().file_store() {
        let root = files.home().root().to_path_buf();
        if !dirs.contains(&root) {
            dirs.push(root);
        }
    }
    dirs
}
