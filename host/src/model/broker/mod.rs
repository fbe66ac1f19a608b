//! The broker: [`ModelHub`], one per host, and [`ModelClient`], one per
//! teammate.
//!
//! A teammate's call goes: policy (is the alias allowed? is the request
//! well formed and within the per-call maximum?) → meter (calls per turn,
//! rate limit, budgets: [`super::meter`]) → cassette (replay modes:
//! [`super::cassette`]) → provider (built on first use from the host's
//! config: [`super::config`]) → cassette (record modes) → meter (the actual
//! usage is charged). Nothing is held locked across the provider call, so
//! teammates never wait on each other in the broker, and dropping the
//! call's future (the teammate was stopped) abandons the HTTP request and
//! gives the reservation back.
//!
//! Every error the guest gets is built here or by a provider, without keys,
//! headers or URLs.
//!
//! | file | what it owns |
//! |---|---|
//! | `hub.rs` | [`ModelHub`]: the config, the providers built on first use, the cassettes open, the teams' purses; [`applied_budget`] |
//! | `client.rs` | [`ModelClient`]: one teammate's calls through policy, meter, cassette and provider; [`ModelHub::client`] |
//! | `request_check.rs` | what a well-formed request is, checked before anything is metered ([`MAX_REQUEST_BYTES`]) |

mod client;
mod hub;
mod request_check;

pub use client::ModelClient;
pub use hub::{applied_budget, ModelHub};
pub use request_check::MAX_REQUEST_BYTES;
