//! What the host reports about a teammate's model calls while they happen:
//! the live view shows a teammate waiting on the model, and `teamhost run`'s
//! summary and `teamhost status` show what it spent.

use super::types::{Spend, Usage};

/// One step of one model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelCallEvent {
    /// A call went to the model (or the cassette); the teammate waits.
    Started {
        /// The alias asked for (`""`: the teammate's default).
        model: String,
    },
    /// The answer came.
    Finished {
        /// What this call used.
        usage: Usage,
        /// The teammate's totals after it.
        spend: Spend,
        /// Wall time of the call, in milliseconds.
        millis: u64,
    },
    /// The call failed; `error` is what the guest was told.
    Failed {
        /// The error text.
        error: String,
        /// The replay's cassette held no answer for this request (a drift
        /// or a missing recording, `not-recorded`): the run no longer
        /// follows its recording.
        not_recorded: bool,
        /// The teammate's totals.
        spend: Spend,
    },
}

/// Receives a teammate's [`ModelCallEvent`]s (the host forwards them to its
/// event channel). Must not block.
pub type ModelCallSink = std::sync::Arc<dyn Fn(ModelCallEvent) + Send + Sync>;

/// Time a teammate's turn spent waiting on the model: the runtime leaves it
/// out of the turn's wall-time limit (`wall_per_turn` bounds what the
/// teammate does, not how fast the provider answers; model calls are
/// bounded by the policy's calls per turn and the provider's timeouts).
#[derive(Debug, Default)]
pub struct ModelClock {
    inner: std::sync::Mutex<ClockState>,
}

#[derive(Debug, Default)]
struct ClockState {
    in_flight_since: Option<std::time::Instant>,
    total: std::time::Duration,
}

impl ModelClock {
    /// A call started.
    pub fn start(&self) {
        self.inner.lock().expect("model clock").in_flight_since = Some(std::time::Instant::now());
    }

    /// The call that started ended.
    pub fn stop(&self) {
        let mut s = self.inner.lock().expect("model clock");
        if let Some(t) = s.in_flight_since.take() {
            s.total += t.elapsed();
        }
    }

    /// Time spent waiting since the last [`reset`](Self::reset), the call in
    /// flight included.
    pub fn waited(&self) -> std::time::Duration {
        let s = self.inner.lock().expect("model clock");
        s.total
            + s.in_flight_since
                .map_or(std::time::Duration::ZERO, |t| t.elapsed())
    }

    /// Whether a call is in flight.
    pub fn waiting(&self) -> bool {
        self.inner
            .lock()
            .expect("model clock")
            .in_flight_since
            .is_some()
    }

    /// Starts a new turn's count.
    pub fn reset(&self) {
        let mut s = self.inner.lock().expect("model clock");
        s.total = std::time::Duration::ZERO;
        s.in_flight_since = None;
    }
}

/// Work to finish when the teammate ends, before it counts as gone (its
/// usage record's last write): the runner runs it once, then publishes the
/// teammate's final state.
pub struct AtEnd(Box<dyn FnOnce() -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>);

impl AtEnd {
    /// Wraps `f`.
    pub fn new<F>(f: impl FnOnce() -> F + Send + Sync + 'static) -> AtEnd
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        AtEnd(Box::new(move || Box::pin(f())))
    }

    /// Runs it.
    pub async fn run(self) {
        (self.0)().await
    }
}

impl std::fmt::Debug for AtEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AtEnd")
    }
}
