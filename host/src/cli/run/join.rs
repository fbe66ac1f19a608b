//! `teamhost run --join TEAM.toml`: the manifest's teammates join a team
//! whose lead runs in another process — on another host, sharing a NATS
//! store (`--store nats://…`) — as a second host of one team. The lead's
//! `teamhost run` creates the team and seeds its tasks; this one loads its
//! components first, waits for the team (woken by the store's change feed,
//! never polling), spawns its teammates into it the moment it exists, and
//! runs until the lead has shut every one of them down through the protocol
//! (`shutdown_request`, answered by `shutdown_approved`). It seeds no task,
//! consumes nothing of the lead's and deletes nothing.
//!
//! The file store's feed does not hear a team directory that does not exist
//! yet, so on files the team must exist when `--join` starts. On the
//! timeout, Ctrl-C or SIGTERM the teammates still running are stopped
//! ([`Host::kill`]: their tasks go back to `pending`, the lead is told).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, Notify};

use super::display::Display;
use super::report::{Log, Reporter};
use super::stop::Signals;
use super::summary::{Summary, Timings};
use super::{Output, RunArgs};
use crate::embed::{Host, ShutdownReport, TeammateState};
use crate::home::Home;
use crate::manifest::Manifest;
use crate::run::{compile_all, start_all};
use crate::run::{count_messages, MessageCounts};
use crate::run::{describe_state, Ended};
use crate::store::{StoreEvent, StoreObserver, Team};

/// Runs `teamhost run --join`; see the module docs.
pub(super) async fn run_joined(
    home: &Path,
    host: &Host,
    out: &Output,
    a: &RunArgs,
    m: &Manifest,
    log: Log,
    signals: &mut Signals,
) -> anyhow::Result<()> {
    if !m.tasks.is_empty() {
        anyhow::bail!(
            "{} has {} [[task]] entries, but --join seeds no tasks: the lead's manifest holds the team's tasks; remove them from this one",
            a.manifest.display(),
            m.tasks.len()
        );
    }
    let start = log.start;
    let team = host.team(&m.team.name)?;
    let where_ = crate::cli::store_select::describe(&Home::new(home), host.store());
    if host.store().file_store().is_some() && !team.exists() {
        anyhow::bail!(
            "team {:?} does not exist in {where_}: on the file store --join needs the team made first (start the lead's `teamhost run` before this one), or share a NATS store (--store nats://…), on which it waits for the team",
            team.name()
        );
    }
    let reporter = Display::Lines(Reporter::start(host, &team, None, log));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(a.timeout);
    signals.watchdog().set_deadline(Some(deadline.into_std()));
    let spawning = Instant::now();
    let joined = async {
        compile_all(host, &team, m, &reporter).await?;
        team_made(&team, &reporter).await?;
        reporter.line("run", format!("joined team {} in {where_}", team.name()));
        start_all(host, &team, m, &reporter, false).await
    };
    let spawned = tokio::select! {
        r = tokio::time::timeout_at(deadline, joined) => match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Ended::SpawnFailed(format!("{e:#}"))),
            Err(_) => Err(Ended::TimedOut(a.timeout)),
        },
        sig = signals.next() => Err(Ended::Interrupted(sig.name())),
    };
    let spawn = spawning.elapsed();
    let outcome = match spawned {
        Err(outcome) => outcome,
        Ok(()) => {
            tokio::select! {
                r = tokio::time::timeout_at(deadline, all_stopped(host, team.name())) => match r {
                    Ok(()) => ended(host, team.name()),
                    Err(_) => Ended::TimedOut(a.timeout),
                },
                sig = signals.next() => Ended::Interrupted(sig.name()),
            }
        }
    };
    let work = start.elapsed();
    // Every teammate here approved the lead's shutdown: nothing to take
    // over, so the lease is given up rather than left to expire.
    let release = matches!(outcome, Ended::ShutDown);
    let times = Timings {
        start,
        spawn,
        work,
        shutdown: Duration::ZERO,
    };
    finish(
        home,
        host,
        out,
        m,
        &team,
        reporter,
        outcome,
        times,
        release,
        Vec::new(),
        signals,
    )
    .await
}

/// How a run beside the lead's ends (`--join`, `--adopt`): the teammates
/// still running here are stopped ([`Host::kill`]: their tasks go back to
/// `pending`, the lead is told), the lease released when `release` and
/// this host still holds it, and the summary printed; the run's error when
/// it did not end through the lead's shutdown. `times.shutdown` is measured
/// here. `adopted`: the teammates a standby took over. A store that does
/// not answer is not waited for: the teammates are stopped where they are
/// and the run ends at once ([`super::stop::stop_without_store`]).
#[allow(clippy::too_many_arguments)]
pub(super) async fn finish(
    home: &Path,
    host: &Host,
    out: &Output,
    m: &Manifest,
    team: &Team,
    reporter: Display,
    outcome: Ended,
    mut times: Timings,
    release: bool,
    adopted: Vec<String>,
    signals: &Signals,
) -> anyhow::Result<()> {
    signals.watchdog().set_deadline(None);
    if let Ended::Interrupted(how) = &outcome {
        if !super::stop::Stop::is_signal_name(how) {
            signals.watchdog().asked(how);
        }
    }
    // Stopping a teammate here writes to the store (its tasks handed
    // back, the lead told): only while the store answers.
    if let Err(why) = super::stop::check_store(signals, team, super::SHUTDOWN_TIMEOUT).await {
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
    let mut shutdown = ShutdownReport::default();
    for t in host.teammates(team.name()) {
        if !t.state.is_finished() {
            reporter.line(
                &t.name,
                format!("stopping: {}", outcome.error().unwrap_or_default()),
            );
            host.kill(team.name(), &t.name).await?;
            shutdown.killed.push(t.name);
        } else if t.state == TeammateState::Completed {
            shutdown.stopped.push(t.name);
        }
    }
    if release && host.check_lease(team.name()).is_ok() {
        host.release_lease_if_done(team.name()).await;
    }
    times.shutdown = stopping.elapsed();
    reporter.stop().await;
    // The lead may have deleted the team by now: then there is nothing
    // left to count, which is no error of this process.
    let tasks = team.list_tasks().unwrap_or_default();
    let lead = team
        .config()
        .map(|c| c.lead_name().to_string())
        .unwrap_or_default();
    let messages = count_messages(team, &lead).unwrap_or_else(|_| MessageCounts::default());
    let teammates = host.teammates(team.name());
    let mut summary = Summary::new(
        team, m, &outcome, &tasks, &teammates, shutdown, messages, times, home, true,
    );
    summary.joined = true;
    summary.adopted = adopted;
    out.print(&summary, || summary.human())?;
    match summary.error {
        None => Ok(()),
        Some(e) => Err(anyhow::anyhow!(e)),
    }
}

/// Returns once `team` exists, woken by the store's change feed.
pub(super) async fn team_made(team: &Team, reporter: &Display) -> anyhow::Result<()> {
    let heard = Arc::new(Notify::new());
    // Started before the first look: a creation after it leaves a permit.
    let _feed = team.watch(Arc::new(Heard(heard.clone())))?;
    if !exists(team).await {
        reporter.line(
            "run",
            format!("waiting for the lead to create team {}", team.name()),
        );
    }
    while !exists(team).await {
        heard.notified().await;
    }
    Ok(())
}

/// Whether `team` exists, read on the blocking pool: a store that does not
/// answer holds this future, never the runtime thread a stop needs.
pub(super) async fn exists(team: &Team) -> bool {
    let t = team.clone();
    tokio::task::spawn_blocking(move || t.exists())
        .await
        .unwrap_or(true)
}

/// Wakes [`team_made`] on every change the feed reports.
struct Heard(Arc<Notify>);

impl StoreObserver for Heard {
    fn changed(&self, _: &StoreEvent) {
        self.0.notify_one();
    }
}

/// Returns once every teammate this host spawned into `team` has stopped.
async fn all_stopped(host: &Host, team: &str) {
    let mut events = host.events();
    while host.teammates(team).iter().any(|t| !t.state.is_finished()) {
        // Every state change is an event; one missed to lag is looked at
        // again all the same.
        if let Err(broadcast::error::RecvError::Closed) = events.recv().await {
            return;
        }
    }
}

/// How a joined run ended once every teammate stopped: all through the
/// lead's shutdown, or some otherwise.
fn ended(host: &Host, team: &str) -> Ended {
    if let Err(lost) = host.check_lease(team) {
        return Ended::HostError(lost.to_string());
    }
    let mates = host.teammates(team);
    if mates.iter().all(|t| t.state == TeammateState::Completed) {
        return Ended::ShutDown;
    }
    let states: Vec<String> = mates.iter().map(describe_state).collect();
    Ended::AllStopped(format!(
        "every teammate has stopped, not all through the lead's shutdown ({})",
        states.join("; ")
    ))
}
