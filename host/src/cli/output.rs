//! How commands print: human lines, or one JSON document with `--json`.

use serde::Serialize;

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
            let text = human();
            if !text.is_empty() {
                println!("{}", text.trim_end());
            }
        }
        Ok(())
    }
}
