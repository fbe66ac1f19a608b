//! The WebAssembly side: the wasmtime engine, the component cache, the linker,
//! and one file per WIT interface implementing its generated host trait.
//!
//! | file | owns |
//! |---|---|
//! | `bindings/` | the one `bindgen!` over `wit/` |
//! | `bindings/guest_error.rs` | [`GuestError`]: a failed import as the WIT `error` or a trap, built with `?` from the crate's errors |
//! | `engine.rs` | engine configuration and the epoch ticker |
//! | `cache.rs` | compile once per content hash; precompiled artifacts on disk |
//! | `function_cache.rs` | Cranelift's incremental cache on disk: a function compiled once is not compiled again |
//! | `open_guard.rs` | the guest's own opens: never a FIFO, socket or device, never a set-id file to write |
//! | `state.rs` | what one teammate's `Store` holds: [`AgentCtx`] in parts by capability (fixed, team, tools, saved state, sub-agent and lead seats, permissions, coordination, model seat) |
//! | `assembly.rs` | [`Assembly`]: the one constructor of an agent's context and instance config, for teammates, sub-agents and tests ([`AgentCtx::builder`]) |
//! | `permissions.rs` | [`Permissions`]: mode and rules, changed only by the lead's answers |
//! | `stopping.rs` | [`Stopping`]: the host's word that the teammate is being stopped, which ends its waits for the lead |
//! | `instance.rs` | building a teammate's store and instance, calling its turn handler |
//! | `limiter.rs` | an instance's memory, drawn from the tree's pool (the store's `ResourceLimiter`) |
//! | `budget.rs` | [`TreeBudget`]: the budgets a teammate shares with every sub-agent of its tree |
//! | `disk_meter.rs` | [`DiskMeter`]: the tree's disk budget, counted as the guest writes, measured when a write would pass it |
//! | `wasi_http/` | `wasi:http/outgoing-handler` for a teammate granted `allowed_outbound_hosts`: refused at load without the grant, every request through the teammate's proxy |
//! | `wasi_writes.rs` | the guest's own WASI file writes, counted against the disk meter before they happen (shadows four `wasi:filesystem` functions) |
//! | `interfaces/views.rs` | the glue views: each interface on the narrowest part of [`AgentCtx`] |
//! | `interfaces/*.rs` | one file per teamhost interface (+ the toolbox's formats, the ask round trip) |
//! | `subagent_host.rs` | the seam to the sub-agent lifecycle ([`crate::subagents`]) |
//! | `lead_host.rs` | the seam to a team lead's seat ([`crate::embed`]): catalogue, spawn, answers, team create/delete |

mod assembly;
pub mod bindings;
mod budget;
mod cache;
mod compile_queue;
mod disk_meter;
mod engine;
mod function_cache;
mod instance;
mod interfaces;
mod limiter;
mod network_seat;
mod open_guard;
mod pending_take;
mod permissions;
mod stacks;
mod state;
mod stopping;
mod wasi_http;
mod wasi_writes;
// Sub-agents.
pub mod lead_host;
pub mod subagent_host;

pub use crate::sandbox::DirAccess;
pub use assembly::{AgentCtxBuilder, Assembled, Assembly, SharedParts, ToolsUnavailable};
pub use bindings::GuestError;
pub use budget::TreeBudget;
pub use cache::ComponentCache;
pub use disk_meter::DiskMeter;
pub use engine::{Runtime, FUNCTION_CACHE_ENV};

/// A teammate component loaded and linked, ready to instantiate
/// ([`Runtime::prepare`]); cheap to clone.
pub(crate) type Loaded = bindings::TeammatePre<state::TeammateState>;
pub use instance::{Instance, InstanceConfig};
pub(crate) use interfaces::{from_wit_status, mode_from_wit, to_wit_message, to_wit_task};
pub use interfaces::{
    CoordinationGlue, LeadGlue, ModelGlue, ReadGlue, StateGlue, SubagentGlue, ToolGlue,
};
pub use network_seat::NetworkSeat;
pub use pending_take::PendingTake;
pub use permissions::Permissions;
pub use state::{
    AgentCtx, Coordination, Fixed, Identity, LeadSeatRef, ModelSeat, ShutdownDecision, StateSeat,
    SubagentSeat, TeamSeat, ToolSeat, TurnRecord,
};
pub use stopping::Stopping;
pub use wasi_http::{WasiHttpGrant, GRANT_KEY as WASI_HTTP_GRANT_KEY};
