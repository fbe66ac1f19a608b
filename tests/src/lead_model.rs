//! A scripted model for the LLM lead (`guests/lead`) that drives a team of
//! auto-claiming workers through N tasks, written in code rather than as a
//! script file because its next move depends on what the lead was shown:
//! the lead benchmark's model (`benches/lead.rs`).
//!
//! One tool call per answer, so every lead decision is timed alone:
//!
//! 1. **Forming**: `TeamCreate`, then one `TaskCreate` per task (its
//!    description names `a.txt`, which the `worker` guest counts), then one
//!    `Agent` spawn per teammate from the catalogue entry `worker` (mode
//!    `acceptEdits`: the worker writes its reports unasked), then a
//!    text answer that ends the lead's first turn.
//! 2. **Waiting**: every later turn (the lead woken by its teammates'
//!    reports and idle notifications) calls `TaskList`; when the list shows
//!    every task `[completed]` it goes on to closing, otherwise it ends the
//!    turn with text.
//! 3. **Closing**: one `SendMessage` `shutdown_request` per teammate, then
//!    `TeamDelete`, tried again on the next wake while it fails (teammates
//!    still stopping).
//!
//! Every call is recorded ([`Call`]): when the request came and the answer
//! left, and which decision the answer made. The time from an answer that
//! calls a tool to the lead's next request is the time the lead's decision
//! took outside the model: the guest reading the answer, the host running
//! the tool (toolbox, seat) and the guest sending the next request.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use teamhost::model::provider::{BoxFuture, Provider, ProviderCall, ProviderError};
use teamhost::model::{ContentBlock, Request, Response, Role, StopReason, ToolUse, Usage};

/// The catalogue entry the lead spawns from.
pub const ENTRY: &str = "worker";

/// What one answer of the model decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Decision {
    TeamCreate,
    TaskCreate,
    Spawn,
    /// `TaskList` on a wake: the lead's answer to its teammates' reports
    /// and idle notifications.
    Check,
    Shutdown,
    TeamDelete,
    /// A text answer: the lead's turn ends.
    EndTurn,
}

impl Decision {
    /// The name a table shows.
    pub fn label(self) -> &'static str {
        match self {
            Decision::TeamCreate => "TeamCreate",
            Decision::TaskCreate => "TaskCreate",
            Decision::Spawn => "Agent (spawn)",
            Decision::Check => "TaskList (on a wake)",
            Decision::Shutdown => "SendMessage shutdown_request",
            Decision::TeamDelete => "TeamDelete",
            Decision::EndTurn => "end of turn (text)",
        }
    }
}

/// One model call of the lead.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// When the request reached the model.
    pub asked: Instant,
    /// When the answer left it.
    pub answered: Instant,
    /// What the answer decided.
    pub decision: Decision,
    /// Whether the request was the first of a lead turn (its last message
    /// is not a tool result).
    pub turn_start: bool,
}

#[derive(Debug)]
enum Phase {
    /// Answers still to give in order, then the first turn ends.
    Forming(Vec<(Decision, &'static str, serde_json::Value)>),
    Waiting,
    Closing(Vec<(Decision, &'static str, serde_json::Value)>),
    Deleting,
}

/// The lead's model: see the module docs.
pub struct LeadModel {
    tasks: usize,
    state: Mutex<(Phase, Vec<Call>)>,
}

impl LeadModel {
    /// A model leading `teammates` workers of team `team` through `tasks`
    /// tasks.
    pub fn new(team: &str, tasks: usize, teammates: usize) -> Arc<LeadModel> {
        let mut forming = vec![(
            Decision::TeamCreate,
            "TeamCreate",
            json!({"team_name": team, "description": "the lead benchmark"}),
        )];
        for i in 1..=tasks {
            forming.push((
                Decision::TaskCreate,
                "TaskCreate",
                json!({"subject": format!("Count words {i}"), "description": "Count the words.\n- a.txt"}),
            ));
        }
        for i in 1..=teammates {
            forming.push((
                Decision::Spawn,
                "Agent",
                json!({"description": "count words", "prompt": "Work the task list.",
                    "subagent_type": ENTRY, "name": format!("w{i}"), "team_name": team,
                    "mode": "acceptEdits"}),
            ));
        }
        forming.reverse();
        Arc::new(LeadModel {
            tasks,
            state: Mutex::new((Phase::Forming(forming), Vec::new())),
        })
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().1.clone()
    }

    fn closing(teammates: usize) -> Vec<(Decision, &'static str, serde_json::Value)> {
        let mut v: Vec<_> = (1..=teammates)
            .map(|i| {
                (
                    Decision::Shutdown,
                    "SendMessage",
                    json!({"to": format!("w{i}"), "message": {"type": "shutdown_request"}}),
                )
            })
            .collect();
        v.reverse();
        v
    }

    /// The next answer for `request`.
    fn decide(&self, request: &Request, phase: &mut Phase) -> (Decision, Option<(String, String)>) {
        let last = request.messages.last();
        let result = last.and_then(|m| {
            m.content.iter().find_map(|b| match b {
                ContentBlock::ToolResult(r) if m.role == Role::User => Some(r.content.clone()),
                _ => None,
            })
        });
        let tool = |d: Decision, name: &str, input: serde_json::Value| {
            (d, Some((name.to_string(), input.to_string())))
        };
        match phase {
            Phase::Forming(queue) | Phase::Closing(queue) if !queue.is_empty() => {
                let (d, name, input) = queue.pop().unwrap();
                tool(d, name, input)
            }
            Phase::Forming(_) => {
                *phase = Phase::Waiting;
                (Decision::EndTurn, None)
            }
            Phase::Closing(_) => {
                *phase = Phase::Deleting;
                tool(Decision::TeamDelete, "TeamDelete", json!({}))
            }
            Phase::Waiting => match result {
                None => tool(Decision::Check, "TaskList", json!({})),
                Some(list) if list.matches("[completed]").count() >= self.tasks => {
                    let spawned = request_spawns(request);
                    let mut queue = LeadModel::closing(spawned);
                    let (d, name, input) = queue.pop().unwrap();
                    *phase = Phase::Closing(queue);
                    tool(d, name, input)
                }
                Some(_) => (Decision::EndTurn, None),
            },
            Phase::Deleting => match result {
                // A wake: try again.
                None => tool(Decision::TeamDelete, "TeamDelete", json!({})),
                Some(_) => (Decision::EndTurn, None),
            },
        }
    }
}

/// How many teammates the lead spawned, from the `Agent` calls in its
/// conversation.
fn request_spawns(request: &Request) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.content)
        .filter(|b| matches!(b, ContentBlock::ToolUse(t) if t.name == "Agent"))
        .count()
}

impl Provider for LeadModel {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn complete<'a>(
        &'a self,
        call: ProviderCall<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move {
            let asked = Instant::now();
            let mut state = self.state.lock().unwrap();
            let (decision, tool) = self.decide(call.request, &mut state.0);
            let n = state.1.len();
            let (content, stop_reason) = match tool {
                Some((name, input)) => (
                    vec![ContentBlock::ToolUse(ToolUse {
                        id: format!("toolu_lead_{n}"),
                        name,
                        input,
                    })],
                    StopReason::ToolUse,
                ),
                None => (
                    vec![ContentBlock::Text("Waiting for the team.".into())],
                    StopReason::EndTurn,
                ),
            };
            let turn_start = !matches!(
                call.request.messages.last().and_then(|m| m.content.first()),
                Some(ContentBlock::ToolResult(_))
            );
            state.1.push(Call {
                asked,
                answered: Instant::now(),
                decision,
                turn_start,
            });
            Ok(Response {
                id: format!("msg_lead_{n}"),
                model: call.model_id.to_string(),
                content,
                stop_reason,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 10,
                    ..Usage::default()
                },
            })
        })
    }
}
