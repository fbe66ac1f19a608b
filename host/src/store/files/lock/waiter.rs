//! The helper threads that wait in flock(2) for a lock another process
//! holds: flock cannot time out, so a waiter hands the blocking call to a
//! helper and waits for its answer with a deadline.
//!
//! Helpers are kept: one that has answered waits up to [`IDLE`] for the next
//! request, so a process that waits often (a writer under contention waits
//! for every message) does not start a thread each time. A waiter that has
//! gone by the time its helper gets the lock (its deadline passed) drops the
//! answer, and with it the lock.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender, SyncSender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::error::{Error, Result};

/// How long a helper waits for its next request before it ends.
const IDLE: Duration = Duration::from_secs(10);

/// A request: take the flock of this file and send it back.
struct Request {
    path: PathBuf,
    reply: SyncSender<Result<File>>,
}

/// Helpers waiting for a request.
fn idle() -> &'static Mutex<Vec<Sender<Request>>> {
    static IDLE_HELPERS: OnceLock<Mutex<Vec<Sender<Request>>>> = OnceLock::new();
    IDLE_HELPERS.get_or_init(Default::default)
}

/// Has a helper take the flock on `path` (opened with `open`) and send the
/// outcome to `reply`.
pub(super) fn wait_for(
    path: PathBuf,
    reply: SyncSender<Result<File>>,
    open: fn(&std::path::Path) -> Result<File>,
) -> Result<()> {
    let mut request = Request { path, reply };
    loop {
        let helper = idle().lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some(helper) = helper else { break };
        match helper.send(request) {
            Ok(()) => return Ok(()),
            // That helper ended (idle too long): try another.
            Err(mpsc::SendError(back)) => request = back,
        }
    }
    let failed = request.path.clone();
    std::thread::Builder::new()
        .name("teamhost-flock-wait".into())
        .spawn(move || serve(request, open))
        .map(|_| ())
        .map_err(|e| Error::io("spawn a thread to wait for", &failed, e))
}

/// A helper's life: answer `first`, then whatever comes while it is idle.
fn serve(first: Request, open: fn(&std::path::Path) -> Result<File>) {
    let mut request = first;
    loop {
        let got = open(&request.path).and_then(|f| {
            // SAFETY: flock on a descriptor this thread owns.
            match unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } {
                0 => Ok(f),
                _ => Err(Error::io(
                    "flock",
                    &request.path,
                    std::io::Error::last_os_error(),
                )),
            }
        });
        // A waiter that has gone drops the answer here, and the lock.
        let _ = request.reply.send(got);
        let (tx, rx) = mpsc::channel();
        idle().lock().unwrap_or_else(|p| p.into_inner()).push(tx);
        match rx.recv_timeout(IDLE) {
            Ok(next) => request = next,
            Err(_) => return,
        }
    }
}
