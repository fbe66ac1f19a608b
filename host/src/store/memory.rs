//! [`MemoryStore`]: team state in this process's memory, for fast tests of
//! everything above the seam (the rules, the WIT glue, the runner) without
//! a file system. It keeps every contract of [`TeamStore`] the file store
//! keeps — atomic updates, consumed messages moved to the history, ids
//! never reused, a change feed — but nothing survives the process.
//!
//! One mutex guards everything: each call is one critical section, so an
//! update closure runs exactly once and sees no other writer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::backend::{
    ConfigChange, FeedGuard, HistoryChunk, HistoryCursor, Pick, TaskTxn, TasksChange, TeamStore,
};
use super::mailbox::consumed_now;
use super::names::{agent_file_stem, parse_task_id};
use super::{InboxMessage, ModelUsage, StoreEvent, StoreObserver, Task, TeamConfig};
use crate::error::{Error, Result};

/// An in-memory backend. Cheap to clone; clones share the same teams.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    feeds: Mutex<Vec<Feed>>,
    failover: super::failover_memory::MemoryFailover,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    teams: BTreeMap<String, TeamState>,
    /// Bumped whenever a history is removed, so cursors on the old one
    /// are told to start over.
    generation: u64,
}

#[derive(Default)]
struct TeamState {
    config: Option<TeamConfig>,
    inboxes: BTreeMap<String, Vec<InboxMessage>>,
    histories: BTreeMap<String, Vec<InboxMessage>>,
    tasks: BTreeMap<u64, Task>,
    highest_id: u64,
    usage: BTreeMap<String, ModelUsage>,
    plans: Vec<(String, String)>,
}

struct Feed {
    id: u64,
    team: String,
    observer: Arc<dyn StoreObserver>,
}

/// Ends a feed when dropped.
struct FeedHandle {
    id: u64,
    shared: Weak<Shared>,
}

impl Drop for FeedHandle {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            lock(&shared.feeds).retain(|f| f.id != self.id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The plans submitted in `team`, as `(agent, plan)`, oldest first.
    pub fn plans(&self, team: &str) -> Vec<(String, String)> {
        lock(&self.shared.state)
            .teams
            .get(team)
            .map(|t| t.plans.clone())
            .unwrap_or_default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Tells the team's feeds, after the state lock is released.
    fn report(&self, event: StoreEvent) {
        let team = event.team().to_string();
        let observers: Vec<Arc<dyn StoreObserver>> = lock(&self.shared.feeds)
            .iter()
            .filter(|f| f.team == team)
            .map(|f| f.observer.clone())
            .collect();
        for o in observers {
            o.changed(&event);
        }
    }
}

impl State {
    fn team(&self, team: &str) -> Option<&TeamState> {
        self.teams.get(team).filter(|t| t.config.is_some())
    }

    fn team_mut(&mut self, team: &str) -> &mut TeamState {
        self.teams.entry(team.to_string()).or_default()
    }
}

impl TeamStore for MemoryStore {
    fn failover(&self) -> Option<&dyn super::failover::Failover> {
        Some(&self.shared.failover)
    }

    fn config_location(&self, team: &str) -> PathBuf {
        PathBuf::from(format!("memory:teams/{team}/config.json"))
    }

    fn list_teams(&self) -> Result<Vec<String>> {
        let state = self.state();
        Ok(state
            .teams
            .iter()
            .filter(|(_, t)| t.config.is_some())
            .map(|(n, _)| n.clone())
            .collect())
    }

    fn read_config(&self, team: &str) -> Result<Option<TeamConfig>> {
        Ok(self.state().team(team).and_then(|t| t.config.clone()))
    }

    fn create_team(&self, team: &str, config: &TeamConfig) -> Result<()> {
        {
            let mut state = self.state();
            if state.team(team).is_some() {
                return Err(Error::TeamExists {
                    team: team.to_string(),
                    path: self.config_location(team),
                });
            }
            state.team_mut(team).config = Some(config.clone());
        }
        self.report(StoreEvent::ConfigChanged { team: team.into() });
        Ok(())
    }

    fn update_config(&self, team: &str, change: ConfigChange<'_>) -> Result<()> {
        {
            let mut state = self.state();
            let Some(current) = state.team(team).and_then(|t| t.config.clone()) else {
                return Err(Error::TeamNotFound {
                    team: team.to_string(),
                    path: self.config_location(team),
                });
            };
            let mut config = current;
            change(&mut config)?;
            state.team_mut(team).config = Some(config);
        }
        self.report(StoreEvent::ConfigChanged { team: team.into() });
        Ok(())
    }

    fn delete_team(&self, team: &str) -> Result<()> {
        let existed = {
            let mut state = self.state();
            state.generation += 1;
            state.teams.remove(team).is_some()
        };
        self.shared.failover.forget_team(team);
        if existed {
            self.report(StoreEvent::ConfigChanged { team: team.into() });
        }
        Ok(())
    }

    fn append_inbox(&self, team: &str, agent: &str, entries: &[InboxMessage]) -> Result<()> {
        let stem = agent_file_stem(agent)?;
        self.state()
            .team_mut(team)
            .inboxes
            .entry(stem.clone())
            .or_default()
            .extend_from_slice(entries);
        self.report(StoreEvent::InboxAppended {
            team: team.into(),
            agent: stem,
        });
        Ok(())
    }

    fn read_inbox(&self, team: &str, agent: &str) -> Result<Vec<InboxMessage>> {
        let stem = agent_file_stem(agent)?;
        Ok(self
            .state()
            .teams
            .get(team)
            .and_then(|t| t.inboxes.get(&stem).cloned())
            .unwrap_or_default())
    }

    fn take_from_inbox(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
    ) -> Result<Vec<InboxMessage>> {
        let stem = agent_file_stem(agent)?;
        let mut state = self.state();
        let Some(t) = state.teams.get_mut(team) else {
            return Ok(Vec::new());
        };
        let Some(inbox) = t.inboxes.get_mut(&stem) else {
            return Ok(Vec::new());
        };
        let (mut gone, mut keep, mut taken) = (Vec::new(), Vec::new(), Vec::new());
        for m in inbox.drain(..) {
            if m.read {
                gone.push(m);
            } else if pick(&m) {
                taken.push(m);
            } else {
                keep.push(m);
            }
        }
        *inbox = keep;
        gone.extend(taken.iter().cloned());
        if !gone.is_empty() {
            t.histories
                .entry(stem)
                .or_default()
                .extend(consumed_now(&gone));
        }
        Ok(taken)
    }

    fn record_in_history(&self, team: &str, agent: &str, entry: &InboxMessage) -> Result<()> {
        let stem = agent_file_stem(agent)?;
        self.state()
            .team_mut(team)
            .histories
            .entry(stem)
            .or_default()
            .extend(consumed_now(std::slice::from_ref(entry)));
        Ok(())
    }

    fn history_since(
        &self,
        team: &str,
        agent: &str,
        cursor: HistoryCursor,
    ) -> Result<HistoryChunk> {
        let stem = agent_file_stem(agent)?;
        let state = self.state();
        let all: &[InboxMessage] = state
            .teams
            .get(team)
            .and_then(|t| t.histories.get(&stem))
            .map_or(&[], Vec::as_slice);
        let epoch = state.generation + 1;
        let restarted = cursor != HistoryCursor::default()
            && (cursor.epoch != epoch || cursor.offset as usize > all.len());
        let from = if restarted { 0 } else { cursor.offset as usize };
        Ok(HistoryChunk {
            restarted,
            entries: all[from.min(all.len())..].to_vec(),
            cursor: HistoryCursor {
                epoch,
                offset: all.len() as u64,
            },
        })
    }

    fn agents_with_mail(&self, team: &str) -> Result<Vec<String>> {
        let state = self.state();
        let Some(t) = state.teams.get(team) else {
            return Ok(Vec::new());
        };
        let mut all: Vec<String> = t
            .inboxes
            .keys()
            .chain(t.histories.keys())
            .cloned()
            .collect();
        all.sort();
        all.dedup();
        Ok(all)
    }

    fn read_task(&self, team: &str, id: &str) -> Result<Option<Task>> {
        let n = parse_task_id(id)?;
        Ok(self
            .state()
            .teams
            .get(team)
            .and_then(|t| t.tasks.get(&n).cloned()))
    }

    fn list_tasks(&self, team: &str) -> Result<Vec<Task>> {
        Ok(self
            .state()
            .teams
            .get(team)
            .map(|t| t.tasks.values().cloned().collect())
            .unwrap_or_default())
    }

    fn update_tasks(&self, team: &str, change: TasksChange<'_>) -> Result<()> {
        let changed = {
            let mut state = self.state();
            let t = state.team_mut(team);
            // Work on a copy: a failed pass leaves nothing half done.
            let mut pass = MemoryTasks {
                tasks: t.tasks.clone(),
                highest_id: t.highest_id,
                changed: false,
            };
            change(&mut pass)?;
            t.tasks = pass.tasks;
            t.highest_id = pass.highest_id;
            pass.changed
        };
        if changed {
            self.report(StoreEvent::TasksChanged {
                team: team.into(),
                written: None,
            });
        }
        Ok(())
    }

    fn write_usage(&self, team: &str, agent: &str, usage: &ModelUsage) -> Result<()> {
        let stem = agent_file_stem(agent)?;
        let mut state = self.state();
        if state.team(team).is_none() {
            return Ok(()); // the team is gone: nothing to bring back
        }
        state.team_mut(team).usage.insert(stem, usage.clone());
        Ok(())
    }

    fn read_usage(&self, team: &str) -> Result<BTreeMap<String, ModelUsage>> {
        Ok(self
            .state()
            .teams
            .get(team)
            .map(|t| t.usage.clone())
            .unwrap_or_default())
    }

    fn write_plan(&self, team: &str, agent: &str, plan: &str) -> Result<String> {
        let mut state = self.state();
        let plans = &mut state.team_mut(team).plans;
        plans.push((agent.to_string(), plan.to_string()));
        Ok(format!(
            "memory:teams/{team}/plans/{agent}-{}.md",
            plans.len()
        ))
    }

    fn watch(&self, team: &str, observer: Arc<dyn StoreObserver>) -> Result<Box<dyn FeedGuard>> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.shared.feeds).push(Feed {
            id,
            team: team.to_string(),
            observer,
        });
        Ok(Box::new(FeedHandle {
            id,
            shared: Arc::downgrade(&self.shared),
        }))
    }
}

/// A pass over a copy of the task list.
struct MemoryTasks {
    tasks: BTreeMap<u64, Task>,
    highest_id: u64,
    changed: bool,
}

impl TaskTxn for MemoryTasks {
    fn next_id(&mut self) -> Result<u64> {
        let present = self.tasks.keys().next_back().copied().unwrap_or(0);
        Ok(present.max(self.highest_id) + 1)
    }

    fn get(&mut self, id: &str) -> Result<Option<Task>> {
        Ok(self.tasks.get(&parse_task_id(id)?).cloned())
    }

    fn all(&mut self) -> Result<Vec<Task>> {
        Ok(self.tasks.values().cloned().collect())
    }

    fn put(&mut self, task: &Task) -> Result<()> {
        let n = parse_task_id(&task.id)?;
        self.highest_id = self.highest_id.max(n);
        self.tasks.insert(n, task.clone());
        self.changed = true;
        Ok(())
    }

    fn modify(
        &mut self,
        id: &str,
        f: &mut dyn FnMut(&mut Task) -> Result<bool>,
    ) -> Result<Option<Task>> {
        let n = parse_task_id(id)?;
        let Some(task) = self.tasks.get_mut(&n) else {
            return Ok(None);
        };
        let mut copy = task.clone();
        if f(&mut copy)? {
            *task = copy.clone();
            self.changed = true;
        }
        Ok(Some(copy))
    }

    fn remove(&mut self, id: &str) -> Result<()> {
        let n = parse_task_id(id)?;
        self.highest_id = self.highest_id.max(n);
        self.changed |= self.tasks.remove(&n).is_some();
        Ok(())
    }
}
