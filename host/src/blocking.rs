//! Blocking work run off the async executor: the one helper every async
//! caller of synchronous code uses (the store, the tools, the lead's seat,
//! component compiling, tmux, the home's files), so that a panic there
//! reads the same everywhere and never takes the caller's task down.
//!
//! An async caller that ran such work on its own thread would hold a
//! runtime worker through locks, synced writes and compiles; tokio's
//! blocking pool is where it belongs.

use crate::error::{Error, Result};

/// Runs `f` on one of tokio's blocking threads and waits for it. A panic
/// in `f` (or the runtime refusing the task while it shuts down) is
/// [`Error::HostTask`] naming `what` (what was being done: "{what}
/// panicked: …"); the caller turns it into its own error kind where it has
/// one.
pub(crate) async fn run<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::HostTask(format!("{what} panicked: {e}")))
}

/// [`run`] for work that can fail with the crate's error: its error, or
/// the panic's.
pub(crate) async fn try_run<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    run(what, f).await?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_is_a_host_task_error_naming_what_was_done() {
        let e = run("counting sheep", || -> u32 { panic!("out of sheep") })
            .await
            .unwrap_err();
        assert!(
            matches!(&e, Error::HostTask(m) if m.starts_with("counting sheep panicked")),
            "{e}"
        );
        assert_eq!(run("adding", || 2 + 2).await.unwrap(), 4);
        let failed = try_run("reading", || -> Result<()> {
            Err(Error::HostTask("no".into()))
        })
        .await
        .unwrap_err();
        assert_eq!(failed.to_string(), "no");
    }
}
