//! A model's tool call, from its JSON text to a typed [`Call`].
//!
//! Models write anything: the input may not be JSON, not an object, miss a
//! field or give it the wrong type. Each of those is an error text that
//! says what to write instead, so the model can correct itself. Fields a
//! tool does not know are ignored, as Claude Code does. Both forms of
//! SendMessage are accepted: the current `{to, message, summary}` (where
//! `message` may be a protocol object) and the older `{type, recipient,
//! content, summary, request_id, approve}`.

use serde_json::{Map, Value};

/// How Grep shows what it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrepMode {
    /// Matching lines.
    Content,
    /// The files (the default).
    FilesWithMatches,
    /// Matches per file.
    Count,
}

/// A status TaskUpdate may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateStatus {
    Pending,
    InProgress,
    Completed,
    /// Deletes the task.
    Deleted,
}

/// What a SendMessage call asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendCall {
    /// A text to one member, or to everyone when `to` is `*`.
    Text {
        to: String,
        text: String,
        summary: Option<String>,
    },
    /// Ask `to` to shut down.
    ShutdownRequest { to: String, reason: Option<String> },
    /// Answer a shutdown request.
    ShutdownResponse {
        request_id: String,
        approve: bool,
        reason: Option<String>,
    },
    /// Answer `to`'s plan approval request.
    PlanResponse {
        to: String,
        request_id: String,
        approve: bool,
        feedback: Option<String>,
    },
}

/// TaskUpdate's changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskUpdateCall {
    pub id: String,
    pub subject: Option<String>,
    pub description: Option<String>,
    pub active_form: Option<String>,
    pub status: Option<UpdateStatus>,
    pub add_blocks: Vec<String>,
    pub add_blocked_by: Vec<String>,
    /// `Some("")` unassigns.
    pub owner: Option<String>,
    /// A JSON object as text.
    pub metadata: Option<String>,
}

/// A parsed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Read {
        file_path: String,
        offset: Option<u64>,
        limit: Option<u64>,
    },
    Write {
        file_path: String,
        content: String,
    },
    Edit {
        file_path: String,
        old_string: String,
        new_string: String,
        replace_all: bool,
    },
    Glob {
        pattern: String,
        path: Option<String>,
    },
    Grep {
        pattern: String,
        path: Option<String>,
        glob: Option<String>,
        mode: GrepMode,
        case_insensitive: bool,
        head_limit: Option<usize>,
        offset: usize,
    },
    Bash {
        command: String,
        timeout_ms: Option<u64>,
    },
    /// `WebFetch`: a page through the teammate's network.
    WebFetch {
        url: String,
        prompt: String,
    },
    Send(SendCall),
    TaskCreate {
        subject: String,
        description: String,
        active_form: Option<String>,
        metadata: Option<String>,
    },
    TaskGet {
        id: String,
    },
    TaskList,
    TaskUpdate(TaskUpdateCall),
    Agent(AgentCall),
    /// TaskOutput: a background agent's state, waiting up to `timeout_ms`
    /// when `block`.
    TaskOutput {
        task_id: String,
        block: bool,
        timeout_ms: u64,
    },
    /// TaskStop: stop a background agent.
    TaskStop {
        task_id: String,
    },
}

/// The `Agent` tool's input (seed 003, "AgentTool 输入参数").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCall {
    pub description: String,
    pub prompt: String,
    pub subagent_type: Option<String>,
    pub model: Option<String>,
    pub run_in_background: bool,
    pub name: Option<String>,
    /// `isolation: "worktree"`.
    pub worktree: bool,
}

/// The fields of one call's input, with typed getters whose errors name
/// the tool and the field (the lead's tools read theirs with it too).
pub(super) struct Fields<'a> {
    pub(super) tool: &'a str,
    pub(super) map: &'a Map<String, Value>,
}

impl Fields<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(super) fn str_opt(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "{}: `{key}` must be a string, not {}",
                self.tool,
                kind(other)
            )),
        }
    }

    pub(super) fn str_req(&self, key: &str) -> Result<String, String> {
        self.str_opt(key)?.ok_or_else(|| {
            format!(
                "{}: the required field `{key}` (a string) is missing",
                self.tool
            )
        })
    }

    fn u64_opt(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
                format!("{}: `{key}` must be a whole number ≥ 0, not {n}", self.tool)
            }),
            // Models often quote numbers.
            Some(Value::String(s)) => {
                s.trim().parse::<u64>().map(Some).map_err(|_| {
                    format!("{}: `{key}` must be a whole number, not {s:?}", self.tool)
                })
            }
            Some(other) => Err(format!(
                "{}: `{key}` must be a number, not {}",
                self.tool,
                kind(other)
            )),
        }
    }

    pub(super) fn bool_opt(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(other) => Err(format!(
                "{}: `{key}` must be true or false, not {}",
                self.tool,
                kind(other)
            )),
        }
    }

    /// An answer must say yes or no: a missing field is not a "no".
    pub(super) fn bool_req(&self, key: &str) -> Result<bool, String> {
        self.bool_opt(key)?.ok_or_else(|| {
            format!(
                "{}: the required field `{key}` (true or false) is missing",
                self.tool
            )
        })
    }

    /// A task id: a string, or a number written without quotes.
    fn id(&self, key: &str) -> Result<String, String> {
        match self.get(key) {
            Some(Value::Number(n)) => Ok(n.to_string()),
            _ => self
                .str_req(key)
                .map(|s| s.trim().trim_start_matches('#').to_string()),
        }
    }

    fn ids(&self, key: &str) -> Result<Vec<String>, String> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim().trim_start_matches('#').to_string()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(format!(
                        "{}: `{key}` must list task ids, not {}",
                        self.tool,
                        kind(other)
                    )),
                })
                .collect(),
            Some(other) => Err(format!(
                "{}: `{key}` must be a list of task ids, not {}",
                self.tool,
                kind(other)
            )),
        }
    }

    fn object_text(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v.to_string())),
            Some(other) => Err(format!(
                "{}: `{key}` must be a JSON object, not {}",
                self.tool,
                kind(other)
            )),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The tool names [`parse`] knows.
pub const NAMES: [&str; 15] = [
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "Bash",
    "SendMessage",
    "TaskCreate",
    "TaskGet",
    "TaskUpdate",
    "TaskList",
    "Agent",
    "TaskOutput",
    "TaskStop",
    "WebFetch",
];

/// Reads the call of tool `name` with JSON `input`.
pub fn parse(name: &str, input: &str) -> Result<Call, String> {
    if !NAMES.contains(&name) {
        let shown: String = name.chars().take(64).collect();
        return Err(format!(
            "there is no tool {shown:?}; the tools are {}",
            NAMES.join(", ")
        ));
    }
    let value: Value = if input.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(input).map_err(|e| {
            format!("{name}: the input is not valid JSON ({e}); write one JSON object with the tool's fields")
        })?
    };
    let Value::Object(map) = &value else {
        return Err(format!(
            "{name}: the input must be a JSON object with the tool's fields, not {}",
            kind(&value)
        ));
    };
    let f = Fields { tool: name, map };
    Ok(match name {
        "Read" => Call::Read {
            file_path: f.str_req("file_path")?,
            offset: f.u64_opt("offset")?,
            limit: f.u64_opt("limit")?,
        },
        "Write" => Call::Write {
            file_path: f.str_req("file_path")?,
            content: f.str_req("content")?,
        },
        "Edit" => Call::Edit {
            file_path: f.str_req("file_path")?,
            old_string: f.str_req("old_string")?,
            new_string: f.str_req("new_string")?,
            replace_all: f.bool_opt("replace_all")?.unwrap_or(false),
        },
        "Glob" => Call::Glob {
            pattern: f.str_req("pattern")?,
            path: search_path(f.str_opt("path")?),
        },
        "Grep" => Call::Grep {
            pattern: f.str_req("pattern")?,
            path: search_path(f.str_opt("path")?),
            glob: f.str_opt("glob")?,
            mode: match f.str_opt("output_mode")?.as_deref() {
                None | Some("files_with_matches") => GrepMode::FilesWithMatches,
                Some("content") => GrepMode::Content,
                Some("count") => GrepMode::Count,
                Some(other) => {
                    return Err(format!(
                        "Grep: `output_mode` {other:?} is unknown; use content, files_with_matches or count"
                    ))
                }
            },
            case_insensitive: f.bool_opt("-i")?.unwrap_or(false),
            head_limit: f.u64_opt("head_limit")?.filter(|&n| n > 0).map(|n| n as usize),
            offset: f.u64_opt("offset")?.unwrap_or(0) as usize,
        },
        "Bash" => {
            if f.bool_opt("run_in_background")? == Some(true) {
                return Err("Bash: run_in_background is not available here; run the command in the foreground".into());
            }
            Call::Bash {
                command: f.str_req("command")?,
                timeout_ms: f.u64_opt("timeout")?,
            }
        }
        "WebFetch" => Call::WebFetch {
            url: f.str_req("url")?,
            prompt: f.str_req("prompt")?,
        },
        "SendMessage" => Call::Send(send(&f)?),
        "TaskCreate" => Call::TaskCreate {
            subject: f.str_req("subject")?,
            description: f.str_req("description")?,
            active_form: f.str_opt("activeForm")?,
            metadata: f.object_text("metadata")?,
        },
        "TaskGet" => Call::TaskGet { id: f.id("taskId")? },
        "TaskOutput" => Call::TaskOutput {
            task_id: f.str_req("task_id")?,
            block: f.bool_opt("block")?.unwrap_or(true),
            timeout_ms: f.u64_opt("timeout")?.unwrap_or(30_000).min(600_000),
        },
        // `shell_id` is the reference's older name for it.
        "TaskStop" => Call::TaskStop {
            task_id: match f.str_opt("task_id")? {
                Some(id) => id,
                None => f.str_opt("shell_id")?.ok_or_else(|| {
                    "TaskStop: the required field `task_id` (a string) is missing".to_string()
                })?,
            },
        },
        "Agent" => Call::Agent(AgentCall {
            description: f.str_req("description")?,
            prompt: f.str_req("prompt")?,
            subagent_type: f.str_opt("subagent_type")?.filter(|s| !s.trim().is_empty()),
            model: f.str_opt("model")?.filter(|s| !s.trim().is_empty()),
            run_in_background: f.bool_opt("run_in_background")?.unwrap_or(false),
            name: f.str_opt("name")?.filter(|s| !s.trim().is_empty()),
            worktree: match f.str_opt("isolation")?.as_deref() {
                None | Some("") => false,
                Some("worktree") => true,
                Some(other) => {
                    return Err(format!(
                        "Agent: `isolation` {other:?} is not supported; use \"worktree\" or leave it out"
                    ))
                }
            },
        }),
        "TaskList" => Call::TaskList,
        "TaskUpdate" => Call::TaskUpdate(TaskUpdateCall {
            id: f.id("taskId")?,
            subject: f.str_opt("subject")?,
            description: f.str_opt("description")?,
            active_form: f.str_opt("activeForm")?,
            status: match f.str_opt("status")?.as_deref() {
                None => None,
                Some("pending") => Some(UpdateStatus::Pending),
                Some("in_progress") => Some(UpdateStatus::InProgress),
                Some("completed") => Some(UpdateStatus::Completed),
                Some("deleted") => Some(UpdateStatus::Deleted),
                Some(other) => {
                    return Err(format!(
                        "TaskUpdate: `status` {other:?} is unknown; use pending, in_progress, completed or deleted"
                    ))
                }
            },
            add_blocks: f.ids("addBlocks")?,
            add_blocked_by: f.ids("addBlockedBy")?,
            owner: f.str_opt("owner")?,
            metadata: f.object_text("metadata")?,
        }),
        _ => unreachable!("checked against NAMES"),
    })
}

/// A search path a model left empty in one of the ways models do.
fn search_path(path: Option<String>) -> Option<String> {
    path.filter(|p| !matches!(p.trim(), "" | "." | "undefined" | "null"))
}

fn send(f: &Fields<'_>) -> Result<SendCall, String> {
    // The older form: {type, recipient, content, summary, request_id, approve}.
    if f.get("to").is_none() && f.get("type").is_some() {
        let kind = f.str_req("type")?;
        let recipient = || f.str_req("recipient");
        return match kind.as_str() {
            "message" => Ok(SendCall::Text {
                to: recipient()?,
                text: f.str_req("content")?,
                summary: f.str_opt("summary")?,
            }),
            "broadcast" => Ok(SendCall::Text {
                to: "*".into(),
                text: f.str_req("content")?,
                summary: f.str_opt("summary")?,
            }),
            "shutdown_request" => Ok(SendCall::ShutdownRequest {
                to: recipient()?,
                reason: f.str_opt("content")?,
            }),
            "shutdown_response" => Ok(SendCall::ShutdownResponse {
                request_id: f.str_req("request_id")?,
                approve: f.bool_opt("approve")?.unwrap_or(false),
                reason: f.str_opt("content")?,
            }),
            "plan_approval_response" => Ok(SendCall::PlanResponse {
                to: recipient()?,
                request_id: f.str_req("request_id")?,
                approve: f.bool_opt("approve")?.unwrap_or(false),
                feedback: f.str_opt("content")?,
            }),
            other => Err(format!(
                "SendMessage: `type` {other:?} is unknown; use message, broadcast, shutdown_request, shutdown_response or plan_approval_response"
            )),
        };
    }
    let to = f.str_req("to")?;
    match f.get("message") {
        None => Err("SendMessage: the required field `message` is missing".into()),
        Some(Value::String(text)) => Ok(SendCall::Text {
            to,
            text: text.clone(),
            summary: f.str_opt("summary")?,
        }),
        Some(Value::Object(m)) => {
            let inner = Fields {
                tool: "SendMessage",
                map: m,
            };
            match inner.str_req("type")?.as_str() {
                "shutdown_request" => Ok(SendCall::ShutdownRequest {
                    to,
                    reason: inner.str_opt("reason")?,
                }),
                "shutdown_response" => Ok(SendCall::ShutdownResponse {
                    request_id: inner.str_req("request_id")?,
                    approve: inner.bool_opt("approve")?.unwrap_or(false),
                    reason: inner.str_opt("reason")?,
                }),
                "plan_approval_response" => Ok(SendCall::PlanResponse {
                    to,
                    request_id: inner.str_req("request_id")?,
                    approve: inner.bool_opt("approve")?.unwrap_or(false),
                    feedback: inner.str_opt("feedback")?,
                }),
                other => Err(format!(
                    "SendMessage: message type {other:?} is unknown; send text, or shutdown_request, shutdown_response, plan_approval_response"
                )),
            }
        }
        Some(other) => Err(format!(
            "SendMessage: `message` must be text or a protocol object, not {}",
            kind(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_with_the_references_names_and_unknown_ones_ignored() {
        assert_eq!(
            parse("Read", r#"{"file_path":"a.py","offset":"3","pages":"1-2"}"#).unwrap(),
            Call::Read {
                file_path: "a.py".into(),
                offset: Some(3),
                limit: None
            }
        );
        assert_eq!(
            parse(
                "TaskUpdate",
                r##"{"taskId":2,"status":"completed","addBlockedBy":["#1"]}"##
            )
            .unwrap(),
            Call::TaskUpdate(TaskUpdateCall {
                id: "2".into(),
                status: Some(UpdateStatus::Completed),
                add_blocked_by: vec!["1".into()],
                ..TaskUpdateCall::default()
            })
        );
        assert_eq!(
            parse("Glob", r#"{"pattern":"*.rs","path":"undefined"}"#).unwrap(),
            Call::Glob {
                pattern: "*.rs".into(),
                path: None
            }
        );
    }

    #[test]
    fn both_forms_of_send_message_are_understood() {
        let new = parse(
            "SendMessage",
            r#"{"to":"lead","message":"hi","summary":"s"}"#,
        )
        .unwrap();
        let old = parse(
            "SendMessage",
            r#"{"type":"message","recipient":"lead","content":"hi","summary":"s"}"#,
        )
        .unwrap();
        assert_eq!(new, old);
        assert_eq!(
            parse("SendMessage", r#"{"to":"team-lead","message":{"type":"shutdown_response","request_id":"r1","approve":true}}"#).unwrap(),
            Call::Send(SendCall::ShutdownResponse { request_id: "r1".into(), approve: true, reason: None })
        );
        assert_eq!(
            parse("SendMessage", r#"{"type":"broadcast","content":"all"}"#).unwrap(),
            Call::Send(SendCall::Text {
                to: "*".into(),
                text: "all".into(),
                summary: None
            })
        );
    }

    #[test]
    fn bad_input_gets_an_error_a_model_can_act_on() {
        let e = parse("Read", "{not json").unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        let e = parse("Read", "[1,2]").unwrap_err();
        assert!(
            e.contains("must be a JSON object") && e.contains("a list"),
            "{e}"
        );
        let e = parse("Edit", r#"{"file_path":"a"}"#).unwrap_err();
        assert!(e.contains("`old_string`") && e.contains("missing"), "{e}");
        let e = parse("Read", r#"{"file_path":7}"#).unwrap_err();
        assert!(e.contains("must be a string, not a number"), "{e}");
        let e = parse("Read", r#"{"file_path":"a","limit":-1}"#).unwrap_err();
        assert!(e.contains("whole number"), "{e}");
        let e = parse("rm -rf /", "{}").unwrap_err();
        assert!(
            e.contains("there is no tool") && e.contains("TaskList"),
            "{e}"
        );
        let e = parse("Bash", r#"{"command":"sleep 9","run_in_background":true}"#).unwrap_err();
        assert!(e.contains("foreground"), "{e}");
    }

    #[test]
    fn the_agent_tool_reads_the_references_fields() {
        let call = parse(
            "Agent",
            r#"{"description":"d","prompt":"p","subagent_type":"x","run_in_background":true,"isolation":"worktree","name":"n"}"#,
        )
        .unwrap();
        let Call::Agent(a) = call else {
            panic!("{call:?}")
        };
        assert!(a.run_in_background && a.worktree);
        assert_eq!(
            (a.subagent_type.as_deref(), a.name.as_deref()),
            (Some("x"), Some("n"))
        );
        let e = parse(
            "Agent",
            r#"{"description":"d","prompt":"p","isolation":"remote"}"#,
        )
        .unwrap_err();
        assert!(e.contains("remote") && e.contains("worktree"), "{e}");
        assert!(parse("Agent", r#"{"description":"d"}"#)
            .unwrap_err()
            .contains("prompt"));
    }
}
