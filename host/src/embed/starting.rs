//! Starts under way and a team's stop: a teammate whose spawn is under way
//! when [`Host::shutdown_team`](super::Host::shutdown_team) begins is
//! not missed by it.
//!
//! A spawn holds a [`Start`] from before it registers anything until its
//! teammate is in the host's index (`Host::keep`), where a stop finds it;
//! so do a resume and an adoption, for all the teammates they bring back
//! (a lead started with `Host::start_lead` and a teammate process's
//! `attach` do not). A stop first closes its team's gate
//! ([`Starts::close`]): a spawn begun after that is refused at once
//! ([`Error::Spawn`], "shutting down"), and the stop waits for the starts
//! already under way to end, up to its timeout, so every teammate they
//! started is among those it asks to stop. A start that outlasts that wait
//! (a long compile, a store that does not answer, a spawn future nobody
//! polls) and keeps its teammate while the stop runs is stopped by the stop
//! at its end, with the killed; one that keeps it after the stop ended
//! runs on (the one gap left). A batch
//! ([`Host::spawn_many`](super::Host::spawn_many)) looks at the gate before
//! each chunk it registers and each group it starts ([`Start::closing`]):
//! once a stop of its team began, it refuses the rest. The gate opens
//! again when the stop ends: the team may be used again.
//!
//! The lease on a team is released only when no teammate of it runs and
//! no start is under way ([`Starts::under_way`]): a teammate started after
//! its host let the team go would run with no host answering for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;

use crate::error::{Error, Result};

/// The gates of every team this host starts teammates in.
#[derive(Debug, Default)]
pub(super) struct Starts {
    teams: Mutex<HashMap<String, Gate>>,
    /// Told whenever a start ends.
    ended: tokio::sync::Notify,
}

/// Stops begun, in every host of the process, in order: a start knows the
/// count when it began.
static STOPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One team's gate.
#[derive(Debug, Default)]
struct Gate {
    /// Starts under way.
    under_way: usize,
    /// Stops under way (two may overlap: the gate opens when both end).
    closing: usize,
    /// The last stop of this team to begin ([`STOPS`]).
    stopped: u64,
}

impl Starts {
    /// Begins a start in `team`; refused while a stop of `team` is under
    /// way.
    pub(super) fn begin(self: &Arc<Self>, team: &str) -> Result<Start> {
        let mut teams = self.lock();
        let gate = teams.entry(team.to_string()).or_default();
        if gate.closing > 0 {
            return Err(Error::Spawn(format!(
                "the team {team:?} is shutting down: no teammate starts in it until the \
                 shutdown ends"
            )));
        }
        gate.under_way += 1;
        Ok(Start {
            starts: self.clone(),
            team: team.to_string(),
            begun: STOPS.load(std::sync::atomic::Ordering::SeqCst),
        })
    }

    /// Closes `team`'s gate and waits until no start is under way in it or
    /// `deadline` passes (then it logs the starts it gave up on). The gate
    /// opens again when the returned [`Closed`] is dropped.
    pub(super) async fn close(self: &Arc<Self>, team: &str, deadline: Instant) -> Closed {
        {
            let mut teams = self.lock();
            let gate = teams.entry(team.to_string()).or_default();
            gate.closing += 1;
            gate.stopped = STOPS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        }
        let closed = Closed {
            starts: self.clone(),
            team: team.to_string(),
        };
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Enabled before the count is read: a start ending in between
            // is not missed.
            ended.as_mut().enable();
            if !self.under_way(team) {
                break;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                tracing::warn!(
                    team,
                    "spawns still under way when the stop's wait for them ran out"
                );
                break;
            }
        }
        closed
    }

    /// Whether a start is under way in `team`.
    pub(super) fn under_way(&self, team: &str) -> bool {
        self.lock().get(team).is_some_and(|g| g.under_way > 0)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Gate>> {
        self.teams.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes `team`'s gate with `change`, and forgets it when nothing is
    /// under way or closing.
    fn update(&self, team: &str, change: impl FnOnce(&mut Gate)) {
        let mut teams = self.lock();
        if let Some(gate) = teams.get_mut(team) {
            change(gate);
            if gate.under_way == 0 && gate.closing == 0 {
                teams.remove(team);
            }
        }
    }
}

/// A start under way (see the module docs); it ends when dropped.
#[derive(Debug)]
pub(super) struct Start {
    starts: Arc<Starts>,
    team: String,
    /// [`STOPS`] when it began.
    begun: u64,
}

impl Start {
    /// Whether a stop of the team began since this start began (under way
    /// or over: one that gave up waiting for it has ended): a batch
    /// registers and starts no more then.
    pub(super) fn closing(&self) -> bool {
        self.starts
            .lock()
            .get(&self.team)
            .is_some_and(|g| g.stopped > self.begun)
    }
}

impl Drop for Start {
    fn drop(&mut self) {
        self.starts
            .update(&self.team, |g| g.under_way = g.under_way.saturating_sub(1));
        self.starts.ended.notify_waiters();
    }
}

/// A team's gate held closed by a stop (see [`Starts::close`]).
#[derive(Debug)]
pub(super) struct Closed {
    starts: Arc<Starts>,
    team: String,
}

impl Drop for Closed {
    fn drop(&mut self) {
        self.starts
            .update(&self.team, |g| g.closing = g.closing.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stop_waits_for_the_starts_under_way_and_refuses_new_ones_until_it_ends() {
        let starts = Arc::new(Starts::default());
        let first = starts.begin("t").unwrap();
        assert!(!first.closing());
        assert!(starts.under_way("t"));
        let closing = {
            let starts = starts.clone();
            let far = Instant::now() + std::time::Duration::from_secs(3600);
            tokio::spawn(async move { starts.close("t", far).await })
        };
        // The stop has closed the gate once a new start is refused.
        loop {
            match starts.begin("t") {
                Ok(s) => drop(s),
                Err(e) => {
                    assert!(e.to_string().contains("shutting down"), "{e}");
                    break;
                }
            }
            tokio::task::yield_now().await;
        }
        assert!(first.closing(), "the start under way sees the stop");
        // Another team's starts are not held up.
        drop(starts.begin("other").unwrap());
        assert!(!closing.is_finished());
        drop(first);
        let closed = closing.await.unwrap();
        assert!(!starts.under_way("t"));
        assert!(starts.begin("t").is_err(), "closed until the stop ends");
        drop(closed);
        let again = starts.begin("t").unwrap();
        assert!(!again.closing(), "begun after the stop");
        drop(again);
        assert!(starts.lock().is_empty(), "nothing is kept for idle teams");
    }

    #[tokio::test]
    async fn a_start_that_outlasts_the_stops_wait_still_sees_the_stop_after_it_ends() {
        let starts = Arc::new(Starts::default());
        let slow = starts.begin("t").unwrap();
        // A deadline already passed: the stop does not wait.
        let closed = starts.close("t", Instant::now()).await;
        assert!(starts.under_way("t"));
        drop(closed);
        // The stop is over, and the batch under way still starts no more.
        assert!(slow.closing());
        let later = starts.begin("t").unwrap();
        assert!(!later.closing(), "begun after the stop");
        drop(slow);
        drop(later);
    }
}
