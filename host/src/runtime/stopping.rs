//! [`Stopping`]: the host's word that a teammate is being stopped, seen at
//! once by every wait inside its turn that only the lead can end.
//!
//! A tool call that asks the lead waits for the lead's answer
//! (`interfaces/ask.rs`). When the host shuts the team down
//! (`Host::shutdown_team`: Ctrl-C, `q` in the live view, `--timeout`, or the
//! work done) or kills the teammate (`Host::kill`, a `teamhost teammate`
//! process's SIGTERM), that answer can no longer come: the lead is going
//! away. The host says so here, with a reason; a wait in progress is woken
//! and the call is denied with that reason, and a call that would ask from
//! then on is denied without asking. The turn then ends as the guest sees
//! fit and the teammate takes its shutdown request, instead of holding the
//! stop until its `ask_timeout`.
//!
//! Set once, never cleared: a teammate that is being stopped stays so.

use std::sync::{Arc, OnceLock};

use tokio::sync::Notify;

/// Shared between the host (which stops) and the teammate's runtime (which
/// waits). `Stopping::default()` is never stopped until [`Stopping::stop`].
#[derive(Debug, Clone, Default)]
pub struct Stopping {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    reason: OnceLock<String>,
    woken: Notify,
}

impl Stopping {
    /// Says the teammate is being stopped, because of `reason` (shown to the
    /// guest in the denial: "the host is stopping: {reason}"). The first
    /// reason stays; later calls only wake waiters again.
    pub fn stop(&self, reason: &str) {
        let _ = self.inner.reason.set(reason.to_string());
        self.inner.woken.notify_waiters();
    }

    /// Why the teammate is being stopped, once it is.
    pub fn reason(&self) -> Option<&str> {
        self.inner.reason.get().map(String::as_str)
    }

    /// Resolves once the teammate is being stopped (at once if it already
    /// is), with the reason.
    pub async fn stopped(&self) -> String {
        loop {
            let woken = self.inner.woken.notified();
            tokio::pin!(woken);
            // Registered before the look: a `stop` after it wakes this one.
            woken.as_mut().enable();
            if let Some(r) = self.reason() {
                return r.to_string();
            }
            woken.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_wait_is_woken_by_the_stop_and_a_later_one_returns_at_once() {
        let s = Stopping::default();
        assert_eq!(s.reason(), None);
        let waiting = tokio::spawn({
            let s = s.clone();
            async move { s.stopped().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        s.stop("the run was interrupted");
        s.stop("a second reason is not kept");
        let why = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .unwrap();
        assert_eq!(why, "the run was interrupted");
        assert_eq!(s.stopped().await, "the run was interrupted");
    }
}
