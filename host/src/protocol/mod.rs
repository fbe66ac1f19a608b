//! Structured messages carried inside a mailbox entry's `text`: build, parse,
//! validate, render. Nothing here touches the disk; the store writes the text.
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`ProtocolMessage`] (one of the ten), [`Parsed`] (what a `text` is), [`WireMessage`] |
//! | [`MessageKind`] (`kind.rs`) | the closed list of wire `type` strings |
//! | `task.rs` | [`TaskAssignment`], [`TaskCompleted`] |
//! | `idle.rs` | [`IdleNotification`], [`IdleReason`], [`CompletedStatus`] |
//! | `shutdown.rs` | [`ShutdownRequest`], [`ShutdownApproved`], [`ShutdownRejected`] |
//! | `plan.rs` | [`PlanApprovalRequest`], [`PlanApprovalResponse`] |
//! | `permission.rs` | [`PermissionRequest`], [`PermissionResponse`], [`PermissionGrant`], [`PermissionOutcome`] |
//! | [`ids`] | request ids (`shutdown-{ms}@{name}`, `plan_approval-{ms}@{agent}@{team}`, `perm-{ms}-{7}`) and their parsers |
//! | [`lead_sig`] | signed lead entries (Claude Code 2.1.332): the signed bytes, keys, the verdict, plan and input digests |
//! | [`time`] | `now_ms()`, `timestamp_now()` in the reference's format |
//! | [`describe`] | one line in words per message, for people (status, live view, run lines) |
//! | [`render`] | `<teammate-message …>` blocks for the model that reads a message |
//! | `error.rs` | [`ProtocolError`] |
//! | `fields.rs` | (private) reading fields out of JSON objects; shared checks |
//!
//! # What a `text` is
//!
//! [`ProtocolMessage::parse`] sorts an inbox `text` three ways ([`Parsed`]):
//! a JSON object whose `type` is one of the ten kinds is a protocol message, or
//! an invalid one when its shape is wrong (a missing or mistyped field, named in
//! the error); **anything else stays plain text**: prose, JSON that is not an
//! object, objects without a `type` or with a `type` teamhost does not know.
//!
//! Parsing checks shape only. [`WireMessage::validate`] checks invariants (id
//! formats, allowed values, fields that depend on each other) and is separate so
//! a message from a slightly different writer can still be read, logged and
//! answered. Builders (`new`, `approve`, `allow`, …) stamp `timestamp` with the
//! current time and produce messages that validate.
//!
//! # Fidelity
//!
//! Every struct's fields are in the reference's key order and optional keys are
//! left out when unset, so [`ProtocolMessage::to_text`] writes what the reference
//! writes. Keys a message does not know (added by another program or a newer
//! CLI) are kept in its `extra` map and written back after the known ones, so a
//! message parsed from the reference's compact JSON renders back byte-for-byte.
//! Two things are normalised: known keys are written in the reference's order
//! even if they were read in another, and an optional key whose value is `null`
//! is read as absent and not written back.

pub mod describe;
mod error;
mod fields;
mod idle;
pub mod ids;
mod kind;
pub mod lead_sig;
mod permission;
mod plan;
pub mod render;
mod shutdown;
mod task;
pub mod time;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Sender name of the host's own notices (to the lead, and to a teammate
/// about its own state).
pub const HOST_SENDER: &str = "teamhost";

pub use error::ProtocolError;
pub use idle::{CompletedStatus, IdleNotification, IdleReason};
pub use kind::MessageKind;
pub use permission::{PermissionGrant, PermissionOutcome, PermissionRequest, PermissionResponse};
pub use plan::{PlanApprovalRequest, PlanApprovalResponse};
pub use render::render_teammate_message;
pub use shutdown::{ShutdownApproved, ShutdownRejected, ShutdownRequest};
pub use task::{TaskAssignment, TaskCompleted};

/// What every structured message can do, whatever its kind.
///
/// Implemented by the ten message structs. Their `Serialize` writes the full
/// wire object, `type` first; their `Deserialize` reads it through
/// [`WireMessage::from_map`], so errors name the wire field.
pub trait WireMessage: Serialize + Sized {
    /// The wire `type` of this message.
    const KIND: MessageKind;

    /// Reads the message from a JSON object. A `type` key may be present (it
    /// must then be [`Self::KIND`]) or absent. Checks shape only: required
    /// fields present, every known field of the right JSON type. Unknown keys go
    /// to `extra` in their original order.
    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError>;

    /// Checks the invariants of this kind; see each implementation.
    fn validate(&self) -> Result<(), ProtocolError>;

    /// The compact JSON text that goes into a mailbox entry's `text`.
    fn to_text(&self) -> String {
        compact_json(self)
    }
}

/// One structured message of any kind.
///
/// Serialises as the inner message's wire object (each struct writes its own
/// `type`), so `serde_json::to_string(&message)` equals [`ProtocolMessage::to_text`].
/// Deserialising reads the `type` key and fails on unknown types and bad shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ProtocolMessage {
    /// `task_assignment`.
    TaskAssignment(TaskAssignment),
    /// `task_completed`.
    TaskCompleted(TaskCompleted),
    /// `idle_notification`.
    IdleNotification(IdleNotification),
    /// `shutdown_request`.
    ShutdownRequest(ShutdownRequest),
    /// `shutdown_approved`.
    ShutdownApproved(ShutdownApproved),
    /// `shutdown_rejected`.
    ShutdownRejected(ShutdownRejected),
    /// `plan_approval_request`.
    PlanApprovalRequest(PlanApprovalRequest),
    /// `plan_approval_response`.
    PlanApprovalResponse(PlanApprovalResponse),
    /// `permission_request`.
    PermissionRequest(PermissionRequest),
    /// `permission_response`.
    PermissionResponse(PermissionResponse),
}

/// What an inbox `text` turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "a short-lived result taken apart at once; boxing would cost an allocation per message"
)]
pub enum Parsed {
    /// Not a protocol message: prose, JSON that is not an object, or an object
    /// whose `type` is absent or unknown. Deliver it as the text it is.
    Plain,
    /// A well-shaped protocol message (not yet validated).
    Protocol(ProtocolMessage),
    /// A JSON object with a known `type` whose fields do not fit that type.
    Invalid {
        /// The kind its `type` names.
        kind: MessageKind,
        /// Which field is wrong and how.
        error: ProtocolError,
    },
}

impl Parsed {
    /// The message, if this is [`Parsed::Protocol`].
    pub fn protocol(self) -> Option<ProtocolMessage> {
        match self {
            Parsed::Protocol(message) => Some(message),
            Parsed::Plain | Parsed::Invalid { .. } => None,
        }
    }

    /// Whether this is [`Parsed::Plain`].
    pub fn is_plain(&self) -> bool {
        matches!(self, Parsed::Plain)
    }

    /// The kind named by the text's `type`, valid or not; `None` for plain text.
    pub fn kind(&self) -> Option<MessageKind> {
        match self {
            Parsed::Plain => None,
            Parsed::Protocol(message) => Some(message.kind()),
            Parsed::Invalid { kind, .. } => Some(*kind),
        }
    }
}

/// Applies `$body` to the inner message whatever the variant, bound as `$m`.
macro_rules! each_variant {
    ($value:expr, $m:ident => $body:expr) => {
        match $value {
            ProtocolMessage::TaskAssignment($m) => $body,
            ProtocolMessage::TaskCompleted($m) => $body,
            ProtocolMessage::IdleNotification($m) => $body,
            ProtocolMessage::ShutdownRequest($m) => $body,
            ProtocolMessage::ShutdownApproved($m) => $body,
            ProtocolMessage::ShutdownRejected($m) => $body,
            ProtocolMessage::PlanApprovalRequest($m) => $body,
            ProtocolMessage::PlanApprovalResponse($m) => $body,
            ProtocolMessage::PermissionRequest($m) => $body,
            ProtocolMessage::PermissionResponse($m) => $body,
        }
    };
}

impl ProtocolMessage {
    /// Sorts an inbox `text` into [`Parsed::Plain`], [`Parsed::Protocol`] or
    /// [`Parsed::Invalid`] (see the module docs). Never fails and never panics;
    /// texts that do not start with `{` (after whitespace) are plain without
    /// being parsed as JSON.
    pub fn parse(text: &str) -> Parsed {
        if !text.trim_start().starts_with('{') {
            return Parsed::Plain;
        }
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
            return Parsed::Plain;
        };
        let Some(kind) = map
            .get("type")
            .and_then(Value::as_str)
            .and_then(MessageKind::from_wire)
        else {
            return Parsed::Plain;
        };
        match ProtocolMessage::from_map(kind, map) {
            Ok(message) => Parsed::Protocol(message),
            Err(error) => Parsed::Invalid { kind, error },
        }
    }

    /// Reads a message of `kind` from a JSON object (see [`WireMessage::from_map`]).
    pub fn from_map(kind: MessageKind, map: Map<String, Value>) -> Result<Self, ProtocolError> {
        Ok(match kind {
            MessageKind::TaskAssignment => TaskAssignment::from_map(map)?.into(),
            MessageKind::TaskCompleted => TaskCompleted::from_map(map)?.into(),
            MessageKind::IdleNotification => IdleNotification::from_map(map)?.into(),
            MessageKind::ShutdownRequest => ShutdownRequest::from_map(map)?.into(),
            MessageKind::ShutdownApproved => ShutdownApproved::from_map(map)?.into(),
            MessageKind::ShutdownRejected => ShutdownRejected::from_map(map)?.into(),
            MessageKind::PlanApprovalRequest => PlanApprovalRequest::from_map(map)?.into(),
            MessageKind::PlanApprovalResponse => PlanApprovalResponse::from_map(map)?.into(),
            MessageKind::PermissionRequest => PermissionRequest::from_map(map)?.into(),
            MessageKind::PermissionResponse => PermissionResponse::from_map(map)?.into(),
        })
    }

    /// The message's kind.
    pub fn kind(&self) -> MessageKind {
        match self {
            ProtocolMessage::TaskAssignment(_) => MessageKind::TaskAssignment,
            ProtocolMessage::TaskCompleted(_) => MessageKind::TaskCompleted,
            ProtocolMessage::IdleNotification(_) => MessageKind::IdleNotification,
            ProtocolMessage::ShutdownRequest(_) => MessageKind::ShutdownRequest,
            ProtocolMessage::ShutdownApproved(_) => MessageKind::ShutdownApproved,
            ProtocolMessage::ShutdownRejected(_) => MessageKind::ShutdownRejected,
            ProtocolMessage::PlanApprovalRequest(_) => MessageKind::PlanApprovalRequest,
            ProtocolMessage::PlanApprovalResponse(_) => MessageKind::PlanApprovalResponse,
            ProtocolMessage::PermissionRequest(_) => MessageKind::PermissionRequest,
            ProtocolMessage::PermissionResponse(_) => MessageKind::PermissionResponse,
        }
    }

    /// The compact JSON text that goes into a mailbox entry's `text`.
    pub fn to_text(&self) -> String {
        compact_json(self)
    }

    /// Checks the invariants of the inner message (see [`WireMessage::validate`]).
    pub fn validate(&self) -> Result<(), ProtocolError> {
        each_variant!(self, m => m.validate())
    }

    /// Who the body says sent it: `from`, `assignedBy` (task_assignment) or
    /// `agent_id` (permission_request). `None` for `permission_response` and
    /// `plan_approval_response`, whose bodies name no sender (use the mailbox
    /// entry's `from`).
    pub fn sender(&self) -> Option<&str> {
        match self {
            ProtocolMessage::TaskAssignment(m) => Some(&m.assigned_by),
            ProtocolMessage::TaskCompleted(m) => Some(&m.from),
            ProtocolMessage::IdleNotification(m) => Some(&m.from),
            ProtocolMessage::ShutdownRequest(m) => Some(&m.from),
            ProtocolMessage::ShutdownApproved(m) => Some(&m.from),
            ProtocolMessage::ShutdownRejected(m) => Some(&m.from),
            ProtocolMessage::PlanApprovalRequest(m) => Some(&m.from),
            ProtocolMessage::PermissionRequest(m) => Some(&m.agent_id),
            ProtocolMessage::PlanApprovalResponse(_) | ProtocolMessage::PermissionResponse(_) => {
                None
            }
        }
    }

    /// The request id that ties a request to its answer (`requestId` or
    /// `request_id`); `None` for the kinds that have none.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            ProtocolMessage::ShutdownRequest(m) => Some(&m.request_id),
            ProtocolMessage::ShutdownApproved(m) => Some(&m.request_id),
            ProtocolMessage::ShutdownRejected(m) => Some(&m.request_id),
            ProtocolMessage::PlanApprovalRequest(m) => Some(&m.request_id),
            ProtocolMessage::PlanApprovalResponse(m) => Some(&m.request_id),
            ProtocolMessage::PermissionRequest(m) => Some(&m.request_id),
            ProtocolMessage::PermissionResponse(m) => Some(&m.request_id),
            ProtocolMessage::TaskAssignment(_)
            | ProtocolMessage::TaskCompleted(_)
            | ProtocolMessage::IdleNotification(_) => None,
        }
    }

    /// The keys of the inner message that teamhost does not know.
    pub fn extra(&self) -> &Map<String, Value> {
        each_variant!(self, m => &m.extra)
    }
}

impl<'de> Deserialize<'de> for ProtocolMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let map = Map::<String, Value>::deserialize(deserializer)?;
        let kind = match map.get("type") {
            Some(Value::String(name)) => MessageKind::from_wire(name).ok_or_else(|| {
                D::Error::custom(format!("unknown protocol message type {name:?}"))
            })?,
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "protocol message `type` must be a string, found {}",
                    fields::describe(other)
                )))
            }
            None => return Err(D::Error::custom("protocol message has no `type`")),
        };
        ProtocolMessage::from_map(kind, map).map_err(D::Error::custom)
    }
}

/// Wires each message struct into [`ProtocolMessage`] and serde.
macro_rules! wire_messages {
    ($($name:ident),* $(,)?) => {$(
        impl From<$name> for ProtocolMessage {
            fn from(message: $name) -> Self {
                ProtocolMessage::$name(message)
            }
        }

        impl TryFrom<Map<String, Value>> for $name {
            type Error = ProtocolError;

            fn try_from(map: Map<String, Value>) -> Result<Self, ProtocolError> {
                <$name as WireMessage>::from_map(map)
            }
        }
    )*};
}

wire_messages!(
    TaskAssignment,
    TaskCompleted,
    IdleNotification,
    ShutdownRequest,
    ShutdownApproved,
    ShutdownRejected,
    PlanApprovalRequest,
    PlanApprovalResponse,
    PermissionRequest,
    PermissionResponse,
);

/// Serialises a message as compact JSON. The message types hold only strings,
/// booleans and JSON values with string keys, which always serialise.
fn compact_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("a protocol message always serialises to JSON")
}

/// Helpers shared by the per-family tests.
#[cfg(test)]
pub(crate) mod testing {
    use serde_json::Value;

    use super::{Parsed, ProtocolMessage};

    /// Parses `text`, asserts it is a protocol message whose `to_text()`, and
    /// whose serde round trip, equal the compact form of `text` byte for byte,
    /// and returns it.
    pub(crate) fn assert_round_trips(text: &str) -> ProtocolMessage {
        let compact = serde_json::to_string(
            &serde_json::from_str::<Value>(text).expect("test input is JSON"),
        )
        .expect("JSON serialises");
        let message = match ProtocolMessage::parse(text) {
            Parsed::Protocol(message) => message,
            other => panic!("{text} parsed as {other:?}"),
        };
        assert_eq!(message.to_text(), compact, "to_text() changed the text");
        let via_serde: ProtocolMessage = serde_json::from_str(text).expect("serde reads it");
        assert_eq!(via_serde, message, "serde and parse() disagree");
        assert_eq!(
            serde_json::to_string(&via_serde).expect("serialises"),
            compact,
            "serde changed the text"
        );
        message
    }

    /// The top-level keys of a JSON object text, in order.
    pub(crate) fn keys(text: &str) -> Vec<String> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map.keys().cloned().collect(),
            other => panic!("{text} is not a JSON object: {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_stays_plain() {
        for text in [
            "",
            "hello team",
            "你是 analysis-team 的成员 researcher-config...",
            "{not json",
            "{\"type\":\"shutdown_request\"",
        ] {
            assert_eq!(ProtocolMessage::parse(text), Parsed::Plain, "{text:?}");
        }
    }

    #[test]
    fn json_that_is_not_a_protocol_message_stays_plain() {
        for text in [
            r#"{"foo":1}"#,
            "[1]",
            r#"[{"type":"shutdown_request"}]"#,
            r#""shutdown_request""#,
            "42",
            "null",
            r#"{"type":"message","text":"hi"}"#,
            r#"{"type":"teammate_terminated"}"#,
            r#"{"type":"Shutdown_Request","requestId":"x"}"#,
            r#"{"type":7}"#,
            r#"{"type":null}"#,
        ] {
            assert!(ProtocolMessage::parse(text).is_plain(), "{text}");
        }
    }

    #[test]
    fn leading_whitespace_does_not_hide_a_protocol_message() {
        let text = "\n  {\"type\":\"task_completed\",\"from\":\"a\",\"taskId\":\"1\",\"taskSubject\":\"s\",\"timestamp\":\"2026-02-13T10:20:01.002Z\"}\n";
        assert_eq!(
            ProtocolMessage::parse(text).kind(),
            Some(MessageKind::TaskCompleted)
        );
    }

    #[test]
    fn unknown_fields_survive_parse_and_render_in_place() {
        let text = r#"{"type":"shutdown_approved","requestId":"shutdown-1@w","from":"w","timestamp":"2026-11-21T22:26:40.123Z","paneId":"%3","backendType":"tmux","zeta":{"nested":[1,2.5,"x"]},"alpha":true,"msgV":1}"#;
        let message = testing::assert_round_trips(text);
        let keys: Vec<&str> = message.extra().keys().map(String::as_str).collect();
        assert_eq!(keys, ["zeta", "alpha", "msgV"]);
        assert_eq!(message.validate(), Ok(()));
    }

    #[test]
    fn unknown_fields_between_known_ones_move_after_them() {
        let text = r#"{"type":"task_completed","from":"a","extra":1,"taskId":"1","taskSubject":"s","timestamp":"2026-02-13T10:20:01.002Z"}"#;
        let message = ProtocolMessage::parse(text).protocol().expect("protocol");
        assert_eq!(
            message.to_text(),
            r#"{"type":"task_completed","from":"a","taskId":"1","taskSubject":"s","timestamp":"2026-02-13T10:20:01.002Z","extra":1}"#
        );
    }

    #[test]
    fn null_optional_fields_read_as_absent() {
        let text = r#"{"type":"idle_notification","from":"a","timestamp":"2026-02-13T10:10:22.049Z","idleReason":"available","summary":null}"#;
        let Some(ProtocolMessage::IdleNotification(m)) = ProtocolMessage::parse(text).protocol()
        else {
            panic!("not an idle_notification");
        };
        assert_eq!(m.summary, None);
    }

    #[test]
    fn every_kind_with_an_empty_body_is_invalid_and_names_a_field() {
        for kind in MessageKind::ALL {
            let text = format!(r#"{{"type":"{kind}"}}"#);
            match ProtocolMessage::parse(&text) {
                Parsed::Invalid { kind: got, error } => {
                    assert_eq!(got, kind);
                    assert_eq!(error.kind(), kind);
                    let message = error.to_string();
                    assert!(message.starts_with(kind.as_str()), "{message}");
                    assert!(
                        message.contains(&format!("`{}`", error.field())),
                        "{message}"
                    );
                }
                other => panic!("{text} parsed as {other:?}"),
            }
        }
    }

    #[test]
    fn each_struct_serialises_with_its_own_type_first() {
        let message = ShutdownRejected::new("shutdown-1@a", "a", "busy");
        let text = serde_json::to_string(&message).expect("serialises");
        assert!(
            text.starts_with(r#"{"type":"shutdown_rejected","requestId":"#),
            "{text}"
        );
        assert_eq!(ProtocolMessage::from(message).to_text(), text);
    }

    #[test]
    fn a_struct_deserialises_only_from_its_own_type() {
        let text = r#"{"type":"shutdown_rejected","requestId":"shutdown-1@a","from":"a","reason":"r","timestamp":"2026-02-13T10:13:24.001Z"}"#;
        assert!(serde_json::from_str::<ShutdownRejected>(text).is_ok());
        let err = serde_json::from_str::<ShutdownRequest>(text).expect_err("wrong type");
        assert!(
            err.to_string()
                .starts_with("shutdown_request message field `type` must be \"shutdown_request\""),
            "{err}"
        );
    }

    #[test]
    fn deserialising_a_protocol_message_refuses_plain_json() {
        assert!(serde_json::from_str::<ProtocolMessage>(r#"{"foo":1}"#).is_err());
        assert!(serde_json::from_str::<ProtocolMessage>(r#"{"type":"nope"}"#).is_err());
    }

    #[test]
    fn sender_and_request_id_come_from_the_body() {
        let m: ProtocolMessage = TaskAssignment::new("1", "s", "d", "team-lead").into();
        assert_eq!((m.sender(), m.request_id()), (Some("team-lead"), None));
        let m: ProtocolMessage = PermissionResponse::deny("perm-1-abcdefg", "no").into();
        assert_eq!((m.sender(), m.request_id()), (None, Some("perm-1-abcdefg")));
    }

    #[test]
    fn every_builder_output_parses_back_and_validates() {
        let built: Vec<ProtocolMessage> = vec![
            TaskAssignment::new("1", "s", "d", "team-lead").into(),
            TaskCompleted::new("a", "1", "s").into(),
            IdleNotification::new("a", IdleReason::Available).into(),
            ShutdownRequest::new("a", "team-lead", Some("done".into())).into(),
            ShutdownApproved::new("shutdown-1@a", "a")
                .with_pane("%1", "tmux")
                .into(),
            ShutdownRejected::new("shutdown-1@a", "a", "busy").into(),
            PlanApprovalRequest::new("a", "t", "/p.md", "# p").into(),
            PlanApprovalResponse::approve("plan_approval-1@a@t", Some("default".into())).into(),
            PermissionRequest::new("a", "Bash", "toolu_1", "d", Value::Null).into(),
            PermissionResponse::allow("perm-1-abcdefg", Value::Null, Vec::new()).into(),
        ];
        let kinds: Vec<MessageKind> = built.iter().map(ProtocolMessage::kind).collect();
        assert_eq!(kinds, MessageKind::ALL);
        for message in built {
            assert_eq!(message.validate(), Ok(()), "{}", message.to_text());
            let text = message.to_text();
            assert_eq!(testing::assert_round_trips(&text), message);
        }
    }
}
