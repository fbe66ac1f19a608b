//! Assembling a component teammate, in one place: checking a request before
//! anything is written ([`prepare`]), its worktree ([`isolate`]), its
//! sandboxed instance ([`instantiate`]: its context and instance config
//! come from the one [`Assembly`], which sub-agents use too), and its
//! runner ([`Ready::run`]). The in-process backend runs these steps in
//! order; `Host::attach` (a `teamhost teammate` process, and resume) runs
//! the last two for a member its lead registered; the process and tmux
//! backends use the first two before starting their child.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::{BackendKind, SpawnEnv, Spawned};
use crate::error::{Error, Result};
use crate::runner::{Runner, RunnerConfig, RunnerLinks};
use crate::runtime::{
    Assembled, Assembly, Identity, Instance, Runtime, SharedParts, ToolsUnavailable,
};
use crate::store::{Member, Team};
use crate::teammate::{Isolation, SpawnRequest, TeammateState};

/// Compiles `req`'s component, or takes it from the cache (a second load of
/// the same unchanged file costs a `stat`), on a blocking thread. Called
/// from [`prepare`], whose [`Prepared`] carries it to [`instantiate`].
async fn load(runtime: &Runtime, req: &SpawnRequest) -> Result<(String, crate::runtime::Loaded)> {
    let runtime = runtime.clone();
    let path = req.component.clone();
    let http = crate::runtime::WasiHttpGrant::of(req.settings.network.as_ref());
    crate::blocking::run("component loading", move || load_now(&runtime, &path, http)).await?
}

/// [`load`] on the calling thread: the content hash and the component, or
/// the error naming it.
fn load_now(
    runtime: &Runtime,
    component: &std::path::Path,
    http: crate::runtime::WasiHttpGrant,
) -> Result<(String, crate::runtime::Loaded)> {
    runtime
        .prepare_hashed(component, http)
        .map_err(|e| Error::Component {
            path: component.to_path_buf(),
            message: format!("{e:#}"),
        })
}

/// Gives a registered member its own git worktree when `req` asks for one
/// (`{home}/worktrees/{team}/{name}`, recorded as its `worktreePath` and
/// `cwd`), and makes that the directory it works in.
pub(crate) fn isolate(
    home: &crate::home::Home,
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
    /// The component as loaded when the request was checked: what
    /// [`instantiate`] runs, without loading it again.
    pub loaded: crate::runtime::Loaded,
    /// The content hash of that component: what its spawn record keeps.
    pub hash: String,
}

/// Checks `req`'s directory and compiles or loads its component, so that a
/// bad request fails before the team is touched (its mode and tool rules
/// are typed: they were parsed where the request was made).
pub(crate) async fn prepare(runtime: &Runtime, req: &SpawnRequest) -> Result<Prepared> {
    let dir = checked_dir(req)?;
    let (hash, loaded) = load(runtime, req).await?;
    Ok(Prepared { dir, loaded, hash })
}

/// [`prepare`] on the calling thread, which it may block (a compile):
/// `Host::spawn_many` prepares a batch on one blocking thread.
pub(crate) fn prepare_blocking(runtime: &Runtime, req: &SpawnRequest) -> Result<Prepared> {
    let dir = checked_dir(req)?;
    let http = crate::runtime::WasiHttpGrant::of(req.settings.network.as_ref());
    let (hash, loaded) = load_now(runtime, &req.component, http)?;
    Ok(Prepared { dir, loaded, hash })
}

/// `req`'s directory, canonical, once it is known to be a directory.
fn checked_dir(req: &SpawnRequest) -> Result<PathBuf> {
    let dir = req.cwd.canonicalize().map_err(|e| {
        Error::Spawn(format!(
            "the teammate's directory {} cannot be used: {e}",
            req.cwd.display()
        ))
    })?;
    if !dir.is_dir() {
        return Err(Error::Spawn(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    Ok(dir)
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
    /// name left on this machine is then cleared: `home::kept::clear_life`).
    pub resumed: Option<crate::teammate::Resumed>,
}

/// An instantiated teammate whose runner has not started.
pub(crate) struct Ready {
    runner: Runner,
    member: Member,
    auto_claim: bool,
    handles: RunnerHandles,
    stopping: crate::runtime::Stopping,
    budget: Arc<crate::runtime::TreeBudget>,
    /// Its model client (a lead's seat gives from its budget).
    model: crate::model::ModelClient,
}

/// In a team whose config names a team lead key, has this host's
/// [`LeadGuard`](crate::store::LeadGuard) screen the inbox of its teammate
/// `name` from now on, the `msg_id`s of what it consumed in earlier lives
/// spent (its history: a lead entry written again is a replay). Nothing
/// for the lead itself, in a team without a key, or a store without a
/// guard (the embedder turned `sign_lead_entries` off).
fn screen_inbox(team: &Team, config: &crate::store::TeamConfig, name: &str) -> Result<()> {
    let (Some(guard), Some(key)) = (team.store().lead_guard(), config.team_lead_key()) else {
        return Ok(());
    };
    if name == config.lead_name() {
        return Ok(());
    }
    if let Err(why) = &key {
        tracing::warn!(team = %team.name(), teammate = %name, %why,
            "the team's lead key in its config cannot be read: no lead entry from another process will count for this teammate");
    }
    if guard.has_launch_key(team.name(), name) {
        // A `teamhost teammate` screening its own inbox with its launch key.
        return Ok(());
    }
    // It runs in this process now: a launch key an earlier life in a
    // process of its own left in the keyring would make the lead's
    // commands sign for that process, not for this teammate.
    guard.forget(team.name(), name);
    let spent = team.consumed_msg_ids(name)?;
    guard.screen_member(team.name(), name, config.lead_name(), key, spent);
    Ok(())
}

/// Builds the sandboxed instance of the registered `member`, in named
/// steps: what the host keeps for it ([`Kept::open`]), its context
/// ([`assemble`]), its sub-agents ([`seat_config`]), its instance and its
/// runner ([`runner`]).
pub(crate) async fn instantiate(
    env: &SpawnEnv<'_>,
    team: &Team,
    member: Member,
    req: &SpawnRequest,
    prepared: Prepared,
    place: Placement,
) -> Result<Ready> {
    let config = team.config()?;
    let lead = config.lead_name().to_string();
    screen_inbox(team, &config, &member.name)?;
    if place.resumed.is_none() {
        crate::home::kept::clear_life(&env.home, team.name(), &member.name)?;
    }
    if let Some(log) = &place.log {
        mark_life(log, &member.name, place.resumed.is_some());
    }
    let kept = Kept::open(&env.home, team.name(), &member.name)?;
    // Loaded when the request was checked: no second hand-off to load it,
    // and what was checked is what runs.
    let pre = prepared.loaded.clone();
    let registration = env.hub.register(team.name(), &member.name);
    let stopping = crate::runtime::Stopping::default();
    let signals = (registration.wake.clone(), stopping.clone());
    let seat =
        super::model_seat::model_seat(env, team, &member.name, req, place.resumed.is_some())?;
    let model = seat.client.clone();
    let mut assembly = assemble(env, team, &member, req, &prepared.dir, &place, lead, &kept)?
        .signals(signals.0, signals.1)
        .model(seat);
    if let Some(lead_seat) = env.lead_seat.clone() {
        assembly = assembly.lead_seat(lead_seat);
    }
    let shared = assembly.shared().clone();
    let Assembled {
        mut agent,
        instance,
    } = assembly.assemble().map_err(|e| {
        // Its directory cannot be opened: nothing waits on the wake.
        env.hub.unregister(team.name(), &member.name);
        ToolsUnavailable::into_error(e)
    })?;
    // Over its life: a resumed teammate goes on from what it spent (a fresh
    // one's record went with `clear_life` above).
    let budget = agent.fixed.budget.clone();
    if let Some(earlier) = kept.spent.load()? {
        budget.restore(earlier);
    }
    budget.keep_in(kept.spent.clone());
    // Sub-agents: made from this teammate's own parts.
    let seat = seat_config(env, req, &agent, shared, &prepared.dir, budget.clone());
    agent.subagents = Some(crate::subagents::Seat::new(seat));
    // A failure lets go of the wake registration and names the component.
    let instance = match Instance::new(env.runtime, &pre, agent, &instance).await {
        Ok(i) => i,
        Err(e) => {
            env.hub.unregister(team.name(), &member.name);
            return Err(Error::Component {
                path: req.component.clone(),
                message: format!("cannot start it: {e:#}"),
            });
        }
    };
    let (runner, handles) = runner(env, req, &place, instance, kept, registration);
    Ok(Ready {
        runner,
        member,
        auto_claim: req.settings.auto_claim,
        handles,
        stopping,
        budget,
        model,
    })
}

/// The line that opens each life of a teammate in its log (`teamhost
/// logs` shows where one run ends and the next begins).
pub(crate) const LIFE_MARK: &str = "--- teamhost:";

/// Appends the line that opens a life of `name` to its `log` (a log that
/// cannot be written is no reason to fail the start).
fn mark_life(log: &std::path::Path, name: &str, resumed: bool) {
    use std::io::Write;
    let how = if resumed { "resumed" } else { "started" };
    let line = format!(
        "{LIFE_MARK} {name} {how} {} (host process {}) ---\n",
        crate::protocol::time::timestamp_now(),
        std::process::id()
    );
    let opened = crate::durable::open_in_parent(log, |log| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
    });
    if let Ok(mut file) = opened {
        let _ = file.write_all(line.as_bytes());
    }
}

/// What the host keeps on this machine for one teammate's life, opened at
/// its start.
struct Kept {
    journal: crate::home::kept::TurnJournal,
    task_note: crate::home::kept::TaskNote,
    claims: crate::home::kept::ClaimLedger,
    saved_state: crate::home::kept::SavedState,
    spent: crate::home::kept::SpentRecord,
}

impl Kept {
    fn open(home: &crate::home::Home, team: &str, name: &str) -> Result<Kept> {
        Ok(Kept {
            journal: crate::home::kept::TurnJournal::of(home, team, name)?,
            task_note: crate::home::kept::TaskNote::of(home, team, name)?,
            claims: crate::home::kept::ClaimLedger::of(home, team, name)?,
            saved_state: crate::home::kept::SavedState::of(home, team, name)?,
            spent: crate::home::kept::SpentRecord::of(home, team, name)?,
        })
    }
}

/// The teammate's [`Assembly`]: its identity (the member's name, id and
/// colour; role, model and plan approval from its settings; where it
/// runs), its settings, its directory, the host's parts, what the host
/// keeps for it, and what a resumed one takes over.
#[allow(clippy::too_many_arguments)]
fn assemble(
    env: &SpawnEnv<'_>,
    team: &Team,
    member: &Member,
    req: &SpawnRequest,
    dir: &std::path::Path,
    place: &Placement,
    lead: String,
    kept: &Kept,
) -> Result<Assembly> {
    let settings = &req.settings;
    let identity = Identity {
        name: member.name.clone(),
        agent_id: member.agent_id.clone(),
        team: team.name().to_string(),
        color: member.color.clone().unwrap_or_default(),
        agent_type: settings
            .agent_type
            .clone()
            .unwrap_or_else(|| "general-purpose".into()),
        model: settings.model.clone().unwrap_or_default(),
        plan_mode_required: settings.plan_mode_required,
        backend_type: place.backend_type.clone(),
        pane_id: place.pane_id.clone(),
    };
    let shared = SharedParts {
        limits: settings.limits.clone(),
        tool_limits: tool_limits(&settings.limits),
        hooks: env.hooks.clone(),
        hidden_dirs: hidden_dirs(env, team),
        poll_interval: env.poll_interval,
        log: place.log.clone(),
        ..SharedParts::new(team.clone(), lead)
    };
    let resumed = place.resumed.as_ref();
    let tape = fetch_tape(env, team, &member.name, req)?;
    Ok(Assembly::new(shared, identity, dir)
        .fetch_tape(tape)
        .permissions(settings.permission_mode(), settings.rules.clone())
        .auto_approve_plans(env.auto_approve_plans)
        .network(settings.network.clone())
        .kept(kept.saved_state.clone(), kept.claims.clone())
        .earlier_life(
            resumed.map(|r| r.open_requests.clone()).unwrap_or_default(),
            resumed.and_then(|r| r.pending_plan.clone()),
        ))
}

/// Where a teammate with a network records or replays its WebFetch
/// fetches: beside the model's cassettes, in the run's cassette mode
/// (`{cassettes}/{team}/fetch/{name}.jsonl`); none in a live run.
fn fetch_tape(
    env: &SpawnEnv<'_>,
    team: &Team,
    name: &str,
    req: &SpawnRequest,
) -> Result<Option<Arc<crate::network::FetchTape>>> {
    use crate::model::CassetteMode;
    use crate::network::{FetchTape, TapeMode};
    if req.settings.network.is_none() {
        return Ok(None);
    }
    let hub = env.models.hub();
    let mode = match hub.mode() {
        CassetteMode::Live => return Ok(None),
        CassetteMode::Record => TapeMode::Record,
        CassetteMode::Replay | CassetteMode::ReplayLenient => TapeMode::Replay,
        CassetteMode::ReplayOrRecord => TapeMode::ReplayOrRecord,
    };
    let Some(dir) = hub.cassettes() else {
        return Ok(None);
    };
    let path = FetchTape::path_for(dir, team.name(), name).map_err(Error::Spawn)?;
    let tape = FetchTape::open(path, mode).map_err(Error::Spawn)?;
    Ok(Some(Arc::new(tape)))
}

/// The tools' limits from the teammate's: Bash's process tree gets its own
/// memory and CPU budget, and no Bash call outlives a turn's wall time.
fn tool_limits(limits: &crate::sandbox::Limits) -> crate::tools::ToolLimits {
    let defaults = crate::tools::ToolLimits::default();
    crate::tools::ToolLimits {
        max_output_bytes: limits.max_tool_output_bytes,
        bash_memory_bytes: limits.memory_bytes as u64,
        bash_cpu: limits.cpu_per_turn,
        bash_timeout: defaults.bash_timeout.min(limits.wall_per_turn),
        max_bash_timeout: defaults.max_bash_timeout.min(limits.wall_per_turn),
        ..defaults
    }
}

/// What the teammate's sub-agents are made from: its own parts, its
/// component, directory and model client, and the tree's budget.
fn seat_config(
    env: &SpawnEnv<'_>,
    req: &SpawnRequest,
    agent: &crate::runtime::AgentCtx,
    shared: SharedParts,
    dir: &std::path::Path,
    budget: Arc<crate::runtime::TreeBudget>,
) -> crate::subagents::SeatConfig {
    let identity = agent.fixed.identity.clone();
    let tree = crate::subagents::Tree::new(
        &env.home,
        shared.team.name(),
        &identity.name,
        Default::default(),
    );
    crate::subagents::SeatConfig {
        runtime: env.runtime.clone(),
        component: req.component.clone(),
        home: env.home.clone(),
        shared,
        identity,
        dir: dir.to_path_buf(),
        client: agent.model.client.clone(),
        depth: 0,
        limits_sub: Default::default(),
        definitions: req.settings.agents.clone().unwrap_or_default(),
        tree,
        budget,
        forked: false,
    }
}

/// The ends of a runner's channels its host keeps.
struct RunnerHandles {
    inject: crate::runner::inject::InjectSender,
    kill: crate::runner::kill::KillSwitch,
    state: watch::Receiver<TeammateState>,
}

/// The teammate's runner over its instance (which holds its identity), and
/// the handles its host keeps.
fn runner(
    env: &SpawnEnv<'_>,
    req: &SpawnRequest,
    place: &Placement,
    instance: Instance,
    kept: Kept,
    registration: crate::runner::wake::Registration,
) -> (Runner, RunnerHandles) {
    // The host knows an in-process teammate's state; one in its own process
    // is followed through `isActive` (`RunnerConfig::active_after`).
    let in_process = place.backend_type == BackendKind::InProcess.as_str();
    let (inject_tx, inject_rx) = crate::runner::inject::queue();
    let (kill_tx, kill_rx) = crate::runner::kill::switch();
    let (state_tx, state_rx) = watch::channel(TeammateState::Starting);
    let resumed = place.resumed.clone();
    let runner = Runner {
        instance,
        config: RunnerConfig {
            auto_claim: req.settings.auto_claim,
            poll_interval: env.fallback_poll(),
            fallback_polls_per_second: env.fallback_budget(),
            notifications: req.settings.notifications.unwrap_or_default(),
            active_after: if in_process {
                crate::runner::ACTIVE_AFTER
            } else {
                Duration::ZERO
            },
        },
        // An in-process member is registered idle (`in_process.rs`).
        recorded_active: in_process.then_some(false),
        idle_mark_due: false,
        resumed: resumed.is_some(),
        handed_back: resumed.and_then(|r| r.task),
        journal: Some(kept.journal),
        task_note: Some(kept.task_note),
        note_open: false,
        claims: Some(kept.claims),
        before_poll: None,
        links: RunnerLinks {
            wake: registration.wake,
            listening: registration.listening,
            runners: registration.runners,
            injected: inject_rx,
            kill: kill_rx,
            state: state_tx,
            events: env.events.clone(),
            turns: Arc::new(AtomicU64::new(0)),
            busy: Arc::new(AtomicBool::new(true)),
        },
    };
    let handles = RunnerHandles {
        inject: inject_tx,
        kill: kill_tx,
        state: state_rx,
    };
    (runner, handles)
}

impl Ready {
    /// The team's lead, as its config named it when the instance was made.
    pub(crate) fn lead(&self) -> &str {
        self.runner.lead()
    }

    /// The budgets the teammate shares with its tree over its life (a lead's
    /// seat counts what it writes for the lead here).
    pub(crate) fn budget(&self) -> &Arc<crate::runtime::TreeBudget> {
        &self.budget
    }

    /// Its model client: a lead's seat gives from its budget.
    pub(crate) fn model(&self) -> &crate::model::ModelClient {
        &self.model
    }

    /// The count of turns the runner has started (each turn adds one as it
    /// begins).
    pub(crate) fn turns(&self) -> Arc<AtomicU64> {
        self.runner.links.turns.clone()
    }

    /// Starts the runner as a tokio task.
    pub(crate) fn run(self, env: &SpawnEnv<'_>) -> Spawned {
        let Ready {
            runner,
            member,
            auto_claim,
            handles:
                RunnerHandles {
                    inject,
                    kill,
                    state,
                },
            stopping,
            budget: _,
            model: _,
        } = self;
        let turns = runner.links.turns.clone();
        let busy = runner.links.busy.clone();
        let hub = env.hub.clone();
        let (team_name, name) = (runner.team().name().to_string(), member.name.clone());
        // The runner's own future is the task (see `Runner::run_then`).
        let join = tokio::spawn(runner.run_then(move || hub.unregister(&team_name, &name)));
        Spawned {
            member,
            backend: BackendKind::InProcess,
            state,
            inject: Some(inject),
            kill,
            stopping,
            turns,
            busy,
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
        let root = files.root().to_path_buf();
        if !dirs.contains(&root) {
            dirs.push(root);
        }
    }
    dirs
}
