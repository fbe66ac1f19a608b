//! The seam in front of team state: [`TeamStore`], what a backend must do,
//! and [`TaskTxn`], one locked pass over a team's task list.
//!
//! Backends keep documents — the team config, inboxes, consumed-message
//! histories, tasks, usage records, plans — and make each read-modify-write
//! atomic. The rules (member names and colours, who may claim what, task
//! dependencies, which messages a take consumes) live above, in
//! [`Team`](super::Team), and are the same whatever the backend.
//!
//! **Synchronous, called off the executor.** Every method blocks until its
//! change is durable. Async callers (the runner, the WIT glue, the host) run
//! store calls through `tokio::task::spawn_blocking`, never on an executor
//! thread. The file backend is blocking by nature (flock, mkdir locks that
//! may wait seconds for Claude Code, fsync); a network backend implements the
//! same trait by blocking its blocking-pool thread on its client (for
//! example `Handle::block_on` inside `spawn_blocking`), which never stalls
//! the executor either. A sync trait keeps the CLI, the live view, the
//! store's tests and `dyn TeamStore` simple; see docs/ARCHITECTURE.md.
//!
//! **Update closures may run more than once.** A backend with compare-and-
//! swap (a key-value store) runs an update closure on a fresh copy of the
//! state, tries to commit and, when someone else committed first, runs it
//! again. So a closure changes state only through its argument, and any
//! value it hands out through a captured variable is overwritten, not
//! accumulated, on each run. The file backend runs each closure once, under
//! the file's lock.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use super::mailbox::{HistoryChunk, HistoryCursor};
use super::{InboxMessage, ModelUsage, StoreObserver, Task, TeamConfig};
use crate::error::Result;

/// A config change: edits the config in place or fails (nothing written).
pub type ConfigChange<'a> = &'a mut dyn FnMut(&mut TeamConfig) -> Result<()>;

/// A pass over the task list; see [`TaskTxn`].
pub type TasksChange<'a> = &'a mut dyn FnMut(&mut dyn TaskTxn) -> Result<()>;

/// Selects which unread inbox entries a take consumes.
pub type Pick<'a> = &'a mut dyn FnMut(&InboxMessage) -> bool;

/// Keeps a change feed alive; dropping it stops the feed.
pub trait FeedGuard: Send {}

impl<T: Send> FeedGuard for T {}

/// Team state behind one interface. Team and agent names reach a backend
/// already checked ([`super::names`]); team names are sanitised. Errors
/// are the crate's: a backend reports a missing task as `Ok(None)` where
/// the signature allows and leaves the wording to [`super::Team`].
///
/// `Any` is a supertrait so that the store's own kind accessors
/// ([`super::Store::file_store`], [`super::Store::nats_store`]) can look
/// through `dyn TeamStore` by trait upcasting; nothing outside the store
/// asks a backend its kind.
pub trait TeamStore: std::any::Any + Send + Sync + std::fmt::Debug {
    /// Where `team`'s config lives, for messages (a path for the file
    /// backend, a pseudo path for others).
    fn config_location(&self, team: &str) -> PathBuf;

    /// Names of the teams that have a config, sorted.
    fn list_teams(&self) -> Result<Vec<String>>;

    /// The team's config, `None` when the team does not exist. A config that
    /// cannot be read is an error, never `None`.
    fn read_config(&self, team: &str) -> Result<Option<TeamConfig>>;

    /// Stores a new team's config; [`crate::Error::TeamExists`] when one is
    /// there. Prepares the team's inboxes and task list.
    fn create_team(&self, team: &str, config: &TeamConfig) -> Result<()>;

    /// Runs `change` on the config and stores the result, atomically with
    /// respect to every other writer; [`crate::Error::TeamNotFound`] when
    /// there is no team. May run `change` more than once (module docs).
    fn update_config(&self, team: &str, change: ConfigChange<'_>) -> Result<()>;

    /// Removes everything of the team: config, inboxes, histories, tasks,
    /// usage records, plans. A team that is not there is not an error.
    fn delete_team(&self, team: &str) -> Result<()>;

    /// Appends entries to `agent`'s inbox in one atomic write.
    fn append_inbox(&self, team: &str, agent: &str, entries: &[InboxMessage]) -> Result<()>;

    /// Appends entries to several inboxes (`(agent, entries)`), each
    /// inbox's in one atomic write as [`TeamStore::append_inbox`] makes it; a
    /// backend may share the writes' syncs (the file store does). On an
    /// error some inboxes may have been written and others not.
    fn append_inboxes(&self, team: &str, batch: &[(String, Vec<InboxMessage>)]) -> Result<()> {
        for (agent, entries) in batch {
            self.append_inbox(team, agent, entries)?;
        }
        Ok(())
    }

    /// Every entry of `agent`'s inbox (a snapshot; empty when none).
    fn read_inbox(&self, team: &str, agent: &str) -> Result<Vec<InboxMessage>>;

    /// Consumes from `agent`'s inbox, atomically: the unread entries `pick`
    /// selects and every entry already marked read leave the inbox and are
    /// appended to the history (stamped by
    /// [`super::mailbox::consumed`]); the rest stay in order. Returns the
    /// picked entries, oldest first. May call `pick` again on a retry.
    fn take_from_inbox(&self, team: &str, agent: &str, pick: Pick<'_>)
        -> Result<Vec<InboxMessage>>;

    /// [`TeamStore::append_inbox`], whose write the caller then announces
    /// to the observer whose [`StoreObserver::echo_key`] is `observer`
    /// (an `InboxAppended` for `agent`). A backend whose feed would report
    /// the write again (the file store's inotify) may leave it out of a
    /// feed to an observer of that key: the announcement wakes the same
    /// reader, who reads the whole inbox. A feed to any other observer
    /// still reports it. The default is [`TeamStore::append_inbox`].
    fn append_inbox_announced(
        &self,
        team: &str,
        agent: &str,
        entries: &[InboxMessage],
        observer: usize,
    ) -> Result<()> {
        let _ = observer;
        self.append_inbox(team, agent, entries)
    }

    /// [`TeamStore::append_inboxes`], each write announced as
    /// [`TeamStore::append_inbox_announced`]'s is. The default is
    /// [`TeamStore::append_inboxes`].
    fn append_inboxes_announced(
        &self,
        team: &str,
        batch: &[(String, Vec<InboxMessage>)],
        observer: usize,
    ) -> Result<()> {
        let _ = observer;
        self.append_inboxes(team, batch)
    }

    /// [`TeamStore::take_from_inbox`], whose take the caller announces to
    /// the observer of key `observer` when it took anything (an
    /// `InboxTaken`, which wakes nobody). A backend may leave out of that
    /// observer's feed a rewrite that left nothing unread, and only that:
    /// one that left entries unread is reported, so a reader is woken for
    /// them even when they came from another process just before the take.
    /// The default is [`TeamStore::take_from_inbox`].
    fn take_from_inbox_announced(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
        observer: usize,
    ) -> Result<Vec<InboxMessage>> {
        let _ = observer;
        self.take_from_inbox(team, agent, pick)
    }

    /// Appends one entry to `agent`'s history without it passing the
    /// inbox; never interleaved with a take's entries. A record, not a
    /// message: a backend need not make it durable before returning.
    fn record_in_history(&self, team: &str, agent: &str, entry: &InboxMessage) -> Result<()>;

    /// History entries after `cursor` (from the start with the default
    /// cursor). Entries that cannot be read back are skipped with a warning.
    fn history_since(&self, team: &str, agent: &str, cursor: HistoryCursor)
        -> Result<HistoryChunk>;

    /// Agents (by file stem) that have an inbox or a history, sorted.
    fn agents_with_mail(&self, team: &str) -> Result<Vec<String>>;

    /// One task; `None` when there is none. A task that cannot be read is
    /// an error.
    fn read_task(&self, team: &str, id: &str) -> Result<Option<Task>>;

    /// Every readable task by numeric id (unreadable ones skipped with a
    /// warning: one bad task must not hide the others).
    fn list_tasks(&self, team: &str) -> Result<Vec<Task>>;

    /// The lowest-id task an idle teammate could claim
    /// ([`super::tasks::claimable`]), `None` when there is none: what every
    /// idle teammate asks whenever the task list changes, so a backend may
    /// answer it without copying the whole list. Not locked: a hint, which a
    /// claim then checks under the lock.
    fn find_claimable(&self, team: &str) -> Result<Option<Task>> {
        Ok(super::tasks::claimable(&self.list_tasks(team)?).cloned())
    }

    /// Runs `change` on the task list, serialised with every other writer
    /// of the list. May run `change` more than once (module docs).
    fn update_tasks(&self, team: &str, change: TasksChange<'_>) -> Result<()>;

    /// Replaces `agent`'s model-usage record. Only for a team that exists:
    /// a write racing the team's deletion must not bring it back.
    fn write_usage(&self, team: &str, agent: &str, usage: &ModelUsage) -> Result<()>;

    /// Every usage record of the team, by agent file stem (unreadable ones
    /// skipped with a warning).
    fn read_usage(&self, team: &str) -> Result<BTreeMap<String, ModelUsage>>;

    /// Keeps a plan `agent` submitted; returns where it is, as the lead
    /// will see it in the approval request.
    fn write_plan(&self, team: &str, agent: &str, plan: &str) -> Result<String>;

    /// Starts a change feed for `team`: `observer` hears of every change
    /// to the team's config, inboxes and tasks, whoever made it (another
    /// process, Claude Code, another host). Reads never report. The feed
    /// runs until the guard is dropped.
    fn watch(&self, team: &str, observer: Arc<dyn StoreObserver>) -> Result<Box<dyn FeedGuard>>;

    /// Host leases, run records and components, when this store is shared
    /// by several hosts and can hand one host's teammates to another
    /// ([`super::failover`]). `None` (the default, and the file store's
    /// answer): failover is not possible here.
    fn failover(&self) -> Option<&dyn super::failover::Failover> {
        None
    }

    /// Where this store keeps its teams, for a person, when that is not
    /// under the home: a NATS server's address (no credentials). `None`
    /// (the default, and the file store's answer): the home's files.
    fn remote_location(&self) -> Option<String> {
        None
    }

    /// The files this store's connection trusts or proves itself with (a
    /// NATS server's CA, client certificate and key, credentials): no
    /// teammate's directory may hold one, since a teammate could read a seed
    /// or replace the CA it trusts ([`crate::layout::Kind::StoreSettings`]).
    /// Empty (the default, and the file store's answer): none.
    fn settings_files(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }
}

/// One pass over a team's task list, inside [`TeamStore::update_tasks`].
/// Everything it reads and writes is serialised with other passes.
pub trait TaskTxn {
    /// The id a new task gets: one more than any id ever used (deleted and
    /// unreadable ones included), so an id is never reused.
    fn next_id(&mut self) -> Result<u64>;

    /// One task, for changing it; `None` when absent. An unreadable task
    /// is set aside (its id stays used) and reported as an error.
    fn get(&mut self, id: &str) -> Result<Option<Task>>;

    /// Every readable task, by numeric id.
    fn all(&mut self) -> Result<Vec<Task>>;

    /// Lets `f` look at every readable task, by numeric id, without a copy
    /// of each (a claim looks at the whole list to take one task). A
    /// backend that keeps the tasks lends its own; the default lends
    /// [`all`](Self::all)'s copies.
    fn scan(&mut self, f: &mut dyn FnMut(&[&Task])) -> Result<()> {
        let all = self.all()?;
        let lent: Vec<&Task> = all.iter().collect();
        f(&lent);
        Ok(())
    }

    /// Stores a new task, or replaces one.
    fn put(&mut self, task: &Task) -> Result<()>;

    /// Reads task `id`, lets `f` change it and stores it when `f` returns
    /// `true`, as one step no other writer of that task can split. Returns
    /// the task as it ended up, `None` when absent.
    fn modify(
        &mut self,
        id: &str,
        f: &mut dyn FnMut(&mut Task) -> Result<bool>,
    ) -> Result<Option<Task>>;

    /// Removes task `id` and keeps its id from being reused.
    fn remove(&mut self, id: &str) -> Result<()>;

    /// Says that what this pass writes is told to the observer whose
    /// [`StoreObserver::echo_key`] is `observer`, with what it wrote, in
    /// order. A backend whose feed would report those writes again (the
    /// file store's inotify) may leave them out of a feed to an observer of
    /// that key; a feed to any other observer still reports them. The
    /// default does nothing.
    fn announced_to(&mut self, _observer: usize) {}
}
