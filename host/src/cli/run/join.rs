//! `teamhost run --join TEAM.toml` and `teamhost run --adopt TEAM.toml`:
//! runs beside a lead that runs elsewhere, on a shared store, by the library
//! ([`crate::run::Start::Join`]: the manifest's teammates join the lead's
//! team; [`crate::run::Start::Adopt`]: a standby host takes over the
//! teammates of a host whose lease expires). Shown as event lines; on the
//! timeout, Ctrl-C or SIGTERM the teammates still running here are stopped,
//! and a store that does not answer is not waited for
//! ([`super::stop::stop_without_store`]). The summary says `joined`, and
//! whom a standby adopted.

use std::path::Path;
use std::time::Instant;

use super::display::Display;
use super::report::{Log, Reporter};
use super::stop::Signals;
use super::summary::{Summary, Timings};
use super::Output;
use crate::embed::Host;
use crate::run::{Run, RunPlan};

/// Runs `plan` (a `Join` or an `Adopt`) to its end; see the module docs.
pub(super) async fn run_beside(
    home: &Path,
    host: &Host,
    out: &Output,
    plan: RunPlan,
    log: Log,
    signals: &mut Signals,
) -> anyhow::Result<()> {
    let start = log.start;
    let m = plan.manifest.clone();
    let prepared = Run::prepare(host, plan, &log).await?;
    let team = prepared.team().clone();
    let reporter = Display::Lines(Reporter::start(host, &team, None, log.clone()));
    let mut run = match prepared.begin(&log).await {
        Ok(run) => run,
        Err(e) => {
            reporter.stop().await;
            return Err(e);
        }
    };
    let outcome = super::stop::until_done(&mut run, &reporter, signals).await?;
    let work = start.elapsed();
    // Stopping a teammate here writes to the store (its tasks handed
    // back, the lead told): only while the store answers.
    if let Err(why) = super::stop::check_store(signals, &team, super::SHUTDOWN_TIMEOUT).await {
        return Err(super::stop::stop_without_store(
            host,
            signals,
            reporter,
            &why,
            outcome.exit_code(),
        )
        .await);
    }
    let stopping = Instant::now();
    let shutdown = match run.shut_down(&reporter, &outcome).await {
        Ok(report) => report,
        Err(e) => {
            reporter.stop().await;
            return Err(e);
        }
    };
    let times = Timings {
        start,
        spawn: run.spawn_took(),
        work,
        shutdown: stopping.elapsed(),
    };
    reporter.stop().await;
    let finished = run.finish(outcome, shutdown).await?;
    let mut summary = Summary::of_run(&team, &m, finished, times, home);
    summary.joined = true;
    out.print(&summary, || summary.human())?;
    match summary.error {
        None => Ok(()),
        Some(e) => Err(anyhow::anyhow!(e)),
    }
}
