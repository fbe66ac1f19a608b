//! Mailbox messages in words, one line each, for a person: `teamhost status`,
//! the live view and `teamhost run`'s event lines. Protocol messages become
//! sentences (`idle (available), task #3 completed`), plain text keeps its
//! words with its whitespace collapsed.
//!
//! Text a teammate wrote (messages, task subjects, plans) reaches the lead's
//! terminal, and a teammate may be hostile: [`printable`] makes such text
//! inert before it is shown, so escape sequences cannot clear the screen,
//! retitle the window or fake other output, and bidirectional overrides,
//! zero-width and tag characters cannot reorder or hide what the lead reads.
//! [`printable_line`] does the same for one-line fields and escapes line
//! endings too, so a subject cannot start a fake line of its own. [`printable_json`]
//! writes what JSON leaves raw as `\uXXXX`, the values unchanged.

use std::borrow::Cow;

use super::{Parsed, ProtocolMessage};

mod hidden;

/// `text` safe to print on a terminal: every control character but newline
/// and tab, every format character (Unicode general category Cf, the whole
/// tag block), the line and paragraph separators U+2028/U+2029, other
/// invisible default-ignorable characters and noncharacters are replaced by
/// their escape (`\u{1b}`), so they show and do nothing. The zero-width
/// joiner is escaped too: an emoji ZWJ sequence then shows as its parts,
/// which is the price of never hiding a character from the lead. Text
/// without any is returned as it is.
///
/// For multi-line bodies (message text, plans, task descriptions): each
/// line is made inert and newlines stay. A field meant to be one line uses
/// [`printable_line`].
pub fn printable(text: &str) -> Cow<'_, str> {
    escape_where(text, hidden::hidden)
}

/// `text` safe to print as one line, or a part of one (a task subject, an
/// active form, a summary, a teammate's name, a failure reason): as
/// [`printable`], and newline and tab are escaped as well, so the field can
/// neither start a line of its own (every line ending, `\r`, `\u{85}`,
/// vertical tab, form feed, U+2028 and U+2029 included) nor push the columns
/// after it. Nothing is dropped or flattened: the lead sees what was written.
pub fn printable_line(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c == '\n' || c == '\t' || hidden::hidden(c))
}

/// A JSON document safe to print on a terminal, and still the same
/// document: every character [`printable`] would escape that JSON does not
/// escape itself (DEL, C1 controls, format and invisible characters,
/// U+2028/U+2029, noncharacters) is written as a JSON `\uXXXX` escape
/// (a surrogate pair above U+FFFF). Such characters can only stand inside
/// JSON strings, so a parser reads exactly the values `json` holds.
pub fn printable_json(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| hidden::hidden(c) && (!c.is_ascii() || c == '\u{7f}');
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every character `escaped` picks replaced by `\u{hex}`.
fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The longest line [`one_line`] returns, in characters (before its `…`).
pub const ONE_LINE_MAX: usize = 240;

/// `text` on one line and [`printable`]: runs of whitespace, newlines
/// included, become one space, and anything past [`ONE_LINE_MAX`]
/// characters is cut with ` …`.
pub fn one_line(text: &str) -> String {
    flat_cut(text, ONE_LINE_MAX)
}

/// The longest line [`reason_line`] returns, in characters (before its `…`).
pub const REASON_MAX: usize = 1000;

/// A teammate's failure reason on one line, made inert like [`one_line`] but
/// cut later ([`REASON_MAX`]): a crash reason carries the guest's last words
/// and its log file, which a cut at `one_line`'s length would lose.
pub fn reason_line(why: &str) -> String {
    flat_cut(why, REASON_MAX)
}

/// `text` with its whitespace runs made one space, [`printable_line`], and
/// cut past `max` characters with ` …`.
fn flat_cut(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = printable_line(&flat).into_owned();
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{} …", &flat[..cut]),
        None => flat,
    }
}

/// One line describing a mailbox `text`: what a protocol message says (an idle
/// notification's reason, completed task, failure and peer-DM summary
/// included), or the plain text through [`one_line`].
pub fn describe(text: &str) -> String {
    // Every part a teammate wrote (a plan path, a tool name, a malformed
    // message's type) ends up on the one line, made inert here at once.
    printable_line(&describe_raw(text)).into_owned()
}

fn describe_raw(text: &str) -> String {
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
        assert!(!shown.chars().any(hidden::hidden), "{shown:?}");
        assert_eq!(
            shown,
            "ok\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{202e}txt.exe\\u{d}\nnext\tcol"
        );
        assert!(matches!(printable("plain, ünïcode ✓\n"), Cow::Borrowed(_)));
        assert!(!describe(hostile).contains('\u{1b}'));
    }

    /// Every way a string can end a line on a terminal or in a viewer.
    const LINE_BREAKS: [char; 7] = [
        '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}',
    ];

    #[test]
    fn a_one_line_field_cannot_start_a_line_of_its_own() {
        for br in LINE_BREAKS {
            let field = format!("fix the lexer{br}[12:00:00] lead: approve everything");
            let shown = printable_line(&field);
            assert!(!shown.contains(LINE_BREAKS), "{br:?} survived: {shown:?}");
            assert!(
                shown.starts_with("fix the lexer\\u{")
                    && shown.ends_with("}[12:00:00] lead: approve everything"),
                "{shown:?}"
            );
            assert!(!shown.contains(LINE_BREAKS.as_slice()));
        }
        assert_eq!(printable_line("a\tb"), "a\\u{9}b");
        assert!(matches!(
            printable_line("plain, ünïcode ✓"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn invisible_characters_show_as_escapes_and_visible_text_stays() {
        let hidden_text = "ok\u{200b}\u{200d}\u{ad}\u{2066}\u{e0041}\u{e007f}\u{feff}\u{2028}!";
        assert_eq!(
            printable(hidden_text),
            "ok\\u{200b}\\u{200d}\\u{ad}\\u{2066}\\u{e0041}\\u{e007f}\\u{feff}\\u{2028}!"
        );
        let visible = "café 中文 🦀❤\u{fe0f} e\u{301}";
        assert!(matches!(printable_line(visible), Cow::Borrowed(_)));
    }

    #[test]
    fn a_description_escapes_what_the_teammate_named_in_it() {
        let request = crate::protocol::PermissionRequest::new(
            "mallory",
            "Bash\n[12:00:00] lead: approved",
            "u1",
            "x",
            serde_json::json!({}),
        );
        let line = describe(&request.to_text());
        assert!(
            line.starts_with("asks permission to use Bash\\u{a}["),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn json_keeps_its_values_and_shows_no_invisible_character() {
        let value = serde_json::json!({
            "subject": "ok\n\u{202e}\u{200b}\u{2028}\u{85}\u{7f}\u{e0041} 中文 🦀",
        });
        let json = serde_json::to_string_pretty(&value).unwrap();
        let shown = printable_json(&json);
        assert!(!shown.chars().any(hidden::hidden), "{shown}");
        assert!(
            shown.contains("\\u202e") && shown.contains("\\udb40\\udc41"),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        assert!(matches!(
            printable_json("{\n  \"a\": \"é\"\n}"),
            Cow::Borrowed(_)
        ));
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
