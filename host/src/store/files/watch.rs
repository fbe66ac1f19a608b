//! The file store's change feed: inotify on a team's directory, its
//! `inboxes/` and its task directory, turned into
//! [`StoreEvent`]s, so a write by any process (a `teamhost teammate`, the
//! CLI, Claude Code) is heard within milliseconds. The runner wakes
//! teammates with it; the live view redraws with it.
//!
//! | change seen | reported as |
//! |---|---|
//! | `inboxes/{agent}.json` written (at its close) or renamed into place | `InboxAppended { agent }` |
//! | `tasks/{team}/{id}.json` | `TasksChanged` |
//! | `config.json`, or a watched directory going | `ConfigChanged` |
//!
//! Temporary files (`*.tmp.*`), lock directories, flock files and histories
//! are ignored; reads never report: the watches ask for writes, creations,
//! removals and renames only (`WANTED`; `inboxes/` for renames into place
//! and closes after writing only, `INBOXES_WANTED`), not for opens and
//! closes after reading, which every reader of the team's files makes many of (at
//! 10,000 teammates, a crowd's reads woke this feed's thread tens of
//! thousands of times for nothing). A task file this store wrote for a pass
//! that told this feed's observer is not reported to it again
//! (`own_writes.rs`): the pass told it already, with what it wrote and in
//! order. Nor is an inbox write this store announced to that observer (an
//! append, a take that left nothing unread): it would wake the same reader
//! a second time to find nothing. Each directory is watched without
//! recursion (a recursive watch would follow every lock directory the
//! store makes and removes). Nothing is created to watch a team, so
//! watching a Claude Code team writes nothing: a directory that appears
//! later is watched once any change is heard, and what it already holds is
//! reported then (a write that came before its watch is not missed).
//!
//! One thread per feed reads the events and reports them as they come; it
//! also adds the watches of directories that appear. When the kernel's
//! queue overflows (events were dropped), everything the directories hold
//! is reported again, so no runner sleeps through a write it was not told
//! of. The thread ends when the feed is dropped.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::inotify::{Inotify, GONE, OVERFLOW};
use super::own_writes::OwnWrites;
use super::paths::TeamPaths;
use crate::error::{Error, Result};
use crate::store::{StoreEvent, StoreObserver};

/// What each directory is watched for: a file written and closed, created,
/// removed or renamed in or out; the directory itself removed or moved.
const WANTED: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// What `inboxes/` is watched for: an inbox renamed into place (how
/// teamhost and Claude Code write one) or closed after a write in place;
/// the directory itself removed or moved. Not creations, changes,
/// removals or renames out: every locked write makes and removes a lock
/// directory, rewrites its flock file's record and makes, fills and
/// renames away a temporary file there, five events the feed ignores
/// (`classify`) and no longer asks for, each of which woke its thread (at
/// 10,000 teammates the thread took an eighth of the host's context
/// switches). The flock file's close is still heard, and ignored.
const INBOXES_WANTED: u32 = libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// A live feed on one team's files; dropping it stops the feed.
pub(super) struct FileFeed {
    /// The write end of the pipe the feed's thread also waits on: closed
    /// when the feed is dropped, which ends the thread.
    _stop: OwnedFd,
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
            Seen::Task | Seen::Inbox(_) if self.own.told(path, self.me) => None,
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

    fn config_changed(&self) -> StoreEvent {
        StoreEvent::ConfigChanged {
            team: self.team_name.clone(),
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

/// The team's directories watched now, by watch descriptor.
struct Watches {
    inotify: Inotify,
    by_wd: Vec<(i32, PathBuf)>,
}

impl Watches {
    fn dir(&self, wd: i32) -> Option<&PathBuf> {
        self.by_wd.iter().find(|(w, _)| *w == wd).map(|(_, d)| d)
    }

    /// Watches those of the team's directories that exist and are not
    /// watched yet; returns the ones added.
    fn ensure(&mut self, dirs: &Dirs) -> std::io::Result<Vec<PathBuf>> {
        // A removed directory took its watch with it (its `IN_IGNORED` may
        // still be queued).
        self.by_wd.retain(|(_, d)| d.is_dir());
        let mut added = Vec::new();
        for d in dirs.all() {
            if d.is_dir() && !self.by_wd.iter().any(|(_, w)| w == d) {
                let mask = if *d == dirs.inboxes {
                    INBOXES_WANTED
                } else {
                    WANTED
                };
                match self.inotify.add(d, mask) {
                    Ok(wd) => {
                        self.by_wd.push((wd, d.clone()));
                        added.push(d.clone());
                    }
                    // Gone between the look and the watch: looked for
                    // again at the next event.
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(added)
    }

    fn complete(&self, dirs: &Dirs) -> bool {
        self.by_wd.len() >= dirs.all().len()
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
        let mut watches = Watches {
            inotify: Inotify::new().map_err(|e| watch_error(&dirs, e))?,
            by_wd: Vec::new(),
        };
        // The directories there now are watched before `start` returns, so
        // nothing written after it is missed.
        watches.ensure(&dirs).map_err(|e| watch_error(&dirs, e))?;
        let (stop_read, stop_write) = pipe().map_err(|e| watch_error(&dirs, e))?;
        std::thread::Builder::new()
            .name(format!("watch-{}", dirs.team_name))
            .spawn(move || follow(watches, stop_read, dirs, observer))
            .map_err(|e| Error::HostTask(format!("cannot start a file watch thread: {e}")))?;
        Ok(FileFeed { _stop: stop_write })
    }
}

/// The feed's thread: reports each batch of events as it comes, watches
/// directories that appeared, and ends when `stop` closes.
fn follow(mut watches: Watches, stop: OwnedFd, dirs: Dirs, observer: Arc<dyn StoreObserver>) {
    while watches.inotify.wait_unless(stop.as_fd()) {
        let mut look = !watches.complete(&dirs);
        let mut overflowed = false;
        let mut ignored = Vec::new();
        // A file renamed into place and closed after it, both in one read,
        // is reported (and its identity looked at) once.
        watches.inotify.drain_folding_closes(|wd, mask, name| {
            if mask & OVERFLOW != 0 {
                overflowed = true;
                return;
            }
            let Some(dir) = watches.dir(wd) else { return };
            if name.is_empty() {
                if mask & GONE != 0 {
                    if mask & libc::IN_IGNORED != 0 {
                        ignored.push(wd);
                    }
                    look = true;
                    observer.changed(&dirs.config_changed());
                }
                return;
            }
            let path = dir.join(std::ffi::OsStr::from_bytes(name));
            if let Some(seen) = dirs.heard(&path) {
                observer.changed(&dirs.event(seen));
            } else if dirs.all().contains(&&path) {
                // A watched directory appeared or went (the team deleted).
                look = true;
                observer.changed(&dirs.config_changed());
            }
        });
        watches.by_wd.retain(|(wd, _)| !ignored.contains(wd));
        let mut reported = Vec::new();
        if overflowed {
            // Events were dropped: whatever they were, everything there is
            // is reported once more.
            tracing::warn!(team = %dirs.team_name, "the file watch's queue overflowed; reporting every file of the team again");
            reported.push(dirs.config_changed());
            for (_, d) in &watches.by_wd {
                reported.extend(dirs.contents(d));
            }
            look = true;
        }
        if look {
            match watches.ensure(&dirs) {
                Ok(added) => {
                    if !overflowed {
                        reported.extend(added.iter().flat_map(|d| dirs.contents(d)));
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot watch a new team directory"),
            }
        }
        reported.dedup();
        for e in &reported {
            observer.changed(e);
        }
    }
}

/// A pipe whose write end, dropped, wakes and ends the reader.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors, owned at once.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

fn watch_error(dirs: &Dirs, e: std::io::Error) -> Error {
    Error::FileWatch(format!(
        "cannot watch the files of team {} for changes: {e}; if the inotify limits are reached, raise fs.inotify.max_user_watches / max_user_instances (sysctl), or turn file watching off (HostOptions::watch_files) and rely on the 500 ms poll",
        dirs.team_name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Mutex};

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

    /// A team whose feed reports to the observer of `mine`'s store: `other`
    /// stands for another process, `quiet` for a handle on the same store
    /// that tells nobody.
    struct Watched {
        _tmp: tempfile::TempDir,
        _feed: Box<dyn crate::store::backend::FeedGuard>,
        rx: mpsc::Receiver<StoreEvent>,
        mine: crate::store::Team,
        other: crate::store::Team,
        quiet: crate::store::Team,
    }

    impl Watched {
        /// The team made, `before` run on it, then the feed started.
        fn new<T>(before: impl FnOnce(&crate::store::Team) -> T) -> (Watched, T) {
            use crate::store::{NewTeam, Store};
            let tmp = tempfile::tempdir().unwrap();
            let files = Arc::new(super::super::FileStore::new(tmp.path()));
            let (tx, rx) = mpsc::channel();
            let observer: Arc<dyn StoreObserver> = Arc::new(Heard(Mutex::new(tx)));
            let mine = Store::with_backend(files.clone())
                .with_observer(observer.clone())
                .team("t")
                .unwrap();
            mine.create(NewTeam::default()).unwrap();
            let made = before(&mine);
            let feed = mine.watch(observer).unwrap();
            let other = Store::new(tmp.path()).team("t").unwrap();
            let quiet = Store::with_backend(files).team("t").unwrap();
            let watched = Watched {
                _tmp: tmp,
                _feed: feed,
                rx,
                mine,
                other,
                quiet,
            };
            (watched, made)
        }

        /// What the feed hears up to another process's append to a new
        /// member `n`'s inbox (the marker).
        fn marker(&self, n: &str) -> Vec<StoreEvent> {
            self.other
                .add_member(crate::store::NewMember {
                    name: n.into(),
                    ..Default::default()
                })
                .unwrap();
            self.other
                .deliver(n, crate::store::OutgoingMessage::new("team-lead", "mark"))
                .unwrap();
            until_mail_to(&self.rx, n)
        }
    }

    #[test]
    fn an_inbox_renamed_or_written_in_place_is_heard_and_a_lock_s_files_are_not() {
        let (w, ()) = Watched::new(|_| ());
        // Mail to bob heard before a marker (the markers' own registrations
        // and mail, heard again, are not bob's).
        let mail = |heard: Vec<StoreEvent>| -> Vec<StoreEvent> {
            heard
                .into_iter()
                .filter(|e| matches!(e, StoreEvent::InboxAppended { agent, .. } if agent == "bob"))
                .collect()
        };
        w.marker("m1");
        let inboxes = w._tmp.path().join("teams/t/inboxes");
        // A locked write's own files, made and removed: nothing is heard.
        let (lock, flock) = (
            inboxes.join("bob.json.lock"),
            inboxes.join("bob.json.flock"),
        );
        let tmp = inboxes.join("bob.json.tmp.0badcafe");
        std::fs::create_dir(&lock).unwrap();
        std::fs::write(&flock, "record").unwrap();
        std::fs::write(&tmp, "[]").unwrap();
        std::fs::remove_file(&tmp).unwrap();
        std::fs::remove_dir(&lock).unwrap();
        assert_eq!(mail(w.marker("m2")), vec![]);
        // Written in place (made, then rewritten): heard each time, at the
        // close.
        for _ in 0..2 {
            std::fs::write(inboxes.join("bob.json"), "[]").unwrap();
            until_mail_to(&w.rx, "bob");
        }
        // Renamed into place, as teamhost and Claude Code write: heard.
        let staged = inboxes.join("carol.json.tmp.01234567");
        std::fs::write(&staged, "[]").unwrap();
        std::fs::rename(&staged, inboxes.join("carol.json")).unwrap();
        until_mail_to(&w.rx, "carol");
    }

    #[test]
    fn a_task_write_told_to_the_feed_s_observer_is_not_echoed_to_it_and_any_other_is() {
        use crate::store::{NewTask, TaskStatus, TaskUpdate};
        let (w, task) = Watched::new(|mine| {
            mine.create_task(NewTask {
                subject: "Write".into(),
                ..Default::default()
            })
            .unwrap()
        });
        let (mine, other, quiet) = (&w.mine, &w.other, &w.quiet);
        let marker = |n: &str| w.marker(n);
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

    #[test]
    fn an_inbox_write_told_to_the_feed_s_observer_is_not_echoed_to_it_unless_it_left_mail() {
        use crate::store::{NewMember, OutgoingMessage};
        let (w, ()) = Watched::new(|mine| {
            mine.add_member(NewMember {
                name: "bob".into(),
                ..Default::default()
            })
            .unwrap();
        });
        let (mine, other, quiet) = (&w.mine, &w.other, &w.quiet);
        let marker = |n: &str| w.marker(n);
        let count = |heard: &[StoreEvent], taken: bool| {
            heard
                .iter()
                .filter(|e| match e {
                    StoreEvent::InboxAppended { agent, .. } => !taken && agent == "bob",
                    StoreEvent::InboxTaken { agent, .. } => taken && agent == "bob",
                    _ => false,
                })
                .count()
        };
        let say = |text: &str| OutgoingMessage::new("team-lead", text);

        // An append and a take that emptied the inbox, each told once by
        // the store and not again by the feed.
        mine.deliver("bob", say("one")).unwrap();
        assert_eq!(mine.take_unread("bob").unwrap().len(), 1);
        let heard = marker("a");
        assert_eq!(count(&heard, false), 1, "the append, told once: {heard:?}");
        assert_eq!(count(&heard, true), 1, "the take, told once: {heard:?}");

        // The same store through a handle that tells nobody: heard.
        quiet.deliver("bob", say("two")).unwrap();
        assert!(count(&marker("b"), false) >= 1);

        // A take that leaves mail unread ("two" stays): heard again, so a
        // reader is woken for whatever it left, whoever wrote that.
        mine.deliver("bob", say("three")).unwrap();
        assert_eq!(count(&marker("c"), false), 1, "the append, not echoed");
        let taken = mine.take_where("bob", |m| m.text == "three").unwrap();
        assert_eq!(taken.len(), 1);
        let heard = marker("d");
        assert_eq!(count(&heard, true), 1, "{heard:?}");
        assert!(
            count(&heard, false) >= 1,
            "the rewrite is echoed: {heard:?}"
        );

        // Another process's write: heard.
        other.deliver("bob", say("four")).unwrap();
        assert!(count(&marker("e"), false) >= 1);

        // A broadcast's group commit (bob and the markers' inboxes): each
        // inbox told once, by the store. (A marker's own write may be heard
        // more than once: "y" takes what is left of e's.)
        marker("y");
        mine.broadcast(say("all")).unwrap();
        let heard = marker("z");
        assert_eq!(count(&heard, false), 1, "{heard:?}");
        for m in ["a", "b", "c", "d", "e"] {
            let told = heard
                .iter()
                .filter(|e| matches!(e, StoreEvent::InboxAppended { agent, .. } if agent == m))
                .count();
            assert_eq!(told, 1, "{m}: {heard:?}");
        }
    }

    /// Blocks the feed's thread in its first report until told to go on.
    struct Held {
        first: Mutex<Option<mpsc::Receiver<()>>>,
        heard: Mutex<mpsc::Sender<StoreEvent>>,
    }

    impl StoreObserver for Held {
        fn changed(&self, event: &StoreEvent) {
            if let Some(go) = self.first.lock().unwrap().take() {
                let _ = go.recv();
            }
            let _ = self.heard.lock().unwrap().send(event.clone());
        }
    }

    #[test]
    fn a_write_whose_event_the_kernel_dropped_is_reported_after_the_overflow() {
        use crate::store::{NewMember, NewTeam, OutgoingMessage, Store};
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path());
        let team = store.team("t").unwrap();
        team.create(NewTeam::default()).unwrap();
        for n in ["early", "late"] {
            team.add_member(NewMember {
                name: n.into(),
                ..Default::default()
            })
            .unwrap();
        }
        let (go, wait) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        let observer: Arc<dyn StoreObserver> = Arc::new(Held {
            first: Mutex::new(Some(wait)),
            heard: Mutex::new(tx),
        });
        let _feed = team.watch(observer).unwrap();
        // The thread takes this event and blocks in its report: what comes
        // next queues in the kernel.
        team.deliver("early", OutgoingMessage::new("team-lead", "one"))
            .unwrap();
        // Fill the queue past its limit with renames of a file nobody
        // reads (two events each), then write the inbox whose event is
        // dropped.
        let limit: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(16_384);
        assert!(
            limit <= 4_000_000,
            "a queue of {limit} events is too long to fill here"
        );
        let inboxes = tmp.path().join("teams/t/inboxes");
        let (a, b) = (inboxes.join("x.tmp.a"), inboxes.join("x.tmp.b"));
        std::fs::write(&a, b"").unwrap();
        for i in 0..limit / 2 + 64 {
            let (from, to) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
            std::fs::rename(from, to).unwrap();
        }
        team.deliver("late", OutgoingMessage::new("team-lead", "two"))
            .unwrap();
        go.send(()).unwrap();
        let mut heard = Vec::new();
        loop {
            match rx.recv_timeout(std::time::Duration::from_secs(30)) {
                Ok(StoreEvent::InboxAppended { agent, .. }) if agent == "late" => break,
                Ok(e) => heard.push(e),
                Err(e) => panic!(
                    "the inbox written after the overflow was never reported: {e}; heard {heard:?}"
                ),
            }
        }
    }
}
