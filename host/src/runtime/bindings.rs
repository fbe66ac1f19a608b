//! Host bindings generated from `wit/` (package `teamhost:agent@0.1.0`, world
//! `teammate`). WASI interfaces reuse wasmtime-wasi's own bindings; every
//! teamhost import is async and trappable: a host function returns
//! `wasmtime::Result<T>`, where `Err` traps the guest (host bugs, limit
//! breaches) and guest-visible failures travel inside `T` as the WIT `error`.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "teamhost:agent/teammate",
    imports: { default: async | trappable },
    exports: { default: async },
    with: { "wasi": wasmtime_wasi::p2::bindings },
});

pub use self::exports::teamhost::agent::handler;
pub use self::teamhost::agent::{
    mailbox, messaging, model, protocol, state, subagents, tasks, team, toolbox, tools, types,
};
