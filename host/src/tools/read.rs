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
//!
//! Host memory stays bounded whatever the file's shape: a line is never held
//! whole, only its first `4 × max_line_chars` bytes (the rest is skipped
//! without being kept), and one call scans at most [`MAX_SCAN_BYTES`] of the
//! file. A call that reaches that budget stops with `truncated` set, and
//! without `next_offset` when it stopped inside a line. A 1 GiB file with no
//! newline costs the same memory as a short one.

use std::io::{BufRead, BufReader, Read as _};

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
    /// The output stopped at `max_output_bytes` or [`MAX_SCAN_BYTES`]
    /// (`next_offset` says where, when it can).
    pub truncated: bool,
}

/// Bytes examined for a NUL to call a file binary.
const SNIFF: usize = 8 * 1024;

/// Bytes of the file one Read call scans at most, skipped lines included.
/// Deeper windows into bigger files are for Bash (`sed -n`, `tail`).
pub const MAX_SCAN_BYTES: u64 = 64 << 20;

impl ToolBox {
    /// Reads `input.file_path` as numbered lines (see the module docs).
    pub fn read(&self, input: &ReadInput) -> Result<ReadOutput, ToolError> {
        let rel = self.relative(&input.file_path)?;
        let shown = show(&rel);
        let file = self.open_regular("read", &rel)?;
        let mut reader = BufReader::with_capacity(64 * 1024, file.take(MAX_SCAN_BYTES));
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
        let keep = self
            .limits
            .max_line_chars
            .saturating_mul(4)
            .saturating_add(2);
        let mut scanned = 0u64;
        let mut buf = Vec::new();
        let mut number = 0u64;
        loop {
            buf.clear();
            let wanted = number + 1 >= start && out.lines < limit;
            let line =
                next_line(&mut reader, &mut buf, if wanted { keep } else { 0 }).map_err(io)?;
            scanned += line.bytes;
            if line.bytes == 0 {
                break;
            }
            // Stopped inside a line by the scan budget: the line may go on,
            // so this is the last one shown, and there is no offset after it.
            let budget_hit = !line.ended && scanned >= MAX_SCAN_BYTES;
            number += 1;
            if number < start && budget_hit {
                out.truncated = true;
                break;
            }
            if number < start {
                continue;
            }
            if out.lines == limit {
                out.next_offset = Some(number);
                break;
            }
            let text = line_text(&buf, line.cut || budget_hit).ok_or_else(|| {
                ToolError::Invalid(format!("{shown} is not UTF-8 text (line {number})"))
            })?;
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            let mut shown_line = cut_line(text, self.limits.max_line_chars).into_owned();
            if (line.cut || budget_hit) && !shown_line.ends_with('…') {
                shown_line.push('…');
            }
            let line = format!("{number:>6}\t{shown_line}\n");
            if out.content.len() + line.len() > self.limits.max_output_bytes {
                out.truncated = true;
                out.next_offset = Some(number);
                break;
            }
            out.content.push_str(&line);
            out.lines += 1;
            if budget_hit {
                out.truncated = true;
                break;
            }
        }
        if scanned >= MAX_SCAN_BYTES && out.next_offset.is_none() && out.lines < limit {
            // The budget ended the scan, not the file (or not surely).
            out.truncated = true;
        }
        Ok(out)
    }
}

/// One line as [`next_line`] read it.
struct LineRead {
    /// Bytes consumed from the file (the newline included).
    bytes: u64,
    /// It ended in a newline.
    ended: bool,
    /// Only its first bytes were kept.
    cut: bool,
}

/// Reads one line, keeping at most `keep` of its bytes in `buf` and
/// consuming the rest without holding it: memory is bounded by `keep` and
/// the reader's buffer, whatever the line's length.
fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<LineRead> {
    let mut line = LineRead {
        bytes: 0,
        ended: false,
        cut: false,
    };
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(line);
        }
        let (take, ended) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        if take > room {
            line.cut = true;
        }
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        line.bytes += take as u64;
        if ended {
            line.ended = true;
            return Ok(line);
        }
    }
}

/// The text of a line read by [`next_line`]; a cut line may end inside a
/// character, which is dropped. `None` when it is not UTF-8.
fn line_text(buf: &[u8], cut: bool) -> Option<&str> {
    match std::str::from_utf8(buf) {
        Ok(text) => Some(text),
        // Only an incomplete character at the very end, where the cut fell.
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&buf[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

/// `line`, cut to `max` characters with `…` appended when longer.
pub(crate) fn cut_line(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]).into(),
        None => line.into(),
    }
}
