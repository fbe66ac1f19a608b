//! Cross-process wake-ups: the store's change feed ([`Team::watch`]) for a
//! team, split into what the runner needs, so a teammate wakes within
//! milliseconds of a write by another process (a `teamhost teammate`, the
//! CLI, Claude Code). The runner's 500 ms poll stays as the fallback for
//! stores or file systems without notifications; with the feed it is a
//! second line, spread host-wide (`RunnerConfig::fallback_polls_per_second`).
//!
//! | change heard | goes to |
//! |---|---|
//! | an inbox appended to | the observer (the host's `WakeHub`): wakes that agent's runner |
//! | tasks changed | the observer: wakes every runner of the team (auto-claim) |
//! | the config changed | a tick on [`TeamWatch::config_changes`] (external teammates' states) |
//!
//! A write by this process is heard once, from the store: the file store's
//! feed leaves out what the store told the same observer (`Split` answers
//! with the host's key, [`StoreObserver::echo_key`]): a task pass's writes,
//! an inbox append, and a take that left nothing unread. A take that left
//! entries unread is heard from the feed too, as an append: they may be
//! another process's, written just before it.

use std::sync::Arc;

use tokio::sync::watch;

use crate::error::Result;
use crate::store::backend::FeedGuard;
use crate::store::{StoreEvent, StoreObserver, Team};

/// A live watch on one team. Dropping it stops watching.
pub struct TeamWatch {
    _feed: Box<dyn FeedGuard>,
    config: watch::Receiver<u64>,
}

impl std::fmt::Debug for TeamWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamWatch").finish_non_exhaustive()
    }
}

/// Sends inbox and task changes on, config changes to the tick.
struct Split {
    observer: Arc<dyn StoreObserver>,
    config: watch::Sender<u64>,
}

impl StoreObserver for Split {
    fn changed(&self, event: &StoreEvent) {
        match event {
            StoreEvent::ConfigChanged { .. } => self.config.send_modify(|n| *n = n.wrapping_add(1)),
            other => self.observer.changed(other),
        }
    }

    fn echo_key(&self) -> usize {
        self.observer.echo_key()
    }
}

impl TeamWatch {
    /// Starts watching `team` and reports what it hears to `observer` (the
    /// host's `WakeHub`).
    pub fn start(team: &Team, observer: Arc<dyn StoreObserver>) -> Result<TeamWatch> {
        let (config, rx) = watch::channel(0u64);
        let feed = team.watch(Arc::new(Split { observer, config }))?;
        Ok(TeamWatch {
            _feed: feed,
            config: rx,
        })
    }

    /// Ticks on every change of the team's config.
    pub fn config_changes(&self) -> watch::Receiver<u64> {
        self.config.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::Home;
    use crate::store::{NewTeam, OutgoingMessage, Store};
    use std::sync::Mutex;

    struct Recorder(Mutex<Vec<StoreEvent>>, tokio::sync::Notify);
    impl StoreObserver for Recorder {
        fn changed(&self, e: &StoreEvent) {
            self.0.lock().unwrap().push(e.clone());
            self.1.notify_one();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_by_a_store_without_observer_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        // A store with no observer stands for another process.
        let store = Store::new(Home::new(tmp.path()));
        let team = store.team("w").unwrap();
        team.create(NewTeam::default()).unwrap();
        let rec = Arc::new(Recorder(Mutex::new(Vec::new()), tokio::sync::Notify::new()));
        let w = TeamWatch::start(&team, rec.clone()).unwrap();
        let mut config = w.config_changes();

        team.deliver("bob", OutgoingMessage::new("team-lead", "hi"))
            .unwrap();
        let want = StoreEvent::InboxAppended {
            team: "w".into(),
            agent: "bob".into(),
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while !rec.0.lock().unwrap().contains(&want) {
                rec.1.notified().await;
            }
        })
        .await
        .expect("the inbox write is reported");

        team.set_mode("team-lead", "default").unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), config.changed())
            .await
            .expect("the config write is reported")
            .unwrap();
    }
}
