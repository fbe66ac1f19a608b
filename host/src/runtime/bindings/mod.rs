//! Host bindings generated from `wit/` (package `teamhost:agent@0.1.0`, world
//! `teammate`). WASI interfaces reuse wasmtime-wasi's own bindings; every
//! teamhost import is async and trappable. A function whose result is
//! `result<T, error>` returns `Result<T, GuestError>`
//! ([`GuestError`], declared with `trappable_error_type`; `guest_error.rs`,
//! beside the bindings because each names the other):
//! a guest error travels as the WIT `error`, a trap ends the guest (host
//! bugs, limit breaches). Every other function returns `wasmtime::Result<T>`,
//! where `Err` traps and a guest-visible failure (`model-error`,
//! `claim-error`) travels inside `T`.

mod guest_error;

pub use guest_error::GuestError;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "teamhost:agent/teammate",
    imports: { default: async | trappable },
    exports: { default: async },
    trappable_error_type: {
        "teamhost:agent/types.error" => crate::runtime::bindings::GuestError,
    },
    with: { "wasi": wasmtime_wasi::p2::bindings },
});

pub use self::exports::teamhost::agent::handler;
pub use self::teamhost::agent::{
    mailbox, messaging, model, protocol, state, subagents, tasks, team, toolbox, tools, types,
};
