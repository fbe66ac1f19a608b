//! Event-driven wake-ups: the store tells this hub about every write the
//! process makes (and the change feed about writes by others, `watch.rs`),
//! and the hub wakes the runner whose inbox changed, or, when the task list
//! changed, every runner that is looking for a task to claim. Nothing polls
//! for writes; the runner's fallback poll only covers a lost event.
//!
//! A runner *listens* for task changes from just before it polls until it
//! finds work ([`Registration::listening`]): a change in that window leaves a
//! permit, so none is missed, and a runner busy with a turn is not woken by
//! every claim and completion of its teammates — it polls after its turn
//! anyway. With a hundred teammates that is the difference between one poll
//! per change and a hundred.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, Notify};

use crate::store::{StoreEvent, StoreObserver};
use crate::teammate::Event;

/// Maps `(team, agent)` to the [`Notify`] its runner waits on.
pub struct WakeHub {
    waiters: Mutex<HashMap<(String, String), Registration>>,
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
}

impl WakeHub {
    /// A hub that also reports inbox writes on `events`.
    pub fn new(events: broadcast::Sender<Event>) -> Self {
        WakeHub {
            waiters: Mutex::new(HashMap::new()),
            events,
        }
    }

    /// The registration of `agent` of `team`, created on first use.
    pub fn register(&self, team: &str, agent: &str) -> Registration {
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
