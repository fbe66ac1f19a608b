//! Starts under way and a team's stop: a teammate whose spawn is under way
//! when [`Host::shutdown_team`](super::Host::shutdown_team) begins is
//! neither missed by it nor left running after it.
//!
//! A spawn holds a [`Start`] from before it registers anything until its
//! teammate is in the host's index (`Host::keep`), where a stop finds it;
//! so do a resume and an adoption, for all the teammates they bring back
//! (a lead started with `Host::start_lead` and a teammate process's
//! `attach` do not: the one comes before its team's teammates, the other
//! is a process of its own).
//! A stop first closes its team's gate ([`Starts::close`]): a spawn begun
//! after that is refused at once ([`Error::Spawn`], "shutting down"), and
//! the stop waits for the starts already under way to end, up to its own
//! deadline, so every teammate they started is among those it asks to
//! stop. Then it seals the gate: a start still under way at that moment
//! (one that outlasted the deadline: a long compile, a store that does not
//! answer, a spawn future nobody polls) was missed, sees it
//! ([`Start::missed_by_a_stop`]), and a spawn then stops its teammate
//! itself instead of leaving it running (a resume or an adoption that
//! outlasts a stop's timeout does not yet). A batch ([`Host::spawn_many`](super::Host::spawn_many))
//! looks at the gate before each chunk it registers and each group it
//! starts ([`Start::closing`]) and refuses the rest. The gate opens again
//! when the stop ends: the team may be used again.
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

/// The seals of every gate, in order: a start knows the last one before
/// it began.
static SEALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One team's gate.
#[derive(Debug, Default)]
struct Gate {
    /// Starts under way.
    under_way: usize,
    /// Stops under way (two may overlap: the gate opens when both end).
    closing: usize,
    /// The last seal of this gate ([`SEALS`]): when a stop took the
    /// teammates it asks.
    sealed: u64,
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
            begun: SEALS.load(std::sync::atomic::Ordering::SeqCst),
        })
    }

    /// Closes `team`'s gate, waits until no start is under way in it or
    /// `deadline` passes, then seals it: the caller takes the teammates it
    /// stops after this returns, and a start still under way is then
    /// [`Start::missed_by_a_stop`]. The gate opens again when the returned
    /// [`Closed`] is dropped.
    pub(super) async fn close(self: &Arc<Self>, team: &str, deadline: Instant) -> Closed {
        self.lock().entry(team.to_string()).or_default().closing += 1;
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
                tracing::warn!(team, "spawns still under way when the stop's time ran out: each stops its teammate itself");
                break;
            }
        }
        let mut teams = self.lock();
        let gate = teams.entry(team.to_string()).or_default();
        gate.sealed = SEALS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
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
    /// [`SEALS`] when it began.
    begun: u64,
}

impl Start {
    /// Whether a stop of the team is under way: a batch registers and
    /// starts no more then.
    pub(super) fn closing(&self) -> bool {
        self.starts
            .lock()
            .get(&self.team)
            .is_some_and(|g| g.closing > 0)
    }

    /// Whether a stop took the team's teammates while this start was
    /// under way (its wait for the start ran out): whatever this start
    /// started was not asked to stop, so the start must stop it itself.
    pub(super) fn missed_by_a_stop(&self) -> bool {
        self.starts
            .lock()
            .get(&self.team)
            .is_some_and(|g| g.sealed > self.begun)
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
        assert!(!first.missed_by_a_stop(), "waited for, not missed");
        drop(first);
        let closed = closing.await.unwrap();
        assert!(!starts.under_way("t"));
        assert!(starts.begin("t").is_err(), "closed until the stop ends");
        drop(closed);
        let again = starts.begin("t").unwrap();
        assert!(!again.closing());
        drop(again);
        assert!(starts.lock().is_empty(), "nothing is kept for idle teams");
    }

    #[tokio::test]
    async fn a_start_that_outlasts_the_stops_deadline_knows_it_was_missed() {
        let starts = Arc::new(Starts::default());
        let slow = starts.begin("t").unwrap();
        // A deadline already passed: the stop does not wait.
        let closed = starts.close("t", Instant::now()).await;
        assert!(starts.under_way("t"));
        assert!(
            slow.missed_by_a_stop(),
            "under way when the stop took its teammates"
        );
        drop(closed);
        // A start begun after that stop is not missed by it.
        let later = starts.begin("t").unwrap();
        assert!(!later.missed_by_a_stop());
        drop(slow);
        drop(later);
    }
}
