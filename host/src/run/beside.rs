//! Runs beside the lead's, on a store shared with its host
//! ([`super::Start::Join`], [`super::Start::Adopt`]): this host seeds no
//! task, answers no request and deletes nothing; the lead's run does.
//!
//! **Join**: the manifest's teammates join a team whose lead runs in another
//! process, as a second host of one team. The components are loaded first;
//! then the run waits for the team (woken by the store's change feed, never
//! polling), spawns its teammates the moment it exists, and ends when the
//! lead has shut every one of them down through the protocol. The file
//! store's feed does not hear a team directory that does not exist yet, so
//! on files the team must exist when a join starts.
//!
//! **Adopt**: a standby host. It compiles the manifest's components (so a
//! takeover costs no compilation), waits for the team, holds a lease of its
//! own on it, and every [`LEASE_POLL`] reads the team's leases: when another
//! host's lease has shown one revision for a whole lease on this host's
//! clock, it takes that host's teammates over ([`Host::adopt`]), as many
//! times as hosts die. It ends when every teammate it adopted has been shut
//! down by the lead, or the team is deleted. A teammate is started from the
//! manifest's file whose bytes hash to its run record's hash, else from the
//! store's shelf; its `[[teammate]]` entries are not spawned. Only a store
//! shared by several hosts keeps leases: on the file store it is refused.
//! A standby whose manifest has the led team's `[lead]` and `[[catalogue]]`
//! takes a dead host's lead component over too ([`Host::adopt_with_lead`]:
//! the same component by SHA-256, its seat from the store, its goal given
//! again); from then on it is the led team's host, and the run ends as a
//! led run does ([`super::led::wait`]): when the lead deletes the team,
//! fails, or has nothing left to wake it.
//!
//! Either way the plan's timeout bounds the whole run (spawns included),
//! and at the end the teammates still running here are stopped
//! ([`Host::kill`]: their tasks go back to `pending`, the lead is told).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, Notify};

use super::ended::{describe_state, Ended};
use super::narrator::Narrator;
use super::plan::{Leader, RunPlan, Start};
use super::spawn::{compile_all, start_all};
use crate::embed::{Host, LeadSpec, LeaseWatch, ShutdownReport, TeammateState, LEASE_POLL};
use crate::store::{StoreEvent, StoreObserver, Team};

/// Refuses a plan beside the lead's that cannot run: `[[task]]`s (the
/// lead's manifest holds them), a lead of its own, a join on the file store
/// before the team exists, an adoption on a store without leases.
pub(super) fn check(host: &Host, plan: &RunPlan, team: &Team) -> anyhow::Result<()> {
    let flag = match plan.start {
        Start::Join => "--join",
        Start::Adopt => "--adopt",
        _ => return Ok(()),
    };
    let m = &plan.manifest;
    if !m.tasks.is_empty() {
        anyhow::bail!(
            "{} has {} [[task]] entries, but {flag} seeds no tasks: the lead's manifest holds the team's tasks; remove them from this one",
            plan.manifest_file.display(),
            m.tasks.len()
        );
    }
    if plan.leader != Leader::Person && plan.start == Start::Join {
        anyhow::bail!("{flag} runs teammates beside a lead that runs elsewhere: it cannot have a lead of its own");
    }
    let where_ = describe_store(host);
    if plan.start == Start::Join && host.store().file_store().is_some() && !team.exists() {
        anyhow::bail!(
            "team {:?} does not exist in {where_}: on the file store --join needs the team made first (start the lead's `teamhost run` before this one), or share a NATS store (--store nats://…), on which it waits for the team",
            team.name()
        );
    }
    if plan.start == Start::Adopt && host.store().backend().failover().is_none() {
        anyhow::bail!(
            "--adopt takes over teammates of other hosts through leases kept in a shared store, and {where_} keeps none (the file store lives on one machine: there `teamhost run --resume` brings a team back); use --store nats://HOST:PORT/PREFIX"
        );
    }
    Ok(())
}

/// Where the host's store keeps its teams, for a person: the NATS server,
/// else the home.
pub(super) fn describe_store(host: &Host) -> String {
    host.store()
        .backend()
        .remote_location()
        .unwrap_or_else(|| host.home().root().display().to_string())
}

/// The work of a run beside the lead's, bounded by `timeout` from now (the
/// narrator hears the deadline first): join or adopt, then wait for the
/// end. Returns how it ended, how long the spawns (or getting ready) took,
/// and the teammates adopted.
pub(super) async fn work(
    host: &Host,
    plan: &RunPlan,
    team: &Team,
    narrator: &dyn Narrator,
    stop: impl Future<Output = &'static str>,
) -> (Ended, Duration, Vec<String>) {
    tokio::pin!(stop);
    let timeout = plan.timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    narrator.work_started(deadline.into_std());
    let m = &plan.manifest;
    let where_ = describe_store(host);
    let adopting = plan.start == Start::Adopt;
    // A standby of a led team may run its lead and what it spawned.
    let lead = match plan.is_led() && adopting {
        true => match super::led::spec(plan) {
            Ok(spec) => Some(spec),
            Err(e) => {
                return (
                    Ended::SpawnFailed(format!("{e:#}")),
                    Duration::ZERO,
                    Vec::new(),
                )
            }
        },
        false => None,
    };
    let mut components: Vec<PathBuf> = m
        .teammates
        .iter()
        .map(|t| t.component.clone())
        .chain(lead.iter().map(|l| l.component.clone()))
        .chain(
            lead.iter()
                .flat_map(|l| l.catalogue.iter().map(|e| e.component.clone())),
        )
        .collect();
    components.sort();
    components.dedup();
    let spawning = Instant::now();
    let ready = async {
        if adopting {
            compile(host, &components, narrator).await?;
            team_made(team, narrator).await?;
            host.hold_team_lease(team.name()).await?;
            narrator.line(
                "run",
                format!(
                    "standing by for team {} in {where_}: watching its hosts' leases every {}ms to take over the teammates of one whose lease expires",
                    team.name(),
                    LEASE_POLL.as_millis()
                ),
            );
            anyhow::Ok(())
        } else {
            compile_all(host, team, m, narrator).await?;
            team_made(team, narrator).await?;
            narrator.line("run", format!("joined team {} in {where_}", team.name()));
            start_all(host, team, m, narrator, false).await
        }
    };
    let readied = tokio::select! {
        r = tokio::time::timeout_at(deadline, ready) => match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Ended::SpawnFailed(format!("{e:#}"))),
            Err(_) => Err(Ended::TimedOut(timeout.as_secs())),
        },
        how = &mut stop => Err(Ended::Interrupted(how)),
    };
    let spawn = spawning.elapsed();
    let mut adopted: Vec<String> = Vec::new();
    let ended = match readied {
        Err(ended) => ended,
        Ok(()) if adopting => {
            let look = Look {
                host,
                team: team.name(),
                components: &components,
                lead: lead.as_ref(),
                narrator,
            };
            let watching = watch(&look, &mut adopted);
            let watched = tokio::select! {
                r = tokio::time::timeout_at(deadline, watching) => match r {
                    Ok(ended) => Ok(ended),
                    Err(_) => Err(Ended::TimedOut(timeout.as_secs())),
                },
                how = &mut stop => Err(Ended::Interrupted(how)),
            };
            match watched {
                Ok(Watched::Ended(ended)) | Err(ended) => ended,
                // The led team's host now: it ends as a led run does, and
                // goes on adopting the teammates of other hosts that die.
                Ok(Watched::LeadAdopted(mut leases)) => {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    let more = watch_more(&look, &mut adopted, &mut leases);
                    tokio::select! {
                        ended = super::led::wait(host, team, left, &mut stop) => ended,
                        ended = more => ended,
                    }
                }
            }
        }
        Ok(()) => tokio::select! {
            r = tokio::time::timeout_at(deadline, all_stopped(host, team.name())) => match r {
                Ok(()) => ended_beside(host, team.name(), "every teammate has stopped"),
                Err(_) => Ended::TimedOut(timeout.as_secs()),
            },
            how = &mut stop => Ended::Interrupted(how),
        },
    };
    (ended, spawn, adopted)
}

/// Stops the teammates still running here ([`Host::kill`]: their tasks go
/// back to `pending`, the lead is told), and gives the lease up when
/// `release` and this host still holds it (nobody is to take anything over
/// from a host whose teammates all ended).
pub(super) async fn shut_down(
    host: &Host,
    team: &Team,
    ended: &Ended,
    narrator: &dyn Narrator,
    release: bool,
) -> anyhow::Result<ShutdownReport> {
    let mut shutdown = ShutdownReport::default();
    for t in host.teammates(team.name()) {
        if !t.state.is_finished() {
            narrator.line(
                &t.name,
                format!("stopping: {}", ended.error().unwrap_or_default()),
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
    Ok(shutdown)
}

/// Returns once `team` exists, woken by the store's change feed.
async fn team_made(team: &Team, narrator: &dyn Narrator) -> anyhow::Result<()> {
    let heard = Arc::new(Notify::new());
    // Started before the first look: a creation after it leaves a permit.
    let _feed = team.watch(Arc::new(Heard(heard.clone())))?;
    if !exists(team).await {
        narrator.line(
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
async fn exists(team: &Team) -> bool {
    let t = team.clone();
    crate::blocking::run("reading the team", move || t.exists())
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

/// How a run beside the lead's ended once its teammates stopped (or the
/// team went): all through the lead's shutdown, or some otherwise,
/// `stopped` saying whose ("every teammate has stopped", "the teammates
/// adopted here (…) have stopped").
fn ended_beside(host: &Host, team: &str, stopped: &str) -> Ended {
    if let Err(lost) = host.check_lease(team) {
        return Ended::HostError(lost.to_string());
    }
    let mates = host.teammates(team);
    if mates.iter().all(|t| t.state == TeammateState::Completed) {
        return Ended::ShutDown;
    }
    let states: Vec<String> = mates.iter().map(describe_state).collect();
    Ended::AllStopped(format!(
        "{stopped}, not all through the lead's shutdown ({})",
        states.join("; ")
    ))
}

/// [`ended_beside`] for a standby: whom it adopted.
fn adopted_ended(host: &Host, team: &str, adopted: &[String]) -> Ended {
    let stopped = format!(
        "the teammates adopted here ({}) have stopped",
        adopted.join(", ")
    );
    ended_beside(host, team, &stopped)
}

/// Loads (compiling once, then from the cache) every component this host
/// may run, before any takeover needs one.
async fn compile(
    host: &Host,
    components: &[PathBuf],
    narrator: &dyn Narrator,
) -> anyhow::Result<()> {
    for path in components {
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        narrator.line(
            "run",
            format!("compiling {file} (cached after the first time)…"),
        );
        let (runtime, p) = (host.runtime().clone(), path.clone());
        crate::blocking::run("compiling a component", move || runtime.compile(&p))
            .await?
            .map_err(|e| anyhow::anyhow!("component {}: {e:#}", path.display()))?;
    }
    Ok(())
}

/// How [`watch`] returned.
enum Watched {
    /// The standby's work is over.
    Ended(Ended),
    /// It took a dead host's lead component over: the run goes on as a led
    /// run, with the leases as this host has watched them.
    LeadAdopted(LeaseWatch),
}

/// Reads the leases every [`LEASE_POLL`] and adopts, until every adopted
/// teammate has stopped, the team is deleted or (given `lead`) a dead
/// host's lead is adopted. A look that fails (the store unreachable a
/// moment) is logged and tried again.
async fn watch(look: &Look<'_>, adopted: &mut Vec<String>) -> Watched {
    let (host, team, narrator) = (look.host, look.team, look.narrator);
    let mut leases = LeaseWatch::new();
    let mut tick = lease_ticker();
    let mut failing: Option<String> = None;
    loop {
        tick.tick().await;
        if let Err(lost) = host.check_lease(team) {
            return Watched::Ended(Ended::HostError(lost.to_string()));
        }
        let Ok(t) = host.team(team) else {
            return Watched::Ended(Ended::HostError(format!("team {team} cannot be opened")));
        };
        if !exists(&t).await {
            narrator.line("run", format!("team {team} was deleted"));
            return Watched::Ended(adopted_ended(host, team, adopted));
        }
        if look.once(&mut leases, adopted, &mut failing).await {
            return Watched::LeadAdopted(leases);
        }
        let mates = host.teammates(team);
        if !adopted.is_empty() && mates.iter().all(|t| t.state.is_finished()) {
            return Watched::Ended(adopted_ended(host, team, adopted));
        }
    }
}

/// After the lead was adopted here: goes on adopting the teammates of
/// other hosts whose lease expires, while the led run's wait decides how it
/// ends. Returns only when this host lost its own lease.
async fn watch_more(look: &Look<'_>, adopted: &mut Vec<String>, leases: &mut LeaseWatch) -> Ended {
    let (host, team) = (look.host, look.team);
    let mut tick = lease_ticker();
    let mut failing: Option<String> = None;
    loop {
        tick.tick().await;
        if let Err(lost) = host.check_lease(team) {
            return Ended::HostError(lost.to_string());
        }
        // A team the lead deleted: its wait says how the run ended.
        match host.team(team) {
            Ok(t) if exists(&t).await => {}
            _ => std::future::pending::<()>().await,
        }
        look.once(leases, adopted, &mut failing).await;
    }
}

/// Ticks every [`LEASE_POLL`]; a late tick is not made up for.
fn lease_ticker() -> tokio::time::Interval {
    let mut tick = tokio::time::interval(LEASE_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// One look at a team's leases by a standby.
struct Look<'a> {
    host: &'a Host,
    team: &'a str,
    components: &'a [PathBuf],
    lead: Option<&'a LeadSpec>,
    narrator: &'a dyn Narrator,
}

impl Look<'_> {
    /// Adopts what expired, adding the names to `adopted` and saying so;
    /// a failing read is said once until it changes (`failing`). Whether a
    /// lead was adopted.
    async fn once(
        &self,
        leases: &mut LeaseWatch,
        adopted: &mut Vec<String>,
        failing: &mut Option<String>,
    ) -> bool {
        let mut lead = false;
        let found = self
            .host
            .adopt_with_lead(self.team, self.components, self.lead, leases)
            .await;
        match found {
            Ok(reports) => {
                *failing = None;
                for r in reports {
                    self.narrator.line(
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
                    lead |= r.lead;
                    adopted.extend(r.adopted);
                }
            }
            Err(e) => {
                let e = e.to_string();
                if failing.as_deref() != Some(e.as_str()) {
                    self.narrator
                        .line("run", format!("cannot read the leases: {e} (trying again)"));
                }
                *failing = Some(e);
            }
        }
        lead
    }
}
