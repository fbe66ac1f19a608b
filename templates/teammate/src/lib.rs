//! A teamhost teammate, made from teamhost's `templates/teammate`.
//!
//! For every task it gets, it writes `out/task-N.md` in its directory (the
//! task's subject and description), marks the task completed and tells the
//! lead. Replace [`work_on`] with your teammate's real work.
//!
//! | turn kind          | what it does                                            |
//! |--------------------|---------------------------------------------------------|
//! | `task-claimed`     | the host claimed a task for it while it was idle: does it |
//! | `initial`, `message` | does a task the lead assigned (`task_assignment`); ignores other messages |
//! | `shutdown-request` | approves                                                |
//!
//! Build: `cargo build --release` (the target is set in `.cargo/config.toml`).
//! Test: `teamhost run team.toml` exits 0 only when every task is completed.

wit_bindgen::generate!({
    // teamhost's WIT package (copied here by `teamhost new`), with the
    // WASI packages it includes in wit/deps.
    path: "wit",
    world: "teamhost:agent/teammate",
    generate_all,
});

use exports::teamhost::agent::handler::{Guest, TaskReport, Turn, TurnKind, TurnOutcome};
use teamhost::agent::protocol::{CompletedStatus, ProtocolMessage, ShutdownResponse};
use teamhost::agent::tasks::{self, Task, TaskStatus, TaskUpdate};
use teamhost::agent::{messaging, team, tools};

struct Teammate;

impl Guest for Teammate {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        let task = match turn.kind {
            TurnKind::ShutdownRequest(request) => {
                messaging::respond_shutdown(&request.request_id, &ShutdownResponse::Approve)
                    .map_err(|e| format!("cannot approve the shutdown: {e:?}"))?;
                return Ok(TurnOutcome { task: None });
            }
            TurnKind::TaskClaimed(task) => task,
            TurnKind::Initial | TurnKind::Message => {
                let assigned = turn.messages.iter().find_map(|m| match &m.protocol {
                    Some(ProtocolMessage::TaskAssignment(a)) => Some(a.task_id.clone()),
                    _ => None,
                });
                let Some(id) = assigned else {
                    // The spawn prompt or a chat message: nothing to do.
                    return Ok(TurnOutcome { task: None });
                };
                // Claiming a task assigned to us sets it in progress.
                tasks::claim(&id, false).map_err(|e| format!("cannot take task #{id}: {e:?}"))?
            }
        };
        let report = match work_on(&task) {
            Ok(done) => {
                let changes = TaskUpdate {
                    status: Some(TaskStatus::Completed),
                    metadata: Some(format!(r#"{{"file":"{done}"}}"#)),
                    subject: None,
                    description: None,
                    active_form: None,
                    owner: None,
                };
                tasks::update(&task.id, &changes)
                    .map_err(|e| format!("cannot complete task #{}: {e:?}", task.id))?;
                tell_lead(&format!("Task #{} done: wrote {done}", task.id))?;
                report(&task, CompletedStatus::Resolved, None)
            }
            Err(why) => {
                // The task stays in progress, ours; the lead decides what next.
                tell_lead(&format!("Task #{} failed: {why}", task.id))?;
                report(&task, CompletedStatus::Failed, Some(why))
            }
        };
        Ok(TurnOutcome { task: Some(report) })
    }
}

/// The work itself: write the task down. Returns the file written.
///
/// `tools::write` is the host's Write tool: the sandbox checks it against the
/// teammate's permission mode and tool rules, and may ask the lead first.
/// (`std::fs` works too, through WASI, but only where the mode makes the
/// directory writable, and it never asks.)
fn work_on(task: &Task) -> Result<String, String> {
    let path = format!("out/task-{}.md", task.id);
    let text = format!("# {}\n\n{}\n", task.subject, task.description.trim());
    tools::write(&path, &text).map_err(|e| format!("cannot write {path}: {e:?}"))?;
    Ok(path)
}

fn report(task: &Task, status: CompletedStatus, reason: Option<String>) -> TaskReport {
    TaskReport {
        task_id: task.id.clone(),
        status,
        reason,
    }
}

/// Send the team's lead a message.
fn tell_lead(text: &str) -> Result<(), String> {
    let lead = team::lead();
    messaging::send(&lead, text, Some(text))
        .map(|_| ())
        .map_err(|e| format!("cannot message {lead}: {e:?}"))
}

export!(Teammate);
