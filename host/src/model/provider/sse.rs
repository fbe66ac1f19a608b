//! A small server-sent events parser: bytes in, events out.
//!
//! It follows the format's rules that matter for model APIs: `event:` and
//! `data:` fields (one optional space after the colon), several `data:`
//! lines joined with `\n`, comment lines (`:`) ignored, `\n`, `\r\n` or `\r`
//! line ends, and lines split anywhere across network chunks. A line longer
//! than [`MAX_LINE`] is an error rather than unbounded memory.

/// The longest line accepted (16 MiB).
pub const MAX_LINE: usize = 16 << 20;

/// One event: its `event:` name (empty when none was given) and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// The parser's state between chunks.
#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    event: String,
    data: Vec<String>,
    last_was_cr: bool,
}

impl Parser {
    /// Feeds a chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, String> {
        let mut out = Vec::new();
        for &b in chunk {
            match b {
                b'\n' if self.last_was_cr => {
                    // The `\n` of a `\r\n`: the line already ended.
                    self.last_was_cr = false;
                }
                b'\n' | b'\r' => {
                    self.last_was_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, &mut out)?;
                }
                _ => {
                    self.last_was_cr = false;
                    if self.line.len() >= MAX_LINE {
                        return Err(format!("an event line is longer than {MAX_LINE} bytes"));
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(out)
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        if line.is_empty() {
            if !self.data.is_empty() || !self.event.is_empty() {
                out.push(Event {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            return Ok(());
        }
        let line =
            std::str::from_utf8(line).map_err(|_| "an event line is not UTF-8".to_string())?;
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            // `id`, `retry` and unknown fields mean nothing to a model API.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_survive_any_chunking_and_line_ending() {
        let text = "event: a\ndata: {\"x\":1}\n\n: comment\r\nevent: b\r\ndata: one\r\ndata:two\r\n\r\ndata: [DONE]\n\n";
        let whole = Parser::default().feed(text.as_bytes()).unwrap();
        assert_eq!(
            whole,
            vec![
                Event {
                    event: "a".into(),
                    data: "{\"x\":1}".into()
                },
                Event {
                    event: "b".into(),
                    data: "one\ntwo".into()
                },
                Event {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
        for size in 1..8 {
            let mut p = Parser::default();
            let mut got = Vec::new();
            for chunk in text.as_bytes().chunks(size) {
                got.extend(p.feed(chunk).unwrap());
            }
            assert_eq!(got, whole, "chunks of {size}");
        }
    }

    #[test]
    fn an_event_not_yet_ended_is_held_back() {
        let mut p = Parser::default();
        assert!(p.feed(b"data: half").unwrap().is_empty());
        assert_eq!(p.feed(b"\n\n").unwrap().len(), 1);
    }
}
