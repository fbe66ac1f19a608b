//! Host bindings generated from `wit/` (package `teamhost:agent@0.1.0`, world
//! `lead`: the `teammate` world plus `leading`, so one linker serves both; a
//! component importing only the teammate interfaces instantiates against it
//! as before, and `leading` answers `denied` to any caller that is not a
//! team's lead). WASI interfaces reuse wasmtime-wasi's own bindings; every
//! teamhost import is async and trappable. A function whose result is
//! `result<T, error>` returns `Result<T, GuestError>`
//! ([`GuestError`], declared with `trappable_error_type`; `guest_error.rs`,
//! beside the bindings because each names the other):
//! a guest error travels as the WIT `error`, a trap ends the guest (host
//! bugs, limit breaches). `model-error` and `claim-error` are trappable the
//! same way ([`ModelTrap`], [`ClaimTrap`]; `call_errors.rs`). Every other
//! function returns `wasmtime::Result<T>`, where `Err` traps.
//!
//! `path: "wit"` is the crate's `host/wit`, a link to the repository's `wit/`
//! that `cargo package` packs as files (host/build.rs says why), so the
//! packaged crate builds alone.

mod call_errors;
mod guest_error;

pub use call_errors::{ClaimTrap, ModelTrap};
pub use guest_error::GuestError;

wasmtime::component::bindgen!({
    path: "wit",
    world: "teamhost:agent/lead",
    imports: { default: async | trappable },
    exports: { default: async },
    trappable_error_type: {
        "teamhost:agent/types.error" => crate::runtime::bindings::GuestError,
        "teamhost:agent/model.model-error" => crate::runtime::bindings::ModelTrap,
        "teamhost:agent/tasks.claim-error" => crate::runtime::bindings::ClaimTrap,
    },
    with: { "wasi": wasmtime_wasi::p2::bindings },
});

pub use self::exports::teamhost::agent::handler;
pub use self::teamhost::agent::{
    leading, mailbox, messaging, model, protocol, state, subagents, tasks, team, toolbox, tools,
    types,
};

/// Every component instantiates against the `lead` world (a superset of
/// `teammate`, with the same export), under the name the runtime has always
/// used.
pub type Teammate = Lead;
/// The pre-instantiated form of [`Teammate`].
pub type TeammatePre<T> = LeadPre<T>;
