//! `agent`: the LLM teammate. Each turn it hands the model what arrived,
//! lets it call its tools until it answers without one, and keeps the whole
//! conversation for the next turn. The model is the host's (`model`), and
//! so are the tools (`toolbox`): the host holds the keys, enforces the
//! budget and runs every tool call through the sandbox.
//!
//! # The loop
//!
//! The heart is [`Agent::run`]: ask the model with the conversation and the
//! tool definitions; if it called tools, run each through
//! `toolbox::invoke` and give it the results; repeat until it stops calling
//! tools, or [`MAX_CALLS_PER_TURN`] is reached.
//!
//! # Turns
//!
//! - **Initial and message turns**: the text becomes a user message in the
//!   form Claude Code uses, `<teammate-message teammate_id="FROM"
//!   summary="…">TEXT</teammate-message>`, escaped by the rule of
//!   [`framing`] so that no text can end its block or pose as another
//!   sender. Idle notifications and other protocol messages that need no
//!   thought are not shown to the model.
//! - **Task turns** (auto-claimed, or a `task_assignment` from the lead,
//!   which it claims first): the task becomes the user message. After the
//!   loop the task's status is read back: `completed` reports it resolved;
//!   otherwise the turn reports no outcome and the task stays with it.
//! - **Shutdown requests** are approved at once, without asking the model.
//! - **Plan mode** (`plan-mode-required`): the model works with the tools
//!   its mode allows (read-only ones) and its final answer is sent to the
//!   lead as the plan. An approval lets it carry the plan out in the next
//!   turn with the tools of its new mode; a rejection sends it back to
//!   planning with the lead's feedback.
//! - **As a sub-agent** (`subagents.whoami` is `some`): the system prompt
//!   is the agent definition's (or a general-purpose one), and the model's
//!   last answer of each turn is reported as the result
//!   (`subagents.report`). A `<task-notification>` from `teamhost` (a
//!   background sub-agent ended) is shown to the model as it is, not as a
//!   teammate's message.
//! - **Model errors** end the turn with the error (the host reports it to
//!   the lead): a spent budget, a denied model, a rate limit the host could
//!   not wait out, a replay that no longer matches its cassette.
//!
//! # As the lead (`guests/lead`)
//!
//! `guests/lead` builds this same source with the `lead` feature: the
//! `lead` world, the coordination prompt of [`lead`] (form the team, split
//! the goal into tasks, spawn from the catalogue, answer plans and
//! permissions, shut everyone down and delete the team), and every protocol
//! message shown to the model. The lead's tools come from the toolbox.
//!
//! # The context window
//!
//! The conversation is kept whole while it fits. Its size is estimated as
//! characters / 4, with the system prompt and the tool definitions; above
//! [`CONTEXT_SHARE`] of the model's context window (less the answer's
//! room), the oldest exchanges after the first message are summarised by
//! the model in one extra, metered call, and the summary takes their place
//! (dropped, with a note, when that call fails): see [`compaction`]. A
//! single tool result longer than [`MAX_RESULT_CHARS`] is cut, with a note,
//! before it enters the conversation.

#[cfg(not(feature = "lead"))]
wit_bindgen::generate!({
    path: "../../wit",
    world: "teamhost:agent/teammate",
    generate_all,
});

// Built as `guests/lead`: the same loop in the `lead` world.
#[cfg(feature = "lead")]
wit_bindgen::generate!({
    path: "../../wit",
    world: "teamhost:agent/lead",
    generate_all,
});

mod compaction;
mod framing;
#[cfg(feature = "lead")]
mod lead;

use std::cell::RefCell;

use exports::teamhost::agent::handler::{Guest, TaskReport, Turn, TurnKind, TurnOutcome};
use teamhost::agent::mailbox::Message as InboxMessage;
use teamhost::agent::messaging;
use teamhost::agent::model::{self, ContentBlock, Message, ModelError, Request, Role, ToolResult};
use teamhost::agent::protocol::{CompletedStatus, PlanResponse, ProtocolMessage, ShutdownResponse};
use teamhost::agent::subagents;
use teamhost::agent::tasks::{self, ClaimError, TaskStatus};
use teamhost::agent::team::{self, PermissionMode};
use teamhost::agent::toolbox;

/// Model calls in one turn before the agent stops and says so.
pub const MAX_CALLS_PER_TURN: u32 = 40;
pub use compaction::CONTEXT_SHARE;
/// The longest tool result kept in the conversation, in characters.
pub const MAX_RESULT_CHARS: usize = 30_000;
/// Output tokens asked per call (less when the host allows less).
const MAX_TOKENS: u32 = 4096;
/// The context window assumed when the host does not say.
const DEFAULT_CONTEXT: u32 = 100_000;

thread_local! {
    static AGENT: RefCell<Option<Agent>> = const { RefCell::new(None) };
}

/// The agent's memory, from one turn to the next.
struct Agent {
    name: String,
    system: String,
    conversation: Vec<Message>,
    /// A plan was sent and its answer has not come.
    plan_pending: bool,
    /// Whether it is a sub-agent (its answers are its results).
    sub_agent: bool,
}

impl Agent {
    fn new() -> Agent {
        let me = team::whoami();
        if let Some(ctx) = subagents::whoami() {
            let system = ctx.system_prompt.unwrap_or_else(|| {
                format!(
                    "You are {name}, a sub-agent started by {parent} for one task. You work in a \
                     sandbox on the files of your working directory; there is no network.\n\
                     Do the task with your tools. Your final answer, as plain text, is what {parent} \
                     gets back: make it the result, complete and concise. You are not a member of \
                     the team: you cannot message anyone or use the task list.",
                    name = me.name,
                    parent = ctx.parent,
                )
            });
            return Agent {
                name: me.name,
                system,
                // A resumed sub-agent whose instance was let go: the
                // conversation the host kept for it.
                conversation: model::history(),
                plan_pending: false,
                sub_agent: true,
            };
        }
        // Not from the roster: in a team of thousands, the whole list
        // would be copied into this instance's memory, which stays grown.
        #[cfg(not(feature = "lead"))]
        let lead = team::lead();
        #[cfg(feature = "lead")]
        let system = lead::system_prompt(&me.name, &me.team_name);
        #[cfg(not(feature = "lead"))]
        let system = format!(
            "You are {name}, a teammate in the team \"{team}\". Your lead is {lead}. \
             You work in a sandbox on the files of your working directory; there is no network.\n\
             Work arrives as messages and tasks. Do it with your tools: read and change files, \
             run commands with Bash, keep the task list current (TaskUpdate: in_progress when you \
             start a task, completed when it is done).\n\
             Nobody reads your plain answers. To tell the lead or a teammate anything, use SendMessage. \
             When you finish a piece of work, send {lead} a short report with SendMessage, then stop.",
            name = me.name,
            team = me.team_name,
        );
        Agent {
            name: me.name.clone(),
            system,
            // Empty for a teammate that starts afresh; after a host restart,
            // the conversation the host kept of this teammate's earlier life.
            conversation: model::history(),
            plan_pending: false,
            sub_agent: false,
        }
    }

    fn in_plan_mode() -> bool {
        team::whoami().permission_mode == PermissionMode::Plan
    }

    /// Adds `text` as the user's, to the last user message when the
    /// conversation ends with one (a turn that failed before the model
    /// answered).
    fn push_user(&mut self, text: String) {
        match self.conversation.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(ContentBlock::Text(text)),
            _ => self.conversation.push(Message {
                role: Role::User,
                content: vec![ContentBlock::Text(text)],
            }),
        }
    }

    /// The agent loop: model, tools, model, … until the model stops calling
    /// tools. Returns the model's last text.
    fn run(&mut self) -> Result<String, String> {
        let mut tools = toolbox::definitions();
        let (context, max_tokens) = limits();
        let window = compaction::Window {
            context,
            max_tokens,
        };
        let room = compaction::room(window, &self.system, &tools);
        let mut failures = Failures::default();
        for _ in 0..MAX_CALLS_PER_TURN {
            compaction::compact(&mut self.conversation, room, window);
            // Lent to the request and taken back, not copied: whatever a
            // turn's peak allocates stays in the instance's memory for its
            // whole life (wasm memory only grows).
            let request = Request {
                model: String::new(),
                system: Some(std::mem::take(&mut self.system)),
                messages: std::mem::take(&mut self.conversation),
                tools: std::mem::take(&mut tools),
                tool_choice: None,
                max_tokens: Some(max_tokens),
                temperature: None,
                stop_sequences: Vec::new(),
            };
            let answer = model::complete(&request);
            self.system = request.system.unwrap_or_default();
            self.conversation = request.messages;
            tools = request.tools;
            let answer = answer.map_err(|e| failures.explain(describe(&e)))?;
            let calls: Vec<_> = answer
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse(u) => Some(u.clone()),
                    _ => None,
                })
                .collect();
            let text = text_of(&answer.content);
            self.conversation.push(Message {
                role: Role::Assistant,
                content: answer.content.into_iter().map(sendable_name).collect(),
            });
            if calls.is_empty() {
                return Ok(text);
            }
            let results = calls
                .iter()
                .map(|call| {
                    let mut r = toolbox::invoke(call);
                    r.content = cut(r.content);
                    failures.count(&r);
                    ContentBlock::ToolResult(ToolResult {
                        tool_use_id: call.id.clone(),
                        content: r.content,
                        is_error: r.is_error,
                    })
                })
                .collect();
            self.conversation.push(Message {
                role: Role::User,
                content: results,
            });
        }
        // The last message holds tool results: the model sees them first
        // thing next turn.
        Err(failures.explain(format!(
            "stopped after {MAX_CALLS_PER_TURN} model calls in one turn without finishing"
        )))
    }

    /// Runs the loop and, in plan mode, sends the model's answer as the plan.
    fn think(&mut self) -> Result<(), String> {
        let planning = !self.sub_agent && Agent::in_plan_mode();
        if planning {
            self.push_user(
                "You are in plan mode: look around with the tools you have, change nothing, \
                 and answer with your plan (what you will change and how you will check it). \
                 The plan goes to the lead for approval."
                    .into(),
            );
        }
        let answer = self.run()?;
        if self.sub_agent {
            subagents::report(&answer);
        }
        if planning && !self.plan_pending {
            let plan = if answer.trim().is_empty() {
                "(the model gave no plan)".to_string()
            } else {
                answer
            };
            messaging::request_plan_approval(&plan)
                .map_err(|e| format!("cannot send the plan to the lead: {e:?}"))?;
            self.plan_pending = true;
        }
        Ok(())
    }

    fn handle(&mut self, turn: Turn) -> Result<TurnOutcome, String> {
        match turn.kind {
            TurnKind::ShutdownRequest(request) => {
                messaging::respond_shutdown(&request.request_id, &ShutdownResponse::Approve)
                    .map_err(|e| format!("cannot approve the shutdown: {e:?}"))?;
                Ok(TurnOutcome { task: None })
            }
            TurnKind::TaskClaimed(task) => {
                self.push_user(task_text(&task.id, &turn.prompt));
                let result = self.think();
                Ok(TurnOutcome {
                    task: report(&task.id, result)?,
                })
            }
            TurnKind::Initial | TurnKind::Message => {
                let mut claimed = None;
                let mut wake = false;
                for m in &turn.messages {
                    match &m.protocol {
                        // A background sub-agent ended: the reference shows the
                        // model the notification itself.
                        None if m.from == "teamhost"
                            && m.text.starts_with("<task-notification>") =>
                        {
                            self.push_user(m.text.clone());
                            wake = true;
                        }
                        None => {
                            self.push_user(teammate_message(m));
                            wake = true;
                        }
                        // A task the agent gave itself (TaskUpdate owner) is
                        // already in its conversation.
                        Some(ProtocolMessage::TaskAssignment(a)) if a.assigned_by == self.name => {}
                        Some(ProtocolMessage::TaskAssignment(a)) => {
                            match tasks::claim(&a.task_id, false) {
                                Ok(task) => {
                                    self.push_user(task_text(
                                        &task.id,
                                        &format!("{}\n\n{}", task.subject, task.description),
                                    ));
                                    claimed = Some(task.id);
                                    wake = true;
                                }
                                Err(ClaimError::AlreadyResolved) => {}
                                Err(e) => {
                                    return Err(format!("cannot take task #{}: {e:?}", a.task_id))
                                }
                            }
                        }
                        Some(ProtocolMessage::PlanApprovalResponse(answer))
                            if self.plan_pending =>
                        {
                            self.plan_pending = false;
                            self.push_user(match &answer.response {
                                PlanResponse::Approve(_) => {
                                    "The lead approved your plan. Carry it out now.".to_string()
                                }
                                PlanResponse::Reject(feedback) => {
                                    format!("The lead rejected your plan: {feedback}\nRevise it.")
                                }
                            });
                            wake = true;
                        }
                        // A lead thinks about every protocol message (plans,
                        // permission requests, idle notifications, shutdown
                        // answers): its model sees the message's text, as the
                        // reference's lead does.
                        Some(_) if cfg!(feature = "lead") => {
                            self.push_user(teammate_message(m));
                            wake = true;
                        }
                        // Idle notifications, permission answers, …: nothing
                        // to think about.
                        Some(_) => {}
                    }
                }
                if turn.messages.is_empty() && !turn.prompt.is_empty() {
                    self.push_user(turn.prompt.clone());
                    wake = true;
                }
                if !wake {
                    return Ok(TurnOutcome { task: None });
                }
                let result = self.think();
                let task = match claimed {
                    Some(id) => report(&id, result)?,
                    None => {
                        result?;
                        None
                    }
                };
                Ok(TurnOutcome { task })
            }
        }
    }
}

/// The tool calls of one turn that failed, for the message that ends a
/// turn the model could not finish.
#[derive(Default)]
struct Failures {
    calls: u32,
    failed: u32,
    last: Option<String>,
}

/// The most characters of a tool error quoted to the lead.
const QUOTED_ERROR_CHARS: usize = 160;

impl Failures {
    fn count(&mut self, result: &ToolResult) {
        self.calls += 1;
        if result.is_error {
            self.failed += 1;
            let line = result.content.lines().next().unwrap_or_default();
            self.last = Some(line.chars().take(QUOTED_ERROR_CHARS).collect());
        }
    }

    /// `why`, and when most tool calls failed, which and what to do: a
    /// model that keeps writing calls that do not work is too weak for
    /// the work or its instruction.
    fn explain(&self, why: String) -> String {
        match &self.last {
            Some(last) if self.failed * 2 > self.calls => format!(
                "{why}: {} of its {} tool calls failed (the last: {last}); the model may be too weak for this work: give the teammate a stronger model or a simpler instruction",
                self.failed, self.calls
            ),
            _ => why,
        }
    }
}

/// What the turn says about task `id`: resolved when the model completed
/// it; nothing when it is still open (it stays with this teammate).
fn report(id: &str, result: Result<(), String>) -> Result<Option<TaskReport>, String> {
    if let Err(reason) = result {
        return Ok(Some(TaskReport {
            task_id: id.to_string(),
            status: CompletedStatus::Failed,
            reason: Some(reason),
        }));
    }
    Ok(match tasks::get(id) {
        Ok(t) if t.status == TaskStatus::Completed => Some(TaskReport {
            task_id: id.to_string(),
            status: CompletedStatus::Resolved,
            reason: None,
        }),
        _ => None,
    })
}

/// A task for the model. `body` (a subject and description any teammate may
/// have written) is shown by [`framing::shown`]: it cannot open a
/// `<teammate-message>` block of its own.
fn task_text(id: &str, body: &str) -> String {
    format!(
        "You have task #{id}. Mark it in_progress, do it, mark it completed, and report to the lead.\n\n{}",
        framing::shown(body)
    )
}

/// A message as Claude Code shows it to its model, framed by the rule all
/// teamhost agents share ([`framing`]): its text cannot end its block, its
/// sender and summary cannot forge an attribute.
fn teammate_message(m: &InboxMessage) -> String {
    framing::teammate_block(&m.from, m.summary.as_deref(), &m.text)
}

/// The context window and the output tokens to ask for.
fn limits() -> (u32, u32) {
    let models = model::models();
    let chosen = models.iter().find(|m| m.is_default).or(models.first());
    match chosen {
        Some(m) => (
            m.context_window.max(1_000),
            MAX_TOKENS.min(m.max_output_tokens.max(1)),
        ),
        None => (DEFAULT_CONTEXT, MAX_TOKENS),
    }
}

fn cut(mut s: String) -> String {
    if s.len() > MAX_RESULT_CHARS {
        let mut at = MAX_RESULT_CHARS;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        let total = s.len();
        s.truncate(at);
        s.push_str(&format!("\n(cut: {total} characters in all, {at} shown)"));
    }
    s
}

/// What a tool call's name becomes in the conversation when no provider
/// would take it back.
const INVALID_TOOL_NAME: &str = "invalid_tool_name";

/// `block`, with a tool call's name replaced by [`INVALID_TOOL_NAME`] when
/// it is not 1 to 64 letters, digits, `_` or `-`: providers refuse such a
/// name in the history they are sent (OpenAI's and Anthropic's pattern),
/// and one weak model's `"Write:"` would fail every later call of the
/// conversation. The call itself is run as the model wrote it (and fails,
/// quoting the name), so the model still learns what was wrong.
fn sendable_name(block: ContentBlock) -> ContentBlock {
    match block {
        ContentBlock::ToolUse(mut u) => {
            let valid = (1..=64).contains(&u.name.len())
                && u.name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !valid {
                u.name = INVALID_TOOL_NAME.into();
            }
            ContentBlock::ToolUse(u)
        }
        other => other,
    }
}

fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn describe(e: &ModelError) -> String {
    match e {
        ModelError::Denied(s) => format!("the model call was denied: {s}"),
        ModelError::BudgetExhausted(s) => format!("the model budget is spent: {s}"),
        ModelError::RateLimited(r) => format!(
            "the model is rate limited (retry after {} ms): {}",
            r.retry_after_ms, r.message
        ),
        ModelError::Invalid(s) => format!("the model call was invalid: {s}"),
        ModelError::Unavailable(s) => format!("the model is unavailable: {s}"),
        ModelError::NotRecorded(s) => format!("no recorded answer: {s}"),
    }
}

struct Teammate;

impl Guest for Teammate {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        AGENT.with(|cell| {
            let mut slot = cell.borrow_mut();
            let agent = slot.get_or_insert_with(Agent::new);
            agent.handle(turn)
        })
    }
}

export!(Teammate);
