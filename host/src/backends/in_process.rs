//! The in-process backend: the teammate's runner is a tokio task of the host
//! process. Spawning registers the member (name made unique, colour in join
//! order, `tmuxPaneId`/`backendType` `in-process`), writes the initial prompt as
//! the first message of its inbox from the lead, instantiates the component in
//! a sandbox holding only the teammate's directory, and starts the runner.
//! If any step after registration fails, the member is removed again.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};

use crate::error::{Error, Result};
use crate::host::{Event, Isolation, SpawnRequest, TeammateState};
use crate::runner::wake::WakeHub;
use crate::runner::{Runner, RunnerConfig, RunnerLinks};
use crate::runtime::{
    AgentCtx, DirAccess, Identity, Instance, InstanceConfig, Runtime, SandboxCtx, TurnRecord,
};
use crate::sandbox::{PermissionMode, PolicyContext, ToolRules};
use crate::store::{Member, NewMember, OutgoingMessage, Team};

/// Backend name recorded in the config.
pub const BACKEND: &str = "in-process";

/// What the host keeps of a spawned teammate.
pub(crate) struct Spawned {
    pub member: Member,
    pub state: watch::Receiver<TeammateState>,
    pub inject: mpsc::UnboundedSender<String>,
    pub kill: watch::Sender<bool>,
    pub turns: Arc<AtomicU64>,
    pub busy: Arc<AtomicBool>,
    pub pending_injections: Arc<AtomicUsize>,
    pub auto_claim: bool,
    pub join: tokio::task::JoinHandle<TeammateState>,
}

/// Everything spawning needs from the host.
pub(crate) struct SpawnEnv<'a> {
    pub runtime: &'a Runtime,
    pub hub: &'a Arc<WakeHub>,
    pub events: &'a broadcast::Sender<Event>,
    pub poll_interval: Duration,
    pub log_dir: PathBuf,
    pub auto_approve_plans: bool,
}

/// Spawns `req` into `team`. See the module docs.
pub(crate) async fn spawn(env: SpawnEnv<'_>, team: &Team, req: SpawnRequest) -> Result<Spawned> {
    let config = team.config()?;
    let lead = config.lead_name().to_string();
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
    let runtime = env.runtime.clone();
    let path = req.component.clone();
    let pre = tokio::task::spawn_blocking(move || runtime.prepare(&path))
        .await
        .map_err(|e| Error::Invalid(format!("component loading panicked: {e}")))?
        .map_err(|e| Error::Component {
            path: req.component.clone(),
            message: format!("{e:#}"),
        })?;

    let mode: PermissionMode = match &req.mode {
        None => PermissionMode::Default,
        Some(m) => m
            .parse()
            .map_err(|e: crate::sandbox::ParseModeError| Error::Invalid(e.to_string()))?,
    };
    let rules = ToolRules::new(req.allowed_tools.iter(), req.disallowed_tools.iter())
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let member = team.add_member(NewMember {
        name: req.name.clone(),
        agent_type: req.agent_type.clone(),
        model: req.model.clone(),
        prompt: Some(req.prompt.clone()),
        color: None,
        plan_mode_required: req.plan_mode_required,
        cwd: Some(dir.display().to_string()),
        backend_type: Some(BACKEND.into()),
        tmux_pane_id: Some(BACKEND.into()),
        mode: req.mode.clone(),
        allowed_tools: req.allowed_tools.clone(),
        disallowed_tools: req.disallowed_tools.clone(),
    })?;
    let rollback = |e: Error| {
        if let Err(e2) = team.remove_member(&member.name) {
            tracing::error!(teammate = %member.name, error = %e2, "could not undo a failed spawn");
        }
        e
    };
    let name = member.name.clone();
    let color = member.color.clone().unwrap_or_default();
    let dir = match req.isolation {
        Isolation::None => dir,
        Isolation::Worktree => {
            let home = team.store().home().clone();
            let wt = crate::worktree::create(&home, team.name(), &name, &dir).map_err(rollback)?;
            let shown = wt.display().to_string();
            team.update_member(&name, |m| {
                m.worktree_path = Some(shown.clone());
                m.cwd = Some(shown.clone());
            })
            .map_err(rollback)?;
            wt
        }
    };

    let tool_limits = crate::tools::ToolLimits {
        max_output_bytes: req.limits.max_tool_output_bytes,
        ..crate::tools::ToolLimits::default()
    };
    let tools = match crate::tools::ToolBox::open(&dir, tool_limits) {
        Ok(t) => std::sync::Arc::new(t),
        Err(e) => {
            return Err(rollback(Error::Invalid(format!(
                "cannot open {} for the teammate's tools: {e}",
                dir.display()
            ))))
        }
    };
    let wake = env.hub.register(team.name(), &name);
    let agent = AgentCtx {
        team: team.clone(),
        identity: Identity {
            name: name.clone(),
            agent_id: member.agent_id.clone(),
            team: team.name().to_string(),
            color: color.clone(),
            agent_type: req
                .agent_type
                .clone()
                .unwrap_or_else(|| "general-purpose".into()),
            model: req.model.clone().unwrap_or_default(),
            plan_mode_required: req.plan_mode_required,
            backend_type: BACKEND.into(),
            pane_id: BACKEND.into(),
        },
        lead: lead.clone(),
        turn: TurnRecord::default(),
        pending_shutdowns: Vec::new(),
        pending_plan: None,
        sandbox: SandboxCtx {
            mode,
            rules,
            policy: PolicyContext::new(&dir),
            limits: req.limits.clone(),
            wake: wake.clone(),
            poll_interval: env.poll_interval,
            auto_approve_plans: env.auto_approve_plans,
            pending_requests: 0,
            tools,
        },
    };
    let instance_config = InstanceConfig {
        dir,
        access: DirAccess::for_mode(mode),
        limits: req.limits.clone(),
        log: Some(env.log_dir.join(team.name()).join(format!("{name}.log"))),
    };
    let instance = Instance::new(env.runtime, &pre, agent, &instance_config)
        .await
        .map_err(|e| {
            rollback(Error::Component {
                path: req.component.clone(),
                message: format!("cannot start it: {e:#}"),
            })
        })?;

    // The prompt goes in only once the instance is ready, so a failed spawn
    // leaves nothing for the next teammate of the same name.
    team.deliver(&name, OutgoingMessage::new(&lead, req.prompt.clone()))
        .map_err(rollback)?;
    let (inject_tx, inject_rx) = mpsc::unbounded_channel();
    let (kill_tx, kill_rx) = watch::channel(false);
    let (state_tx, state_rx) = watch::channel(TeammateState::Starting);
    let turns = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(AtomicBool::new(true));
    let pending_injections = Arc::new(AtomicUsize::new(0));
    let runner = Runner {
        instance,
        team: team.clone(),
        name: name.clone(),
        agent_id: member.agent_id.clone(),
        color,
        lead,
        config: RunnerConfig {
            auto_claim: req.auto_claim,
            poll_interval: env.poll_interval,
        },
        links: RunnerLinks {
            wake,
            injected: inject_rx,
            kill: kill_rx,
            state: state_tx,
            events: env.events.clone(),
            turns: turns.clone(),
            busy: busy.clone(),
            pending_injections: pending_injections.clone(),
        },
    };
    let hub = env.hub.clone();
    let team_name = team.name().to_string();
    let join = tokio::spawn(async move {
        let end = runner.run().await;
        hub.unregister(&team_name, &name);
        end
    });
    Ok(Spawned {
        member,
        state: state_rx,
        inject: inject_tx,
        kill: kill_tx,
        turns,
        busy,
        pending_injections,
        auto_claim: req.auto_claim,
        join,
    })
}
