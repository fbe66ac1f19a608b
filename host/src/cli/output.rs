//! How commands print: human lines, or one JSON document with `--json`.

use serde::Serialize;

use crate::protocol::describe::printable;

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
            serde_json::to_string_pretty(value)?
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
