//! The lead's tools as a model sees them (the reference's tool names): TeamCreate,
//! TeamDelete, the `Agent` tool with `team_name` and `name` (a teammate from
//! the catalogue), and SendMessage's lead protocol answers
//! (`plan_approval_response`, `permission_response`, `shutdown_request`).
//!
//! [`parse`] picks the calls that are a lead's out of everything a model
//! writes, before [`super::input::parse`] reads the rest, so the glue can
//! send every one of them to the lead's seat (and refuse them to a non-lead)
//! instead of the teammate paths: a lead's answers never travel as raw
//! messages. [`definitions`] gives a lead seat its extra tools, the `Agent`
//! tool's description listing the catalogue. The results are written in the
//! reference's shapes (TeamCreate's `{team_name, lead_agent_id}`, the
//! spawn's `{teammate_id, agent_id, name, team_name, …}`).
//!
//! Plain functions over JSON and text, like the rest of the toolbox.

use serde_json::{json, Map, Value};

use super::input::Fields;
use crate::model::ToolDefinition;

/// The tools only a lead has, by the names a model calls them.
pub const LEAD_ONLY_TOOLS: [&str; 2] = ["TeamCreate", "TeamDelete"];

/// A lead's tool call, read from a model's JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum LeadCall {
    /// TeamCreate: form the team (the host names it; `team_name` is the
    /// model's wish).
    TeamCreate {
        team_name: String,
        description: Option<String>,
    },
    /// TeamDelete: remove the team.
    TeamDelete,
    /// The `Agent` tool with `team_name`: spawn a teammate.
    Spawn(SpawnCall),
    /// SendMessage `{type: "plan_approval_response", …}`.
    AnswerPlan {
        request_id: String,
        approve: bool,
        feedback: Option<String>,
    },
    /// SendMessage `{type: "permission_response", …}`.
    AnswerPermission {
        request_id: String,
        approve: bool,
        reason: Option<String>,
    },
    /// SendMessage `{type: "shutdown_request"}` to `to`.
    Shutdown { to: String, reason: Option<String> },
}

/// The `Agent` tool's input when it spawns a teammate (seed 001,
/// "Teammate Spawning": `subagent_type`, `prompt`, `name`, `team_name`,
/// `mode`, `model`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpawnCall {
    /// The catalogue entry (`subagent_type`).
    pub entry: String,
    /// The member's name.
    pub name: String,
    /// Its first message.
    pub prompt: String,
    /// The team the model named (the seat acts on its own team only).
    pub team_name: String,
    /// A permission mode in the reference's spelling.
    pub mode: Option<String>,
    /// A model alias.
    pub model: Option<String>,
    /// `plan_mode_required`.
    pub plan_mode_required: bool,
}

/// One catalogue entry as the `Agent` tool's description lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueLine {
    pub name: String,
    pub description: String,
    /// The widest mode, in the reference's spelling.
    pub max_mode: String,
    pub models: Vec<String>,
}

/// `Some` when `name` with `input` is a lead's call (whoever makes it):
/// TeamCreate, TeamDelete, `Agent` with a `team_name`, or SendMessage with a
/// `plan_approval_response`, `permission_response` or `shutdown_request`.
/// `None` for everything else, which [`super::input::parse`] reads.
pub fn parse(name: &str, input: &str) -> Option<Result<LeadCall, String>> {
    let map = match serde_json::from_str::<Value>(input) {
        Ok(Value::Object(map)) => map,
        // Empty input is `{}`; other bad JSON is input::parse's to explain,
        // except for the lead-only tools, which it does not know.
        _ if input.trim().is_empty() => Map::new(),
        _ if LEAD_ONLY_TOOLS.contains(&name) => {
            return Some(Err(format!(
                "{name}: the input must be one JSON object with the tool's fields"
            )))
        }
        _ => return None,
    };
    let f = Fields {
        tool: name,
        map: &map,
    };
    match name {
        "TeamCreate" => Some(team_create(&f)),
        "TeamDelete" => Some(Ok(LeadCall::TeamDelete)),
        "Agent" if f.get("team_name").is_some() => Some(spawn(&f)),
        "SendMessage" => send(&f),
        _ => None,
    }
}

fn team_create(f: &Fields<'_>) -> Result<LeadCall, String> {
    Ok(LeadCall::TeamCreate {
        team_name: f.str_req("team_name")?,
        description: f.str_opt("description")?,
    })
}

fn spawn(f: &Fields<'_>) -> Result<LeadCall, String> {
    let entry = f.str_opt("subagent_type")?.filter(|s| !s.trim().is_empty());
    let Some(entry) = entry else {
        return Err(
            "Agent: spawning a teammate (with `team_name`) needs `subagent_type`: \
                    a catalogue entry's name (the tool's description lists them)"
                .into(),
        );
    };
    let name = f.str_opt("name")?.filter(|s| !s.trim().is_empty());
    let Some(name) = name else {
        return Err(
            "Agent: spawning a teammate (with `team_name`) needs `name`: the new member's \
             name, to address it with SendMessage"
                .into(),
        );
    };
    Ok(LeadCall::Spawn(SpawnCall {
        entry,
        name,
        prompt: f.str_req("prompt")?,
        team_name: f.str_req("team_name")?,
        mode: f.str_opt("mode")?.filter(|s| !s.trim().is_empty()),
        model: f.str_opt("model")?.filter(|s| !s.trim().is_empty()),
        plan_mode_required: f.bool_opt("plan_mode_required")?.unwrap_or(false),
    }))
}

/// The lead's protocol answers in both SendMessage forms: `{to, message:
/// {type, …}}` and the older `{type, recipient, content, …}`.
fn send(f: &Fields<'_>) -> Option<Result<LeadCall, String>> {
    let (inner, text_key, to) = match f.get("message") {
        Some(Value::Object(m)) => (
            Fields {
                tool: "SendMessage",
                map: m,
            },
            None,
            f.get("to"),
        ),
        Some(_) => return None,
        None => (
            Fields {
                tool: "SendMessage",
                map: f.map,
            },
            Some("content"),
            f.get("recipient"),
        ),
    };
    let kind = match inner.get("type") {
        Some(Value::String(k)) => k.clone(),
        _ => return None,
    };
    let to = to.and_then(Value::as_str).map(str::to_string);
    let text = |key: &str| inner.str_opt(text_key.unwrap_or(key));
    let answer = |kind: &str| -> Result<LeadCall, String> {
        Ok(match kind {
            "plan_approval_response" => LeadCall::AnswerPlan {
                request_id: inner.str_req("request_id")?,
                approve: inner.bool_req("approve")?,
                feedback: text("feedback")?,
            },
            "permission_response" => LeadCall::AnswerPermission {
                request_id: inner.str_req("request_id")?,
                approve: inner.bool_req("approve")?,
                reason: text("reason")?,
            },
            _ => LeadCall::Shutdown {
                to: to
                    .clone()
                    .ok_or("SendMessage: a shutdown_request needs `to`: the teammate's name")?,
                reason: text("reason")?,
            },
        })
    };
    match kind.as_str() {
        "plan_approval_response" | "permission_response" | "shutdown_request" => {
            Some(answer(&kind))
        }
        _ => None,
    }
}

/// The lead's extra tool definitions: TeamCreate, TeamDelete and the
/// `Agent` tool for spawning teammates from `catalogue` (which replaces the
/// sub-agent `Agent` tool; `sub_agents` says whether, without `team_name`,
/// it still starts a sub-agent).
pub fn definitions(catalogue: &[CatalogueLine], sub_agents: bool) -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: "TeamCreate".into(),
            description: "Form your team before anything else: it creates the team's config \
                          and task list and makes you its lead. The host names the team (your \
                          `team_name` is a wish; the result says the real name). Once per \
                          run: TeamDelete first to form it again."
                .into(),
            input_schema: object(
                json!({
                    "team_name": {"type": "string", "description": "Name for the new team to create."},
                    "description": {"type": "string", "description": "Team description/purpose."},
                    "agent_type": {"type": "string", "description": "Type/role of the team lead (e.g., \"researcher\", \"test-runner\")."},
                }),
                &["team_name"],
            )
            .to_string(),
        },
        ToolDefinition {
            name: "TeamDelete".into(),
            description: "Remove your team (its config, inboxes and task list) when the work \
                          is done. Refused while a teammate still runs: shut each down first \
                          (SendMessage {\"type\":\"shutdown_request\"}) and wait for their \
                          approval. Your run ends after it."
                .into(),
            input_schema: object(json!({}), &[]).to_string(),
        },
        ToolDefinition {
            name: "Agent".into(),
            description: agent_description(catalogue, sub_agents),
            input_schema: agent_schema(catalogue).to_string(),
        },
    ]
}

fn agent_description(catalogue: &[CatalogueLine], sub_agents: bool) -> String {
    let mut text = String::from(
        "Spawn a teammate: give `team_name` (your team), `name` (its member name, unique), \
         `subagent_type` (one of the catalogue entries below), `prompt` (its first message: the \
         work), and `description` (3-5 words). `mode` and `model` are optional and at most the \
         entry's and your own; `plan_mode_required: true` makes it send you a plan to approve \
         before it edits anything. It works on its own and messages you; you get a message when \
         it goes idle.",
    );
    if sub_agents {
        text.push_str(
            " Without `team_name` this tool starts a sub-agent instead, whose answer comes back \
             as the result.",
        );
    }
    text.push_str("\n\nCatalogue:");
    if catalogue.is_empty() {
        text.push_str(" (empty: you cannot spawn teammates)");
    }
    for c in catalogue {
        let models = if c.models.is_empty() {
            "no model".to_string()
        } else {
            format!("models {}", c.models.join(", "))
        };
        text.push_str(&format!(
            "\n- {}: {} (mode at most {}; {models})",
            one_line(&c.name, 64),
            one_line(&c.description, 300),
            c.max_mode
        ));
    }
    text
}

/// `s` on one line, without control characters, at most `max` characters:
/// the catalogue comes from a manifest, and a model should read one line
/// per entry.
fn one_line(s: &str, max: usize) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out: String = cleaned.trim().chars().take(max).collect();
    if cleaned.trim().chars().count() > max {
        out.push('…');
    }
    out
}

fn agent_schema(catalogue: &[CatalogueLine]) -> Value {
    let entries: Vec<&str> = catalogue.iter().map(|c| c.name.as_str()).collect();
    // An empty `enum` is a schema no value satisfies, which providers refuse.
    let entry = if entries.is_empty() {
        json!({"type": "string", "description": "The catalogue entry to spawn (the catalogue is empty)"})
    } else {
        json!({"type": "string", "enum": entries, "description": "The catalogue entry to spawn"})
    };
    object(
        json!({
            "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
            "prompt": {"type": "string", "description": "The teammate's first message: the work to do"},
            "subagent_type": entry,
            "name": {"type": "string", "description": "Name for the spawned agent"},
            "team_name": {"type": "string", "description": "Team name for spawning"},
            "mode": {"type": "string", "enum": ["default", "acceptEdits", "bypassPermissions", "plan", "dontAsk", "delegate"], "description": "Its permission mode (at most the entry's and yours)"},
            "model": {"type": "string", "description": "A model alias the entry allows"},
            "plan_mode_required": {"type": "boolean", "description": "It must have a plan approved before it edits"},
        }),
        &["description", "prompt"],
    )
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// TeamCreate's result (the reference's `data`, without the file path: a
/// lead never sees paths). `asked` is the `team_name` the model wrote: when
/// it is not the team's real name (after the reference's sanitising), a
/// `note` says the host named the team.
pub fn team_created(team: &str, asked: &str) -> String {
    let mut data = json!({"team_name": team, "lead_agent_id": format!("team-lead@{team}")});
    let sanitised: String = asked
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if !asked.is_empty() && sanitised != team {
        data["note"] = json!(format!(
            "the host names the lead's team: it is {team:?}, not {asked:?}; use that name"
        ));
    }
    data.to_string()
}

/// TeamDelete's result.
pub fn team_deleted(team: &str) -> String {
    json!({
        "success": true,
        "message": format!("Cleaned up directories and worktrees for team \"{team}\""),
        "team_name": team,
    })
    .to_string()
}

/// The spawn's result (the reference's `data`): `agent_id` is `name@team`.
pub fn spawned(agent_id: &str, call: &SpawnCall) -> String {
    let (name, team) = agent_id.split_once('@').unwrap_or((agent_id, ""));
    json!({
        "teammate_id": agent_id,
        "agent_id": agent_id,
        "agent_type": call.entry,
        "model": call.model,
        "name": name,
        "team_name": team,
        "plan_mode_required": call.plan_mode_required,
    })
    .to_string()
}

/// The error a non-lead gets for a lead's call.
pub fn not_a_lead(call: &LeadCall) -> String {
    let what = match call {
        LeadCall::TeamCreate { .. } => "TeamCreate",
        LeadCall::TeamDelete => "TeamDelete",
        LeadCall::Spawn(_) => "the Agent tool with `team_name` (spawning a teammate)",
        LeadCall::AnswerPlan { .. } => "SendMessage's plan_approval_response",
        LeadCall::AnswerPermission { .. } => "SendMessage's permission_response",
        LeadCall::Shutdown { .. } => "SendMessage's shutdown_request",
    };
    let also = match call {
        LeadCall::Spawn(_) => "; leave out `team_name` to start a sub-agent",
        _ => "",
    };
    format!("permission denied: only the team's lead may use {what}; you are a teammate{also}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, input: &str) -> Option<Result<LeadCall, String>> {
        parse(name, input)
    }

    #[test]
    fn team_create_and_delete_are_read_in_the_references_shapes() {
        assert_eq!(
            p(
                "TeamCreate",
                r#"{"team_name":"fixers","description":"fix it"}"#
            ),
            Some(Ok(LeadCall::TeamCreate {
                team_name: "fixers".into(),
                description: Some("fix it".into())
            }))
        );
        assert_eq!(p("TeamDelete", "{}"), Some(Ok(LeadCall::TeamDelete)));
        assert_eq!(p("TeamDelete", ""), Some(Ok(LeadCall::TeamDelete)));
        let missing = p("TeamCreate", "{}").unwrap().unwrap_err();
        assert!(missing.contains("`team_name`"), "{missing}");
        let garbage = p("TeamCreate", "not json").unwrap().unwrap_err();
        assert!(garbage.contains("JSON object"), "{garbage}");
    }

    #[test]
    fn the_agent_tool_spawns_a_teammate_only_with_team_name() {
        let input = r#"{"description":"fix","prompt":"fix the tests","subagent_type":"coder",
                        "name":"alice","team_name":"t","mode":"plan","model":"haiku"}"#;
        let Some(Ok(LeadCall::Spawn(s))) = p("Agent", input) else {
            panic!("not a spawn")
        };
        assert_eq!(
            (s.entry.as_str(), s.name.as_str(), s.mode.as_deref()),
            ("coder", "alice", Some("plan"))
        );
        assert_eq!(p("Agent", r#"{"description":"d","prompt":"p"}"#), None);
        let no_entry = p("Agent", r#"{"prompt":"p","name":"a","team_name":"t"}"#)
            .unwrap()
            .unwrap_err();
        assert!(no_entry.contains("subagent_type"), "{no_entry}");
        let no_name = p(
            "Agent",
            r#"{"prompt":"p","subagent_type":"c","team_name":"t"}"#,
        )
        .unwrap()
        .unwrap_err();
        assert!(no_name.contains("`name`"), "{no_name}");
    }

    #[test]
    fn send_message_protocol_answers_are_the_leads_in_both_forms() {
        assert_eq!(
            p(
                "SendMessage",
                r#"{"to":"alice","message":{"type":"plan_approval_response","request_id":"r1","approve":false,"feedback":"smaller"}}"#
            ),
            Some(Ok(LeadCall::AnswerPlan {
                request_id: "r1".into(),
                approve: false,
                feedback: Some("smaller".into())
            }))
        );
        assert_eq!(
            p(
                "SendMessage",
                r#"{"type":"permission_response","recipient":"bob","request_id":"p9","approve":true}"#
            ),
            Some(Ok(LeadCall::AnswerPermission {
                request_id: "p9".into(),
                approve: true,
                reason: None
            }))
        );
        assert_eq!(
            p(
                "SendMessage",
                r#"{"to":"bob","message":{"type":"shutdown_request","reason":"done"}}"#
            ),
            Some(Ok(LeadCall::Shutdown {
                to: "bob".into(),
                reason: Some("done".into())
            }))
        );
        let no_answer = p(
            "SendMessage",
            r#"{"to":"a","message":{"type":"permission_response","request_id":"p"}}"#,
        )
        .unwrap()
        .unwrap_err();
        assert!(no_answer.contains("`approve`"), "{no_answer}");
        // Text and the teammate's own answers stay with input::parse.
        assert_eq!(
            p("SendMessage", r#"{"to":"a","message":"hi","summary":"s"}"#),
            None
        );
        assert_eq!(
            p(
                "SendMessage",
                r#"{"to":"a","message":{"type":"shutdown_response","request_id":"x","approve":true}}"#
            ),
            None
        );
        assert_eq!(p("Read", r#"{"file_path":"a"}"#), None);
    }

    #[test]
    fn the_agent_definition_lists_the_catalogue_on_clean_lines() {
        let catalogue = [CatalogueLine {
            name: "coder".into(),
            description: "writes code\n\u{1b}[2Jand lies".into(),
            max_mode: "acceptEdits".into(),
            models: vec!["haiku".into()],
        }];
        let defs = definitions(&catalogue, false);
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["TeamCreate", "TeamDelete", "Agent"]);
        let agent = &defs[2];
        assert!(agent.description.contains(
            "\n- coder: writes code  [2Jand lies (mode at most acceptEdits; models haiku)"
        ));
        assert!(!agent.description.contains('\u{1b}'));
        assert!(!agent.description.contains("sub-agent"));
        let schema: Value = serde_json::from_str(&agent.input_schema).unwrap();
        assert_eq!(
            schema["properties"]["subagent_type"]["enum"],
            json!(["coder"])
        );
        assert!(schema["properties"]["team_name"].is_object());
        assert!(definitions(&catalogue, true)[2]
            .description
            .contains("sub-agent"));
        let empty: Value = serde_json::from_str(&definitions(&[], false)[2].input_schema).unwrap();
        assert!(empty["properties"]["subagent_type"].get("enum").is_none());
    }

    #[test]
    fn results_are_in_the_references_shapes() {
        let created: Value = serde_json::from_str(&team_created("fixers", "fixers")).unwrap();
        assert_eq!(created["lead_agent_id"], "team-lead@fixers");
        assert!(created.get("note").is_none());
        let sanitised: Value = serde_json::from_str(&team_created("my-team", "My Team")).unwrap();
        assert!(sanitised.get("note").is_none(), "{sanitised}");
        let renamed = team_created("fixers", "Bug Squad");
        let renamed: Value = serde_json::from_str(&renamed).unwrap();
        assert_eq!(renamed["team_name"], "fixers");
        assert!(
            renamed["note"]
                .as_str()
                .unwrap()
                .contains("\"fixers\", not \"Bug Squad\""),
            "{renamed}"
        );
        let call = SpawnCall {
            entry: "coder".into(),
            name: "alice".into(),
            ..SpawnCall::default()
        };
        let spawned: Value = serde_json::from_str(&spawned("alice@fixers", &call)).unwrap();
        assert_eq!(spawned["teammate_id"], "alice@fixers");
        assert_eq!(spawned["name"], "alice");
        assert_eq!(spawned["team_name"], "fixers");
        assert_eq!(spawned["agent_type"], "coder");
        let refused = not_a_lead(&LeadCall::TeamDelete);
        assert!(refused.starts_with("permission denied: only the team's lead"));
    }
}
