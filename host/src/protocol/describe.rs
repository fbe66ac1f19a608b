//! Mailbox messages in words, one line each, for a person: `teamhost status`,
//! the live view and `teamhost run`'s event lines. Protocol messages become
//! sentences (`idle (available), task #3 completed`), plain text keeps its
//! words with its whitespace collapsed.
//!
//! Text a teammate wrote (messages, task subjects, plans) reaches the lead's
//! terminal, and a teammate may be hostile: [`printable`] makes such text
//! inert before it is shown, so escape sequences cannot clear the screen,
//! retitle the window or fake other output, and bidirectional overrides
//! cannot reorder what the lead reads.

use std::borrow::Cow;

use super::{Parsed, ProtocolMessage};

/// `text` safe to print on a terminal: every control character but newline
/// and tab, and every invisible formatting or bidirectional-override
/// character, is replaced by its escape (`\u{1b}`), so it shows and does
/// nothing. Text without any is returned as it is.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Control characters (C0, DEL, C1) other than `\n` and `\t`, and the
/// invisible formatting characters that reorder or hide text.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c,
            '\u{200b}'..='\u{200f}' // zero-width spaces and marks, LRM/RLM
            | '\u{202a}'..='\u{202e}' // bidi embeddings and overrides
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{2069}' // bidi isolates
            | '\u{feff}') // zero-width no-break space
}

/// The longest line [`one_line`] returns, in characters (before its `…`).
pub const ONE_LINE_MAX: usize = 240;

/// `text` on one line and [`printable`]: runs of whitespace, newlines
/// included, become one space, and anything past [`ONE_LINE_MAX`]
/// characters is cut with ` …`.
pub fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = printable(&flat).into_owned();
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
    fn escape_sequences_and_bidi_overrides_are_made_visible_and_inert() {
        let hostile = "ok\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}txt.exe\r\nnext\tcol";
        let shown = printable(hostile);
        assert!(!shown.chars().any(unsafe_char), "{shown:?}");
        assert_eq!(
            shown,
            "ok\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{202e}txt.exe\\u{d}\nnext\tcol"
        );
        assert!(matches!(printable("plain, ünïcode ✓\n"), Cow::Borrowed(_)));
        assert!(!describe(hostile).contains('\u{1b}'));
    }

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
