//! The WebAssembly side: the wasmtime engine, the component cache, the linker,
//! and one file per WIT interface implementing its generated host trait.
//!
//! | file | owns |
//! |---|---|
//! | `bindings.rs` | the one `bindgen!` over `wit/` |
//! | `engine.rs` | engine configuration and the epoch ticker |
//! | `cache.rs` | compile once per content hash; precompiled artifacts on disk |
//! | `state.rs` | what one teammate's `Store` holds |
//! | `instance.rs` | building a teammate's store and instance, calling its turn handler |
//! | `interfaces/*.rs` | `team`, `mailbox`, `tasks`, `messaging` (+ empty `types`, `protocol`) |

pub mod bindings;
mod cache;
mod engine;
mod instance;
mod interfaces;
mod state;

pub use crate::sandbox::DirAccess;
pub use cache::ComponentCache;
pub use engine::Runtime;
pub use instance::{Instance, InstanceConfig};
pub(crate) use interfaces::{from_wit_status, mode_from_wit, to_wit_message, to_wit_task};
pub use state::{AgentCtx, Identity, ModelSeat, SandboxCtx, ShutdownDecision, TurnRecord};
