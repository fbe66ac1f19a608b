//! `reviewer`: a teammate that asks a peer by direct message and waits for the
//! answer, across turns.
//!
//! No call blocks to wait for a message. The reviewer sends its question,
//! records what it is waiting for in memory, and ends the turn. The host keeps
//! the same instance alive, so when the peer's answer wakes it in a later turn
//! the record is still there. This is the pattern for any teammate that needs
//! an answer from someone else.
//!
//! # What it does
//!
//! A request is a plain message (from the lead or anyone), the spawn prompt, a
//! task assigned to it, or a task the host claimed for it. For each request,
//! one at a time:
//!
//! 1. pick a peer: the member named by a leading `@name ` in the request, else
//!    the first member of the roster that is neither the reviewer nor the lead;
//! 2. send the peer `Please review:` and the request, and end the turn;
//! 3. when a plain message from that peer arrives, relay it to whoever asked
//!    (`Review from PEER: ANSWER`); for a task, also mark it completed with
//!    metadata `{"reviewed-by":"PEER"}` and report it resolved.
//!
//! Requests that arrive while it waits are queued and asked in order.
//!
//! | turn kind          | what the reviewer does                                   |
//! |--------------------|----------------------------------------------------------|
//! | `initial`          | takes the spawn prompt as its first request              |
//! | `message`          | relays answers from the peer it waits for; queues other messages and task assignments as requests |
//! | `task-claimed`     | queues the task as a request                             |
//! | `shutdown-request` | rejects while it waits for an answer (saying for whom); approves otherwise |

wit_bindgen::generate!({
    path: "../../wit",
    world: "teamhost:agent/teammate",
    generate_all,
});

use std::collections::VecDeque;
use std::sync::Mutex;

use exports::teamhost::agent::handler::{Guest, TaskReport, Turn, TurnKind, TurnOutcome};
use teamhost::agent::mailbox::Message;
use teamhost::agent::protocol::{CompletedStatus, ProtocolMessage, ShutdownResponse};
use teamhost::agent::tasks::{self, TaskStatus, TaskUpdate};
use teamhost::agent::types::Error;
use teamhost::agent::{messaging, team};

/// Something to get reviewed.
struct Request {
    /// The text to send the peer.
    question: String,
    /// Who gets the answer.
    asked_by: String,
    /// The task this request is, if it is one.
    task: Option<String>,
}

/// A request sent to a peer, waiting for the answer.
struct Waiting {
    peer: String,
    request: Request,
}

/// What the reviewer remembers between turns. The host keeps one instance per
/// teammate alive, so this lives as long as the teammate does.
struct State {
    waiting: Option<Waiting>,
    queue: VecDeque<Request>,
}

static STATE: Mutex<State> = Mutex::new(State {
    waiting: None,
    queue: VecDeque::new(),
});

struct Reviewer;

impl Guest for Reviewer {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        // A panic traps and ends the teammate, so a poisoned lock cannot be
        // seen by a later turn; `into_inner` only satisfies the type.
        let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
        let mut outcome = TurnOutcome { task: None };
        let lead = lead_name();

        match turn.kind {
            TurnKind::ShutdownRequest(request) => {
                let response = match &state.waiting {
                    Some(w) => ShutdownResponse::Reject(format!(
                        "waiting for {}'s review for {}; ask again later",
                        w.peer, w.request.asked_by
                    )),
                    None => ShutdownResponse::Approve,
                };
                eprintln!(
                    "reviewer: shutdown request from {}: {response:?}",
                    request.from
                );
                messaging::respond_shutdown(&request.request_id, &response)
                    .map_err(|e| format!("cannot answer shutdown: {}", describe(&e)))?;
                return Ok(outcome);
            }
            TurnKind::TaskClaimed(task) => state.queue.push_back(Request {
                question: task_question(&task.id, &task.subject, &task.description),
                asked_by: lead.clone(),
                task: Some(task.id),
            }),
            TurnKind::Initial if turn.messages.is_empty() => state.queue.push_back(Request {
                question: turn.prompt.clone(),
                asked_by: turn.from.clone(),
                task: None,
            }),
            TurnKind::Initial | TurnKind::Message => {
                for message in &turn.messages {
                    if let Some(report) = take_message(&mut state, message)? {
                        outcome.task = Some(report);
                    }
                }
            }
        }

        // Not waiting for anyone: ask about the next request.
        while state.waiting.is_none() {
            let Some(request) = state.queue.pop_front() else {
                break;
            };
            match ask(request, &lead)? {
                Ok(waiting) => state.waiting = Some(waiting),
                Err(report) => outcome.task = report.or(outcome.task),
            }
        }
        Ok(outcome)
    }
}

/// Handle one message: an answer we wait for, a new request, or neither.
/// Returns the report of a task the answer completed.
fn take_message(state: &mut State, message: &Message) -> Result<Option<TaskReport>, String> {
    match &message.protocol {
        None => {
            let is_answer = state
                .waiting
                .as_ref()
                .is_some_and(|w| w.peer == message.from);
            if is_answer {
                let waiting = state.waiting.take().expect("checked above");
                return relay(waiting, &message.text);
            }
            state.queue.push_back(Request {
                question: message.text.clone(),
                asked_by: message.from.clone(),
                task: None,
            });
        }
        Some(ProtocolMessage::TaskAssignment(a)) => state.queue.push_back(Request {
            question: task_question(&a.task_id, &a.subject, &a.description),
            asked_by: a.assigned_by.clone(),
            task: Some(a.task_id.clone()),
        }),
        // Other protocol messages (plan answers, …) are not for a reviewer.
        Some(_) => {}
    }
    Ok(None)
}

/// Send `request` to a peer. `Ok(Ok(waiting))`: sent, now wait.
/// `Ok(Err(report))`: no peer to ask; the asker was told, and a task request
/// is reported blocked.
fn ask(request: Request, lead: &str) -> Result<Result<Waiting, Option<TaskReport>>, String> {
    let me = team::whoami().name;
    let (named, question) = match request.question.strip_prefix('@') {
        Some(rest) => match rest.split_once(char::is_whitespace) {
            Some((name, question)) => (Some(name.to_string()), question.trim().to_string()),
            None => (None, request.question.clone()),
        },
        None => (None, request.question.clone()),
    };
    let peer = match named {
        Some(name) => Some(name),
        None => team::roster()
            .map_err(|e| format!("cannot read the roster: {}", describe(&e)))?
            .into_iter()
            .find(|m| !m.is_lead && m.name != me && m.name != lead)
            .map(|m| m.name),
    };
    let Some(peer) = peer else {
        let reason = "no peer to ask for a review".to_string();
        tell(
            &request.asked_by,
            &format!("Cannot review: {reason}"),
            "cannot review",
        )?;
        return Ok(Err(request.task.map(|task_id| TaskReport {
            task_id,
            status: CompletedStatus::Blocked,
            reason: Some(reason),
        })));
    };
    match messaging::send(
        &peer,
        &format!("Please review:\n\n{question}"),
        Some("review request"),
    ) {
        Ok(delivery) => eprintln!("reviewer: {}; waiting for the answer", delivery.message),
        Err(Error::NotFound(why)) => {
            tell(
                &request.asked_by,
                &format!("Cannot review: {why}"),
                "cannot review",
            )?;
            return Ok(Err(None));
        }
        Err(e) => return Err(format!("cannot ask {peer}: {}", describe(&e))),
    }
    Ok(Ok(Waiting { peer, request }))
}

/// The answer came: pass it on, and complete the task if the request was one.
fn relay(waiting: Waiting, answer: &str) -> Result<Option<TaskReport>, String> {
    let Waiting { peer, request } = waiting;
    tell(
        &request.asked_by,
        &format!("Review from {peer}: {answer}"),
        &format!("review from {peer}"),
    )?;
    let Some(task_id) = request.task else {
        return Ok(None);
    };
    let changes = TaskUpdate {
        subject: None,
        description: None,
        active_form: None,
        status: Some(TaskStatus::Completed),
        owner: None,
        metadata: Some(format!("{{\"reviewed-by\":\"{peer}\"}}")),
    };
    tasks::update(&task_id, &changes)
        .map_err(|e| format!("cannot complete task #{task_id}: {}", describe(&e)))?;
    Ok(Some(TaskReport {
        task_id,
        status: CompletedStatus::Resolved,
        reason: None,
    }))
}

fn task_question(id: &str, subject: &str, description: &str) -> String {
    format!("Task #{id}: {subject}\n\n{description}")
}

fn lead_name() -> String {
    team::roster()
        .ok()
        .and_then(|members| members.into_iter().find(|m| m.is_lead))
        .map(|m| m.name)
        .unwrap_or_else(|| "team-lead".to_string())
}

/// Message `to`; a recipient that is not a member (a person at the host) is
/// logged and skipped.
fn tell(to: &str, text: &str, summary: &str) -> Result<(), String> {
    match messaging::send(to, text, Some(summary)) {
        Ok(_) => Ok(()),
        Err(Error::NotFound(why)) => {
            eprintln!("reviewer: cannot tell {to}: {why}");
            Ok(())
        }
        Err(e) => Err(format!("cannot message {to}: {}", describe(&e))),
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

export!(Reviewer);
