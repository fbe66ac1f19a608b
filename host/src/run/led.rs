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
//! | the stop future resolved, or the timeout passed | `Interrupted`, `TimedOut` |
//!
//! Decisions: a led run needs a goal (the plan's, else `[lead] goal`) and a
//! `[[catalogue]]` (a lead without one could spawn nothing), and has no
//! `[[teammate]]` entries: every teammate is the lead's to spawn. It
//! succeeds when its lead completes: the lead judges its teammates' work.

use std::future::Future;
use std::time::Duration;

use anyhow::Context;

use super::ended::Ended;
use super::plan::{Leader, RunPlan};
use crate::embed::{Host, LeadSpec, ShutdownReport, TeammateState};
use crate::manifest::LeadTable;
use crate::protocol::describe::printable_line;
use crate::store::config::LEAD_NAME;
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
        .filter(|g| !g.trim().is_empty())
        .context(
            "a team led by a component needs a goal: pass --goal \"TEXT\" or set `goal` in [lead]",
        )?;
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
    Ok(spec)
}

/// Waits until the lead's runner ends, `timeout` passes or `stop` resolves.
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
        how = stop => Ended::Interrupted(how),
        _ = tokio::time::sleep(timeout) => Ended::TimedOut(timeout.as_secs()),
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
