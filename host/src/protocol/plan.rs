//! Plan approval: a teammate in plan mode sends `plan_approval_request` with its
//! plan inline; the lead answers `plan_approval_response`, approving (with the
//! permission mode to continue in) or rejecting (with feedback). Both carry the
//! camelCase `requestId` `plan_approval-{ms}@{agent}@{team}` (see [`super::ids`]).
//!
//! ```text
//! {"type":"plan_approval_request","from":"NAME","timestamp":"…","planFilePath":"…","planContent":"…","requestId":"…"}
//! {"type":"plan_approval_response","requestId":"…","approved":true,"timestamp":"…","permissionMode":"acceptEdits"}
//! {"type":"plan_approval_response","requestId":"…","approved":false,"feedback":"…","timestamp":"…"}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::{self, Fields};
use super::{ids, time, MessageKind, ProtocolError, WireMessage};

/// `plan_approval_request` (seeds 002 App. C.1.7). Note the reference's key
/// order: `requestId` comes last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "plan_approval_request",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct PlanApprovalRequest {
    /// Name of the teammate asking.
    pub from: String,
    /// When it asked (the same millisecond as the id).
    pub timestamp: String,
    /// `planFilePath`: absolute path of the plan file.
    pub plan_file_path: String,
    /// `planContent`: the whole plan, Markdown, inline.
    pub plan_content: String,
    /// `requestId`: `plan_approval-{ms}@{from}@{team}`.
    pub request_id: String,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PlanApprovalRequest {
    /// `from`, a member of `team`, asks now to have the plan at `plan_file_path`
    /// approved. The id and the timestamp name the same millisecond.
    pub fn new(
        from: &str,
        team: &str,
        plan_file_path: impl Into<String>,
        plan_content: impl Into<String>,
    ) -> Self {
        let (ms, timestamp) = time::now_pair();
        PlanApprovalRequest {
            from: from.to_string(),
            timestamp,
            plan_file_path: plan_file_path.into(),
            plan_content: plan_content.into(),
            request_id: ids::plan_approval_request_id(from, team, ms),
            extra: Map::new(),
        }
    }
}

impl WireMessage for PlanApprovalRequest {
    const KIND: MessageKind = MessageKind::PlanApprovalRequest;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(PlanApprovalRequest {
            from: f.string("from")?,
            timestamp: f.string("timestamp")?,
            plan_file_path: f.string("planFilePath")?,
            plan_content: f.string("planContent")?,
            request_id: f.string("requestId")?,
            extra: f.rest(),
        })
    }

    /// `from` is non-empty; `timestamp` is RFC 3339; `planFilePath` is
    /// non-empty; `requestId` is `plan_approval-{ms}@{agent}@{team}`. (Whether
    /// the agent in the id equals `from` is not checked.)
    fn validate(&self) -> Result<(), ProtocolError> {
        let kind = Self::KIND;
        fields::non_empty(kind, "from", &self.from)?;
        fields::timestamp(kind, "timestamp", &self.timestamp)?;
        fields::non_empty(kind, "planFilePath", &self.plan_file_path)?;
        fields::request_id(
            kind,
            "requestId",
            ids::parse_plan_approval_request_id(&self.request_id),
        )
    }
}

/// `plan_approval_response` (seeds 002 App. C.1.8).
///
/// `permissionMode` (the mode the teammate continues in, inherited from the
/// lead) appears only when approved; `feedback` only when rejected. Key order
/// is the reference's: `feedback` before `timestamp`, `permissionMode` after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "plan_approval_response",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct PlanApprovalResponse {
    /// `requestId` of the request answered.
    pub request_id: String,
    /// Whether the plan is approved.
    pub approved: bool,
    /// Why the plan was rejected (rejections only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// When the lead answered.
    pub timestamp: String,
    /// `permissionMode` to continue in (approvals only), e.g. `"acceptEdits"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PlanApprovalResponse {
    /// Approves request `request_id` now; the teammate continues in
    /// `permission_mode` (the reference always sends one).
    pub fn approve(request_id: impl Into<String>, permission_mode: Option<String>) -> Self {
        PlanApprovalResponse {
            request_id: request_id.into(),
            approved: true,
            feedback: None,
            timestamp: time::timestamp_now(),
            permission_mode,
            extra: Map::new(),
        }
    }

    /// Adds `planDigest` (Claude Code 2.1.332): the hex SHA-256 of the
    /// request's `planContent`, which a keyed 2.1.332 teammate requires on
    /// an approval ([`lead_sig::plan_digest`](super::lead_sig::plan_digest)).
    pub fn with_plan_digest(mut self, plan_content: &str) -> Self {
        self.extra.insert(
            "planDigest".into(),
            Value::String(super::lead_sig::plan_digest(plan_content)),
        );
        self
    }

    /// `planDigest`, when the answer carries one.
    pub fn plan_digest(&self) -> Option<&str> {
        self.extra.get("planDigest").and_then(Value::as_str)
    }

    /// Rejects request `request_id` now, with optional `feedback`.
    pub fn reject(request_id: impl Into<String>, feedback: Option<String>) -> Self {
        PlanApprovalResponse {
            request_id: request_id.into(),
            approved: false,
            feedback,
            timestamp: time::timestamp_now(),
            permission_mode: None,
            extra: Map::new(),
        }
    }
}

impl WireMessage for PlanApprovalResponse {
    const KIND: MessageKind = MessageKind::PlanApprovalResponse;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(PlanApprovalResponse {
            request_id: f.string("requestId")?,
            approved: f.boolean("approved")?,
            feedback: f.opt_string("feedback")?,
            timestamp: f.string("timestamp")?,
            permission_mode: f.opt_string("permissionMode")?,
            extra: f.rest(),
        })
    }

    /// `requestId` is `plan_approval-{ms}@{agent}@{team}`; `timestamp` is
    /// RFC 3339; `permissionMode` only when approved; `feedback` only when
    /// rejected.
    fn validate(&self) -> Result<(), ProtocolError> {
        let kind = Self::KIND;
        fields::request_id(
            kind,
            "requestId",
            ids::parse_plan_approval_request_id(&self.request_id),
        )?;
        fields::timestamp(kind, "timestamp", &self.timestamp)?;
        if self.approved {
            fields::absent(kind, "feedback", &self.feedback, "when approved is true")
        } else {
            fields::absent(
                kind,
                "permissionMode",
                &self.permission_mode,
                "when approved is false",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_round_trips, keys};
    use super::super::{Parsed, ProtocolMessage};
    use super::*;

    /// Seeds 002 App. C.1.7.
    const REQUEST_SEED: &str = r##"{"type":"plan_approval_request","from":"planner-01","timestamp":"2026-02-13T10:43:07.887Z","planFilePath":"/Users/night/.claude/plans/snug-inventing-popcorn.md","planContent":"# 计划标题\n\n## 步骤...","requestId":"plan_approval-1770979387887@planner-01@advanced-verify"}"##;
    /// Seeds 002 App. C.1.8, approved.
    const APPROVED_SEED: &str = r#"{"type":"plan_approval_response","requestId":"plan_approval-1770979387887@planner-01@advanced-verify","approved":true,"timestamp":"2026-02-13T10:43:07.980Z","permissionMode":"acceptEdits"}"#;
    /// Seeds 002 App. C.1.8, rejected.
    const REJECTED_SEED: &str = r#"{"type":"plan_approval_response","requestId":"plan_approval-1770985126334@planner-reject@plan-reject-verify","approved":false,"feedback":"计划需要补充：请增加对子目录中 .md 文件的扫描，不要仅限于根目录。","timestamp":"2026-02-13T12:19:03.344Z"}"#;

    #[test]
    fn seed_plan_approval_request_parses_with_its_fields_and_round_trips() {
        let ProtocolMessage::PlanApprovalRequest(m) = assert_round_trips(REQUEST_SEED) else {
            panic!("not a plan_approval_request");
        };
        assert_eq!(m.from, "planner-01");
        assert_eq!(
            m.plan_file_path,
            "/Users/night/.claude/plans/snug-inventing-popcorn.md"
        );
        assert_eq!(m.plan_content, "# 计划标题\n\n## 步骤...");
        assert_eq!(
            m.request_id,
            "plan_approval-1770979387887@planner-01@advanced-verify"
        );
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn plan_approval_request_builder_writes_reference_key_order_and_one_instant() {
        let m = PlanApprovalRequest::new("planner-01", "advanced-verify", "/p.md", "# plan");
        assert_eq!(keys(&m.to_text()), keys(REQUEST_SEED));
        let id = ids::parse_plan_approval_request_id(&m.request_id).expect("own id parses");
        assert_eq!((id.agent, id.team), ("planner-01", "advanced-verify"));
        assert_eq!(time::timestamp_from_ms(id.ms), Some(m.timestamp.clone()));
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn seed_plan_approval_responses_parse_with_their_fields_and_round_trip() {
        let ProtocolMessage::PlanApprovalResponse(yes) = assert_round_trips(APPROVED_SEED) else {
            panic!("not a plan_approval_response");
        };
        assert!(yes.approved);
        assert_eq!(yes.permission_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(yes.feedback, None);
        assert_eq!(yes.validate(), Ok(()));

        let ProtocolMessage::PlanApprovalResponse(no) = assert_round_trips(REJECTED_SEED) else {
            panic!("not a plan_approval_response");
        };
        assert!(!no.approved);
        assert!(no
            .feedback
            .as_deref()
            .is_some_and(|f| f.starts_with("计划需要补充")));
        assert_eq!(no.permission_mode, None);
        assert_eq!(no.validate(), Ok(()));
    }

    #[test]
    fn plan_approval_response_builders_write_reference_key_order() {
        let id = "plan_approval-1@planner-01@t";
        let yes = PlanApprovalResponse::approve(id, Some("acceptEdits".into()));
        assert_eq!(keys(&yes.to_text()), keys(APPROVED_SEED));
        assert_eq!(yes.validate(), Ok(()));
        let no = PlanApprovalResponse::reject(id, Some("more tests".into()));
        assert_eq!(keys(&no.to_text()), keys(REJECTED_SEED));
        assert_eq!(no.validate(), Ok(()));
    }

    #[test]
    fn permission_mode_on_a_rejection_fails_validation() {
        let mut m = PlanApprovalResponse::reject("plan_approval-1@a@t", None);
        m.permission_mode = Some("default".into());
        let err = m.validate().expect_err("mode on rejection");
        assert_eq!(
            err.to_string(),
            "plan_approval_response message field `permissionMode` must be absent when approved is false"
        );
    }

    #[test]
    fn feedback_on_an_approval_fails_validation() {
        let mut m = PlanApprovalResponse::approve("plan_approval-1@a@t", None);
        m.feedback = Some("nice".into());
        assert_eq!(m.validate().expect_err("feedback").field(), "feedback");
    }

    #[test]
    fn string_approved_is_invalid_naming_the_field() {
        let text = r#"{"type":"plan_approval_response","requestId":"plan_approval-1@a@t","approved":"yes","timestamp":"2026-02-13T10:43:07.980Z"}"#;
        let Parsed::Invalid { kind, error } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(kind, MessageKind::PlanApprovalResponse);
        assert_eq!(
            error.to_string(),
            "plan_approval_response message field `approved` must be a boolean, found a string"
        );
    }

    #[test]
    fn plan_approval_request_without_plan_content_is_invalid() {
        let text = r#"{"type":"plan_approval_request","from":"p","timestamp":"2026-02-13T10:43:07.887Z","planFilePath":"/p.md","requestId":"plan_approval-1@p@t"}"#;
        let Parsed::Invalid { error, .. } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(error.field(), "planContent");
    }
}
