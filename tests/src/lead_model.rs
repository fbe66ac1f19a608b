//! A scripted model for the LLM lead (`guests/lead`) that drives a team of
//! auto-claiming workers through N tasks, written in code rather than as a
//! script file because its next move depends on what the lead was shown:
//! the lead benchmark's model (`benches/lead.rs`).
//!
//! The lead guest makes at most 40 model calls in one turn
//! (`MAX_CALLS_PER_TURN` of `guests/agent`), so like a real model it
//! batches: an answer calls up to [`BATCH`] tools of one kind.
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
//!    `TeamDelete`, tried again at once while it fails (teammates still
//!    stopping), up to 35 calls in the turn, and on the next wake.
//!
//! Every call is recorded ([`Call`]): when the request came and the answer
//! left, which kind of decision the answer made and how many. The time from
//! an answer that calls tools to the lead's next request is the time its
//! decisions took outside the model: the guest reading the answer, the host
//! running each tool (toolbox, seat) and the guest sending the next request;
//! divided by the answer's tool calls, the time per decision.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use teamhost::model::provider::{BoxFuture, Provider, ProviderCall, ProviderError};
use teamhost::model::{ContentBlock, Request, Response, Role, StopReason, ToolUse, Usage};

/// The catalogue entry the lead spawns from.
pub const ENTRY: &str = "worker";

/// The most tool calls in one answer.
pub const BATCH: usize = 10;

/// One answer: a kind of decision and its tool calls (name, input).
type Answer = (Decision, Vec<(&'static str, serde_json::Value)>);

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
    /// How many tool calls the answer made.
    pub tools: usize,
    /// Whether the request was the first of a lead turn (its last message
    /// is not a tool result).
    pub turn_start: bool,
}

#[derive(Debug)]
enum Phase {
    /// Answers still to give in order, then the first turn ends.
    Forming(Vec<Answer>),
    Waiting,
    Closing(Vec<Answer>),
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
            vec![(
                "TeamCreate",
                json!({"team_name": team, "description": "the lead benchmark"}),
            )],
        )];
        let creates: Vec<_> = (1..=tasks)
            .map(|i| {
                (
                    "TaskCreate",
                    json!({"subject": format!("Count words {i}"), "description": "Count the words.\n- a.txt"}),
                )
            })
            .collect();
        forming.extend(batches(Decision::TaskCreate, creates));
        let spawns: Vec<_> = (1..=teammates)
            .map(|i| {
                (
                    "Agent",
                    json!({"description": "count words", "prompt": "Work the task list.",
                    "subagent_type": ENTRY, "name": format!("w{i}"), "team_name": team,
                    "mode": "acceptEdits"}),
                )
            })
            .collect();
        forming.extend(batches(Decision::Spawn, spawns));
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

    fn closing(teammates: usize) -> Vec<Answer> {
        let requests: Vec<_> = (1..=teammates)
            .map(|i| {
                (
                    "SendMessage",
                    json!({"to": format!("w{i}"), "message": {"type": "shutdown_request"}}),
                )
            })
            .collect();
        let mut v = batches(Decision::Shutdown, requests);
        v.reverse();
        v
    }

    /// The next answer for `request`.
    fn decide(&self, request: &Request, phase: &mut Phase) -> (Decision, Vec<(String, String)>) {
        let last = request.messages.last();
        let result = last.and_then(|m| {
            m.content.iter().find_map(|b| match b {
                ContentBlock::ToolResult(r) if m.role == Role::User => Some(r.content.clone()),
                _ => None,
            })
        });
        let answer = |(d, calls): Answer| {
            let calls = calls
                .into_iter()
                .map(|(name, input)| (name.to_string(), input.to_string()))
                .collect();
            (d, calls)
        };
        let tool = |d: Decision, name: &'static str, input: serde_json::Value| {
            answer((d, vec![(name, input)]))
        };
        match phase {
            Phase::Forming(queue) | Phase::Closing(queue) if !queue.is_empty() => {
                answer(queue.pop().unwrap())
            }
            Phase::Forming(_) => {
                *phase = Phase::Waiting;
                (Decision::EndTurn, Vec::new())
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
                    let first = queue.pop().unwrap();
                    *phase = Phase::Closing(queue);
                    answer(first)
                }
                Some(_) => (Decision::EndTurn, Vec::new()),
            },
            Phase::Deleting => match result {
                // A wake, or a refusal while teammates still stop: try
                // again, within the guest's 40 calls per turn.
                None => tool(Decision::TeamDelete, "TeamDelete", json!({})),
                Some(_) if request_calls_this_turn(request) < 35 => {
                    tool(Decision::TeamDelete, "TeamDelete", json!({}))
                }
                Some(_) => (Decision::EndTurn, Vec::new()),
            },
        }
    }
}

/// `calls` as answers of at most [`BATCH`] calls each, in order.
fn batches(decision: Decision, calls: Vec<(&'static str, serde_json::Value)>) -> Vec<Answer> {
    calls
        .chunks(BATCH)
        .map(|c| (decision, c.to_vec()))
        .collect()
}

/// How many answers the model gave in the lead's current turn: the
/// assistant messages after the last user message that is not a tool
/// result.
fn request_calls_this_turn(request: &Request) -> usize {
    request
        .messages
        .iter()
        .rev()
        .take_while(|m| {
            m.role == Role::Assistant
                || matches!(m.content.first(), Some(ContentBlock::ToolResult(_)))
        })
        .filter(|m| m.role == Role::Assistant)
        .count()
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
            let (decision, tools) = self.decide(call.request, &mut state.0);
            let n = state.1.len();
            let count = tools.len();
            let (content, stop_reason) = if tools.is_empty() {
                (
                    vec![ContentBlock::Text("Waiting for the team.".into())],
                    StopReason::EndTurn,
                )
            } else {
                let blocks = tools
                    .into_iter()
                    .enumerate()
                    .map(|(k, (name, input))| {
                        ContentBlock::ToolUse(ToolUse {
                            id: format!("toolu_lead_{n}_{k}"),
                            name,
                            input,
                        })
                    })
                    .collect();
                (blocks, StopReason::ToolUse)
            };
            let turn_start = !matches!(
                call.request.messages.last().and_then(|m| m.content.first()),
                Some(ContentBlock::ToolResult(_))
            );
            state.1.push(Call {
                asked,
                answered: Instant::now(),
                decision,
                tools: count,
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
