//! `idle_notification`: a teammate's turn ended. Written to the lead's inbox after
//! every turn, with a `summary` of the last peer message when the turn sent one.
//!
//! ```text
//! {"type":"idle_notification","from":"NAME","timestamp":"…","idleReason":"available"}
//! … optionally followed by "summary","completedTaskId","completedStatus","failureReason"
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::{self, Fields};
use super::{time, MessageKind, ProtocolError, WireMessage};

/// Why a teammate went idle (`idleReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdleReason {
    /// `available`: the turn ended normally; ready for work.
    Available,
    /// `interrupted`: the turn was interrupted.
    Interrupted,
    /// `failed`: the turn failed.
    Failed,
}

impl IdleReason {
    /// Every reason, in wire order.
    pub const ALL: [IdleReason; 3] = [
        IdleReason::Available,
        IdleReason::Interrupted,
        IdleReason::Failed,
    ];

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            IdleReason::Available => "available",
            IdleReason::Interrupted => "interrupted",
            IdleReason::Failed => "failed",
        }
    }

    /// The reason written as `text`, or `None` for any other string.
    pub fn from_wire(text: &str) -> Option<Self> {
        IdleReason::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// How the task a teammate just finished ended (`completedStatus`).
///
/// The reference README's `resolved|blocked|failed` is used; seeds 004's
/// `success|failed` describes an older CLI and fails validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletedStatus {
    /// `resolved`: the task is done.
    Resolved,
    /// `blocked`: the task cannot proceed.
    Blocked,
    /// `failed`: the task failed.
    Failed,
}

impl CompletedStatus {
    /// Every status, in wire order.
    pub const ALL: [CompletedStatus; 3] = [
        CompletedStatus::Resolved,
        CompletedStatus::Blocked,
        CompletedStatus::Failed,
    ];

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            CompletedStatus::Resolved => "resolved",
            CompletedStatus::Blocked => "blocked",
            CompletedStatus::Failed => "failed",
        }
    }

    /// The status written as `text`, or `None` for any other string.
    pub fn from_wire(text: &str) -> Option<Self> {
        CompletedStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// `idle_notification` (seeds 002 App. C.1.4, reference README).
///
/// String-typed fields keep whatever another writer put there, so parsing never
/// loses data; [`IdleNotification::reason`] and [`IdleNotification::status`] give
/// the typed view and [`WireMessage::validate`] checks the values. `idleReason` is
/// optional on the wire (seeds 004 types it `idleReason?`) but every builder here
/// writes it, as the current reference always does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "idle_notification",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct IdleNotification {
    /// Name of the teammate that went idle.
    pub from: String,
    /// When it went idle.
    pub timestamp: String,
    /// `idleReason`: `available`, `interrupted` or `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_reason: Option<String>,
    /// `[to {recipient}] {summary}` of the peer message the turn sent, if any
    /// (see [`IdleNotification::peer_dm_summary`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// `completedTaskId`: the task the turn finished, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_task_id: Option<String>,
    /// `completedStatus`: `resolved`, `blocked` or `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_status: Option<String>,
    /// `failureReason`: why the turn or task failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl IdleNotification {
    /// `from` went idle now for `reason`; no summary, no completed task.
    pub fn new(from: impl Into<String>, reason: IdleReason) -> Self {
        IdleNotification {
            from: from.into(),
            timestamp: time::timestamp_now(),
            idle_reason: Some(reason.as_str().to_string()),
            summary: None,
            completed_task_id: None,
            completed_status: None,
            failure_reason: None,
            extra: Map::new(),
        }
    }

    /// Sets `summary` (use [`IdleNotification::peer_dm_summary`] for the
    /// reference's peer-message form).
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }

    /// Sets `completedTaskId` and `completedStatus`.
    pub fn with_completed_task(
        mut self,
        task_id: impl Into<String>,
        status: CompletedStatus,
    ) -> Self {
        self.completed_task_id = Some(task_id.into());
        self.completed_status = Some(status.as_str().to_string());
        self
    }

    /// Sets `failureReason`.
    pub fn with_failure_reason(mut self, reason: impl Into<String>) -> Self {
        self.failure_reason = Some(reason.into());
        self
    }

    /// Sets `result` (Claude Code 2.1.332): the turn's final text, cut to
    /// [`IdleNotification::RESULT_MAX_CHARS`] characters with
    /// [`IdleNotification::RESULT_CUT`] at the end when longer. Kept with
    /// the keys 2.1.197 does not know, so it is written after them.
    pub fn with_result(mut self, text: &str) -> Self {
        let result = if text.chars().count() > Self::RESULT_MAX_CHARS {
            let keep = Self::RESULT_MAX_CHARS - Self::RESULT_CUT.chars().count();
            let mut cut: String = text.chars().take(keep).collect();
            cut.push_str(Self::RESULT_CUT);
            cut
        } else {
            text.to_string()
        };
        self.extra.insert("result".into(), Value::String(result));
        self
    }

    /// Longest `result`, in characters, marker included (the reference's cap).
    pub const RESULT_MAX_CHARS: usize = 4000;

    /// What ends a `result` that was cut.
    pub const RESULT_CUT: &'static str = "\n… [truncated]";

    /// The reference's summary for a turn that sent a peer message:
    /// `[to {recipient}] {summary}`.
    pub fn peer_dm_summary(recipient: &str, summary: &str) -> String {
        format!("[to {recipient}] {summary}")
    }

    /// `idleReason` as a typed value; `None` when absent or not a known reason.
    pub fn reason(&self) -> Option<IdleReason> {
        self.idle_reason.as_deref().and_then(IdleReason::from_wire)
    }

    /// `completedStatus` as a typed value; `None` when absent or not known.
    pub fn status(&self) -> Option<CompletedStatus> {
        self.completed_status
            .as_deref()
            .and_then(CompletedStatus::from_wire)
    }
}

impl WireMessage for IdleNotification {
    const KIND: MessageKind = MessageKind::IdleNotification;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(IdleNotification {
            from: f.string("from")?,
            timestamp: f.string("timestamp")?,
            idle_reason: f.opt_string("idleReason")?,
            summary: f.opt_string("summary")?,
            completed_task_id: f.opt_string("completedTaskId")?,
            completed_status: f.opt_string("completedStatus")?,
            failure_reason: f.opt_string("failureReason")?,
            extra: f.rest(),
        })
    }

    /// `from` is non-empty; `timestamp` is RFC 3339; `idleReason`, when present,
    /// is `available|interrupted|failed`; `completedStatus`, when present, is
    /// `resolved|blocked|failed`.
    fn validate(&self) -> Result<(), ProtocolError> {
        let kind = Self::KIND;
        fields::non_empty(kind, "from", &self.from)?;
        fields::timestamp(kind, "timestamp", &self.timestamp)?;
        if let Some(reason) = &self.idle_reason {
            let allowed = IdleReason::ALL.map(IdleReason::as_str);
            fields::one_of(kind, "idleReason", reason, &allowed)?;
        }
        if let Some(status) = &self.completed_status {
            let allowed = CompletedStatus::ALL.map(CompletedStatus::as_str);
            fields::one_of(kind, "completedStatus", status, &allowed)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_round_trips, keys};
    use super::super::{Parsed, ProtocolMessage};
    use super::*;

    /// Seeds 002 App. C.1.4, basic form.
    const SEED_BASIC: &str = r#"{"type":"idle_notification","from":"verifier-01","timestamp":"2026-02-13T10:10:22.049Z","idleReason":"available"}"#;
    /// Seeds 002 App. C.1.4, after a peer message.
    const SEED_P2P: &str = r#"{"type":"idle_notification","from":"alice","timestamp":"2026-02-13T10:45:27.138Z","idleReason":"available","summary":"[to bob] Alice-P2P-DM"}"#;
    /// reference/samples inboxes/team-lead.json.
    const REFERENCE: &str = r#"{"type":"idle_notification","from":"wasm-pane","timestamp":"2026-11-21T22:24:52.675Z","idleReason":"available"}"#;
    /// Every optional field, in the reference's order.
    const FULL: &str = r#"{"type":"idle_notification","from":"worker","timestamp":"2026-11-21T22:24:52.675Z","idleReason":"failed","summary":"[to bob] hi","completedTaskId":"4","completedStatus":"blocked","failureReason":"tool denied"}"#;

    #[test]
    fn seed_idle_notification_parses_with_its_fields_and_round_trips() {
        let ProtocolMessage::IdleNotification(m) = assert_round_trips(SEED_BASIC) else {
            panic!("not an idle_notification");
        };
        assert_eq!(m.from, "verifier-01");
        assert_eq!(m.timestamp, "2026-02-13T10:10:22.049Z");
        assert_eq!(m.reason(), Some(IdleReason::Available));
        assert_eq!(m.summary, None);
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn peer_message_summary_survives_the_round_trip() {
        let ProtocolMessage::IdleNotification(m) = assert_round_trips(SEED_P2P) else {
            panic!("not an idle_notification");
        };
        assert_eq!(m.summary.as_deref(), Some("[to bob] Alice-P2P-DM"));
        assert_eq!(
            m.summary.as_deref(),
            Some(IdleNotification::peer_dm_summary("bob", "Alice-P2P-DM").as_str())
        );
    }

    #[test]
    fn reference_idle_notification_round_trips() {
        assert_eq!(assert_round_trips(REFERENCE).validate(), Ok(()));
    }

    #[test]
    fn every_optional_field_parses_and_round_trips() {
        let ProtocolMessage::IdleNotification(m) = assert_round_trips(FULL) else {
            panic!("not an idle_notification");
        };
        assert_eq!(m.reason(), Some(IdleReason::Failed));
        assert_eq!(m.completed_task_id.as_deref(), Some("4"));
        assert_eq!(m.status(), Some(CompletedStatus::Blocked));
        assert_eq!(m.failure_reason.as_deref(), Some("tool denied"));
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn idle_builder_writes_reference_key_order() {
        let basic = IdleNotification::new("verifier-01", IdleReason::Available);
        assert_eq!(
            basic.to_text(),
            SEED_BASIC.replace("2026-02-13T10:10:22.049Z", &basic.timestamp)
        );
        let full = IdleNotification::new("worker", IdleReason::Failed)
            .with_summary(IdleNotification::peer_dm_summary("bob", "hi"))
            .with_completed_task("4", CompletedStatus::Blocked)
            .with_failure_reason("tool denied");
        assert_eq!(keys(&full.to_text()), keys(FULL));
        assert_eq!(full.validate(), Ok(()));
    }

    #[test]
    fn missing_idle_reason_is_accepted_as_the_seed_types_allow() {
        let text =
            r#"{"type":"idle_notification","from":"a","timestamp":"2026-02-13T10:10:22.049Z"}"#;
        let m = assert_round_trips(text);
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn unknown_idle_reason_fails_validation_but_still_parses() {
        let text = r#"{"type":"idle_notification","from":"a","timestamp":"2026-02-13T10:10:22.049Z","idleReason":"sleepy"}"#;
        let m = assert_round_trips(text);
        let err = m.validate().expect_err("sleepy is not a reason");
        assert_eq!(
            err.to_string(),
            "idle_notification message field `idleReason` must be one of \
             available|interrupted|failed, found \"sleepy\""
        );
    }

    #[test]
    fn old_success_completed_status_fails_validation() {
        let text = r#"{"type":"idle_notification","from":"a","timestamp":"2026-02-13T10:10:22.049Z","idleReason":"available","completedTaskId":"1","completedStatus":"success"}"#;
        let err = assert_round_trips(text).validate().expect_err("success");
        assert_eq!(err.field(), "completedStatus");
    }

    #[test]
    fn idle_notification_without_from_is_invalid_naming_the_field() {
        let text = r#"{"type":"idle_notification","timestamp":"2026-02-13T10:10:22.049Z","idleReason":"available"}"#;
        let Parsed::Invalid { kind, error } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(kind, MessageKind::IdleNotification);
        assert_eq!(error.field(), "from");
        assert!(error.to_string().contains("idle_notification"), "{error}");
    }

    #[test]
    fn bad_timestamp_fails_validation() {
        let mut m = IdleNotification::new("a", IdleReason::Available);
        m.timestamp = "13/02/2026".into();
        assert_eq!(
            m.validate().expect_err("bad timestamp").field(),
            "timestamp"
        );
    }

    #[test]
    fn result_is_capped_at_4000_characters_with_a_marker() {
        let short = IdleNotification::new("w", IdleReason::Available).with_result("done");
        assert_eq!(short.extra["result"], "done");
        let text = short.to_text();
        assert!(text.ends_with(r#""result":"done"}"#), "{text}");
        let long = "é".repeat(5000);
        let cut = IdleNotification::new("w", IdleReason::Available).with_result(&long);
        let result = cut.extra["result"].as_str().unwrap();
        assert_eq!(result.chars().count(), IdleNotification::RESULT_MAX_CHARS);
        assert!(result.ends_with(IdleNotification::RESULT_CUT));
        assert!(result.starts_with("éé"));
    }
}
