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
//! machine runs it ([`crate::run::existing_team`], [`crate::backends::live_host`]): not by a
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
//! | `mod.rs` | the arguments, and the run: the layout checked before anything opens, then [`crate::run::Run`]'s phases (create, seed, spawn, wait, shut down, finish) between the signals, the watchdog and the display; the summary printed |
//! | `find.rs` | which manifest: the argument, else `./team.toml` |
//! | `build.rs` | a component missing or older than its sources: the manifest's `build` command, or a warning |
//! | `stop.rs` | the signals that stop the run, the store checked before a stop waits on it, the forced stop |
//! | `watchdog.rs` | the process ends within a bound once a stop is asked for, whatever the run is stuck on |
//! | `join.rs` | `--join` and `--adopt`: runs beside a lead elsewhere ([`crate::run::Start::Join`], [`crate::run::Start::Adopt`]), shown as lines, and their summary |
//! | `lead.rs` | `--goal`/`--lead`/`[lead]`: a team led by a component ([`crate::run::Leader::Component`]), shown until the lead deletes it, and its summary |
//! | `display.rs` | the live view or the event lines, behind one `Display` |
//! | `report.rs` | the live event lines: `Log`, and the `Reporter` that follows the host's events |
//! | `summary.rs` | the final summary, as text or JSON, and the message counts in it |
//! | `decisions.rs` | the summary's decisions: who decided which request |

mod build;
mod build_jail;
mod decisions;
mod display;
mod find;
mod join;
mod lead;
mod report;
mod stop;
mod summary;
mod watchdog;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use super::Output;
use crate::embed::Host;
use crate::home::Home;
use crate::manifest::Manifest;
use crate::run::{Ended, Start};

use display::Display;
use report::{Log, Reporter};
use stop::{Forced, Signals};
use summary::{Summary, Timings};

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
    /// host (`--adopt`) already took over to that host. A team led by a
    /// component comes back with its lead and the lead's seat (what it
    /// spawned, gave and was refused); its goal is not given again. See
    /// docs/guides/resume.md.
    #[arg(long, conflicts_with_all = ["replace", "join"])]
    resume: bool,
    /// Stand by for the manifest's team on a shared store (--store
    /// nats://…) and take over the teammates of any host whose lease
    /// expires (it died or lost the network): their tasks in progress
    /// handed back, their waiting requests still answerable, the lead told.
    /// Runs until the lead has shut every adopted teammate down, the team
    /// is deleted, or --timeout. The manifest names the components this
    /// host may run (checked by SHA-256) and may hold no tasks. With the
    /// led team's manifest ([lead] and [[catalogue]], the goal may be left
    /// out) it takes a dead host's lead over too: the same component, its
    /// seat from the store, its goal given again; then it runs as a led
    /// run until the lead deletes the team.
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
        env = "TEAMHOST_TEAMMATE_MODE",
        hide_env_values = true
    )]
    teammate_mode: Option<crate::backends::TeammateMode>,
    /// Print one line per event even on a terminal, instead of the live view
    /// (the default without a terminal, and with --json).
    #[arg(long)]
    lines: bool,
    /// Run a team whose lead is a component: the goal is its
    /// first message; it spawns teammates from the manifest's
    /// [[catalogue]] and the run ends when it deletes the team.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["join", "resume"])]
    goal: Option<String>,
    /// The lead component (the `lead` world); wins over [lead] component.
    /// With --resume: the component that led the team (checked by SHA-256).
    #[arg(long, value_name = "COMPONENT", conflicts_with = "join")]
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
        &store_settings(security),
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

/// Refuses a layout in which a teammate's directory holds what the host
/// trusts ([`crate::run::layout_checker`], a store setting's file too), or in
/// which a led run's lead component or catalogue entries lie in one; then
/// makes the default directories. Before the store is opened: a refused
/// layout creates nothing.
fn prepare_dirs(
    home: &Path,
    file: &Path,
    m: &Manifest,
    models: &crate::embed::ModelAccess,
    settings: &[crate::layout::Protected],
) -> anyhow::Result<()> {
    let checker = crate::run::layout_checker(home, file, m, models, settings);
    crate::run::check_teammates(&checker, m)?;
    crate::run::check_lead_dirs(&checker, m)?;
    crate::run::make_default_dirs(m)
}

/// The library's plan for this run: the flags over the manifest (the
/// lead component made absolute).
fn plan_of(a: &RunArgs, m: &Manifest) -> anyhow::Result<crate::run::RunPlan> {
    Ok(crate::run::RunPlan {
        manifest_file: a.manifest.clone(),
        manifest: m.clone(),
        start: if a.join {
            Start::Join
        } else if a.adopt {
            Start::Adopt
        } else if a.resume {
            Start::Resume
        } else if a.replace {
            Start::Replace
        } else {
            Start::Fresh
        },
        leader: if lead::is_led(a, m) {
            crate::run::Leader::Component {
                goal: a.goal.clone(),
                component: a.lead.as_ref().map(std::path::absolute).transpose()?,
            }
        } else {
            crate::run::Leader::Person
        },
        timeout: Duration::from_secs(a.timeout),
        shutdown_timeout: SHUTDOWN_TIMEOUT,
        keep: a.keep,
        allow_failed_turns: a.allow_failed_turns,
        protected: Vec::new(),
    })
}

/// The store's TLS and credential files (`--store-ca`, `--store-creds`, …),
/// which no teammate's directory may hold: a teammate could read a seed or
/// replace the CA.
fn store_settings(security: &crate::store::NatsSecurity) -> Vec<crate::layout::Protected> {
    security
        .files()
        .iter()
        .map(|p| crate::layout::Protected::new(crate::layout::Kind::StoreSettings, p))
        .collect()
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
    // The lease length comes from this flag only, never the manifest.
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
    let plan = plan_of(a, m)?;
    if plan.start.is_beside() {
        return join::run_beside(home, &host, out, plan, log, &mut signals).await;
    }
    if plan.is_led() {
        return lead::run_led(&host, out, a, plan, log, &mut signals).await;
    }
    let mut run = crate::run::Run::start(&host, plan, &log).await?;
    let team = run.team().clone();
    let lead = run.lead().to_string();
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
    let worked = stop::until_done(&mut run, &reporter, &mut signals).await;
    // A refused resume (its host still runs) leaves the team exactly as it
    // is: no shutdown, no deletion.
    let outcome = match worked {
        Ok(outcome) => outcome,
        Err(e) => {
            reporter.stop().await;
            return Err(e);
        }
    };
    let work = start.elapsed();
    // The stop waits on the store only if the store answers.
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
        Ended::Completed => reporter.line(
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
    let running = host
        .teammates(team.name())
        .iter()
        .filter(|t| !t.state.is_finished())
        .count();
    let force_hint = match &outcome {
        Ended::Interrupted(how) if how.starts_with("Ctrl-C") => "Ctrl-C again to force",
        Ended::Interrupted("SIGTERM") => "SIGTERM again to force",
        _ => "Ctrl-C to force",
    };
    match &outcome {
        Ended::Completed => reporter.line(
            "run",
            format!("shutting the team down ({})", outcome.reason()),
        ),
        _ => reporter.line(
            "run",
            format!("stopping {running} teammate(s) ({force_hint})…"),
        ),
    }
    let stopping = Instant::now();
    // A signal now forces the stop: the team is left as it is.
    let shut = tokio::select! {
        r = run.shut_down(&reporter, &outcome) => Ok(r),
        sig = signals.next() => Err(sig),
    };
    let shutdown = match shut {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => {
            reporter.stop().await;
            return Err(e);
        }
        Err(sig) => return Err(stop::force(&host, &team, &a.manifest, reporter, sig).await),
    };
    let timings = Timings {
        start,
        spawn: run.spawn_took(),
        work,
        shutdown: stopping.elapsed(),
    };
    reporter.stop().await;
    let finished = run.finish(outcome, shutdown).await?;
    let summary = Summary::of_run(&team, m, finished, timings, home);
    out.print(&summary, || summary.human())?;
    match summary.error {
        None => Ok(()),
        Some(e) => Err(anyhow::anyhow!(e)),
    }
}
