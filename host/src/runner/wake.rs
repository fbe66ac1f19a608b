//! Event-driven wake-ups: the store tells this hub about every write the
//! process makes, and the hub wakes the runner whose inbox (or task list)
//! changed. Nothing polls for in-process writes; writes by other processes are
//! caught by the runner's fallback poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, Notify};

use crate::store::{StoreEvent, StoreObserver};
use crate::teammate::Event;

/// Maps `(team, agent)` to the [`Notify`] its runner waits on.
pub struct WakeHub {
    waiters: Mutex<HashMap<(String, String), Arc<Notify>>>,
    events: broadcast::Sender<Event>,
}

impl WakeHub {
    /// A hub that also reports inbox writes on `events`.
    pub fn new(events: broadcast::Sender<Event>) -> Self {
        WakeHub {
            waiters: Mutex::new(HashMap::new()),
            events,
        }
    }

    /// The notify for `agent` of `team`, created on first use.
    pub fn register(&self, team: &str, agent: &str) -> Arc<Notify> {
        self.waiters
            .lock()
            .expect("wake hub lock")
            .entry((team.to_string(), agent.to_string()))
            .or_default()
            .clone()
    }

    /// Forgets `agent` (its runner stopped).
    pub fn unregister(&self, team: &str, agent: &str) {
        self.waiters
            .lock()
            .expect("wake hub lock")
            .remove(&(team.to_string(), agent.to_string()));
    }
}

impl StoreObserver for WakeHub {
    fn changed(&self, event: &StoreEvent) {
        let waiters = self.waiters.lock().expect("wake hub lock");
        match event {
            StoreEvent::InboxAppended { team, agent } => {
                if let Some(n) = waiters.get(&(team.clone(), agent.clone())) {
                    // notify_one keeps a permit if the runner is mid-turn, so
                    // a write during a turn is never missed.
                    n.notify_one();
                }
                let _ = self.events.send(Event::InboxChanged {
                    team: team.clone(),
                    agent: agent.clone(),
                });
            }
            StoreEvent::TasksChanged { team } => {
                for ((t, _), n) in waiters.iter() {
                    if t == team {
                        n.notify_one();
                    }
                }
                let _ = self.events.send(Event::TasksChanged { team: team.clone() });
            }
            StoreEvent::ConfigChanged { .. } => {}
        }
    }
}
