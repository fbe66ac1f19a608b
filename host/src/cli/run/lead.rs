//! `teamhost run --goal TEXT [--lead COMPONENT]` (or a manifest's `[lead]`
//! table): a team whose lead is a component, run by the library
//! ([`crate::run::Leader::Component`]: the lead is started with
//! [`Host::start_lead`](crate::embed::Host::start_lead) instead of the
//! manifest's teammates; it forms the team, spawns teammates from
//! `[[catalogue]]` and deletes the team when it is done, which ends the
//! run). The person keeps the live view (or the event lines) and answers
//! what is escalated to them.
//!
//! | the run ends when | then |
//! |---|---|
//! | the lead deleted its team | the summary; exit 0 |
//! | the lead's runner failed or was killed | its reason printed; the teammates shut down; exit 1 |
//! | nothing was left to wake the lead, even after it was told so | the reason printed; the teammates shut down; exit 1 |
//! | the person quits (`q`, Ctrl-C, SIGTERM) or `--timeout` passes | the lead stopped, the teammates shut down; exit 1 |
//!
//! The summary has the shape of every run's ([`super::summary::Summary`]:
//! `ok`, the outcome, the tasks, the teammates with their turns and model
//! use, the messages, the decisions, the spending), under a first line
//! saying how the lead's run ended.
//!
//! What a led run needs (a goal, a `[[catalogue]]`, no `[[teammate]]`) is
//! checked by the library (`run/led.rs`).

use std::time::{Duration, Instant};

use super::display::Display;
use super::report::{Log, Reporter};
use super::stop::{Signals, Stop};
use super::summary::{Summary, Timings};
use super::{RunArgs, SHUTDOWN_TIMEOUT};
use crate::cli::Output;
use crate::embed::Host;
use crate::manifest::Manifest;
use crate::run::{Ended, Run, RunPlan};

/// Whether this run is led by a component: `--goal`, `--lead` or `[lead]`.
pub(super) fn is_led(a: &RunArgs, m: &Manifest) -> bool {
    a.goal.is_some() || a.lead.is_some() || m.lead.is_some()
}

/// Runs the led team to its end. See the module docs.
pub(super) async fn run_led(
    host: &Host,
    out: &Output,
    a: &RunArgs,
    plan: RunPlan,
    log: Log,
    signals: &mut Signals,
) -> anyhow::Result<()> {
    let start = Instant::now();
    let team = host.team(&plan.manifest.team.name)?;
    let manifest = plan.manifest.clone();
    // Refused before the display starts, and before anything is created.
    let prepared = Run::prepare(host, plan, &log).await?;
    // The lines' reporter hears every event from the lead's first turn on
    // (the tasks it creates there included): it starts before the lead.
    // The lead's inbox is the lead component's: the reporter consumes none
    // of it (taking it here raced the lead's runner, which then never saw
    // the messages the reporter took).
    let lines = a.lines || out.is_json() || !crate::view::terminal_available();
    let reporter = lines.then(|| Reporter::start(host, &team, None, log.clone()));
    let mut run = match prepared.begin(&log).await {
        Ok(run) => run,
        Err(e) => {
            if let Some(r) = reporter {
                r.stop().await;
            }
            return Err(e);
        }
    };
    let display = if let Some(reporter) = reporter {
        Display::Lines(reporter)
    } else {
        let seat = crate::view::Seat::beside_lead(host.clone(), team.clone());
        Display::Screen(crate::view::LiveView::start(
            seat,
            Some(host),
            "teamhost run",
        )?)
    };
    display.line(
        "run",
        format!(
            "team {} is led by a component; its goal is its first message",
            team.name()
        ),
    );
    let ended = super::stop::until_done(&mut run, &display, signals).await?;
    let work = start.elapsed();
    // The exit status of a stop without the store: 128 + a signal's number.
    let code = match &ended {
        Ended::Interrupted(how) if Stop::is_signal_name(how) => ended.exit_code(),
        _ => 1,
    };
    if let Err(why) = super::stop::check_store(signals, &team, SHUTDOWN_TIMEOUT).await {
        return Err(super::stop::stop_without_store(host, signals, display, &why, code).await);
    }
    if let Err(lost) = host.check_lease(team.name()) {
        // Another host runs the teammates now: nothing more is written here.
        display.line("run", format!("stopping: {lost}"));
        display.stop().await;
        return Err(lost.into());
    }
    let outcome = match &ended {
        Ended::Completed => "completed",
        Ended::LeadFailed(_) => "failed",
        Ended::LeadStopped(_) => "stopped",
        Ended::Stuck(_) => "got stuck",
        Ended::TimedOut(_) => "timed out",
        _ => "was interrupted",
    };
    if let Some(e) = ended.error() {
        display.line("run", format!("stopping: {e}"));
    }
    // What the lead left running is stopped; then the team is deleted
    // (unless kept), if the lead did not delete it.
    let stopping = Instant::now();
    let shutdown = match run.shut_down(&display, &ended).await {
        Ok(report) => report,
        Err(e) => {
            display.stop().await;
            return Err(e);
        }
    };
    let timings = Timings {
        start,
        spawn: Duration::ZERO,
        work,
        shutdown: stopping.elapsed(),
    };
    let finished = run.finish(ended, shutdown).await;
    display.stop().await;
    let summary = Summary::of_run(&team, &manifest, finished?, timings, host.home().root());
    out.print(&summary, || {
        format!(
            "team {}: the lead's run {outcome} in {:.1}s\n{}",
            team.name(),
            start.elapsed().as_secs_f64(),
            summary.human()
        )
    })?;
    match summary.error {
        None => Ok(()),
        Some(e) => Err(anyhow::anyhow!(e)),
    }
}
