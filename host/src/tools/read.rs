//! `Read`: a text file as numbered lines, the reference's `cat -n` shape —
//! each line is its 1-based number right-aligned in six columns, a tab, then
//! the line (`     1\tfn main() {`).
//!
//! `offset` is the first line (1-based; 0 counts as 1), `limit` how many
//! lines (default [`ToolLimits::read_default_lines`](super::ToolLimits)).
//! The file is streamed, so a window into a huge file costs only the lines
//! before it. A line longer than `max_line_chars` is cut and ends in `…`;
//! the text stops at `max_output_bytes` with `truncated` set. A file with a
//! NUL byte in its first 8 KiB, or a shown line that is not UTF-8, is refused
//! as [`ToolError::Invalid`]: Read shows text only.

use std::io::{BufRead, BufReader};

use crate::sandbox::ReadInput;

use super::{show, ToolBox, ToolError};

/// What Read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutput {
    /// The lines, numbered (`     1\tline`), each ending in `\n`.
    pub content: String,
    /// The number of the first line shown.
    pub start_line: u64,
    /// How many lines are shown.
    pub lines: u64,
    /// The `offset` that continues where this stopped, when the file has more.
    pub next_offset: Option<u64>,
    /// The output stopped at `max_output_bytes` (`next_offset` says where).
    pub truncated: bool,
}

/// Bytes examined for a NUL to call a file binary.
const SNIFF: usize = 8 * 1024;

impl ToolBox {
    /// Reads `input.file_path` as numbered lines (see the module docs).
    pub fn read(&self, input: &ReadInput) -> Result<ReadOutput, ToolError> {
        let rel = self.relative(&input.file_path)?;
        let shown = show(&rel);
        let file = self.open_regular("read", &rel)?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let io = |e| ToolError::io("read", &rel, e);
        if reader
            .fill_buf()
            .map_err(io)?
            .iter()
            .take(SNIFF)
            .any(|&b| b == 0)
        {
            return Err(ToolError::Invalid(format!(
                "{shown} is a binary file; Read shows text only"
            )));
        }

        let start = input.offset.unwrap_or(1).max(1);
        let limit = input.limit.unwrap_or(self.limits.read_default_lines);
        let mut out = ReadOutput {
            content: String::new(),
            start_line: start,
            lines: 0,
            next_offset: None,
            truncated: false,
        };
        let mut buf = Vec::new();
        let mut number = 0u64;
        loop {
            buf.clear();
            if reader.read_until(b'\n', &mut buf).map_err(io)? == 0 {
                break;
            }
            number += 1;
            if number < start {
                continue;
            }
            if out.lines == limit {
                out.next_offset = Some(number);
                break;
            }
            let text = std::str::from_utf8(&buf).map_err(|_| {
                ToolError::Invalid(format!("{shown} is not UTF-8 text (line {number})"))
            })?;
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            let line = format!(
                "{number:>6}\t{}\n",
                cut_line(text, self.limits.max_line_chars)
            );
            if out.content.len() + line.len() > self.limits.max_output_bytes {
                out.truncated = true;
                out.next_offset = Some(number);
                break;
            }
            out.content.push_str(&line);
            out.lines += 1;
        }
        Ok(out)
    }
}

/// `line`, cut to `max` characters with `…` appended when longer.
pub(crate) fn cut_line(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]).into(),
        None => line.into(),
    }
}
