//! The work phase and how it ends: [`wait_for_work`] waits until every task
//! is completed, the team can make no more progress, every teammate has
//! stopped, the timeout passes or the user stops the run (Ctrl-C, SIGTERM,
//! `q` in the live view), and answers an [`Outcome`] saying which.

use std::time::Duration;

use super::report::reason_line;
use super::stop::Signals;
use crate::embed::{Host, TeammateInfo, TeammateState};
use crate::store::{Task, TaskStatus, Team};

/// How long an idle team with open tasks must stay unchanged to count as
/// stuck. `Host::wait_idle` can return in the instant between a teammate
/// picking up work and its turn starting; this outlasts that window.
const SETTLE: Duration = Duration::from_millis(500);

/// How the work phase ended.
pub(super) enum Outcome {
    Completed,
    /// `run --join`: every teammate of this process approved the lead's
    /// shutdown request.
    ShutDown,
    TimedOut(u64),
    /// Stopped by the person: what they did ("Ctrl-C", "SIGTERM", "q in
    /// the live view", "Ctrl-C in the live view").
    Interrupted(&'static str),
    Stuck(String),
    AllStopped(String),
    SpawnFailed(String),
    HostError(String),
}

impl Outcome {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::ShutDown => "shut-down",
            Outcome::TimedOut(_) => "timed-out",
            Outcome::Interrupted(_) => "interrupted",
            Outcome::Stuck(_) => "stuck",
            Outcome::AllStopped(_) => "teammates-stopped",
            Outcome::SpawnFailed(_) => "spawn-failed",
            Outcome::HostError(_) => "error",
        }
    }

    /// The exit status of a run that stops without its store: 128 + the
    /// signal's number when a signal stopped it, else 1.
    pub(super) fn exit_code(&self) -> i32 {
        match self {
            Outcome::Interrupted(how) if how.starts_with("Ctrl-C") => 128 + libc::SIGINT,
            Outcome::Interrupted("SIGTERM") => 128 + libc::SIGTERM,
            _ => 1,
        }
    }

    pub(super) fn error(&self) -> Option<String> {
        match self {
            Outcome::Completed | Outcome::ShutDown => None,
            Outcome::TimedOut(s) => Some(format!(
                "the work was not done after {s}s; raise --timeout or read the guest logs"
            )),
            Outcome::Interrupted(how) => Some(format!("interrupted ({how})")),
            Outcome::Stuck(why)
            | Outcome::AllStopped(why)
            | Outcome::SpawnFailed(why)
            | Outcome::HostError(why) => Some(why.clone()),
        }
    }
}

/// Waits until the work is done, the team can make no more progress, the
/// timeout passes, a signal stops the run or `quit` resolves (the person
/// quit the live view).
/// `elsewhere`: some of the team's teammates run on another host (a resume
/// left them to the host that took them over); their work is waited for in
/// the task list even when none runs here.
pub(super) async fn wait_for_work(
    host: &Host,
    team: &Team,
    elsewhere: bool,
    timeout: u64,
    signals: &mut Signals,
    quit: impl std::future::Future<Output = &'static str>,
) -> anyhow::Result<Outcome> {
    signals.watchdog().set_deadline(Some(
        std::time::Instant::now() + Duration::from_secs(timeout),
    ));
    let work = async {
        loop {
            host.wait_idle(team.name()).await?;
            let tasks = tasks_of(team).await?;
            if tasks.iter().all(|t| t.status == TaskStatus::Completed) {
                return Ok(Outcome::Completed);
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
                return Ok(Outcome::AllStopped(format!(
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
                return Ok(Outcome::Stuck(format!(
                    "every teammate is idle but {} task(s) are not completed and nobody will take them: {}; the teammates' messages above say why",
                    open_count(&tasks),
                    describe_open(&tasks)
                )));
            }
        }
    };
    tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(timeout), work) => match r {
            Ok(r) => r,
            Err(_) => Ok(Outcome::TimedOut(timeout)),
        },
        sig = signals.next() => Ok(Outcome::Interrupted(sig.name())),
        how = quit => Ok(Outcome::Interrupted(how)),
    }
}

/// `team`'s tasks, read on the blocking pool: a store that does not answer
/// holds this future, never the runtime thread the run's stop needs.
async fn tasks_of(team: &Team) -> anyhow::Result<Vec<Task>> {
    let t = team.clone();
    Ok(tokio::task::spawn_blocking(move || t.list_tasks())
        .await
        .map_err(|e| anyhow::anyhow!("reading the tasks panicked: {e}"))??)
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

/// `NAME STATE`, with the reason of a failure.
pub(super) fn describe_state(t: &TeammateInfo) -> String {
    match &t.state {
        TeammateState::Failed(why) => format!("{} failed: {}", t.name, reason_line(why)),
        s => format!("{} {}", t.name, s.as_str()),
    }
}
