//! Glue between the generated host traits and plain Rust: one file per WIT
//! interface, each implemented on the narrowest view of
//! [`AgentCtx`](super::AgentCtx) it needs (`views.rs`). Store calls do blocking file
//! I/O, so they run on tokio's blocking pool, never on an executor thread.

mod ask;
mod convert;
mod lead_line;
mod lead_tools;
mod leading;
mod mailbox;
mod messaging;
mod model;
mod model_convert;
mod network_ask;
mod state;
mod subagents;
mod tasks;
mod team;
mod toolbox;
mod tools;
mod views;

#[cfg(test)]
mod memory_tests;
#[cfg(test)]
mod network_tests;

use super::bindings::types::{self, Error as WitError};
use super::GuestError;

pub(crate) use convert::{from_wit_status, mode_from_wit, to_wit_message, to_wit_task};

pub(crate) use lead_line::LeadLine;
pub(crate) use leading::LeadData;
pub use leading::LeadGlue;
pub(crate) use network_ask::NetworkAsker;
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

/// Runs a blocking host call (the store, a tool, the lead's seat) off the
/// executor ([`crate::blocking::run`]). A panic in it is a host bug and
/// traps the guest; its error is the guest error of its kind
/// ([`GuestError`]'s `From` a store error, a tool error, a seat error).
/// The typed entry points below only fix `E` for the closures' `?`.
async fn off_executor<T: Send + 'static, E: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, GuestError>
where
    GuestError: From<E>,
{
    match crate::blocking::run(what, f).await {
        Ok(r) => Ok(r?),
        Err(e) => Err(GuestError::trap(wasmtime::Error::msg(e.to_string()))),
    }
}

/// A blocking store call ([`off_executor`]).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> Result<T, GuestError> {
    off_executor("a host store call", f).await
}

/// A blocking tool call ([`off_executor`]).
pub(crate) async fn blocking_tool<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::tools::ToolError> + Send + 'static,
) -> Result<T, GuestError> {
    off_executor("a host tool call", f).await
}

/// A blocking lead-seat call ([`off_executor`]; the seat reads the team's
/// files).
pub(crate) async fn blocking_lead<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::runtime::lead_host::LeadError> + Send + 'static,
) -> Result<T, GuestError> {
    off_executor("a host lead-seat call", f).await
}
