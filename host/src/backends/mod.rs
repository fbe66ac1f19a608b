//! Where a teammate's runner lives, behind one `Backend` trait:
//!
//! | backend | file | the runner runs… | pane id (`tmuxPaneId`) |
//! |---|---|---|---|
//! | `in-process` | `in_process.rs` | as a tokio task of the host process | `in-process` |
//! | `process` | `process.rs` | in a child process, `teamhost teammate …` | `process` |
//! | `tmux` | `tmux.rs` | in a tmux pane running `teamhost teammate …` | `%N` |
//!
//! | file | shared by the backends |
//! |---|---|
//! | `assembly.rs` | building a component teammate: checks, worktree, tools, context, instance, runner |
//! | `child.rs` | registration and the `teamhost teammate` command line (process, tmux) |
//! | `exe.rs` | the `teamhost` binary they run, checked first (on `PATH`, `--version`), its failure said with the fix (`TEAMHOST_EXE`) |
//! | `monitor.rs` | the task that owns an external teammate's process (process, tmux) |
//! | `panes.rs` | tmux pane primitives (tmux, the monitor, `started.rs`) |
//! | `model_seat.rs` | a teammate's model client and usage record |
//! | `team_account.rs` | the team's cost account in its config: one team budget for every process of the team |
//! | `detect.rs` | choosing a backend as the reference does |
//! | `started.rs` | the machine-local record of every process teamhost starts, so `teamhost team delete --force`, from any process, can stop them |
//! | `teardown.rs` | deleting a team for good (CLI and `Host::delete_team`) |
//! | `live_host.rs` | whether a live host runs a team: what `run --replace`, `team delete` and resume refuse on |
//!
//! The `process` and `tmux` backends follow the reference's protocol for
//! external teammates exactly: register the member, write the spawn prompt as
//! the first message of its inbox, then start `teamhost teammate` with the
//! reference's flags. The host watches the process (its pid, event-driven:
//! `waitpid` for a child, a pidfd for a pane) and the member's `isActive` in
//! `config.json`; a process that dies without leaving the team is reported
//! dead: its open tasks go back to `pending` and the lead is told.

pub(crate) mod assembly;
pub(crate) mod child;
pub mod detect;
pub(crate) mod exe;
pub(crate) mod in_process;
pub mod live_host;
pub(crate) mod model_seat;
pub(crate) mod monitor;
pub(crate) mod panes;
pub(crate) mod process;
pub mod started;
pub(crate) mod team_account;
pub mod teardown;
pub(crate) mod tmux;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::error::Result;
use crate::runner::wake::WakeHub;
use crate::runtime::Runtime;
use crate::store::{Member, Team};
use crate::teammate::{Event, SpawnRequest, TeammateState};

pub use detect::detect;

/// The configured teammate mode (`teammateMode` in the reference's settings,
/// `teammate_mode` in a manifest, `--teammate-mode` on the command line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TeammateMode {
    /// Let [`detect()`] choose: tmux inside tmux, else in-process. The default.
    #[default]
    Auto,
    /// Always in-process.
    InProcess,
    /// Always a child process.
    Process,
    /// Always a tmux pane.
    Tmux,
}

impl TeammateMode {
    /// The accepted spellings, for help and error texts.
    pub const NAMES: [&'static str; 4] = ["auto", "in-process", "process", "tmux"];

    /// The spelling in settings and manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            TeammateMode::Auto => "auto",
            TeammateMode::InProcess => "in-process",
            TeammateMode::Process => "process",
            TeammateMode::Tmux => "tmux",
        }
    }
}

impl fmt::Display for TeammateMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TeammateMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(TeammateMode::Auto),
            "in-process" => Ok(TeammateMode::InProcess),
            "process" => Ok(TeammateMode::Process),
            "tmux" => Ok(TeammateMode::Tmux),
            other => Err(format!(
                "unknown teammate mode {other:?}: use one of {}",
                TeammateMode::NAMES.join(", ")
            )),
        }
    }
}

impl<'de> serde::Deserialize<'de> for TeammateMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The backend a teammate actually runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// A tokio task of the host process.
    InProcess,
    /// A child process running `teamhost teammate`.
    Process,
    /// A tmux pane running `teamhost teammate`.
    Tmux,
}

impl BackendKind {
    /// The name recorded as `backendType`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::InProcess => "in-process",
            BackendKind::Process => "process",
            BackendKind::Tmux => "tmux",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Settings of the spawn backends. `BackendOptions::default()`: mode `auto`,
/// not interactive (so `auto` means in-process, as the reference does for a
/// non-interactive session), the `teamhost` binary found as
/// [`BackendOptions::teamhost_exe`] says, tmux's default server, and 5 s
/// between SIGTERM and SIGKILL on a forced stop.
#[derive(Debug, Clone)]
pub struct BackendOptions {
    /// The configured mode.
    pub mode: TeammateMode,
    /// Whether the session is interactive. A non-interactive one always runs
    /// teammates in-process, whatever the mode (the reference's rule).
    pub interactive: bool,
    /// The `teamhost` binary external teammates run. `None`: `$TEAMHOST_EXE`,
    /// else this executable when it is called `teamhost`, else `teamhost`
    /// on `PATH`.
    pub teamhost_exe: Option<PathBuf>,
    /// Which tmux server and where panes go.
    pub tmux: TmuxOptions,
    /// A forced stop sends SIGTERM, then SIGKILL after this long.
    pub stop_timeout: Duration,
    /// Give each process or tmux teammate a lead key of its own, as a
    /// Claude Code 2.1.332 lead does (`--lead-verify-key`; the private half
    /// stays in this host's memory and in the home's keyring, a 0600 file
    /// per teammate under `{home}/lead-keys/`), and sign every entry this
    /// host writes into its inbox as `team-lead`, `user` or `system`:
    /// anything else that writes the inbox file (or the NATS subject) can
    /// then no longer speak as the lead. `teamhost shutdown`, `permit`,
    /// `plan` and `send` sign with the keyring's key on the same machine.
    /// Default `true`; `false` launches teammates as a 2.1.197 lead does
    /// (no key, lead entries taken as they are).
    pub sign_lead_entries: bool,
}

impl Default for BackendOptions {
    fn default() -> Self {
        BackendOptions {
            mode: TeammateMode::Auto,
            interactive: false,
            teamhost_exe: None,
            tmux: TmuxOptions::default(),
            stop_timeout: Duration::from_secs(5),
            sign_lead_entries: true,
        }
    }
}

impl BackendOptions {
    /// The `teamhost` binary to run external teammates with.
    pub fn exe(&self) -> PathBuf {
        if let Some(p) = &self.teamhost_exe {
            return p.clone();
        }
        if let Some(p) = std::env::var_os("TEAMHOST_EXE").filter(|v| !v.is_empty()) {
            return PathBuf::from(p);
        }
        match std::env::current_exe() {
            Ok(p) if p.file_stem().is_some_and(|s| s == "teamhost") => p,
            _ => PathBuf::from("teamhost"),
        }
    }
}

/// Where tmux panes go. `TmuxOptions::default()`: the server this process
/// runs in when inside tmux (`$TMUX`, `$TMUX_PANE`: the teammates get a
/// window of their own in its session, so this pane keeps its width), else
/// tmux's default server and a new window of the detached session
/// `teamhost-{team}`. Set [`TmuxOptions::split_from`] for the reference's
/// layout (teammates beside the lead's pane).
#[derive(Debug, Clone, Default)]
pub struct TmuxOptions {
    /// The server's socket (`tmux -S`). `None`: `$TMUX`'s, else tmux's default.
    pub socket: Option<PathBuf>,
    /// The pane whose window teammates split. `None`: inside tmux they get a
    /// window of their own in `$TMUX_PANE`'s session; outside tmux windows of
    /// `teamhost-{team}`.
    pub split_from: Option<String>,
}

/// What the host keeps of a teammate it started, whatever the backend.
pub(crate) struct Spawned {
    pub member: Member,
    pub backend: BackendKind,
    pub state: watch::Receiver<TeammateState>,
    /// Messages typed by a person; in-process teammates only.
    pub inject: Option<crate::runner::inject::InjectSender>,
    pub kill: crate::runner::kill::KillSwitch,
    /// Ends the teammate's waits for the lead (the host is stopping it).
    /// An external teammate's monitor tells its process with SIGUSR1
    /// (`monitor.rs`), which ends its waits the same way.
    pub stopping: crate::runtime::Stopping,
    pub turns: Arc<AtomicU64>,
    pub busy: Arc<AtomicBool>,
    pub auto_claim: bool,
    /// How long a kill may take before the host gives up waiting.
    pub stop_grace: Duration,
    pub join: tokio::task::JoinHandle<TeammateState>,
}

#[cfg(test)]
impl Spawned {
    /// A teammate that never ran, in `dir`: for the tests of what the host
    /// keeps of its teammates. Needs a tokio runtime (its join handle).
    pub(crate) fn for_index_tests(dir: &str) -> Spawned {
        let member = serde_json::json!({"agentId": "m@t", "name": "m", "cwd": dir});
        Spawned {
            member: serde_json::from_value(member).expect("a member"),
            backend: BackendKind::InProcess,
            state: watch::channel(TeammateState::Idle).1,
            inject: None,
            kill: crate::runner::kill::switch().0,
            stopping: Default::default(),
            turns: Default::default(),
            busy: Default::default(),
            auto_claim: false,
            stop_grace: Duration::ZERO,
            join: tokio::spawn(async { TeammateState::Idle }),
        }
    }
}

/// What [`SpawnEnv::before_start`] holds: a hook given the registered
/// member and, when the backend loaded it itself, the content hash of the
/// component that will run (`None`: a teammate process loads it, and the
/// hook looks it up).
pub(crate) type BeforeStart = Arc<dyn Fn(&Member, Option<&str>) + Send + Sync>;

/// Everything spawning needs from the host.
pub(crate) struct SpawnEnv<'a> {
    pub runtime: &'a Runtime,
    pub hub: &'a Arc<WakeHub>,
    pub events: &'a broadcast::Sender<Event>,
    pub poll_interval: Duration,
    pub log_dir: PathBuf,
    /// The machine-local home (worktrees, process records).
    pub home: crate::home::Home,
    pub auto_approve_plans: bool,
    pub hooks: Arc<crate::hooks::Hooks>,
    pub backends: &'a BackendOptions,
    /// Ticks on every change of the team's `config.json` seen by the file
    /// watcher (never, when the host does not watch files).
    pub config_changes: watch::Receiver<u64>,
    /// Whether the store's change feed wakes this team's runners for writes
    /// by other processes (`HostOptions::watch_files`).
    pub watched: bool,
    /// The host's model broker (each teammate gets a client of it).
    pub models: &'a crate::teammate::ModelAccess,
    /// Called by [`Backend::spawn`] with the registered member once its
    /// prompt is in its inbox and before it can run (its runner started or
    /// its process launched); never by [`Backend::rejoin`]. `Host::spawn`
    /// writes the spawn record here: a record written after the start left
    /// a window in which the teammate claimed work and a host killed then
    /// left a member that `status` showed idle and resume could not bring
    /// back. The hook does its own error handling, and blocks (it writes
    /// synced files, and may reach the store): a backend runs it off the
    /// runtime's workers.
    pub before_start: Option<BeforeStart>,
    /// The lead's seat, for the member `Host::start_lead` runs as its
    /// team's lead (`None` for every teammate).
    pub lead_seat: Option<Arc<dyn crate::runtime::lead_host::LeadHost>>,
}

/// With a change feed, a runner still polls this many times less often than
/// `poll_interval`, in case an event was lost.
const FEED_FALLBACK_FACTOR: u32 = 10;

/// With a change feed, the most fallback polls the host's idle runners make
/// in a second between them (`RunnerConfig::fallback_polls_per_second`).
/// At 10,000 idle teammates a 5 s period each was 2,000 polls a second: a
/// quarter of a core, and enough hand-offs to keep every one of tokio's
/// 512 blocking threads from ever timing out. Fifty keeps an idle host's
/// fallback at about one percent of a core up to 3,000 teammates; past
/// that each still polls once a minute (`runner::FALLBACK_CEILING`).
pub(crate) const FEED_FALLBACK_POLLS_PER_SECOND: u32 = 50;

impl SpawnEnv<'_> {
    /// Runs [`SpawnEnv::before_start`], when there is one.
    pub fn before_start(&self, member: &Member) {
        if let Some(hook) = &self.before_start {
            hook(member, None);
        }
    }

    /// How often an idle runner looks for work unasked: `poll_interval`
    /// (the reference's 500 ms) when nothing but polling sees other
    /// processes' writes; ten times less often when the change feed does.
    pub fn fallback_poll(&self) -> Duration {
        if self.watched {
            self.poll_interval.saturating_mul(FEED_FALLBACK_FACTOR)
        } else {
            self.poll_interval
        }
    }

    /// The host-wide budget of fallback polls a second: only with the
    /// change feed, which hears every write (an overflow of its queue makes
    /// it report everything again), so the fallback covers a lost event,
    /// not the normal way of hearing one. Without the feed, polling is how
    /// other processes' writes are seen, at `poll_interval` each.
    pub fn fallback_budget(&self) -> Option<u32> {
        self.watched.then_some(FEED_FALLBACK_POLLS_PER_SECOND)
    }
}

/// A future a [`Backend`] returns.
pub(crate) type SpawnFuture<'a> = Pin<Box<dyn Future<Output = Result<Spawned>> + Send + 'a>>;

/// One way of running teammates.
pub(crate) trait Backend: Send + Sync {
    /// Which one this is.
    fn kind(&self) -> BackendKind;

    /// Registers `req` in `team` (name made unique, colour in join order,
    /// `backendType` and `tmuxPaneId` of this backend), writes its prompt as
    /// the first message of its inbox, starts its runner, and returns once it
    /// is running. A failure after registration removes the member again.
    fn spawn<'a>(&'a self, env: SpawnEnv<'a>, team: &'a Team, req: SpawnRequest)
        -> SpawnFuture<'a>;

    /// Starts `member`, already registered in `team`, again after its host
    /// died (a resume): nothing is registered and no prompt is written; an
    /// external teammate is started with `teamhost teammate --resumed`.
    /// `None` for the in-process backend, which `Host::attach` serves.
    fn rejoin<'a>(
        &'a self,
        env: SpawnEnv<'a>,
        team: &'a Team,
        member: Member,
        req: SpawnRequest,
    ) -> Option<SpawnFuture<'a>> {
        let _ = (env, team, member, req);
        None
    }
}

/// The backend of `kind`.
pub(crate) fn backend(kind: BackendKind) -> Box<dyn Backend> {
    match kind {
        BackendKind::InProcess => Box::new(in_process::InProcess),
        BackendKind::Process => Box::new(process::backend()),
        BackendKind::Tmux => Box::new(tmux::backend()),
    }
}
