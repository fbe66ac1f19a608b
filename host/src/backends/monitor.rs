//! The monitor of an external teammate (a child process or a tmux pane):
//! one task per teammate owns its process. It waits on it (a child is always
//! reaped: no zombies; a pane's process through a pidfd), follows the
//! member's `isActive` in the team config for the teammate's state, and on a
//! forced stop sends SIGTERM, then SIGKILL after
//! [`BackendOptions::stop_timeout`](super::BackendOptions::stop_timeout).
//! When the process ends while the member is still registered (a crash,
//! SIGKILL, the OOM killer), the teammate is reported dead: its open tasks
//! return to `pending`, it is removed from the team and the lead is told by
//! `teamhost`.
//!
//! **The stop reaches the process at once.** When the host stops the
//! teammate's waits for the lead ([`crate::runtime::Stopping`]: the team is
//! shut down, the teammate killed), the monitor sends its process SIGUSR1,
//! and again at every poll until it ends (a signal that came while the
//! process was still starting, when `teamhost teammate` ignores it, is not
//! lost). `teamhost teammate` then ends its own waits the same way
//! ([`Host::stop_waits`](crate::embed::Host::stop_waits)): a permission
//! request waiting for the lead is denied, the turn ends and the teammate
//! takes its shutdown request, instead of waiting for the shutdown timeout
//! and being killed.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use super::panes::{dead_status, kill_pane_if_ours, pane_said, PaneEnd};
use super::started;
use super::{BackendKind, SpawnEnv, Spawned};
use crate::error::{Error, Result};
use crate::protocol::HOST_SENDER;
use crate::store::{Member, OutgoingMessage, Team};
use crate::teammate::{Event, SpawnRequest, TeammateState};

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
    /// A `teamhost teammate` process a host that died started (the process
    /// backend), taken over by a resume: not our child; watched through a
    /// pidfd, its exit status unknowable.
    Orphan { pid: u32, fd: OwnedFd },
}

/// How the process ended.
enum Ending {
    Status(ExitStatus),
    /// A dead pane whose exit status tmux never collected.
    DeadWithoutStatus,
    /// A pane closed under its process, or a process that could not be
    /// waited for.
    Unknown,
    /// An adopted process ([`Proc::Orphan`]) ended; only its parent could
    /// have read how.
    Orphaned,
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
            Ending::DeadWithoutStatus | Ending::Unknown | Ending::Orphaned => {
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
    home: crate::home::Home,
    name: String,
    /// Its log file (`{log_dir}/{team}/{name}.log`), where its own process
    /// writes why it failed.
    log: PathBuf,
    agent_id: String,
    pid: u32,
    kind: BackendKind,
    stop_timeout: Duration,
    poll_interval: Duration,
    events: broadcast::Sender<Event>,
    state: watch::Sender<TeammateState>,
    turns: Arc<AtomicU64>,
    /// Set by the host when it stops the teammate's waits: told to the
    /// process with SIGUSR1.
    stopping: crate::runtime::Stopping,
    /// The lead key it was started with, forgotten when it ends.
    lead_key: Option<super::child::LeadKey>,
}

/// Starts the monitor task of an external teammate and returns its handle.
pub(crate) fn monitor(
    env: &SpawnEnv<'_>,
    team: &Team,
    member: Member,
    req: &SpawnRequest,
    proc: Proc,
    kind: BackendKind,
    lead_key: Option<super::child::LeadKey>,
) -> Spawned {
    let pid = match &proc {
        Proc::Child(c) => c.id().unwrap_or_default(),
        Proc::Pane { pid, .. } | Proc::Orphan { pid, .. } => *pid,
    };
    let (kill_tx, kill_rx) = crate::runner::kill::switch();
    let (state_tx, state_rx) = watch::channel(TeammateState::Starting);
    let turns = Arc::new(AtomicU64::new(0));
    let stopping = crate::runtime::Stopping::default();
    let w = Watch {
        team: team.clone(),
        home: env.home.clone(),
        name: member.name.clone(),
        log: super::child::log_path(&env.log_dir, team, &member.name),
        agent_id: member.agent_id.clone(),
        pid,
        kind,
        stop_timeout: env.backends.stop_timeout,
        poll_interval: env.poll_interval,
        events: env.events.clone(),
        state: state_tx,
        turns: turns.clone(),
        stopping: stopping.clone(),
        lead_key,
    };
    let join = tokio::spawn(w.run(proc, kill_rx, env.config_changes.clone()));
    Spawned {
        member,
        backend: kind,
        state: state_rx,
        inject: None,
        kill: kill_tx,
        stopping,
        turns,
        busy: Arc::new(AtomicBool::new(false)),
        auto_claim: req.settings.auto_claim,
        stop_grace: env.backends.stop_timeout + Duration::from_secs(10),
        join,
    }
}

impl Watch {
    async fn run(
        self,
        proc: Proc,
        mut kill: crate::runner::kill::KillWatch,
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
            Proc::Orphan { pid, fd } => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let thread = std::thread::Builder::new()
                    .name(format!("teamhost-orphan-{pid}"))
                    .spawn(move || {
                        let _ = started::wait_exit(&fd, None);
                        let _ = tx.send(());
                    });
                if let Err(e) = thread {
                    tracing::error!(error = %e, "cannot watch an adopted teammate's process");
                }
                let ended: std::pin::Pin<Box<dyn std::future::Future<Output = Ending> + Send>> =
                    Box::pin(async move {
                        let _ = rx.await;
                        Ending::Orphaned
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
                        let status =
                            tokio::task::spawn_blocking(move || dead_status(s.as_deref(), &p, pid))
                                .await
                                .ok();
                        match status {
                            Some(PaneEnd::Status(s)) => Ending::Status(s),
                            Some(PaneEnd::DeadWithoutStatus) => Ending::DeadWithoutStatus,
                            Some(PaneEnd::Gone) | None => Ending::Unknown,
                        }
                    });
                (Some((socket, pane)), ended)
            }
        };
        let mut ended = ended;
        let mut killing = false;
        let mut sigkill_at: Option<tokio::time::Instant> = None;
        let mut watching_config = true;
        let mut told_to_stop = false;
        self.refresh().await;
        let ending = loop {
            tokio::select! {
                e = &mut ended => break e,
                changed = kill.changed(), if !killing => {
                    if changed.is_err() {
                        // The host dropped this teammate's handle: nobody
                        // can ask for a kill any more; keep watching.
                        killing = true;
                    } else {
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
                _ = self.stopping.stopped(), if !told_to_stop => {
                    told_to_stop = true;
                    started::signal(self.pid, libc::SIGUSR1);
                }
                _ = tokio::time::sleep(self.poll_interval) => {
                    if told_to_stop {
                        // Once more: one sent while it was starting was
                        // ignored.
                        started::signal(self.pid, libc::SIGUSR1);
                    }
                    self.refresh().await
                }
            }
        };
        let killed = killing && kill.is_tripped();
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
        let lead_key = self.lead_key.clone();
        let cleanup = tokio::task::spawn_blocking(move || -> Result<(bool, Option<String>)> {
            // What a pane's command said (a command that died at once said
            // it only there), read before the pane is closed.
            let said = pane.as_ref().and_then(|(socket, pane)| {
                let said = pane_said(socket.as_deref(), pane, pid);
                kill_pane_if_ours(socket.as_deref(), pane, pid);
                said
            });
            if let Err(e) = crate::home::started::remove(&home, team.name(), &name) {
                tracing::warn!(teammate = %name, error = %e, "could not remove the process record");
            }
            // Its lead key signs for nobody now (a new start of the name
            // has a key of its own, which stays).
            super::child::forget_lead_key(&team, &name, lead_key.as_ref());
            let config = match team.config() {
                Ok(c) => c,
                Err(Error::TeamNotFound { .. }) => return Ok((false, said)),
                Err(e) => return Err(e),
            };
            if config.member(&name).is_none() {
                return Ok((false, said)); // it left the team itself
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
            Ok((true, said))
        })
        .await;
        let (cleaned_up, said) = match cleanup {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                tracing::error!(teammate = %self.name, error = %e, "cleanup after a teammate's process ended failed");
                (true, None)
            }
            Err(e) => {
                tracing::error!(teammate = %self.name, error = %e, "cleanup after a teammate's process ended panicked");
                (true, None)
            }
        };
        let how = ending.describe(self.pid);
        if killed {
            return TeammateState::Killed;
        }
        if cleaned_up {
            // Still a member when its process ended: it died, maybe before
            // it ever ran (a command that is not teamhost).
            let log = self.log.clone();
            let name = self.name.clone();
            let in_log = tokio::task::spawn_blocking(move || failure_in_log(&log, &name))
                .await
                .ok()
                .flatten();
            let mut why = format!("died: {how}");
            if let Some(s) = in_log {
                why += &format!(": {s}");
            } else if let Some(s) = &said {
                why += &format!("; its pane showed: {s}");
            }
            if self.log_exists() {
                why += &format!("; its log: {}", self.log.display());
            } else if self.kind == BackendKind::Tmux {
                why += "; if its command never ran, set TEAMHOST_EXE to the teamhost binary";
            }
            return TeammateState::Failed(why);
        }
        match ending {
            Ending::Status(s) if s.success() => TeammateState::Completed,
            Ending::Status(s) if s.code().is_some_and(|c| c > 128) => TeammateState::Killed,
            Ending::Status(_) => {
                let log = self.log.clone();
                let name = self.name.clone();
                let said = tokio::task::spawn_blocking(move || failure_in_log(&log, &name))
                    .await
                    .ok()
                    .flatten();
                let log = self.log.display().to_string();
                TeammateState::Failed(match said {
                    // The child's own reason names the log already.
                    Some(why) if why.contains(&log) => format!("{how}: {why}"),
                    Some(why) => format!("{how}: {why}; its log: {log}"),
                    None if self.log_exists() => format!(
                        "{how}; its log is {}: {}",
                        self.kind_log_hint(),
                        self.log.display()
                    ),
                    None => format!(
                        "{how}, writing no log; check that its command is the teamhost binary (TEAMHOST_EXE)"
                    ),
                })
            }
            // Its pane died on its own and it had left the team itself, which
            // a teammate does once it has approved its shutdown; tmux marked
            // the pane dead without ever collecting the exit status.
            Ending::DeadWithoutStatus => TeammateState::Completed,
            // Its pane was closed under it (an approved exit keeps the pane,
            // and its status, until the host reads it).
            Ending::Unknown => TeammateState::Killed,
            // An adopted process that left the team itself before it ended.
            Ending::Orphaned => TeammateState::Completed,
        }
    }

    /// Whether its log file exists and holds something: a log is named
    /// only then.
    fn log_exists(&self) -> bool {
        self.log.metadata().is_ok_and(|m| m.len() > 0)
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

/// How much of a log's end is read for a failure line.
const LOG_TAIL_BYTES: u64 = 16 * 1024;

/// Why `teamhost teammate` for `name` said it failed: the text after the
/// last `error: {name} failed: ` in the last [`LOG_TAIL_BYTES`] of its log
/// (its own last line on a failed end, with the guest's crash reason in
/// it). The log holds the guest's output too, which may imitate that line:
/// only the last such line counts, and in it the text after the first
/// marker (the guest's words quoted inside may repeat the marker); it is
/// made printable
/// ([`printable_line`](crate::protocol::describe::printable_line)) and cut at 1,000
/// characters, as any reason is. `None` when there is none.
fn failure_in_log(log: &std::path::Path, name: &str) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(log).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)))
        .ok()?;
    let mut tail = Vec::new();
    file.take(LOG_TAIL_BYTES).read_to_end(&mut tail).ok()?;
    let tail = String::from_utf8_lossy(&tail);
    let marker = format!("error: {name} failed: ");
    let line = tail.lines().rev().find(|l| l.contains(&marker))?;
    let why = line[line.find(&marker)? + marker.len()..].trim_end_matches('\r');
    let why = crate::protocol::describe::printable_line(why);
    Some(if why.chars().count() > 1000 {
        format!("{}…", why.chars().take(1000).collect::<String>())
    } else {
        why.into_owned()
    })
}

/// Takes over the process `rec` records, left running by a host that died
/// (a resume): from now on this host watches it, stops it and cleans up
/// after it as if it had started it, and the record names this host.
/// `None` when that process has ended (or its pid now names another).
pub(crate) fn adopt(
    env: &SpawnEnv<'_>,
    team: &Team,
    member: Member,
    req: &SpawnRequest,
    rec: &crate::home::started::Started,
) -> Option<Spawned> {
    let fd = rec.open_if_running()?;
    let (proc, kind) = match &rec.pane_id {
        Some(pane) => (
            Proc::Pane {
                pid: rec.pid,
                fd,
                socket: rec.tmux_socket.clone(),
                pane: pane.clone(),
            },
            BackendKind::Tmux,
        ),
        None => (Proc::Orphan { pid: rec.pid, fd }, BackendKind::Process),
    };
    let mut ours = rec.clone();
    ours.host_pid = std::process::id();
    if let Err(e) = crate::home::started::record(&env.home, team.name(), &ours) {
        tracing::warn!(teammate = %rec.name, error = %e, "could not record the adopted process");
    }
    // It holds the key its dead host made, which the home's keyring kept:
    // this host signs with it from there, and forgets it when it ends.
    let lead_key = team
        .store()
        .lead_guard()
        .and_then(|g| g.current_key(team.name(), &member.name))
        .map(super::child::LeadKey);
    Some(monitor(env, team, member, req, proc, kind, lead_key))
}
