//! The host's leases (issue 32, decision 4): [`HostLeases`], the table of
//! the leases this host holds, one per team it runs teammates of on a store
//! with failover, and the [`Fence`] its store asks before each write; and
//! the `Host` methods around it — taking a lease at the first spawn into a
//! team, stopping this host's copies when a lease is lost, releasing it when
//! the host ends cleanly.
//!
//! | when | what |
//! |---|---|
//! | `HostOptions::lease` is `Some` | the host's store is a [`FencedStore`] over the store given, fenced by this table |
//! | the first spawn into a team whose store has failover | [`TeamLease::take`] on the plain store (the lease's own writes are not fenced) |
//! | the lease is lost (taken over) | this host's copies of the team's teammates are stopped without writing, [`Event::LeaseLost`] is sent, `wait_idle` answers `Error::LeaseLost` |
//! | `shutdown_team` leaves none running, `delete_team` | the lease is released (`Released`: nobody takes anything over) |

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::api::Host;
use super::lease::{HostIdentity, TeamLease};
use super::{Event, TeammateState};
use crate::backends::BackendKind;
use crate::error::{Error, Result};
use crate::store::{Fence, FencedStore, Store, TeamStore};

/// The leases one host holds, by team, and the teams it lost.
pub(crate) struct HostLeases {
    me: HostIdentity,
    /// `HostOptions::lease`.
    length: Option<Duration>,
    /// The store underneath the fence: where leases are taken and renewed.
    plain: Arc<dyn TeamStore>,
    held: Mutex<HashMap<String, Arc<TeamLease>>>,
    /// Teams whose lease was taken over, and by whom: fenced for good.
    lost: Mutex<HashMap<String, String>>,
    /// Serialises takes, so two spawns into one team take one lease.
    taking: tokio::sync::Mutex<()>,
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
            Some(_) => Store::with_backend(Arc::new(FencedStore::new(plain, leases.clone()))),
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

impl Host {
    /// This host's lease on `team`, while it holds one: taken on the first
    /// spawn into a team on a store with failover when
    /// [`HostOptions::lease`](super::HostOptions::lease) is set.
    pub fn team_lease(&self, team: &str) -> Option<Arc<TeamLease>> {
        self.inner.leases.get(team)
    }

    /// Who this host is in leases and run records:
    /// [`HostOptions::identity`](super::HostOptions::identity), else
    /// [`HostIdentity::this_process`].
    pub fn host_identity(&self) -> &HostIdentity {
        self.inner.leases.identity()
    }

    /// `Err(LeaseLost)` (naming the adopting host) once this host's lease
    /// on `team` was taken over; `Ok` otherwise, leases on or off.
    pub fn check_lease(&self, team: &str) -> Result<()> {
        match self.inner.leases.lost_to(team) {
            Some(by) => Err(Error::LeaseLost {
                team: team.to_string(),
                by,
            }),
            None => Ok(()),
        }
    }

    /// Takes this host's lease on `team` unless it holds one, when leases
    /// are on and the store has failover; watches it for a takeover.
    pub(super) async fn ensure_lease(&self, team: &str) -> Result<()> {
        let leases = &self.inner.leases;
        let Some(length) = leases.length else {
            return Ok(());
        };
        if leases.plain.failover().is_none() {
            return Ok(());
        }
        let _taking = leases.taking.lock().await;
        self.check_lease(team)?;
        if leases.get(team).is_some() {
            return Ok(());
        }
        let lease = TeamLease::take(Arc::clone(&leases.plain), team, &leases.me, length).await?;
        let mut lost = lease.lost();
        lock(&leases.held).insert(team.to_string(), lease);
        let (host, team) = (Arc::downgrade(&self.inner), team.to_string());
        tokio::spawn(async move {
            let by = loop {
                if let Some(by) = lost.borrow_and_update().clone() {
                    break by;
                }
                if lost.changed().await.is_err() {
                    return; // released and dropped
                }
            };
            if let Some(inner) = Weak::upgrade(&host) {
                Host { inner }.lease_lost(&team, &by);
            }
        });
        Ok(())
    }

    /// The lease on `team` was taken over by `by`: fence the team for good,
    /// stop this host's copies of its teammates without writing (in-process
    /// runners aborted, child processes SIGKILLed: the adopter owns their
    /// tasks and mail now), and say so.
    fn lease_lost(&self, team: &str, by: &str) {
        let leases = &self.inner.leases;
        lock(&leases.lost).insert(team.to_string(), by.to_string());
        lock(&leases.held).remove(team);
        let reason = format!("the lease on team {team} was taken over by host {by}");
        let mut stopped = Vec::new();
        let mut processes = false;
        {
            let mut map = self.inner.teammates.lock().expect("teammates lock");
            for ((t, name), s) in map.iter_mut() {
                if t != team || s.state.borrow().is_finished() {
                    continue;
                }
                s.stopping.stop(&reason);
                let _ = s.kill.send(true);
                s.join.abort();
                processes |= s.backend != BackendKind::InProcess;
                s.state = tokio::sync::watch::channel(TeammateState::Killed).1;
                stopped.push(name.clone());
            }
        }
        if processes {
            let me = std::process::id();
            for rec in crate::home::started::list(&self.inner.home, team).unwrap_or_default() {
                if rec.host_pid == me && rec.open_if_running().is_some() {
                    crate::backends::started::signal(rec.pid, libc::SIGKILL);
                }
            }
        }
        tracing::warn!(team, by, stopped = ?stopped, "this host's lease was taken over: its teammates were stopped here without writing");
        for name in &stopped {
            self.inner.hub.unregister(team, name);
            let _ = self.inner.events.send(Event::StateChanged {
                team: team.to_string(),
                name: name.clone(),
                state: TeammateState::Killed,
            });
        }
        let _ = self.inner.events.send(Event::LeaseLost {
            team: team.to_string(),
            by: by.to_string(),
            stopped,
        });
    }

    /// Releases this host's lease on `team` when it holds one and runs none
    /// of its teammates any more (they shut down, or the team was deleted).
    pub(super) async fn release_lease_if_done(&self, team: &str) {
        if !self.running(team).is_empty() {
            return;
        }
        let Some(lease) = lock(&self.inner.leases.held).remove(team) else {
            return;
        };
        let released = tokio::task::spawn_blocking(move || lease.release()).await;
        match released {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(team, error = %e, "the lease was not released"),
            Err(e) => tracing::warn!(team, error = %e, "releasing the lease panicked"),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
