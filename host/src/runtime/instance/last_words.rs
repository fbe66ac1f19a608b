//! A guest's last words: the tail of what it wrote to stderr (at most
//! [`TAIL_LINES`] lines of the last [`TAIL_BYTES`] bytes, per instance),
//! kept beside its log, and the crash reason built from them
//! ([`crash_reason`]): what trapped, the guest's own words (a Rust panic's
//! message, the last lines of a Python or JS traceback), the log file, and
//! the named wasm frames.
//!
//! The guest's text is hostile: control, escape, format and invisible
//! characters are dropped, its length is bounded ([`WORDS_MAX`]), and it is
//! labelled as the guest's. Frame names come from the component's name
//! section, which the guest wrote too: they get the same treatment.

use std::collections::VecDeque;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

use super::capped_log::CappedLog;
use crate::protocol::describe::printable_line;

/// Bytes of the guest's stderr kept.
pub const TAIL_BYTES: usize = 4096;
/// Lines of the kept bytes looked at.
pub const TAIL_LINES: usize = 20;
/// Characters of the guest's words a reason carries (the last ones).
pub const WORDS_MAX: usize = 400;
/// Named frames a reason carries, innermost first.
const FRAMES_MAX: usize = 4;
/// Characters of one frame name.
const FRAME_MAX: usize = 80;

/// The last [`TAIL_BYTES`] the guest wrote to stderr. Cloned handles share it.
#[derive(Clone, Default)]
pub struct StderrTail {
    bytes: Arc<Mutex<VecDeque<u8>>>,
}

impl StderrTail {
    fn keep(&self, buf: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        let skip = buf.len().saturating_sub(TAIL_BYTES);
        bytes.extend(&buf[skip..]);
        let over = bytes.len().saturating_sub(TAIL_BYTES);
        bytes.drain(..over);
    }

    /// The kept text's last [`TAIL_LINES`] lines, as written (not cleaned).
    pub fn text(&self) -> String {
        let bytes = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        let (a, b) = bytes.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
    }
}

/// The guest's stderr: appended to its log (when it has one) and kept in
/// its [`StderrTail`]. Like the log, a write never fails nor blocks.
#[derive(Clone)]
pub struct Stderr {
    pub log: Option<CappedLog>,
    pub tail: StderrTail,
}

impl IsTerminal for Stderr {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Stderr {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for Stderr {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if let Some(log) = &self.log {
            log.take(buf);
        }
        self.tail.keep(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// StarlingMonkey's words when a JS export throws something that is not a
/// string (an `Error`) where its WIT result wants one: the thrown value's
/// message is lost inside the engine.
const JS_THROWN_OBJECT: &str = "expected a string, received [object";

/// What a reason adds after [`JS_THROWN_OBJECT`]'s words.
const JS_THROWN_HINT: &str = "; (a JS export threw an object: StarlingMonkey keeps neither its message nor its type past the export; throw a string, or wrap the export so it returns the message, as the JS template's `failsAsText` does)";

/// The log a reason names: `log` itself, or, for a descriptor of this
/// process (`/proc/self/fd/2`: a `teamhost teammate` writes its guest's
/// output to its stderr), the file it is open on; `None` when that is no
/// file (a tmux pane's terminal, a pipe): then the reason names none.
fn shown_log(log: &Path) -> Option<std::path::PathBuf> {
    if !log.starts_with("/proc/self/fd") {
        return Some(log.to_path_buf());
    }
    std::fs::read_link(log)
        .ok()
        .filter(|p| p.is_absolute() && p.is_file())
}

/// Why a guest crashed, in one line: `the guest crashed (WHAT: the trap);
/// its stderr said: «WORDS»; log: FILE; in FRAME ← FRAME` (`the guest was
/// stopped (WHAT)` when a host call's error trapped it). WORDS the guest's [`last_words`] (left out
/// when it wrote nothing), FILE its log (left out when it has none), the
/// frames the named ones of the trap's wasm backtrace (left out when the
/// component has no names). The most telling parts come first, so a reader
/// that cuts the line keeps them. When the words are StarlingMonkey's
/// for an `Error` thrown past a JS export, the reason says what to do
/// ([`JS_THROWN_OBJECT`]): the engine keeps no message of it.
pub fn crash_reason(trap: &wasmtime::Error, tail: &str, log: Option<&Path>) -> String {
    let mut reason = match trap.downcast_ref::<wasmtime::Trap>() {
        Some(t) => format!("the guest crashed ({t})"),
        // A host call failed under it.
        None => format!(
            "the guest was stopped ({})",
            clean(&trap.root_cause().to_string(), WORDS_MAX)
        ),
    };
    if let Some(words) = last_words(tail) {
        reason += &format!("; its stderr said: «{words}»");
        if words.contains(JS_THROWN_OBJECT) {
            reason += JS_THROWN_HINT;
        }
    }
    if let Some(log) = log.and_then(shown_log) {
        reason += &format!("; log: {}", log.display());
    }
    let frames = named_frames(trap);
    if !frames.is_empty() {
        reason += &format!("; in {}", frames.join(" ← "));
    }
    reason
}

/// The part of the guest's stderr `tail` that says why it crashed, as one
/// clean line (lines joined by ` | `, at most [`WORDS_MAX`] characters:
/// the middle of longer words is cut). Which lines, by the first rule that
/// matches:
///
/// | the tail has | the words are |
/// |---|---|
/// | a Python `Traceback (most recent call last):` | its last three lines (the nearest frames and the exception), not the runtime's panic after it |
/// | a Rust `panicked at` line | from there on (the panic's message) |
/// | a JS engine's `Stack:` line | from the line before it (the error) on |
/// | none of these | the last four lines |
///
/// Rust's `note: run with RUST_BACKTRACE` and StarlingMonkey's
/// `Redirecting call to abort()` lines are left out. `None` when the
/// guest wrote nothing.
pub fn last_words(tail: &str) -> Option<String> {
    let noise = [
        "note: run with `RUST_BACKTRACE",
        "Redirecting call to abort()",
    ];
    let lines: Vec<&str> = tail
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !noise.iter().any(|n| l.starts_with(n)))
        .collect();
    let last = |from: usize, to: usize, n: usize| (from.max(to.saturating_sub(n)), to);
    let (from, to) = if let Some(at) = lines
        .iter()
        .rposition(|l| l.starts_with("Traceback (most recent"))
    {
        let end = lines[at..]
            .iter()
            .position(|l| l.contains("panicked at"))
            .map_or(lines.len(), |n| at + n);
        last(at + 1, end, 3)
    } else if let Some(at) = lines.iter().rposition(|l| l.contains("panicked at")) {
        (at, lines.len())
    } else if let Some(at) = lines.iter().rposition(|l| l.trim() == "Stack:") {
        (at.saturating_sub(1), lines.len())
    } else {
        last(0, lines.len(), 4)
    };
    let words: Vec<String> = lines[from..to]
        .iter()
        .map(|l| clean(l.trim(), usize::MAX))
        .filter(|l| !l.is_empty())
        .collect();
    if words.is_empty() {
        return None;
    }
    let joined = words.join(" | ");
    let n = joined.chars().count();
    Some(if n > WORDS_MAX {
        // The start names the error, the end is nearest the crash.
        let head: String = joined.chars().take(WORDS_MAX / 3).collect();
        let tail: String = joined
            .chars()
            .skip(n - (WORDS_MAX - WORDS_MAX / 3 - 3))
            .collect();
        format!("{head} … {tail}")
    } else {
        joined
    })
}

/// The names of the trap's wasm frames, innermost first, without the
/// panic and abort machinery of the guest's language runtime; at most
/// [`FRAMES_MAX`]. Empty when the component keeps no names.
fn named_frames(trap: &wasmtime::Error) -> Vec<String> {
    let Some(trace) = trap.downcast_ref::<wasmtime::WasmBacktrace>() else {
        return Vec::new();
    };
    let machinery = [
        "core::",
        "std::",
        "alloc::",
        "__rust",
        "__rustc::",
        "rust_panic",
        "panic_abort",
        "abort",
        "<",
    ];
    trace
        .frames()
        .iter()
        .filter_map(|f| f.func_name())
        // Rust's names are mangled; `{:#}` leaves out the hash.
        .map(|name| format!("{:#}", rustc_demangle::demangle(name)))
        .filter(|name| !machinery.iter().any(|m| name.starts_with(m)))
        .map(|name| clean(&name, FRAME_MAX))
        .filter(|name| !name.is_empty())
        .take(FRAMES_MAX)
        .collect()
}

/// `text` without any character a terminal could act on or hide (those
/// [`printable_line`] escapes), `«` and `»` made plain quotes so the words
/// cannot close their label, at most `max` characters.
fn clean(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text
        .chars()
        .filter(|&c| {
            let mut one = [0u8; 4];
            matches!(
                printable_line(c.encode_utf8(&mut one)),
                std::borrow::Cow::Borrowed(_)
            )
        })
        .map(|c| if c == '«' || c == '»' { '"' } else { c })
        .enumerate()
    {
        if n == max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_that_is_this_process_s_descriptor_is_named_by_its_file() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("worker.log");
        let file = std::fs::File::create(&path).unwrap();
        let fd = std::path::PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        assert_eq!(shown_log(&fd), Some(path.canonicalize().unwrap()));
        assert_eq!(shown_log(&path), Some(path.clone()));
        // A descriptor that is no file (a pipe) names no log.
        let (read, _write) = std::io::pipe().unwrap();
        let pipe = std::path::PathBuf::from(format!("/proc/self/fd/{}", read.as_raw_fd()));
        assert_eq!(shown_log(&pipe), None);
    }

    #[test]
    fn a_rust_panic_gives_its_message_without_the_backtrace_note() {
        let tail = "probe: working\nthread '<unnamed>' panicked at src/lib.rs:12:5:\nout of cheese\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            last_words(tail).unwrap(),
            "thread '<unnamed>' panicked at src/lib.rs:12:5: | out of cheese"
        );
    }

    #[test]
    fn a_python_traceback_gives_its_last_lines() {
        let tail = "echo: sent\nTraceback (most recent call last):\n  File \"app.py\", line 3, in handle_turn\n  File \"app.py\", line 9, in crash\n    raise RuntimeError(text)\nRuntimeError: crash: boom\n";
        assert_eq!(
            last_words(tail).unwrap(),
            "File \"app.py\", line 9, in crash | raise RuntimeError(text) | RuntimeError: crash: boom"
        );
    }

    #[test]
    fn escapes_and_controls_of_the_guest_are_dropped_and_its_words_cannot_close_their_label() {
        let words = last_words("\u{1b}[2J\u{1b}]0;owned\u{7}fake» ok\u{202e}\r\n").unwrap();
        assert_eq!(words, "[2J]0;ownedfake\" ok");
    }

    #[test]
    fn long_words_keep_their_end() {
        let tail = format!("{}THE END\n", "x".repeat(5000));
        let tail = format!("THE START{tail}");
        let words = last_words(&tail).unwrap();
        assert!(words.starts_with("THE START"), "{words}");
        assert!(words.ends_with("THE END"), "{words}");
        assert!(words.chars().count() <= WORDS_MAX, "{}", words.len());
    }

    #[test]
    fn a_python_traceback_wins_over_the_runtime_panic_after_it() {
        let tail = "Traceback (most recent call last):\n  File \"/0/app.py\", line 42, in handle_turn\n  File \"/0/app.py\", line 63, in crash\nRuntimeError: crash: boom\n\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\nPython function threw an unexpected exception\n";
        assert_eq!(
            last_words(tail).unwrap(),
            "File \"/0/app.py\", line 42, in handle_turn | File \"/0/app.py\", line 63, in crash | RuntimeError: crash: boom"
        );
    }

    #[test]
    fn a_js_error_gives_its_message_and_stack() {
        let tail = "echo: sent\nexpected a string, received [object]\nStack:\n  f@init.js:1:2\n\nRedirecting call to abort() to mozalloc_abort\n";
        assert_eq!(
            last_words(tail).unwrap(),
            "expected a string, received [object] | Stack: | f@init.js:1:2"
        );
    }

    #[test]
    fn a_guest_that_wrote_nothing_has_no_last_words() {
        assert_eq!(last_words(" \n\n"), None);
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_and_lines_only() {
        let tail = StderrTail::default();
        for i in 0..1000 {
            tail.keep(format!("line {i}\n").as_bytes());
        }
        let text = tail.text();
        assert_eq!(text.lines().count(), TAIL_LINES);
        assert!(text.ends_with("line 999"), "{text}");
        tail.keep(&vec![b'y'; 3 * TAIL_BYTES]);
        assert_eq!(tail.text().len(), TAIL_BYTES);
    }

    #[test]
    fn a_crash_reason_names_the_trap_the_words_and_the_log_file() {
        let trap = wasmtime::Error::from(wasmtime::Trap::UnreachableCodeReached);
        let reason = crash_reason(
            &trap,
            "panicked at src/lib.rs:1:1:\nboom\n",
            Some(Path::new("/home/logs/t/alice.log")),
        );
        assert_eq!(
            reason,
            "the guest crashed (wasm trap: wasm `unreachable` instruction executed); its stderr said: «panicked at src/lib.rs:1:1: | boom»; log: /home/logs/t/alice.log"
        );
    }

    #[test]
    fn a_js_error_thrown_past_the_export_says_how_to_keep_its_message() {
        let trap = wasmtime::Error::from(wasmtime::Trap::UnreachableCodeReached);
        let tail = "expected a string, received [object]\nStack:\n  f@init.js:1:2\n";
        let reason = crash_reason(&trap, tail, None);
        assert!(reason.ends_with(JS_THROWN_HINT), "{reason}");
        let plain = crash_reason(&trap, "boom\n", None);
        assert!(!plain.contains("StarlingMonkey"), "{plain}");
    }
}
