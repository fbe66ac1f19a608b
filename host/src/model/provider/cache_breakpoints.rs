//! Anthropic prompt caching: where an Anthropic request body gets its
//! `cache_control: {"type": "ephemeral"}` breakpoints.
//!
//! Anthropic caches a request's prefix, in the order tools → system →
//! messages, up to each marked block; a later request starting with the
//! same prefix reads it at 0.1× the input price instead of paying it in
//! full (writing it costs 1.25× once). The host marks, in a body the
//! Anthropic dialect has already built:
//!
//! | breakpoint | why |
//! |---|---|
//! | the last tool definition | the tools rarely change: kept when the system prompt does |
//! | the system prompt (sent as one text block) | the same for the whole conversation |
//! | the last message of the previous exchange (the last `user` message before the last `assistant` one) | what the previous call cached: this call reads it |
//! | the last message | cached now, read by the next call of the turn |
//!
//! That is at most 4, Anthropic's limit. A message's breakpoint goes on its
//! last block that may carry one (not a thinking block, whose marks the API
//! refuses); a message without such a block gets none. A prefix shorter
//! than the model's minimum (1,024 tokens for most models, more for some)
//! is simply not cached by the API, at no charge: the host does not guess
//! token counts to leave such marks out.

use serde_json::{json, Map, Value};

/// The most breakpoints one Anthropic request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// Marks `body` (an Anthropic Messages request) with its breakpoints, as
/// the module's table says. Never more than [`MAX_BREAKPOINTS`]; a body
/// without tools, system prompt or messages gets fewer.
pub(super) fn mark(body: &mut Map<String, Value>) {
    let mut marked = 0;
    if let Some(last) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|t| t.last_mut())
        .and_then(Value::as_object_mut)
    {
        last.insert("cache_control".into(), ephemeral());
        marked += 1;
    }
    if let Some(system) = body.get("system").and_then(Value::as_str) {
        // The API refuses a mark on an empty text block.
        if !system.is_empty() {
            let block = json!([{"type": "text", "text": system, "cache_control": ephemeral()}]);
            body.insert("system".into(), block);
            marked += 1;
        }
    }
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    for index in message_breakpoints(messages) {
        if marked == MAX_BREAKPOINTS {
            break;
        }
        if mark_message(&mut messages[index]) {
            marked += 1;
        }
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The messages to mark, most valuable first: the last one, then the last
/// `user` message before the last `assistant` one (when there is one).
fn message_breakpoints(messages: &[Value]) -> Vec<usize> {
    let Some(last) = messages.len().checked_sub(1) else {
        return Vec::new();
    };
    let mut at = vec![last];
    let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
    if let Some(a) = last_assistant {
        if let Some(previous) = messages[..a].iter().rposition(|m| m["role"] == "user") {
            if previous != last {
                at.push(previous);
            }
        }
    }
    at
}

/// Marks the last block of `message` that may carry a mark; false when it
/// has none.
fn mark_message(message: &mut Value) -> bool {
    let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) else {
        return false;
    };
    let markable = blocks.iter_mut().rev().find(|b| {
        let thinking = matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"));
        let empty_text = b["type"] == "text" && b["text"].as_str().is_some_and(str::is_empty);
        !thinking && !empty_text
    });
    match markable.and_then(Value::as_object_mut) {
        Some(block) => {
            block.insert("cache_control".into(), ephemeral());
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        walk(v, "", &mut out);
        out
    }

    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.contains_key("cache_control") {
                    out.push(path.to_string());
                }
                for (k, v) in m {
                    walk(v, &format!("{path}.{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(v, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }

    fn text(role: &str, t: &str) -> Value {
        json!({"role": role, "content": [{"type": "text", "text": t}]})
    }

    #[test]
    fn tools_system_and_the_two_stable_messages_are_marked() {
        let mut body = json!({
            "tools": [{"name": "a"}, {"name": "b"}],
            "system": "be brief",
            "messages": [
                text("user", "task"),
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}, {"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": false}]},
            ],
        });
        mark(body.as_object_mut().unwrap());
        let mut got = marks(&body);
        got.sort();
        assert_eq!(
            got,
            vec![
                ".messages[0].content[0]",
                ".messages[2].content[0]",
                ".system[0]",
                ".tools[1]"
            ]
        );
        assert_eq!(body["system"][0]["text"], "be brief");
    }

    #[test]
    fn a_first_call_marks_its_one_message_and_never_a_thinking_or_empty_block() {
        let mut body = json!({"messages": [text("user", "hello")]});
        mark(body.as_object_mut().unwrap());
        assert_eq!(marks(&body), vec![".messages[0].content[0]"]);

        let mut body = json!({"system": "", "messages": [
            text("user", "q"),
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}]},
        ]});
        mark(body.as_object_mut().unwrap());
        assert_eq!(marks(&body), vec![".messages[0].content[0]"]);
        assert_eq!(body["system"], "", "an empty system prompt stays as it was");
    }

    #[test]
    fn never_more_than_four() {
        let mut body = json!({
            "tools": [{"name": "a"}],
            "system": "s",
            "messages": [text("user", "1"), text("assistant", "2"), text("user", "3"), text("assistant", "4"), text("user", "5")],
        });
        mark(body.as_object_mut().unwrap());
        assert_eq!(marks(&body).len(), MAX_BREAKPOINTS);
    }
}
