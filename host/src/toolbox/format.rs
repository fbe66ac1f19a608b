//! Tool results as text for a model, in the shapes Claude Code gives its
//! model where they are known: Read's `cat -n` lines, Glob's paths one per
//! line, SendMessage's JSON (`{"success":true,"message":"Message sent to
//! NAME's inbox","routing":{…}}`), TaskCreate's `Task #N created
//! successfully: SUBJECT`, TaskList's `#1 [in_progress] Subject (owner)
//! [blocked by #2]` lines and TaskUpdate's `Updated task #N status`. Where
//! the reference's wording is not known (Write, Edit, Bash, TaskGet) the
//! text is teamhost's own.

use serde_json::json;

use super::input::GrepMode;

/// A task as the formatters need it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskView {
    pub id: String,
    pub subject: String,
    pub description: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: &'static str,
    pub owner: Option<String>,
    pub blocks: Vec<String>,
    pub blocked_by: Vec<String>,
}

/// Read's result: the numbered lines, and how to go on when there is more.
pub fn read(content: &str, lines: u64, next_offset: Option<u64>, truncated: bool) -> String {
    let mut out = if content.is_empty() {
        "(the file is empty)".to_string()
    } else {
        content.trim_end_matches('\n').to_string()
    };
    match next_offset {
        Some(next) => out.push_str(&format!(
            "\n\n({lines} lines shown; the file goes on: read again with offset={next})"
        )),
        None if truncated => out.push_str("\n\n(long lines were cut)"),
        None => {}
    }
    out
}

/// Write's result.
pub fn write(path: &str, bytes: usize) -> String {
    format!("Wrote {bytes} bytes to {path}.")
}

/// Edit's result.
pub fn edit(path: &str, replaced: u64) -> String {
    let times = if replaced == 1 {
        "1 place".to_string()
    } else {
        format!("{replaced} places")
    };
    format!("The file {path} has been updated: replaced in {times}.")
}

/// Glob's result.
pub fn glob(paths: &[String]) -> String {
    if paths.is_empty() {
        "No files found".into()
    } else {
        paths.join("\n")
    }
}

/// Grep's result, paged by `offset` and `head_limit`.
pub fn grep(
    mode: GrepMode,
    text: &str,
    files: &[String],
    truncated: bool,
    head_limit: Option<usize>,
    offset: usize,
) -> String {
    let page = |items: Vec<&str>| -> (Vec<String>, bool) {
        let total = items.len();
        let limit = head_limit.unwrap_or(usize::MAX);
        let shown: Vec<String> = items
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(str::to_string)
            .collect();
        let more = offset.saturating_add(shown.len()) < total;
        (shown, more)
    };
    let mut out = match mode {
        GrepMode::FilesWithMatches => {
            if files.is_empty() {
                return "No files found".into();
            }
            let (shown, more) = page(files.iter().map(String::as_str).collect());
            let mut s = format!(
                "Found {} file{}\n{}",
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                shown.join("\n")
            );
            if more {
                s.push_str(&format!("\n(more: pass offset={})", offset + shown.len()));
            }
            s
        }
        GrepMode::Content | GrepMode::Count => {
            if text.trim().is_empty() {
                return "No matches found".into();
            }
            let (shown, more) = page(text.lines().collect());
            let mut s = shown.join("\n");
            if more {
                s.push_str(&format!("\n(more: pass offset={})", offset + shown.len()));
            }
            s
        }
    };
    if truncated {
        out.push_str("\n(the search stopped at its output limit: narrow it with path or glob)");
    }
    out
}

/// Bash's result and whether it counts as an error (a non-zero exit, a
/// timeout, a signal).
/// A WebFetch result: where the page came from (and through which
/// redirects), its type and size, the prompt it was fetched for, then the
/// page, cut at `cap` bytes (on a character boundary).
#[allow(clippy::too_many_arguments)]
pub fn web_fetch(
    url: &str,
    status: u16,
    content_type: &str,
    text: &str,
    truncated: bool,
    redirects: &[String],
    prompt: &str,
    cap: usize,
) -> String {
    let mut out = format!("Fetched {url} (HTTP {status}");
    if !content_type.is_empty() {
        out += &format!(", {content_type}");
    }
    out += &format!(", {} bytes of text)", text.len());
    if !redirects.is_empty() {
        out += &format!(" after the redirect(s) of {}", redirects.join(" → "));
    }
    out += &format!(".\nYou asked: {prompt}\n\n");
    let mut end = text.len().min(cap);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
    if truncated || end < text.len() {
        out += "\n\n[the page goes on: it was cut here]";
    }
    out
}

pub fn bash(
    stdout: &str,
    stderr: &str,
    exit_code: Option<i32>,
    timed_out: bool,
    truncated: bool,
) -> (String, bool) {
    let mut out = String::new();
    out.push_str(stdout.trim_end_matches('\n'));
    if !stderr.trim().is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(stderr.trim_end_matches('\n'));
    }
    if truncated {
        out.push_str("\n(output cut at its limit)");
    }
    let failed = timed_out || exit_code != Some(0);
    if timed_out {
        out.push_str("\nCommand timed out");
    } else if let Some(code) = exit_code.filter(|&c| c != 0) {
        out.push_str(&format!("\nExit code {code}"));
    } else if exit_code.is_none() {
        out.push_str("\nKilled by a signal");
    }
    if out.trim().is_empty() {
        out = "(no output)".into();
    }
    (out.trim_start_matches('\n').to_string(), failed)
}

/// SendMessage's success, with the routing the host reports.
pub fn sent(
    message: &str,
    sender: &str,
    target: &str,
    target_color: Option<&str>,
    summary: Option<&str>,
    content: &str,
) -> String {
    json!({
        "success": true,
        "message": message,
        "routing": {
            "sender": sender,
            "target": target,
            "targetColor": target_color,
            "summary": summary,
            "content": content,
        },
    })
    .to_string()
}

/// SendMessage's broadcast success.
pub fn broadcast(message: &str, recipients: &[String]) -> String {
    json!({"success": true, "message": message, "recipients": recipients}).to_string()
}

/// A shutdown request sent.
pub fn shutdown_requested(message: &str, request_id: &str, target: &str) -> String {
    json!({"success": true, "message": message, "request_id": request_id, "target": target})
        .to_string()
}

/// A protocol answer sent.
pub fn answered(message: &str) -> String {
    json!({"success": true, "message": message}).to_string()
}

/// SendMessage's failure; the message bounded like [`error`]'s.
pub fn send_failed(message: &str) -> String {
    json!({"success": false, "message": bounded_error(message.to_string())}).to_string()
}

/// TaskCreate's result.
pub fn task_created(id: &str, subject: &str) -> String {
    format!("Task #{id} created successfully: {subject}")
}

/// One TaskList line.
pub fn task_line(t: &TaskView) -> String {
    let mut line = format!("#{} [{}] {}", t.id, t.status, t.subject);
    if let Some(owner) = t.owner.as_deref().filter(|o| !o.is_empty()) {
        line.push_str(&format!(" ({owner})"));
    }
    if !t.blocked_by.is_empty() {
        line.push_str(&format!(" [blocked by #{}]", t.blocked_by.join(", #")));
    }
    line
}

/// TaskList's result.
pub fn task_list(tasks: &[TaskView]) -> String {
    if tasks.is_empty() {
        "No tasks found".into()
    } else {
        tasks.iter().map(task_line).collect::<Vec<_>>().join("\n")
    }
}

/// TaskGet's result.
pub fn task(t: &TaskView) -> String {
    let mut s = format!("Task #{}: {}\nStatus: {}\n", t.id, t.subject, t.status);
    if let Some(owner) = t.owner.as_deref().filter(|o| !o.is_empty()) {
        s.push_str(&format!("Owner: {owner}\n"));
    }
    if !t.blocked_by.is_empty() {
        s.push_str(&format!("Blocked by: #{}\n", t.blocked_by.join(", #")));
    }
    if !t.blocks.is_empty() {
        s.push_str(&format!("Blocks: #{}\n", t.blocks.join(", #")));
    }
    s.push_str(&format!("Description: {}", t.description));
    s
}

/// TaskUpdate's result: which fields changed.
pub fn task_updated(id: &str, fields: &[&str]) -> String {
    if fields.is_empty() {
        format!("Task #{id} unchanged (no field to update was given)")
    } else {
        format!("Updated task #{id} {}", fields.join(", "))
    }
}

/// A failed call, for the model.
///
/// Bounded by [`bounded_error`]: the host's words about a call (a refusal,
/// an input that does not parse, a file that is not there) never echo a
/// weak model's garbage back at it at full length. A tool's own output
/// that marks a failure (a failing Bash command's, a sub-agent's report)
/// is not this: it has its own limits and is kept whole.
pub fn error(text: &str) -> String {
    bounded_error(format!("Error: {text}"))
}

/// The most characters of an error result: enough to say what went wrong,
/// never a model's own garbage (a path of 100,000 characters) echoed back
/// at it.
pub const MAX_ERROR_CHARS: usize = 1_000;

/// `result` when it is at most [`MAX_ERROR_CHARS`] characters; otherwise
/// its start and a note saying how much was left out.
pub fn bounded_error(result: String) -> String {
    let total = result.chars().count();
    if total <= MAX_ERROR_CHARS {
        return result;
    }
    let kept: String = result.chars().take(MAX_ERROR_CHARS - 60).collect();
    format!("{kept}… (error cut: {total} characters in all)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_commands_output_is_not_cut_as_an_error_is() {
        let output = "FAILED test_x\n".repeat(500);
        let (text, failed) = bash(&output, "", Some(1), false, false);
        assert!(failed);
        assert!(
            text.len() > 7_000 && text.ends_with("Exit code 1"),
            "{}",
            text.len()
        );
        let refused = send_failed(&"x".repeat(5_000));
        let v: serde_json::Value = serde_json::from_str(&refused).unwrap();
        assert!(v["message"].as_str().unwrap().chars().count() <= MAX_ERROR_CHARS);
    }

    #[test]
    fn an_error_result_is_bounded_and_says_it_was_cut() {
        let short = error("no such file");
        assert_eq!(bounded_error(short.clone()), short);
        let long = error(&"&lt;".repeat(50_000));
        assert!(long.chars().count() <= MAX_ERROR_CHARS, "{}", long.len());
        assert!(
            long.ends_with("(error cut: 200007 characters in all)"),
            "{long}"
        );
    }

    #[test]
    fn task_lines_follow_the_references_shape() {
        let t = TaskView {
            id: "3".into(),
            subject: "Fix the parser".into(),
            status: "in_progress",
            owner: Some("fixer".into()),
            blocked_by: vec!["1".into(), "2".into()],
            ..TaskView::default()
        };
        assert_eq!(
            task_line(&t),
            "#3 [in_progress] Fix the parser (fixer) [blocked by #1, #2]"
        );
        assert_eq!(
            task_created("4", "Test it"),
            "Task #4 created successfully: Test it"
        );
        assert_eq!(task_updated("2", &["status"]), "Updated task #2 status");
    }

    #[test]
    fn bash_marks_failures_and_grep_pages() {
        assert_eq!(
            bash("hi\n", "", Some(0), false, false),
            ("hi".to_string(), false)
        );
        let (text, failed) = bash("", "boom\n", Some(2), false, false);
        assert!(failed && text == "boom\nExit code 2", "{text}");
        let files: Vec<String> = (1..=5).map(|i| format!("f{i}")).collect();
        let out = grep(GrepMode::FilesWithMatches, "", &files, false, Some(2), 1);
        assert_eq!(out, "Found 5 files\nf2\nf3\n(more: pass offset=3)");
        assert_eq!(
            grep(GrepMode::Content, "", &[], false, None, 0),
            "No matches found"
        );
    }

    #[test]
    fn send_message_results_are_json() {
        let v: serde_json::Value = serde_json::from_str(&sent(
            "Message sent to bob's inbox",
            "me",
            "@bob",
            None,
            Some("s"),
            "hi",
        ))
        .unwrap();
        assert_eq!(v["success"], true);
        assert_eq!(v["routing"]["target"], "@bob");
    }
}
