//! Keeping the conversation inside the model's context window: summarising
//! compaction.
//!
//! Before each model call the conversation's size is estimated
//! (characters / 4, the system prompt and the tool definitions included).
//! Above [`CONTEXT_SHARE`] of the model's context window (less the
//! answer's room), the oldest part is summarised:
//!
//! 1. The first message is kept whole; so are the most recent exchanges,
//!    as many as fit in half the room. The part between them starts after
//!    the first message and ends before a message that does not answer a
//!    call it leaves out: a tool call never loses its result.
//! 2. One extra model call (`model.complete-aside`: metered like any
//!    other, budget and calls per turn, but not kept by the host as the
//!    conversation a restart gives back), with no tools and at most
//!    [`SUMMARY_MAX_TOKENS`], is asked to
//!    summarise that part (given as text, each block cut to
//!    [`SUMMARY_BLOCK_CHARS`], the whole cut to what the window holds).
//! 3. The summary takes the part's place, marked [`SUMMARY_MARK`]: as an
//!    assistant message when the kept part starts with a user message, or
//!    else as a text block at the end of the first message (so the roles
//!    still alternate). An earlier summary is part of what the next one
//!    summarises.
//!
//! When the summary call fails (a spent budget, the calls-per-turn limit,
//! an unavailable model) or gives no text, the part is dropped instead,
//! and a note saying so and why takes its place. So is a part no larger
//! than two summaries, beside the earlier summary, which stays (when the
//! recent exchanges alone fill the room, a summary before every request
//! would only spend the turn's calls).

use crate::teamhost::agent::model::{self, ContentBlock, Message, Request, Role, ToolDefinition};

/// The share of the context window the conversation may fill.
pub const CONTEXT_SHARE: f64 = 0.75;
/// The most tokens the summary may take.
pub const SUMMARY_MAX_TOKENS: u32 = 512;
/// The most characters of one block shown to the summary call.
pub const SUMMARY_BLOCK_CHARS: usize = 2_000;
/// How a summary starts, in the conversation.
pub const SUMMARY_MARK: &str =
    "[Summary of the earlier conversation, written to fit the context window]";
/// How a note about dropped exchanges starts.
pub const DROPPED_MARK: &str =
    "[Earlier parts of this conversation were dropped to fit the context window";

/// The system prompt of the summary call.
pub const SUMMARY_SYSTEM: &str = "You summarise the earlier part of a conversation between an AI teammate, \
its lead and its tools, so that the teammate can go on without it. Write plain text, no tool calls. \
Keep what the rest of the work needs: the task, what was asked and decided, the files read and \
changed, commands run and their results, errors met, and what remains to do. Be concise.";

/// The model's window: its context and the answer's room, in tokens.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The model's context window.
    pub context: u32,
    /// The tokens asked for each answer.
    pub max_tokens: u32,
}

/// The usual rough token estimate: characters / 4.
fn tokens_of(chars: usize) -> usize {
    chars.div_ceil(4)
}

fn block_chars(b: &ContentBlock) -> usize {
    match b {
        ContentBlock::Text(t) => t.len(),
        ContentBlock::ToolUse(u) => u.id.len() + u.name.len() + u.input.len(),
        ContentBlock::ToolResult(r) => r.tool_use_id.len() + r.content.len(),
        ContentBlock::Thinking(t) => t.text.len() + t.signature.len(),
    }
}

fn message_chars(m: &Message) -> usize {
    m.content.iter().map(block_chars).sum()
}

fn conversation_tokens(c: &[Message]) -> usize {
    tokens_of(c.iter().map(message_chars).sum())
}

/// The tokens the conversation may take in a request with `system` and
/// `tools`.
pub fn room(window: Window, system: &str, tools: &[ToolDefinition]) -> usize {
    let fixed: usize = system.len()
        + tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.input_schema.len())
            .sum::<usize>();
    let share = (f64::from(window.context) - f64::from(window.max_tokens)).max(0.0) * CONTEXT_SHARE;
    (share as usize).saturating_sub(tokens_of(fixed)).max(250)
}

fn has_results(m: &Message) -> bool {
    m.content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolResult(_)))
}

/// Keeps `conversation` within `room` tokens, summarising its oldest part
/// with one model call (see the module docs). Returns without a call when
/// it fits.
pub fn compact(conversation: &mut Vec<Message>, room: usize, window: Window) {
    if conversation_tokens(conversation) <= room {
        return;
    }
    // A cut point starts the kept part: any message after the first two
    // (something must be left to summarise) that holds no tool results
    // (whose calls would be left out).
    let cuts: Vec<usize> = (2..conversation.len())
        .filter(|&i| !has_results(&conversation[i]))
        .collect();
    let Some(&last) = cuts.last() else {
        return;
    };
    let target = room / 2;
    let summary_tokens = SUMMARY_MAX_TOKENS as usize;
    let first_tokens = conversation_tokens(&conversation[..1]);
    let cut = cuts
        .iter()
        .copied()
        .find(|&c| {
            first_tokens + summary_tokens + conversation_tokens(&conversation[c..]) <= target
        })
        .unwrap_or(last);

    // The first message, without the summary an earlier compaction left in it.
    let mut first = conversation[0].clone();
    let earlier: Vec<ContentBlock> = {
        let (summaries, rest): (Vec<_>, Vec<_>) = first.content.into_iter().partition(|b| {
            matches!(b, ContentBlock::Text(t)
                    if t.starts_with(SUMMARY_MARK) || t.starts_with(DROPPED_MARK))
        });
        first.content = rest;
        summaries
    };
    let mut part = Vec::new();
    if !earlier.is_empty() {
        part.push(Message {
            role: Role::User,
            content: earlier,
        });
    }
    part.extend_from_slice(&conversation[1..cut]);

    // A part smaller than a summary of it is dropped, not summarised (an
    // earlier summary stays): when the recent exchanges alone fill the room,
    // a summary call before every request would only spend the turn's calls.
    let new_part = conversation_tokens(&conversation[1..cut]);
    let text = if new_part <= 2 * SUMMARY_MAX_TOKENS as usize {
        // The earlier summary stays; an earlier note is replaced by this one.
        first = conversation[0].clone();
        first
            .content
            .retain(|b| !matches!(b, ContentBlock::Text(t) if t.starts_with(DROPPED_MARK)));
        format!(
            "{DROPPED_MARK}: {} messages, too short to be worth a summary]",
            cut - 1
        )
    } else {
        match summarise(&part, window) {
            Ok(summary) => format!("{SUMMARY_MARK}\n{summary}"),
            Err(why) => format!(
                "{DROPPED_MARK}: {} messages; summarising them failed: {why}]",
                part.len()
            ),
        }
    };
    let mut kept = vec![first];
    if conversation[cut].role == Role::User {
        kept.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text(text)],
        });
    } else {
        kept[0].content.push(ContentBlock::Text(text));
    }
    kept.extend_from_slice(&conversation[cut..]);
    *conversation = kept;
}

/// `part` as text for the summary call, at most `limit` characters.
fn transcript(part: &[Message], limit: usize) -> String {
    let cut = |s: &str| -> String {
        if s.len() <= SUMMARY_BLOCK_CHARS {
            return s.to_string();
        }
        let mut at = SUMMARY_BLOCK_CHARS;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        format!("{}… (cut: {} characters in all)", &s[..at], s.len())
    };
    let mut out = String::new();
    for m in part {
        let who = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for b in &m.content {
            let line = match b {
                ContentBlock::Text(t) => format!("[{who}] {}", cut(t)),
                ContentBlock::ToolUse(u) => {
                    format!("[tool call {}] {}", cut(&u.name), cut(&u.input))
                }
                ContentBlock::ToolResult(r) if r.is_error => {
                    format!("[tool error] {}", cut(&r.content))
                }
                ContentBlock::ToolResult(r) => format!("[tool result] {}", cut(&r.content)),
                ContentBlock::Thinking(_) => continue,
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    if out.len() > limit {
        let mut at = limit;
        while !out.is_char_boundary(at) {
            at -= 1;
        }
        out.truncate(at);
        out.push_str("\n… (the rest was cut to fit the summary call)\n");
    }
    out
}

/// Asks the model for a summary of `part`; the error says why there is none.
fn summarise(part: &[Message], window: Window) -> Result<String, String> {
    let max_tokens = SUMMARY_MAX_TOKENS.min(window.max_tokens);
    let share = (f64::from(window.context) - f64::from(max_tokens)).max(0.0) * CONTEXT_SHARE;
    let limit = (share as usize * 4).saturating_sub(SUMMARY_SYSTEM.len() + 200);
    let request = Request {
        model: String::new(),
        system: Some(SUMMARY_SYSTEM.into()),
        messages: vec![Message {
            role: Role::User,
            content: vec![ContentBlock::Text(format!(
                "<conversation>\n{}</conversation>\n\nSummarise this conversation.",
                transcript(part, limit)
            ))],
        }],
        tools: Vec::new(),
        tool_choice: None,
        max_tokens: Some(max_tokens),
        temperature: None,
        stop_sequences: Vec::new(),
    };
    // Beside the conversation: the host keeps the conversation of the last
    // `complete` for a restart, and this call must not take its place.
    let answer = model::complete_aside(&request).map_err(|e| crate::describe(&e))?;
    let text = crate::text_of(&answer.content);
    if text.trim().is_empty() {
        return Err("the model gave no summary".into());
    }
    Ok(text)
}
