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
        /// The teammate's totals.
        spend: Spend,
    },
}

/// Receives a teammate's [`ModelCallEvent`]s (the host forwards them to its
/// event channel). Must not block.
pub type ModelCallSink = std::sync::Arc<dyn Fn(ModelCallEvent) + Send + Sync>;
