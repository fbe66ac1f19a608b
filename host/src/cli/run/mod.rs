//! `teamhost run [TEAM.toml]`: the main job (without a manifest, the
//! `team.toml` of the current directory, see `find.rs`). Creates the team a manifest
//! describes, seeds its tasks, spawns its component teammates and shows the
//! run until every task is completed and every teammate is idle: the live view
//! on a terminal (where the person answers permission and plan requests with
//! a key), else one timestamped line per event. Then it shuts the team down
//! gracefully and prints who did which task, the messages exchanged and the
//! time taken (one JSON document with `--json`, the event lines then going to
//! stderr).
//!
//! Before anything starts, a component missing or older than its sources is
//! built with its teammate's `build` command (`build.rs`); then the layout is checked ([`crate::layout`]): no
//! teammate's directory may hold the manifest, a component, the home or the
//! component cache, nor lie inside the home; a refused layout creates
//! nothing. Then the default directories (`work/{name}` beside the manifest,
//! for teammates without `cwd`) are made.
//!
//! With `--join`, the manifest's teammates join a team whose lead runs
//! elsewhere, on a store both reach (`join.rs`): a second host of one team.
//! With `--resume`, the team a host left behind when it died is brought
//! back ([`Host::resume`]) instead of created, and run to the end.
//! With `--adopt`, this host stands by for a team on a shared store and
//! takes over the teammates of a host whose lease expired (`adopt.rs`).
//!
//! A team that exists already is never touched while a live host on this
//! machine runs it (`guard.rs`, [`crate::backends::live_host`]): not by a
//! plain run, `--replace` or `--resume`. Left by a host that died, a plain
//! run points to `--resume`, and `--replace` throws it away.
//!
//! Stopping (`stop.rs`): Ctrl-C, SIGTERM, `q` in the live view or
//! `--timeout` stops the team at once (waits for the lead are denied) and
//! says so; a second Ctrl-C or SIGTERM forces it. A store that does not
//! answer is not waited for, and a watchdog (`watchdog.rs`) ends the
//! process within seconds whatever the run is stuck on.
//!
//! The process always exits: once the run is over, what is left on the
//! async runtime's blocking pool (a guest can leave a thread stuck in a
//! system call) is given [`EXIT_GRACE`], not waited for. With `--timeout
//! T`, `teamhost run` ends within T, the shutdown timeout (30 s) and that
//! grace.
//!
//! The CLI is synchronous; this command alone builds a multi-threaded tokio
//! runtime for the [`Host`] it drives.
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the arguments and the run itself: check the layout, create, seed, spawn, wait, shut down, summarise |
//! | `find.rs` | which manifest: the argument, else `./team.toml` |
//! | `build.rs` | a component missing or older than its sources: the manifest's `build` command, or a warning |
//! | `guard.rs` | a team that exists: refused while a live host runs it, else resumed, replaced or pointed to `--resume` |
//! | `stop.rs` | the signals that stop the run, the store checked before a stop waits on it, the forced stop |
//! | `watchdog.rs` | the process ends within a bound once a stop is asked for, whatever the run is stuck on |
//! | `elsewhere.rs` | after `--resume`: the shutdown requests to teammates another host took over |
//! | `join.rs` | `--join`: wait for the lead's team, spawn into it, run until the lead shuts the teammates down |
//! | `adopt.rs` | `--adopt`: stand by for a team, take over the teammates of a host whose lease expired, run until the lead shuts them down |
//! | `lead.rs` | `--goal`/`--lead`/`[lead]`: a team led by a component, run until the lead deletes it |
//! | `lead_spec.rs` | the manifest's `[lead]` and `[[catalogue]]` as `embed::LeadSpec` |
//! | `wait.rs` | waiting for the work, and how the work phase ended (`Outcome`) |
//! | `display.rs` | the live view or the event lines, behind one `Display` |
//! | `report.rs` | the live event lines: `Log`, and the `Reporter` that follows the host's events |
//! | `summary.rs` | the final summary, as text or JSON, and the message counts in it |
//! | `turn_failures.rs` | the run's failed turns and replay drifts, which fail it (a failed turn not with `--allow-failed-turns`) |
//! | `decisions.rs` | the summary's decisions: who decided which request (issue 29) |

mod adopt;
mod build;
mod build_jail;
mod decisions;
mod display;
mod elsewhere;
mod find;
mod guard;
mod join;
mod lead;
mod lead_spec;
mod report;
mod stop;
mod summary;
mod turn_failures;
mod wait;
mod watchdog;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use super::Output;
use crate::embed::Host;
use crate::home::Home;
use crate::manifest::Manifest;
use crate::store::{NewTeam, Team};

use display::Display;
use report::{Log, Reporter};
use stop::{Forced, Signals, Stop};
use summary::{count_messages, Summary, Timings};
use wait::{wait_for_work, Outcome};

/// How long teammates get to approve the shutdown before they are killed.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the process waits, once the run is over, for what is still on
/// the async runtime's blocking pool before it exits anyway.
const EXIT_GRACE: Duration = Duration::from_secs(2);

const MANIFEST_HELP: &str = concat!(
    "Manifest format (paths are relative to the manifest's directory; unknown keys are errors):\n\n",
    include_str!("../../manifest_format.toml"),
    "\nExit status 0 only when every task is completed, every teammate stopped cleanly, no turn \
     failed (--allow-failed-turns lets them) and no replay drifted from its cassette."
);

/// Arguments of `teamhost run`.
#[derive(Debug, Args)]
#[command(after_long_help = MANIFEST_HELP)]
pub struct RunArgs {
    /// The team manifest (TOML; `--help` shows the format). Default:
    /// team.toml in the current directory.
    #[arg(value_name = "TEAM.toml")]
    manifest_arg: Option<PathBuf>,
    /// The manifest this run reads: the argument, else `./team.toml`.
    #[arg(skip)]
    manifest: PathBuf,
    /// If the team already exists, delete it first (default: refuse). Never
    /// while a live host on this machine runs it: stop that one first.
    #[arg(long)]
    replace: bool,
    /// Keep the team's files afterwards (default: delete them).
    #[arg(long)]
    keep: bool,
    /// Join the manifest's teammates to a team whose lead runs elsewhere
    /// (another `teamhost run` on the same --store): wait for the team to
    /// exist, seed nothing, and run until the lead has shut every one of
    /// them down; the team is left as it is. The manifest may hold no tasks.
    #[arg(long, conflicts_with_all = ["replace", "keep"])]
    join: bool,
    /// Bring back the manifest's team after its host died (killed, out of
    /// memory, the machine rebooted): respawn its teammates from what this
    /// machine kept, take over the processes the dead host started, hand
    /// unfinished tasks back, and run to the end as usual. Seeds nothing;
    /// spawns the manifest's teammates that never joined. On a NATS store,
    /// takes the dead host's lease over first and leaves a teammate another
    /// host (`--adopt`) already took over to that host. See
    /// docs/guides/resume.md.
    #[arg(long, conflicts_with_all = ["replace", "join"])]
    resume: bool,
    /// Stand by for the manifest's team on a shared store (--store
    /// nats://…) and take over the teammates of any host whose lease
    /// expires (it died or lost the network): their tasks in progress
    /// handed back, their waiting requests still answerable, the lead told.
    /// Runs until the lead has shut every adopted teammate down, the team
    /// is deleted, or --timeout. The manifest names the components this
    /// host may run (checked by SHA-256) and may hold no tasks.
    #[arg(long, conflicts_with_all = ["replace", "keep", "join", "resume", "goal", "lead"])]
    adopt: bool,
    /// Let turns fail without failing the run: a teammate's turn that ended
    /// in an error (its model call refused, its tools failing, its own
    /// error) is still reported in the summary, but the exit status is 0
    /// when the rest went well. For runs that expect failures. A replay
    /// that drifts from its cassette, a teammate that crashed (a trap) and
    /// an unfinished task fail the run whatever this says.
    #[arg(long)]
    allow_failed_turns: bool,
    /// Give up when the work is not done after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    timeout: u64,
    /// Where teammates run: auto, in-process, process or tmux (default: the
    /// manifest's teammate_mode, else auto: tmux inside tmux, else
    /// in-process). A non-interactive session runs them in-process, as the
    /// reference does.
    #[arg(
        long = "teammate-mode",
        value_name = "MODE",
        env = "TEAMHOST_TEAMMATE_MODE"
    )]
    teammate_mode: Option<crate::backends::TeammateMode>,
    /// Print one line per event even on a terminal, instead of the live view
    /// (the default without a terminal, and with --json).
    #[arg(long)]
    lines: bool,
    /// Run a team whose lead is a component (issue 29): the goal is its
    /// first message; it spawns teammates from the manifest's
    /// [[catalogue]] and the run ends when it deletes the team.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["join", "resume"])]
    goal: Option<String>,
    /// The lead component (the `lead` world); wins over [lead] component.
    #[arg(long, value_name = "COMPONENT", conflicts_with_all = ["join", "resume"])]
    lead: Option<PathBuf>,
    /// On a store shared by several hosts (NATS): this host's lease on the
    /// team lasts this many seconds without renewal (renewed every third of
    /// it). Another host may take its teammates over once it has seen the
    /// lease unrenewed this long; this host stops writing after half of it.
    #[arg(long, value_name = "SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    lease: u64,
    /// Model calls: live, recorded or replayed (see `teamhost run --help`
    /// and docs/guides/agent-teammate.md).
    #[command(flatten)]
    model: crate::cli::model_args::ModelArgs,
}

/// Runs `teamhost run`. `store` is `--store` (or `$TEAMHOST_STORE`); it
/// wins over the manifest's `[team] store`. `security` (TLS files,
/// credentials) comes from the flags and environment only, never the
/// manifest.
pub(super) fn run(
    home: &Home,
    store: Option<&str>,
    security: &crate::store::NatsSecurity,
    out: &Output,
    mut a: RunArgs,
) -> anyhow::Result<()> {
    a.manifest = match a.manifest_arg.take() {
        Some(file) => file,
        None => find::manifest_here()?,
    };
    let manifest = Manifest::load(&a.manifest)?;
    build::build_stale(&a.manifest, &manifest, home.root())?;
    let store =
        crate::cli::store_select::open(home, store.or(manifest.team.store.as_deref()), security)?;
    let models =
        crate::cli::model_args::model_access(home.root(), &a.model, Some(&manifest.model))?;
    prepare_dirs(
        home.root(),
        &a.manifest,
        &manifest,
        &models,
        &security.files(),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let ran = runtime.block_on(run_team(home.root(), store, out, &a, &manifest, models));
    if let Some(forced) = ran.as_ref().err().and_then(|e| e.downcast_ref::<Forced>()) {
        // Nothing in the runtime is waited for: an abandoned turn's
        // blocking call may still be returning.
        let code = forced.code;
        runtime.shutdown_background();
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(code);
    }
    // Dropping the runtime would wait for every blocking-pool task, and a
    // guest can leave one that never returns (a thread stuck in a system
    // call on something the guest chose). Bash calls still running are
    // killed (they would end at their own timeout), and the rest gets
    // EXIT_GRACE: the run is over, the summary printed, and every store
    // write replaces its file whole, so nothing is cut in half.
    crate::tools::bash::kill_in_flight();
    runtime.shutdown_timeout(EXIT_GRACE);
    ran
}

/// Refuses a layout in which a teammate's directory holds the manifest, a
/// component, the home, the cache or a store setting's file (`--store-ca`,
/// `--store-creds`, …: a teammate could read a seed or replace the CA; see
/// [`crate::layout`]), then makes the default directories (`work/{name}`)
/// of those that left `cwd` out.
fn prepare_dirs(
    home: &Path,
    file: &Path,
    m: &Manifest,
    models: &crate::embed::ModelAccess,
    store_files: &[std::path::PathBuf],
) -> anyhow::Result<()> {
    let mut protected = crate::home::Home::new(home).protected_paths(None);
    protected.extend(m.protected_paths(file));
    protected.extend(models.protected().iter().cloned());
    protected.extend(
        store_files
            .iter()
            .map(|p| crate::layout::Protected::new(crate::layout::Kind::StoreSettings, p)),
    );
    let checker = crate::layout::Checker::new(&protected);
    for t in &m.teammates {
        if t.isolation == crate::manifest::IsolationSpec::None {
            checker.check(&t.name, &t.cwd).map_err(anyhow::Error::msg)?;
        }
    }
    lead::check_dirs(&checker, m)?;
    for t in m.teammates.iter().filter(|t| t.cwd_is_default) {
        std::fs::create_dir_all(&t.cwd).with_context(|| {
            format!(
                "cannot make teammate `{}`'s directory {} (the default for a teammate without `cwd`)",
                t.name,
                t.cwd.display()
            )
        })?;
    }
    Ok(())
}

async fn run_team(
    home: &Path,
    store: crate::store::Store,
    out: &Output,
    a: &RunArgs,
    m: &Manifest,
    models: crate::embed::ModelAccess,
) -> anyhow::Result<()> {
    let start = Instant::now();
    let width = m.teammates.iter().map(|t| t.name.len()).max().unwrap_or(0);
    let log = Log {
        start,
        stderr: out.is_json(),
        width: width.max("team-lead".len()),
        kept: None,
    };
    let backends = crate::backends::BackendOptions {
        mode: a.teammate_mode.or(m.team.teammate_mode).unwrap_or_default(),
        interactive: crate::backends::detect::interactive_terminal(),
        ..Default::default()
    };
    // Decision 6 of issue 32: the lease comes from this flag only.
    let lease = store
        .backend()
        .failover()
        .is_some()
        .then(|| Duration::from_secs(a.lease));
    let host = Host::with_store(
        Home::new(home),
        store,
        crate::embed::HostOptions {
            lease,
            backends,
            hooks: std::sync::Arc::new(m.hooks.to_hooks()),
            notifications: m.team.notifications,
            models,
            ..Default::default()
        },
    )?;
    // From here on a Ctrl-C or SIGTERM stops the run instead of ending
    // the process where it stands; the watchdog makes sure it does end.
    let left = match host.team(&m.team.name) {
        Ok(t) if a.join || a.adopt => format!(
            "team {} is left to its lead at {}",
            t.name(),
            t.location().display()
        ),
        // A run led by a component cannot be resumed (`--resume` excludes
        // `--goal` and `--lead`).
        Ok(t) if lead::is_led(a, m) => format!(
            "team {} is left as it is at {}: once its store answers, remove it with `teamhost team delete {} --force`",
            t.name(),
            t.location().display(),
            t.name()
        ),
        Ok(t) => format!(
            "team {} is left as it is at {}: once its store answers, continue it with `teamhost run --resume {}`, or remove it with `teamhost team delete {} --force`",
            t.name(),
            t.location().display(),
            a.manifest.display(),
            t.name()
        ),
        Err(e) => format!("team {} is left as it is ({e})", m.team.name),
    };
    let mut signals = Signals::install(&host, left).context("cannot catch Ctrl-C and SIGTERM")?;
    if a.join {
        return join::run_joined(home, &host, out, a, m, log, &mut signals).await;
    }
    if a.adopt {
        return adopt::run_adopting(home, &host, out, a, m, log, &mut signals).await;
    }
    if lead::is_led(a, m) {
        return lead::run_led(home, &host, out, a, m, log, &mut signals).await;
    }
    let team = host.team(&m.team.name)?;
    let home_dir = Home::new(home);
    guard::existing_team(&home_dir, &team, a, &log).await?;
    let config = if a.resume {
        team.config()?
    } else {
        let config = host.create_team(
            &m.team.name,
            NewTeam {
                description: m.team.description.clone(),
                ..Default::default()
            },
        )?;
        guard::claim(&home_dir, &team);
        let ids = seed_tasks(&team, m)?;
        log.line(
            "run",
            format!(
                "created team {} with {} task(s) in {}",
                team.name(),
                ids.len(),
                crate::cli::store_select::describe(&home_dir, host.store())
            ),
        );
        config
    };
    let lead = config.lead_name().to_string();
    // Issue 29: who decides requests; the policy's are answered from here on.
    // A team led by a component runs in `lead.rs`: here the lead is the person.
    let has_lead_component = false;
    let routes = m
        .approvals
        .routes(has_lead_component)
        .map_err(|problems| anyhow::anyhow!("[approvals]: {}", problems.join("; ")))?;
    let _approval_desk = host.serve_approvals(team.name(), routes)?;
    let run_began_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        .saturating_sub(start.elapsed().as_millis() as u64);

    let reporter = if a.lines || out.is_json() || !crate::view::terminal_available() {
        Display::Lines(Reporter::start(&host, &team, Some(&lead), log))
    } else {
        let seat = crate::view::Seat::running(host.clone(), team.clone());
        Display::Screen(crate::view::LiveView::start(
            seat,
            Some(&host),
            "teamhost run",
        )?)
    };
    let spawning = Instant::now();
    // Resumed teammates another host took over (issue 32): they work there,
    // the lead's run waits for them and asks them to stop at the end.
    let mut elsewhere: Vec<(String, String)> = Vec::new();
    let spawned = if a.resume {
        // A refused resume (its host still runs) leaves the team exactly as
        // it is: no shutdown, no deletion.
        let report = match host.resume(team.name()).await {
            Ok(r) => r,
            Err(e) => {
                reporter.stop().await;
                return Err(
                    anyhow::Error::new(e).context(format!("cannot resume team {:?}", team.name()))
                );
            }
        };
        guard::claim(&home_dir, &team);
        reporter.line("run", report.describe(team.name()));
        elsewhere = report.adopted_elsewhere.clone();
        tokio::select! {
            r = join_missing(&host, &team, m, &config, &report, &reporter) => {
                r.map_err(|e| Outcome::SpawnFailed(format!("{e:#}")))
            }
            sig = signals.next() => Err(Outcome::Interrupted(sig.name())),
        }
    } else {
        tokio::select! {
            r = spawn_all(&host, &team, m, &reporter) => {
                r.map_err(|e| Outcome::SpawnFailed(format!("{e:#}")))
            }
            sig = signals.next() => Err(Outcome::Interrupted(sig.name())),
        }
    };
    let spawn = spawning.elapsed();
    let outcome = match spawned {
        Err(outcome) => outcome,
        Ok(()) => wait_for_work(
            &host,
            &team,
            !elsewhere.is_empty(),
            a.timeout,
            &mut signals,
            reporter.quit_requested(),
        )
        .await
        .unwrap_or_else(|e| Outcome::HostError(format!("{e:#}"))),
    };
    let work = start.elapsed();
    // The work phase is over: its deadline with it. A stop the watchdog
    // could not hear (a key in the live view) starts its clock; then the
    // stop waits on the store only if the store answers.
    signals.watchdog().set_deadline(None);
    if let Outcome::Interrupted(how) = &outcome {
        if !Stop::is_signal_name(how) {
            signals.watchdog().asked(how);
        }
    }
    if let Err(why) = stop::check_store(&signals, &team, SHUTDOWN_TIMEOUT).await {
        return Err(
            stop::stop_without_store(&host, &signals, reporter, &why, outcome.exit_code()).await,
        );
    }
    if let Err(lost) = host.check_lease(team.name()) {
        // Another host runs the teammates now: nothing more is written here
        // (no shutdown requests, no deletion); the team is theirs.
        reporter.line("run", format!("stopping: {lost}"));
        reporter.stop().await;
        return Err(lost.into());
    }
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
    // Told to the teammates (their shutdown requests; a wait for the lead
    // denied "the host is stopping (…)").
    let reason = match &outcome {
        Outcome::Completed => "work complete".to_string(),
        Outcome::Interrupted(how) => format!("the run was interrupted ({how})"),
        Outcome::TimedOut(s) => format!("the run's --timeout of {s}s passed"),
        _ => "the run is stopping".to_string(),
    };
    let running = host
        .teammates(team.name())
        .iter()
        .filter(|t| !t.state.is_finished())
        .count();
    let force_hint = match &outcome {
        Outcome::Interrupted(how) if how.starts_with("Ctrl-C") => "Ctrl-C again to force",
        Outcome::Interrupted("SIGTERM") => "SIGTERM again to force",
        _ => "Ctrl-C to force",
    };
    match &outcome {
        Outcome::Completed => reporter.line("run", format!("shutting the team down ({reason})")),
        _ => reporter.line(
            "run",
            format!("stopping {running} teammate(s) ({force_hint})…"),
        ),
    }
    let stopping = Instant::now();
    if !elsewhere.is_empty() {
        elsewhere::ask_to_stop(&team, &lead, &elsewhere, &reason, &reporter)?;
    }
    // A signal now forces the stop: the team is left as it is.
    let shutdown = tokio::select! {
        r = host.shutdown_team(team.name(), &reason, SHUTDOWN_TIMEOUT) => r?,
        sig = signals.next() => {
            return Err(stop::force(&host, &team, &a.manifest, reporter, sig).await);
        }
    };
    let timings = Timings {
        start,
        spawn,
        work,
        shutdown: stopping.elapsed(),
    };
    reporter.stop().await;
    // As they are now: a teammate stopped at shutdown gave its tasks back.
    let tasks = team.list_tasks()?;
    let teammates = host.teammates(team.name());
    let messages = count_messages(&team, &lead)?;
    // Teammates running on another host still read the team: it is not
    // deleted under them.
    let kept = a.keep || !elsewhere.is_empty();
    // Before the files go: the summary reads the teammates' usage records
    // and the lead's mail.
    let failures = turn_failures::TurnFailures::read(&team, &lead, run_began_ms)?;
    let summary = Summary::new(
        &team, m, &outcome, &tasks, &teammates, shutdown, messages, timings, home, kept,
    )
    .with_decisions(
        host.decisions(team.name(), run_began_ms)
            .unwrap_or_default(),
    )
    .with_turn_failures(failures, a.allow_failed_turns);
    if !kept {
        host.delete_team(team.name()).await?;
    }
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

/// How many teammates `run` starts at once: enough that their registrations
/// share config writes (group commit) and their first turns overlap, few
/// enough that a failure stops the rest early.
const SPAWN_AT_ONCE: usize = 16;

/// Compiles every distinct component of the manifest at once (each once, in
/// parallel, before any teammate starts: a large component does not hold the
/// others back; meanwhile the live view shows its teammates `compiling`),
/// then starts the teammates ([`start_all`]), each in the
/// colour of its place in the manifest.
async fn spawn_all(
    host: &Host,
    team: &Team,
    m: &Manifest,
    reporter: &Display,
) -> anyhow::Result<()> {
    compile_all(host, team, m, reporter).await?;
    start_all(host, team, m, reporter, true).await
}

/// After a resume: spawns the manifest's teammates that never joined (the
/// host died before it got to them). A teammate that could not come back
/// fails the run.
async fn join_missing(
    host: &Host,
    team: &Team,
    m: &Manifest,
    config: &crate::store::TeamConfig,
    report: &crate::embed::ResumeReport,
    reporter: &Display,
) -> anyhow::Result<()> {
    let mut missing = m.clone();
    missing
        .teammates
        .retain(|t| config.member(&t.name).is_none());
    if !missing.teammates.is_empty() {
        compile_all(host, team, &missing, reporter).await?;
        start_all(host, team, &missing, reporter, false).await?;
    }
    if let Some((name, why)) = report.failed.first() {
        anyhow::bail!("{name} could not be brought back: {why}");
    }
    Ok(())
}

/// Starts the manifest's teammates, [`SPAWN_AT_ONCE`] at a time (their
/// components loaded already), each in the colour of its place in the
/// manifest when `place_colours`, else in the first colour no member has.
async fn start_all(
    host: &Host,
    team: &Team,
    m: &Manifest,
    reporter: &Display,
    place_colours: bool,
) -> anyhow::Result<()> {
    let colours = crate::store::config::COLORS;
    let mut requests = Vec::with_capacity(m.teammates.len());
    for (i, t) in m.teammates.iter().enumerate() {
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
        let mut req = t.spawn_request();
        if place_colours {
            req.color = Some(colours[i % colours.len()].to_string());
        }
        requests.push(req);
    }
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(SPAWN_AT_ONCE));
    let mut started = tokio::task::JoinSet::new();
    for req in requests {
        let (host, team, gate) = (host.clone(), team.name().to_string(), gate.clone());
        started.spawn(async move {
            let _slot = gate.acquire_owned().await;
            let name = req.name.clone();
            host.spawn(&team, req)
                .await
                .with_context(|| format!("cannot spawn teammate {name:?}"))
        });
    }
    let mut first_error = None;
    while let Some(done) = started.join_next().await {
        let result = done.map_err(|e| anyhow::anyhow!("a spawn panicked: {e}"));
        if let Err(e) = result.and_then(|r| r.map(|_| ())) {
            if first_error.is_none() {
                // The rest stop at their next chance; whoever started is
                // shut down with the team.
                gate.close();
                first_error = Some(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Loads (compiling when not cached) every distinct component of `m`, all
/// at once, through [`Host::compile`] (which shows the teammates waiting for
/// each as `compiling`), and says how long each took.
async fn compile_all(
    host: &Host,
    team: &Team,
    m: &Manifest,
    reporter: &Display,
) -> anyhow::Result<()> {
    let mut components: std::collections::BTreeMap<&Path, Vec<String>> = Default::default();
    for t in &m.teammates {
        components
            .entry(t.component.as_path())
            .or_default()
            .push(t.name.clone());
    }
    let mut loading = tokio::task::JoinSet::new();
    for (path, names) in components {
        let file = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        reporter.line(
            "run",
            format!(
                "compiling {file} for {} (cached after the first time)…",
                some_names(&names)
            ),
        );
        let (host, team, path) = (host.clone(), team.name().to_string(), path.to_path_buf());
        loading.spawn(async move {
            let r = host.compile(&team, &path, &names).await;
            (file, path, r)
        });
    }
    // A slow compile (a Python or JS component: tens of seconds the first
    // time) says it is still going, every few seconds.
    let started = tokio::time::Instant::now();
    let mut pending: Vec<String> = Vec::new();
    let mut progress = tokio::time::interval_at(started + PROGRESS_AFTER, PROGRESS_EVERY);
    for t in &m.teammates {
        let file = t
            .component
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        if !pending.iter().any(|f| *f == file) {
            pending.push(file.to_string());
        }
    }
    loop {
        tokio::select! {
            done = loading.join_next() => {
                let Some(done) = done else { break };
                let (file, path, r) = done.map_err(|e| anyhow::anyhow!("compiling panicked: {e}"))?;
                let took = r.with_context(|| format!("cannot load component {}", path.display()))?;
                pending.retain(|f| *f != file);
                reporter.line("run", format!("{file} ready in {:.2}s", took.as_secs_f64()));
            }
            _ = progress.tick() => {
                let secs = started.elapsed().as_secs();
                for file in &pending {
                    reporter.line("run", format!("compiling {file} … {secs} s"));
                }
            }
        }
    }
    Ok(())
}

/// How long a compile runs before `run` says it is still compiling.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// How often it says so again.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// `a, b and c`; past three names, `a, b, c and N more`.
fn some_names(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [most @ .., last] if names.len() <= 3 => format!("{} and {last}", most.join(", ")),
        [first @ .., _] => format!("{} and {} more", first[..3].join(", "), names.len() - 3),
    }
}

/// `path` relative to the current directory when it is below it.
fn shown(path: &Path) -> &Path {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::some_names;

    #[test]
    fn a_compile_line_names_up_to_three_teammates() {
        let names = |n: usize| -> Vec<String> { (1..=n).map(|i| format!("t{i}")).collect() };
        assert_eq!(some_names(&names(1)), "t1");
        assert_eq!(some_names(&names(2)), "t1 and t2");
        assert_eq!(some_names(&names(3)), "t1, t2 and t3");
        assert_eq!(some_names(&names(1000)), "t1, t2, t3 and 997 more");
    }
}
