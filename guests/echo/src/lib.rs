//! `echo`: the smallest useful teammate. It answers every plain message with
//! the same text, to its sender.
//!
//! | turn kind          | what echo does                                              |
//! |--------------------|-------------------------------------------------------------|
//! | `initial`          | sends the spawn prompt back to whoever wrote it             |
//! | `message`          | sends each plain message back to its sender; ignores protocol messages (task assignments, plan answers, …) |
//! | `shutdown-request` | approves                                                    |
//! | `task-claimed`     | does no work: reports the task as failed so the lead reassigns it |
//!
//! A sender that is not a team member (for example `user`, a person typing
//! into the host) cannot be answered; echo logs that to stderr and goes on.
//!
//! Build: `cargo build --release` in `guests/` (the target is set in
//! `guests/.cargo/config.toml`).

wit_bindgen::generate!({
    // The teamhost WIT package, with the WASI packages it includes in `deps/`.
    path: "../../wit",
    world: "teamhost:agent/teammate",
    // Also generate bindings for the `wasi:*` interfaces the world includes.
    // Rust's standard library already uses them for files, clocks and stdio,
    // so echo does not call them directly.
    generate_all,
});

use exports::teamhost::agent::handler::{Guest, TaskReport, Turn, TurnKind, TurnOutcome};
use teamhost::agent::messaging;
use teamhost::agent::protocol::{CompletedStatus, ShutdownResponse};
use teamhost::agent::types::Error;

struct Echo;

impl Guest for Echo {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        match turn.kind {
            TurnKind::Initial | TurnKind::Message => {
                if turn.messages.is_empty() {
                    // A turn with only a prompt (a spawn without an inbox message).
                    reply(&turn.from, &turn.prompt, None)?;
                }
                for message in &turn.messages {
                    // Protocol messages are for the host and the lead, not
                    // conversation: echoing them would confuse both.
                    if message.protocol.is_some() {
                        continue;
                    }
                    reply(&message.from, &message.text, message.summary.as_deref())?;
                }
                Ok(TurnOutcome { task: None })
            }
            TurnKind::ShutdownRequest(request) => {
                eprintln!("echo: {} asked me to shut down; approving", request.from);
                messaging::respond_shutdown(&request.request_id, &ShutdownResponse::Approve)
                    .map_err(|e| format!("cannot approve shutdown: {}", describe(&e)))?;
                Ok(TurnOutcome { task: None })
            }
            TurnKind::TaskClaimed(task) => Ok(TurnOutcome {
                task: Some(TaskReport {
                    task_id: task.id,
                    status: CompletedStatus::Failed,
                    reason: Some("echo only answers messages; it does no task work".into()),
                }),
            }),
        }
    }
}

/// Send `text` back to `to`. A sender that is not a member is logged and
/// skipped; any other failure fails the turn.
fn reply(to: &str, text: &str, summary: Option<&str>) -> Result<(), String> {
    let summary = match summary {
        Some(s) => format!("echo: {s}"),
        None => "echo".to_string(),
    };
    match messaging::send(to, text, Some(&summary)) {
        Ok(delivery) => {
            eprintln!("echo: {}", delivery.message);
            Ok(())
        }
        Err(Error::NotFound(why)) | Err(Error::Invalid(why)) => {
            eprintln!("echo: cannot answer {to}: {why}");
            Ok(())
        }
        Err(e) => Err(format!("cannot answer {to}: {}", describe(&e))),
    }
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

export!(Echo);
