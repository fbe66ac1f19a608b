//! Glue between the generated host traits and plain Rust: one file per WIT
//! interface, each implemented on the narrowest view of
//! [`AgentCtx`](super::AgentCtx) it needs (`views.rs`). Store calls do blocking file
//! I/O, so they run on tokio's blocking pool, never on an executor thread.

mod ask;
mod convert;
mod mailbox;
mod messaging;
mod model;
mod model_convert;
mod state;
mod subagents;
mod tasks;
mod team;
mod toolbox;
mod tools;
mod views;

#[cfg(test)]
mod memory_tests;

use super::bindings::types::Error as WitError;
use crate::Error;

pub(crate) use convert::{from_wit_status, mode_from_wit, to_wit_message, to_wit_task};

pub(crate) use views::{CoordinationData, ModelData, ReadData, SubagentData, ToolData};
pub use views::{CoordinationGlue, ModelGlue, ReadGlue, SubagentGlue, ToolGlue};

impl super::bindings::types::Host for ReadGlue<'_> {}
impl super::bindings::protocol::Host for ReadGlue<'_> {}

/// Runs a blocking store call off the executor. A panic in it is a host bug
/// and traps the guest.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> wasmtime::Result<Result<T, WitError>> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => Ok(r.map_err(to_wit_error)),
        Err(e) => Err(wasmtime::Error::msg(format!("host store call failed: {e}"))),
    }
}

/// Runs a blocking tool call off the executor, mapping its error to the WIT
/// error of the same kind.
pub(crate) async fn blocking_tool<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::tools::ToolError> + Send + 'static,
) -> wasmtime::Result<Result<T, WitError>> {
    use crate::tools::ToolError as T;
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => Ok(r.map_err(|e| {
            let msg = e.to_string();
            match e {
                T::NotFound(_) => WitError::NotFound(msg),
                T::Invalid(_) | T::TooLarge(_) => WitError::Invalid(msg),
                T::Denied(_) | T::Unconfined(_) => WitError::Denied(msg),
                T::Conflict(_) => WitError::Conflict(msg),
                T::Io { .. } => WitError::Unavailable(msg),
            }
        })),
        Err(e) => Err(wasmtime::Error::msg(format!("host tool call failed: {e}"))),
    }
}

/// Maps a store error to the guest-visible WIT error.
///
/// The host's own failures (a corrupt file, a lock wait that timed out, an
/// I/O error, a component error) name paths under the home: the guest is
/// told only what kind of failure it was, and the whole error is logged for
/// the lead. Errors about names and ids carry nothing of the host's.
pub(crate) fn to_wit_error(e: Error) -> WitError {
    let msg = e.to_string();
    let host_failure = |kind: &str| {
        tracing::warn!(error = %msg, "a teammate's store call failed");
        WitError::Unavailable(format!(
            "the team's store is unavailable ({kind}); the host logged the details for the lead"
        ))
    };
    match e {
        Error::InvalidName { .. } | Error::Invalid(_) => WitError::Invalid(msg),
        Error::TeamNotFound { .. } | Error::MemberNotFound { .. } | Error::TaskNotFound { .. } => {
            WitError::NotFound(msg)
        }
        Error::TeamExists { .. } | Error::TeamNotEmpty { .. } | Error::TeamRunning { .. } => {
            WitError::Conflict(msg)
        }
        Error::Corrupt { .. } => host_failure("a corrupt file"),
        Error::LockTimeout { .. } => host_failure("a lock wait timed out"),
        Error::Io { .. } => host_failure("an I/O error"),
        Error::StoreUnavailable { .. } => host_failure("the store's server did not answer"),
        Error::Component { .. } => host_failure("a component error"),
    }
}
