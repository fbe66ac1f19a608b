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
//! A monitor task per teammate then owns the process: it waits on it (the
//! child is always reaped: no zombies), follows the member's `isActive` in
//! `config.json` for the teammate's state, and on a forced stop sends SIGTERM,
//! then SIGKILL after [`BackendOptions::stop_timeout`]. When the process ends
//! while the member is still registered (a crash, SIGKILL, the OOM killer),
//! the teammate is reported dead: its open tasks return to `pending`, it is
//! removed from the team and the lead is told by `teamhost`.
//!
//! The argument list and the monitor are shared with the tmux backend.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use super::in_process::prepare;
use super::started::{self, Started};
use super::{Backend, BackendKind, BackendOptions, SpawnEnv, SpawnFuture, Spawned};
use crate::error::{Error, Result};
use crate::protocol::HOST_SENDER;
use crate::store::{Member, NewMember, OutgoingMessage, Team};
use crate::teammate::{Event, SpawnRequest, TeammateState};

/// The child-process [`Backend`].
pub(crate) struct ChildProcess;

impl Backend for ChildProcess {
    fn kind(&self) -> BackendKind {
        BackendKind::Process
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

async fn spawn(env: SpawnEnv<'_>, team: &Team, req: SpawnRequest) -> Result<Spawned> {
    let member = register(&env, team, &req, BackendKind::Process).await?;
    let rollback = |e: Error| undo_registration(team, &member.name, e);
    let log = log_file(&env, team, &member.name).map_err(rollback)?;
    let exe = checked_exe(env.backends).map_err(rollback)?;
    let mut cmd = tokio::process::Command::new(&exe);
    cmd.args(teammate_args(
        team,
        &store_home(team)?,
        &member,
        &req,
        &env.hooks,
        env.models,
    ))
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
    let child = cmd.spawn().map_err(|e| {
        rollback(Error::Invalid(format!(
            "cannot start {} for teammate {}: {e}; set TEAMHOST_EXE (or BackendOptions::teamhost_exe) to the teamhost binary",
            exe.display(),
            member.name
        )))
    })?;
    let pid = child.id().unwrap_or_default();
    if let Err(e) = started::record(
        &env.home,
        team.name(),
        &Started::new(&member.name, "process", pid),
    ) {
        tracing::warn!(teammate = %member.name, error = %e, "could not record the teammate's process");
    }
    Ok(monitor(
        &env,
        team,
        member,
        &req,
        Proc::Child(child),
        BackendKind::Process,
    ))
}

/// Checks the request, compiles its component, registers the member with
/// `kind`'s `backendType` and writes the spawn prompt to its inbox, as the
/// reference's lead does before starting an external teammate.
pub(crate) async fn register(
    env: &SpawnEnv<'_>,
    team: &Team,
    req: &SpawnRequest,
    kind: BackendKind,
) -> Result<Member> {
    let mut prepared = prepare(env.runtime, req).await?;
    let config = team.config()?;
    let member = team.add_member(NewMember {
        name: req.name.clone(),
        agent_type: req.agent_type.clone(),
        model: req.model.clone(),
        prompt: Some(req.prompt.clone()),
        color: None,
        plan_mode_required: req.plan_mode_required,
        cwd: Some(prepared.dir.display().to_string()),
        backend_type: Some(kind.as_str().into()),
        tmux_pane_id: Some(kind.as_str().into()),
        mode: req.mode.clone(),
        allowed_tools: req.allowed_tools.clone(),
        disallowed_tools: req.disallowed_tools.clone(),
    })?;
    let name = member.name.clone();
    let member = super::in_process::isolate(&env.home, team, req, member, &mut prepared)
        .map_err(|e| undo_registration(team, &name, e))?;
    team.deliver(
        &member.name,
        OutgoingMessage::new(config.lead_name(), req.prompt.clone()),
    )
    .map_err(|e| undo_registration(team, &member.name, e))?;
    Ok(member)
}

/// Removes a member whose start failed (and its unread prompt), returning `e`.
pub(crate) fn undo_registration(team: &Team, name: &str, e: Error) -> Error {
    if let Err(e2) = team.remove_member(name) {
        tracing::error!(teammate = %name, error = %e2, "could not undo a failed spawn");
    }
    if let Err(e2) = team.take_unread(name) {
        tracing::error!(teammate = %name, error = %e2, "could not clear the inbox of a failed spawn");
    }
    e
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

/// `{log_dir}/{team}/{name}.log`.
pub(crate) fn log_path(log_dir: &Path, team: &Team, name: &str) -> PathBuf {
    log_dir.join(team.name()).join(format!("{name}.log"))
}

/// `teamhost teammate` and its arguments: the reference's flags, then
/// teamhost's own (`--component`, `--home`, `--no-auto-claim`), and
/// `--notifications` and `--settings` (the host's hooks), always given so the
/// host's level and hooks win over what the child might find on its own.
pub(crate) fn teammate_args(
    team: &Team,
    store_home: &Path,
    member: &Member,
    req: &SpawnRequest,
    hooks: &crate::hooks::Hooks,
    models: &crate::teammate::ModelAccess,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["teammate".into()];
    let mut flag = |k: &str, v: &str| {
        a.push(k.into());
        a.push(v.into());
    };
    flag("--agent-id", &member.agent_id);
    flag("--agent-name", &member.name);
    flag("--team-name", team.name());
    flag("--agent-color", member.color.as_deref().unwrap_or("blue"));
    if let Ok(Some(session)) = team.config().map(|c| c.lead_session_id) {
        flag("--parent-session-id", &session);
    }
    flag(
        "--agent-type",
        req.agent_type.as_deref().unwrap_or("general-purpose"),
    );
    if let Some(model) = &req.model {
        flag("--model", model);
    }
    match req.mode.as_deref() {
        Some("bypassPermissions") => a.push("--dangerously-skip-permissions".into()),
        Some(mode) => {
            a.push("--permission-mode".into());
            a.push(mode.into());
        }
        None => {}
    }
    if req.plan_mode_required {
        a.push("--plan-mode-required".into());
    }
    if !req.allowed_tools.is_empty() {
        a.push("--allowedTools".into());
        a.push(req.allowed_tools.join(",").into());
    }
    if !req.disallowed_tools.is_empty() {
        a.push("--disallowedTools".into());
        a.push(req.disallowed_tools.join(",").into());
    }
    a.push("--component".into());
    a.push(absolute(&req.component).into_os_string());
    a.push("--home".into());
    a.push(absolute(store_home).into_os_string());
    if !req.auto_claim {
        a.push("--no-auto-claim".into());
    }
    a.push("--notifications".into());
    a.push(req.notifications.unwrap_or_default().as_str().into());
    a.push("--settings".into());
    a.push(hooks.to_settings().to_string().into());
    a.extend(models.child_args().iter().map(OsString::from));
    if let Some(policy) = &req.model_policy {
        a.extend(policy_flags(policy).into_iter().map(OsString::from));
    }
    a
}

/// The flags that give a `teamhost teammate` child `policy` exactly (the
/// default model goes first in `--model-allow`; `--model` is passed apart,
/// as the reference does).
pub(crate) fn policy_flags(policy: &crate::model::ModelPolicy) -> Vec<String> {
    let mut allow = vec![policy.default.clone()];
    allow.extend(
        policy
            .allow
            .iter()
            .filter(|a| **a != policy.default)
            .cloned(),
    );
    let mut f = vec!["--model-allow".to_string(), allow.join(",")];
    f.extend([
        "--model-max-tokens".into(),
        policy.max_tokens_per_call.to_string(),
    ]);
    if let Some(n) = policy.calls_per_turn {
        f.extend(["--model-calls-per-turn".into(), n.to_string()]);
    }
    if let Some(n) = policy.budget_tokens {
        f.extend(["--model-budget-tokens".into(), n.to_string()]);
    }
    if let Some(micro) = policy.budget_microdollars {
        f.extend([
            "--model-budget-usd".into(),
            format!("{:.6}", micro as f64 / 1e6),
        ]);
    }
    if let Some(n) = policy.requests_per_minute {
        f.extend(["--model-rpm".into(), n.to_string()]);
    }
    f
}

/// The home of the file store `team` lives in, for a child teammate's
/// `--home`. A teammate in another process reaches its team through the
/// reference's files, so these backends need the file store.
pub(crate) fn store_home(team: &Team) -> Result<PathBuf> {
    match team.store().file_store() {
        Some(files) => Ok(files.home().root().to_path_buf()),
        None => Err(Error::Invalid(format!(
            "team {} is not kept in files (its store is {:?}); teammates in their own process or tmux pane reach a team through its files: use the in-process backend, or a host built over a file store",
            team.name(),
            team.store().backend()
        ))),
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The process behind an external teammate.
pub(crate) enum Proc {
    /// A child of this process: waited on directly.
    Child(tokio::process::Child),
    /// A tmux pane's process: not our child; watched through a pidfd.
    Pane {
        pid: u32,
        fd: OwnedFd,
        socket: Option<PathBuf>,
        pane: String,
    },
}

/// How the process ended.
enum Ending {
    Status(ExitStatus),
    /// A dead pane whose exit status tmux never collected.
    DeadWithoutStatus,
    /// A pane closed under its process, or a process that could not be
    /// waited for.
    Unknown,
}

impl Ending {
    fn describe(&self, pid: u32) -> String {
        match self {
            Ending::Status(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("its process (pid {pid}) exited with status {c}"),
                (None, Some(sig)) => format!(
                    "its process (pid {pid}) was killed by signal {sig} ({})",
                    signal_name(sig)
                ),
                _ => format!("its process (pid {pid}) ended"),
            },
            Ending::DeadWithoutStatus | Ending::Unknown => {
                format!("its process (pid {pid}) ended")
            }
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        _ => "signal",
    }
}

/// Everything the monitor task needs.
struct Watch {
    team: Team,
    home: crate::store::Home,
    name: String,
    agent_id: String,
    pid: u32,
    kind: BackendKind,
    stop_timeout: Duration,
    poll_interval: Duration,
    events: broadcast::Sender<Event>,
    state: watch::Sender<TeammateState>,
    turns: Arc<AtomicU64>,
}

/// Starts the monitor task of an external teammate and returns its handle.
pub(crate) fn monitor(
    env: &SpawnEnv<'_>,
    team: &Team,
    member: Member,
    req: &SpawnRequest,
    proc: Proc,
    kind: BackendKind,
) -> Spawned {
    let pid = match &proc {
        Proc::Child(c) => c.id().unwrap_or_default(),
        Proc::Pane { pid, .. } => *pid,
    };
    let (kill_tx, kill_rx) = watch::channel(false);
    let (state_tx, state_rx) = watch::channel(TeammateState::Starting);
    let turns = Arc::new(AtomicU64::new(0));
    let w = Watch {
        team: team.clone(),
        home: env.home.clone(),
        name: member.name.clone(),
        agent_id: member.agent_id.clone(),
        pid,
        kind,
        stop_timeout: env.backends.stop_timeout,
        poll_interval: env.poll_interval,
        events: env.events.clone(),
        state: state_tx,
        turns: turns.clone(),
    };
    let join = tokio::spawn(w.run(proc, kill_rx, env.config_changes.clone()));
    Spawned {
        member,
        backend: kind,
        state: state_rx,
        inject: None,
        kill: kill_tx,
        turns,
        busy: Arc::new(AtomicBool::new(false)),
        pending_injections: Arc::new(AtomicUsize::new(0)),
        auto_claim: req.auto_claim,
        stop_grace: env.backends.stop_timeout + Duration::from_secs(10),
        join,
    }
}

impl Watch {
    async fn run(
        self,
        proc: Proc,
        mut kill: watch::Receiver<bool>,
        mut config: watch::Receiver<u64>,
    ) -> TeammateState {
        let (pane, ended) = match proc {
            Proc::Child(mut child) => {
                let ended: std::pin::Pin<Box<dyn std::future::Future<Output = Ending> + Send>> =
                    Box::pin(async move {
                        match child.wait().await {
                            Ok(s) => Ending::Status(s),
                            Err(e) => {
                                tracing::error!(error = %e, "cannot wait for a teammate process");
                                Ending::Unknown
                            }
                        }
                    });
                (None, ended)
            }
            Proc::Pane {
                pid,
                fd,
                socket,
                pane,
            } => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let thread = std::thread::Builder::new()
                    .name(format!("teamhost-pane-{pid}"))
                    .spawn(move || {
                        let _ = started::wait_exit(&fd, None);
                        let _ = tx.send(());
                    });
                if let Err(e) = thread {
                    tracing::error!(error = %e, "cannot watch a pane's process");
                }
                let (s, p) = (socket.clone(), pane.clone());
                let ended: std::pin::Pin<Box<dyn std::future::Future<Output = Ending> + Send>> =
                    Box::pin(async move {
                        let _ = rx.await;
                        let status = tokio::task::spawn_blocking(move || {
                            super::tmux::dead_status(s.as_deref(), &p, pid)
                        })
                        .await
                        .ok();
                        match status {
                            Some(super::tmux::PaneEnd::Status(s)) => Ending::Status(s),
                            Some(super::tmux::PaneEnd::DeadWithoutStatus) => {
                                Ending::DeadWithoutStatus
                            }
                            Some(super::tmux::PaneEnd::Gone) | None => Ending::Unknown,
                        }
                    });
                (Some((socket, pane)), ended)
            }
        };
        let mut ended = ended;
        let mut killing = false;
        let mut sigkill_at: Option<tokio::time::Instant> = None;
        let mut watching_config = true;
        self.refresh().await;
        let ending = loop {
            tokio::select! {
                e = &mut ended => break e,
                changed = kill.changed(), if !killing => {
                    if changed.is_err() {
                        // The host dropped this teammate's handle: nobody
                        // can ask for a kill any more; keep watching.
                        killing = true;
                    } else if *kill.borrow() {
                        killing = true;
                        started::signal(self.pid, libc::SIGTERM);
                        sigkill_at = Some(tokio::time::Instant::now() + self.stop_timeout);
                    }
                }
                _ = async { tokio::time::sleep_until(sigkill_at.expect("guarded")).await }, if sigkill_at.is_some() => {
                    tracing::warn!(teammate = %self.name, pid = self.pid, "no exit after SIGTERM; sending SIGKILL");
                    started::signal(self.pid, libc::SIGKILL);
                    sigkill_at = None;
                }
                changed = config.changed(), if watching_config => {
                    if changed.is_err() {
                        watching_config = false;
                    }
                    self.refresh().await;
                }
                _ = tokio::time::sleep(self.poll_interval) => self.refresh().await,
            }
        };
        let killed = killing && *kill.borrow();
        let final_state = self.finish(ending, killed, pane).await;
        self.set_state(final_state.clone());
        final_state
    }

    /// Follows `isActive` of the member: `true` → active, `false` → idle.
    async fn refresh(&self) {
        let (team, name) = (self.team.clone(), self.name.clone());
        let active = tokio::task::spawn_blocking(move || {
            team.config()
                .ok()
                .and_then(|c| c.member(&name).and_then(|m| m.is_active))
        })
        .await
        .ok()
        .flatten();
        match active {
            Some(true) => {
                if *self.state.borrow() != TeammateState::Active {
                    self.turns.fetch_add(1, Ordering::Relaxed);
                }
                self.set_state(TeammateState::Active)
            }
            Some(false) => self.set_state(TeammateState::Idle),
            None => {}
        }
    }

    /// After the process ended: close a pane it left open, leave the team in
    /// its place if it did not, drop its record, and say how it ended.
    async fn finish(
        &self,
        ending: Ending,
        killed: bool,
        pane: Option<(Option<PathBuf>, String)>,
    ) -> TeammateState {
        let how = ending.describe(self.pid);
        let home = self.home.clone();
        let (team, name, id, pid) = (
            self.team.clone(),
            self.name.clone(),
            self.agent_id.clone(),
            self.pid,
        );
        let cleanup = tokio::task::spawn_blocking(move || -> Result<bool> {
            if let Some((socket, pane)) = pane {
                super::tmux::kill_pane_if_ours(socket.as_deref(), &pane, pid);
            }
            if let Err(e) = started::remove(&home, team.name(), &name) {
                tracing::warn!(teammate = %name, error = %e, "could not remove the process record");
            }
            let config = match team.config() {
                Ok(c) => c,
                Err(Error::TeamNotFound { .. }) => return Ok(false),
                Err(e) => return Err(e),
            };
            if config.member(&name).is_none() {
                return Ok(false); // it left the team itself
            }
            let unassigned = team.unassign_agent(&name, &id, true)?;
            match team.remove_member(&name) {
                Ok(_) | Err(Error::MemberNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            let why = if killed {
                format!("{name} was stopped by the host: {how}")
            } else {
                format!("{name} died: {how}")
            };
            team.deliver(
                config.lead_name(),
                OutgoingMessage::new(HOST_SENDER, format!("{why}. {}", unassigned.notification)),
            )?;
            Ok(true)
        })
        .await;
        let cleaned_up = match cleanup {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                tracing::error!(teammate = %self.name, error = %e, "cleanup after a teammate's process ended failed");
                true
            }
            Err(e) => {
                tracing::error!(teammate = %self.name, error = %e, "cleanup after a teammate's process ended panicked");
                true
            }
        };
        let how = ending.describe(self.pid);
        if killed {
            return TeammateState::Killed;
        }
        if cleaned_up {
            return TeammateState::Failed(format!("died: {how}"));
        }
        match ending {
            Ending::Status(s) if s.success() => TeammateState::Completed,
            Ending::Status(s) if s.code().is_some_and(|c| c > 128) => TeammateState::Killed,
            Ending::Status(_) => {
                TeammateState::Failed(format!("{how}; its log is {}", self.kind_log_hint()))
            }
            // Its pane died on its own and it had left the team itself, which
            // a teammate does once it has approved its shutdown; tmux marked
            // the pane dead without ever collecting the exit status.
            Ending::DeadWithoutStatus => TeammateState::Completed,
            // Its pane was closed under it (an approved exit keeps the pane,
            // and its status, until the host reads it).
            Ending::Unknown => TeammateState::Killed,
        }
    }

    fn kind_log_hint(&self) -> &'static str {
        match self.kind {
            BackendKind::Tmux => "in its pane and log file",
            _ => "in its log file",
        }
    }

    fn set_state(&self, state: TeammateState) {
        let changed = self.state.send_if_modified(|s| {
            if *s == state || s.is_finished() {
                false
            } else {
                *s = state.clone();
                true
            }
        });
        if changed {
            let _ = self.events.send(Event::StateChanged {
                team: self.team.name().into(),
                name: self.name.clone(),
                state,
            });
        }
    }
}

/// The `teamhost` binary for external teammates, checked to exist when it is
/// a path.
pub(crate) fn checked_exe(opts: &BackendOptions) -> Result<PathBuf> {
    let exe = opts.exe();
    if exe.components().count() > 1 && !exe.is_file() {
        return Err(Error::Invalid(format!(
            "the teamhost binary {} does not exist; set TEAMHOST_EXE (or BackendOptions::teamhost_exe) to it",
            exe.display()
        )));
    }
    Ok(exe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::NotificationLevel;
    use crate::store::test_team;

    #[test]
    fn teammate_args_always_pass_the_notification_level_on() {
        let (tmp, team) = test_team(&["w"]);
        let member = team.config().unwrap().member("w").unwrap().clone();
        let level_of = |notifications| {
            let mut req = SpawnRequest::new("w", "w.wasm", "p", tmp.path());
            req.notifications = notifications;
            let args = teammate_args(
                &team,
                tmp.path(),
                &member,
                &req,
                &Default::default(),
                &Default::default(),
            );
            let at = args
                .iter()
                .position(|a| a == "--notifications")
                .expect("--notifications is passed");
            args[at + 1].clone()
        };
        assert_eq!(
            level_of(Some(NotificationLevel::StateChanges)),
            "state-changes"
        );
        assert_eq!(level_of(Some(NotificationLevel::None)), "none");
        assert_eq!(level_of(None), "all");
    }
}
