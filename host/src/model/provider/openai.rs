//! OpenAI-compatible chat completions (`POST {base}/chat/completions`):
//! OpenAI itself and the local servers that speak its dialect (vLLM,
//! llama.cpp's server, Ollama, LM Studio).
//!
//! Mapping: the system prompt is the first message; a user message's tool
//! results become `tool` messages (an error result's text starts with
//! `Error: `), placed before the message's own text; an assistant
//! message's tool uses become `tool_calls` with their input text passed as
//! it is; thinking blocks are not sent (the dialect has no place for
//! them). `max_tokens` is sent as `max_tokens`, which every compatible
//! server reads (OpenAI's reasoning models want `max_completion_tokens`:
//! use them through a server that maps it, or leave them out). Streaming
//! asks for usage in the last chunk (`stream_options.include_usage`).
//! `prompt_tokens` counts cached tokens too: they are reported apart, as
//! cache reads.

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Map, Value};

use super::http::{Client, Decoder, StreamFailure, Wire};
use super::sse;
use super::{ApiKey, BoxFuture, Provider, ProviderCall, ProviderError, ProviderSettings};
use crate::model::types::{ContentBlock, Response, Role, StopReason, ToolChoice, ToolUse, Usage};

/// The OpenAI-compatible provider.
pub struct OpenAi {
    client: Client,
}

impl OpenAi {
    /// A provider for `settings` (dialect OpenAI).
    pub fn new(settings: ProviderSettings) -> crate::Result<Self> {
        Ok(OpenAi {
            client: Client::new(settings, "/chat/completions")?,
        })
    }
}

impl Provider for OpenAi {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn complete<'a>(
        &'a self,
        call: ProviderCall<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(self.client.complete(&OpenAiWire, call))
    }
}

struct OpenAiWire;

impl Wire for OpenAiWire {
    fn headers(&self, key: Option<&ApiKey>) -> Result<HeaderMap, ProviderError> {
        let mut h = HeaderMap::new();
        if let Some(key) = key {
            let mut v =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    ProviderError::Credentials(
                        "the API key holds characters a header cannot carry".into(),
                    )
                })?;
            v.set_sensitive(true);
            h.insert(reqwest::header::AUTHORIZATION, v);
        }
        Ok(h)
    }

    fn body(&self, call: &ProviderCall<'_>, stream: bool) -> Result<Value, ProviderError> {
        let r = call.request;
        let mut messages = Vec::new();
        if let Some(s) = &r.system {
            messages.push(json!({"role": "system", "content": s}));
        }
        for m in &r.messages {
            let text: String = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            match m.role {
                Role::User => {
                    for b in &m.content {
                        if let ContentBlock::ToolResult(t) = b {
                            let content = if t.is_error {
                                format!("Error: {}", t.content)
                            } else {
                                t.content.clone()
                            };
                            messages.push(json!({"role": "tool", "tool_call_id": t.tool_use_id, "content": content}));
                        }
                    }
                    if !text.is_empty() {
                        messages.push(json!({"role": "user", "content": text}));
                    }
                }
                Role::Assistant => {
                    let calls: Vec<Value> = m
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::ToolUse(u) => Some(json!({
                                "id": u.id,
                                "type": "function",
                                "function": {"name": u.name, "arguments": u.input},
                            })),
                            _ => None,
                        })
                        .collect();
                    let mut msg = Map::new();
                    msg.insert("role".into(), json!("assistant"));
                    // A string even when empty: OpenAI takes `""` beside tool
                    // calls, and llama.cpp's server refuses `null` (a 500)
                    // and a missing `content` alike.
                    msg.insert("content".into(), json!(text));
                    if !calls.is_empty() {
                        msg.insert("tool_calls".into(), Value::Array(calls));
                    }
                    messages.push(Value::Object(msg));
                }
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(call.model_id));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("max_tokens".into(), json!(call.max_tokens));
        if !r.tools.is_empty() {
            let tools: Vec<Value> = r
                .tools
                .iter()
                .map(|t| {
                    let schema: Value = serde_json::from_str(&t.input_schema).unwrap_or_else(|_| json!({"type": "object"}));
                    json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": schema}})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        // With tools and no choice, "auto" is said out loud: it is OpenAI's
        // default, but a server that does not default to it (llama.cpp's)
        // drops the tools without a word.
        let choice = r
            .tool_choice
            .clone()
            .or_else(|| (!r.tools.is_empty()).then_some(ToolChoice::Auto));
        if let Some(choice) = &choice {
            body.insert(
                "tool_choice".into(),
                match choice {
                    ToolChoice::Auto => json!("auto"),
                    ToolChoice::Any => json!("required"),
                    ToolChoice::None => json!("none"),
                    ToolChoice::Tool(name) => {
                        json!({"type": "function", "function": {"name": name}})
                    }
                },
            );
        }
        if let Some(t) = r.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if !r.stop_sequences.is_empty() {
            body.insert("stop".into(), json!(r.stop_sequences));
        }
        if stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: &[u8]) -> Result<Response, String> {
        let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let choice = v["choices"].get(0).ok_or("no choices")?;
        let m = &choice["message"];
        let mut content = Vec::new();
        if let Some(t) = m["content"].as_str().filter(|t| !t.is_empty()) {
            content.push(ContentBlock::Text(t.into()));
        }
        if let Some(calls) = m["tool_calls"].as_array() {
            for c in calls {
                content.push(ContentBlock::ToolUse(ToolUse {
                    id: c["id"].as_str().unwrap_or_default().into(),
                    name: c["function"]["name"].as_str().unwrap_or_default().into(),
                    input: arguments(&c["function"]["arguments"]),
                }));
            }
        }
        Ok(Response {
            id: v["id"].as_str().unwrap_or_default().into(),
            model: v["model"].as_str().unwrap_or_default().into(),
            content,
            stop_reason: finish_reason(choice["finish_reason"].as_str()),
            usage: usage(&v["usage"]),
        })
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(Stream::default())
    }

    fn spend_cap(&self, body: &str) -> bool {
        body.contains("insufficient_quota") || body.to_ascii_lowercase().contains("billing")
    }
}

/// Arguments as text: a string as it is, anything else as JSON.
fn arguments(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "{}".into(),
        other => other.to_string(),
    }
}

fn finish_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("stop") => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.into()),
        None => StopReason::Other("none".into()),
    }
}

fn usage(u: &Value) -> Usage {
    let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
    let cached = u["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0)
        .min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

#[derive(Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
struct Stream {
    id: String,
    model: String,
    text: String,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Usage,
}

impl Decoder for Stream {
    fn event(&mut self, e: sse::Event) -> Result<bool, StreamFailure> {
        let data = e.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|err| StreamFailure::Malformed(format!("a chunk is not JSON: {err}")))?;
        if let Some(err) = v.get("error") {
            let message = err["message"].as_str().unwrap_or_default();
            return Err(StreamFailure::Provider {
                // Whole: the client cuts it after scrubbing the key out.
                message: message.to_string(),
                retry: true,
            });
        }
        if let Some(id) = v["id"].as_str() {
            self.id = id.into();
        }
        if let Some(m) = v["model"].as_str() {
            self.model = m.into();
        }
        if v["usage"].is_object() {
            self.usage = usage(&v["usage"]);
        }
        for choice in v["choices"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let d = &choice["delta"];
            if let Some(t) = d["content"].as_str() {
                self.text.push_str(t);
            }
            for c in d["tool_calls"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                let index = c["index"]
                    .as_u64()
                    .unwrap_or(self.calls.len().saturating_sub(1) as u64)
                    as usize;
                if index > self.calls.len() || index > 1024 {
                    return Err(StreamFailure::Malformed(format!(
                        "tool call {index} came out of order"
                    )));
                }
                if index == self.calls.len() {
                    self.calls.push(Call::default());
                }
                let call = &mut self.calls[index];
                if let Some(id) = c["id"].as_str() {
                    call.id = id.into();
                }
                // The name comes whole: OpenAI sends it in the call's first
                // chunk, llama.cpp's server in every chunk. Assigned, not
                // appended (appending made `BashBashBash…`).
                if let Some(name) = c["function"]["name"].as_str().filter(|n| !n.is_empty()) {
                    call.name = name.into();
                }
                if let Some(args) = c["function"]["arguments"].as_str() {
                    call.arguments.push_str(args);
                }
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                self.finish = Some(f.into());
            }
        }
        Ok(false)
    }

    fn finish(self: Box<Self>) -> Result<Response, String> {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::Text(self.text));
        }
        for c in self.calls {
            content.push(ContentBlock::ToolUse(ToolUse {
                id: c.id,
                name: c.name,
                input: if c.arguments.trim().is_empty() {
                    "{}".into()
                } else {
                    c.arguments
                },
            }));
        }
        Ok(Response {
            id: self.id,
            model: self.model,
            content,
            stop_reason: finish_reason(self.finish.as_deref()),
            usage: self.usage,
        })
    }
}
