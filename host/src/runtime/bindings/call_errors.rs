//! [`ModelTrap`] and [`ClaimTrap`]: what a failed `model.complete` or
//! `tasks.claim` returns, either the WIT error of its own (`model-error`,
//! `claim-error`) the guest reads or a trap that ends it, as
//! [`super::GuestError`] is for the shared `error`. `bindgen!` declares both
//! trappable, so the glue unwinds with `?` and the generated code turns them
//! back through `model::Host::convert_model_error` and
//! `tasks::Host::convert_claim_error`.

use super::model::ModelError;
use super::tasks::ClaimError;
use super::GuestError;

/// A failed model call: the guest's `model-error`, or a trap.
pub struct ModelTrap(Result<ModelError, wasmtime::Error>);

/// A failed claim: the guest's `claim-error`, or a trap.
pub struct ClaimTrap(Result<ClaimError, wasmtime::Error>);

impl ModelTrap {
    /// The WIT error the guest reads, or `Err` with the trap.
    pub fn into_wit(self) -> wasmtime::Result<ModelError> {
        self.0
    }
}

impl ClaimTrap {
    /// The WIT error the guest reads, or `Err` with the trap.
    pub fn into_wit(self) -> wasmtime::Result<ClaimError> {
        self.0
    }
}

impl From<ModelError> for ModelTrap {
    fn from(e: ModelError) -> Self {
        ModelTrap(Ok(e))
    }
}

impl From<wasmtime::Error> for ModelTrap {
    fn from(e: wasmtime::Error) -> Self {
        ModelTrap(Err(e))
    }
}

impl From<ClaimError> for ClaimTrap {
    fn from(e: ClaimError) -> Self {
        ClaimTrap(Ok(e))
    }
}

impl From<wasmtime::Error> for ClaimTrap {
    fn from(e: wasmtime::Error) -> Self {
        ClaimTrap(Err(e))
    }
}

/// The shared `error` as a claim's: a guest error becomes `other`, a trap
/// stays a trap.
impl From<GuestError> for ClaimTrap {
    fn from(e: GuestError) -> Self {
        ClaimTrap(e.into_wit().map(ClaimError::Other))
    }
}

impl std::fmt::Debug for ModelTrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Ok(e) => write!(f, "{e:?}"),
            Err(t) => write!(f, "trap: {t:?}"),
        }
    }
}

impl std::fmt::Debug for ClaimTrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Ok(e) => write!(f, "{e:?}"),
            Err(t) => write!(f, "trap: {t:?}"),
        }
    }
}
