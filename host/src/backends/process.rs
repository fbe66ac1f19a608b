//! The process backend: each teammate is a child process running
//! `teamhost teammate` with the reference's flags, in its own process group,
//! its stdout and stderr appended to `{log_dir}/{team}/{name}.log`.
//!
//! Spawning does what a Claude Code lead does for an external teammate:
//! compile the component (so a bad one fails here, and the child finds it in
//! the cache), register the member (`backendType`/`tmuxPaneId` `process`),
//! write the spawn prompt as the first message of its inbox, start the
//! process, and record it ([`started`](super::started)).
//!
//! A monitor task per teammate then owns the process ([`super::monitor`]).
//! The registration and the command line ([`super::child`]) and the monitor
//! are shared with the tmux backend, and so is the `Backend` itself
//! ([`super::child::ChildBackend`]): the two differ in how they start the child.

use std::process::Stdio;

use super::child::{begin, log_path, teammate_args, ChildBackend, Starting};
use super::monitor::{monitor, Proc};
use super::{BackendKind, SpawnEnv, Spawned};
use crate::error::{Error, Result};
use crate::home::started::Started;
use crate::store::{Member, Team};
use crate::teammate::SpawnRequest;

/// The child-process [`Backend`](super::Backend).
pub(crate) fn backend() -> ChildBackend {
    ChildBackend::new(BackendKind::Process, |env, team, req, rejoining| {
        Box::pin(start(env, team, req, rejoining))
    })
}

/// Spawns `req` (registering it), or starts the registered `rejoining`
/// member again with `--resumed`.
async fn start(
    env: SpawnEnv<'_>,
    team: &Team,
    req: SpawnRequest,
    rejoining: Option<Member>,
) -> Result<Spawned> {
    let starting = begin(
        &env,
        team,
        &req,
        BackendKind::Process,
        rejoining,
        |_| Ok(()),
    )
    .await?;
    let rollback = |e: Error| starting.rollback(team, e);
    let Starting {
        store, member, exe, ..
    } = &starting;
    let log = log_file(&env, team, &member.name).map_err(rollback)?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(teammate_args(
        team, store, member, &req, &env.hooks, env.models,
    ))
    .args(starting.flags())
    .current_dir(member.cwd.as_deref().unwrap_or("."))
    .stdin(Stdio::null())
    .stdout(
        log.try_clone()
            .map_err(|e| rollback(Error::io("open", "log", e)))?,
    )
    .stderr(log)
    // Its own process group: a Ctrl-C meant for the host does not reach
    // it; the host stops it through the protocol or with signals.
    .process_group(0)
    .env_remove("TMUX")
    .env_remove("TMUX_PANE")
    .kill_on_drop(false);
    // The URL's credentials and the TLS/credentials files: in the
    // environment only, never on the command line (`ps` shows that).
    for (k, v) in store.env() {
        cmd.env(k, v);
    }
    let child = cmd.spawn().map_err(|e| {
        rollback(Error::Backend(format!(
            "cannot start {} for teammate {}: {e}; set TEAMHOST_EXE (or BackendOptions::teamhost_exe) to the teamhost binary",
            exe.display(),
            member.name
        )))
    })?;
    let pid = child.id().unwrap_or_default();
    if let Err(e) = crate::home::started::record(
        &env.home,
        team.name(),
        &Started::new(&member.name, "process", pid),
    ) {
        tracing::warn!(teammate = %member.name, error = %e, "could not record the teammate's process");
    }
    Ok(monitor(
        &env,
        team,
        starting.member,
        &req,
        Proc::Child(child),
        BackendKind::Process,
        starting.key,
    ))
}

fn log_file(env: &SpawnEnv<'_>, team: &Team, name: &str) -> Result<std::fs::File> {
    let path = log_path(&env.log_dir, team, name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| Error::io("open", path, e))
}
