//! [`HostLeases`]: the table of the leases one host holds, one per team it
//! runs teammates of on a store with failover, and the [`Fence`]
//! its store asks before each write. What the host does with it (take, lose,
//! release) is in `failover/host_lease.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::embed::lease::{HostIdentity, TeamLease};
use crate::error::{Error, Result};
use crate::store::{Fence, FencedStore, Store, TeamStore};

/// The leases one host holds, by team, and the teams it lost.
pub(crate) struct HostLeases {
    pub(in crate::embed) me: HostIdentity,
    /// `HostOptions::lease`.
    pub(in crate::embed) length: Option<Duration>,
    /// The store underneath the fence: where leases are taken and renewed.
    pub(in crate::embed) plain: Arc<dyn TeamStore>,
    pub(in crate::embed) held: Mutex<HashMap<String, Arc<TeamLease>>>,
    /// Teams whose lease was taken over, and by whom: fenced for good.
    pub(in crate::embed) lost: Mutex<HashMap<String, String>>,
    /// Serialises takes, so two spawns into one team take one lease.
    pub(in crate::embed) taking: tokio::sync::Mutex<()>,
}

impl HostLeases {
    /// The table of a host over `store`; with `length` set, the store the
    /// host should use instead (fenced by the table).
    pub(crate) fn new(
        me: HostIdentity,
        length: Option<Duration>,
        store: Store,
    ) -> (Arc<HostLeases>, Store) {
        let plain = Arc::clone(store.backend());
        let leases = Arc::new(HostLeases {
            me,
            length,
            plain: Arc::clone(&plain),
            held: Mutex::new(HashMap::new()),
            lost: Mutex::new(HashMap::new()),
            taking: tokio::sync::Mutex::new(()),
        });
        let store = match length {
            Some(_) => {
                let fenced = Store::with_backend(Arc::new(FencedStore::new(plain, leases.clone())));
                match store.lead_guard() {
                    Some(guard) => fenced.with_lead_guard(guard.clone()),
                    None => fenced,
                }
            }
            None => store,
        };
        (leases, store)
    }

    pub(crate) fn identity(&self) -> &HostIdentity {
        &self.me
    }

    pub(crate) fn get(&self, team: &str) -> Option<Arc<TeamLease>> {
        lock(&self.held).get(team).cloned()
    }

    /// Who took `team`'s lease over, once one did.
    pub(crate) fn lost_to(&self, team: &str) -> Option<String> {
        lock(&self.lost).get(team).cloned()
    }
}

impl Fence for HostLeases {
    fn check(&self, team: &str) -> Result<()> {
        if let Some(by) = self.lost_to(team) {
            return Err(Error::LeaseLost {
                team: team.to_string(),
                by,
            });
        }
        match self.get(team) {
            Some(lease) => lease.check(),
            None => Ok(()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
