//! A run led by a component ([`super::Leader::Component`]): the lead is
//! started with the goal as its first message instead of the manifest's
//! teammates; it forms the team, spawns teammates from `[[catalogue]]` and
//! deletes the team when it is done, which ends the run.
//!
//! | the run ends when | [`Ended`] |
//! |---|---|
//! | the lead deleted its team (its runner completed) | `Completed` |
//! | the lead's runner failed | `LeadFailed` |
//! | the lead was stopped otherwise (killed) | `LeadStopped` |
//! | nothing is left to wake the lead, and the turn it was given to act ended the same way | `Stuck` |
//! | the stop future resolved, or the timeout passed | `Interrupted`, `TimedOut` |
//!
//! **Nothing left to wake it.** A lead that ends a turn without acting (its
//! per-turn model calls spent before it spawned anyone, a model that only
//! talked) would wait for a message nobody will send. When the team is
//! settled (every runner idle, no unread message, no claimable task: the
//! rule of [`Host::wait_idle`]), no permission or plan request waits for
//! the person or the policy (they may still answer) and that holds for a
//! moment ([`SETTLE`]), the lead is told so once, in a message from
//! `teamhost` ([`NOTHING_TO_WAKE`], with the requests that wait for the
//! lead's own answer, if any), which is a new turn with its per-turn limits
//! reset. If the team settles again without anything changing but the
//! lead's turn count, the run ends `Stuck`, saying why. Anything that
//! changes (a task, a teammate's turn, a member, a request answered) earns
//! the lead another telling later. A teammate that waits, inside its turn,
//! for the lead's answer to a permission request is busy, not idle: that
//! case is still bounded by the timeout only (a plan's wait is idle, and
//! is told).
//!
//! **After a crash** ([`Start::Resume`]): the team's teammates and its lead
//! come back together ([`Host::resume_led`](crate::embed::Host::resume_led)),
//! the lead with its seat as this machine kept it; the goal is not needed
//! and not delivered again. A team whose lead was a component resumes only
//! led (by the component that led it), and a team led by the person only
//! without one ([`check_resume`]).
//!
//! Decisions: a led run needs a goal (the plan's, else `[lead] goal`) and a
//! `[[catalogue]]` (a lead without one could spawn nothing), and has no
//! `[[teammate]]` entries: every teammate is the lead's to spawn. It
//! succeeds when its lead completes: the lead judges its teammates' work.

use std::future::Future;
use std::time::Duration;

use anyhow::Context;

use super::ended::Ended;
use super::plan::{Leader, RunPlan, Start};
use crate::embed::{Host, LeadSpec, ShutdownReport, TeammateState};
use crate::manifest::LeadTable;
use crate::protocol::describe::printable_line;
use crate::protocol::HOST_SENDER;
use crate::store::config::LEAD_NAME;
use crate::store::OutgoingMessage;
use crate::store::Team;

/// The lead to start, from the plan and the manifest's `[lead]` and
/// `[[catalogue]]`; refuses a plan without a goal or a catalogue, or with
/// `[[teammate]]` entries.
pub(super) fn spec(plan: &RunPlan) -> anyhow::Result<LeadSpec> {
    let m = &plan.manifest;
    let (goal, component) = match &plan.leader {
        Leader::Component { goal, component } => (goal.clone(), component.clone()),
        Leader::Person => anyhow::bail!("this run is led by the person, not a component"),
    };
    let goal = goal
        .or_else(|| m.lead.as_ref().and_then(|l| l.goal.clone()))
        .filter(|g| !g.trim().is_empty());
    // A resumed lead had its goal in its first life: none is needed, and
    // none is delivered again. A standby adopting the lead gives it the
    // goal its run record kept.
    let goal = match (goal, plan.start) {
        (Some(goal), _) => goal,
        (None, Start::Resume | Start::Adopt) => String::new(),
        (None, _) => anyhow::bail!(
            "a team led by a component needs a goal: pass --goal \"TEXT\" or set `goal` in [lead]"
        ),
    };
    if m.catalogue.is_empty() {
        anyhow::bail!(
            "{} has no [[catalogue]]: a lead component spawns its teammates only from the manifest's [[catalogue]] entries; add at least one",
            plan.manifest_file.display()
        );
    }
    if !m.teammates.is_empty() {
        anyhow::bail!(
            "{} has [[teammate]] entries, but a lead component spawns every teammate itself: move them to [[catalogue]] or run without --lead/--goal",
            plan.manifest_file.display()
        );
    }
    let table = m.lead.clone().unwrap_or_else(LeadTable::from_cli);
    // A bare `team.toml` has the empty path as its parent: the current
    // directory.
    let base = plan
        .manifest_file
        .parent()
        .map(|p| match p.as_os_str().is_empty() {
            true => std::path::absolute("."),
            false => std::path::absolute(p),
        })
        .transpose()?
        .unwrap_or_default();
    let mut spec =
        super::lead_spec::lead_spec(&table, &base, component.as_deref(), &goal, &m.catalogue)
            .map_err(anyhow::Error::msg)?;
    if m.lead.is_none() {
        spec.cwd = crate::manifest::default_cwd(&base, LEAD_NAME);
    }
    // The manifest's sub-agent definitions: the lead's, and those it
    // spawns get them too.
    spec.settings.agents = m.agent_definitions.clone();
    Ok(spec)
}

/// Refuses a resume whose leader is not the team's: a team with a lead
/// component's record on this machine resumes only with a lead component
/// (the record then checks it is the same one), and one without only with
/// none.
pub(super) fn check_resume(host: &Host, plan: &RunPlan, team: &Team) -> anyhow::Result<()> {
    let record = crate::home::lead_record::LeadRecord::load(host.home(), team.name())
        .with_context(|| format!("cannot read the lead's record of team {:?}", team.name()))?;
    match (record, plan.is_led()) {
        (Some(record), false) => anyhow::bail!(
            "team {:?} was led by the component {}: resume it led, with `[lead] component` in {} or --lead {}",
            team.name(),
            record.component.display(),
            plan.manifest_file.display(),
            record.component.display()
        ),
        (None, true) => anyhow::bail!(
            "team {:?} was not led by a component of this machine's teamhost (it has no lead's record here): resume it without --lead and without [lead]",
            team.name()
        ),
        _ => Ok(()),
    }
}

/// How long a settled team must stay unchanged before the lead is told
/// that nothing is left to wake it (and, the second time, before the run
/// ends): `Host::wait_idle` can return in the instant between a wake-up and
/// a turn; this outlasts that window.
const SETTLE: Duration = Duration::from_millis(500);

/// What the lead is told when nothing is left to wake it.
pub const NOTHING_TO_WAKE: &str = "Nothing is left to wake you: no teammate is working \
and no message is waiting for anyone. Act now: spawn a teammate from the catalogue, create \
or assign tasks, message a teammate, answer what waits for you, or delete the team if the \
goal is met. If this turn ends the same way, the run ends here.";

/// Waits until the lead's runner ends, nothing is left to wake it twice
/// (see the module docs), `timeout` passes or `stop` resolves.
pub(super) async fn wait(
    host: &Host,
    team: &Team,
    timeout: Duration,
    stop: impl Future<Output = &'static str>,
) -> Ended {
    tokio::select! {
        end = host.wait_lead(team.name()) => match end {
            None => Ended::HostError("the lead is not running".into()),
            Some(TeammateState::Completed) => Ended::Completed,
            Some(TeammateState::Failed(why)) => {
                Ended::LeadFailed(format!("the lead failed: {}", printable_line(&why)))
            }
            Some(other) => Ended::LeadStopped(format!("the lead ended {other:?}")),
        },
        why = nothing_to_wake(host, team) => Ended::Stuck(why),
        how = stop => Ended::Interrupted(how),
        _ = tokio::time::sleep(timeout) => Ended::TimedOut(timeout.as_secs()),
    }
}

/// Resolves, with why, once the team settled with nothing to wake the lead
/// and the turn it was then given ended the same way; never while the
/// team's files cannot be read (the timeout bounds that).
async fn nothing_to_wake(host: &Host, team: &Team) -> String {
    // What the lead's telling is compared against: `None` until it is told.
    let mut told: Option<Vec<String>> = None;
    loop {
        let Some(state) = settled(host, team).await else {
            tokio::time::sleep(SETTLE).await;
            continue;
        };
        tokio::time::sleep(SETTLE).await;
        if settled(host, team).await.as_ref() != Some(&state) {
            continue;
        }
        match &told {
            Some(before) if *before == state => {
                let owed = owed(host, team).await;
                let waiting = match owed.is_empty() {
                    true => "no message or request waiting".to_string(),
                    false => format!("requests waiting for its answer: {}", owed.join("; ")),
                };
                return format!(
                    "nothing was left to wake the lead: every teammate idle, {waiting}; told \
                     so, its next turn changed nothing ({})",
                    describe(host, team).await
                );
            }
            _ => {}
        }
        let text = match owed(host, team).await {
            owed if owed.is_empty() => NOTHING_TO_WAKE.to_string(),
            owed => format!(
                "{NOTHING_TO_WAKE} These requests wait for your answer (leading.pending, \
                 answer-permission, answer-plan): {}.",
                owed.join("; ")
            ),
        };
        let t = team.clone();
        let notice = OutgoingMessage::new(HOST_SENDER, text);
        let lead = crate::store::config::LEAD_NAME;
        let sent =
            crate::blocking::try_run("telling the lead", move || t.deliver(lead, notice)).await;
        match sent {
            Ok(_) => told = Some(state),
            Err(e) => {
                tracing::warn!(error = %e, "the lead could not be told that nothing is left to wake it")
            }
        }
    }
}

/// The team's state when it is settled with no request waiting for the
/// person or the policy (`None` otherwise): what must not change between
/// two looks for the lead to be left with nothing to wake it. The lead's
/// own turn count is left out, so the turn it is given to act is not
/// counted as a change; the requests waiting for the lead are in.
async fn settled(host: &Host, team: &Team) -> Option<Vec<String>> {
    host.wait_idle(team.name()).await.ok()?;
    let (t, home) = (team.clone(), host.home().clone());
    let read = crate::blocking::try_run("reading the team", move || {
        Ok((t.list_tasks()?, waiting_for_lead(&home, &t)?))
    });
    let (tasks, owed) = read.await.ok()?;
    // A request for the person or the policy: they may still answer it.
    let owed = owed?;
    let lead = crate::store::config::LEAD_NAME;
    Some(
        tasks
            .iter()
            .map(|t| format!("#{} {} {:?}", t.id, t.status.as_str(), t.owner))
            .chain(owed.iter().map(|o| format!("waits {o}")))
            .chain(
                host.teammates(team.name())
                    .iter()
                    .map(|m| match m.name == lead {
                        true => format!("{} {}", m.name, m.state.as_str()),
                        false => format!("{} {} {}", m.name, m.state.as_str(), m.turns),
                    }),
            )
            .collect(),
    )
}

/// The requests waiting for the lead's own answer, one line each
/// (`perm-… from tester: Bash`); `None` when a request waits for the
/// person or the policy. Reads the team's files: call it on the blocking
/// pool.
fn waiting_for_lead(home: &crate::home::Home, team: &Team) -> crate::Result<Option<Vec<String>>> {
    let lead = crate::store::config::LEAD_NAME;
    let routes = crate::embed::routes_of(home, team.name());
    let mut owed = Vec::new();
    for r in crate::approvals::pending(team)? {
        let from = crate::embed::requester(team, r.from());
        if routes.decider_for(&r, lead, &from) != crate::approvals::Decider::Lead {
            return Ok(None);
        }
        owed.push(match &r {
            crate::approvals::Request::Permission(p) => {
                format!(
                    "{} from {}: {}",
                    r.id(),
                    r.from(),
                    printable_line(&p.tool_name)
                )
            }
            crate::approvals::Request::Plan(_) => format!("{} from {}: a plan", r.id(), r.from()),
        });
    }
    Ok(Some(owed))
}

/// The requests waiting for the lead's own answer ([`waiting_for_lead`]).
async fn owed(host: &Host, team: &Team) -> Vec<String> {
    let (t, home) = (team.clone(), host.home().clone());
    crate::blocking::try_run("reading the requests", move || waiting_for_lead(&home, &t))
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The teammates and the open tasks, for the reason a stuck run gives.
async fn describe(host: &Host, team: &Team) -> String {
    let mates: Vec<String> = host
        .teammates(team.name())
        .iter()
        .filter(|m| m.name != crate::store::config::LEAD_NAME)
        .map(|m| format!("{} {}", m.name, m.state.as_str()))
        .collect();
    let t = team.clone();
    let open = crate::blocking::try_run("reading the tasks", move || t.list_tasks())
        .await
        .map(|ts| {
            ts.iter()
                .filter(|t| t.status != crate::store::TaskStatus::Completed)
                .count()
        })
        .unwrap_or(0);
    match mates.is_empty() {
        true => format!("it spawned no teammate; {open} task(s) not completed"),
        false => format!(
            "teammates: {}; {open} task(s) not completed",
            mates.join(", ")
        ),
    }
}

/// Stops what the lead left running, if its team is still there (a lead
/// that deleted its team left nothing): the lead itself, then its
/// teammates through the shutdown protocol.
pub(super) async fn shut_down(
    host: &Host,
    team: &Team,
    ended: &Ended,
    shutdown_timeout: Duration,
) -> anyhow::Result<ShutdownReport> {
    if !team.try_exists().unwrap_or(false) {
        return Ok(ShutdownReport::default());
    }
    let lead_running = host
        .teammates(team.name())
        .iter()
        .any(|t| t.name == LEAD_NAME && !t.state.is_finished());
    if lead_running {
        host.kill(team.name(), LEAD_NAME).await?;
    }
    let reason = ended.error().unwrap_or_else(|| "the run is over".into());
    Ok(host
        .shutdown_team(team.name(), &reason, shutdown_timeout)
        .await?)
}
