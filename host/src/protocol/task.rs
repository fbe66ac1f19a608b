//! The task messages: `task_assignment` (a task got an owner; written to the new
//! owner's inbox) and `task_completed` (a teammate finished a task).
//!
//! ```text
//! {"type":"task_assignment","taskId":"1","subject":"…","description":"…","assignedBy":"team-lead","timestamp":"…"}
//! {"type":"task_completed","from":"NAME","taskId":"1","taskSubject":"…","timestamp":"…"}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::{self, Fields};
use super::{time, MessageKind, ProtocolError, WireMessage};

/// `task_assignment`: tells a teammate it now owns a task (seeds 002 App. C.1.3).
///
/// The sender is `assignedBy`, not `from`. Written by whoever sets a task's
/// owner to someone else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "task_assignment",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct TaskAssignment {
    /// `taskId`: the task's id (`"1"`, `"2"`, …).
    pub task_id: String,
    /// The task's subject.
    pub subject: String,
    /// The task's description.
    pub description: String,
    /// `assignedBy`: name of the agent that set the owner.
    pub assigned_by: String,
    /// When the assignment was made.
    pub timestamp: String,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskAssignment {
    /// An assignment of task `task_id` made now by `assigned_by`.
    pub fn new(
        task_id: impl Into<String>,
        subject: impl Into<String>,
        description: impl Into<String>,
        assigned_by: impl Into<String>,
    ) -> Self {
        TaskAssignment {
            task_id: task_id.into(),
            subject: subject.into(),
            description: description.into(),
            assigned_by: assigned_by.into(),
            timestamp: time::timestamp_now(),
            extra: Map::new(),
        }
    }
}

impl WireMessage for TaskAssignment {
    const KIND: MessageKind = MessageKind::TaskAssignment;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(TaskAssignment {
            task_id: f.string("taskId")?,
            subject: f.string("subject")?,
            description: f.string("description")?,
            assigned_by: f.string("assignedBy")?,
            timestamp: f.string("timestamp")?,
            extra: f.rest(),
        })
    }

    /// `taskId` and `assignedBy` are non-empty; `timestamp` is RFC 3339.
    fn validate(&self) -> Result<(), ProtocolError> {
        let kind = Self::KIND;
        fields::non_empty(kind, "taskId", &self.task_id)?;
        fields::non_empty(kind, "assignedBy", &self.assigned_by)?;
        fields::timestamp(kind, "timestamp", &self.timestamp)
    }
}

/// `task_completed`: a teammate reports that it finished a task (seeds 004).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename = "task_completed",
    rename_all = "camelCase",
    try_from = "Map<String, Value>"
)]
pub struct TaskCompleted {
    /// Name of the teammate that completed the task.
    pub from: String,
    /// `taskId`: the completed task's id.
    pub task_id: String,
    /// `taskSubject`: the completed task's subject.
    pub task_subject: String,
    /// When the task was completed.
    pub timestamp: String,
    /// Keys written by other programs that teamhost does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskCompleted {
    /// `from` completed task `task_id` now.
    pub fn new(
        from: impl Into<String>,
        task_id: impl Into<String>,
        task_subject: impl Into<String>,
    ) -> Self {
        TaskCompleted {
            from: from.into(),
            task_id: task_id.into(),
            task_subject: task_subject.into(),
            timestamp: time::timestamp_now(),
            extra: Map::new(),
        }
    }
}

impl WireMessage for TaskCompleted {
    const KIND: MessageKind = MessageKind::TaskCompleted;

    fn from_map(map: Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut f = Fields::top(Self::KIND, map)?;
        Ok(TaskCompleted {
            from: f.string("from")?,
            task_id: f.string("taskId")?,
            task_subject: f.string("taskSubject")?,
            timestamp: f.string("timestamp")?,
            extra: f.rest(),
        })
    }

    /// `from` and `taskId` are non-empty; `timestamp` is RFC 3339.
    fn validate(&self) -> Result<(), ProtocolError> {
        let kind = Self::KIND;
        fields::non_empty(kind, "from", &self.from)?;
        fields::non_empty(kind, "taskId", &self.task_id)?;
        fields::timestamp(kind, "timestamp", &self.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_round_trips, keys};
    use super::super::{Parsed, ProtocolMessage};
    use super::*;

    /// Seeds 002 App. C.1.3.
    const ASSIGNMENT_SEED: &str = r#"{"type":"task_assignment","taskId":"1","subject":"验证任务A","description":"用于格式验证的测试任务","assignedBy":"team-lead","timestamp":"2026-02-13T10:10:53.467Z"}"#;
    /// reference/samples inboxes/wasm-pane.json.
    const ASSIGNMENT_REFERENCE: &str = r#"{"type":"task_assignment","taskId":"1","subject":"Compile wasm module","description":"Build the wasm component","assignedBy":"team-lead","timestamp":"2026-11-21T22:29:48.342Z"}"#;
    /// Seeds 004 `createTaskCompleted` shape.
    const COMPLETED: &str = r#"{"type":"task_completed","from":"researcher","taskId":"3","taskSubject":"Survey the API","timestamp":"2026-02-13T10:20:01.002Z"}"#;

    #[test]
    fn seed_task_assignment_parses_with_its_fields_and_round_trips() {
        let ProtocolMessage::TaskAssignment(m) = assert_round_trips(ASSIGNMENT_SEED) else {
            panic!("not a task_assignment");
        };
        assert_eq!(m.task_id, "1");
        assert_eq!(m.subject, "验证任务A");
        assert_eq!(m.description, "用于格式验证的测试任务");
        assert_eq!(m.assigned_by, "team-lead");
        assert_eq!(m.timestamp, "2026-02-13T10:10:53.467Z");
        assert!(m.extra.is_empty());
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn reference_task_assignment_round_trips() {
        let m = assert_round_trips(ASSIGNMENT_REFERENCE);
        assert_eq!(m.kind(), MessageKind::TaskAssignment);
        assert_eq!(m.sender(), Some("team-lead"));
    }

    #[test]
    fn task_assignment_builder_writes_reference_key_order() {
        let m = TaskAssignment::new("2", "s", "d", "team-lead");
        assert_eq!(keys(&m.to_text()), keys(ASSIGNMENT_SEED));
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn task_completed_parses_with_its_fields_and_round_trips() {
        let ProtocolMessage::TaskCompleted(m) = assert_round_trips(COMPLETED) else {
            panic!("not a task_completed");
        };
        assert_eq!(m.from, "researcher");
        assert_eq!(m.task_id, "3");
        assert_eq!(m.task_subject, "Survey the API");
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn task_completed_builder_writes_reference_key_order() {
        let m = TaskCompleted::new("researcher", "3", "Survey the API");
        assert_eq!(keys(&m.to_text()), keys(COMPLETED));
    }

    #[test]
    fn task_assignment_without_task_id_is_invalid_naming_the_field() {
        let text = r#"{"type":"task_assignment","subject":"s","description":"d","assignedBy":"team-lead","timestamp":"2026-02-13T10:10:53.467Z"}"#;
        let Parsed::Invalid { kind, error } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(kind, MessageKind::TaskAssignment);
        assert_eq!(
            error.to_string(),
            "task_assignment message is missing required field `taskId`"
        );
    }

    #[test]
    fn numeric_task_id_is_invalid_naming_the_field_and_types() {
        let text = r#"{"type":"task_assignment","taskId":1,"subject":"s","description":"d","assignedBy":"team-lead","timestamp":"2026-02-13T10:10:53.467Z"}"#;
        let Parsed::Invalid { error, .. } = ProtocolMessage::parse(text) else {
            panic!("expected Invalid");
        };
        assert_eq!(
            error.to_string(),
            "task_assignment message field `taskId` must be a string, found a number"
        );
    }

    #[test]
    fn empty_assigned_by_fails_validation() {
        let mut m = TaskAssignment::new("2", "s", "d", "team-lead");
        m.assigned_by = " ".into();
        let err = m.validate().expect_err("empty assignedBy");
        assert_eq!(err.field(), "assignedBy");
    }
}
