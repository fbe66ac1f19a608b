//! The tool definitions a model is given: a name, teamhost's own
//! description, and a JSON Schema of the input with Claude Code's field
//! names (`file_path`, `old_string`, `taskId`, `activeForm`, …) and required
//! lists.

use serde_json::{json, Value};

use crate::model::ToolDefinition;
use crate::sandbox::ToolName;

/// One tool of the toolbox.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The sandbox's name for it (what rules and modes decide on).
    pub tool: ToolName,
    /// The name the model calls it by (the sandbox's, but for TaskOutput
    /// and TaskStop, which the `Agent` rule decides).
    pub name: &'static str,
    /// What the model is told it does.
    pub description: &'static str,
    /// Its input schema.
    pub schema: fn() -> Value,
}

/// Every tool, in the order a model is given them.
pub const TOOLS: [ToolSpec; 15] = [
    ToolSpec {
        tool: ToolName::Read,
        name: "Read",
        description: "Read a text file in your working directory. Lines come numbered (`cat -n` style, starting at 1). Long files come in pieces: pass `offset` (the first line to show) and `limit` (how many lines) to read further.",
        schema: read_schema,
    },
    ToolSpec {
        tool: ToolName::Write,
        name: "Write",
        description: "Write a file in your working directory, replacing it whole if it exists. Prefer Edit for changing part of an existing file.",
        schema: write_schema,
    },
    ToolSpec {
        tool: ToolName::Edit,
        name: "Edit",
        description: "Replace exact text in a file: `old_string` must occur exactly once (or set `replace_all`), and differ from `new_string`. Read the file first so the text matches, including indentation.",
        schema: edit_schema,
    },
    ToolSpec {
        tool: ToolName::Glob,
        name: "Glob",
        description: "Find files by name pattern (`**/*.rs`, `src/*.py`). Returns matching paths, one per line.",
        schema: glob_schema,
    },
    ToolSpec {
        tool: ToolName::Grep,
        name: "Grep",
        description: "Search file contents with a regular expression. `output_mode` is `files_with_matches` (default: the files), `content` (matching lines) or `count`. Narrow with `path` and `glob`; `head_limit` and `offset` page through long results.",
        schema: grep_schema,
    },
    ToolSpec {
        tool: ToolName::Bash,
        name: "Bash",
        description: "Run a shell command in your working directory and get its output and exit code. There is no network. `timeout` is in milliseconds (at most 600000).",
        schema: bash_schema,
    },
    ToolSpec {
        tool: ToolName::SendMessage,
        name: "SendMessage",
        description: "Send a message to a teammate or the team lead (`to` is their name; `*` sends to everyone). This is the only way others see what you say: text you write outside this tool reaches nobody. `message` is your text, with a short `summary`; or a protocol object such as {\"type\":\"shutdown_response\",\"request_id\":…,\"approve\":true}.",
        schema: send_message_schema,
    },
    ToolSpec {
        tool: ToolName::TaskCreate,
        name: "TaskCreate",
        description: "Add a task to the team's task list.",
        schema: task_create_schema,
    },
    ToolSpec {
        tool: ToolName::TaskGet,
        name: "TaskGet",
        description: "Read one task of the team's task list: subject, description, status, owner, dependencies.",
        schema: task_get_schema,
    },
    ToolSpec {
        tool: ToolName::TaskUpdate,
        name: "TaskUpdate",
        description: "Change a task: its status (`in_progress` when you start, `completed` when done, `deleted`), owner, subject, description, dependencies (`addBlocks`, `addBlockedBy`) or metadata.",
        schema: task_update_schema,
    },
    ToolSpec {
        tool: ToolName::TaskList,
        name: "TaskList",
        description: "List the team's tasks, one per line: id, status, subject, owner and what blocks it.",
        schema: task_list_schema,
    },
    ToolSpec {
        tool: ToolName::Agent,
        name: "Agent",
        description: "Launch a sub-agent to handle a piece of work on its own: it gets the `prompt` as its task, works with at most your tools and permissions, and its final answer comes back as this tool's result. With `run_in_background` the call returns at once with an agentId and you are notified (a <task-notification>) when it finishes; SendMessage with `to` set to the agentId gives it more instructions or resumes it. `isolation: \"worktree\"` runs it in its own git worktree of your directory.",
        schema: agent_schema,
    },
    ToolSpec {
        tool: ToolName::Agent,
        name: "TaskOutput",
        description: "Get a background agent's output: its status and, once it has finished, its result. With `block` (the default) it waits up to `timeout` milliseconds for the agent to finish.",
        schema: task_output_schema,
    },
    ToolSpec {
        tool: ToolName::Agent,
        name: "TaskStop",
        description: "Stop a running background agent by its id (`task_id`). It ends as killed and you are notified.",
        schema: task_stop_schema,
    },
    ToolSpec {
        tool: ToolName::WebFetch,
        name: "WebFetch",
        description: "Fetch a web page (http or https) through the host and get it as Markdown (HTML) or text, with `prompt` saying what you want from it; answer it from the text you get. Only text types come back, at most a few hundred KiB; redirects are followed. A host you were not given asks the lead first, and may be refused.",
        schema: web_fetch_schema,
    },
];

/// What Bash's description says of the network for a teammate that has
/// one (the default description says there is none).
pub const BASH_WITH_NETWORK: &str = "HTTP and HTTPS go through the host's proxy (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are set; other ways out do not exist); a host you were not given asks the lead first, and may be refused.";

/// What Bash's description says of the network by default.
pub const BASH_NO_NETWORK: &str = "There is no network.";

/// The definition of `spec` for a model.
pub fn definition(spec: &ToolSpec) -> ToolDefinition {
    ToolDefinition {
        name: spec.name.to_string(),
        description: spec.description.to_string(),
        input_schema: (spec.schema)().to_string(),
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn read_schema() -> Value {
    object(
        json!({
            "file_path": {"type": "string", "description": "The file, relative to your working directory or absolute inside it"},
            "offset": {"type": "integer", "minimum": 1, "description": "The line to start at"},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read"},
        }),
        &["file_path"],
    )
}

fn write_schema() -> Value {
    object(
        json!({
            "file_path": {"type": "string", "description": "The file to write"},
            "content": {"type": "string", "description": "Its whole new content"},
        }),
        &["file_path", "content"],
    )
}

fn edit_schema() -> Value {
    object(
        json!({
            "file_path": {"type": "string", "description": "The file to change"},
            "old_string": {"type": "string", "description": "The exact text to replace"},
            "new_string": {"type": "string", "description": "The text to put in its place"},
            "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence"},
        }),
        &["file_path", "old_string", "new_string"],
    )
}

fn glob_schema() -> Value {
    object(
        json!({
            "pattern": {"type": "string", "description": "The glob pattern"},
            "path": {"type": "string", "description": "The directory to search (default: your working directory)"},
        }),
        &["pattern"],
    )
}

fn grep_schema() -> Value {
    object(
        json!({
            "pattern": {"type": "string", "description": "The regular expression"},
            "path": {"type": "string", "description": "A file or directory to search (default: your working directory)"},
            "glob": {"type": "string", "description": "Only files matching this glob"},
            "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
            "-i": {"type": "boolean", "description": "Ignore case"},
            "-n": {"type": "boolean", "description": "Line numbers in content mode (always on)"},
            "head_limit": {"type": "integer", "minimum": 0, "description": "At most this many lines or files (0: all)"},
            "offset": {"type": "integer", "minimum": 0, "description": "Skip this many lines or files first"},
        }),
        &["pattern"],
    )
}

fn bash_schema() -> Value {
    object(
        json!({
            "command": {"type": "string", "description": "The command"},
            "timeout": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Milliseconds"},
            "description": {"type": "string", "description": "What it does, in a few words"},
        }),
        &["command"],
    )
}

fn web_fetch_schema() -> Value {
    object(
        json!({
            "url": {"type": "string", "description": "The page's URL, http:// or https://"},
            "prompt": {"type": "string", "description": "What you want to learn from the page"},
        }),
        &["url", "prompt"],
    )
}

fn send_message_schema() -> Value {
    object(
        json!({
            "to": {"type": "string", "description": "A teammate's name, the lead's name, or * for everyone"},
            "message": {
                "description": "Your text, or a protocol object",
                "anyOf": [
                    {"type": "string"},
                    {"type": "object", "properties": {
                        "type": {"type": "string", "enum": ["shutdown_request", "shutdown_response", "plan_approval_response"]},
                        "request_id": {"type": "string"},
                        "approve": {"type": "boolean"},
                        "reason": {"type": "string"},
                        "feedback": {"type": "string"},
                    }, "required": ["type"]},
                ],
            },
            "summary": {"type": "string", "maxLength": 200, "description": "A few words shown in previews; needed with a text message"},
        }),
        &["to", "message"],
    )
}

fn agent_schema() -> Value {
    object(
        json!({
            "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
            "prompt": {"type": "string", "description": "The task for the agent to perform"},
            "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
            "model": {"type": "string", "description": "Optional model for this agent; one of the models you may use"},
            "run_in_background": {"type": "boolean", "description": "Set to true to run this agent in the background. You will be notified when it completes."},
            "name": {"type": "string", "description": "Name for the spawned agent, to address it with SendMessage"},
            "isolation": {"type": "string", "enum": ["worktree"], "description": "Isolation mode. \"worktree\" creates a temporary git worktree so the agent works on an isolated copy of the repo."},
        }),
        &["description", "prompt"],
    )
}

fn task_output_schema() -> Value {
    object(
        json!({
            "task_id": {"type": "string", "description": "The agent's id (agentId)"},
            "block": {"type": "boolean", "description": "Wait for it to finish (default true)"},
            "timeout": {"type": "number", "description": "Most milliseconds to wait (default 30000, at most 600000)"},
        }),
        &["task_id"],
    )
}

fn task_stop_schema() -> Value {
    object(
        json!({"task_id": {"type": "string", "description": "The agent's id (agentId)"}}),
        &["task_id"],
    )
}

fn task_create_schema() -> Value {
    object(
        json!({
            "subject": {"type": "string", "description": "A short title in the imperative"},
            "description": {"type": "string", "description": "What to do, and what done looks like"},
            "activeForm": {"type": "string", "description": "The title as shown while it runs (\"Running the tests\")"},
            "metadata": {"type": "object"},
        }),
        &["subject", "description"],
    )
}

fn task_get_schema() -> Value {
    object(json!({"taskId": {"type": "string"}}), &["taskId"])
}

fn task_list_schema() -> Value {
    object(json!({}), &[])
}

fn task_update_schema() -> Value {
    object(
        json!({
            "taskId": {"type": "string"},
            "subject": {"type": "string"},
            "description": {"type": "string"},
            "activeForm": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "deleted"]},
            "addBlocks": {"type": "array", "items": {"type": "string"}, "description": "Tasks that cannot start before this one is done"},
            "addBlockedBy": {"type": "array", "items": {"type": "string"}, "description": "Tasks that must be done before this one"},
            "owner": {"type": "string", "description": "Who does it (empty: nobody)"},
            "metadata": {"type": "object", "description": "Keys to merge into the task's metadata"},
        }),
        &["taskId"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_has_a_valid_object_schema_with_the_references_field_names() {
        let names: Vec<String> = TOOLS.iter().map(|t| definition(t).name).collect();
        assert_eq!(
            names,
            [
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
                "WebFetch"
            ]
        );
        let fetch: Value = serde_json::from_str(&definition(&TOOLS[14]).input_schema).unwrap();
        assert_eq!(fetch["required"], json!(["url", "prompt"]));
        assert!(
            TOOLS[5].description.contains(BASH_NO_NETWORK),
            "the text a network replaces"
        );
        for spec in &TOOLS {
            let d = definition(spec);
            let schema: Value = serde_json::from_str(&d.input_schema).unwrap();
            assert_eq!(schema["type"], "object", "{}", d.name);
        }
        let edit: Value = serde_json::from_str(&definition(&TOOLS[2]).input_schema).unwrap();
        assert_eq!(
            edit["required"],
            json!(["file_path", "old_string", "new_string"])
        );
        let update: Value = serde_json::from_str(&definition(&TOOLS[9]).input_schema).unwrap();
        assert!(update["properties"]["addBlockedBy"].is_object());
        let agent: Value = serde_json::from_str(&definition(&TOOLS[11]).input_schema).unwrap();
        assert_eq!(agent["required"], json!(["description", "prompt"]));
        for field in [
            "subagent_type",
            "model",
            "run_in_background",
            "name",
            "isolation",
        ] {
            assert!(agent["properties"][field].is_object(), "{field}");
        }
    }
}
