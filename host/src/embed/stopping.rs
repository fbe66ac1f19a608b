//! Stopping teammates: the shutdown protocol for a whole team
//! ([`Host::shutdown_team`], [`ShutdownReport`]), killing one, deleting a
//! team, aborting everything, and ending a teammate's waits.

use std::sync::Arc;
use std::time::Duration;

use super::{Event, TeammateInfo, TeammateState};
use crate::backends::{self, BackendKind};
use crate::error::{Error, Result};
use crate::protocol::{ShutdownRequest, WireMessage};
use crate::store::{OutgoingMessage, Team};

use super::api::watch_of;
use super::Host;

/// Shutdown requests written at once: enough to overlap their syncs, few
/// enough not to queue hundreds of threads on one directory's lock.
const SHUTDOWN_REQUESTS_AT_ONCE: usize = 32;

/// What [`Host::shutdown_team`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Teammates that approved and stopped (or had already stopped).
    pub stopped: Vec<String>,
    /// Teammates that did not stop in time and were killed.
    pub killed: Vec<String>,
}

impl Host {
    /// Asks every running teammate of `team` to shut down (a
    /// `shutdown_request` from the lead with `reason`), waits up to `timeout`
    /// for them to approve and stop, and kills the rest.
    ///
    /// The lead is going away, so a permission request it has not answered
    /// will not be: a teammate of this host waiting for the lead's answer is
    /// denied at once, "the host is stopping ({reason})"
    /// ([`crate::runtime::Stopping`]), and asks nothing more; its turn ends
    /// and it takes its shutdown request. (A teammate in its own process
    /// ends such a wait when it is killed, by SIGTERM.)
    ///
    /// From its start to its end no teammate starts in `team`: a spawn is
    /// refused, and the spawns under way when it began are waited for
    /// first, up to `timeout` (a batch stops before its next chunk or
    /// group), so every teammate they started is asked too; then the
    /// teammates get `timeout` to approve. One kept by a start that
    /// outlasted the first wait is killed at the end (`starting.rs`).
    pub async fn shutdown_team(
        &self,
        team: &str,
        reason: &str,
        timeout: Duration,
    ) -> Result<ShutdownReport> {
        let team = self.team(team)?;
        // Whoever still waits to join will not: the team is closing.
        self.forget_joining(team.name());
        // No spawn starts in the team from here to the end, and those under
        // way end first (waited for up to `timeout`), so every teammate
        // they start is asked too (`starting.rs`).
        let closing = tokio::time::Instant::now() + timeout;
        let _closed = self.inner.starts.close(team.name(), closing).await;
        let lead = team.config()?.lead_name().to_string();
        let running = self.running(team.name());
        // Every request at once: each is its own inbox's write, so they
        // proceed in parallel instead of one synced write after another.
        let mut sending = tokio::task::JoinSet::new();
        let at_once = Arc::new(tokio::sync::Semaphore::new(SHUTDOWN_REQUESTS_AT_ONCE));
        for name in &running {
            let (team, lead, name) = (team.clone(), lead.clone(), name.clone());
            let reason = reason.to_string();
            let slot = at_once.clone().acquire_owned().await;
            sending.spawn_blocking(move || {
                let _slot = slot;
                let request = ShutdownRequest::new(&name, &lead, Some(reason));
                team.send(&name, OutgoingMessage::new(&lead, request.to_text()))
            });
        }
        let started = std::time::Instant::now();
        while let Some(sent) = sending.join_next().await {
            sent.map_err(|e| {
                Error::HostTask(format!("sending a shutdown request panicked: {e}"))
            })??;
        }
        tracing::debug!(team = %team.name(), teammates = running.len(), took = ?started.elapsed(), "shutdown requests sent");
        // After the requests: a wait denied now ends a turn whose teammate
        // then finds its shutdown request waiting.
        for name in &running {
            self.stop_waits(team.name(), name, reason);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut report = ShutdownReport::default();
        for name in &running {
            let mut state = self.state_receiver(team.name(), name);
            let done = tokio::time::timeout_at(deadline, async {
                let Some(rx) = state.as_mut() else { return };
                let _ = rx.wait_for(|s| s.is_finished()).await;
            })
            .await;
            if done.is_ok() {
                report.stopped.push(name.clone());
            } else {
                self.kill(team.name(), name).await?;
                report.killed.push(name.clone());
            }
        }
        // A start the wait above gave up on that kept its teammate since:
        // stopped at once, as one that did not stop in time.
        let asked: std::collections::HashSet<&String> = running.iter().collect();
        for name in self.running(team.name()) {
            if !asked.contains(&name) {
                self.kill(team.name(), &name).await?;
                report.killed.push(name);
            }
        }
        tracing::debug!(team = %team.name(), took = ?started.elapsed(), "every teammate stopped");
        self.release_lease_if_done(team.name()).await;
        Ok(report)
    }

    /// Stops a teammate at once (its current turn is abandoned), returns its
    /// tasks to `pending`, removes it from the team and tells the lead.
    pub async fn kill(&self, team: &str, name: &str) -> Result<()> {
        let team = self.team(team)?;
        let key = (team.name().to_string(), name.to_string());
        let (handle, grace, backend) = {
            let map = self.inner.teammates.lock().expect("teammates lock");
            let spawned = map.get(&key).ok_or_else(|| {
                Error::HostedTeammate(format!("{name} was not spawned by this host"))
            })?;
            // A wait for the lead ends now: the turn can end cleanly
            // within the grace below.
            spawned.stopping.stop("the teammate is being stopped");
            spawned.kill.trip();
            (
                spawned.join.abort_handle(),
                spawned.stop_grace,
                spawned.backend,
            )
        };
        // A teammate stuck inside a turn does not see the kill flag: give it a
        // moment to stop cleanly, then abort its task and clean up here. (An
        // external teammate's monitor stops its process itself: SIGTERM, then
        // SIGKILL, then the same cleanup.)
        let mut state = self.state_receiver(team.name(), name);
        let stopped = tokio::time::timeout(grace, async {
            if let Some(rx) = state.as_mut() {
                let _ = rx.wait_for(|s| s.is_finished()).await;
            }
        })
        .await;
        if stopped.is_err() && backend != BackendKind::InProcess {
            return Err(Error::Backend(format!(
                "{name}'s process did not end within {grace:?} of SIGKILL"
            )));
        }
        if stopped.is_err() {
            handle.abort();
            let team2 = team.clone();
            let n = name.to_string();
            let cleanup = crate::blocking::try_run("cleanup after a kill", move || {
                let config = team2.config()?;
                let id = config
                    .member(&n)
                    .map(|m| m.agent_id.clone())
                    .unwrap_or_default();
                let u = team2.unassign_agent(&n, &id, true)?;
                let _ = team2.remove_member(&n);
                let lead = config.lead_name().to_string();
                team2.deliver(
                    &lead,
                    OutgoingMessage::new(crate::runner::HOST_SENDER, u.notification),
                )?;
                Ok(())
            })
            .await;
            if let Err(e) = cleanup {
                tracing::error!(teammate = %name, error = %e, "cleanup after kill failed");
            }
            self.inner.hub.unregister(team.name(), name);
            self.inner
                .teammates
                .lock()
                .expect("teammates lock")
                .set_state(&key, watch_of(TeammateState::Killed));
            let _ = self.inner.events.send(Event::StateChanged {
                team: team.name().into(),
                name: name.into(),
                state: TeammateState::Killed,
            });
        }
        Ok(())
    }

    /// Kills every teammate of `team` still running, stops any process
    /// another teamhost process started for it (SIGTERM, then SIGKILL after
    /// [`BackendOptions::stop_timeout`](crate::backends::BackendOptions::stop_timeout)) and closes the tmux panes teamhost
    /// recorded for it, deletes the team's state from the store, and removes its teammates' clean worktrees; worktrees
    /// with changes are kept and listed in the report.
    ///
    /// Refused, before anything is stopped, while another live host on this
    /// machine runs the team ([`Error::TeamRunning`], see
    /// [`backends::live_host`]): this host deletes its own teams only.
    pub async fn delete_team(&self, team: &str) -> Result<crate::worktree::Cleanup> {
        self.delete_team_now(team).await
    }

    /// Registers `look` to run once, on the blocking pool, just before
    /// [`Host::delete_team`] deletes `team`'s state (whoever asks for it: the
    /// caller, or a lead component's `delete-team`), once its teammates
    /// here have stopped: it gets the team, still whole, and those
    /// teammates as this host saw them last. For a caller that reports on
    /// a team its lead deletes (a led run's summary). A later registration
    /// replaces an earlier one; a panic in `look` is logged and the
    /// deletion goes on.
    pub fn before_delete(
        &self,
        team: &str,
        look: impl FnOnce(&Team, Vec<TeammateInfo>) + Send + 'static,
    ) {
        self.inner
            .last_looks
            .lock()
            .expect("last looks lock")
            .insert(team.to_string(), Box::new(look));
    }

    async fn delete_team_now(&self, team: &str) -> Result<crate::worktree::Cleanup> {
        let t = self.team(team)?;
        let (h, tt) = (self.inner.home.clone(), t.clone());
        crate::store::blocking("looking for the team's host", move || {
            backends::live_host::refuse_if_live(
                &h,
                &tt,
                "deleting the team now would delete the tasks, inboxes and requests it is using",
            )
        })
        .await?;
        // As a stop: no teammate starts in a team being deleted, and one
        // under way is waited for (`starting.rs`).
        let deadline = tokio::time::Instant::now() + self.inner.opts.backends.stop_timeout;
        let _closed = self.inner.starts.close(t.name(), deadline).await;
        // All at once: each leaves the team through the store, and leaving
        // together they share the config's writes (group commit).
        let mut killing = tokio::task::JoinSet::new();
        for info in self.teammates(t.name()) {
            if !info.state.is_finished() {
                let (host, team) = (self.clone(), t.name().to_string());
                killing.spawn(async move { host.kill(&team, &info.name).await });
            }
        }
        while let Some(killed) = killing.join_next().await {
            killed.map_err(|e| Error::HostTask(format!("stopping a teammate panicked: {e}")))??;
        }
        let (home, timeout) = (
            self.inner.home.clone(),
            self.inner.opts.backends.stop_timeout,
        );
        // Other processes' teammates first, while this host still watches
        // them leave; then the team's state, with nothing watching.
        let (h, name) = (home.clone(), t.name().to_string());
        crate::store::blocking("stopping the team's processes", move || {
            backends::started::stop_all(&h, &name, timeout)
        })
        .await?;
        let look = (self.inner.last_looks.lock().expect("last looks lock")).remove(t.name());
        if let Some(look) = look {
            let (whole, mates) = (t.clone(), self.teammates(t.name()));
            let looked = crate::blocking::run("a last look at the team", move || {
                look(&whole, mates);
            });
            if let Err(e) = looked.await {
                tracing::warn!(team = %t.name(), error = %e, "the last look before deleting the team failed");
            }
        }
        // One a start the wait gave up on kept since: stopped too, before
        // the index forgets the team.
        for name in self.running(t.name()) {
            self.kill(t.name(), &name).await?;
        }
        self.inner
            .teammates
            .lock()
            .expect("teammates lock")
            .retain(|(tn, _), _| tn != t.name());
        self.inner
            .watches
            .lock()
            .expect("watches lock")
            .remove(t.name());
        let team_name = t.name().to_string();
        let done = crate::store::blocking("deleting the team", move || {
            backends::teardown::delete_team(&home, &t, true, timeout)
        })
        .await?;
        self.release_lease_if_done(&team_name).await;
        Ok(done.worktrees)
    }

    /// Stops every teammate of this host where it is, at once, waiting for
    /// nothing and writing nothing — for a host about to exit (`teamhost
    /// run`'s forced stop). An in-process teammate's runner is dropped (a
    /// turn in progress is abandoned; the Bash calls running in this
    /// process have their process groups killed); a teammate process this
    /// host started gets SIGTERM and leaves the team on its own. The teams'
    /// files stay as a crash would leave them: `Host::resume` brings them
    /// back. Returns how many teammates were running.
    pub fn abort_all(&self) -> usize {
        let me = std::process::id();
        let mut stopped = 0;
        let mut teams = std::collections::BTreeSet::new();
        for ((team, _), s) in self.inner.teammates.lock().expect("teammates lock").iter() {
            if s.state.borrow().is_finished() {
                continue;
            }
            stopped += 1;
            s.stopping.stop("the host is stopping at once");
            s.kill.trip();
            if s.backend == BackendKind::InProcess {
                s.join.abort();
            } else {
                teams.insert(team.clone());
            }
        }
        crate::tools::bash::kill_in_flight();
        for team in teams {
            for rec in crate::home::started::list(&self.inner.home, &team).unwrap_or_default() {
                if rec.host_pid == me && rec.open_if_running().is_some() {
                    backends::started::signal(rec.pid, libc::SIGTERM);
                }
            }
        }
        stopped
    }

    /// Ends the waits for the lead of `name` (a teammate this host runs),
    /// and any later one, with `reason`: a permission request it waits on
    /// is denied at once, "the host is stopping ({reason})", and recorded
    /// as answered. A teammate this host did not spawn is left alone.
    /// `teamhost teammate` calls it when the host that started it says
    /// the team is stopping (SIGUSR1).
    pub fn stop_waits(&self, team: &str, name: &str, reason: &str) {
        let map = self.inner.teammates.lock().expect("teammates lock");
        if let Some(s) = map.get(&(team.to_string(), name.to_string())) {
            s.stopping.stop(reason);
        }
    }
}
