//! Host failover on a store shared by several hosts: keeping this host's
//! leases, recording what it runs, and taking over the teammates of a host
//! whose lease expired. Built on [`super::lease`] and the facade's
//! [`Host`](crate::embed::Host).
//!
//! | file | what it owns |
//! |---|---|
//! | `host_lease.rs` | the `Host` methods around its leases: take one at the first spawn into a team, stop this host's copies when one is lost, release it at the end |
//! | `run_record.rs` | run records: what this host runs in a team whose lease it holds, for another host to start again |
//! | `adopt.rs` | [`Host::adopt`](crate::embed::Host::adopt) and [`LeaseWatch`]: see an expired lease on this host's clock and take over its teammates |
//! | `resume_claim.rs` | resume and adopt on one shared team: who runs each teammate is settled in the store before anything is respawned |

mod adopt;
mod host_lease;
pub(in crate::embed) mod resume_claim;
mod run_record;

pub use adopt::{AdoptReport, LeaseWatch, LEASE_POLL};
