//! Model calls, brokered by the host for its teammates (`teamhost:agent/model`).
//!
//! | file | owns |
//! |---|---|
//! | [`activity`] | what a model call reports while it happens (live view, status) |
//! | [`types`] | the exchange as plain Rust (the WIT types), serialisable |
//! | [`policy`] | a teammate's model policy (plain data) |
//! | [`config`] | the host's model config: providers, credentials, aliases, prices |
//! | [`meter`] | accounting: budgets, calls per turn, rate limit, cost |
//! | [`cassette`] | record and replay at the `model` boundary (JSONL per teammate) |
//! | [`replay_ids`] | a replayed answer's protocol request ids, rebound to the live run |
//! | [`scripted`] | a provider that answers from a script file (tests, demos) |
//! | [`transcript`] | the conversation the host keeps per agent, for `model.history` after a crash |
//! | [`broker`] | [`ModelHub`] (host-wide) and [`ModelClient`] (per teammate) |
//! | [`provider`] | the HTTP providers: Anthropic Messages, OpenAI-compatible |
//!
//! Credentials exist only here, in the host process: they come from the
//! host's environment or its config file, never from a manifest, a team file
//! or anything a teammate can write, and they reach no guest, file, log or
//! error text.

pub mod activity;
pub mod broker;
pub mod cassette;
pub mod config;
pub mod meter;
pub mod policy;
pub mod provider;
pub mod replay_ids;
pub mod scripted;
pub mod team_account;
pub mod team_budget;
pub mod transcript;
pub mod types;

pub use activity::{AtEnd, ModelCallEvent, ModelCallSink, ModelClock};
pub use broker::{ModelClient, ModelHub};
pub use cassette::CassetteMode;
pub use config::ModelConfig;
pub use policy::ModelPolicy;
pub use transcript::Transcript;
pub use types::*;
