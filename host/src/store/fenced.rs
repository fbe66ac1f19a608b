//! [`FencedStore`]: a [`TeamStore`] whose every write for a team first asks
//! a [`Fence`] whether this host may still write there — the fencing of
//! host failover. A host holding a lease on a team wraps its store in one; once
//! the lease is taken over by another host, the fence refuses
//! (`Error::LeaseLost`) and the write never reaches the store.
//!
//! Reads, the change feed and component shelving pass straight through (a
//! read changes nothing another host owns; the shelf is keyed by content and
//! not per team). Every other method is a write and is checked:
//!
//! | checked | not checked |
//! |---|---|
//! | `create_team`, `update_config`, `delete_team`, `append_inbox`, `take_from_inbox`, `record_in_history`, `update_tasks`, `write_usage`, `write_plan`; failover's `write_lease`, `write_run`, `remove_run` | reads, `watch`, `put_component`, `get_component` |
//!
//! **The window left.** The fence is checked before the write is sent. A
//! host paused between its check and its write landing (a stopped process,
//! a long GC-like stall, a network that holds the request) can still land
//! one write after its lease was taken over. The lease's timing makes that
//! window small (a check passes only within half a lease of the holder's
//! last successful renewal, and an adopter waits a whole lease), not empty:
//! a pause longer than half a lease that falls exactly between a check and
//! its write goes through. Closing it needs the store to compare a fencing
//! token on every write, which JetStream cannot do across keys and streams.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::backend::{ConfigChange, FeedGuard, HistoryChunk, HistoryCursor, Pick, TasksChange};
use super::failover::{Failover, HostLease, Revision, RunRecord};
use super::{InboxMessage, ModelUsage, StoreObserver, Task, TeamConfig, TeamStore};
use crate::error::Result;

/// Says whether this host may write for a team now.
pub trait Fence: Send + Sync + 'static {
    /// `Ok` when this host may write for `team` (it holds a valid lease
    /// there, or holds none, so nothing is fenced); `Err(LeaseLost)` when
    /// its lease was taken over; another error when that cannot be known
    /// (the store is unreachable past the lease's validity).
    fn check(&self, team: &str) -> Result<()>;
}

/// A store that checks a [`Fence`] before each write; see the module docs.
pub struct FencedStore {
    inner: Arc<dyn TeamStore>,
    fence: Arc<dyn Fence>,
    failover: Option<FencedFailover>,
}

/// The failover records of a [`FencedStore`]: writes checked, the rest
/// passed through.
struct FencedFailover {
    inner: Arc<dyn TeamStore>,
    fence: Arc<dyn Fence>,
}

impl FencedStore {
    /// Wraps `inner`; `fence` is asked before each write.
    pub fn new(inner: Arc<dyn TeamStore>, fence: Arc<dyn Fence>) -> FencedStore {
        let failover = inner.failover().is_some().then(|| FencedFailover {
            inner: Arc::clone(&inner),
            fence: Arc::clone(&fence),
        });
        FencedStore {
            inner,
            fence,
            failover,
        }
    }

    /// The store underneath (its writes are not fenced: for the lease's own
    /// renewals).
    pub fn inner(&self) -> &Arc<dyn TeamStore> {
        &self.inner
    }
}

impl std::fmt::Debug for FencedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl TeamStore for FencedStore {
    fn config_location(&self, team: &str) -> PathBuf {
        self.inner.config_location(team)
    }

    fn list_teams(&self) -> Result<Vec<String>> {
        self.inner.list_teams()
    }

    fn read_config(&self, team: &str) -> Result<Option<TeamConfig>> {
        self.inner.read_config(team)
    }

    fn create_team(&self, team: &str, config: &TeamConfig) -> Result<()> {
        self.fence.check(team)?;
        self.inner.create_team(team, config)
    }

    fn update_config(&self, team: &str, change: ConfigChange<'_>) -> Result<()> {
        self.fence.check(team)?;
        self.inner.update_config(team, change)
    }

    fn delete_team(&self, team: &str) -> Result<()> {
        self.fence.check(team)?;
        self.inner.delete_team(team)
    }

    fn append_inbox(&self, team: &str, agent: &str, entries: &[InboxMessage]) -> Result<()> {
        self.fence.check(team)?;
        self.inner.append_inbox(team, agent, entries)
    }

    fn append_inbox_announced(
        &self,
        team: &str,
        agent: &str,
        entries: &[InboxMessage],
        observer: usize,
    ) -> Result<()> {
        self.fence.check(team)?;
        self.inner
            .append_inbox_announced(team, agent, entries, observer)
    }

    fn append_inboxes_announced(
        &self,
        team: &str,
        batch: &[(String, Vec<InboxMessage>)],
        observer: usize,
    ) -> Result<()> {
        self.fence.check(team)?;
        self.inner.append_inboxes_announced(team, batch, observer)
    }

    fn take_from_inbox_announced(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
        observer: usize,
    ) -> Result<Vec<InboxMessage>> {
        self.fence.check(team)?;
        self.inner
            .take_from_inbox_announced(team, agent, pick, observer)
    }

    fn append_inboxes(&self, team: &str, batch: &[(String, Vec<InboxMessage>)]) -> Result<()> {
        self.fence.check(team)?;
        self.inner.append_inboxes(team, batch)
    }

    fn read_inbox(&self, team: &str, agent: &str) -> Result<Vec<InboxMessage>> {
        self.inner.read_inbox(team, agent)
    }

    fn take_from_inbox(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
    ) -> Result<Vec<InboxMessage>> {
        self.fence.check(team)?;
        self.inner.take_from_inbox(team, agent, pick)
    }

    fn record_in_history(&self, team: &str, agent: &str, entry: &InboxMessage) -> Result<()> {
        self.fence.check(team)?;
        self.inner.record_in_history(team, agent, entry)
    }

    fn history_since(
        &self,
        team: &str,
        agent: &str,
        cursor: HistoryCursor,
    ) -> Result<HistoryChunk> {
        self.inner.history_since(team, agent, cursor)
    }

    fn agents_with_mail(&self, team: &str) -> Result<Vec<String>> {
        self.inner.agents_with_mail(team)
    }

    fn read_task(&self, team: &str, id: &str) -> Result<Option<Task>> {
        self.inner.read_task(team, id)
    }

    fn list_tasks(&self, team: &str) -> Result<Vec<Task>> {
        self.inner.list_tasks(team)
    }

    fn find_claimable(&self, team: &str) -> Result<Option<Task>> {
        self.inner.find_claimable(team)
    }

    fn update_tasks(&self, team: &str, change: TasksChange<'_>) -> Result<()> {
        self.fence.check(team)?;
        self.inner.update_tasks(team, change)
    }

    fn write_usage(&self, team: &str, agent: &str, usage: &ModelUsage) -> Result<()> {
        self.fence.check(team)?;
        self.inner.write_usage(team, agent, usage)
    }

    fn read_usage(&self, team: &str) -> Result<BTreeMap<String, ModelUsage>> {
        self.inner.read_usage(team)
    }

    fn write_plan(&self, team: &str, agent: &str, plan: &str) -> Result<String> {
        self.fence.check(team)?;
        self.inner.write_plan(team, agent, plan)
    }

    fn watch(&self, team: &str, observer: Arc<dyn StoreObserver>) -> Result<Box<dyn FeedGuard>> {
        self.inner.watch(team, observer)
    }

    fn failover(&self) -> Option<&dyn Failover> {
        self.failover.as_ref().map(|f| f as &dyn Failover)
    }

    // Reads of what the store underneath is: a fence changes who may
    // write, not where the teams are or which files the connection trusts.
    fn remote_location(&self) -> Option<String> {
        self.inner.remote_location()
    }

    fn settings_files(&self) -> Vec<std::path::PathBuf> {
        self.inner.settings_files()
    }
}

impl FencedFailover {
    fn inner(&self) -> &dyn Failover {
        self.inner
            .failover()
            .expect("made only over a store with failover")
    }
}

impl Failover for FencedFailover {
    fn read_leases(&self, team: &str) -> Result<Vec<(HostLease, Revision)>> {
        self.inner().read_leases(team)
    }

    fn write_lease(
        &self,
        team: &str,
        lease: &HostLease,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>> {
        self.fence.check(team)?;
        self.inner().write_lease(team, lease, expect)
    }

    fn read_runs(&self, team: &str) -> Result<Vec<(RunRecord, Revision)>> {
        self.inner().read_runs(team)
    }

    fn write_run(
        &self,
        team: &str,
        run: &RunRecord,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>> {
        self.fence.check(team)?;
        self.inner().write_run(team, run, expect)
    }

    fn remove_run(&self, team: &str, name: &str, expect: Revision) -> Result<bool> {
        self.fence.check(team)?;
        self.inner().remove_run(team, name, expect)
    }

    fn put_component(&self, bytes: &[u8]) -> Result<String> {
        self.inner().put_component(bytes)
    }

    fn get_component(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        self.inner().get_component(sha256)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::store::{MemoryStore, NewTeam, OutgoingMessage, Store};
    use std::sync::Mutex;

    /// A fence that refuses every team in its list.
    #[derive(Default)]
    struct Refusing(Mutex<Vec<String>>);

    impl Fence for Refusing {
        fn check(&self, team: &str) -> Result<()> {
            if self.0.lock().unwrap().iter().any(|t| t == team) {
                return Err(Error::LeaseLost {
                    team: team.into(),
                    by: "b".into(),
                });
            }
            Ok(())
        }
    }

    #[test]
    fn writes_for_a_fenced_team_are_refused_and_reads_pass() {
        let fence = Arc::new(Refusing::default());
        let inner: Arc<dyn TeamStore> = Arc::new(MemoryStore::new());
        let fenced = Arc::new(FencedStore::new(Arc::clone(&inner), fence.clone()));
        let store = Store::with_backend(fenced.clone());
        let t = store.team("t").unwrap();
        t.create(NewTeam::default()).unwrap();
        store.team("u").unwrap().create(NewTeam::default()).unwrap();
        t.send("team-lead", OutgoingMessage::new("x", "before"))
            .unwrap();
        fence.0.lock().unwrap().push("t".into());
        let lost = |r: Result<()>| assert!(matches!(r, Err(Error::LeaseLost { .. })), "{r:?}");
        lost(
            t.send("team-lead", OutgoingMessage::new("x", "after"))
                .map(|_| ()),
        );
        lost(
            t.create_task(crate::store::NewTask {
                subject: "s".into(),
                description: "d".into(),
                ..Default::default()
            })
            .map(|_| ()),
        );
        lost(fenced.delete_team("t"));
        lost(fenced.write_usage("t", "x", &ModelUsage::default()));
        lost(fenced.write_plan("t", "x", "p").map(|_| ()));
        lost(
            fenced
                .take_from_inbox("t", "team-lead", &mut |_| true)
                .map(|_| ()),
        );
        let f = fenced.failover().unwrap();
        let run_err = f.remove_run("t", "x", 1).map(|_| ());
        lost(run_err);
        // Reads pass, and nothing was written.
        assert_eq!(t.read_inbox("team-lead").unwrap().len(), 1);
        assert!(t.list_tasks().unwrap().is_empty());
        assert!(f.read_leases("t").unwrap().is_empty());
        // Another team is not fenced; the shelf is not per team.
        store
            .team("u")
            .unwrap()
            .send("team-lead", OutgoingMessage::new("x", "hi"))
            .unwrap();
        f.put_component(b"wasm").unwrap();
    }

    #[test]
    fn a_fenced_store_is_still_of_its_inner_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let files: Arc<dyn TeamStore> = Arc::new(crate::store::FileStore::new(tmp.path()));
        let fence = Arc::new(Refusing::default());
        let fenced = Store::with_backend(Arc::new(FencedStore::new(files.clone(), fence.clone())));
        assert!(
            fenced.file_store().is_some(),
            "the file store shows through the fence"
        );
        assert!(fenced.nats_store().is_none());
        assert!(Store::with_backend(files).file_store().is_some());
        let memory: Arc<dyn TeamStore> = Arc::new(MemoryStore::new());
        let fenced = Store::with_backend(Arc::new(FencedStore::new(memory, fence)));
        assert!(fenced.file_store().is_none() && fenced.nats_store().is_none());
    }
}
