//! Conversions between store / protocol types and the generated WIT types.

use crate::protocol::{self as p, Parsed, ProtocolMessage};
use crate::runtime::bindings::{mailbox, protocol as wp, tasks, team};
use crate::sandbox::PermissionMode;
use crate::store::{InboxMessage, Member, Task, TaskStatus};

/// An inbox entry as the guest sees it, with its protocol message decoded.
pub(crate) fn to_wit_message(m: &InboxMessage) -> mailbox::Message {
    mailbox::Message {
        from: m.from.clone(),
        text: m.text.clone(),
        timestamp: m.timestamp.clone(),
        summary: m.summary.clone(),
        color: m.color.clone(),
        protocol: match ProtocolMessage::parse(&m.text) {
            Parsed::Plain => None,
            Parsed::Protocol(msg) => Some(to_wit_protocol(msg)),
            Parsed::Invalid { kind, .. } => {
                Some(wp::ProtocolMessage::Unknown(kind.as_str().into()))
            }
        },
    }
}

fn to_wit_protocol(msg: ProtocolMessage) -> wp::ProtocolMessage {
    use wp::ProtocolMessage as W;
    match msg {
        ProtocolMessage::TaskAssignment(m) => W::TaskAssignment(wp::TaskAssignment {
            task_id: m.task_id,
            subject: m.subject,
            description: m.description,
            assigned_by: m.assigned_by,
        }),
        ProtocolMessage::TaskCompleted(m) => W::TaskCompleted(wp::TaskCompleted {
            from: m.from,
            task_id: m.task_id,
            task_subject: m.task_subject,
        }),
        ProtocolMessage::IdleNotification(m) => W::IdleNotification(wp::IdleNotification {
            idle_reason: match m.reason() {
                Some(p::IdleReason::Interrupted) => wp::IdleReason::Interrupted,
                Some(p::IdleReason::Failed) => wp::IdleReason::Failed,
                Some(p::IdleReason::Available) | None => wp::IdleReason::Available,
            },
            completed_status: m.status().map(to_wit_status),
            from: m.from,
            summary: m.summary,
            completed_task_id: m.completed_task_id,
            failure_reason: m.failure_reason,
        }),
        ProtocolMessage::ShutdownRequest(m) => W::ShutdownRequest(wp::ShutdownRequest {
            request_id: m.request_id,
            from: m.from,
            reason: m.reason,
        }),
        ProtocolMessage::ShutdownApproved(m) => W::ShutdownApproved(wp::ShutdownApproved {
            request_id: m.request_id,
            from: m.from,
            pane_id: m.pane_id,
            backend_type: m.backend_type,
        }),
        ProtocolMessage::ShutdownRejected(m) => W::ShutdownRejected(wp::ShutdownRejected {
            request_id: m.request_id,
            from: m.from,
            reason: m.reason,
        }),
        ProtocolMessage::PlanApprovalRequest(m) => {
            W::PlanApprovalRequest(wp::PlanApprovalRequest {
                request_id: m.request_id,
                from: m.from,
                plan: m.plan_content,
                plan_file_path: Some(m.plan_file_path),
            })
        }
        ProtocolMessage::PlanApprovalResponse(m) => {
            W::PlanApprovalResponse(wp::PlanApprovalResponse {
                request_id: m.request_id,
                response: if m.approved {
                    wp::PlanResponse::Approve(mode_to_wit(
                        m.permission_mode
                            .as_deref()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or_default(),
                    ))
                } else {
                    wp::PlanResponse::Reject(m.feedback.unwrap_or_default())
                },
            })
        }
        ProtocolMessage::PermissionRequest(m) => W::PermissionRequest(wp::PermissionRequest {
            request_id: m.request_id,
            agent_id: m.agent_id,
            tool_name: m.tool_name,
            description: m.description,
            input: m.input.to_string(),
        }),
        ProtocolMessage::PermissionResponse(m) => W::PermissionResponse(wp::PermissionResponse {
            outcome: match (&m.response, &m.error) {
                (Some(grant), _) => wp::PermissionOutcome::Allow(grant.updated_input.to_string()),
                (None, e) => wp::PermissionOutcome::Deny(e.clone().unwrap_or_default()),
            },
            request_id: m.request_id,
        }),
    }
}

/// Protocol completed status → WIT.
pub(crate) fn to_wit_status(s: p::CompletedStatus) -> wp::CompletedStatus {
    match s {
        p::CompletedStatus::Resolved => wp::CompletedStatus::Resolved,
        p::CompletedStatus::Blocked => wp::CompletedStatus::Blocked,
        p::CompletedStatus::Failed => wp::CompletedStatus::Failed,
    }
}

/// WIT completed status → protocol.
pub(crate) fn from_wit_status(s: wp::CompletedStatus) -> p::CompletedStatus {
    match s {
        wp::CompletedStatus::Resolved => p::CompletedStatus::Resolved,
        wp::CompletedStatus::Blocked => p::CompletedStatus::Blocked,
        wp::CompletedStatus::Failed => p::CompletedStatus::Failed,
    }
}

/// Sandbox mode → WIT enum.
pub(crate) fn mode_to_wit(mode: PermissionMode) -> team::PermissionMode {
    match mode {
        PermissionMode::Default => team::PermissionMode::Default,
        PermissionMode::AcceptEdits => team::PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions => team::PermissionMode::BypassPermissions,
        PermissionMode::Plan => team::PermissionMode::Plan,
        PermissionMode::DontAsk => team::PermissionMode::DontAsk,
        PermissionMode::Delegate => team::PermissionMode::Delegate,
    }
}

/// A task as the guest sees it (metadata as a JSON string; unknown statuses
/// read as `pending`).
pub(crate) fn to_wit_task(t: Task) -> tasks::Task {
    tasks::Task {
        status: match t.status {
            TaskStatus::InProgress => tasks::TaskStatus::InProgress,
            TaskStatus::Completed => tasks::TaskStatus::Completed,
            TaskStatus::Pending | TaskStatus::Other(_) => tasks::TaskStatus::Pending,
        },
        metadata: t.metadata.map(|m| serde_json::Value::Object(m).to_string()),
        id: t.id,
        subject: t.subject,
        description: t.description,
        active_form: t.active_form,
        owner: t.owner,
        blocks: t.blocks,
        blocked_by: t.blocked_by,
    }
}

/// WIT status → store status.
pub(crate) fn from_wit_task_status(s: tasks::TaskStatus) -> TaskStatus {
    match s {
        tasks::TaskStatus::Pending => TaskStatus::Pending,
        tasks::TaskStatus::InProgress => TaskStatus::InProgress,
        tasks::TaskStatus::Completed => TaskStatus::Completed,
    }
}

/// A roster entry.
pub(crate) fn to_wit_member(m: &Member, lead: &str) -> team::Member {
    team::Member {
        name: m.name.clone(),
        agent_id: m.agent_id.clone(),
        is_lead: m.name == lead,
        color: m.color.clone(),
        agent_type: m.agent_type.clone(),
        backend_type: m.backend_type.clone(),
        is_active: m.is_active.unwrap_or(true),
    }
}

/// WIT enum → sandbox mode.
pub(crate) fn mode_from_wit(mode: team::PermissionMode) -> PermissionMode {
    match mode {
        team::PermissionMode::Default => PermissionMode::Default,
        team::PermissionMode::AcceptEdits => PermissionMode::AcceptEdits,
        team::PermissionMode::BypassPermissions => PermissionMode::BypassPermissions,
        team::PermissionMode::Plan => PermissionMode::Plan,
        team::PermissionMode::DontAsk => PermissionMode::DontAsk,
        team::PermissionMode::Delegate => PermissionMode::Delegate,
    }
}
