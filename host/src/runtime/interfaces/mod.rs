//! Glue between the generated host traits and plain Rust: one file per WIT
//! interface, each implemented on the narrowest view of
//! [`AgentCtx`](super::AgentCtx) it needs (`views.rs`). Store calls do blocking file
//! I/O, so they run on tokio's blocking pool, never on an executor thread.

mod ask;
mod convert;
mod lead_tools;
mod leading;
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

use super::bindings::types::{self, Error as WitError};
use super::GuestError;

pub(crate) use convert::{from_wit_status, mode_from_wit, to_wit_message, to_wit_task};

pub(crate) use leading::LeadData;
pub use leading::LeadGlue;
pub(crate) use views::{CoordinationData, ModelData, ReadData, StateData, SubagentData, ToolData};
pub use views::{CoordinationGlue, ModelGlue, ReadGlue, StateGlue, SubagentGlue, ToolGlue};

impl super::bindings::protocol::Host for ReadGlue<'_> {}

/// Every view whose interfaces return the WIT `error` converts a
/// [`GuestError`] back for the generated code: the guest error, or the trap.
macro_rules! convert_guest_errors {
    ($($view:ident),*) => {$(
        impl types::Host for $view<'_> {
            fn convert_error(&mut self, err: GuestError) -> wasmtime::Result<WitError> {
                err.into_wit()
            }
        }
    )*};
}
convert_guest_errors!(
    ReadGlue,
    StateGlue,
    CoordinationGlue,
    ToolGlue,
    SubagentGlue
);

/// Runs a blocking store call off the executor. A panic in it is a host bug
/// and traps the guest; a store error is the guest error of its kind
/// ([`GuestError`]'s `From<crate::Error>`).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> Result<T, GuestError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => Ok(r?),
        Err(e) => Err(GuestError::trap(wasmtime::Error::msg(format!(
            "host store call failed: {e}"
        )))),
    }
}

/// Runs a blocking tool call off the executor, mapping its error to the WIT
/// error of the same kind ([`GuestError`]'s `From<ToolError>`).
pub(crate) async fn blocking_tool<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::tools::ToolError> + Send + 'static,
) -> Result<T, GuestError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => Ok(r?),
        Err(e) => Err(GuestError::trap(wasmtime::Error::msg(format!(
            "host tool call failed: {e}"
        )))),
    }
}

/// Runs a blocking lead-seat call off the executor (the seat reads the
/// team's files), mapping its error to the WIT error of the same kind.
pub(crate) async fn blocking_lead<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::runtime::lead_host::LeadError> + Send + 'static,
) -> Result<T, GuestError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => Ok(r?),
        Err(e) => Err(GuestError::trap(wasmtime::Error::msg(format!(
            "host lead-seat call failed: {e}"
        )))),
    }
}
