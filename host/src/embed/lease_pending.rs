//! Stand-ins for the lease part's Host wiring (issue 32, decision 4) until
//! its branch is merged: no lease is ever held here. Removed by the merge.

use std::sync::Arc;

use super::lease::{HostIdentity, TeamLease};
use super::Host;

impl Host {
    /// The lease this host holds on `team` (stand-in: none).
    pub fn team_lease(&self, _team: &str) -> Option<Arc<TeamLease>> {
        None
    }

    /// Takes this host's lease on `team` now, before any teammate runs
    /// here (a standby host: `teamhost run --adopt`), when the host has
    /// leases on; nothing otherwise (stand-in: nothing).
    pub async fn hold_team_lease(&self, _team: &str) -> crate::error::Result<()> {
        Ok(())
    }

    /// Who this host is in leases and run records.
    pub fn host_identity(&self) -> &'static HostIdentity {
        HostIdentity::this_process()
    }
}
