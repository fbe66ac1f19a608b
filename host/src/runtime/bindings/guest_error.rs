//! [`GuestError`]: what a failed teamhost import returns, either the WIT
//! `error` the guest reads or a trap that ends it.
//!
//! `bindgen!` declares `teamhost:agent/types.error` trappable
//! (`trappable_error_type`), so a glue method returns
//! `Result<T, GuestError>` and unwinds with `?`, as wasmtime-wasi's
//! `p2/host/filesystem.rs` does with its `FsError`. The generated code turns
//! the error back through `types::Host::convert_error`
//! ([`GuestError::into_wit`]): a guest error becomes the WIT value, a trap
//! stays a trap.
//!
//! | from | becomes | case |
//! |---|---|---|
//! | [`WitError`] | guest error | as built (a choice made by hand where the glue builds it) |
//! | [`crate::Error`] | guest error | [`store_error_to_wit`]: names and ids `invalid` / `not-found` / `conflict`; the host's own failures `unavailable`, logged, without paths |
//! | [`ToolError`] | guest error | the case of the same kind |
//! | [`SubagentError`] | guest error | the case of the same kind |
//! | [`LeadError`] | guest error | the case of the same kind |
//! | [`wasmtime::Error`] | trap | a host bug or a breached limit |

use std::fmt;

use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::lead_host::LeadError;
use crate::runtime::subagent_host::SubagentError;
use crate::tools::ToolError;
use crate::Error;

/// A failed teamhost import: a guest-visible WIT error, or a trap.
///
/// Build a trap with [`GuestError::trap`] or `?` on a `wasmtime::Result`
/// (the limits' counters return one); everything else converts into the
/// guest error of its kind.
pub struct GuestError(Failure);

enum Failure {
    Guest(WitError),
    Trap(wasmtime::Error),
}

impl GuestError {
    /// A trap: the host failed or the guest breached a limit; the teammate
    /// ends.
    pub fn trap(e: impl Into<wasmtime::Error>) -> Self {
        GuestError(Failure::Trap(e.into()))
    }

    /// The WIT error the guest reads, or `Err` with the trap.
    pub fn into_wit(self) -> wasmtime::Result<WitError> {
        match self.0 {
            Failure::Guest(e) => Ok(e),
            Failure::Trap(t) => Err(t),
        }
    }

    /// The guest error, when it is one (not a trap).
    pub fn as_wit(&self) -> Option<&WitError> {
        match &self.0 {
            Failure::Guest(e) => Some(e),
            Failure::Trap(_) => None,
        }
    }

    /// A guest error passed through `f`; a trap unchanged.
    pub fn map_wit(self, f: impl FnOnce(WitError) -> WitError) -> Self {
        match self.0 {
            Failure::Guest(e) => GuestError(Failure::Guest(f(e))),
            Failure::Trap(_) => self,
        }
    }

    /// A trap turned into the guest error `f` builds from it (for a call
    /// whose host failure the guest is told instead); a guest error
    /// unchanged.
    pub fn trap_to_wit(self, f: impl FnOnce(wasmtime::Error) -> WitError) -> Self {
        match self.0 {
            Failure::Guest(_) => self,
            Failure::Trap(t) => GuestError(Failure::Guest(f(t))),
        }
    }
}

impl fmt::Debug for GuestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Failure::Guest(e) => f.debug_tuple("Guest").field(e).finish(),
            Failure::Trap(t) => f.debug_tuple("Trap").field(t).finish(),
        }
    }
}

impl fmt::Display for GuestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Failure::Guest(e) => write!(f, "{e:?}"),
            Failure::Trap(t) => write!(f, "trap: {t}"),
        }
    }
}

impl From<WitError> for GuestError {
    fn from(e: WitError) -> Self {
        GuestError(Failure::Guest(e))
    }
}

impl From<wasmtime::Error> for GuestError {
    fn from(e: wasmtime::Error) -> Self {
        GuestError::trap(e)
    }
}

impl From<Error> for GuestError {
    fn from(e: Error) -> Self {
        store_error_to_wit(e).into()
    }
}

impl From<ToolError> for GuestError {
    fn from(e: ToolError) -> Self {
        let msg = e.to_string();
        match e {
            ToolError::NotFound(_) => WitError::NotFound(msg),
            ToolError::Invalid(_) | ToolError::TooLarge(_) => WitError::Invalid(msg),
            ToolError::Denied(_) | ToolError::Unconfined(_) => WitError::Denied(msg),
            ToolError::Conflict(_) => WitError::Conflict(msg),
            ToolError::Io { .. } => WitError::Unavailable(msg),
        }
        .into()
    }
}

impl From<SubagentError> for GuestError {
    fn from(e: SubagentError) -> Self {
        match e {
            SubagentError::Denied(m) => WitError::Denied(m),
            SubagentError::NotFound(m) => WitError::NotFound(m),
            SubagentError::Invalid(m) => WitError::Invalid(m),
            SubagentError::Unavailable(m) => WitError::Unavailable(m),
        }
        .into()
    }
}

impl From<LeadError> for GuestError {
    fn from(e: LeadError) -> Self {
        match e {
            LeadError::Denied(m) => WitError::Denied(m),
            LeadError::NotFound(m) => WitError::NotFound(m),
            LeadError::Conflict(m) => WitError::Conflict(m),
            LeadError::Invalid(m) => WitError::Invalid(m),
            LeadError::Unavailable(m) => WitError::Unavailable(m),
        }
        .into()
    }
}

/// Maps a store error to the guest-visible WIT error.
///
/// The host's own failures (a corrupt file, a lock wait that timed out, an
/// I/O error, a component error) name paths under the home: the guest is
/// told only what kind of failure it was, and the whole error is logged for
/// the lead. Errors about names and ids carry nothing of the host's.
pub(crate) fn store_error_to_wit(e: Error) -> WitError {
    let msg = e.to_string();
    let host_failure = |kind: &str| {
        tracing::warn!(error = %msg, "a teammate's store call failed");
        WitError::Unavailable(format!(
            "the team's store is unavailable ({kind}); the host logged the details for the lead"
        ))
    };
    match e {
        Error::InvalidName { .. }
        | Error::StoreRule(_)
        | Error::Encode(_)
        | Error::HostTask(_)
        | Error::Home(_)
        | Error::StoreUrl(_)
        | Error::FileWatch(_)
        | Error::Worktree(_)
        | Error::Approval(_)
        | Error::ModelSetup(_)
        | Error::Cassette(_)
        | Error::HostedTeammate(_)
        | Error::Spawn(_)
        | Error::Backend(_)
        | Error::LiveView(_) => WitError::Invalid(msg),
        Error::TeamNotFound { .. }
        | Error::TeamDeleted { .. }
        | Error::MemberNotFound { .. }
        | Error::TaskNotFound { .. } => WitError::NotFound(msg),
        Error::TeamExists { .. } | Error::TeamNotEmpty { .. } | Error::TeamRunning { .. } => {
            WitError::Conflict(msg)
        }
        Error::Corrupt { .. } => host_failure("a corrupt file"),
        Error::LockTimeout { .. } => host_failure("a lock wait timed out"),
        Error::Io { .. } => host_failure("an I/O error"),
        Error::StoreUnavailable { .. } => host_failure("the store's server did not answer"),
        Error::StoreSettings(_) => host_failure("the store's settings"),
        Error::Component { .. } => host_failure("a component error"),
        Error::LeaseLost { .. } => host_failure("this host no longer runs the teammate"),
    }
}
