//! Cross-process wake-ups: inotify (through the `notify` crate) on a team's
//! `inboxes/`, `tasks/` and team directory, turned into the same
//! [`StoreEvent`]s the store reports for this process's own writes, so a
//! teammate wakes within milliseconds of a write by another process (a
//! `teamhost teammate`, the CLI, Claude Code). The runner's 500 ms poll stays
//! as the fallback for file systems without notifications.
//!
//! | change seen | reported as |
//! |---|---|
//! | `inboxes/{agent}.json` created, written or renamed into place | `InboxAppended { agent }`: wakes that agent's runner |
//! | `tasks/{id}.json` | `TasksChanged`: wakes every runner of the team (auto-claim) |
//! | `config.json` | a tick on [`TeamWatch::config_changes`] (external teammates' states) |
//!
//! Temporary files (`*.tmp.*`), lock directories and flock files are ignored;
//! reads never wake anyone. A write by this process is seen twice (once from
//! the store, once from inotify): a second wake-up finds nothing and costs one
//! poll.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::store::{StoreEvent, StoreObserver, Team};

/// A live watch on one team's files. Dropping it stops watching.
pub struct TeamWatch {
    _watcher: RecommendedWatcher,
    config: watch::Receiver<u64>,
}

impl std::fmt::Debug for TeamWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamWatch").finish_non_exhaustive()
    }
}

/// Which of a team's files a path is.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Inbox(String),
    Task,
    Config,
}

struct Dirs {
    team: PathBuf,
    inboxes: PathBuf,
    tasks: PathBuf,
}

impl Dirs {
    fn classify(&self, path: &Path) -> Option<Seen> {
        let parent = path.parent()?;
        let file = path.file_name()?.to_str()?;
        let stem = file.strip_suffix(".json")?;
        if parent == self.inboxes {
            (!stem.is_empty()).then(|| Seen::Inbox(stem.to_string()))
        } else if parent == self.tasks {
            stem.bytes()
                .all(|b| b.is_ascii_digit())
                .then_some(Seen::Task)
        } else if parent == self.team && file == "config.json" {
            Some(Seen::Config)
        } else {
            None
        }
    }
}

impl TeamWatch {
    /// Starts watching `team` (creating its `inboxes/` and `tasks/` when
    /// missing) and reports what it sees to `observer` (the host's `WakeHub`).
    pub fn start(team: &Team, observer: Arc<dyn StoreObserver>) -> Result<TeamWatch> {
        let paths = team.paths();
        let dirs = Dirs {
            team: paths.team_dir().to_path_buf(),
            inboxes: paths.inboxes_dir(),
            tasks: paths.tasks_dir().to_path_buf(),
        };
        for d in [&dirs.inboxes, &dirs.tasks] {
            std::fs::create_dir_all(d).map_err(|e| Error::io("create", d, e))?;
        }
        let (tx, rx) = watch::channel(0u64);
        let name = team.name().to_string();
        let watched = [dirs.team.clone(), dirs.inboxes.clone(), dirs.tasks.clone()];
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let event = match res {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!(error = %e, "file watch error; the fallback poll still runs");
                    return;
                }
            };
            if is_read_only(&event.kind) {
                return;
            }
            for path in &event.paths {
                match dirs.classify(path) {
                    Some(Seen::Inbox(agent)) => observer.changed(&StoreEvent::InboxAppended {
                        team: name.clone(),
                        agent,
                    }),
                    Some(Seen::Task) => {
                        observer.changed(&StoreEvent::TasksChanged { team: name.clone() })
                    }
                    Some(Seen::Config) => tx.send_modify(|n| *n = n.wrapping_add(1)),
                    None => {}
                }
            }
        })
        .map_err(|e| watch_error(team, e))?;
        for d in &watched {
            watcher
                .watch(d, RecursiveMode::NonRecursive)
                .map_err(|e| watch_error(team, e))?;
        }
        Ok(TeamWatch {
            _watcher: watcher,
            config: rx,
        })
    }

    /// Ticks on every change of the team's `config.json`.
    pub fn config_changes(&self) -> watch::Receiver<u64> {
        self.config.clone()
    }
}

/// Opening, reading or closing a file without writing changes nothing.
pub(crate) fn is_read_only(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    }
}

fn watch_error(team: &Team, e: notify::Error) -> Error {
    Error::Invalid(format!(
        "cannot watch the files of team {} for changes: {e}; if the inotify limits are reached, raise fs.inotify.max_user_watches / max_user_instances (sysctl), or turn file watching off (HostOptions::watch_files) and rely on the 500 ms poll",
        team.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Home, NewTeam, OutgoingMessage, Store};
    use std::sync::Mutex;

    struct Recorder(Mutex<Vec<StoreEvent>>, tokio::sync::Notify);
    impl StoreObserver for Recorder {
        fn changed(&self, e: &StoreEvent) {
            self.0.lock().unwrap().push(e.clone());
            self.1.notify_one();
        }
    }

    #[test]
    fn paths_are_classified_and_temporaries_ignored() {
        let d = Dirs {
            team: "/h/teams/t".into(),
            inboxes: "/h/teams/t/inboxes".into(),
            tasks: "/h/tasks/t".into(),
        };
        let c = |p: &str| d.classify(Path::new(p));
        assert_eq!(
            c("/h/teams/t/inboxes/alice.json"),
            Some(Seen::Inbox("alice".into()))
        );
        assert_eq!(c("/h/teams/t/inboxes/alice.json.tmp.1a2b3c4d"), None);
        assert_eq!(c("/h/teams/t/inboxes/alice.json.lock"), None);
        assert_eq!(c("/h/teams/t/inboxes/alice.json.flock"), None);
        assert_eq!(c("/h/tasks/t/12.json"), Some(Seen::Task));
        assert_eq!(c("/h/tasks/t/.highwatermark"), None);
        assert_eq!(c("/h/teams/t/config.json"), Some(Seen::Config));
        assert_eq!(c("/h/teams/t/config.json.tmp.00000000"), None);
        assert_eq!(c("/h/teams/t/history/alice.jsonl"), None);
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
