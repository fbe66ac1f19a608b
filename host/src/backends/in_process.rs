//! The in-process backend: the teammate's runner is a tokio task of the host
//! process. Spawning registers the member (name made unique, colour in join
//! order, `tmuxPaneId`/`backendType` `in-process`), writes the initial prompt as
//! the first message of its inbox from the lead, instantiates the component in
//! a sandbox holding only the teammate's directory, and starts the runner.
//! If any step after registration fails, the member is removed again.
//!
//! The steps are also used on their own: [`prepare`] checks a request before
//! anything is written, [`instantiate`] builds the sandboxed instance for an
//! existing member, and [`Ready::run`] starts its runner. `Host::attach` (the
//! `teamhost teammate` process) uses the last two for a member its lead
//! registered.

use super::assembly::{instantiate, isolate, prepare, Placement, Prepared, Ready};
use super::{Backend, BackendKind, BeforeStart, SpawnEnv, SpawnFuture, Spawned};
use crate::error::{Error, Result};
use crate::store::{self, NewMember, OutgoingMessage, Team};
use crate::teammate::SpawnRequest;

/// Backend name recorded in the config.
pub const BACKEND: &str = "in-process";

/// The in-process [`Backend`].
pub(crate) struct InProcess;

impl Backend for InProcess {
    fn kind(&self) -> BackendKind {
        BackendKind::InProcess
    }

    fn spawn<'a>(
        &'a self,
        env: SpawnEnv<'a>,
        team: &'a Team,
        req: SpawnRequest,
    ) -> SpawnFuture<'a> {
        Box::pin(spawn(env, team, req))
    }
}

/// Spawns `req` into `team`. See the module docs.
pub(crate) async fn spawn(env: SpawnEnv<'_>, team: &Team, req: SpawnRequest) -> Result<Spawned> {
    let prepared = prepare(env.runtime, &req).await?;
    let new = entry(&req, &prepared);
    // Off the runtime's workers: spawns made at the same time then share
    // one config write (`store::blocking`).
    let registering = team.clone();
    let member = store::blocking("registering the teammate", move || {
        registering.add_member(new)
    })
    .await?;
    start_registered(env, team, req, prepared, member).await
}

/// The member entry `req` registers (`prepared` holds its directory).
pub(crate) fn entry(req: &SpawnRequest, prepared: &Prepared) -> NewMember {
    NewMember {
        // Recorded idle: the runner writes `isActive: true` only for a turn
        // that lasts (`RunnerConfig::active_after`).
        is_active: Some(false),
        ..req.settings.new_member(
            &req.name,
            req.color.as_deref(),
            &req.prompt,
            &prepared.dir.display().to_string(),
            BACKEND,
        )
    }
}

/// The rest of a spawn once `member` (registered from [`entry`]) is in the
/// config: its worktree, its instance, its prompt, then its runner. A step
/// that fails removes the member again. `Host::spawn_many` registers many
/// members in one write and takes each through the same steps, the prompts
/// of a chunk delivered together ([`Instantiated`], [`deliver_prompts`]).
pub(crate) async fn start_registered(
    env: SpawnEnv<'_>,
    team: &Team,
    req: SpawnRequest,
    prepared: Prepared,
    member: store::Member,
) -> Result<Spawned> {
    let made = instantiate_registered(&env, team, req, prepared, member).await?;
    let name = made.member.name.clone();
    let (delivering, before_start) = (team.clone(), env.before_start.clone());
    // The hook (the spawn record) on the same blocking thread as the
    // prompt: one hand-off, and no synced write on a runtime worker.
    let delivered = store::blocking("delivering the prompt", move || {
        Ok(deliver_prompts(&delivering, vec![(made, before_start)]))
    })
    .await;
    match delivered.map(|mut d| d.pop().expect("one result per teammate")) {
        Ok((made, prompted)) => prompted.map(|()| made.run(&env)),
        // A panic on the way: whether the prompt is in is not known.
        Err(e) => {
            undo_registration(team, &name);
            Err(e)
        }
    }
}

/// A registered member whose instance is built, its prompt not delivered
/// yet: what [`deliver_prompts`] gives its prompt, then [`Instantiated::run`]
/// starts.
pub(crate) struct Instantiated {
    ready: Ready,
    member: store::Member,
    prompt: String,
    /// The hash of what runs, for the spawn record.
    hash: String,
}

impl Instantiated {
    /// Its member's name.
    pub(crate) fn member_name(&self) -> &str {
        &self.member.name
    }

    /// Starts its runner: only once its prompt is in (the spawn record, if
    /// any, written with it).
    pub(crate) fn run(self, env: &SpawnEnv<'_>) -> Spawned {
        self.ready.run(env)
    }
}

/// Removes a member whose start failed; an error is only logged (the
/// start's own error is what the caller reports).
pub(crate) fn undo_registration(team: &Team, name: &str) {
    if let Err(e) = team.remove_member(name) {
        tracing::error!(teammate = %name, error = %e, "could not undo a failed spawn");
    }
}

/// Builds `member`'s worktree (if any) and instance; on a failure the
/// member is removed again.
pub(crate) async fn instantiate_registered(
    env: &SpawnEnv<'_>,
    team: &Team,
    req: SpawnRequest,
    prepared: Prepared,
    member: store::Member,
) -> Result<Instantiated> {
    let rollback = |e: Error| {
        undo_registration(team, &member.name);
        e
    };
    let mut prepared = prepared;
    let member = isolate(&env.home, team, &req, member.clone(), &mut prepared).map_err(rollback)?;
    let log = env
        .log_dir
        .join(team.name())
        .join(format!("{}.log", member.name));
    let place = Placement {
        backend_type: BACKEND.into(),
        pane_id: BACKEND.into(),
        log: Some(log),
        resumed: None,
    };
    let hash = prepared.hash.clone();
    let ready = instantiate(env, team, member.clone(), &req, prepared, place)
        .await
        .map_err(rollback)?;
    Ok(Instantiated {
        ready,
        member,
        prompt: req.prompt,
        hash,
    })
}

/// Blocking: gives each instantiated teammate its prompt from the lead,
/// all in one batch ([`Team::deliver_many`]), and runs the `before_start`
/// hook (the spawn record) of each whose prompt is in. The prompt goes in
/// only once the instance is ready, so a failed spawn leaves nothing for
/// the next teammate of the same name; a teammate whose prompt failed is
/// removed again here. Returns each teammate with its result, in order.
pub(crate) fn deliver_prompts(
    team: &Team,
    starts: Vec<(Instantiated, Option<BeforeStart>)>,
) -> Vec<(Instantiated, Result<()>)> {
    // From the lead its instance knows (read from the config when it was
    // made): no second read of the config here.
    let prompts = starts
        .iter()
        .map(|(made, _)| {
            let prompt = OutgoingMessage::new(made.ready.lead(), made.prompt.clone());
            (made.member.name.clone(), prompt)
        })
        .collect();
    let delivered = team.deliver_many(prompts);
    starts
        .into_iter()
        .zip(delivered)
        .map(|((made, hook), delivered)| {
            let delivered = delivered.map(|_| ());
            match &delivered {
                Ok(()) => {
                    if let Some(hook) = hook {
                        // A panic there is a host bug; it costs this
                        // teammate its spawn record, not the group its
                        // start.
                        let recording = std::panic::AssertUnwindSafe(|| {
                            hook(&made.member, Some(&made.hash))
                        });
                        if std::panic::catch_unwind(recording).is_err() {
                            tracing::error!(teammate = %made.member.name, "writing the spawn record panicked");
                        }
                    }
                }
                Err(_) => undo_registration(team, &made.member.name),
            }
            (made, delivered)
        })
        .collect()
}
