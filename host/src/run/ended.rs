//! Why a run's work phase ended ([`Ended`]), and the problems that make a
//! finished run a failed one ([`problems`]): the one rule for "did this run
//! succeed", used by the library's [`super::Finished`] and by every
//! `teamhost run` summary.

use std::time::Duration;

use crate::embed::{ShutdownReport, TeammateInfo, TeammateState};
use crate::protocol::describe::reason_line;
use crate::store::{Task, TaskStatus};

/// How the work phase of a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Every task is completed and every teammate is idle; in a led run,
    /// the lead completed (it deleted its team).
    Completed,
    /// A joined or adopting run: every teammate of this host approved the
    /// lead's shutdown request.
    ShutDown,
    /// The work was not done within the plan's timeout (seconds).
    TimedOut(u64),
    /// Stopped from outside: the words of the stop future (`"Ctrl-C"`,
    /// `"SIGTERM"`, `"q in the live view"`, or an embedder's own).
    Interrupted(&'static str),
    /// Every teammate is idle, tasks are open, and nothing changed while
    /// the run watched: why, in words.
    Stuck(String),
    /// Every teammate has stopped with tasks open: who ended how.
    AllStopped(String),
    /// A teammate could not be spawned (or brought back): the error.
    SpawnFailed(String),
    /// The host failed while the run waited (its store, its lease): the
    /// error.
    HostError(String),
    /// A led run: the lead component's runner failed (why, in words).
    LeadFailed(String),
    /// A led run: the lead component ended without completing (killed).
    LeadStopped(String),
}

impl Ended {
    /// A stable name for machines (`teamhost run --json`'s `outcome`).
    pub fn name(&self) -> &'static str {
        match self {
            Ended::Completed => "completed",
            Ended::ShutDown => "shut-down",
            Ended::TimedOut(_) => "timed-out",
            Ended::Interrupted(_) => "interrupted",
            Ended::Stuck(_) => "stuck",
            Ended::AllStopped(_) => "teammates-stopped",
            Ended::SpawnFailed(_) => "spawn-failed",
            Ended::HostError(_) => "error",
            Ended::LeadFailed(_) => "lead-failed",
            Ended::LeadStopped(_) => "lead-stopped",
        }
    }

    /// The exit status of a process that stops without its store: 128 +
    /// the signal's number when a signal (`"Ctrl-C…"`, `"SIGTERM"`) stopped
    /// it, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            Ended::Interrupted(how) if how.starts_with("Ctrl-C") => 128 + libc::SIGINT,
            Ended::Interrupted("SIGTERM") => 128 + libc::SIGTERM,
            _ => 1,
        }
    }

    /// What went wrong, in words; `None` for a run that ended as it should.
    pub fn error(&self) -> Option<String> {
        match self {
            Ended::Completed | Ended::ShutDown => None,
            Ended::TimedOut(s) => Some(format!(
                "the work was not done after {s}s; raise --timeout or read the guest logs"
            )),
            Ended::Interrupted(how) => Some(format!("interrupted ({how})")),
            Ended::Stuck(why)
            | Ended::AllStopped(why)
            | Ended::SpawnFailed(why)
            | Ended::HostError(why)
            | Ended::LeadFailed(why)
            | Ended::LeadStopped(why) => Some(why.clone()),
        }
    }

    /// The reason the teammates are told when they are asked to shut down
    /// (and a wait for the lead is denied with).
    pub fn reason(&self) -> String {
        match self {
            Ended::Completed => "work complete".to_string(),
            Ended::Interrupted(how) => format!("the run was interrupted ({how})"),
            Ended::TimedOut(s) => format!("the run's --timeout of {s}s passed"),
            _ => "the run is stopping".to_string(),
        }
    }
}

/// Why a finished run failed, one sentence each, in order: how the work
/// ended, tasks left open although the work "completed", teammates that
/// failed (unless [`Ended::AllStopped`] named them already), and teammates
/// killed because they did not approve the shutdown within
/// `shutdown_timeout`. Empty for a run that went well.
pub fn problems(
    ended: &Ended,
    tasks: &[Task],
    teammates: &[TeammateInfo],
    shutdown: &ShutdownReport,
    shutdown_timeout: Duration,
) -> Vec<String> {
    let mut problems: Vec<String> = ended.error().into_iter().collect();
    let open = tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Completed)
        .count();
    if open > 0 && *ended == Ended::Completed {
        problems.push(format!("{open} task(s) not completed"));
    }
    if !matches!(ended, Ended::AllStopped(_)) {
        for t in teammates {
            if let TeammateState::Failed(why) = &t.state {
                problems.push(format!("teammate {} failed: {}", t.name, reason_line(why)));
            }
        }
    }
    if !shutdown.killed.is_empty() {
        problems.push(format!(
            "{} did not approve the shutdown within {}s and {} killed",
            shutdown.killed.join(", "),
            shutdown_timeout.as_secs(),
            if shutdown.killed.len() == 1 {
                "was"
            } else {
                "were"
            }
        ));
    }
    problems
}

/// `NAME STATE`, with the reason of a failure.
pub fn describe_state(t: &TeammateInfo) -> String {
    match &t.state {
        TeammateState::Failed(why) => format!("{} failed: {}", t.name, reason_line(why)),
        s => format!("{} {}", t.name, s.as_str()),
    }
}
