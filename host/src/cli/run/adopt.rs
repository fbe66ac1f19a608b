//! `teamhost run --adopt TEAM.toml --store nats://…`: a standby host for a
//! team whose teammates run on other hosts (issue 32, host failover). It
//! compiles the manifest's components first (so a takeover costs no
//! compilation), waits for the team (as `--join` does, on the store's change
//! feed), holds a lease of its own on it, and every [`LEASE_POLL`] reads the
//! team's leases: when another host's lease has shown one revision for a
//! whole lease on this host's clock, it takes that host's teammates over
//! ([`Host::adopt`]), as many times as hosts die. It runs until every
//! teammate it adopted has been shut down by the lead (as `--join` ends),
//! the team is deleted, `--timeout`, or a signal (Ctrl-C, SIGTERM: the
//! adopted teammates still running are stopped as `--join` stops its own).
//!
//! The manifest names the team, the store and the components this host may
//! run: a teammate is started from the manifest's file whose bytes hash to
//! its run record's hash, else from the store's shelf; its `[[teammate]]`
//! entries are not spawned. It seeds nothing. Only a store shared by several
//! hosts keeps leases: on the file store `--adopt` is refused.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::display::Display;
use super::report::{Log, Reporter};
use super::stop::Signals;
use super::summary::Timings;
use super::{Output, RunArgs};
use crate::embed::{Host, LeaseWatch, TeammateState, LEASE_POLL};
use crate::home::Home;
use crate::manifest::Manifest;
use crate::run::{describe_state, Ended};

/// Runs `teamhost run --adopt`; see the module docs.
pub(super) async fn run_adopting(
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
            "{} has {} [[task]] entries, but --adopt seeds no tasks: the lead's manifest holds the team's tasks; remove them from this one",
            a.manifest.display(),
            m.tasks.len()
        );
    }
    let where_ = crate::cli::store_select::describe(&Home::new(home), host.store());
    if host.store().backend().failover().is_none() {
        anyhow::bail!(
            "--adopt takes over teammates of other hosts through leases kept in a shared store, and {where_} keeps none (the file store lives on one machine: there `teamhost run --resume` brings a team back); use --store nats://HOST:PORT/PREFIX"
        );
    }
    let start = log.start;
    let team = host.team(&m.team.name)?;
    let reporter = Display::Lines(Reporter::start(host, &team, None, log));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(a.timeout);
    signals.watchdog().set_deadline(Some(deadline.into_std()));
    let mut components: Vec<PathBuf> = m.teammates.iter().map(|t| t.component.clone()).collect();
    components.sort();
    components.dedup();
    let spawning = Instant::now();
    let ready = async {
        compile(host, &components, &reporter).await?;
        super::join::team_made(&team, &reporter).await?;
        host.hold_team_lease(team.name()).await?;
        reporter.line(
            "run",
            format!(
                "standing by for team {} in {where_}: watching its hosts' leases every {}ms to take over the teammates of one whose lease expires",
                team.name(),
                LEASE_POLL.as_millis()
            ),
        );
        anyhow::Ok(())
    };
    let readied = tokio::select! {
        r = tokio::time::timeout_at(deadline, ready) => match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Ended::SpawnFailed(format!("{e:#}"))),
            Err(_) => Err(Ended::TimedOut(a.timeout)),
        },
        sig = signals.next() => Err(Ended::Interrupted(sig.name())),
    };
    let spawn = spawning.elapsed();
    let mut adopted: Vec<String> = Vec::new();
    let outcome = match readied {
        Err(outcome) => outcome,
        Ok(()) => {
            let watching = watch(host, team.name(), &components, &reporter, &mut adopted);
            tokio::select! {
                r = tokio::time::timeout_at(deadline, watching) => match r {
                    Ok(outcome) => outcome,
                    Err(_) => Ended::TimedOut(a.timeout),
                },
                sig = signals.next() => Ended::Interrupted(sig.name()),
            }
        }
    };
    let work = start.elapsed();
    let times = Timings {
        start,
        spawn,
        work,
        shutdown: Duration::ZERO,
    };
    // Ended here with the lease still ours: nobody is to take anything over
    // from this host.
    super::join::finish(
        home, host, out, m, &team, reporter, outcome, times, true, adopted, signals,
    )
    .await
}

/// Loads (compiling once, then from the cache) every component this host
/// may run, before any takeover needs one.
async fn compile(host: &Host, components: &[PathBuf], reporter: &Display) -> anyhow::Result<()> {
    for path in components {
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        reporter.line(
            "run",
            format!("compiling {file} (cached after the first time)…"),
        );
        let (runtime, p) = (host.runtime().clone(), path.clone());
        tokio::task::spawn_blocking(move || runtime.prepare(&p))
            .await
            .map_err(|e| anyhow::anyhow!("compiling {file} panicked: {e}"))?
            .map_err(|e| anyhow::anyhow!("component {}: {e:#}", path.display()))?;
    }
    Ok(())
}

/// Reads the leases every [`LEASE_POLL`] and adopts, until every adopted
/// teammate has stopped or the team is deleted. A look that fails (the
/// store unreachable a moment) is logged and tried again.
async fn watch(
    host: &Host,
    team: &str,
    components: &[PathBuf],
    reporter: &Display,
    adopted: &mut Vec<String>,
) -> Ended {
    let mut leases = LeaseWatch::new();
    let mut tick = tokio::time::interval(LEASE_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing: Option<String> = None;
    loop {
        tick.tick().await;
        if let Err(lost) = host.check_lease(team) {
            return Ended::HostError(lost.to_string());
        }
        let Ok(t) = host.team(team) else {
            return Ended::HostError(format!("team {team} cannot be opened"));
        };
        if !super::join::exists(&t).await {
            reporter.line("run", format!("team {team} was deleted"));
            return ended(host, team, adopted);
        }
        match host.adopt(team, components, &mut leases).await {
            Ok(reports) => {
                failing = None;
                for r in reports {
                    reporter.line(
                        "run",
                        format!(
                            "adopted {} from host {} after {:.2}s without a renewal (takeover {}ms): {}",
                            if r.adopted.is_empty() {
                                "nobody".to_string()
                            } else {
                                r.adopted.join(", ")
                            },
                            r.from,
                            r.waited.as_secs_f64(),
                            r.took.as_millis(),
                            r.describe()
                        ),
                    );
                    adopted.extend(r.adopted);
                }
            }
            Err(e) => {
                let e = e.to_string();
                if failing.as_deref() != Some(e.as_str()) {
                    reporter.line("run", format!("cannot read the leases: {e} (trying again)"));
                }
                failing = Some(e);
            }
        }
        let mates = host.teammates(team);
        if !adopted.is_empty() && mates.iter().all(|t| t.state.is_finished()) {
            return ended(host, team, adopted);
        }
    }
}

/// How a standby run ended once its adopted teammates stopped (or the team
/// went): all through the lead's shutdown, or some otherwise.
fn ended(host: &Host, team: &str, adopted: &[String]) -> Ended {
    if let Err(lost) = host.check_lease(team) {
        return Ended::HostError(lost.to_string());
    }
    let mates = host.teammates(team);
    if mates.iter().all(|t| t.state == TeammateState::Completed) {
        return Ended::ShutDown;
    }
    let states: Vec<String> = mates.iter().map(describe_state).collect();
    Ended::AllStopped(format!(
        "the teammates adopted here ({}) have stopped, not all through the lead's shutdown ({})",
        adopted.join(", "),
        states.join("; ")
    ))
}
