//! The file store's change feed: inotify (through the `notify` crate) on a
//! team's directory, its `inboxes/` and its task directory, turned into
//! [`StoreEvent`]s, so a write by any process (a `teamhost teammate`, the
//! CLI, Claude Code) is heard within milliseconds. The runner wakes
//! teammates with it; the live view redraws with it.
//!
//! | change seen | reported as |
//! |---|---|
//! | `inboxes/{agent}.json` created, written or renamed into place | `InboxAppended { agent }` |
//! | `tasks/{team}/{id}.json` | `TasksChanged` |
//! | `config.json`, or a watched directory going | `ConfigChanged` |
//!
//! Temporary files (`*.tmp.*`), lock directories, flock files and histories
//! are ignored; reads never report. A task file this store wrote for a pass
//! that told this feed's observer is not reported to it again
//! (`own_writes.rs`): the pass told it already, with what it wrote and in
//! order. Each directory is watched without
//! recursion (a recursive watch would follow every lock directory the
//! store makes and removes). Nothing is created to watch a team, so
//! watching a Claude Code team writes nothing: a directory that appears
//! later is watched once any change is heard, and what it already holds is
//! reported then (a write that came before its watch is not missed).
//!
//! Events are classified and reported on notify's own thread, as they come.
//! Adding a watch from that thread would deadlock (it waits for that
//! thread), so a directory appearing or going is handed to a helper thread,
//! which adds the watch and reports what the directory already holds. It
//! ends when the guard drops the watcher.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::own_writes::OwnWrites;
use super::paths::TeamPaths;
use crate::error::{Error, Result};
use crate::store::{StoreEvent, StoreObserver};

/// A live feed on one team's files; dropping it stops the feed.
pub(super) struct FileFeed {
    _state: Arc<Mutex<Watched>>,
}

struct Watched {
    watcher: RecommendedWatcher,
    dirs: Vec<PathBuf>,
}

/// Which of a team's files a path is.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Inbox(String),
    Task,
    Config,
}

#[derive(Clone)]
struct Dirs {
    /// The task files this store wrote, and the key of this feed's
    /// observer: what it was told of already is not echoed.
    own: Arc<OwnWrites>,
    me: usize,
    team_name: String,
    team: PathBuf,
    inboxes: PathBuf,
    tasks: PathBuf,
}

impl Dirs {
    fn all(&self) -> [&PathBuf; 3] {
        [&self.team, &self.inboxes, &self.tasks]
    }

    fn classify(&self, path: &Path) -> Option<Seen> {
        let parent = path.parent()?;
        let file = path.file_name()?.to_str()?;
        let stem = file.strip_suffix(".json")?;
        if parent == self.inboxes {
            (!stem.is_empty()).then(|| Seen::Inbox(stem.to_string()))
        } else if parent == self.tasks {
            (!stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit())).then_some(Seen::Task)
        } else if parent == self.team && file == "config.json" {
            Some(Seen::Config)
        } else {
            None
        }
    }

    /// [`Dirs::classify`], less the task files this feed's observer was
    /// told of by the pass that wrote them.
    fn heard(&self, path: &Path) -> Option<Seen> {
        match self.classify(path)? {
            Seen::Task if self.own.told(path, self.me) => None,
            seen => Some(seen),
        }
    }

    fn event(&self, seen: Seen) -> StoreEvent {
        let team = self.team_name.clone();
        match seen {
            Seen::Inbox(agent) => StoreEvent::InboxAppended { team, agent },
            Seen::Task => StoreEvent::TasksChanged {
                team,
                written: None,
            },
            Seen::Config => StoreEvent::ConfigChanged { team },
        }
    }

    /// What a directory already holds, reported when it is first watched.
    fn contents(&self, dir: &Path) -> Vec<StoreEvent> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut out: Vec<StoreEvent> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| self.heard(&e.path()))
            .map(|s| self.event(s))
            .collect();
        out.dedup();
        out
    }
}

impl FileFeed {
    /// Watches `paths`' directories that exist and starts the feed.
    pub(super) fn start(
        paths: &TeamPaths,
        observer: Arc<dyn StoreObserver>,
        own: Arc<OwnWrites>,
    ) -> Result<FileFeed> {
        let dirs = Dirs {
            own,
            me: observer.echo_key(),
            team_name: paths.name().to_string(),
            team: paths.team_dir().to_path_buf(),
            inboxes: paths.inboxes_dir(),
            tasks: paths.tasks_dir().to_path_buf(),
        };
        // Set while a wanted directory is not watched yet: then any event
        // makes the helper look for it.
        let incomplete = Arc::new(AtomicBool::new(true));
        let (look, looks) = mpsc::channel::<()>();
        let handler = {
            let (dirs, observer, incomplete) = (dirs.clone(), observer.clone(), incomplete.clone());
            move |res: notify::Result<notify::Event>| {
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
                let mut dir_changed = false;
                for path in &event.paths {
                    if let Some(seen) = dirs.heard(path) {
                        observer.changed(&dirs.event(seen));
                    } else if dirs.all().contains(&path) {
                        // A watched directory appeared or went (the team
                        // deleted).
                        dir_changed = true;
                        observer.changed(&StoreEvent::ConfigChanged {
                            team: dirs.team_name.clone(),
                        });
                    }
                }
                if dir_changed || incomplete.load(Ordering::Relaxed) {
                    let _ = look.send(());
                }
            }
        };
        let watcher = notify::recommended_watcher(handler).map_err(|e| watch_error(&dirs, e))?;
        let state = Arc::new(Mutex::new(Watched {
            watcher,
            dirs: Vec::new(),
        }));
        // The directories there now are watched before `start` returns, so
        // nothing written after it is missed.
        let added = ensure(&state, &dirs).map_err(|e| watch_error(&dirs, e))?;
        incomplete.store(added.len() < dirs.all().len(), Ordering::Relaxed);
        let weak = Arc::downgrade(&state);
        std::thread::Builder::new()
            .name(format!("watch-{}", dirs.team_name))
            .spawn(move || follow_dirs(looks, weak, dirs, observer, incomplete))
            .map_err(|e| Error::HostTask(format!("cannot start a file watch thread: {e}")))?;
        Ok(FileFeed { _state: state })
    }
}

/// The helper thread: when a directory may have appeared or gone, watches
/// what is new and reports what it already holds. Ends when the feed is
/// dropped (the watcher, and with it the sender, goes).
fn follow_dirs(
    looks: mpsc::Receiver<()>,
    state: Weak<Mutex<Watched>>,
    dirs: Dirs,
    observer: Arc<dyn StoreObserver>,
    incomplete: Arc<AtomicBool>,
) {
    while looks.recv().is_ok() {
        while looks.try_recv().is_ok() {} // one look for a burst
        let Some(state) = state.upgrade() else { return };
        match ensure(&state, &dirs) {
            Ok(added) => {
                let watched = lock(&state).dirs.len();
                incomplete.store(watched < dirs.all().len(), Ordering::Relaxed);
                drop(state);
                let mut reported: Vec<StoreEvent> =
                    added.iter().flat_map(|d| dirs.contents(d)).collect();
                reported.dedup();
                for e in &reported {
                    observer.changed(e);
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot watch a new team directory"),
        }
    }
}

/// Watches those of the team's directories that exist and are not watched
/// yet; returns the ones added.
fn ensure(state: &Mutex<Watched>, dirs: &Dirs) -> notify::Result<Vec<PathBuf>> {
    let mut w = lock(state);
    // A removed directory took its watch with it.
    w.dirs.retain(|d| d.is_dir());
    let mut added = Vec::new();
    for d in dirs.all() {
        if d.is_dir() && !w.dirs.contains(d) {
            w.watcher.watch(d, RecursiveMode::NonRecursive)?;
            w.dirs.push(d.clone());
            added.push(d.clone());
        }
    }
    Ok(added)
}

fn lock(state: &Mutex<Watched>) -> std::sync::MutexGuard<'_, Watched> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Opening, reading or closing a file without writing changes nothing.
fn is_read_only(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    }
}

fn watch_error(dirs: &Dirs, e: notify::Error) -> Error {
    Error::FileWatch(format!(
        "cannot watch the files of team {} for changes: {e}; if the inotify limits are reached, raise fs.inotify.max_user_watches / max_user_instances (sysctl), or turn file watching off (HostOptions::watch_files) and rely on the 500 ms poll",
        dirs.team_name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified_and_temporaries_ignored() {
        let d = Dirs {
            own: Arc::default(),
            me: 0,
            team_name: "t".into(),
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
        assert_eq!(c("/h/teams/t/inboxes/alice.json.drops"), None);
        assert_eq!(c("/h/teams/t/inboxes/alice.json.drops/1-2-3.json"), None);
        assert_eq!(c("/h/tasks/t/12.json"), Some(Seen::Task));
        assert_eq!(c("/h/tasks/t/.json"), None);
        assert_eq!(c("/h/tasks/t/.highwatermark"), None);
        assert_eq!(c("/h/teams/t/config.json"), Some(Seen::Config));
        assert_eq!(c("/h/teams/t/config.json.tmp.00000000"), None);
        assert_eq!(c("/h/teams/t/history/alice.jsonl"), None);
    }

    /// Records what a feed hears.
    struct Heard(Mutex<mpsc::Sender<StoreEvent>>);

    impl StoreObserver for Heard {
        fn changed(&self, event: &StoreEvent) {
            let _ = self.0.lock().unwrap().send(event.clone());
        }
    }

    /// What `rx` hears up to the append to `agent`'s inbox: inotify keeps
    /// one queue for the feed's directories, so whatever the feed reports
    /// for writes made before that append has come by then.
    fn until_mail_to(rx: &mpsc::Receiver<StoreEvent>, agent: &str) -> Vec<StoreEvent> {
        let mut heard = Vec::new();
        loop {
            match rx.recv_timeout(std::time::Duration::from_secs(30)) {
                Ok(StoreEvent::InboxAppended { agent: a, .. }) if a == agent => return heard,
                Ok(e) => heard.push(e),
                Err(e) => panic!("no mail to {agent} heard: {e}; before it: {heard:?}"),
            }
        }
    }

    fn echoes(heard: &[StoreEvent]) -> usize {
        heard
            .iter()
            .filter(|e| matches!(e, StoreEvent::TasksChanged { written: None, .. }))
            .count()
    }

    #[test]
    fn a_task_write_told_to_the_feed_s_observer_is_not_echoed_to_it_and_any_other_is() {
        use crate::store::{NewMember, NewTask, NewTeam, Store, TaskStatus, TaskUpdate};
        let tmp = tempfile::tempdir().unwrap();
        let files = Arc::new(super::super::FileStore::new(tmp.path()));
        let (tx, rx) = mpsc::channel();
        let observer: Arc<dyn StoreObserver> = Arc::new(Heard(Mutex::new(tx)));
        let mine = Store::with_backend(files.clone())
            .with_observer(observer.clone())
            .team("t")
            .unwrap();
        mine.create(NewTeam::default()).unwrap();
        let task = mine
            .create_task(NewTask {
                subject: "Write".into(),
                ..Default::default()
            })
            .unwrap();
        let _feed = mine.watch(observer).unwrap();
        // Another process, and a handle on this store with no observer.
        let other = Store::new(tmp.path()).team("t").unwrap();
        let quiet = Store::with_backend(files).team("t").unwrap();
        // The marker: another process's append to a new member's inbox.
        let marker = |n: &str| {
            other
                .add_member(NewMember {
                    name: n.into(),
                    ..Default::default()
                })
                .unwrap();
            other
                .deliver(n, crate::store::OutgoingMessage::new("team-lead", "mark"))
                .unwrap();
            until_mail_to(&rx, n)
        };
        let set = |status| TaskUpdate {
            status: Some(status),
            ..Default::default()
        };

        // Told already (stamped, in order): not echoed.
        mine.update_task(&task.id, set(TaskStatus::InProgress), "team-lead")
            .unwrap();
        mine.update_task(&task.id, set(TaskStatus::Completed), "team-lead")
            .unwrap();
        let heard = marker("a");
        assert_eq!(echoes(&heard), 0, "{heard:?}");
        let told = heard
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    StoreEvent::TasksChanged {
                        written: Some(_),
                        ..
                    }
                )
            })
            .count();
        assert_eq!(
            told, 3,
            "each write told once, by its pass (the task's creation too): {heard:?}"
        );

        // The same store through a handle this observer does not hear.
        quiet
            .update_task(&task.id, set(TaskStatus::Pending), "team-lead")
            .unwrap();
        assert!(echoes(&marker("b")) >= 1);

        // Another process's write.
        other
            .update_task(&task.id, set(TaskStatus::InProgress), "team-lead")
            .unwrap();
        assert!(echoes(&marker("c")) >= 1);
    }
}
