//! The work phase: [`wait_for_work`] waits until every task is completed,
//! the team can make no more progress, every teammate has stopped, the
//! timeout passes or the caller's stop future resolves, and answers an
//! [`Ended`] saying which.

use std::future::Future;
use std::time::Duration;

use super::ended::{describe_state, Ended};
use crate::embed::{Host, TeammateInfo};
use crate::store::{Task, TaskStatus, Team};

/// How long an idle team with open tasks must stay unchanged to count as
/// stuck. `Host::wait_idle` can return in the instant between a teammate
/// picking up work and its turn starting; this outlasts that window.
const SETTLE: Duration = Duration::from_millis(500);

/// Waits until the work is done, the team can make no more progress,
/// `timeout` passes or `stop` resolves (its words become
/// [`Ended::Interrupted`]).
/// `elsewhere`: some of the team's teammates run on another host (a resume
/// left them to the host that took them over); their work is waited for in
/// the task list even when none runs here.
pub(super) async fn wait_for_work(
    host: &Host,
    team: &Team,
    elsewhere: bool,
    timeout: Duration,
    stop: impl Future<Output = &'static str>,
) -> anyhow::Result<Ended> {
    let work = async {
        loop {
            host.wait_idle(team.name()).await?;
            let tasks = tasks_of(team).await?;
            if tasks.iter().all(|t| t.status == TaskStatus::Completed) {
                return Ok(Ended::Completed);
            }
            let mates = host.teammates(team.name());
            if elsewhere {
                // Their progress shows in the task list only, and their
                // host decides when they are stuck: read again (the
                // timeout bounds the wait).
                tokio::time::sleep(SETTLE).await;
                continue;
            }
            if mates.iter().all(|t| t.state.is_finished()) {
                let states: Vec<String> = mates.iter().map(describe_state).collect();
                return Ok(Ended::AllStopped(format!(
                    "every teammate has stopped ({}) with {} task(s) not completed",
                    states.join("; "),
                    open_count(&tasks)
                )));
            }
            let before = progress(&tasks, &mates);
            tokio::time::sleep(SETTLE).await;
            host.wait_idle(team.name()).await?;
            let tasks = tasks_of(team).await?;
            if progress(&tasks, &host.teammates(team.name())) == before {
                return Ok(Ended::Stuck(format!(
                    "every teammate is idle but {} task(s) are not completed and nobody will take them: {}; the teammates' messages above say why",
                    open_count(&tasks),
                    describe_open(&tasks)
                )));
            }
        }
    };
    tokio::select! {
        r = tokio::time::timeout(timeout, work) => match r {
            Ok(r) => r,
            Err(_) => Ok(Ended::TimedOut(timeout.as_secs())),
        },
        how = stop => Ok(Ended::Interrupted(how)),
    }
}

/// `team`'s tasks, read on the blocking pool: a store that does not answer
/// holds this future, never the runtime thread the run's stop needs.
async fn tasks_of(team: &Team) -> anyhow::Result<Vec<Task>> {
    let t = team.clone();
    Ok(crate::store::blocking("reading the tasks", move || t.list_tasks()).await?)
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
