//! The event lines of `teamhost teammate`: human text on stderr, and JSON
//! lines on stdout with `--json`.

use std::io::Write;
use std::time::Instant;

/// Event lines: human text on stderr, and JSON lines on stdout with `--json`.
pub(super) struct Log {
    json: bool,
    start: Instant,
    name: String,
}

impl Log {
    pub(super) fn new(json: bool, start: Instant, name: &str) -> Log {
        Log {
            json,
            start,
            name: name.to_string(),
        }
    }

    pub(super) fn line(&self, event: &str, text: impl AsRef<str>, mut fields: serde_json::Value) {
        let t = self.start.elapsed().as_secs_f64();
        // stderr may be a pane that was just closed: never panic on it.
        let _ = writeln!(
            std::io::stderr(),
            "+{t:7.3}s  {}  {event:<6} {}",
            // One event, one line: a failure reason cannot start another.
            crate::protocol::describe::printable_line(&self.name),
            crate::protocol::describe::printable_line(text.as_ref())
        );
        if self.json {
            let at_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros() as u64)
                .unwrap_or_default();
            if let serde_json::Value::Object(m) = &mut fields {
                m.insert("event".into(), event.into());
                m.insert("atUs".into(), at_us.into());
            }
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{fields}");
            let _ = stdout.flush();
        }
    }
}
