//! Where a run says what it does: the [`Narrator`] an embedder or the CLI
//! gives each phase of a [`super::Run`] (a line per step, the moment the work
//! phase's clock starts).

use std::time::Instant;

/// Hears a run's own lines ("created team …", "compiling …", "… joins")
/// and the start of its work phase. Teammates' messages and state changes
/// are not narrated: they are [`crate::embed::Host::events`].
pub trait Narrator: Send + Sync {
    /// One line of the run's, `who` being `"run"` or a teammate's name.
    fn line(&self, who: &str, what: String);

    /// The teammates are spawned and the work phase begins; it ends by
    /// `deadline` at the latest (the plan's timeout). The CLI arms its
    /// watchdog here.
    fn work_started(&self, deadline: Instant) {
        let _ = deadline;
    }
}

/// A narrator that says nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Narrator for Silent {
    fn line(&self, _: &str, _: String) {}
}
