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

mod adopt;
mod answer_grant;
mod api;
mod approval_desk;
mod attach;
mod compile;
mod decide;
mod host_lease;
pub mod lead_grant;
mod lead_seat;
mod lead_spec;
mod lead_start;
pub mod lease;
mod lease_table;
mod resume;
mod resume_claim;
mod run_record;
mod spawn;

pub use crate::teammate::{
    Event, Isolation, ModelAccess, Resumed, SpawnRequest, TeammateInfo, TeammateSettings,
    TeammateState,
};
pub use adopt::{AdoptReport, LeaseWatch, LEASE_POLL};
pub use api::{Host, HostOptions, ShutdownReport};
pub use approval_desk::ApprovalDesk;
pub use attach::Attach;
pub use decide::{decide, member_cwd, requester, routes_of, Answerer, DecideError};
pub use lead_seat::LeadSeat;
pub use lead_spec::{
    CatalogueEntry, LeadSpec, DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN,
    DEFAULT_MAX_REFUSED_ANSWERS_TOTAL, DEFAULT_MAX_SPAWNS_TOTAL, DEFAULT_MAX_TEAMMATES,
};
pub use resume::ResumeReport;
