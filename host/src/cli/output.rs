//! How commands print: human lines, or one JSON document with `--json`.

use serde::Serialize;

use crate::protocol::describe::{printable, printable_json, printable_line};

/// Chooses between human text and JSON for a command's result.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    json: bool,
}

impl Output {
    /// `json`: print JSON documents instead of text.
    pub fn new(json: bool) -> Self {
        Output { json }
    }

    /// Whether `--json` was given.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Prints `value` as pretty JSON with `--json`, else the text `human` builds.
    pub fn print<T: Serialize>(
        &self,
        value: &T,
        human: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        let text = if self.json {
            // The same document, with what JSON leaves raw (a bidi
            // override, U+2028, …) written as `\uXXXX`.
            printable_json(&serde_json::to_string_pretty(value)?).into_owned()
        } else {
            // Teammates write much of what is shown (subjects, messages):
            // nothing of theirs may drive the terminal.
            let text = human();
            if text.is_empty() {
                return Ok(());
            }
            printable(text.trim_end()).into_owned()
        };
        write_stdout(&text)
    }
}

/// Appends `line` and a newline to `out`, with `line` made
/// [`printable_line`]: whatever a teammate wrote into the fields `line` is
/// built from (a subject, a name, a summary), it stays one line.
pub fn push_line(out: &mut String, line: impl AsRef<str>) {
    out.push_str(&printable_line(line.as_ref()));
    out.push('\n');
}

/// How a multi-line body's lines after its first are indented by [`body`].
pub const BODY_INDENT: &str = "    ";

/// A multi-line body a teammate wrote (a message, a task description) made
/// [`printable`], with every line after the first indented by
/// [`BODY_INDENT`]: the body keeps its newlines, but none of its lines can
/// start at the margin, where the lines teamhost writes itself (a message's
/// `[time] sender:` header, a task's `#id` line) start, so it cannot fake one.
/// Line endings other than `\n` (`\r`, U+2028, …) are escaped by [`printable`].
pub fn body(text: &str) -> String {
    printable(text)
        .split('\n')
        .collect::<Vec<_>>()
        .join(&format!("\n{BODY_INDENT}"))
}

/// Writes `text` and a newline to stdout. A reader that has gone away
/// (`teamhost inbox … | grep -q x`, `| head`) is not an error: there is
/// nobody left to tell.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("cannot write to stdout: {e}")),
    }
}

/// How the binary prints a command's error: the message and its causes,
/// `: `-separated like anyhow's `{:#}`, but a cause whose text the message
/// before it already ends with is left out (an error type that writes its
/// source into its own message and also returns it as `source()` would
/// otherwise print it twice: `read x: No such file (os error 2): No such
/// file (os error 2)`). Made inert with [`printable`]: an error may quote
/// what a teammate wrote.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.ends_with(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    printable(&text).into_owned()
}

#[cfg(test)]
mod error_text_tests {
    use super::*;

    #[test]
    fn an_os_error_in_the_message_and_the_source_is_written_once() {
        let io = std::io::Error::from_raw_os_error(2);
        let e = anyhow::Error::from(crate::Error::io("read", "/nowhere/x", io))
            .context("cannot load the manifest");
        let text = error_text(&e);
        assert_eq!(text.matches("os error 2").count(), 1, "{text}");
        assert!(
            text.starts_with("cannot load the manifest: read /nowhere/x: "),
            "{text}"
        );
    }

    #[test]
    fn distinct_causes_are_all_kept_and_escapes_made_inert() {
        let e = anyhow::anyhow!("inner \u{1b}[2J").context("outer");
        assert_eq!(error_text(&e), "outer: inner \\u{1b}[2J");
    }
}
