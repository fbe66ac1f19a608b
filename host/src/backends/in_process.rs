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

use super::assembly::{instantiate, isolate, prepare, Placement, Prepared};
use super::{Backend, BackendKind, SpawnEnv, SpawnFuture, Spawned};
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
/// members in one write and then starts each here.
pub(crate) async fn start_registered(
    env: SpawnEnv<'_>,
    team: &Team,
    req: SpawnRequest,
    prepared: Prepared,
    member: store::Member,
) -> Result<Spawned> {
    let rollback = |e: Error| {
        if let Err(e2) = team.remove_member(&member.name) {
            tracing::error!(teammate = %member.name, error = %e2, "could not undo a failed spawn");
        }
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
    // The hash of what runs, for the spawn record.
    let hash = prepared.hash.clone();
    let ready = instantiate(&env, team, member.clone(), &req, prepared, place)
        .await
        .map_err(rollback)?;
    // The prompt goes in only once the instance is ready, so a failed spawn
    // leaves nothing for the next teammate of the same name.
    // And the hook (the spawn record) after it, on the same blocking
    // thread: one hand-off, and no synced write on a runtime worker.
    let (delivering, to, prompt) = (team.clone(), member.clone(), req.prompt.clone());
    let before_start = env.before_start.clone();
    store::blocking("delivering the prompt", move || {
        let lead = delivering.config()?.lead_name().to_string();
        delivering.deliver(&to.name, OutgoingMessage::new(&lead, prompt))?;
        if let Some(hook) = before_start {
            hook(&to, Some(&hash));
        }
        Ok(())
    })
    .await
    .map_err(rollback)?;
    Ok(ready.run(&env))
}
