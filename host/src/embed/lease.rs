//! [`TeamLease`]: a host's claim on the teammates it runs in one team, kept
//! in a store shared by several hosts ([`crate::store::failover`]), renewed
//! while the host lives, and the fence that keeps a host whose lease was
//! taken over from writing again.
//!
//! CONTRACT (issue 32, written before the parts): the signatures below are
//! what `embed::adopt` and the CLI build on. Bodies land with the lease part.
//!
//! **Timing.** The lease is renewed every `lease / 3`. The holder counts it
//! valid until half a lease after it *sent* its last successful renewal; a
//! write after that first renews synchronously, and is refused with
//! [`Error::LeaseLost`](crate::Error::LeaseLost) when the renewal finds the
//! lease taken over. An observer takes over only after it has seen one
//! revision of the lease unchanged for a whole lease on its own clock, so
//! the holder has stopped writing before anyone may take over. No two
//! machines' wall clocks are compared.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::store::TeamStore;

/// How long a host's lease lasts without renewal, by default.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// Who this host process is, in leases and run records. One per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIdentity {
    /// `{hostname}-{pid}-{8 random hex}`: unique per process, even when a
    /// pid is reused.
    pub id: String,
    /// The machine's name.
    pub hostname: String,
    /// This process.
    pub pid: u32,
}

impl HostIdentity {
    /// This process's identity (made once, the same on every call).
    pub fn this_process() -> &'static HostIdentity {
        todo!("lease part")
    }
}

/// A held lease on one team. Renewed by a task on the current tokio runtime
/// until released, dropped with its last handle, or lost.
#[derive(Debug)]
pub struct TeamLease {
    _private: (),
}

impl TeamLease {
    /// Creates this host's lease record in `team` (state `Held`) and starts
    /// renewing it. Fails when the store has no failover (the file store)
    /// with an error saying a shared store is needed.
    pub async fn take(
        _store: Arc<dyn TeamStore>,
        _team: &str,
        _me: &HostIdentity,
        _lease: Duration,
    ) -> Result<Arc<TeamLease>> {
        todo!("lease part")
    }

    /// `Ok` while this host may write for the team; renews first when the
    /// last renewal is more than half a lease old. `Err(LeaseLost)` once the
    /// lease was taken over (for good). Synchronous: store calls run on
    /// blocking threads.
    pub fn check(&self) -> Result<()> {
        todo!("lease part")
    }

    /// `Some(adopting host id)` once the lease was taken over; watch it to
    /// stop this host's copies of the teammates.
    pub fn lost(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        todo!("lease part")
    }

    /// Marks the lease `Released` (this host ended cleanly) and stops
    /// renewing. Others then take nothing over.
    pub fn release(&self) -> Result<()> {
        todo!("lease part")
    }

    /// The lease's length.
    pub fn length(&self) -> Duration {
        todo!("lease part")
    }

    /// The team it is on.
    pub fn team(&self) -> &str {
        todo!("lease part")
    }
}
