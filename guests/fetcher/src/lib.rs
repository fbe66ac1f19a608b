//! `fetcher`: a test teammate that imports `wasi:http/outgoing-handler`,
//! which the host links only for a teammate whose `[teammate.network]`
//! grants `allowed_outbound_hosts`.
//!
//! | turn kind          | what fetcher does                                           |
//! |--------------------|-------------------------------------------------------------|
//! | `initial`          | a spawn prompt `get URL` is fetched and answered to whoever wrote it |
//! | `message`          | each plain message `get URL`: one GET request; answers its sender `status N BODY` (the whole body read, its first 64 KiB answered, as UTF-8 with losses) or `error TEXT` (the error code as the host gave it); anything else is logged to stderr and not answered |
//! | `shutdown-request` | approves                                                    |
//! | `task-claimed`     | does no work: reports the task as failed                    |
//!
//! Build: `cargo build --release` in `guests/`.

wit_bindgen::generate!({
    inline: "
        package teamhost:fetcher;
        world fetcher {
            include teamhost:agent/teammate@0.1.0;
            import wasi:http/outgoing-handler@0.2.12;
        }
    ",
    // The teamhost package (with its WASI deps), then wasi:http beside it.
    path: ["../../wit", "wit/http.wit"],
    world: "teamhost:fetcher/fetcher",
    generate_all,
});

use exports::teamhost::agent::handler::{Guest, TaskReport, Turn, TurnKind, TurnOutcome};
use teamhost::agent::messaging;
use teamhost::agent::protocol::{CompletedStatus, ShutdownResponse};
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

/// The most bytes of a body read.
const MAX_BODY: usize = 64 * 1024;

struct Fetcher;

impl Guest for Fetcher {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        match turn.kind {
            TurnKind::Initial | TurnKind::Message => {
                if turn.messages.is_empty() && turn.prompt.starts_with("get ") {
                    answer(&turn.from, &turn.prompt);
                }
                for message in &turn.messages {
                    if message.protocol.is_none() {
                        answer(&message.from, &message.text);
                    }
                }
                Ok(TurnOutcome { task: None })
            }
            TurnKind::ShutdownRequest(request) => {
                messaging::respond_shutdown(&request.request_id, &ShutdownResponse::Approve)
                    .map_err(|e| format!("cannot approve shutdown: {e:?}"))?;
                Ok(TurnOutcome { task: None })
            }
            TurnKind::TaskClaimed(task) => Ok(TurnOutcome {
                task: Some(TaskReport {
                    task_id: task.id,
                    status: CompletedStatus::Failed,
                    reason: Some("fetcher only answers `get URL` messages".into()),
                }),
            }),
        }
    }
}

/// Fetches what `text` asks for and tells `to` (a sender that cannot be
/// answered is logged).
fn answer(to: &str, text: &str) {
    let Some(url) = text.strip_prefix("get ") else {
        eprintln!("fetcher: {text:?} is not `get URL`; not answered");
        return;
    };
    let reply = match get(url.trim()) {
        Ok((status, body)) => format!("status {status} {body}"),
        Err(why) => format!("error {why}"),
    };
    if let Err(e) = messaging::send(to, &reply, Some("fetcher")) {
        eprintln!("fetcher: cannot answer {to}: {e:?}");
    }
}

/// One GET of `url` (`http://` or `https://`): the status and the body.
fn get(url: &str) -> Result<(u16, String), String> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(format!("{url:?} is not an http:// or https:// URL")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request
        .set_scheme(Some(&scheme))
        .map_err(|_| "the scheme was refused".to_string())?;
    request
        .set_authority(Some(authority))
        .map_err(|_| format!("the authority {authority:?} was refused"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|_| format!("the path {path:?} was refused"))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(format!("{e:?}")),
        Some(Err(())) => return Err("the response was taken already".into()),
        None => return Err("the response is not ready after its pollable was".into()),
    };
    drop(pending);
    let status = response.status();
    let body = response
        .consume()
        .map_err(|_| "the body was taken already".to_string())?;
    let stream = body
        .stream()
        .map_err(|_| "the body's stream was taken already".to_string())?;
    // The whole body is read (a cut in it is an error), its first
    // MAX_BODY bytes kept.
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(MAX_BODY as u64) {
            Ok(chunk) => {
                let room = MAX_BODY - bytes.len();
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body failed: {}", e.to_debug_string()))
            }
        }
    }
    // A child resource goes before its parent.
    drop(stream);
    drop(body);
    drop(response);
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

export!(Fetcher);
