//! `worker`: a teammate that does real work on files. It claims tasks, counts
//! the words of the files each task names, writes a report into its directory,
//! marks the task completed and tells the lead.
//!
//! # The tasks it understands
//!
//! The task's description names the files as Markdown bullets (`- path` or
//! `* path`), paths relative to the worker's directory. Other lines are prose
//! and are ignored:
//!
//! ```text
//! Count the words of the chapters.
//! - chapters/one.txt
//! - chapters/two.txt
//! ```
//!
//! For that task (say `#3`) it writes `reports/task-3.md` (a table of files and
//! word counts with a total), sets the task `completed` with metadata
//! `{"report":"reports/task-3.md","words":N}`, and sends the lead
//! `Task #3 done: N words in 2 file(s); report in reports/task-3.md`.
//!
//! A task that names no file, a file it cannot read, or a report it cannot
//! write (a read-only directory, say) fails: the task stays
//! `in-progress` with the worker as owner, the lead gets a message saying why,
//! and the turn reports the task as failed (the idle notification carries the
//! reason). The worker then stops claiming until the lead sorts it out.
//!
//! # Turns
//!
//! | turn kind          | what the worker does                                       |
//! |--------------------|------------------------------------------------------------|
//! | `task-claimed`     | does that task                                               |
//! | `initial`, `message` | does the tasks assigned to it by `task_assignment` messages |
//! | `shutdown-request` | approves (it never stops mid-task: a task is done within one turn) |
//!
//! It never claims on its own: one task per turn, and when it goes idle the
//! host's auto-claim (the reference's idle loop: lowest id, pending, unowned,
//! unblocked) starts its next turn with the next task.

wit_bindgen::generate!({
    path: "../../wit",
    world: "teamhost:agent/teammate",
    generate_all,
});

use std::fs;

use exports::teamhost::agent::handler::{Guest, TaskReport, Turn, TurnKind, TurnOutcome};
use teamhost::agent::protocol::{CompletedStatus, ProtocolMessage, ShutdownResponse};
use teamhost::agent::tasks::{self, ClaimError, Task, TaskStatus, TaskUpdate};
use teamhost::agent::types::Error;
use teamhost::agent::{messaging, team};

/// Where reports go, relative to the worker's directory.
const REPORT_DIR: &str = "reports";

struct Worker;

impl Guest for Worker {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        // Tasks handed to us this turn, in the order they came.
        let mut assigned: Vec<Task> = Vec::new();
        match turn.kind {
            TurnKind::ShutdownRequest(request) => {
                eprintln!("worker: {} asked me to shut down; approving", request.from);
                messaging::respond_shutdown(&request.request_id, &ShutdownResponse::Approve)
                    .map_err(|e| format!("cannot approve shutdown: {}", describe(&e)))?;
                return Ok(TurnOutcome { task: None });
            }
            TurnKind::TaskClaimed(task) => assigned.push(task),
            TurnKind::Initial | TurnKind::Message => {
                for message in &turn.messages {
                    if let Some(ProtocolMessage::TaskAssignment(a)) = &message.protocol {
                        // Claiming a task we own marks it in-progress; a task
                        // reassigned since then fails with `already-claimed`.
                        match tasks::claim(&a.task_id, false) {
                            Ok(task) => assigned.push(task),
                            Err(ClaimError::Other(e)) => {
                                return Err(format!(
                                    "cannot take task #{}: {}",
                                    a.task_id,
                                    describe(&e)
                                ))
                            }
                            Err(why) => eprintln!("worker: skipping task #{}: {why:?}", a.task_id),
                        }
                    }
                }
            }
        }

        // Only the tasks handed over this turn: when the worker goes idle, the
        // host's auto-claim (the reference's idle loop) hands it the next one.
        let lead = lead_name();
        let mut last: Option<TaskReport> = None;
        for task in assigned {
            let report = do_task(task, &lead)?;
            let failed = report.status != CompletedStatus::Resolved;
            last = Some(report);
            if failed {
                break;
            }
        }
        Ok(TurnOutcome { task: last })
    }
}

/// Count the words of the files `task` names, write the report, complete the
/// task and tell the lead. A failure of the work itself is reported, not
/// returned: only a failing host call fails the turn.
fn do_task(task: Task, lead: &str) -> Result<TaskReport, String> {
    eprintln!("worker: working on task #{}: {}", task.id, task.subject);
    let (path, files, total) = match count_and_report(&task) {
        Ok(done) => done,
        Err(reason) => {
            tell(
                lead,
                &format!("Task #{} failed: {reason}", task.id),
                &format!("Task #{} failed", task.id),
            )?;
            return Ok(TaskReport {
                task_id: task.id,
                status: CompletedStatus::Failed,
                reason: Some(reason),
            });
        }
    };

    let changes = TaskUpdate {
        subject: None,
        description: None,
        active_form: None,
        status: Some(TaskStatus::Completed),
        owner: None,
        metadata: Some(format!("{{\"report\":\"{path}\",\"words\":{total}}}")),
    };
    tasks::update(&task.id, &changes)
        .map_err(|e| format!("cannot complete task #{}: {}", task.id, describe(&e)))?;

    tell(
        lead,
        &format!(
            "Task #{} done: {total} words in {files} file(s); report in {path}",
            task.id
        ),
        &format!("Task #{} done: {total} words", task.id),
    )?;
    Ok(TaskReport {
        task_id: task.id,
        status: CompletedStatus::Resolved,
        reason: None,
    })
}

/// The work itself, on files only: count the words of the files the task
/// names and write the report. Returns (report path, number of files, total
/// words).
fn count_and_report(task: &Task) -> Result<(String, usize, usize), String> {
    let mut counts = Vec::new();
    for file in files_named_in(&task.description)? {
        let n = count_words(&file)?;
        counts.push((file, n));
    }
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let path = format!("{REPORT_DIR}/task-{}.md", task.id);
    let mut report = format!(
        "# Task #{}: {}\n\n| file | words |\n|---|---:|\n",
        task.id, task.subject
    );
    for (file, n) in &counts {
        report += &format!("| {file} | {n} |\n");
    }
    report += &format!("| **total** | **{total}** |\n");
    fs::create_dir_all(REPORT_DIR)
        .and_then(|()| fs::write(&path, report))
        .map_err(|e| format!("cannot write {path}: {e}"))?;
    Ok((path, counts.len(), total))
}

/// The paths a description names as Markdown bullets.
fn files_named_in(description: &str) -> Result<Vec<String>, String> {
    let files: Vec<String> = description
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            line.strip_prefix("- ").or_else(|| line.strip_prefix("* "))
        })
        .map(|path| path.trim().to_string())
        .filter(|path| !path.is_empty())
        .collect();
    if files.is_empty() {
        return Err("the description names no files (list them as `- path` lines)".into());
    }
    Ok(files)
}

fn count_words(path: &str) -> Result<usize, String> {
    let bytes = fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).split_whitespace().count())
}

/// The lead's name (the host knows it: no roster read, whatever the
/// team's size).
fn lead_name() -> String {
    team::lead()
}

fn tell(to: &str, text: &str, summary: &str) -> Result<(), String> {
    messaging::send(to, text, Some(summary))
        .map(|_| ())
        .map_err(|e| format!("cannot message {to}: {}", describe(&e)))
}

fn describe(error: &Error) -> String {
    match error {
        Error::Denied(s) => format!("denied: {s}"),
        Error::NotFound(s) => format!("not found: {s}"),
        Error::Conflict(s) => format!("conflict: {s}"),
        Error::Invalid(s) => format!("invalid: {s}"),
        Error::Unavailable(s) => format!("unavailable: {s}"),
    }
}

export!(Worker);
