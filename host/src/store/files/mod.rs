//! [`FileStore`]: team state as the reference CLI keeps it, JSON files under
//! a home directory, and the default backend. A Claude Code lead and
//! teamhost teammates share a team through these files.
//!
//! Every read-modify-write of a shared file runs under [`lock::with_lock`]
//! (flock plus the reference's mkdir lock); every write is an atomic replace
//! by a new file ([`crate::durable`]), so a reader without the lock (Claude Code)
//! never sees a file change under it; a file that does not parse is never
//! written over. No other
//! module builds a team file path: they ask the store.
//!
//! | file | owns |
//! |---|---|
//! | `paths.rs` | [`TeamPaths`]: the layout of a team's files |
//! | `lock.rs` | the cross-process lock (flock + the reference's mkdir lock); it never makes a directory |
//! | `deleted.rs` | a write never brings a deleted team back: one level of `mkdir` at most, [`Error::TeamDeleted`] when the team's directory is gone |
//! | `history.rs` | `history/{agent}.jsonl`: appending, reading from an offset |
//! | `tasks.rs` | one locked pass over `tasks/{team}/` ([`TaskTxn`]) |
//! | `task_cache.rs` | the task files as last read, kept current by inotify: a listing reads only what changed |
//! | `inotify.rs` | a small inotify wrapper for synchronous callers (the task cache, the lock) |
//! | `config_cache.rs` | configs as last read or written: an unchanged file is not parsed again |
//! | `config_text.rs` | a config's text as serde_json writes it, each unchanged member's part kept from the last write |
//! | `stamp.rs` | file identity (inode, size, times) for the caches, and when it can be trusted |
//! | `combine.rs` | group commit: concurrent config changes and inbox appends share one locked write |
//! | `fanout.rs` | a broadcast's group commit: many inboxes written under their locks with their syncs shared |
//! | `drops.rs` | the drop box: appends from other processes, left while the lock is held, join the holder's write |
//! | `watch.rs` | the change feed: inotify on a team's files |
//! | `inbox.rs` | an inbox's append (with the appends of other threads and the drops of other processes) and take |
//! | `own_writes.rs` | the task and inbox files this store wrote for an observer that hears of them anyway, by identity: the feed drops their echoes |

mod combine;
mod config_cache;
mod config_text;
mod deleted;
mod drops;
mod fanout;
mod history;
mod inbox;
mod inotify;
pub mod lock;
mod own_writes;
pub mod paths;
mod stamp;
mod task_cache;
mod tasks;
mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use self::lock::with_lock;
pub use self::lock::LockOptions;
pub use self::paths::TeamPaths;
use super::backend::{
    ConfigChange, FeedGuard, HistoryChunk, HistoryCursor, Pick, TasksChange, TeamStore,
};
use super::mailbox::consumed_now;
use super::{InboxMessage, ModelUsage, StoreObserver, Task, TeamConfig};
use crate::durable::{read_array, read_json, write_json};
use crate::error::{Error, Result};
use crate::protocol::time::now_ms;

/// The reference-compatible file backend over one directory (the host's
/// home, for `teamhost`).
#[derive(Debug, Clone)]
pub struct FileStore {
    root: PathBuf,
    lock: LockOptions,
    /// The task files as last read, per team (`task_cache.rs`).
    tasks: Arc<task_cache::TaskCaches>,
    /// Configs as last read or written (`config_cache.rs`).
    config_cache: Arc<config_cache::ConfigCache>,
    /// The members' texts of the configs last written (`config_text.rs`).
    config_text: Arc<config_text::ConfigText>,
    /// Group commit of config changes and inbox appends (`combine.rs`).
    configs: Arc<combine::Combiners<TeamConfig>>,
    inboxes: Arc<combine::Combiners<Vec<InboxMessage>>>,
    /// A team whose task list lives under another name: `(team, list)`,
    /// both sanitised ([`FileStore::with_task_list`]).
    task_list: Option<(String, String)>,
    /// The task files this store wrote, whose echoes its feeds drop
    /// (`own_writes.rs`).
    own: Arc<own_writes::OwnWrites>,
}

impl FileStore {
    /// A file store under `root` (the home: `teams/` and `tasks/` are
    /// made below it) with default lock options.
    pub fn new(root: impl AsRef<std::path::Path>) -> FileStore {
        FileStore {
            root: root.as_ref().to_path_buf(),
            lock: LockOptions::default(),
            tasks: Arc::default(),
            config_cache: Arc::default(),
            config_text: Arc::default(),
            configs: Arc::default(),
            inboxes: Arc::default(),
            task_list: None,
            own: Arc::default(),
        }
    }

    /// Team `team`'s tasks are in `tasks/{list}/` instead of
    /// `tasks/{team}/`: what a Claude Code 2.1.332 lead says with
    /// `CLAUDE_CODE_TASK_LIST_ID` when its list id differs from the team's
    /// (after a `/clear`). Fails on a name that cannot be a directory.
    pub fn with_task_list(mut self, team: &str, list: &str) -> Result<FileStore> {
        let team = crate::store::names::sanitize_team_name(team)?;
        let list = crate::store::names::sanitize_team_name(list)?;
        self.task_list = Some((team, list));
        Ok(self)
    }

    /// Replaces the lock options (wait bound, staleness).
    pub fn with_lock_options(mut self, lock: LockOptions) -> FileStore {
        self.lock = lock;
        self
    }

    /// The directory the teams live under (the home).
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Every path of `team` (a sanitised name). Public so tests and tools
    /// that deal with the files themselves (corrupting one on purpose,
    /// checking the reference's format) can find them.
    pub fn paths(&self, team: &str) -> Result<TeamPaths> {
        let paths = TeamPaths::new(&self.root, team)?;
        Ok(match &self.task_list {
            Some((t, list)) if *t == paths.name() => paths.with_task_list(&self.root, list),
            _ => paths,
        })
    }
}

/// Removes `dir` and everything in it. A file made inside it while it is
/// being removed (a teammate's last inbox write or lock racing a team's
/// deletion) makes `remove_dir_all` fail with "directory not empty": the
/// removal is tried again, a few times, before that is an error.
fn remove_dir_all_if_there(dir: &std::path::Path) -> Result<()> {
    const ATTEMPTS: u32 = 5;
    for attempt in 1..=ATTEMPTS {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty && attempt < ATTEMPTS => {
                continue
            }
            Err(e) => return Err(Error::io("remove", dir, e)),
        }
    }
    unreachable!("the last attempt returns")
}

/// File stems of `dir`'s files ending in `.{ext}` (none when `dir` is absent).
fn stems(dir: &std::path::Path, ext: &str) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", dir, e)),
    };
    Ok(entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == ext))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect())
}

impl TeamStore for FileStore {
    fn config_location(&self, team: &str) -> PathBuf {
        self.paths(team)
            .map(|p| p.config())
            .unwrap_or_else(|_| paths::teams_dir(&self.root).join(team).join("config.json"))
    }

    fn list_teams(&self) -> Result<Vec<String>> {
        let dir = paths::teams_dir(&self.root);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("read", dir, e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("config.json").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }

    fn read_config(&self, team: &str) -> Result<Option<TeamConfig>> {
        self.config_cache.read(&self.paths(team)?.config())
    }

    fn create_team(&self, team: &str, config: &TeamConfig) -> Result<()> {
        let paths = self.paths(team)?;
        let path = paths.config();
        // The one write that makes the team's directory.
        std::fs::create_dir_all(paths.team_dir())
            .map_err(|e| Error::io("create", paths.team_dir(), e))?;
        with_lock(&path, &self.lock, "creating the team", || {
            if path.exists() {
                return Err(Error::TeamExists {
                    team: team.to_string(),
                    path: path.clone(),
                });
            }
            write_json(&path, config)
        })?;
        for dir in [paths.inboxes_dir(), paths.tasks_dir().to_path_buf()] {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
        }
        Ok(())
    }

    fn update_config(&self, team: &str, change: ConfigChange<'_>) -> Result<()> {
        let paths = self.paths(team)?;
        let path = paths.config();
        // With the changes other threads make at the same time: one load,
        // one synced write for all of them (`combine.rs`).
        self.configs
            .update(&path, combine::Changes::Checked, change, |batch| {
                with_lock(&path, &self.lock, "a config update", || {
                    let Some(config) = self.config_cache.read_for_update(&path)? else {
                        return Err(Error::TeamNotFound {
                            team: team.to_string(),
                            path: path.clone(),
                        });
                    };
                    let (config, changed) = batch(config)?;
                    if changed {
                        let text = self.config_text.of(&config).map_err(|e| {
                            Error::Encode(format!("cannot serialise {}: {e}", path.display()))
                        })?;
                        // Known to this process's readers from the
                        // rename on, not from the record after it.
                        let config = Arc::new(config);
                        let written =
                            crate::durable::write_atomic_staged(&path, &text, &mut |new| {
                                self.config_cache.staged(&path, new, config.clone())
                            })
                            .and_then(|()| crate::durable::remove_stale_swap(&path));
                        if let Err(e) = written {
                            self.config_cache.unstage(&path);
                            return Err(e);
                        }
                        self.config_cache.wrote(&path, config);
                    }
                    Ok(())
                })
                // No directory, no lock: the team is gone (or never was),
                // and stays so.
                .map_err(|e| match paths.team_dir().exists() {
                    true => e,
                    false => Error::TeamNotFound {
                        team: team.to_string(),
                        path: path.clone(),
                    },
                })
            })
    }

    fn delete_team(&self, team: &str) -> Result<()> {
        let paths = self.paths(team)?;
        remove_dir_all_if_there(paths.team_dir())?;
        remove_dir_all_if_there(paths.tasks_dir())?;
        self.tasks.forget(paths.tasks_dir());
        self.config_cache.forget(&paths.config());
        Ok(())
    }

    fn append_inbox(&self, team: &str, agent: &str, entries: &[InboxMessage]) -> Result<()> {
        self.append_to_inbox(team, agent, entries, None)
    }

    fn append_inbox_announced(
        &self,
        team: &str,
        agent: &str,
        entries: &[InboxMessage],
        observer: usize,
    ) -> Result<()> {
        self.append_to_inbox(team, agent, entries, Some(observer))
    }

    fn append_inboxes(&self, team: &str, batch: &[(String, Vec<InboxMessage>)]) -> Result<()> {
        self.append_to_inboxes(team, batch, None)
    }

    fn append_inboxes_announced(
        &self,
        team: &str,
        batch: &[(String, Vec<InboxMessage>)],
        observer: usize,
    ) -> Result<()> {
        self.append_to_inboxes(team, batch, Some(observer))
    }

    fn read_inbox(&self, team: &str, agent: &str) -> Result<Vec<InboxMessage>> {
        read_array(&self.paths(team)?.inbox(agent)?)
    }

    fn take_from_inbox(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
    ) -> Result<Vec<InboxMessage>> {
        self.take_from(team, agent, pick, None)
    }

    fn take_from_inbox_announced(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
        observer: usize,
    ) -> Result<Vec<InboxMessage>> {
        self.take_from(team, agent, pick, Some(observer))
    }

    fn record_in_history(&self, team: &str, agent: &str, entry: &InboxMessage) -> Result<()> {
        let paths = self.paths(team)?;
        let history = paths.history(agent)?;
        // No lock and no sync: one O_APPEND write never interleaves with a
        // take's, and the record was never in an inbox, so a machine crash
        // can lose no message with it (docs/ARCHITECTURE.md, durability).
        history::append_relaxed(&history, &consumed_now(std::slice::from_ref(entry)))
            .map_err(|e| deleted::or_deleted(&paths, e))
    }

    fn history_since(
        &self,
        team: &str,
        agent: &str,
        cursor: HistoryCursor,
    ) -> Result<HistoryChunk> {
        history::read_since(&self.paths(team)?.history(agent)?, cursor)
    }

    fn agents_with_mail(&self, team: &str) -> Result<Vec<String>> {
        let paths = self.paths(team)?;
        let mut all = stems(&paths.history_dir(), "jsonl")?;
        all.extend(stems(&paths.inboxes_dir(), "json")?);
        all.sort();
        all.dedup();
        Ok(all)
    }

    fn read_task(&self, team: &str, id: &str) -> Result<Option<Task>> {
        read_json(&self.paths(team)?.task(id)?)
    }

    fn list_tasks(&self, team: &str) -> Result<Vec<Task>> {
        tasks::list(&self.paths(team)?, &self.tasks)
    }

    fn find_claimable(&self, team: &str) -> Result<Option<Task>> {
        // Straight from the cache, copying only the answer.
        self.tasks.with(self.paths(team)?.tasks_dir(), |tasks| {
            let all: Vec<&Task> = tasks.collect();
            crate::store::tasks::claimable_among(&all).cloned()
        })
    }

    fn update_tasks(&self, team: &str, change: TasksChange<'_>) -> Result<()> {
        tasks::update(
            &self.paths(team)?,
            &self.lock,
            &self.tasks,
            &self.own,
            change,
        )
    }

    fn write_usage(&self, team: &str, agent: &str, usage: &ModelUsage) -> Result<()> {
        let paths = self.paths(team)?;
        let path = paths.usage(agent)?;
        // Only inside a team that still exists: a write racing the team's
        // deletion must not bring its directory back.
        deleted::subdir(&paths, &paths.usage_dir())?;
        // Rewritten up to ten times a second per calling teammate, and read
        // only by teamhost (checking reads): in place over its spare,
        // `{name}.json.spare`, which no listing of `*.json` sees.
        crate::durable::rewrite_json_relaxed(&path, usage)
            .map_err(|e| deleted::or_deleted(&paths, e))
    }

    fn read_usage(&self, team: &str) -> Result<BTreeMap<String, ModelUsage>> {
        let dir = self.paths(team)?.usage_dir();
        let mut out = BTreeMap::new();
        for stem in stems(&dir, "json")? {
            match read_json::<ModelUsage>(&dir.join(format!("{stem}.json"))) {
                Ok(Some(u)) => {
                    out.insert(stem, u);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "skipping an unreadable model usage record"),
            }
        }
        Ok(out)
    }

    fn write_plan(&self, team: &str, agent: &str, plan: &str) -> Result<String> {
        let stem = super::names::agent_file_stem(agent)?;
        let paths = self.paths(team)?;
        deleted::subdir(&paths, &paths.plans_dir())?;
        let file = paths.plans_dir().join(format!("{stem}-{}.md", now_ms()));
        crate::durable::write_atomic(&file, plan.as_bytes())?;
        Ok(file.display().to_string())
    }

    fn watch(&self, team: &str, observer: Arc<dyn StoreObserver>) -> Result<Box<dyn FeedGuard>> {
        Ok(Box::new(watch::FileFeed::start(
            &self.paths(team)?,
            observer,
            self.own.clone(),
        )?))
    }
}

#[cfg(test)]
mod task_list_tests {
    use super::FileStore;
    use crate::store::{NewTask, NewTeam, Store};

    /// `CLAUDE_CODE_TASK_LIST_ID`: the team's tasks under the list's name.
    #[test]
    fn a_task_list_of_another_name_holds_the_team_s_tasks() {
        let tmp = tempfile::tempdir().unwrap();
        let files = FileStore::new(tmp.path())
            .with_task_list("session-1", "session-2")
            .unwrap();
        let team = Store::with_backend(std::sync::Arc::new(files))
            .team("session-1")
            .unwrap();
        team.create(NewTeam::default()).unwrap();
        team.create_task(NewTask {
            subject: "s".into(),
            ..Default::default()
        })
        .unwrap();
        assert!(tmp.path().join("tasks/session-2/1.json").is_file());
        assert!(!tmp.path().join("tasks/session-1/1.json").exists());
        // Another team keeps its own list.
        let other = FileStore::new(tmp.path()).paths("other").unwrap();
        assert_eq!(other.tasks_dir(), tmp.path().join("tasks/other"));
        let err = FileStore::new(tmp.path())
            .with_task_list("session-1", "../x")
            .unwrap_err();
        assert!(!err.to_string().is_empty());
    }
}
