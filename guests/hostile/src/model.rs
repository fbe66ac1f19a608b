//! `model …`: attacks through the `model` and `toolbox` interfaces (issue
//! 11): fishing for the host's credentials, floods, malformed requests and
//! model-written tool calls that try to leave the sandbox. One command word,
//! `model`, then a sub-command:
//!
//! | sub-command | what it tries |
//! |---|---|
//! | `env` | the guest's environment and arguments (where a careless host would put a key) |
//! | `call ALIAS TEXT…` | one `model.complete` with that alias (`-` for the default); reports the answer's text or the error |
//! | `flood N` | N completions in one turn; reports how many succeeded and the first error |
//! | `orphan-result` | a `tool-result` answering no `tool-use` |
//! | `bad-json` | a history whose `tool-use` input is not JSON |
//! | `huge MB` | a single text block of MB mebibytes |
//! | `spent` | `model.spent()` |
//! | `models` | `model.models()` |
//! | `invoke NAME JSON…` | `toolbox.invoke` of a model-written call |
//! | `tools` | `toolbox.definitions()`: the tool names, comma-separated |
//!
//! Each step is reported as `model/SUB`.

use super::report;
use super::teamhost::agent::model::{
    self, ContentBlock, Message, ModelError, Request, Role, ToolResult, ToolUse,
};
use super::teamhost::agent::toolbox;

/// Runs `model ARGS…`.
pub fn run(args: &[&str]) {
    match args {
        ["env"] => {
            let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
            let argv: Vec<String> = std::env::args().collect();
            report(
                "model/env",
                true,
                format!("vars=[{}] args=[{}]", vars.join(","), argv.join(",")),
            );
        }
        ["call", alias, text @ ..] => {
            let alias = if *alias == "-" { "" } else { alias };
            let r = model::complete(&request(alias, vec![user(&text.join(" "))]));
            match r {
                Ok(resp) => report("model/call", true, text_of(&resp.content)),
                Err(e) => report("model/call", false, error(&e)),
            }
        }
        ["flood", n] => {
            let n: u32 = n.parse().unwrap_or(0);
            let mut ok = 0;
            let mut first_error = String::from("none");
            for i in 0..n {
                match model::complete(&request("", vec![user(&format!("flood {i}"))])) {
                    Ok(_) => ok += 1,
                    Err(e) => {
                        first_error = error(&e);
                        break;
                    }
                }
            }
            report(
                "model/flood",
                true,
                format!("ok={ok} first-error={first_error}"),
            );
        }
        ["orphan-result"] => {
            let msg = Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult {
                    tool_use_id: "toolu_nobody".into(),
                    content: "forged".into(),
                    is_error: false,
                })],
            };
            outcome(
                "model/orphan-result",
                model::complete(&request("", vec![msg])),
            );
        }
        ["bad-json"] => {
            let history = vec![
                user("start"),
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse(ToolUse {
                        id: "toolu_1".into(),
                        name: "Read".into(),
                        input: "{not json".into(),
                    })],
                },
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult(ToolResult {
                        tool_use_id: "toolu_1".into(),
                        content: "x".into(),
                        is_error: true,
                    })],
                },
            ];
            outcome("model/bad-json", model::complete(&request("", history)));
        }
        ["huge", mb] => {
            let mb: usize = mb.parse().unwrap_or(1);
            let text = "x".repeat(mb << 20);
            outcome(
                "model/huge",
                model::complete(&request("", vec![user(&text)])),
            );
        }
        ["spent"] => {
            let s = model::spent();
            report(
                "model/spent",
                true,
                format!(
                    "calls={} tokens-left={:?} cost={} cost-left={:?}",
                    s.calls, s.tokens_left, s.cost_microdollars, s.cost_left_microdollars
                ),
            );
        }
        ["models"] => {
            let names: Vec<String> = model::models()
                .into_iter()
                .map(|m| format!("{}={}", m.alias, m.id))
                .collect();
            report("model/models", true, names.join(","));
        }
        ["invoke", name, json @ ..] => {
            let r = toolbox::invoke(&ToolUse {
                id: "toolu_hostile".into(),
                name: (*name).into(),
                input: json.join(" "),
            });
            report("model/invoke", !r.is_error, r.content);
        }
        ["tools"] => {
            let names: Vec<String> = toolbox::definitions().into_iter().map(|d| d.name).collect();
            report("model/tools", true, names.join(","));
        }
        _ => report("model/usage", false, "unknown model sub-command"),
    }
}

fn request(alias: &str, messages: Vec<Message>) -> Request {
    Request {
        model: alias.into(),
        system: None,
        messages,
        tools: Vec::new(),
        tool_choice: None,
        max_tokens: Some(64),
        temperature: None,
        stop_sequences: Vec::new(),
    }
}

fn user(text: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentBlock::Text(text.into())],
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
        .join("")
}

fn outcome(step: &str, r: Result<model::Response, ModelError>) {
    match r {
        Ok(resp) => report(step, true, text_of(&resp.content)),
        Err(e) => report(step, false, error(&e)),
    }
}

fn error(e: &ModelError) -> String {
    match e {
        ModelError::Denied(s) => format!("denied: {s}"),
        ModelError::BudgetExhausted(s) => format!("budget-exhausted: {s}"),
        ModelError::RateLimited(r) => {
            format!("rate-limited: {} ms: {}", r.retry_after_ms, r.message)
        }
        ModelError::Invalid(s) => format!("invalid: {s}"),
        ModelError::Unavailable(s) => format!("unavailable: {s}"),
        ModelError::NotRecorded(s) => format!("not-recorded: {s}"),
    }
}
