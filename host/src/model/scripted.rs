//! A provider that answers from a script file: the model of tests, of the
//! offline example and of benchmarks. It speaks no HTTP and needs no key.
//!
//! # Script format (JSON)
//!
//! ```json
//! {
//!   "agents": [
//!     {
//!       "name": "fixer",
//!       "match": ["You are fixer,"],
//!       "after_last": "error",
//!       "turns": [
//!         { "text": "Let me look.",
//!           "tool_use": [ { "id": "toolu_fix_1", "name": "Read",
//!                           "input": { "file_path": "calc.py" } } ] },
//!         { "text": "Fixed.", "delay_ms": 50,
//!           "usage": { "input_tokens": 1200, "output_tokens": 40 } }
//!       ]
//!     }
//!   ]
//! }
//! ```
//!
//! - **Which agent.** The first agent whose every `match` string occurs in
//!   the request's system prompt or its first user message (text blocks).
//!   An agent with an empty `match` list matches every request. No agent
//!   matching is an `invalid` error naming the request's first words.
//! - **Which turn.** The number of assistant messages already in the
//!   request: the first call of a conversation gets `turns[0]`, the call
//!   after the model's first answer `turns[1]`, and so on. The answer
//!   depends on the request alone, so a retried or replayed call gets the
//!   same one and teammates never disturb each other. An agent with
//!   `"turns_by": "calls"` gets its turns in the order its calls come
//!   instead, whatever the request holds: for a conversation the agent
//!   rewrites (compaction summarises or drops old exchanges, so the count
//!   of assistant messages falls). A retried call then gets the next turn.
//! - **Past the last turn**: `after_last` says what happens: `"error"`
//!   (the default: an `invalid` error saying the script has no turn N) or
//!   `"repeat-last"` (the last turn again, for benchmarks).
//! - **A turn**: `text` (optional), `tool_use` (optional list of
//!   `{id, name, input}`; `input` is any JSON value, sent to the guest as its
//!   JSON text; a missing `id` becomes `toolu_{agent}_{turn}_{i}`),
//!   `thinking` (optional text), `stop_reason` (`end-turn`, `tool-use`,
//!   `max-tokens`, `stop-sequence`, `refusal`; default `tool-use` when the
//!   turn has tool calls, `end-turn` otherwise), `usage` (optional
//!   `input_tokens`, `output_tokens`, `cache_read_tokens`,
//!   `cache_write_tokens`; by default input ≈ the request's characters / 4
//!   and output ≈ the answer's characters / 4, so budgets can be tested),
//!   `delay_ms` (optional: the simulated provider time before answering).
//! - **Request ids**: in a tool call's input, `{{requestId}}` and
//!   `{{request_id}}` become the newest value of that JSON key in the
//!   request's user text (a plan approval request's `requestId`, a
//!   permission request's `request_id`), so a scripted lead can answer
//!   requests whose ids the host makes at run time. Left as written when
//!   the conversation has none.
//! - Unknown fields are refused, so a typo in a script is an error naming
//!   it rather than a silently different answer.
//!
//! A script that does not parse is an error naming the file, the line and
//! the column.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::provider::{BoxFuture, Provider, ProviderCall, ProviderError};
use super::types::{ContentBlock, Request, Response, Role, StopReason, Thinking, ToolUse, Usage};

/// A parsed script.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The agents it plays, tried in order.
    pub agents: Vec<ScriptAgent>,
}

/// One scripted agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptAgent {
    /// A name for error texts and default tool-use ids.
    pub name: String,
    /// Strings that must all occur in the system prompt or the first user
    /// message.
    #[serde(default, rename = "match")]
    pub matches: Vec<String>,
    /// Its answers, by position in the conversation.
    pub turns: Vec<ScriptTurn>,
    /// What happens past the last turn.
    #[serde(default)]
    pub after_last: AfterLast,
    /// What picks the turn.
    #[serde(default)]
    pub turns_by: TurnsBy,
}

/// What picks a scripted agent's turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnsBy {
    /// The number of assistant messages in the request.
    #[default]
    Conversation,
    /// The number of calls this agent answered before.
    Calls,
}

/// What a scripted agent does once its turns are used up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AfterLast {
    /// An `invalid` error.
    #[default]
    Error,
    /// The last turn again.
    RepeatLast,
}

/// One scripted answer.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// A text block first, when set.
    #[serde(default)]
    pub text: Option<String>,
    /// A thinking block before the text, when set (signature `scripted`).
    #[serde(default)]
    pub thinking: Option<String>,
    /// Tool calls after the text.
    #[serde(default)]
    pub tool_use: Vec<ScriptToolUse>,
    /// The stop reason (kebab-case); derived from `tool_use` when absent.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Usage to report; estimated from the characters when absent.
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    /// Simulated provider time.
    #[serde(default)]
    pub delay_ms: u64,
}

/// A scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolUse {
    /// The call's id; `toolu_{agent}_{turn}_{i}` when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool.
    pub name: String,
    /// Its input: any JSON (a string is sent as the raw text, so a script
    /// can play a model writing broken JSON).
    #[serde(default)]
    pub input: serde_json::Value,
}

/// Scripted usage; missing fields are 0.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Script {
    /// Reads and checks a script file.
    pub fn load(path: &Path) -> crate::Result<Script> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            crate::Error::ModelSetup(format!(
                "cannot read the model script {}: {e}",
                path.display()
            ))
        })?;
        Script::parse(&text).map_err(|e| {
            crate::Error::ModelSetup(format!(
                "the model script {} is not valid: {e}",
                path.display()
            ))
        })
    }

    /// Parses a script; the error names the line and column.
    pub fn parse(text: &str) -> Result<Script, String> {
        let script: Script = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for agent in &script.agents {
            if agent.turns.is_empty() {
                return Err(format!("agent {:?} has no turns", agent.name));
            }
            for (i, turn) in agent.turns.iter().enumerate() {
                if let Some(s) = &turn.stop_reason {
                    parse_stop(s).map_err(|e| format!("agent {:?} turn {i}: {e}", agent.name))?;
                }
            }
        }
        Ok(script)
    }
}

fn parse_stop(s: &str) -> Result<StopReason, String> {
    Ok(match s {
        "end-turn" => StopReason::EndTurn,
        "tool-use" => StopReason::ToolUse,
        "max-tokens" => StopReason::MaxTokens,
        "stop-sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => {
            return Err(format!(
                "unknown stop_reason {other:?}: use end-turn, tool-use, max-tokens, stop-sequence or refusal"
            ))
        }
    })
}

/// Counters a benchmark or a test can read: calls made, calls in flight
/// now, and the most ever in flight at once.
#[derive(Debug, Default)]
pub struct ScriptedStats {
    calls: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    changed: tokio::sync::Notify,
}

impl ScriptedStats {
    /// Calls started so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
    /// The most calls that were in flight at one moment.
    pub fn max_in_flight(&self) -> u64 {
        self.max_in_flight.load(Ordering::SeqCst)
    }
    /// Calls in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }
    /// Waits until `check` holds, re-checking each time a call starts or
    /// ends (answered or dropped).
    pub async fn until(&self, check: impl Fn(&ScriptedStats) -> bool) {
        loop {
            let changed = self.changed.notified();
            if check(self) {
                return;
            }
            changed.await;
        }
    }
}

/// The scripted provider.
pub struct Scripted {
    script: Script,
    stats: Arc<ScriptedStats>,
    /// Calls each agent was asked, for [`TurnsBy::Calls`].
    asked: Vec<AtomicU64>,
}

impl Scripted {
    /// A provider playing `script`.
    pub fn new(script: Script) -> Self {
        Scripted {
            asked: script.agents.iter().map(|_| AtomicU64::new(0)).collect(),
            script,
            stats: Arc::default(),
        }
    }

    /// Its counters.
    pub fn stats(&self) -> Arc<ScriptedStats> {
        self.stats.clone()
    }

    /// The answer to `request` (without the delay), or why there is none.
    pub fn answer(
        &self,
        model_id: &str,
        request: &Request,
    ) -> Result<(Response, u64), ProviderError> {
        let haystack = conversation_head(request);
        let (index, agent) = self
            .script
            .agents
            .iter()
            .enumerate()
            .find(|(_, a)| a.matches.iter().all(|m| haystack.contains(m.as_str())))
            .ok_or_else(|| {
                let head: String = haystack.chars().take(80).collect();
                ProviderError::Invalid(format!(
                    "no scripted agent matches this conversation (it begins {head:?})"
                ))
            })?;
        let pos = match agent.turns_by {
            TurnsBy::Conversation => request
                .messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count(),
            TurnsBy::Calls => self.asked[index].fetch_add(1, Ordering::SeqCst) as usize,
        };
        let turn = match agent.turns.get(pos) {
            Some(t) => t,
            None if agent.after_last == AfterLast::RepeatLast => {
                agent.turns.last().expect("checked non-empty")
            }
            None => {
                return Err(ProviderError::Invalid(format!(
                    "the script of agent {:?} has no turn {pos} (it has {})",
                    agent.name,
                    agent.turns.len()
                )))
            }
        };
        let mut content = Vec::new();
        if let Some(t) = &turn.thinking {
            content.push(ContentBlock::Thinking(Thinking {
                text: t.clone(),
                signature: "scripted".into(),
            }));
        }
        if let Some(t) = &turn.text {
            content.push(ContentBlock::Text(t.clone()));
        }
        for (i, call) in turn.tool_use.iter().enumerate() {
            let input = match &call.input {
                serde_json::Value::String(raw) => raw.clone(),
                serde_json::Value::Null => "{}".to_string(),
                v => v.to_string(),
            };
            let input = fill_request_ids(&input, request);
            content.push(ContentBlock::ToolUse(ToolUse {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("toolu_{}_{pos}_{i}", agent.name)),
                name: call.name.clone(),
                input,
            }));
        }
        let stop_reason = match &turn.stop_reason {
            Some(s) => parse_stop(s).map_err(ProviderError::Invalid)?,
            None if turn.tool_use.is_empty() => StopReason::EndTurn,
            None => StopReason::ToolUse,
        };
        let usage = match turn.usage {
            Some(u) => Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_read_tokens: u.cache_read_tokens,
                cache_write_tokens: u.cache_write_tokens,
            },
            None => Usage {
                input_tokens: estimate_tokens(&serde_json::to_string(request).unwrap_or_default()),
                output_tokens: estimate_tokens(
                    &serde_json::to_string(&content).unwrap_or_default(),
                ),
                ..Usage::default()
            },
        };
        let response = Response {
            id: format!("msg_scripted_{}_{pos}", agent.name),
            model: model_id.to_string(),
            content,
            stop_reason,
            usage,
        };
        Ok((response, turn.delay_ms))
    }
}

/// Characters / 4, rounded up: the usual rough token estimate.
fn estimate_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

/// The system prompt and the first user message's text blocks.
fn conversation_head(request: &Request) -> String {
    let mut s = request.system.clone().unwrap_or_default();
    if let Some(first) = request.messages.iter().find(|m| m.role == Role::User) {
        for block in &first.content {
            if let ContentBlock::Text(t) = block {
                s.push('\n');
                s.push_str(t);
            }
        }
    }
    s
}

struct InFlight<'a>(&'a ScriptedStats);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

impl Provider for Scripted {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn complete<'a>(
        &'a self,
        call: ProviderCall<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move {
            self.stats.calls.fetch_add(1, Ordering::SeqCst);
            let now = self.stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
            self.stats.changed.notify_waiters();
            let _guard = InFlight(&self.stats);
            let (response, delay) = self.answer(call.model_id, call.request)?;
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            Ok(response)
        })
    }
}

/// `input` with `{{requestId}}` and `{{request_id}}` replaced by the newest
/// value of that key in `request`'s user text (see the module docs).
fn fill_request_ids(input: &str, request: &Request) -> String {
    let mut out = input.to_string();
    for key in ["requestId", "request_id"] {
        let placeholder = format!("{{{{{key}}}}}");
        if !out.contains(&placeholder) {
            continue;
        }
        let needle = format!("\"{key}\":\"");
        let newest = request
            .messages
            .iter()
            .rev()
            .filter(|m| m.role == Role::User)
            .flat_map(|m| m.content.iter().rev())
            .find_map(|b| match b {
                ContentBlock::Text(t) => t.rfind(&needle).map(|at| {
                    let rest = &t[at + needle.len()..];
                    rest[..rest.find('"').unwrap_or(rest.len())].to_string()
                }),
                _ => None,
            });
        if let Some(id) = newest {
            out = out.replace(&placeholder, &id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::Message;

    fn request(system: &str, assistant_turns: usize) -> Request {
        let mut messages = vec![Message::user("start")];
        for _ in 0..assistant_turns {
            messages.push(Message::assistant("ok"));
            messages.push(Message::user("more"));
        }
        Request {
            system: Some(system.into()),
            ..Request::new(messages)
        }
    }

    const SCRIPT: &str = r#"{"agents":[
      {"name":"a","match":["alpha"],"turns":[
        {"text":"one","tool_use":[{"name":"Read","input":{"file_path":"x"}}]},
        {"text":"two","usage":{"input_tokens":7,"output_tokens":3}}]},
      {"name":"b","match":[],"after_last":"repeat-last","turns":[{"tool_use":[{"id":"t","name":"Bash","input":"{broken"}]}]}
    ]}"#;

    #[test]
    fn the_turn_is_the_number_of_assistant_messages_in_the_request() {
        let s = Scripted::new(Script::parse(SCRIPT).unwrap());
        let (first, _) = s.answer("m", &request("you are alpha", 0)).unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        assert!(matches!(&first.content[1], ContentBlock::ToolUse(t)
            if t.id == "toolu_a_0_0" && t.input == r#"{"file_path":"x"}"#));
        let (second, _) = s.answer("m", &request("you are alpha", 1)).unwrap();
        assert_eq!(second.content, vec![ContentBlock::Text("two".into())]);
        assert_eq!(second.usage.input_tokens, 7);
        let err = s.answer("m", &request("you are alpha", 2)).unwrap_err();
        assert!(err.to_string().contains("has no turn 2"), "{err}");
    }

    #[test]
    fn request_id_placeholders_take_the_newest_id_in_the_users_text() {
        let script = r#"{"agents":[{"name":"l","turns":[{"tool_use":[{"id":"a","name":"SendMessage",
          "input":{"plan":"{{requestId}}","perm":"{{request_id}}"}}]}]}]}"#;
        let s = Scripted::new(Script::parse(script).unwrap());
        let mut req = request("lead", 0);
        req.messages = vec![
            Message::user(r#"{"type":"permission_request","request_id":"perm-1-old"}"#),
            Message::user(
                r#"{"type":"plan_approval_request","requestId":"plan_approval-2@p@t"} {"type":"permission_request","request_id":"perm-3-new"}"#,
            ),
        ];
        let (r, _) = s.answer("m", &req).unwrap();
        assert!(
            matches!(&r.content[0], ContentBlock::ToolUse(t)
            if t.input == r#"{"plan":"plan_approval-2@p@t","perm":"perm-3-new"}"#),
            "{:?}",
            r.content
        );
        // Without one in the conversation the placeholder stays.
        let (r, _) = s.answer("m", &request("lead", 0)).unwrap();
        assert!(
            matches!(&r.content[0], ContentBlock::ToolUse(t) if t.input.contains("{{requestId}}"))
        );
    }

    #[test]
    fn a_string_input_is_sent_raw_and_repeat_last_repeats() {
        let s = Scripted::new(Script::parse(SCRIPT).unwrap());
        let (r, _) = s.answer("m", &request("someone else", 5)).unwrap();
        assert!(matches!(&r.content[0], ContentBlock::ToolUse(t) if t.input == "{broken"));
        assert!(
            r.usage.input_tokens > 0,
            "usage is estimated when not scripted"
        );
    }

    #[test]
    fn turns_by_calls_follow_the_calls_not_the_conversation() {
        let script = r#"{"agents":[{"name":"c","turns_by":"calls","turns":[
          {"text":"one"},{"text":"two"}]}]}"#;
        let s = Scripted::new(Script::parse(script).unwrap());
        let texts: Vec<_> = (0..2)
            .map(|_| s.answer("m", &request("any", 0)).unwrap().0.content)
            .collect();
        assert_eq!(
            texts,
            [
                vec![ContentBlock::Text("one".into())],
                vec![ContentBlock::Text("two".into())]
            ]
        );
        let err = s.answer("m", &request("any", 0)).unwrap_err();
        assert!(err.to_string().contains("has no turn 2"), "{err}");
    }

    #[test]
    fn a_typo_in_a_script_is_an_error_naming_it() {
        let err = Script::parse(r#"{"agents":[{"name":"a","turns":[{"txt":"x"}]}]}"#).unwrap_err();
        assert!(err.contains("txt"), "{err}");
        let err = Script::parse(r#"{"agents":[{"name":"a","turns":[{"stop_reason":"done"}]}]}"#)
            .unwrap_err();
        assert!(err.contains("unknown stop_reason"), "{err}");
    }
}
