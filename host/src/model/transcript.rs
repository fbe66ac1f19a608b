//! The conversation the host keeps for one agent, so that an LLM teammate
//! whose host died (or a sub-agent that finished) can pick up where it was.
//!
//! A teammate keeps its conversation in its own memory and sends all of it
//! with each `model.complete`; that memory dies with its instance. After
//! each successful completion the broker writes the request's messages and
//! the answer (as the last, assistant, message) to one JSON file, replaced
//! atomically and synced ([`Transcript::keep`]; the version before last
//! stays beside it as `{file}.spare`, written over by the next call):
//!
//! ```json
//! {"version":1,"messages":[{"role":"user","content":[{"text":"…"}]}, …]}
//! ```
//!
//! The file lives in the host's machine-local home
//! (`transcripts/{team}/{name}.json`, chosen by the backend), never in a
//! teammate's directory: a teammate reads it back only through
//! `model.history`, and only its own. Its size is bounded by what the
//! broker accepts per request ([`super::broker::MAX_REQUEST_BYTES`]) plus
//! one answer.
//!
//! [`Transcript::load`] gives the conversation back ready to continue: when
//! the last answer asked for tools, their results were never kept (the host
//! may have died while they ran), so each such call is answered with an
//! error result that says so, and the model decides whether to run it again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::types::{ContentBlock, Message, Request, Response, Role, ToolResult};

/// What a restored conversation says of a tool call whose result was lost.
pub const LOST_RESULT: &str = "unknown: the host stopped (a crash or a restart) while this tool call ran, so its result was not kept; check the call's effects before repeating it";

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    messages: Vec<Message>,
}

/// One agent's kept conversation, at a path the host chose.
#[derive(Debug, Clone)]
pub struct Transcript {
    path: PathBuf,
}

impl Transcript {
    /// The transcript kept at `path` (which need not exist yet).
    pub fn at(path: impl Into<PathBuf>) -> Transcript {
        Transcript { path: path.into() }
    }

    /// Where it is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the kept conversation with `request`'s messages followed by
    /// `response` as the assistant's message. Written over the file's spare
    /// (the version before last), flushed to disk, then exchanged with the
    /// file ([`crate::durable::stage_in_spare`]): a crash leaves the old or
    /// the new conversation, never a mix, and no file is made or freed per
    /// call. The flush is shared with every other file waiting for one at
    /// the same moment ([`crate::durable::commit_grouped`]): a thousand
    /// teammates calling at once do not queue on a thousand flushes. The
    /// file work runs off the async threads.
    pub async fn keep(&self, request: Request, response: &Response) -> std::io::Result<()> {
        let mut messages = request.messages;
        messages.push(Message {
            role: Role::Assistant,
            content: response.content.clone(),
        });
        let path = self.path.clone();
        let blocking = |e: tokio::task::JoinError| std::io::Error::other(e);
        let staged = tokio::task::spawn_blocking(move || {
            let body = serde_json::to_vec(&OnDisk {
                version: 1,
                messages,
            })
            .map_err(std::io::Error::other)?;
            crate::durable::stage_in_spare(&path, &body).map_err(std::io::Error::other)
        })
        .await
        .map_err(blocking)??;
        crate::durable::commit_grouped(staged)
            .await
            .map_err(std::io::Error::other)
    }

    /// The kept conversation, ready to continue (see the module docs);
    /// empty when nothing was kept. A file that cannot be read as a
    /// transcript is an error naming it: the caller decides whether to start
    /// afresh.
    pub fn load(&self) -> Result<Vec<Message>, String> {
        // A checking read: the file's spare, rewritten in place, may be
        // what an earlier open found (see `keep`).
        let on_disk: OnDisk = match crate::durable::read_json(&self.path) {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(Vec::new()),
            Err(crate::error::Error::Corrupt { source, .. }) => {
                return Err(format!(
                    "{} is not a transcript: {source}",
                    self.path.display()
                ))
            }
            Err(e) => return Err(e.to_string()),
        };
        let mut messages = on_disk.messages;
        answer_lost_calls(&mut messages);
        Ok(messages)
    }

    /// The kept conversation exactly as kept: a last answer's tool calls
    /// left unanswered (a fork answers them its own way); empty when
    /// nothing was kept.
    pub fn load_as_kept(&self) -> Result<Vec<Message>, String> {
        match crate::durable::read_json::<OnDisk>(&self.path) {
            Ok(Some(d)) => Ok(d.messages),
            Ok(None) => Ok(Vec::new()),
            Err(e) => Err(format!("{} is not a transcript: {e}", self.path.display())),
        }
    }

    /// Replaces the kept conversation with `messages`, synced (a fork's
    /// starting point, written before its first call).
    pub fn replace(&self, messages: Vec<Message>) -> Result<(), String> {
        crate::durable::write_json(
            &self.path,
            &OnDisk {
                version: 1,
                messages,
            },
        )
        .map_err(|e| e.to_string())
    }

    /// Forgets the conversation (a teammate that ends cleanly, or one
    /// spawned afresh under a name used before). A missing file is fine.
    pub fn remove(&self) -> std::io::Result<()> {
        for path in [crate::durable::spare_path(&self.path), self.path.clone()] {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}

/// When the last message asks for tools, appends a user message that
/// answers each call with [`LOST_RESULT`].
fn answer_lost_calls(messages: &mut Vec<Message>) {
    answer_calls(messages, LOST_RESULT, true);
}

/// When the last message asks for tools, appends a user message that
/// answers each call with `text` (an error result when `is_error`).
pub fn answer_calls(messages: &mut Vec<Message>, text: &str, is_error: bool) {
    let Some(last) = messages.last().filter(|m| m.role == Role::Assistant) else {
        return;
    };
    let lost: Vec<ContentBlock> = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(ContentBlock::ToolResult(ToolResult {
                tool_use_id: u.id.clone(),
                content: text.to_string(),
                is_error,
            })),
            _ => None,
        })
        .collect();
    if !lost.is_empty() {
        messages.push(Message {
            role: Role::User,
            content: lost,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{StopReason, ToolUse, Usage};

    fn text(role: Role, t: &str) -> Message {
        Message {
            role,
            content: vec![ContentBlock::Text(t.into())],
        }
    }

    fn keep(t: &Transcript, request: &Request, response: &Response) -> std::io::Result<()> {
        let request = request.clone();
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(t.keep(request, response))
    }

    fn answer(content: Vec<ContentBlock>) -> Response {
        Response {
            id: "msg_1".into(),
            model: "m".into(),
            content,
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        }
    }

    #[test]
    fn keeps_the_request_and_the_answer_and_replaces_them() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcript::at(dir.path().join("t/alice.json"));
        assert_eq!(t.load().unwrap(), Vec::new());
        let req = Request::new(vec![text(Role::User, "hi")]);
        keep(&t, &req, &answer(vec![ContentBlock::Text("hello".into())])).unwrap();
        assert_eq!(
            t.load().unwrap(),
            vec![text(Role::User, "hi"), text(Role::Assistant, "hello")]
        );
        let mut longer = t.load().unwrap();
        longer.push(text(Role::User, "more"));
        keep(
            &t,
            &Request::new(longer),
            &answer(vec![ContentBlock::Text("ok".into())]),
        )
        .unwrap();
        assert_eq!(t.load().unwrap().len(), 4);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("t"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        // The version before last stays as the spare the next keep writes
        // over (`durable::stage_in_spare`).
        let mut leftovers = leftovers;
        leftovers.sort();
        assert_eq!(leftovers, vec!["alice.json", "alice.json.spare"]);
        t.remove().unwrap();
        t.remove().unwrap();
        assert_eq!(std::fs::read_dir(dir.path().join("t")).unwrap().count(), 0);
        assert_eq!(t.load().unwrap(), Vec::new());
    }

    #[test]
    fn a_call_whose_result_was_lost_is_answered_as_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcript::at(dir.path().join("a.json"));
        let uses = vec![
            ContentBlock::Text("running".into()),
            ContentBlock::ToolUse(ToolUse {
                id: "tu_1".into(),
                name: "Bash".into(),
                input: "{}".into(),
            }),
        ];
        keep(
            &t,
            &Request::new(vec![text(Role::User, "go")]),
            &answer(uses),
        )
        .unwrap();
        let back = t.load().unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[2].role, Role::User);
        assert!(matches!(
            &back[2].content[..],
            [ContentBlock::ToolResult(r)] if r.tool_use_id == "tu_1" && r.is_error && r.content == LOST_RESULT
        ));
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.json");
        std::fs::write(&p, b"{not json").unwrap();
        let e = Transcript::at(&p).load().unwrap_err();
        assert!(
            e.contains("bad.json") && e.contains("not a transcript"),
            "{e}"
        );
    }
}
