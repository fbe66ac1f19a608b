//! A fake model provider on loopback: real HTTP/1.1 over a real socket,
//! speaking Anthropic Messages or OpenAI chat completions, answering from a
//! list of [`Reply`]s. Tests of the providers, the broker and the agent use
//! it; the model benchmark measures against it.
//!
//! ```no_run
//! # async fn demo() {
//! use teamhost_tests::model_server::{Api, FakeProvider, Reply};
//! let server = FakeProvider::start(Api::Anthropic, vec![
//!     Reply::status(429, "slow down").with_header("retry-after", "0"),
//!     Reply::text("hello"),
//! ]).await;
//! // point a provider at server.base_url(); afterwards:
//! assert_eq!(server.requests().len(), 2);
//! # }
//! ```
//!
//! [`Quirks`] make the OpenAI side behave as llama.cpp's server
//! (`llama-cpp-python[server]`) was seen to (shared/research/local-model.md):
//! the full tool name in every streamed chunk, no usage in a stream, a 500
//! for an assistant message whose `content` is null, tools ignored without
//! a `tool_choice`.
//!
//! [`FakeProvider::start_caching`] makes the Anthropic side bill as
//! Anthropic's prompt cache does ([`crate::prompt_cache`]): its answers'
//! usage says what was read from and written to the cache, from the
//! breakpoints each request carries.
//!
//! Replies are used in order, one per request; when they run out the last
//! one repeats ([`FakeProvider::always`] starts with one). An answer is
//! streamed (SSE, chunked) when the request asked for `stream: true`, and
//! sent whole otherwise. Connections are kept alive between requests.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use crate::prompt_cache::{CacheUsage, PromptCache};

/// Which API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /v1/chat/completions`.
    OpenAi,
}

/// One block of a fake answer.
#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    Thinking {
        text: String,
        signature: String,
    },
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A 200 answer with these blocks and usage (input, output tokens).
    Answer {
        blocks: Vec<Block>,
        usage: (u64, u64),
    },
    /// Another status, with headers and a body.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A 200 whose stream carries an event that is not JSON (or, not
    /// streamed, a body that is not JSON).
    Malformed,
    /// A 200 whose stream stops halfway and whose connection is closed.
    Truncated,
    /// No answer at all; the server waits until the client goes away.
    Hang,
    /// The reply after a delay.
    Delayed(Duration, Box<Reply>),
    /// An error with this status whose message quotes what the request
    /// said last (its last message's text) and then the credentials it
    /// came with, as a careless provider or proxy might: how a guest could
    /// place a cut of the error text inside the key.
    EchoCredentials(u16),
}

impl Reply {
    /// A text answer.
    pub fn text(text: &str) -> Reply {
        Reply::Answer {
            blocks: vec![Block::Text(text.into())],
            usage: (10, 2),
        }
    }

    /// An answer calling one tool.
    pub fn tool_use(id: &str, name: &str, input: Value) -> Reply {
        Reply::Answer {
            blocks: vec![Block::ToolUse {
                id: id.into(),
                name: name.into(),
                input,
            }],
            usage: (20, 5),
        }
    }

    /// A status reply with a body.
    pub fn status(code: u16, body: &str) -> Reply {
        Reply::Status {
            code,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// Adds a header to a status reply.
    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Status {
                code,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Reply::Status {
                    code,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    /// This reply after `d`.
    pub fn delayed(self, d: Duration) -> Reply {
        Reply::Delayed(d, Box::new(self))
    }
}

/// Ways a real OpenAI-compatible server departs from OpenAI's own, each
/// seen in llama.cpp's server ([`Quirks::LLAMA_CPP`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// A streamed tool call repeats its whole name in every chunk (OpenAI
    /// sends it once).
    pub name_in_every_chunk: bool,
    /// A stream carries no usage, whatever `stream_options` asks.
    pub no_usage_in_stream: bool,
    /// An assistant message with `"content": null` is answered with a 500
    /// (a validation error, the same every time).
    pub null_content_is_500: bool,
    /// Without a `tool_choice` the tools are dropped: a tool call scripted
    /// for the request comes back as text instead.
    pub tools_need_choice: bool,
}

impl Quirks {
    /// All of them, as llama-cpp-python 0.3.36's server behaves.
    pub const LLAMA_CPP: Quirks = Quirks {
        name_in_every_chunk: true,
        no_usage_in_stream: true,
        null_content_is_500: true,
        tools_need_choice: true,
    };
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The path (`/v1/messages`).
    pub path: String,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it was not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    api: Api,
    quirks: Quirks,
    replies: Mutex<(Vec<Reply>, usize)>,
    received: Mutex<Vec<Received>>,
    closed: Notify,
    closed_count: Mutex<usize>,
    arrived: Notify,
    prompt_cache: Option<Mutex<PromptCache>>,
}

/// A running fake provider; it stops when dropped.
pub struct FakeProvider {
    shared: Arc<Shared>,
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeProvider {
    /// Starts a server on 127.0.0.1 answering with `replies` in order (the
    /// last repeats).
    pub async fn start(api: Api, replies: Vec<Reply>) -> FakeProvider {
        FakeProvider::start_with(api, Quirks::default(), replies).await
    }

    /// [`FakeProvider::start`] with `quirks` (OpenAI side only).
    pub async fn start_with(api: Api, quirks: Quirks, replies: Vec<Reply>) -> FakeProvider {
        FakeProvider::launch(api, quirks, None, replies).await
    }

    /// An Anthropic server answering with `replies` whose usage follows
    /// Anthropic's prompt-caching rules for prefixes of at least
    /// `min_tokens` (the input tokens of each reply are replaced by the
    /// request's own count, split into cached and not).
    pub async fn start_caching(min_tokens: u64, replies: Vec<Reply>) -> FakeProvider {
        let cache = Some(PromptCache::new(min_tokens));
        FakeProvider::launch(Api::Anthropic, Quirks::default(), cache, replies).await
    }

    async fn launch(
        api: Api,
        quirks: Quirks,
        prompt_cache: Option<PromptCache>,
        replies: Vec<Reply>,
    ) -> FakeProvider {
        assert!(
            !replies.is_empty(),
            "a fake provider needs at least one reply"
        );
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            api,
            quirks,
            replies: Mutex::new((replies, 0)),
            received: Mutex::default(),
            closed: Notify::new(),
            closed_count: Mutex::new(0),
            arrived: Notify::new(),
            prompt_cache: prompt_cache.map(Mutex::new),
        });
        let s = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let _ = socket.set_nodelay(true);
                tokio::spawn(serve(s.clone(), socket));
            }
        });
        FakeProvider { shared, port, task }
    }

    /// A server giving `reply` to every request.
    pub async fn always(api: Api, reply: Reply) -> FakeProvider {
        FakeProvider::start(api, vec![reply]).await
    }

    /// The base URL a provider is given (`http://127.0.0.1:PORT`, with
    /// `/v1` for the OpenAI dialect).
    pub fn base_url(&self) -> String {
        match self.shared.api {
            Api::Anthropic => format!("http://127.0.0.1:{}", self.port),
            Api::OpenAi => format!("http://127.0.0.1:{}/v1", self.port),
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits until `n` requests have arrived.
    pub async fn until_requests(&self, n: usize) {
        loop {
            let notified = self.shared.arrived.notified();
            if self.shared.received.lock().unwrap().len() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Waits until a client has closed `n` connections while a reply was
    /// pending (a [`Reply::Hang`]).
    pub async fn until_abandoned(&self, n: usize) {
        loop {
            let notified = self.shared.closed.notified();
            if *self.shared.closed_count.lock().unwrap() >= n {
                return;
            }
            notified.await;
        }
    }
}

/// Reads one request: path, headers, body. `None` at the end of the
/// connection.
async fn read_request(
    socket: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Option<(String, Vec<(String, String)>, Vec<u8>)> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let start = head_end + 4;
    while buf.len() < start + length {
        let mut chunk = [0u8; 65536];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf[start..start + length].to_vec();
    buf.drain(..start + length);
    Some((path, headers, body))
}

async fn serve(shared: Arc<Shared>, mut socket: TcpStream) {
    let mut buf = Vec::new();
    while let Some((path, headers, body)) = read_request(&mut socket, &mut buf).await {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let echo = echo_of(&body, &headers);
        let stream = body["stream"] == true;
        let model = body["model"].as_str().unwrap_or("fake").to_string();
        let n = {
            let mut r = shared.received.lock().unwrap();
            r.push(Received {
                path,
                headers,
                body,
                at: Instant::now(),
            });
            r.len()
        };
        shared.arrived.notify_waiters();
        let reply = {
            let mut g = shared.replies.lock().unwrap();
            let (replies, next) = &mut *g;
            let r = replies[(*next).min(replies.len() - 1)].clone();
            *next += 1;
            r
        };
        let reply = match reply {
            Reply::EchoCredentials(code) => Reply::status(
                code,
                &serde_json::json!({"error": {"type": "invalid_request_error", "message": echo}})
                    .to_string(),
            ),
            other => other,
        };
        let reply = quirky(&shared, reply, &shared.received.lock().unwrap()[n - 1].body);
        let (reply, cache) = cached(&shared, reply, &shared.received.lock().unwrap()[n - 1].body);
        let keep = respond(&shared, &mut socket, reply, stream, &model, n, cache).await;
        if !keep {
            return;
        }
    }
}

/// With a prompt cache, `reply` as the cache bills `body` (a 400 for a
/// request breaking its rules) and the cache's share of the input.
fn cached(shared: &Shared, reply: Reply, body: &Value) -> (Reply, CacheUsage) {
    let Some(cache) = &shared.prompt_cache else {
        return (reply, CacheUsage::default());
    };
    match (cache.lock().unwrap().bill(body), reply) {
        (Err(e), _) => (
            Reply::status(
                400,
                &json!({"type": "error", "error": {"type": "invalid_request_error", "message": e}})
                    .to_string(),
            ),
            CacheUsage::default(),
        ),
        (Ok(c), Reply::Answer { blocks, usage }) => (
            Reply::Answer {
                blocks,
                usage: (c.input, usage.1),
            },
            c,
        ),
        (Ok(c), other) => (other, c),
    }
}

/// What the [`Quirks`] make of `reply` for a request with `body`.
fn quirky(shared: &Shared, reply: Reply, body: &Value) -> Reply {
    let q = shared.quirks;
    if shared.api != Api::OpenAi {
        return reply;
    }
    let null_content = body["messages"].as_array().is_some_and(|m| {
        m.iter()
            .any(|m| m["role"] == "assistant" && m.get("content").is_some_and(Value::is_null))
    });
    if q.null_content_is_500 && null_content {
        return Reply::status(
            500,
            r#"{"error":{"message":"7 validation errors for CreateChatCompletionRequest: messages.2.content: Input should be a valid string","type":"internal_server_error"}}"#,
        );
    }
    let no_choice = body.get("tools").is_some() && body.get("tool_choice").is_none();
    match reply {
        Reply::Answer { blocks, usage } if q.tools_need_choice && no_choice => Reply::Answer {
            blocks: blocks
                .into_iter()
                .map(|b| match b {
                    Block::ToolUse { .. } => Block::Text("Best regards".into()),
                    other => other,
                })
                .collect(),
            usage,
        },
        other => other,
    }
}

/// What a [`Reply::EchoCredentials`] says: the request's last text, then
/// its credentials.
fn echo_of(body: &Value, headers: &[(String, String)]) -> String {
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        })
        .unwrap_or_default();
    let credentials = headers
        .iter()
        .find(|(n, _)| n == "authorization" || n == "x-api-key")
        .map(|(_, v)| v.trim_start_matches("Bearer ").to_string())
        .unwrap_or_default();
    format!("cannot use '{last}' with the key {credentials}")
}

/// Writes `reply`; false when the connection must end.
async fn respond(
    shared: &Shared,
    socket: &mut TcpStream,
    reply: Reply,
    stream: bool,
    model: &str,
    n: usize,
    cache: CacheUsage,
) -> bool {
    let mut reply = reply;
    while let Reply::Delayed(d, inner) = reply {
        tokio::time::sleep(d).await;
        reply = *inner;
    }
    match reply {
        Reply::Delayed(..) | Reply::EchoCredentials(_) => unreachable!(),
        Reply::Hang => {
            // Wait for the client to go away.
            let mut byte = [0u8; 1];
            while let Ok(k) = socket.read(&mut byte).await {
                if k == 0 {
                    break;
                }
            }
            *shared.closed_count.lock().unwrap() += 1;
            shared.closed.notify_waiters();
            false
        }
        Reply::Status {
            code,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {code} Fake\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await.is_ok()
                && socket.write_all(body.as_bytes()).await.is_ok()
        }
        Reply::Malformed if !stream => whole(socket, "{this is not json").await,
        Reply::Answer { blocks, usage } if !stream => {
            let body = match shared.api {
                Api::Anthropic => anthropic_whole(&blocks, usage, cache, model, n),
                Api::OpenAi => openai_whole(&blocks, usage, model, n),
            };
            whole(socket, &body.to_string()).await
        }
        Reply::Truncated if !stream => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"id\":";
            let _ = socket.write_all(head.as_bytes()).await;
            false
        }
        Reply::Answer { blocks, usage } => {
            let events = match shared.api {
                Api::Anthropic => anthropic_events(&blocks, usage, cache, model, n),
                Api::OpenAi => openai_events(&blocks, usage, model, n, shared.quirks),
            };
            sse(socket, &events, events.len()).await
        }
        Reply::Malformed => {
            let events = vec![("message_start".to_string(), "{not json".to_string())];
            sse(socket, &events, 1).await
        }
        Reply::Truncated => {
            let events = match shared.api {
                Api::Anthropic => {
                    let cut = [Block::Text("cut short".into())];
                    anthropic_events(&cut, (1, 1), CacheUsage::default(), model, n)
                }
                Api::OpenAi => openai_events(
                    &[Block::Text("cut short".into())],
                    (1, 1),
                    model,
                    n,
                    shared.quirks,
                ),
            };
            sse(socket, &events, events.len() / 2).await;
            false
        }
    }
}

async fn whole(socket: &mut TcpStream, body: &str) -> bool {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.is_ok()
        && socket.write_all(body.as_bytes()).await.is_ok()
}

/// Writes the first `upto` events as a chunked SSE body; ends the body
/// only when all were written.
async fn sse(socket: &mut TcpStream, events: &[(String, String)], upto: usize) -> bool {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let mut out = String::new();
    for (event, data) in events.iter().take(upto) {
        let text = if event.is_empty() {
            format!("data: {data}\n\n")
        } else {
            format!("event: {event}\ndata: {data}\n\n")
        };
        out.push_str(&format!("{:x}\r\n{text}\r\n", text.len()));
    }
    if upto == events.len() {
        out.push_str("0\r\n\r\n");
    }
    socket.write_all(out.as_bytes()).await.is_ok() && upto == events.len()
}

fn anthropic_block(b: &Block) -> Value {
    match b {
        Block::Text(t) => json!({"type": "text", "text": t}),
        Block::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Block::Thinking { text, signature } => {
            json!({"type": "thinking", "thinking": text, "signature": signature})
        }
    }
}

fn stop(blocks: &[Block]) -> bool {
    blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }))
}

fn anthropic_whole(
    blocks: &[Block],
    (input, output): (u64, u64),
    cache: CacheUsage,
    model: &str,
    n: usize,
) -> Value {
    json!({
        "id": format!("msg_fake_{n}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks.iter().map(anthropic_block).collect::<Vec<_>>(),
        "stop_reason": if stop(blocks) { "tool_use" } else { "end_turn" },
        "usage": {"input_tokens": input, "output_tokens": output, "cache_read_input_tokens": cache.read, "cache_creation_input_tokens": cache.written},
    })
}

fn anthropic_events(
    blocks: &[Block],
    (input, output): (u64, u64),
    cache: CacheUsage,
    model: &str,
    n: usize,
) -> Vec<(String, String)> {
    let mut e = vec![(
        "message_start".to_string(),
        json!({"type": "message_start", "message": {"id": format!("msg_fake_{n}"), "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "usage": {"input_tokens": input, "output_tokens": 1, "cache_read_input_tokens": cache.read, "cache_creation_input_tokens": cache.written}}}).to_string(),
    )];
    e.push(("ping".into(), json!({"type": "ping"}).to_string()));
    for (i, b) in blocks.iter().enumerate() {
        let (start, deltas): (Value, Vec<Value>) = match b {
            Block::Text(t) => {
                let (a, z) = t.split_at(t.len() / 2);
                (
                    json!({"type": "text", "text": ""}),
                    vec![
                        json!({"type": "text_delta", "text": a}),
                        json!({"type": "text_delta", "text": z}),
                    ],
                )
            }
            Block::ToolUse { id, name, input } => {
                let s = input.to_string();
                let (a, z) = s.split_at(s.len() / 2);
                (
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    vec![
                        json!({"type": "input_json_delta", "partial_json": a}),
                        json!({"type": "input_json_delta", "partial_json": z}),
                    ],
                )
            }
            Block::Thinking { text, signature } => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": text}),
                    json!({"type": "signature_delta", "signature": signature}),
                ],
            ),
        };
        e.push((
            "content_block_start".into(),
            json!({"type": "content_block_start", "index": i, "content_block": start}).to_string(),
        ));
        for d in deltas {
            e.push((
                "content_block_delta".into(),
                json!({"type": "content_block_delta", "index": i, "delta": d}).to_string(),
            ));
        }
        e.push((
            "content_block_stop".into(),
            json!({"type": "content_block_stop", "index": i}).to_string(),
        ));
    }
    e.push((
        "message_delta".into(),
        json!({"type": "message_delta", "delta": {"stop_reason": if stop(blocks) { "tool_use" } else { "end_turn" }, "stop_sequence": null}, "usage": {"output_tokens": output}}).to_string(),
    ));
    e.push((
        "message_stop".into(),
        json!({"type": "message_stop"}).to_string(),
    ));
    e
}

fn openai_whole(blocks: &[Block], (input, output): (u64, u64), model: &str, n: usize) -> Value {
    let text: String = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some(json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}})),
            _ => None,
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": format!("chatcmpl-fake-{n}"),
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": if stop(blocks) { "tool_calls" } else { "stop" }}],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output, "prompt_tokens_details": {"cached_tokens": 0}},
    })
}

fn openai_events(
    blocks: &[Block],
    (input, output): (u64, u64),
    model: &str,
    n: usize,
    quirks: Quirks,
) -> Vec<(String, String)> {
    let id = format!("chatcmpl-fake-{n}");
    let chunk = |delta: Value, finish: Value| {
        (String::new(), json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
    };
    let mut e = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut call = 0;
    for b in blocks {
        match b {
            Block::Text(t) => {
                let (a, z) = t.split_at(t.len() / 2);
                e.push(chunk(json!({"content": a}), Value::Null));
                e.push(chunk(json!({"content": z}), Value::Null));
            }
            Block::ToolUse { id, name, input } => {
                let s = input.to_string();
                let (a, z) = s.split_at(s.len() / 2);
                e.push(chunk(json!({"tool_calls": [{"index": call, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}), Value::Null));
                for part in [a, z] {
                    let mut function = json!({"arguments": part});
                    if quirks.name_in_every_chunk {
                        function["name"] = json!(name);
                    }
                    e.push(chunk(
                        json!({"tool_calls": [{"index": call, "function": function}]}),
                        Value::Null,
                    ));
                }
                call += 1;
            }
            Block::Thinking { .. } => {}
        }
    }
    e.push(chunk(
        json!({}),
        json!(if stop(blocks) { "tool_calls" } else { "stop" }),
    ));
    if !quirks.no_usage_in_stream {
        e.push((
        String::new(),
        json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output, "prompt_tokens_details": {"cached_tokens": 0}}}).to_string(),
    ));
    }
    e.push((String::new(), "[DONE]".into()));
    e
}
