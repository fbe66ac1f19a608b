//! The host's leases (host failover): the `Host` methods around its
//! table of leases (`lease/table.rs`) — taking a lease at the first spawn into a
//! team, stopping this host's copies when a lease is lost, releasing it when
//! the host ends cleanly.
//!
//! | when | what |
//! |---|---|
//! | `HostOptions::lease` is `Some` | the host's store is a [`FencedStore`] over the store given, fenced by this table |
//! | the first spawn into a team whose store has failover | [`TeamLease::take`] on the plain store (the lease's own writes are not fenced) |
//! | the lease is lost (taken over) | this host's copies of the team's teammates are stopped without writing, [`Event::LeaseLost`] is sent, `wait_idle` answers `Error::LeaseLost` |
//! | `shutdown_team` leaves none running, `delete_team`, `run --join` ends | the lease is released (`Released`: nobody takes anything over) |
//! | `resume` | the lease is taken before anything is respawned |

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::backends::BackendKind;
use crate::embed::api::Host;
use crate::embed::lease::{HostIdentity, TeamLease};
use crate::embed::{Event, TeammateState};
use crate::error::{Error, Result};

impl Host {
    /// This host's lease on `team`, while it holds one: taken on the first
    /// spawn into a team on a store with failover when
    /// [`HostOptions::lease`](crate::embed::HostOptions::lease) is set.
    pub fn team_lease(&self, team: &str) -> Option<Arc<TeamLease>> {
        self.inner.leases.get(team)
    }

    /// Who this host is in leases and run records:
    /// [`HostOptions::identity`](crate::embed::HostOptions::identity), else
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
    pub(in crate::embed) async fn ensure_lease(&self, team: &str) -> Result<()> {
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
        // Fenced from here on (above). The event goes first: whoever sees
        // these teammates stopped has been sent why.
        let running: Vec<String> = self
            .inner
            .teammates
            .lock()
            .expect("teammates lock")
            .iter()
            .filter(|((t, _), s)| t == team && !s.state.borrow().is_finished())
            .map(|((_, name), _)| name.clone())
            .collect();
        tracing::warn!(team, by, stopped = ?running, "this host's lease was taken over: its teammates are stopped here without writing");
        let _ = self.inner.events.send(Event::LeaseLost {
            team: team.to_string(),
            by: by.to_string(),
            stopped: running.clone(),
        });
        let mut processes = false;
        {
            let mut map = self.inner.teammates.lock().expect("teammates lock");
            for name in &running {
                let key = (team.to_string(), name.clone());
                let Some(s) = map.get(&key) else {
                    continue;
                };
                s.stopping.stop(&reason);
                s.kill.trip();
                s.join.abort();
                processes |= s.backend != BackendKind::InProcess;
                map.set_state(&key, tokio::sync::watch::channel(TeammateState::Killed).1);
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
        for name in &running {
            self.inner.hub.unregister(team, name);
            let _ = self.inner.events.send(Event::StateChanged {
                team: team.to_string(),
                name: name.clone(),
                state: TeammateState::Killed,
            });
        }
    }

    /// Releases this host's lease on `team` when it holds one, runs none
    /// of its teammates any more (they shut down, or the team was deleted)
    /// and starts none (`starting.rs`):
    /// marked `Released`, so no host takes anything over. `shutdown_team`
    /// and `delete_team` call it; a host whose teammates ended otherwise
    /// (`teamhost run --join`: the lead shut them down) calls it itself. A
    /// failure is logged: the lease then expires as a dead host's would.
    pub async fn release_lease_if_done(&self, team: &str) {
        // The look and the removal under the lock `ensure_lease` takes: a
        // spawn that begins after the look takes a lease anew rather than
        // find this one about to go.
        let lease = {
            let _taking = self.inner.leases.taking.lock().await;
            // A spawn under way starts a teammate the lease must cover.
            if !self.running(team).is_empty() || self.inner.starts.under_way(team) {
                return;
            }
            let Some(lease) = lock(&self.inner.leases.held).remove(team) else {
                return;
            };
            lease
        };
        let released = crate::blocking::try_run("releasing the lease", move || lease.release());
        if let Err(e) = released.await {
            tracing::warn!(team, error = %e, "the lease was not released");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
