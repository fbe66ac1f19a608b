//! Log lines while the full-screen view owns the terminal: written to stderr
//! they would tear the screen, so they are held back while it is up and
//! printed once it is gone ([`hold`]). The binary's log writer is
//! [`StderrUnlessViewing`].

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// At most this much is held back; past it the oldest lines make room.
const MAX_HELD: usize = 1 << 20;

static HOLDING: AtomicBool = AtomicBool::new(false);
static HELD: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Starts (`true`) or ends (`false`) holding back log output. Ending it
/// prints what was held.
pub fn hold(on: bool) {
    HOLDING.store(on, Ordering::SeqCst);
    if !on {
        let held = std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
        let _ = io::stderr().write_all(&held);
    }
}

/// Stderr, except while the full-screen view is up: then a buffer printed
/// when it ends. For `tracing_subscriber::fmt().with_writer(|| StderrUnlessViewing)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrUnlessViewing;

impl Write for StderrUnlessViewing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !HOLDING.load(Ordering::SeqCst) {
            return io::stderr().write(buf);
        }
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.extend_from_slice(buf);
        if held.len() > MAX_HELD {
            let cut = held.len() - MAX_HELD;
            held.drain(..cut);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
