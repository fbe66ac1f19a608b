//! Anthropic Messages (`POST {base}/v1/messages`): the host's request as
//! Anthropic's JSON, its answer (whole or streamed as SSE) back.
//!
//! A `tool_use` block's input must be a JSON object on this wire: a history
//! holding one whose text is not (a model wrote broken JSON and the agent
//! sent it back) is refused as `invalid`, naming the block, rather than
//! sent altered. Empty text blocks, which the API refuses, are left out.
//!
//! Prompt caching is on unless the provider's or the model's settings turn
//! it off: the breakpoints are placed by [`super::cache_breakpoints`].

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Map, Value};

use super::http::{Client, Decoder, StreamFailure, Wire};
use super::sse;
use super::{ApiKey, BoxFuture, Provider, ProviderCall, ProviderError, ProviderSettings};
use crate::model::types::{
    ContentBlock, Response, Role, StopReason, Thinking, ToolChoice, ToolUse, Usage,
};

/// The API version sent with every request.
const VERSION: &str = "2023-06-01";

/// The Anthropic provider.
pub struct Anthropic {
    client: Client,
    prompt_caching: bool,
}

impl Anthropic {
    /// A provider for `settings` (dialect Anthropic).
    pub fn new(settings: ProviderSettings) -> crate::Result<Self> {
        Ok(Anthropic {
            prompt_caching: settings.prompt_caching,
            client: Client::new(settings, "/v1/messages")?,
        })
    }
}

impl Provider for Anthropic {
    fn kind(&self) -> &'static str {
        "anthropic"
    }

    fn complete<'a>(
        &'a self,
        call: ProviderCall<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        let wire = AnthropicWire {
            prompt_caching: self.prompt_caching && call.prompt_caching,
        };
        Box::pin(async move { self.client.complete(&wire, call).await })
    }
}

struct AnthropicWire {
    /// Mark the request's cache breakpoints.
    prompt_caching: bool,
}

fn block(b: &ContentBlock, i: usize) -> Result<Option<Value>, ProviderError> {
    Ok(Some(match b {
        ContentBlock::Text(t) if t.is_empty() => return Ok(None),
        ContentBlock::Text(t) => json!({"type": "text", "text": t}),
        ContentBlock::ToolUse(u) => {
            let input: Value = match serde_json::from_str(&u.input) {
                Ok(v @ Value::Object(_)) => v,
                _ if u.input.trim().is_empty() => json!({}),
                _ => {
                    return Err(ProviderError::Invalid(format!(
                        "message {i}: the input of tool use {:?} is not a JSON object, which Anthropic's API cannot carry; answer it with a tool result and leave it out of the history",
                        u.id.chars().take(64).collect::<String>()
                    )))
                }
            };
            json!({"type": "tool_use", "id": u.id, "name": u.name, "input": input})
        }
        ContentBlock::ToolResult(r) => json!({
            "type": "tool_result",
            "tool_use_id": r.tool_use_id,
            "content": r.content,
            "is_error": r.is_error,
        }),
        ContentBlock::Thinking(t) => {
            json!({"type": "thinking", "thinking": t.text, "signature": t.signature})
        }
    }))
}

impl Wire for AnthropicWire {
    fn headers(&self, key: Option<&ApiKey>) -> Result<HeaderMap, ProviderError> {
        let mut h = HeaderMap::new();
        h.insert("anthropic-version", HeaderValue::from_static(VERSION));
        if let Some(key) = key {
            let mut v = HeaderValue::from_str(key.expose()).map_err(|_| {
                ProviderError::Credentials(
                    "the API key holds characters a header cannot carry".into(),
                )
            })?;
            v.set_sensitive(true);
            h.insert("x-api-key", v);
        }
        Ok(h)
    }

    fn body(&self, call: &ProviderCall<'_>, stream: bool) -> Result<Value, ProviderError> {
        let r = call.request;
        let mut messages = Vec::new();
        for (i, m) in r.messages.iter().enumerate() {
            let mut content = Vec::new();
            for b in &m.content {
                if let Some(v) = block(b, i)? {
                    content.push(v);
                }
            }
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            messages.push(json!({"role": role, "content": content}));
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(call.model_id));
        body.insert("max_tokens".into(), json!(call.max_tokens));
        body.insert("messages".into(), Value::Array(messages));
        if let Some(s) = &r.system {
            body.insert("system".into(), json!(s));
        }
        if !r.tools.is_empty() {
            let tools: Vec<Value> = r
                .tools
                .iter()
                .map(|t| {
                    let schema: Value = serde_json::from_str(&t.input_schema)
                        .unwrap_or_else(|_| json!({"type": "object"}));
                    json!({"name": t.name, "description": t.description, "input_schema": schema})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(choice) = &r.tool_choice {
            body.insert(
                "tool_choice".into(),
                match choice {
                    ToolChoice::Auto => json!({"type": "auto"}),
                    ToolChoice::Any => json!({"type": "any"}),
                    ToolChoice::None => json!({"type": "none"}),
                    ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
                },
            );
        }
        if let Some(t) = r.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if !r.stop_sequences.is_empty() {
            body.insert("stop_sequences".into(), json!(r.stop_sequences));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        if self.prompt_caching {
            super::cache_breakpoints::mark(&mut body);
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: &[u8]) -> Result<Response, String> {
        let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let mut content = Vec::new();
        for b in v["content"].as_array().ok_or("no content")? {
            match b["type"].as_str() {
                Some("text") => content.push(ContentBlock::Text(
                    b["text"].as_str().unwrap_or_default().into(),
                )),
                Some("tool_use") => content.push(ContentBlock::ToolUse(ToolUse {
                    id: b["id"].as_str().unwrap_or_default().into(),
                    name: b["name"].as_str().unwrap_or_default().into(),
                    input: b["input"].to_string(),
                })),
                Some("thinking") => content.push(ContentBlock::Thinking(Thinking {
                    text: b["thinking"].as_str().unwrap_or_default().into(),
                    signature: b["signature"].as_str().unwrap_or_default().into(),
                })),
                // redacted_thinking and block kinds this host does not know.
                _ => {}
            }
        }
        Ok(Response {
            id: v["id"].as_str().unwrap_or_default().into(),
            model: v["model"].as_str().unwrap_or_default().into(),
            content,
            stop_reason: stop_reason(v["stop_reason"].as_str()),
            usage: usage(&v["usage"], &Usage::default()),
        })
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(Stream::default())
    }

    fn spend_cap(&self, body: &str) -> bool {
        let b = body.to_ascii_lowercase();
        [
            "credit balance",
            "billing",
            "spend limit",
            "spending limit",
            "quota",
        ]
        .iter()
        .any(|w| b.contains(w))
    }
}

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.into()),
        None => StopReason::Other("none".into()),
    }
}

/// Usage from `u`, each field falling back to `base` (a stream reports
/// input tokens first and output tokens last).
fn usage(u: &Value, base: &Usage) -> Usage {
    let get = |k: &str, d: u64| u.get(k).and_then(Value::as_u64).unwrap_or(d);
    Usage {
        input_tokens: get("input_tokens", base.input_tokens),
        output_tokens: get("output_tokens", base.output_tokens),
        cache_read_tokens: get("cache_read_input_tokens", base.cache_read_tokens),
        cache_write_tokens: get("cache_creation_input_tokens", base.cache_write_tokens),
    }
}

/// A block being streamed.
enum Partial {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Other,
}

#[derive(Default)]
struct Stream {
    id: String,
    model: String,
    blocks: Vec<Partial>,
    stop: Option<String>,
    usage: Usage,
    started: bool,
}

fn malformed(what: impl Into<String>) -> StreamFailure {
    StreamFailure::Malformed(what.into())
}

impl Decoder for Stream {
    fn event(&mut self, e: sse::Event) -> Result<bool, StreamFailure> {
        if e.event == "ping" || e.data.is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(&e.data)
            .map_err(|err| malformed(format!("event {:?} is not JSON: {err}", e.event)))?;
        let kind = v["type"].as_str().unwrap_or(e.event.as_str()).to_string();
        match kind.as_str() {
            "message_start" => {
                let m = &v["message"];
                self.id = m["id"].as_str().unwrap_or_default().into();
                self.model = m["model"].as_str().unwrap_or_default().into();
                self.usage = usage(&m["usage"], &Usage::default());
                self.started = true;
            }
            "content_block_start" => {
                let index = v["index"]
                    .as_u64()
                    .ok_or_else(|| malformed("a block without an index"))?
                    as usize;
                if index != self.blocks.len() {
                    return Err(malformed(format!("block {index} started out of order")));
                }
                let b = &v["content_block"];
                self.blocks.push(match b["type"].as_str() {
                    Some("text") => Partial::Text(b["text"].as_str().unwrap_or_default().into()),
                    Some("tool_use") => Partial::ToolUse {
                        id: b["id"].as_str().unwrap_or_default().into(),
                        name: b["name"].as_str().unwrap_or_default().into(),
                        json: String::new(),
                    },
                    Some("thinking") => Partial::Thinking {
                        text: b["thinking"].as_str().unwrap_or_default().into(),
                        signature: b["signature"].as_str().unwrap_or_default().into(),
                    },
                    _ => Partial::Other,
                });
            }
            "content_block_delta" => {
                let index = v["index"]
                    .as_u64()
                    .ok_or_else(|| malformed("a delta without an index"))?
                    as usize;
                let block = self.blocks.get_mut(index).ok_or_else(|| {
                    malformed(format!("a delta for block {index}, which never started"))
                })?;
                let d = &v["delta"];
                let piece = |k: &str| d[k].as_str().unwrap_or_default();
                match (block, d["type"].as_str()) {
                    (Partial::Text(t), Some("text_delta")) => t.push_str(piece("text")),
                    (Partial::ToolUse { json, .. }, Some("input_json_delta")) => {
                        json.push_str(piece("partial_json"))
                    }
                    (Partial::Thinking { text, .. }, Some("thinking_delta")) => {
                        text.push_str(piece("thinking"))
                    }
                    (Partial::Thinking { signature, .. }, Some("signature_delta")) => {
                        signature.push_str(piece("signature"))
                    }
                    (Partial::Other, _) => {}
                    (_, other) => {
                        return Err(malformed(format!(
                            "a {other:?} delta does not fit block {index}"
                        )))
                    }
                }
            }
            "content_block_stop" => {}
            "message_delta" => {
                if let Some(s) = v["delta"]["stop_reason"].as_str() {
                    self.stop = Some(s.into());
                }
                self.usage = usage(&v["usage"], &self.usage);
            }
            "message_stop" => {
                if !self.started {
                    return Err(malformed("message_stop before message_start"));
                }
                return Ok(true);
            }
            "error" => {
                let kind = v["error"]["type"].as_str().unwrap_or("error");
                let message = v["error"]["message"].as_str().unwrap_or_default();
                let retry = matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error");
                return Err(StreamFailure::Provider {
                    // Whole: the client cuts it after scrubbing the key out.
                    message: format!("{kind}: {message}"),
                    retry,
                });
            }
            // Event kinds added later: ignored, as the API asks.
            _ => {}
        }
        Ok(false)
    }

    fn finish(self: Box<Self>) -> Result<Response, String> {
        let content = self
            .blocks
            .into_iter()
            .filter_map(|b| match b {
                Partial::Text(t) => Some(ContentBlock::Text(t)),
                Partial::ToolUse { id, name, json } => Some(ContentBlock::ToolUse(ToolUse {
                    id,
                    name,
                    input: if json.trim().is_empty() {
                        "{}".into()
                    } else {
                        json
                    },
                })),
                Partial::Thinking { text, signature } => {
                    Some(ContentBlock::Thinking(Thinking { text, signature }))
                }
                Partial::Other => None,
            })
            .collect();
        Ok(Response {
            id: self.id,
            model: self.model,
            content,
            stop_reason: stop_reason(self.stop.as_deref()),
            usage: self.usage,
        })
    }
}
