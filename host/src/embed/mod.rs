//! The embedding API: a [`Host`] runs teams of WebAssembly teammates inside the
//! caller's tokio runtime.
//!
//! ```no_run
//! # async fn demo() -> teamhost::Result<()> {
//! use teamhost::embed::{Host, SpawnRequest};
//! use teamhost::home::Home;
//! use teamhost::store::NewTeam;
//! let host = Host::new(Home::new("/tmp/teamhost-demo"))?;
//! host.create_team("demo", NewTeam::default())?;
//! host.spawn("demo", SpawnRequest::new("echo", "echo.wasm", "say hi", ".")).await?;
//! host.send_as_lead("demo", "echo", "hello", None)?;
//! host.wait_idle("demo").await?;
//! host.shutdown_team("demo", "done", std::time::Duration::from_secs(10)).await?;
//! # Ok(()) }
//! ```
//!
//! | file / folder | what it owns |
//! |---|---|
//! | `api.rs` | [`Host`]: its state, constructors and accessors, creating a team |
//! | `options.rs` | [`HostOptions`]: a host's settings and their defaults |
//! | `allocator.rs` | [`limit_malloc_arenas`]: the process's allocator for thousands of teammates (the `teamhost` binary calls it) |
//! | `spawn.rs` | [`Host::spawn`], after the layout check every spawn and attach passes first |
//! | `spawn_many.rs` | [`Host::spawn_many`]: a batch of teammates, registered many to a config write |
//! | `watching.rs` | talking to a team as its lead and watching it: messages, requests, events, states, [`Host::wait_idle`] |
//! | `stopping.rs` | [`Host::shutdown_team`], `kill`, `delete_team`, `abort_all`: stopping teammates and teams |
//! | `attach.rs` | [`Host::attach`]: run a teammate its lead already wrote into the team (`teamhost teammate`) |
//! | `compile.rs` | compiling a team's components before its teammates are spawned, and who waits to join meanwhile |
//! | `resume.rs` | [`Host::resume`]: bring back a team whose host died |
//! | `lease/` | the leases of host failover: a host's claim on a team, and the table a host's store asks before each write |
//! | `failover/` | keeping this host's leases, its run records, and [`Host::adopt`]: taking over a dead host's teammates |
//! | `grant/` | the lead's grant: [`LeadSpec`], the catalogue, and [`LeadGrant`], which answers what a lead may give |
//! | `approvals/` | the one approval path ([`decide`]) and the policy desk ([`ApprovalDesk`]) |
//! | `lead/` | a lead component in its seat: [`Host::start_lead`] and [`LeadSeat`] |

mod allocator;
mod api;
pub mod approvals;
mod attach;
mod compile;
pub mod failover;
pub mod grant;
pub mod lead;
pub mod lease;
mod options;
mod resume;
mod running;
mod spawn;
mod spawn_many;
mod starting;
mod stopping;
mod watching;

pub use crate::teammate::{
    Event, Isolation, ModelAccess, Resumed, SpawnRequest, TeammateInfo, TeammateSettings,
    TeammateState,
};
pub use allocator::limit_malloc_arenas;
pub use api::Host;
pub use approvals::{
    decide, member_cwd, requester, routes_of, Answerer, ApprovalDesk, DecideError,
};
pub use attach::Attach;
pub use failover::{AdoptReport, LeaseWatch, LEASE_POLL};
pub use grant::{
    CatalogueEntry, LeadGrant, LeadSpec, DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN,
    DEFAULT_MAX_REFUSED_ANSWERS_TOTAL, DEFAULT_MAX_SPAWNS_TOTAL, DEFAULT_MAX_TEAMMATES,
};
pub use lead::LeadSeat;
pub use options::HostOptions;
pub use resume::ResumeReport;
pub use stopping::ShutdownReport;
