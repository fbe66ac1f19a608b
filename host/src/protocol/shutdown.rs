//! The shutdown handshake: the lead (or anyone) sends `shutdown_request`; the
//! target answers `shutdown_approved` and exits, or `shutdown_rejected` with a
//! reason. All three carry the same camelCase `requestId`
//! (`shutdown-{ms}@{target}`, see [`super::ids`]).
//!
//! ```text
//! {"type":"shutdown_request","requestId":"shutdown-<ms>@NAME","from":"team-lead","reason":"…","timestamp":"…"}
//! {"type":"shutdown_approved","requestId":"shutdown-<ms>@NAME","from":"NAME","timestamp":"…","paneId":"in-process","backendType":"in-process"}
//! {"type":"shutdown_rejected","requestId":"shutdown-<ms>@NAME","from":"NAME","reason":"…","timestamp":"…"}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::{self, Fields};
use super::{ids, time, MessageKind, ProtocolError, WireMessage};

/// `shutdown_request`: asks the teammate named in `requestId` to exit
/// (seeds 002 App. C.1.5, reference README).
///
/// `reason` is optional: the current reference's `SendMessage` takes
/// `{type:"shutdown_request", reason?}` and the seeds' builder leaves it out when
/// unset. A receiver should treat the request as urgent even behind unread
/// messages (DESIGN, runner loop).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "shutdown_request",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct ShutdownRequest {
    /// `requestId`: `shutdown-{ms}@{target}`.
    pub request_id: String,
    /// Name of the sender (usually `team-lead`).
    pub from: String,
    /// Why (the `SendMessage` content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the request was made (the same millisecond as the id).
    pub timestamp: String,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ShutdownRequest {
    /// A request from `from` asking `target_name` to shut down, made now. The id
    /// and the timestamp name the same millisecond.
    pub fn new(target_name: &str, from: impl Into<String>, reason: Option<String>) -> Self {
        let (ms, timestamp) = time::now_pair();
        ShutdownRequest {
            request_id: ids::shutdown_request_id(target_name, ms),
            from: from.into(),
            reason,
            timestamp,
            extra: Map::new(),
        }
    }

    /// The teammate asked to shut down, read from `requestId`; `None` when the id
    /// is malformed.
    pub fn target(&self) -> Option<&str> {
        ids::parse_shutdown_request_id(&self.request_id)
            .ok()
            .map(|id| id.target)
    }
}

impl WireMessage for ShutdownRequest {
    const KIND: MessageKind = MessageKind::ShutdownRequest;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(ShutdownRequest {
            request_id: f.string("requestId")?,
            from: f.string("from")?,
            reason: f.opt_string("reason")?,
            timestamp: f.string("timestamp")?,
            extra: f.rest(),
        })
    }

    /// `requestId` is `shutdown-{ms}@{name}`; `from` is non-empty; `timestamp`
    /// is RFC 3339.
    fn validate(&self) -> Result<(), ProtocolError> {
        validate_common(Self::KIND, &self.request_id, &self.from, &self.timestamp)
    }
}

/// `shutdown_approved`: the target agrees to shut down and is exiting
/// (seeds 002 App. C.1.6, reference README).
///
/// On receipt the lead removes the member from `config.json` and returns its
/// open tasks to `pending`. `paneId` is the tmux pane (`%71`) or `"in-process"`;
/// `backendType` is the backend the teammate ran in. Both are optional on the
/// wire (seeds 004); the current reference always writes them. `backendType`
/// is not checked against a list: the reference knows `tmux` and `in-process`,
/// teamhost's process backend may write its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "shutdown_approved",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct ShutdownApproved {
    /// `requestId` of the request being approved.
    pub request_id: String,
    /// Name of the teammate shutting down.
    pub from: String,
    /// When it approved.
    pub timestamp: String,
    /// `paneId`: its tmux pane id, or `"in-process"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    /// `backendType`: `"tmux"`, `"in-process"`, ….
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ShutdownApproved {
    /// `from` approves request `request_id` now; no pane or backend (add them with
    /// [`ShutdownApproved::with_pane`], as the reference always does).
    pub fn new(request_id: impl Into<String>, from: impl Into<String>) -> Self {
        ShutdownApproved {
            request_id: request_id.into(),
            from: from.into(),
            timestamp: time::timestamp_now(),
            pane_id: None,
            backend_type: None,
            extra: Map::new(),
        }
    }

    /// Sets `paneId` and `backendType`.
    pub fn with_pane(
        mut self,
        pane_id: impl Into<String>,
        backend_type: impl Into<String>,
    ) -> Self {
        self.pane_id = Some(pane_id.into());
        self.backend_type = Some(backend_type.into());
        self
    }
}

impl WireMessage for ShutdownApproved {
    const KIND: MessageKind = MessageKind::ShutdownApproved;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(ShutdownApproved {
            request_id: f.string("requestId")?,
            from: f.string("from")?,
            timestamp: f.string("timestamp")?,
            pane_id: f.opt_string("paneId")?,
            backend_type: f.opt_string("backendType")?,
            extra: f.rest(),
        })
    }

    /// `requestId` is `shutdown-{ms}@{name}`; `from` is non-empty; `timestamp`
    /// is RFC 3339.
    fn validate(&self) -> Result<(), ProtocolError> {
        validate_common(Self::KIND, &self.request_id, &self.from, &self.timestamp)
    }
}

/// `shutdown_rejected`: the target refuses to shut down and keeps working
/// (seeds 004; shape of the seeds' `createShutdownRejected`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "shutdown_rejected",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct ShutdownRejected {
    /// `requestId` of the request being rejected.
    pub request_id: String,
    /// Name of the teammate refusing.
    pub from: String,
    /// Why it refuses.
    pub reason: String,
    /// When it refused.
    pub timestamp: String,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ShutdownRejected {
    /// `from` rejects request `request_id` now, because of `reason`.
    pub fn new(
        request_id: impl Into<String>,
        from: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        ShutdownRejected {
            request_id: request_id.into(),
            from: from.into(),
            reason: reason.into(),
            timestamp: time::timestamp_now(),
            extra: Map::new(),
        }
    }
}

impl WireMessage for ShutdownRejected {
    const KIND: MessageKind = MessageKind::ShutdownRejected;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(ShutdownRejected {
            request_id: f.string("requestId")?,
            from: f.string("from")?,
            reason: f.string("reason")?,
            timestamp: f.string("timestamp")?,
            extra: f.rest(),
        })
    }

    /// `requestId` is `shutdown-{ms}@{name}`; `from` is non-empty; `timestamp`
    /// is RFC 3339.
    fn validate(&self) -> Result<(), ProtocolError> {
        validate_common(Self::KIND, &self.request_id, &self.from, &self.timestamp)
    }
}

fn validate_common(
    kind: MessageKind,
    request_id: &str,
    from: &str,
    timestamp: &str,
) -> Result<(), ProtocolError> {
    fields::request_id(
        kind,
        "requestId",
        ids::parse_shutdown_request_id(request_id),
    )?;
    fields::non_empty(kind, "from", from)?;
    fields::timestamp(kind, "timestamp", timestamp)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_round_trips, keys};
    use super::super::{Parsed, ProtocolMessage};
    use super::*;

    /// Seeds 002 App. C.1.5.
    const REQUEST_SEED: &str = r#"{"type":"shutdown_request","requestId":"shutdown-1770977603516@verifier-01","from":"team-lead","reason":"验证完成，请关闭","timestamp":"2026-02-13T10:13:23.516Z"}"#;
    /// Seeds 002 App. C.1.6.
    const APPROVED_SEED: &str = r#"{"type":"shutdown_approved","requestId":"shutdown-1770977604066@verifier-02","from":"verifier-02","timestamp":"2026-02-13T10:13:29.576Z","paneId":"%71","backendType":"tmux"}"#;
    /// Reference README, an in-process teammate.
    const APPROVED_REFERENCE: &str = r#"{"type":"shutdown_approved","requestId":"shutdown-1763764000000@wasm-pane","from":"wasm-pane","timestamp":"2026-11-21T22:26:40.123Z","paneId":"in-process","backendType":"in-process"}"#;
    /// Seeds 004 / 000 `shutdown_rejected` shape.
    const REJECTED: &str = r#"{"type":"shutdown_rejected","requestId":"shutdown-1770977603516@verifier-01","from":"verifier-01","reason":"Still working on task #2","timestamp":"2026-02-13T10:13:24.001Z"}"#;

    #[test]
    fn seed_shutdown_request_parses_with_its_fields_and_round_trips() {
        let ProtocolMessage::ShutdownRequest(m) = assert_round_trips(REQUEST_SEED) else {
            panic!("not a shutdown_request");
        };
        assert_eq!(m.request_id, "shutdown-1770977603516@verifier-01");
        assert_eq!(m.target(), Some("verifier-01"));
        assert_eq!(m.from, "team-lead");
        assert_eq!(m.reason.as_deref(), Some("验证完成，请关闭"));
        assert_eq!(m.timestamp, "2026-02-13T10:13:23.516Z");
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn shutdown_request_builder_matches_the_seed_byte_for_byte_but_for_the_clock() {
        let m = ShutdownRequest::new("verifier-01", "team-lead", Some("验证完成，请关闭".into()));
        let ms = ids::parse_shutdown_request_id(&m.request_id)
            .expect("own id parses")
            .ms;
        assert_eq!(
            time::timestamp_from_ms(ms).as_deref(),
            Some(m.timestamp.as_str())
        );
        let expected = REQUEST_SEED
            .replace("1770977603516", &ms.to_string())
            .replace("2026-02-13T10:13:23.516Z", &m.timestamp);
        assert_eq!(m.to_text(), expected);
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn shutdown_request_without_reason_leaves_the_key_out() {
        let m = ShutdownRequest::new("bob", "team-lead", None);
        assert_eq!(
            keys(&m.to_text()),
            ["type", "requestId", "from", "timestamp"]
        );
        let text = m.to_text();
        assert_round_trips(&text);
    }

    #[test]
    fn seed_and_reference_shutdown_approved_parse_and_round_trip() {
        let ProtocolMessage::ShutdownApproved(m) = assert_round_trips(APPROVED_SEED) else {
            panic!("not a shutdown_approved");
        };
        assert_eq!(m.request_id, "shutdown-1770977604066@verifier-02");
        assert_eq!(m.from, "verifier-02");
        assert_eq!(m.pane_id.as_deref(), Some("%71"));
        assert_eq!(m.backend_type.as_deref(), Some("tmux"));
        assert_eq!(m.validate(), Ok(()));
        let ProtocolMessage::ShutdownApproved(m) = assert_round_trips(APPROVED_REFERENCE) else {
            panic!("not a shutdown_approved");
        };
        assert_eq!(m.pane_id.as_deref(), Some("in-process"));
    }

    #[test]
    fn shutdown_approved_builder_writes_reference_key_order() {
        let m = ShutdownApproved::new("shutdown-1@wasm-pane", "wasm-pane")
            .with_pane("in-process", "in-process");
        assert_eq!(keys(&m.to_text()), keys(APPROVED_REFERENCE));
        assert_eq!(m.validate(), Ok(()));
        let bare = ShutdownApproved::new("shutdown-1@wasm-pane", "wasm-pane");
        assert_eq!(
            keys(&bare.to_text()),
            ["type", "requestId", "from", "timestamp"]
        );
    }

    #[test]
    fn shutdown_rejected_parses_with_its_fields_and_round_trips() {
        let ProtocolMessage::ShutdownRejected(m) = assert_round_trips(REJECTED) else {
            panic!("not a shutdown_rejected");
        };
        assert_eq!(m.from, "verifier-01");
        assert_eq!(m.reason, "Still working on task #2");
        assert_eq!(m.validate(), Ok(()));
        let built = ShutdownRejected::new(m.request_id.clone(), "verifier-01", "busy");
        assert_eq!(keys(&built.to_text()), keys(REJECTED));
    }

    #[test]
    fn shutdown_rejected_without_reason_is_invalid_naming_the_field() {
        let text = r#"{"type":"shutdown_rejected","requestId":"shutdown-1@a","from":"a","timestamp":"2026-02-13T10:13:24.001Z"}"#;
        let Parsed::Invalid { kind, error } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(kind, MessageKind::ShutdownRejected);
        assert_eq!(
            error.to_string(),
            "shutdown_rejected message is missing required field `reason`"
        );
    }

    #[test]
    fn request_id_of_the_wrong_family_fails_validation() {
        let mut m = ShutdownApproved::new("perm-1-abcdefg", "a");
        let err = m.validate().expect_err("perm id on a shutdown");
        assert_eq!(err.field(), "requestId");
        assert!(err.to_string().contains("wrong prefix"), "{err}");
        m.request_id = String::new();
        assert_eq!(m.validate().expect_err("empty id").field(), "requestId");
    }
}
