//! [`NatsStore`]: team state on a NATS JetStream server, so that teammates
//! on several hosts share one team. Selected with `--store
//! nats://HOST:PORT[/PREFIX]` (or `$TEAMHOST_STORE`, or `[team] store` in a
//! manifest); the home then keeps only what belongs to one machine. A
//! JetStream cluster is named by every node (`nats://H1:P1,H2:P2,H3:P3/PREFIX`);
//! a team's streams are then replicated (3 by default, `?replicas=N`), so it
//! survives losing a node (`url.rs`, `setup.rs`, `reads.rs`).
//!
//! It keeps every contract of [`TeamStore`] the file store keeps: no lost
//! updates (compare-and-swap on revisions), no lost messages (a delivery is
//! stored before `append_inbox` returns, de-duplicated by message id),
//! nothing consumed is lost (consuming and recording in the history are one
//! stored message), task ids never reused, and claims that cannot both win:
//! a writer wins a compare-and-swap only when the message stored right
//! after the revision it expected is its own, read back from the stream
//! (`client.rs`, `tasks.rs`), never on a server's answer alone.
//!
//! | file | owns |
//! |---|---|
//! | `url.rs` | [`NatsUrl`]: parsing `nats://…` (one server or a cluster's seed list, `?replicas=N`), the prefix, keeping credentials out of sight |
//! | `security.rs` | [`NatsSecurity`]: TLS files, credentials file, NKey seed; checked before connecting; the errors that name the setting to fix |
//! | `answers.rs` | what one call answers: a stored message, or why it failed (`Fail`); the error code reads and writes retry on |
//! | `client.rs` | [`Conn`](client::Conn): the store's own runtime and client, bounded retries, JetStream's JSON API, compare-and-swaps whose winner is read back from the stream |
//! | `naming.rs` | bucket, stream, subject and key names; agent names as subject tokens |
//! | `replicas.rs` | how many replicas a stream gets: asked, 3 on a cluster, else 1; never more on a server without serialised compare-and-swap |
//! | `setup.rs` | making a team's bucket and mail stream by hand (works on 2.9), listing, deleting |
//! | `reads.rs` | reading the last write: direct gets on one server, the stream leader's gets on a replicated stream |
//! | `kv.rs` | keys with revisions: read, compare-and-swap, delete, set aside |
//! | `team.rs` | config (create, CAS update, a corrupt one set aside), usage records, plans |
//! | `mail.rs` | inboxes and histories: deliveries, takes as one CAS'd record, cursors |
//! | `tasks.rs` | the task list: one key per task, passes committed through an intent key |
//! | `feed.rs` | the change feed: the streams' republished notices, one subscription |
//! | `describe.rs` | [`StoreDescription`]: servers, replicas, each stream's leader (`teamhost store info`) |
//! | `failover.rs` | [`Failover`](super::Failover): host leases and run records as CAS'd keys of the team's bucket |
//! | `shelf.rs` | the component shelf: components by SHA-256, chunked, one stream per prefix |
//! | `transfer.rs` | export to and import from the file layout |
//!
//! **Synchronous over an async client.** The store owns a small tokio
//! runtime; every call is submitted to it and waited for on a `std`
//! channel. It works from the CLI (no runtime), from `spawn_blocking`
//! threads, and even from an executor thread (it then blocks that thread,
//! as any store call does, but cannot panic or deadlock). Update closures
//! and observers run on the caller's or the feed's thread, never on the
//! store's runtime.
//!
//! **Who may reach the server.** The URL comes from the lead (flag,
//! environment, manifest), never from a teammate. A teammate's guest has no
//! network at all, and its Bash may open no socket (seccomp). A child
//! `teamhost teammate` the host starts gets `--store` on its command line
//! when the URL has no credentials, and `$TEAMHOST_STORE` in its
//! environment when it has (so they never show in `ps` or a tmux pane's
//! command); the guest sees neither, and Bash gets a fixed environment. The
//! URL is shown everywhere as [`NatsUrl::display`], without credentials.
//! TLS files, a credentials file or an NKey seed ([`NatsSecurity`]) come
//! from the host's flags and environment only (never a manifest) and reach
//! a child only as `$TEAMHOST_STORE_CA`, … in its environment (a tmux
//! pane's through `tmux -e`); a teammate's directory may hold none of
//! those files (`teamhost run` refuses the layout).

mod answers;
mod client;
mod describe;
mod failover;
mod feed;
mod kv;
mod mail;
mod naming;
mod reads;
mod replicas;
pub mod security;
mod setup;
mod shelf;
mod tasks;
mod team;
pub mod transfer;
pub mod url;

#[cfg(test)]
mod failover_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use self::client::Conn;
pub use self::client::NatsOptions;
pub use self::describe::{StoreDescription, StreamDescription};
use self::naming::TeamNames;
pub use self::replicas::replicated_cas_safe;
pub use self::security::NatsSecurity;
use self::setup::Which;
pub use self::url::NatsUrl;
use super::backend::{
    ConfigChange, FeedGuard, HistoryChunk, HistoryCursor, Pick, TasksChange, TeamStore,
};
use super::{InboxMessage, ModelUsage, StoreObserver, Task, TeamConfig};
use crate::error::Result;

/// The NATS JetStream backend. Cheap to clone; clones share one connection.
#[derive(Debug, Clone)]
pub struct NatsStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: Conn,
    /// Streams known to exist, so they are not created on every call.
    ensured: Mutex<HashSet<(String, Which)>>,
    /// The component shelf's stream is known to exist.
    shelf_ready: std::sync::atomic::AtomicBool,
}

impl NatsStore {
    /// Connects to the server `url` names, with default waits. Fails at
    /// once, naming the address, when the server cannot be reached or has
    /// no JetStream.
    pub fn connect(url: &NatsUrl) -> Result<NatsStore> {
        NatsStore::connect_with(url, NatsOptions::default())
    }

    /// [`NatsStore::connect`] with other waits.
    pub fn connect_with(url: &NatsUrl, opts: NatsOptions) -> Result<NatsStore> {
        Ok(NatsStore {
            inner: Arc::new(Inner {
                conn: Conn::connect(url, opts)?,
                ensured: Mutex::new(HashSet::new()),
                shelf_ready: Default::default(),
            }),
        })
    }

    /// Where this store lives.
    pub fn url(&self) -> &NatsUrl {
        self.inner.conn.url()
    }

    /// The TLS files and credentials it connected with (a child teammate
    /// connects with the same).
    pub fn security(&self) -> &NatsSecurity {
        self.inner.conn.security()
    }

    fn conn(&self) -> &Conn {
        &self.inner.conn
    }

    fn prefix(&self) -> &str {
        self.url().prefix()
    }

    fn names(&self, team: &str) -> TeamNames {
        TeamNames::new(self.prefix(), team)
    }

    /// A pseudo path for messages: `nats://HOST:PORT/PREFIX/teams/TEAM/WHAT`.
    fn location(&self, team: &str, what: &str) -> PathBuf {
        PathBuf::from(format!("{}/teams/{team}/{what}", self.url().display()))
    }

    /// Makes the stream when this store has not seen it yet.
    fn ensure(&self, n: &TeamNames, which: Which) -> Result<()> {
        let key = (n.base.clone(), which);
        if self.lock_ensured().contains(&key) {
            return Ok(());
        }
        setup::ensure(self.conn(), n, which)
            .map_err(|f| self.conn().error("make the team's streams", f))?;
        self.lock_ensured().insert(key);
        Ok(())
    }

    /// Makes the stream, whatever this store remembers (it was not there).
    fn ensure_fresh(&self, n: &TeamNames, which: Which) -> Result<()> {
        self.lock_ensured().remove(&(n.base.clone(), which));
        self.ensure(n, which)
    }

    /// Forgets the team's streams (it is being deleted).
    fn forget(&self, n: &TeamNames) {
        self.lock_ensured().retain(|(b, _)| b != &n.base);
    }

    fn lock_ensured(&self) -> std::sync::MutexGuard<'_, HashSet<(String, Which)>> {
        self.inner.ensured.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the names of a prefix's team streams start with: the buckets'
/// (`KV_P_`) and the mail streams' (`P_mail_`).
fn team_streams_prefixes(prefix: &str) -> [String; 2] {
    [format!("KV_{prefix}_"), format!("{prefix}_mail_")]
}

impl TeamStore for NatsStore {
    fn config_location(&self, team: &str) -> PathBuf {
        self.location(team, "config")
    }

    fn list_teams(&self) -> Result<Vec<String>> {
        self.team_list()
    }

    fn read_config(&self, team: &str) -> Result<Option<TeamConfig>> {
        self.config_read(team)
    }

    fn create_team(&self, team: &str, config: &TeamConfig) -> Result<()> {
        self.config_create(team, config)
    }

    fn update_config(&self, team: &str, change: ConfigChange<'_>) -> Result<()> {
        self.config_update(team, change)
    }

    fn delete_team(&self, team: &str) -> Result<()> {
        self.team_delete(team)
    }

    fn append_inbox(&self, team: &str, agent: &str, entries: &[InboxMessage]) -> Result<()> {
        self.mail_append(team, agent, entries)
    }

    fn read_inbox(&self, team: &str, agent: &str) -> Result<Vec<InboxMessage>> {
        self.mail_read(team, agent)
    }

    fn take_from_inbox(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
    ) -> Result<Vec<InboxMessage>> {
        self.mail_take(team, agent, pick)
    }

    fn record_in_history(&self, team: &str, agent: &str, entry: &InboxMessage) -> Result<()> {
        self.mail_record(team, agent, entry)
    }

    fn history_since(
        &self,
        team: &str,
        agent: &str,
        cursor: HistoryCursor,
    ) -> Result<HistoryChunk> {
        self.mail_history(team, agent, cursor)
    }

    fn agents_with_mail(&self, team: &str) -> Result<Vec<String>> {
        self.mail_agents(team)
    }

    fn read_task(&self, team: &str, id: &str) -> Result<Option<Task>> {
        self.task_read(team, id)
    }

    fn list_tasks(&self, team: &str) -> Result<Vec<Task>> {
        self.task_list(team)
    }

    fn update_tasks(&self, team: &str, change: TasksChange<'_>) -> Result<()> {
        self.task_update(team, change)
    }

    fn write_usage(&self, team: &str, agent: &str, usage: &ModelUsage) -> Result<()> {
        self.usage_write(team, agent, usage)
    }

    fn read_usage(&self, team: &str) -> Result<BTreeMap<String, ModelUsage>> {
        self.usage_read(team)
    }

    fn write_plan(&self, team: &str, agent: &str, plan: &str) -> Result<String> {
        self.plan_write(team, agent, plan)
    }

    fn watch(&self, team: &str, observer: Arc<dyn StoreObserver>) -> Result<Box<dyn FeedGuard>> {
        feed::start(self, team, observer)
    }

    fn failover(&self) -> Option<&dyn super::failover::Failover> {
        Some(self)
    }

    fn remote_location(&self) -> Option<String> {
        Some(self.url().display())
    }

    fn settings_files(&self) -> Vec<std::path::PathBuf> {
        self.security().files()
    }
}
