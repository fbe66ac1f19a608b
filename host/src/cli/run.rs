//! `teamhost run TEAM.toml`: the main job. Creates the team a manifest
//! describes, seeds its tasks, spawns its component teammates in-process and
//! prints one timestamped line per event until every task is completed and
//! every teammate is idle; then shuts the team down gracefully and prints who
//! did which task, the messages exchanged and the time taken (one JSON
//! document with `--json`, the event lines then going to stderr).
//!
//! The CLI is synchronous; this command alone builds a multi-threaded tokio
//! runtime for the [`Host`] it drives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tokio::sync::{broadcast, mpsc};

use super::Output;
use crate::host::{Event, Host, ShutdownReport, TeammateInfo, TeammateState};
use crate::manifest::Manifest;
use crate::protocol::{Parsed, ProtocolMessage};
use crate::store::{Home, InboxMessage, NewTeam, Store, Task, TaskStatus, Team};

/// How long teammates get to approve the shutdown before they are killed.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an idle team with open tasks must stay unchanged to count as
/// stuck. `Host::wait_idle` can return in the instant between a teammate
/// picking up work and its turn starting; this outlasts that window.
const SETTLE: Duration = Duration::from_millis(500);

const MANIFEST_HELP: &str = "\
Manifest format (paths are relative to the manifest's directory; unknown keys are errors):

  [team]
  name = \"wordcount\"               # required
  description = \"...\"              # optional

  [[teammate]]                     # one or more, spawned in this order
  name = \"counter\"                 # required, unique
  component = \"worker.wasm\"        # required: a wasm32-wasip2 component
  prompt = \"You count words.\"      # required: the first message of its inbox
  cwd = \"data\"                     # default: the manifest's directory
  mode = \"default\"                 # default|acceptEdits|bypassPermissions|plan|dontAsk|delegate
  allowed_tools = []               # default []
  disallowed_tools = []            # default []
  auto_claim = true                # default true
  model = \"...\"                    # optional
  agent_type = \"...\"               # optional (general-purpose)
  plan_mode_required = false       # default false

  [[task]]                         # zero or more; ids 1, 2, ... in this order
  subject = \"Count chapter one\"    # required
  description = \"- one.txt\"        # default \"\"
  active_form = \"Counting\"         # optional
  blocked_by = [1, 2]              # default []: positions in this list; no cycles

Exit status 0 only when every task is completed and every teammate stopped cleanly.";

/// Arguments of `teamhost run`.
#[derive(Debug, Args)]
#[command(after_long_help = MANIFEST_HELP)]
pub struct RunArgs {
    /// The team manifest (TOML; `--help` shows the format).
    #[arg(value_name = "TEAM.toml")]
    manifest: PathBuf,
    /// If the team already exists, delete it first (default: refuse).
    #[arg(long)]
    replace: bool,
    /// Keep the team's files afterwards (default: delete them).
    #[arg(long)]
    keep: bool,
    /// Give up when the work is not done after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    timeout: u64,
}

pub(super) fn run(store: &Store, out: &Output, a: RunArgs) -> anyhow::Result<()> {
    let manifest = Manifest::load(&a.manifest)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(run_team(store.home().root(), out, &a, &manifest))
}

/// How the work phase ended.
enum Outcome {
    Completed,
    TimedOut(u64),
    Interrupted,
    Stuck(String),
    AllStopped(String),
    SpawnFailed(String),
    HostError(String),
}

impl Outcome {
    fn name(&self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::TimedOut(_) => "timed-out",
            Outcome::Interrupted => "interrupted",
            Outcome::Stuck(_) => "stuck",
            Outcome::AllStopped(_) => "teammates-stopped",
            Outcome::SpawnFailed(_) => "spawn-failed",
            Outcome::HostError(_) => "error",
        }
    }

    fn error(&self) -> Option<String> {
        match self {
            Outcome::Completed => None,
            Outcome::TimedOut(s) => Some(format!(
                "the work was not done after {s}s; raise --timeout or read the guest logs"
            )),
            Outcome::Interrupted => Some("interrupted".into()),
            Outcome::Stuck(why)
            | Outcome::AllStopped(why)
            | Outcome::SpawnFailed(why)
            | Outcome::HostError(why) => Some(why.clone()),
        }
    }
}

async fn run_team(home: &Path, out: &Output, a: &RunArgs, m: &Manifest) -> anyhow::Result<()> {
    let start = Instant::now();
    let width = m.teammates.iter().map(|t| t.name.len()).max().unwrap_or(0);
    let log = Log {
        start,
        stderr: out.is_json(),
        width: width.max("team-lead".len()),
    };
    let host = Host::new(Home::new(home))?;
    let team = host.team(&m.team.name)?;
    if team.exists() {
        if !a.replace {
            anyhow::bail!(
                "team {:?} already exists at {}; pass --replace to delete it and start again, or change [team] name in {}",
                team.name(),
                team.paths().team_dir().display(),
                a.manifest.display()
            );
        }
        team.delete(true)
            .with_context(|| format!("cannot delete the existing team {:?}", team.name()))?;
        log.line(
            "run",
            format!("deleted the existing team {} (--replace)", team.name()),
        );
    }
    let config = host.create_team(
        &m.team.name,
        NewTeam {
            description: m.team.description.clone(),
            ..Default::default()
        },
    )?;
    let lead = config.lead_name().to_string();
    let ids = seed_tasks(&team, m)?;
    log.line(
        "run",
        format!(
            "created team {} with {} task(s) under {}",
            team.name(),
            ids.len(),
            home.display()
        ),
    );

    let reporter = Reporter::start(&host, &team, &lead, log);
    let outcome = match spawn_all(&host, &team, m, &reporter).await {
        Err(e) => Outcome::SpawnFailed(format!("{e:#}")),
        Ok(()) => wait_for_work(&host, &team, a.timeout)
            .await
            .unwrap_or_else(|e| Outcome::HostError(format!("{e:#}"))),
    };
    let work = start.elapsed();
    let tasks = team.list_tasks()?;
    match &outcome {
        Outcome::Completed => reporter.line(
            "run",
            format!(
                "all {} task(s) completed; every teammate is idle",
                tasks.len()
            ),
        ),
        other => reporter.line(
            "run",
            format!("stopping: {}", other.error().unwrap_or_default()),
        ),
    }
    let reason = match outcome {
        Outcome::Completed => "work complete",
        _ => "the run is stopping",
    };
    reporter.line("run", format!("shutting the team down ({reason})"));
    let shutdown = host
        .shutdown_team(team.name(), reason, SHUTDOWN_TIMEOUT)
        .await?;
    reporter.stop().await;
    let teammates = host.teammates(team.name());
    let messages = count_messages(&team, &lead)?;
    let kept = a.keep;
    if !kept {
        host.delete_team(team.name()).await?;
    }
    let summary = Summary::new(
        &team, m, &outcome, &tasks, &teammates, shutdown, messages, start, work, home, kept,
    );
    out.print(&summary, || summary.human())?;
    match summary.error {
        None => Ok(()),
        Some(e) => Err(anyhow::anyhow!(e)),
    }
}

/// Creates the manifest's tasks in order, then their dependencies (a task may
/// be blocked by a later one). Returns the ids, by manifest position.
fn seed_tasks(team: &Team, m: &Manifest) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::with_capacity(m.tasks.len());
    for (i, t) in m.tasks.iter().enumerate() {
        let task = team
            .create_task(t.new_task())
            .with_context(|| format!("cannot create task {} ({:?})", i + 1, t.subject))?;
        ids.push(task.id);
    }
    for (i, t) in m.tasks.iter().enumerate() {
        for &b in &t.blocked_by {
            team.add_dependency(&ids[b - 1], &ids[i])
                .with_context(|| format!("cannot make task {} blocked by {b}", i + 1))?;
        }
    }
    Ok(ids)
}

async fn spawn_all(
    host: &Host,
    team: &Team,
    m: &Manifest,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    for t in &m.teammates {
        let file = t
            .component
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        reporter.line(
            &t.name,
            format!(
                "joins: {file}, mode {}, in {}",
                t.mode,
                shown(&t.cwd).display()
            ),
        );
        host.spawn(team.name(), t.spawn_request())
            .await
            .with_context(|| format!("cannot spawn teammate {:?}", t.name))?;
    }
    Ok(())
}

/// `path` relative to the current directory when it is below it.
fn shown(path: &Path) -> &Path {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
}

/// Waits until the work is done, the team can make no more progress, the
/// timeout passes or the user presses Ctrl-C.
async fn wait_for_work(host: &Host, team: &Team, timeout: u64) -> anyhow::Result<Outcome> {
    let work = async {
        loop {
            host.wait_idle(team.name()).await?;
            let tasks = team.list_tasks()?;
            if tasks.iter().all(|t| t.status == TaskStatus::Completed) {
                return Ok(Outcome::Completed);
            }
            let mates = host.teammates(team.name());
            if mates.iter().all(|t| t.state.is_finished()) {
                let states: Vec<String> = mates.iter().map(describe_state).collect();
                return Ok(Outcome::AllStopped(format!(
                    "every teammate has stopped ({}) with {} task(s) not completed",
                    states.join("; "),
                    open_count(&tasks)
                )));
            }
            let before = progress(&tasks, &mates);
            tokio::time::sleep(SETTLE).await;
            host.wait_idle(team.name()).await?;
            let tasks = team.list_tasks()?;
            if progress(&tasks, &host.teammates(team.name())) == before {
                return Ok(Outcome::Stuck(format!(
                    "every teammate is idle but {} task(s) are not completed and nobody will take them: {}; the teammates' messages above say why",
                    open_count(&tasks),
                    describe_open(&tasks)
                )));
            }
        }
    };
    tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(timeout), work) => match r {
            Ok(r) => r,
            Err(_) => Ok(Outcome::TimedOut(timeout)),
        },
        _ = tokio::signal::ctrl_c() => Ok(Outcome::Interrupted),
    }
}

/// What changes when anyone makes progress: task states and turn counts.
fn progress(tasks: &[Task], mates: &[TeammateInfo]) -> Vec<String> {
    tasks
        .iter()
        .map(|t| format!("#{} {} {:?}", t.id, t.status.as_str(), t.owner))
        .chain(
            mates
                .iter()
                .map(|m| format!("{} {} {}", m.name, m.state.as_str(), m.turns)),
        )
        .collect()
}

fn open_count(tasks: &[Task]) -> usize {
    tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Completed)
        .count()
}

fn describe_open(tasks: &[Task]) -> String {
    tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Completed)
        .map(|t| {
            let owner = t
                .owner
                .as_deref()
                .map(|o| format!(", owner {o}"))
                .unwrap_or_default();
            let open: Vec<&str> = t
                .blocked_by
                .iter()
                .filter(|b| {
                    tasks
                        .iter()
                        .any(|o| &o.id == *b && o.status != TaskStatus::Completed)
                })
                .map(String::as_str)
                .collect();
            let blocked = if open.is_empty() {
                String::new()
            } else {
                format!(", blocked by #{}", open.join(", #"))
            };
            format!(
                "#{} {:?} ({}{owner}{blocked})",
                t.id,
                t.subject,
                t.status.as_str()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe_state(t: &TeammateInfo) -> String {
    match &t.state {
        TeammateState::Failed(why) => format!("{} failed: {}", t.name, one_line(why)),
        s => format!("{} {}", t.name, s.as_str()),
    }
}

/// Prints event lines: `+  1.234s  who        what`.
#[derive(Debug, Clone)]
struct Log {
    start: Instant,
    /// With `--json` the lines go to stderr, keeping stdout one document.
    stderr: bool,
    width: usize,
}

impl Log {
    fn line(&self, who: &str, what: impl AsRef<str>) {
        let t = self.start.elapsed().as_secs_f64();
        let line = format!("+{t:7.3}s  {who:<w$}  {}", what.as_ref(), w = self.width);
        if self.stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// A task that follows the host's events: prints turns, state changes, task
/// changes, and consumes and prints the lead's messages. The run's own lines
/// go through it too ([`Reporter::line`]), after every event already sent, so
/// the output reads in the order things happened.
struct Reporter {
    cmds: mpsc::UnboundedSender<Cmd>,
    join: tokio::task::JoinHandle<()>,
}

enum Cmd {
    Line(String, String),
    Stop,
}

impl Reporter {
    fn start(host: &Host, team: &Team, lead: &str, log: Log) -> Reporter {
        let events = host.events();
        let (cmds, rx) = mpsc::unbounded_channel();
        let state = ReportState {
            team: team.clone(),
            lead: lead.to_string(),
            log,
            tasks: BTreeMap::new(),
            turns: BTreeMap::new(),
        };
        let join = tokio::spawn(state.run(events, rx));
        Reporter { cmds, join }
    }

    /// Prints a line of the run itself once the events sent so far are printed.
    fn line(&self, who: &str, what: impl Into<String>) {
        let _ = self.cmds.send(Cmd::Line(who.into(), what.into()));
    }

    /// Handles the events already sent, takes what is left in the lead's
    /// inbox, and ends.
    async fn stop(self) {
        let _ = self.cmds.send(Cmd::Stop);
        if let Err(e) = self.join.await {
            tracing::error!(error = %e, "the event reporter panicked");
        }
    }
}

/// The reporter's memory. Its store reads are small files; it reads them on
/// the runtime thread it runs on.
struct ReportState {
    team: Team,
    lead: String,
    log: Log,
    /// Last seen `(status, owner)` of every task.
    tasks: BTreeMap<String, (String, Option<String>)>,
    turns: BTreeMap<String, u64>,
}

impl ReportState {
    async fn run(
        mut self,
        mut events: broadcast::Receiver<Event>,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
    ) {
        self.tasks_changed(true);
        loop {
            tokio::select! {
                biased;
                cmd = cmds.recv() => {
                    self.catch_up(&mut events);
                    match cmd {
                        Some(Cmd::Line(who, what)) => self.log.line(&who, what),
                        Some(Cmd::Stop) | None => break,
                    }
                }
                e = events.recv() => match e {
                    Ok(e) => self.handle(e),
                    Err(broadcast::error::RecvError::Lagged(n)) => self.lagged(n),
                    Err(broadcast::error::RecvError::Closed) => break,
                },
            }
        }
        self.lead_messages();
    }

    /// Handles every event already in the channel.
    fn catch_up(&mut self, events: &mut broadcast::Receiver<Event>) {
        loop {
            match events.try_recv() {
                Ok(e) => self.handle(e),
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.lagged(n),
                Err(_) => return,
            }
        }
    }

    fn lagged(&self, n: u64) {
        self.log.line(
            "run",
            format!("({n} event(s) missed: the output fell behind)"),
        );
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::TurnStarted { team, name, kind } if team == self.team.name() => {
                let n = self.turns.entry(name.clone()).or_default();
                *n += 1;
                self.log.line(&name, format!("turn {n}: {kind}"));
            }
            Event::StateChanged { team, name, state } if team == self.team.name() => {
                match state {
                    // Every turn starts with `active`; the turn line says it.
                    TeammateState::Active => {}
                    TeammateState::Failed(why) => {
                        self.log.line(&name, format!("failed: {}", one_line(&why)))
                    }
                    s => self.log.line(&name, s.as_str()),
                }
            }
            Event::TasksChanged { team } if team == self.team.name() => self.tasks_changed(false),
            Event::InboxChanged { team, agent }
                if team == self.team.name() && agent == self.lead =>
            {
                self.lead_messages()
            }
            _ => {}
        }
    }

    /// Prints every task whose status or owner changed since last time.
    fn tasks_changed(&mut self, quiet: bool) {
        let tasks = match self.team.list_tasks() {
            Ok(t) => t,
            Err(e) => return self.log.line("run", format!("cannot read the tasks: {e}")),
        };
        for t in tasks {
            let now = (t.status.as_str().to_string(), t.owner.clone());
            if self.tasks.get(&t.id) == Some(&now) {
                continue;
            }
            if !quiet {
                let owner = match &t.owner {
                    Some(o) => format!(", owner {o}"),
                    None => String::new(),
                };
                self.log.line(
                    "tasks",
                    format!("#{} {}{owner}: {}", t.id, now.0, t.subject),
                );
            }
            self.tasks.insert(t.id, now);
        }
    }

    /// Consumes the lead's unread messages (they move to its history) and
    /// prints one line each.
    fn lead_messages(&mut self) {
        match self.team.take_unread(&self.lead) {
            Ok(messages) => {
                for m in messages {
                    self.log
                        .line(&m.from, format!("→ {}: {}", self.lead, readable(&m)));
                }
            }
            Err(e) => self
                .log
                .line("run", format!("cannot read {}'s inbox: {e}", self.lead)),
        }
    }
}

/// One line for a message: protocol messages in words, plain text with its
/// whitespace collapsed (see [`one_line`]).
fn readable(m: &InboxMessage) -> String {
    match ProtocolMessage::parse(&m.text) {
        Parsed::Plain => one_line(&m.text),
        Parsed::Invalid { kind, error } => format!("malformed {kind}: {error}"),
        Parsed::Protocol(p) => match p {
            ProtocolMessage::IdleNotification(n) => {
                let mut s = format!("idle ({})", n.idle_reason.as_deref().unwrap_or("available"));
                if let Some(id) = &n.completed_task_id {
                    let status = n.completed_status.as_deref().unwrap_or("done");
                    s += &format!(", task #{id} {status}");
                }
                if let Some(why) = &n.failure_reason {
                    s += &format!(": {why}");
                }
                if let Some(sum) = &n.summary {
                    s += &format!(" {sum}");
                }
                s
            }
            ProtocolMessage::ShutdownApproved(_) => "approves the shutdown".into(),
            ProtocolMessage::ShutdownRejected(r) => format!("rejects the shutdown: {}", r.reason),
            ProtocolMessage::TaskCompleted(t) => {
                format!("completed task #{}: {}", t.task_id, t.task_subject)
            }
            ProtocolMessage::PlanApprovalRequest(r) => format!(
                "asks to approve its plan {} (teamhost run does not answer plan requests)",
                r.plan_file_path
            ),
            ProtocolMessage::PermissionRequest(r) => format!(
                "asks permission to use {}: {} (teamhost run does not answer permission requests; give the teammate a mode or allowed_tools that need no asking)",
                r.tool_name, r.description
            ),
            other => other.kind().to_string(),
        },
    }
}

/// `text` on one line (runs of whitespace, newlines included, become one
/// space), cut after 240 characters.
fn one_line(text: &str) -> String {
    const MAX: usize = 240;
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{} …", &flat[..cut]),
        None => flat,
    }
}

/// Messages found in the team's histories (consumed) and inboxes (unread).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageCounts {
    total: usize,
    to_lead: usize,
    from_lead: usize,
    between_teammates: usize,
    unread: usize,
    /// `text` for plain messages, else the protocol `type`.
    by_kind: BTreeMap<String, usize>,
}

impl MessageCounts {
    fn add(&mut self, to: &str, m: &InboxMessage, lead: &str) {
        self.total += 1;
        if m.from == lead {
            self.from_lead += 1;
        } else if to == lead {
            self.to_lead += 1;
        } else {
            self.between_teammates += 1;
        }
        let kind = match ProtocolMessage::parse(&m.text).kind() {
            Some(k) => k.to_string(),
            None => "text".into(),
        };
        *self.by_kind.entry(kind).or_default() += 1;
    }
}

fn count_messages(team: &Team, lead: &str) -> anyhow::Result<MessageCounts> {
    let mut counts = MessageCounts::default();
    for stem in stems(&team.paths().history_dir(), "jsonl")? {
        for m in team.history(&stem)? {
            counts.add(&stem, &m, lead);
        }
    }
    for stem in stems(&team.paths().inboxes_dir(), "json")? {
        for m in team.unread(&stem)? {
            counts.unread += 1;
            counts.add(&stem, &m, lead);
        }
    }
    Ok(counts)
}

/// File stems of `dir`'s files ending in `.{ext}`.
fn stems(dir: &Path, ext: &str) -> anyhow::Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    Ok(entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == ext))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect())
}

/// What `teamhost run` prints at the end.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    team: String,
    /// Every task completed and every teammate stopped cleanly.
    ok: bool,
    /// `completed`, `timed-out`, `interrupted`, `stuck`, `teammates-stopped`,
    /// `spawn-failed` or `error`.
    outcome: &'static str,
    error: Option<String>,
    /// From start to the end of the shutdown.
    elapsed_ms: u64,
    /// From start until the work was done (or given up).
    work_ms: u64,
    tasks: Vec<TaskLine>,
    teammates: Vec<MateLine>,
    messages: MessageCounts,
    shutdown: ShutdownLine,
    /// The team's files: kept (`--keep`) or deleted.
    team_files_kept: bool,
    home: PathBuf,
    /// Where the guests' stdout and stderr went.
    logs: PathBuf,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskLine {
    id: String,
    subject: String,
    status: String,
    owner: Option<String>,
    blocked_by: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct MateLine {
    name: String,
    agent_id: String,
    component: PathBuf,
    state: &'static str,
    failure: Option<String>,
    turns: u64,
    /// Ids of the completed tasks it owns.
    completed_tasks: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ShutdownLine {
    stopped: Vec<String>,
    killed: Vec<String>,
}

impl Summary {
    #[allow(clippy::too_many_arguments)]
    fn new(
        team: &Team,
        m: &Manifest,
        outcome: &Outcome,
        tasks: &[Task],
        teammates: &[TeammateInfo],
        shutdown: ShutdownReport,
        messages: MessageCounts,
        start: Instant,
        work: Duration,
        home: &Path,
        kept: bool,
    ) -> Summary {
        let tasks: Vec<TaskLine> = tasks
            .iter()
            .map(|t| TaskLine {
                id: t.id.clone(),
                subject: t.subject.clone(),
                status: t.status.as_str().to_string(),
                owner: t.owner.clone(),
                blocked_by: t.blocked_by.clone(),
            })
            .collect();
        let teammates: Vec<MateLine> = teammates
            .iter()
            .map(|t| MateLine {
                name: t.name.clone(),
                agent_id: t.agent_id.clone(),
                component: m
                    .teammates
                    .iter()
                    .find(|s| s.name == t.name)
                    .map(|s| s.component.clone())
                    .unwrap_or_default(),
                state: t.state.as_str(),
                failure: match &t.state {
                    TeammateState::Failed(why) => Some(why.clone()),
                    _ => None,
                },
                turns: t.turns,
                completed_tasks: tasks
                    .iter()
                    .filter(|k| k.status == "completed" && k.owner.as_deref() == Some(&t.name))
                    .map(|k| k.id.clone())
                    .collect(),
            })
            .collect();
        let mut problems: Vec<String> = outcome.error().into_iter().collect();
        let open = tasks.iter().filter(|t| t.status != "completed").count();
        if open > 0 && matches!(outcome, Outcome::Completed) {
            problems.push(format!("{open} task(s) not completed"));
        }
        // `AllStopped` already names every teammate's end.
        let failed = teammates
            .iter()
            .filter(|_| !matches!(outcome, Outcome::AllStopped(_)));
        for t in failed {
            if let Some(why) = &t.failure {
                problems.push(format!("teammate {} failed: {}", t.name, one_line(why)));
            }
        }
        if !shutdown.killed.is_empty() {
            problems.push(format!(
                "{} did not approve the shutdown within {}s and {} killed",
                shutdown.killed.join(", "),
                SHUTDOWN_TIMEOUT.as_secs(),
                if shutdown.killed.len() == 1 {
                    "was"
                } else {
                    "were"
                }
            ));
        }
        let error = if problems.is_empty() {
            None
        } else {
            Some(problems.join("; "))
        };
        Summary {
            team: team.name().to_string(),
            ok: error.is_none(),
            outcome: outcome.name(),
            error,
            elapsed_ms: start.elapsed().as_millis() as u64,
            work_ms: work.as_millis() as u64,
            tasks,
            teammates,
            messages,
            shutdown: ShutdownLine {
                stopped: shutdown.stopped,
                killed: shutdown.killed,
            },
            team_files_kept: kept,
            home: home.to_path_buf(),
            logs: home.join("logs").join(team.name()),
        }
    }

    fn human(&self) -> String {
        let done = self
            .tasks
            .iter()
            .filter(|t| t.status == "completed")
            .count();
        let mut s = format!(
            "\n{}: {done}/{} task(s) completed by {} teammate(s) in {:.2}s (work {:.2}s, shutdown {:.2}s)\n",
            self.team,
            self.tasks.len(),
            self.teammates.len(),
            self.elapsed_ms as f64 / 1000.0,
            self.work_ms as f64 / 1000.0,
            self.elapsed_ms.saturating_sub(self.work_ms) as f64 / 1000.0,
        );
        let w = self
            .teammates
            .iter()
            .map(|t| t.name.len())
            .chain([5])
            .max()
            .unwrap_or(5);
        if !self.tasks.is_empty() {
            s += "\ntasks\n";
        }
        for t in &self.tasks {
            let blocked = if t.blocked_by.is_empty() {
                String::new()
            } else {
                format!("  (after #{})", t.blocked_by.join(", #"))
            };
            s += &format!(
                "  #{:<3} {:<11} {:<w$}  {}{blocked}\n",
                t.id,
                t.status,
                t.owner.as_deref().unwrap_or("-"),
                t.subject
            );
        }
        s += "\nteammates\n";
        for t in &self.teammates {
            let tasks = if t.completed_tasks.is_empty() {
                "no task".to_string()
            } else {
                format!("task(s) #{}", t.completed_tasks.join(", #"))
            };
            let failure = t
                .failure
                .as_deref()
                .map(|f| format!(": {}", one_line(f)))
                .unwrap_or_default();
            s += &format!(
                "  {:<w$}  {:>3} turn(s)  {:<10} {tasks}{failure}\n",
                t.name, t.turns, t.state
            );
        }
        let mc = &self.messages;
        let kinds: Vec<String> = mc.by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
        s += &format!(
            "\nmessages: {} ({} to the lead, {} from the lead, {} between teammates, {} unread): {}\n",
            mc.total,
            mc.to_lead,
            mc.from_lead,
            mc.between_teammates,
            mc.unread,
            kinds.join(", ")
        );
        s += &format!(
            "shutdown: {} stopped, {} killed\n",
            self.shutdown.stopped.len(),
            self.shutdown.killed.len()
        );
        s += &if self.team_files_kept {
            format!("team files kept under {}\n", self.home.display())
        } else {
            "team files deleted (--keep keeps them)\n".to_string()
        };
        s += &format!("guest logs: {}\n", self.logs.display());
        s
    }
}
