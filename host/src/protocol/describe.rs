//! Mailbox messages in words, one line each, for a person: `teamhost status`,
//! the live view and `teamhost run`'s event lines. Protocol messages become
//! sentences (`idle (available), task #3 completed`), plain text keeps its
//! words with its whitespace collapsed.

use super::{Parsed, ProtocolMessage};

/// The longest line [`one_line`] returns, in characters (before its `…`).
pub const ONE_LINE_MAX: usize = 240;

/// `text` on one line: runs of whitespace, newlines included, become one
/// space, and anything past [`ONE_LINE_MAX`] characters is cut with ` …`.
pub fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(ONE_LINE_MAX) {
        Some((cut, _)) => format!("{} …", &flat[..cut]),
        None => flat,
    }
}

/// One line describing a mailbox `text`: what a protocol message says (an idle
/// notification's reason, completed task, failure and peer-DM summary
/// included), or the plain text through [`one_line`].
pub fn describe(text: &str) -> String {
    match ProtocolMessage::parse(text) {
        Parsed::Plain => one_line(text),
        Parsed::Invalid { kind, error } => format!("malformed {kind}: {error}"),
        Parsed::Protocol(p) => match p {
            ProtocolMessage::IdleNotification(n) => {
                let mut s = format!("idle ({})", n.idle_reason.as_deref().unwrap_or("available"));
                if let Some(id) = &n.completed_task_id {
                    let status = n.completed_status.as_deref().unwrap_or("done");
                    s += &format!(", task #{id} {status}");
                }
                if let Some(why) = &n.failure_reason {
                    s += &format!(": {}", one_line(why));
                }
                if let Some(sum) = &n.summary {
                    s += &format!(" {}", one_line(sum));
                }
                s
            }
            ProtocolMessage::ShutdownRequest(r) => match &r.reason {
                Some(why) => format!("asks to shut down: {}", one_line(why)),
                None => "asks to shut down".into(),
            },
            ProtocolMessage::ShutdownApproved(_) => "approves the shutdown".into(),
            ProtocolMessage::ShutdownRejected(r) => {
                format!("rejects the shutdown: {}", one_line(&r.reason))
            }
            ProtocolMessage::TaskCompleted(t) => {
                format!(
                    "completed task #{}: {}",
                    t.task_id,
                    one_line(&t.task_subject)
                )
            }
            ProtocolMessage::TaskAssignment(t) => {
                format!("assigns task #{}: {}", t.task_id, one_line(&t.subject))
            }
            ProtocolMessage::PlanApprovalRequest(r) => {
                format!("asks to approve its plan {}", r.plan_file_path)
            }
            ProtocolMessage::PermissionRequest(r) => format!(
                "asks permission to use {}: {}",
                r.tool_name,
                one_line(&r.description)
            ),
            other => other.kind().to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{IdleNotification, IdleReason, WireMessage};

    #[test]
    fn plain_text_is_flattened_and_cut() {
        assert_eq!(describe("two\n  lines"), "two lines");
        let long = "x ".repeat(400);
        let line = describe(&long);
        assert!(line.ends_with(" …"), "{line}");
        assert_eq!(line.chars().count(), ONE_LINE_MAX + 2);
    }

    #[test]
    fn an_idle_notification_says_its_reason_and_peer_dm_summary() {
        let n = IdleNotification::new("alice", IdleReason::Available)
            .with_summary(IdleNotification::peer_dm_summary("bob", "the lexer"));
        let line = describe(&n.to_text());
        assert!(line.starts_with("idle (available)"), "{line}");
        assert!(line.contains("bob"), "{line}");
    }
}
