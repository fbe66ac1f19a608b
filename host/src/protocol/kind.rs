//! The kinds of structured message, named by their wire `type`.
//!
//! Owns the closed list of `type` strings teamhost understands. A mailbox `text`
//! whose `type` is not in this list is plain text (see [`super::Parsed::Plain`]).

use std::fmt;

/// One kind of structured message, as named by the `type` key on the wire.
///
/// The list is closed: adding a kind means adding a variant here, a struct in its
/// family's file and an arm in [`super::ProtocolMessage`]; every `match` on this
/// enum is exhaustive so the compiler finds each place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKind {
    /// `task_assignment`: a task got an owner (written to the owner).
    TaskAssignment,
    /// `task_completed`: a teammate finished a task.
    TaskCompleted,
    /// `idle_notification`: a teammate's turn ended (written to the lead).
    IdleNotification,
    /// `shutdown_request`: asks a teammate to exit.
    ShutdownRequest,
    /// `shutdown_approved`: the teammate agrees and exits.
    ShutdownApproved,
    /// `shutdown_rejected`: the teammate refuses, with a reason.
    ShutdownRejected,
    /// `plan_approval_request`: a plan-mode teammate asks to leave plan mode.
    PlanApprovalRequest,
    /// `plan_approval_response`: the lead approves or rejects a plan.
    PlanApprovalResponse,
    /// `permission_request`: a teammate asks the lead to allow one tool call.
    PermissionRequest,
    /// `permission_response`: the lead's answer to a permission request.
    PermissionResponse,
}

impl MessageKind {
    /// Every kind, in the order of this enum.
    pub const ALL: [MessageKind; 10] = [
        MessageKind::TaskAssignment,
        MessageKind::TaskCompleted,
        MessageKind::IdleNotification,
        MessageKind::ShutdownRequest,
        MessageKind::ShutdownApproved,
        MessageKind::ShutdownRejected,
        MessageKind::PlanApprovalRequest,
        MessageKind::PlanApprovalResponse,
        MessageKind::PermissionRequest,
        MessageKind::PermissionResponse,
    ];

    /// The wire `type` string, e.g. `"shutdown_request"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MessageKind::TaskAssignment => "task_assignment",
            MessageKind::TaskCompleted => "task_completed",
            MessageKind::IdleNotification => "idle_notification",
            MessageKind::ShutdownRequest => "shutdown_request",
            MessageKind::ShutdownApproved => "shutdown_approved",
            MessageKind::ShutdownRejected => "shutdown_rejected",
            MessageKind::PlanApprovalRequest => "plan_approval_request",
            MessageKind::PlanApprovalResponse => "plan_approval_response",
            MessageKind::PermissionRequest => "permission_request",
            MessageKind::PermissionResponse => "permission_response",
        }
    }

    /// The kind whose wire `type` is exactly `type_name` (case-sensitive), or
    /// `None` for any other string.
    pub fn from_wire(type_name: &str) -> Option<Self> {
        MessageKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == type_name)
    }
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_wire_name() {
        for kind in MessageKind::ALL {
            assert_eq!(MessageKind::from_wire(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn unknown_and_differently_cased_names_are_not_kinds() {
        assert_eq!(MessageKind::from_wire("message"), None);
        assert_eq!(MessageKind::from_wire("Shutdown_Request"), None);
        assert_eq!(MessageKind::from_wire(""), None);
    }
}
