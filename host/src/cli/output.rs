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
        if self.json {
            println!("{}", serde_json::to_string_pretty(value)?);
        } else {
            // Teammates write much of what is shown (subjects, messages):
            // nothing of theirs may drive the terminal.
            let text = human();
            if !text.is_empty() {
                println!("{}", printable(text.trim_end()));
            }
        }
        Ok(())
    }
}
