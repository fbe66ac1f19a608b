//! Event-driven wake-ups: the store tells this hub about every write the
//! process makes (and the change feed about writes by others, `watch.rs`),
//! and the hub wakes the runner whose inbox was appended to, or, when the
//! task list changed, every runner that is looking for a task to claim. A
//! take (`InboxTaken`) wakes nobody: it leaves nothing new to read. Nothing polls
//! for writes; the runner's fallback poll only covers a lost event.
//!
//! A runner *listens* for task changes from just before it polls until it
//! finds work ([`Registration::listening`]): a change in that window leaves a
//! permit, so none is missed, and a runner busy with a turn is not woken by
//! every claim and completion of its teammates — it polls after its turn
//! anyway. With a hundred teammates that is the difference between one poll
//! per change and a hundred.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, Notify};

use crate::store::{StoreEvent, StoreObserver};
use crate::teammate::Event;

/// Maps `(team, agent)` to the [`Notify`] its runner waits on.
pub struct WakeHub {
    waiters: Mutex<HashMap<(String, String), Registration>>,
    /// How many runners are registered (the map's length), shared with
    /// each [`Registration`].
    runners: Arc<AtomicUsize>,
    events: broadcast::Sender<Event>,
}

/// One runner's place in the hub.
#[derive(Debug, Clone, Default)]
pub struct Registration {
    /// What the runner (and a tool call waiting for the lead's answer)
    /// waits on.
    pub wake: Arc<Notify>,
    /// Set by the runner while it looks for a task to claim: task changes
    /// wake it only then.
    pub listening: Arc<AtomicBool>,
    /// How many runners the hub holds now, across the host's teams: the
    /// runner spreads its fallback polls by it
    /// ([`crate::runner::RunnerConfig::fallback_polls_per_second`]).
    pub runners: Arc<AtomicUsize>,
}

impl WakeHub {
    /// A hub that also reports inbox writes on `events`.
    pub fn new(events: broadcast::Sender<Event>) -> Self {
        WakeHub {
            waiters: Mutex::new(HashMap::new()),
            runners: Arc::default(),
            events,
        }
    }

    /// The registration of `agent` of `team`, created on first use.
    pub fn register(&self, team: &str, agent: &str) -> Registration {
        let mut waiters = self.waiters.lock().expect("wake hub lock");
        let registration = waiters
            .entry((team.to_string(), agent.to_string()))
            .or_insert_with(|| Registration {
                runners: self.runners.clone(),
                ..Registration::default()
            })
            .clone();
        self.runners.store(waiters.len(), Ordering::Relaxed);
        registration
    }

    /// Forgets `agent` (its runner stopped).
    pub fn unregister(&self, team: &str, agent: &str) {
        let mut waiters = self.waiters.lock().expect("wake hub lock");
        waiters.remove(&(team.to_string(), agent.to_string()));
        self.runners.store(waiters.len(), Ordering::Relaxed);
    }
}

impl StoreObserver for WakeHub {
    fn changed(&self, event: &StoreEvent) {
        let waiters = self.waiters.lock().expect("wake hub lock");
        match event {
            StoreEvent::InboxAppended { team, agent } => {
                if let Some(r) = waiters.get(&(team.clone(), agent.clone())) {
                    // notify_one keeps a permit if the runner is mid-turn, so
                    // a write during a turn is never missed (and a tool call
                    // waiting for the lead's answer sees it).
                    r.wake.notify_one();
                }
                let _ = self.events.send(Event::InboxChanged {
                    team: team.clone(),
                    agent: agent.clone(),
                });
            }
            // Nothing new to read: the views hear of it, no runner wakes.
            StoreEvent::InboxTaken { team, agent } => {
                let _ = self.events.send(Event::InboxChanged {
                    team: team.clone(),
                    agent: agent.clone(),
                });
            }
            StoreEvent::TasksChanged { team, written } => {
                for ((t, _), r) in waiters.iter() {
                    if t == team && r.listening.load(Ordering::SeqCst) {
                        r.wake.notify_one();
                    }
                }
                let _ = self.events.send(Event::TasksChanged {
                    team: team.clone(),
                    written: written.clone(),
                });
            }
            StoreEvent::ConfigChanged { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_take_tells_the_views_and_wakes_no_runner_where_an_append_does() {
        let (events, mut heard) = broadcast::channel(4);
        let hub = WakeHub::new(events);
        let bob = hub.register("t", "bob");
        let (team, agent) = ("t".to_string(), "bob".to_string());
        hub.changed(&StoreEvent::InboxTaken {
            team: team.clone(),
            agent: agent.clone(),
        });
        assert!(matches!(heard.try_recv(), Ok(Event::InboxChanged { .. })));
        assert!(!woken(&bob).await, "a take woke the runner");
        hub.changed(&StoreEvent::InboxAppended { team, agent });
        assert!(matches!(heard.try_recv(), Ok(Event::InboxChanged { .. })));
        assert!(woken(&bob).await, "an append did not wake the runner");
    }

    /// Whether `r`'s wake holds a permit now (a timeout polls its future
    /// once before it looks at the clock).
    async fn woken(r: &Registration) -> bool {
        tokio::time::timeout(std::time::Duration::ZERO, r.wake.notified())
            .await
            .is_ok()
    }

    #[test]
    fn every_registration_sees_how_many_runners_the_hub_holds() {
        let (events, _) = broadcast::channel(4);
        let hub = WakeHub::new(events);
        let a = hub.register("t", "a");
        assert_eq!(a.runners.load(Ordering::Relaxed), 1);
        let b = hub.register("u", "a");
        // Registering the same runner again adds nothing.
        hub.register("t", "a");
        assert_eq!(a.runners.load(Ordering::Relaxed), 2);
        assert!(Arc::ptr_eq(&a.runners, &b.runners));
        hub.unregister("t", "a");
        hub.unregister("t", "nobody");
        assert_eq!(b.runners.load(Ordering::Relaxed), 1);
    }
}
