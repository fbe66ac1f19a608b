//! What a teammate is, to every layer that runs one: the request that
//! spawns it ([`SpawnRequest`]) and how it runs ([`TeammateSettings`]), the states it goes through
//! ([`TeammateState`]), the events it causes ([`Event`]) and the model
//! access it is given ([`ModelAccess`]). Plain data, below the runner, the
//! backends and the embedding API, which all use it; [`crate::embed`]
//! re-exports it for embedders.
//!
//! | file | owns |
//! |---|---|
//! | `spawn.rs` | [`SpawnRequest`], [`Isolation`] |
//! | `settings.rs` | [`TeammateSettings`]: how a teammate runs (mode and tool rules typed, parsed once at each edge), and its one conversion to and from each of manifest, member entry, spawn record and child command line |
//! | `events.rs` | [`TeammateState`], [`TeammateInfo`], [`Event`] |
//! | `notifications.rs` | [`NotificationLevel`]: which idle notifications reach the lead |
//! | `model_access.rs` | [`ModelAccess`]: the broker and what child teammates are told |
//! | `resumed.rs` | [`Resumed`]: what a teammate brought back after a crash takes over |
//! | `agent_definitions.rs` | [`Definitions`]: the sub-agent definitions a teammate's `Agent` tool may name |

pub mod agent_definitions;
mod events;
mod model_access;
mod notifications;
mod resumed;
mod settings;
mod spawn;

pub use agent_definitions::{Definition, Definitions};
pub use events::{Event, TeammateInfo, TeammateState};
pub use model_access::ModelAccess;
pub use notifications::NotificationLevel;
pub use resumed::Resumed;
pub use settings::{
    member_mode, prompt_prefix, SettingsError, TeammateSettings, MEMBER_PROMPT_CHARS,
};
pub use spawn::{Isolation, SpawnRequest};
