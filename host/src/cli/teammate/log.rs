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
        // The event's time is when it is logged, before either line is
        // written (`atUs` is what the wake-up benchmark measures).
        let at_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or_default();
        let t = self.start.elapsed().as_secs_f64();
        // Formatted first and written in one call: stderr is unbuffered,
        // and a line written piece by piece is a dozen system calls and can
        // interleave with another writer's in a shared pane.
        let human = format!(
            "+{t:7.3}s  {}  {event:<6} {}\n",
            // One event, one line: a failure reason cannot start another.
            crate::protocol::describe::printable_line(&self.name),
            crate::protocol::describe::printable_line(text.as_ref())
        );
        // stderr may be a pane that was just closed: never panic on it.
        let _ = std::io::stderr().write_all(human.as_bytes());
        if self.json {
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
