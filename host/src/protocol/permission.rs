//! The permission handshake: a teammate whose permission mode says "ask" sends
//! `permission_request` for one tool call; the lead answers
//! `permission_response` with `subtype` `success` (allowed, possibly with edited
//! input) or `error` (denied, with a reason). Unlike the other families these
//! keys are snake_case, `request_id` included (`perm-{ms}-{7 chars}`, see
//! [`super::ids`]).
//!
//! ```text
//! {"type":"permission_request","request_id":"perm-…","agent_id":"NAME","tool_name":"Bash","tool_use_id":"toolu_…","description":"…","input":{…},"permission_suggestions":[…]}
//! {"type":"permission_response","request_id":"perm-…","subtype":"success","response":{"updated_input":{…},"permission_updates":[]}}
//! {"type":"permission_response","request_id":"perm-…","subtype":"error","error":"…"}
//! ```
//!
//! Neither message has a `timestamp` in the observed traffic (seeds 002
//! App. C.1.9–10), so teamhost writes none; a `timestamp` (or any other key)
//! written by another program is kept in `extra`. Seeds 004 also lists a
//! `decision`/`resolvedBy` shape for the response; no CLI was observed writing
//! it, and it parses as [`super::Parsed::Invalid`] (no `subtype`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::{self, Fields};
use super::{ids, time, MessageKind, ProtocolError, WireMessage};

/// `permission_request` (seeds 002 App. C.1.9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "permission_request",
    try_from = "Map<String, Value>"
)]
pub struct PermissionRequest {
    /// `perm-{ms}-{suffix}`.
    pub request_id: String,
    /// The asking agent's name, without the `@team` suffix.
    pub agent_id: String,
    /// The tool to be called (`"Bash"`, `"Write"`, …).
    pub tool_name: String,
    /// The model's id for this tool call (`toolu_…`).
    pub tool_use_id: String,
    /// A human-readable description of the call.
    pub description: String,
    /// The tool call's full input, as the tool receives it.
    pub input: Value,
    /// Ways the lead could grant this for longer: objects whose `type` is
    /// `addDirectories` (`directories`, `destination`), `setMode` (`mode`,
    /// `destination`) or `addRules` (`rules: [{toolName, ruleContent}]`,
    /// `behavior`, `destination`). Kept as JSON; the sandbox interprets them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_suggestions: Option<Vec<Value>>,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PermissionRequest {
    /// A request made now by `agent_id` to call `tool_name` with `input`, with a
    /// fresh `request_id` and an empty `permission_suggestions` list.
    pub fn new(
        agent_id: impl Into<String>,
        tool_name: impl Into<String>,
        tool_use_id: impl Into<String>,
        description: impl Into<String>,
        input: Value,
    ) -> Self {
        PermissionRequest {
            request_id: ids::permission_request_id(time::now_ms()),
            agent_id: agent_id.into(),
            tool_name: tool_name.into(),
            tool_use_id: tool_use_id.into(),
            description: description.into(),
            input,
            permission_suggestions: Some(Vec::new()),
            extra: Map::new(),
        }
    }

    /// Sets `permission_suggestions`.
    pub fn with_suggestions(mut self, suggestions: Vec<Value>) -> Self {
        self.permission_suggestions = Some(suggestions);
        self
    }
}

impl WireMessage for PermissionRequest {
    const KIND: MessageKind = MessageKind::PermissionRequest;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(PermissionRequest {
            request_id: f.string("request_id")?,
            agent_id: f.string("agent_id")?,
            tool_name: f.string("tool_name")?,
            tool_use_id: f.string("tool_use_id")?,
            description: f.string("description")?,
            input: f.any("input")?,
            permission_suggestions: f.opt_array("permission_suggestions")?,
            extra: f.rest(),
        })
    }

    /// `request_id` is `perm-{ms}-{suffix}`; `agent_id` and `tool_name` are
    /// non-empty.
    fn validate(&self) -> Result<(), ProtocolError> {
        let kind = Self::KIND;
        fields::request_id(
            kind,
            "request_id",
            ids::parse_permission_request_id(&self.request_id),
        )?;
        fields::non_empty(kind, "agent_id", &self.agent_id)?;
        fields::non_empty(kind, "tool_name", &self.tool_name)
    }
}

/// The body of an allowing [`PermissionResponse`] (its `response` key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PermissionGrant {
    /// The input the tool is to run with: the original, or the lead's edit.
    pub updated_input: Value,
    /// Permission changes that come with the grant (observed always `[]`).
    pub permission_updates: Vec<Value>,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PermissionGrant {
    fn from_fields(mut f: Fields) -> Result<Self, ProtocolError> {
        Ok(PermissionGrant {
            updated_input: f.any("updated_input")?,
            permission_updates: f.array("permission_updates")?,
            extra: f.rest(),
        })
    }
}

/// What a [`PermissionResponse`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionOutcome<'a> {
    /// `subtype: "success"`: run the tool with the grant's `updated_input`.
    Allowed(&'a PermissionGrant),
    /// `subtype: "error"`: do not run it; the reason is for the model.
    Denied(&'a str),
}

/// `permission_response` (seeds 002 App. C.1.10).
///
/// `subtype` is kept as the string on the wire; [`PermissionResponse::outcome`]
/// reads it together with `response` / `error` and is what callers should act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "permission_response",
    try_from = "Map<String, Value>"
)]
pub struct PermissionResponse {
    /// The `request_id` of the request answered.
    pub request_id: String,
    /// `"success"` (allowed) or `"error"` (denied).
    pub subtype: String,
    /// The grant (success only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<PermissionGrant>,
    /// Why it was denied (error only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PermissionResponse {
    /// Allows request `request_id`, running the tool with `updated_input`.
    pub fn allow(
        request_id: impl Into<String>,
        updated_input: Value,
        permission_updates: Vec<Value>,
    ) -> Self {
        PermissionResponse {
            request_id: request_id.into(),
            subtype: "success".to_string(),
            response: Some(PermissionGrant {
                updated_input,
                permission_updates,
                extra: Map::new(),
            }),
            error: None,
            extra: Map::new(),
        }
    }

    /// Denies request `request_id` because of `reason`.
    pub fn deny(request_id: impl Into<String>, reason: impl Into<String>) -> Self {
        PermissionResponse {
            request_id: request_id.into(),
            subtype: "error".to_string(),
            response: None,
            error: Some(reason.into()),
            extra: Map::new(),
        }
    }

    /// Whether this verdict is bound to another call than the one asked
    /// about: Claude Code 2.1.332 may add `tool_use_id` and
    /// `approved_request: {tool_use_id, tool_name, input_digest}` (the
    /// digest is [`input_digest`](super::lead_sig::input_digest)). Each one
    /// present must match the request (`tool_use_id`: `None` when not
    /// known, then not compared); a verdict with neither is unbound and
    /// accepted. `Some(why)` when it does not match.
    pub fn binding_mismatch(
        &self,
        tool_use_id: Option<&str>,
        tool_name: &str,
        input: &Value,
    ) -> Option<String> {
        let differs = |field: &str, got: Option<&Value>, want: &str| match got {
            None => None,
            Some(Value::String(g)) if g == want => None,
            Some(other) => Some(format!("{field} is {other}, this request's is {want:?}")),
        };
        if let Some(id) = tool_use_id {
            if let Some(why) = differs("tool_use_id", self.extra.get("tool_use_id"), id) {
                return Some(why);
            }
        }
        let bound = self.extra.get("approved_request")?;
        let Some(bound) = bound.as_object() else {
            return Some(format!("approved_request is {bound}, not an object"));
        };
        if let Some(id) = tool_use_id {
            if let Some(why) = differs("approved_request.tool_use_id", bound.get("tool_use_id"), id)
            {
                return Some(why);
            }
        }
        differs(
            "approved_request.tool_name",
            bound.get("tool_name"),
            tool_name,
        )
        .or_else(|| {
            differs(
                "approved_request.input_digest",
                bound.get("input_digest"),
                &super::lead_sig::input_digest(tool_name, input),
            )
        })
    }

    /// The decision: `success` with a `response` and no `error` is
    /// [`PermissionOutcome::Allowed`]; `error` with an `error` and no `response`
    /// is [`PermissionOutcome::Denied`]. Anything else is an error naming the
    /// field at fault.
    pub fn outcome(&self) -> Result<PermissionOutcome<'_>, ProtocolError> {
        let kind = MessageKind::PermissionResponse;
        match self.subtype.as_str() {
            "success" => {
                fields::absent(kind, "error", &self.error, "when subtype is \"success\"")?;
                match &self.response {
                    Some(grant) => Ok(PermissionOutcome::Allowed(grant)),
                    None => Err(fields::invalid(
                        kind,
                        "response",
                        "is required when subtype is \"success\"".to_string(),
                    )),
                }
            }
            "error" => {
                fields::absent(
                    kind,
                    "response",
                    &self.response,
                    "when subtype is \"error\"",
                )?;
                match &self.error {
                    Some(reason) => Ok(PermissionOutcome::Denied(reason)),
                    None => Err(fields::invalid(
                        kind,
                        "error",
                        "is required when subtype is \"error\"".to_string(),
                    )),
                }
            }
            other => Err(fields::invalid(
                kind,
                "subtype",
                format!("must be one of success|error, found {other:?}"),
            )),
        }
    }
}

impl WireMessage for PermissionResponse {
    const KIND: MessageKind = MessageKind::PermissionResponse;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let kind = Self::KIND;
        let mut f = Fields::top(kind, map)?;
        Ok(PermissionResponse {
            request_id: f.string("request_id")?,
            subtype: f.string("subtype")?,
            response: match f.opt_any("response") {
                Some(value) => Some(PermissionGrant::from_fields(Fields::nested(
                    kind,
                    "response.",
                    value,
                )?)?),
                None => None,
            },
            error: f.opt_string("error")?,
            extra: f.rest(),
        })
    }

    /// `request_id` is `perm-{ms}-{suffix}` and [`PermissionResponse::outcome`]
    /// succeeds.
    fn validate(&self) -> Result<(), ProtocolError> {
        fields::request_id(
            Self::KIND,
            "request_id",
            ids::parse_permission_request_id(&self.request_id),
        )?;
        self.outcome().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{assert_round_trips, keys};
    use super::super::{Parsed, ProtocolMessage};
    use super::*;

    /// Seeds 002 App. C.1.9.
    const REQUEST_SEED: &str = r#"{"type":"permission_request","request_id":"perm-1770980462304-4uqstf5","agent_id":"delegate-agent","tool_name":"Bash","tool_use_id":"toolu_01ABC...","description":"Create directory /tmp/delegate-test","input":{"command":"mkdir -p /tmp/delegate-test"},"permission_suggestions":[{"type":"addDirectories","directories":["/tmp","/tmp/delegate-test"],"destination":"session"}]}"#;
    /// Seeds 004 shape: no suggestions, a trailing timestamp.
    const REQUEST_WITH_TIMESTAMP: &str = r#"{"type":"permission_request","request_id":"perm-1770980462304-4uqstf5","agent_id":"delegate-agent","tool_name":"Write","tool_use_id":"toolu_02","description":"Write /tmp/x","input":{"file_path":"/tmp/x","content":"hi"},"timestamp":"2026-02-13T11:01:02.304Z"}"#;
    /// Seeds 002 App. C.1.10, success.
    const SUCCESS_SEED: &str = r#"{"type":"permission_response","request_id":"perm-1770980462304-4uqstf5","subtype":"success","response":{"updated_input":{"command":"mkdir -p /tmp/delegate-test"},"permission_updates":[]}}"#;
    /// Seeds 002 App. C.1.10, error.
    const ERROR_SEED: &str = r#"{"type":"permission_response","request_id":"perm-1770980484351-5rzn82g","subtype":"error","error":"拒绝原因字符串"}"#;

    #[test]
    fn seed_permission_request_parses_with_its_fields_and_round_trips() {
        let ProtocolMessage::PermissionRequest(m) = assert_round_trips(REQUEST_SEED) else {
            panic!("not a permission_request");
        };
        assert_eq!(m.request_id, "perm-1770980462304-4uqstf5");
        assert_eq!(m.agent_id, "delegate-agent");
        assert_eq!(m.tool_name, "Bash");
        assert_eq!(m.tool_use_id, "toolu_01ABC...");
        assert_eq!(m.description, "Create directory /tmp/delegate-test");
        assert_eq!(m.input, json!({"command": "mkdir -p /tmp/delegate-test"}));
        let suggestions = m.permission_suggestions.as_deref().unwrap_or_default();
        assert_eq!(suggestions.len(), 1);
        assert_eq!(suggestions[0]["type"], "addDirectories");
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn permission_request_with_a_timestamp_keeps_it_in_place() {
        let ProtocolMessage::PermissionRequest(m) = assert_round_trips(REQUEST_WITH_TIMESTAMP)
        else {
            panic!("not a permission_request");
        };
        assert_eq!(m.permission_suggestions, None);
        assert_eq!(m.extra["timestamp"], "2026-02-13T11:01:02.304Z");
    }

    #[test]
    fn permission_request_builder_writes_reference_key_order() {
        let m = PermissionRequest::new(
            "delegate-agent",
            "Bash",
            "toolu_1",
            "d",
            json!({"command": "ls"}),
        )
        .with_suggestions(vec![
            json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}),
        ]);
        assert_eq!(keys(&m.to_text()), keys(REQUEST_SEED));
        assert_eq!(m.validate(), Ok(()));
        let bare = PermissionRequest::new("a", "Read", "toolu_2", "d", json!({}));
        assert!(bare
            .to_text()
            .ends_with(r#""input":{},"permission_suggestions":[]}"#));
    }

    #[test]
    fn seed_permission_responses_parse_with_their_outcomes_and_round_trip() {
        let ProtocolMessage::PermissionResponse(yes) = assert_round_trips(SUCCESS_SEED) else {
            panic!("not a permission_response");
        };
        let Ok(PermissionOutcome::Allowed(grant)) = yes.outcome() else {
            panic!("not allowed: {:?}", yes.outcome());
        };
        assert_eq!(
            grant.updated_input,
            json!({"command": "mkdir -p /tmp/delegate-test"})
        );
        assert!(grant.permission_updates.is_empty());
        assert_eq!(yes.validate(), Ok(()));

        let ProtocolMessage::PermissionResponse(no) = assert_round_trips(ERROR_SEED) else {
            panic!("not a permission_response");
        };
        assert_eq!(
            no.outcome(),
            Ok(PermissionOutcome::Denied("拒绝原因字符串"))
        );
        assert_eq!(no.validate(), Ok(()));
    }

    #[test]
    fn permission_response_builders_write_the_seed_bytes() {
        let yes = PermissionResponse::allow(
            "perm-1770980462304-4uqstf5",
            json!({"command": "mkdir -p /tmp/delegate-test"}),
            Vec::new(),
        );
        assert_eq!(yes.to_text(), SUCCESS_SEED);
        let no = PermissionResponse::deny("perm-1770980484351-5rzn82g", "拒绝原因字符串");
        assert_eq!(no.to_text(), ERROR_SEED);
    }

    #[test]
    fn success_without_response_fails_validation() {
        let mut m = PermissionResponse::deny("perm-1-abcdefg", "no");
        m.subtype = "success".into();
        m.error = None;
        let err = m.validate().expect_err("no response");
        assert_eq!(
            err.to_string(),
            "permission_response message field `response` is required when subtype is \"success\""
        );
    }

    #[test]
    fn error_with_a_response_fails_validation() {
        let mut m = PermissionResponse::allow("perm-1-abcdefg", json!({}), Vec::new());
        m.subtype = "error".into();
        m.error = Some("no".into());
        assert_eq!(m.validate().expect_err("both").field(), "response");
    }

    #[test]
    fn unknown_subtype_fails_validation() {
        let mut m = PermissionResponse::deny("perm-1-abcdefg", "no");
        m.subtype = "maybe".into();
        assert_eq!(m.validate().expect_err("maybe").field(), "subtype");
    }

    #[test]
    fn nested_field_errors_name_the_path() {
        let text = r#"{"type":"permission_response","request_id":"perm-1-abcdefg","subtype":"success","response":{"updated_input":{}}}"#;
        let Parsed::Invalid { kind, error } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(kind, MessageKind::PermissionResponse);
        assert_eq!(
            error.to_string(),
            "permission_response message is missing required field `response.permission_updates`"
        );
        let text = r#"{"type":"permission_response","request_id":"perm-1-abcdefg","subtype":"success","response":"yes"}"#;
        let Parsed::Invalid { error, .. } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(
            error.to_string(),
            "permission_response message field `response` must be an object, found a string"
        );
    }

    #[test]
    fn permission_request_without_input_is_invalid_naming_the_field() {
        let text = r#"{"type":"permission_request","request_id":"perm-1-abcdefg","agent_id":"a","tool_name":"Bash","tool_use_id":"t","description":"d"}"#;
        let Parsed::Invalid { error, .. } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(
            error.to_string(),
            "permission_request message is missing required field `input`"
        );
    }

    #[test]
    fn camel_case_request_id_is_not_the_permission_key() {
        let text = r#"{"type":"permission_response","requestId":"perm-1-abcdefg","subtype":"error","error":"no"}"#;
        let Parsed::Invalid { error, .. } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(error.field(), "request_id");
    }

    #[test]
    fn a_bound_verdict_must_name_the_call_asked_about() {
        let input = json!({"command": "ls"});
        let digest = super::super::lead_sig::input_digest("Bash", &input);
        let mut answer = PermissionResponse::allow("perm-1-abcdefg", input.clone(), vec![]);
        assert_eq!(
            answer.binding_mismatch(Some("toolu_1"), "Bash", &input),
            None,
            "unbound"
        );
        answer.extra.insert("tool_use_id".into(), json!("toolu_1"));
        answer.extra.insert(
            "approved_request".into(),
            json!({"tool_use_id": "toolu_1", "tool_name": "Bash", "input_digest": digest}),
        );
        assert_eq!(
            answer.binding_mismatch(Some("toolu_1"), "Bash", &input),
            None
        );
        let other = json!({"command": "rm -rf /"});
        let why = answer
            .binding_mismatch(Some("toolu_1"), "Bash", &other)
            .unwrap();
        assert!(why.contains("input_digest"), "{why}");
        let why = answer
            .binding_mismatch(Some("toolu_2"), "Bash", &input)
            .unwrap();
        assert!(why.contains("tool_use_id"), "{why}");
        // Parsed from the wire, the new keys are kept and written back.
        let text = answer.to_text();
        let back = match ProtocolMessage::parse(&text) {
            Parsed::Protocol(ProtocolMessage::PermissionResponse(r)) => r,
            other => panic!("{other:?}"),
        };
        assert_eq!(back.to_text(), text);
    }
}
