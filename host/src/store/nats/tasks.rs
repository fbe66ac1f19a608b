//! The task list in a team's bucket: one key per task (`task.ID`, the
//! reference's task JSON) and one key, `txn`, through which every pass
//! ([`TaskTxn`]) commits.
//!
//! **Passes without multi-key transactions: an intent log in one key.**
//! JetStream compares and swaps one key at a time, and a pass may change
//! several tasks (a new task and its blockers' `blocks`, a deletion and
//! every dependency on it, a teammate's tasks given back). A pass:
//!
//! 1. reads `txn` (revision `R`): the last committed pass's intent, its
//!    writes with the task revision each expected, and `high`, the highest
//!    id ever used;
//! 2. rolls that intent forward: each write whose task key still has the
//!    expected revision is applied, compare-and-swapped on it (so applying
//!    twice, or racing another roller, is harmless);
//! 3. reads every task (ids `1..=high`, all at once) with its revision, runs
//!    the closure on that snapshot, collecting its writes;
//! 4. commits by writing a new intent to `txn` expecting `R`. Only one pass
//!    can commit over `R`; a loser starts again from 1 (the closure may run
//!    again, which the trait allows);
//! 5. applies its own writes (step 2 for its intent);
//! 6. reads who won: its pass happened only if, for each task it wrote, the
//!    message stored right after the revision it expected is its own write.
//!
//! **Who won is read from the stored records, by construction.** Each
//! intent carries a token (a fresh UUID), and each of its task writes is
//! stored with the message id `TOKEN.ID`, whoever applies it (a second
//! apply is the same message, de-duplicated). A task key's revisions are
//! one ordered list, so exactly one write is stored right after any
//! revision: the pass whose write that is has won the task at that
//! revision, and its closure saw the task as it was at that revision (a
//! slot's revision and value come from one stored message). So two passes
//! can both be told they claimed a task only if the second saw the first's
//! claim and still claimed: impossible. This holds whatever the server's
//! answers said or failed to say, and whatever an earlier read missed: a
//! snapshot read from a replica behind the leader or a deposed leader (a
//! task older than the committed intent) once let two claimers both win
//! (a cluster's claim once won twice; `host/tests/nats_faults.rs` reproduces it), because
//! the loser's write was refused, taken for "applied by someone else", and
//! reported as a win. Now a pass none of whose writes won runs again from
//! step 1; one that won some and lost others (only possible after such a
//! stale read in a pass of several tasks) fails with an error naming them.
//!
//! Passes are thereby serialised on `txn`, and every pass sees every
//! earlier pass whole: a claim's busy check, a blocker's existence and a
//! cycle check read a state no other pass changes before the claim commits.
//! Readers outside a pass (`list_tasks`, `read_task`) overlay the
//! committed intent's writes not yet applied, so they never see half of a
//! pass. A crashed pass costs nothing: before step 4 it wrote nothing, after
//! it the next pass (or reader) completes it. This was preferred to a lease
//! key serialising passes, which a crashed holder blocks until it expires
//! and a paused holder can outlive (its writes then need fencing, and a
//! fenced write can still act on reads the new holder changed).
//!
//! **Ids are never reused**: `high` only grows, and is part of the commit;
//! a task key is written with the revision the pass read (`0` for a new
//! id: a create), so even outside the protocol two creations of one id
//! cannot both land.
//!
//! **A task that does not parse** is copied to `aside.task.ID.STAMP` and
//! deleted by a pass of its own when a pass reaches for it to change it; the
//! pass fails with an error naming both keys, and the id stays used.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::answers::Fail;
use super::kv::{self, Slot};
use super::naming::{task_key, TeamNames};
use super::setup::Which;
use super::NatsStore;
use crate::error::{Error, Result};
use crate::store::backend::{TaskTxn, TasksChange};
use crate::store::names::parse_task_id;
use crate::store::Task;

const TXN: &str = "txn";

/// The `txn` key: the last committed pass.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Intent {
    /// The pass's own token: its task writes are stored as `TOKEN.ID`
    /// (empty in intents written before tokens: their writes get fresh ids).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    token: String,
    /// The highest task id ever used.
    #[serde(default)]
    high: u64,
    /// The pass's writes.
    #[serde(default)]
    writes: Vec<Write>,
}

/// One write of a pass.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Write {
    id: u64,
    /// The task key's revision the pass read (`0`: never written).
    expect: u64,
    /// The new task; `None` deletes it.
    #[serde(default)]
    task: Option<Value>,
}

impl Intent {
    /// The message id of its write to task `id`.
    fn msg_id(&self, id: u64) -> String {
        if self.token.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            format!("{}.{id}", self.token)
        }
    }
}

/// Tasks as read: id → slot.
type Snapshot = BTreeMap<u64, Slot>;

impl NatsStore {
    pub(super) fn task_read(&self, team: &str, id: &str) -> Result<Option<Task>> {
        let n = parse_task_id(id)?;
        let names = self.names(team);
        let conn = self.conn();
        let what = "read a task";
        let (_, intent) = self.intent(team, &names, what)?;
        let slot = kv::get(conn, &names, &task_key(n)).map_err(|f| conn.error(what, f))?;
        let mut snap = Snapshot::from([(n, slot)]);
        overlay(&mut snap, &intent);
        match snap.remove(&n).and_then(|s| s.value) {
            None => Ok(None),
            Some(raw) => serde_json::from_slice(&raw)
                .map(Some)
                .map_err(|source| Error::Corrupt {
                    path: self.location(team, &task_key(n)),
                    moved_to: None,
                    source,
                }),
        }
    }

    pub(super) fn task_list(&self, team: &str) -> Result<Vec<Task>> {
        let names = self.names(team);
        let what = "list the tasks";
        let (_, intent) = self.intent(team, &names, what)?;
        let mut snap = self.snapshot(&names, intent.high, what)?;
        overlay(&mut snap, &intent);
        Ok(snap
            .iter()
            .filter_map(|(id, s)| {
                let raw = s.value.as_ref()?;
                serde_json::from_slice::<Task>(raw)
                    .map_err(|e| tracing::warn!("skipping task #{id}: {e}"))
                    .ok()
            })
            .collect())
    }

    pub(super) fn task_update(&self, team: &str, change: TasksChange<'_>) -> Result<()> {
        let names = self.names(team);
        let what = "change the tasks";
        self.ensure(&names, Which::Kv)?;
        loop {
            let (rev, intent) = self.intent(team, &names, what)?;
            let mut snap = self.snapshot(&names, intent.high, what)?;
            self.roll_forward(&names, &intent, &mut snap, what)?;
            let mut pass = Pass {
                store: self,
                team,
                names: &names,
                snap,
                high: intent.high,
                writes: BTreeMap::new(),
                set_aside: Vec::new(),
            };
            let result = change(&mut pass);
            let Pass {
                snap,
                high,
                writes,
                set_aside,
                ..
            } = pass;
            if !set_aside.is_empty() {
                // Remove the corrupt tasks in a pass of their own; a lost
                // race leaves them for the next pass to find.
                let removals = set_aside.iter().map(|id| (*id, None)).collect();
                if let Err(e) = self.commit(&names, rev, high, &snap, removals, what) {
                    tracing::warn!(error = %e, "could not remove a corrupt task");
                }
            }
            result?;
            if writes.is_empty() {
                return Ok(());
            }
            match self.commit(&names, rev, high, &snap, writes, what) {
                Ok(true) => return Ok(()),
                Ok(false) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes a new intent over revision `rev` and applies it; `false` when
    /// another pass committed first.
    fn commit(
        &self,
        names: &TeamNames,
        rev: u64,
        high: u64,
        snap: &Snapshot,
        writes: BTreeMap<u64, Option<Task>>,
        what: &str,
    ) -> Result<bool> {
        let conn = self.conn();
        let mut intent = Intent {
            token: uuid::Uuid::new_v4().to_string(),
            high,
            writes: Vec::new(),
        };
        for (id, task) in writes {
            intent.high = intent.high.max(id);
            let task = match task {
                Some(t) => Some(
                    serde_json::to_value(&t)
                        .map_err(|e| Error::Encode(format!("cannot serialise: {e}")))?,
                ),
                None => None,
            };
            let expect = snap.get(&id).map_or(0, |s| s.rev);
            intent.writes.push(Write { id, expect, task });
        }
        let payload = serde_json::to_vec(&intent).map_err(|e| Error::Encode(e.to_string()))?;
        match kv::put(conn, names, TXN, Bytes::from(payload), Some(rev)) {
            Ok(_) => {}
            Err(Fail::Conflict) => return Ok(false),
            Err(f) => return Err(conn.error(what, f)),
        }
        let mut applied = snap.clone();
        self.roll_forward(names, &intent, &mut applied, what)?;
        self.won(names, &intent, snap, what)
    }

    /// Whether the committed `intent` won every task it wrote: the message
    /// stored right after each write's expected revision is its own
    /// (module docs). `false` when it won none (the pass runs again); an
    /// error when it won some and lost others.
    fn won(
        &self,
        names: &TeamNames,
        intent: &Intent,
        before: &Snapshot,
        what: &str,
    ) -> Result<bool> {
        let conn = self.conn();
        let (mut won, mut lost) = (Vec::new(), Vec::new());
        for w in &intent.writes {
            let had = before.get(&w.id).is_some_and(|s| s.value.is_some());
            if w.task.is_none() && !had {
                continue; // deleting what is not there writes nothing
            }
            let subject = names.key(&task_key(w.id));
            let first = conn
                .first_after(&names.kv_stream, &subject, w.expect)
                .map_err(|f| conn.error(what, f))?;
            if first.id.as_deref() == Some(intent.msg_id(w.id).as_str()) {
                won.push(w.id);
            } else {
                lost.push(w.id);
            }
        }
        match (won.is_empty(), lost.is_empty()) {
            (_, true) => Ok(true),
            (true, false) => {
                tracing::debug!(?lost, "a task pass lost every task it wrote; running it again");
                Ok(false)
            }
            (false, false) => Err(conn.error(
                what,
                Fail::Refused(format!(
                    "another writer changed task(s) {} after this change was committed, which kept task(s) {}: the change was applied only in part; list the tasks and make it again",
                    ids(&lost),
                    ids(&won)
                )),
            )),
        }
    }

    /// Applies the intent's writes whose task still has the expected
    /// revision, and records them in `snap`.
    fn roll_forward(
        &self,
        names: &TeamNames,
        intent: &Intent,
        snap: &mut Snapshot,
        what: &str,
    ) -> Result<()> {
        let conn = self.conn();
        for w in &intent.writes {
            let current = snap.get(&w.id).map_or(0, |s| s.rev);
            if current != w.expect {
                continue; // applied already (or superseded)
            }
            let key = task_key(w.id);
            let id = intent.msg_id(w.id);
            let done = match &w.task {
                Some(t) => {
                    let bytes = super::team::to_json(t)?;
                    kv::put_as(conn, names, &key, bytes.clone(), w.expect, &id).map(|rev| Slot {
                        rev,
                        value: Some(bytes),
                    })
                }
                None if current == 0 || snap.get(&w.id).is_some_and(|s| s.value.is_none()) => {
                    continue
                }
                None => kv::delete_as(conn, names, &key, w.expect, &id)
                    .map(|rev| Slot { rev, value: None }),
            };
            match done {
                Ok(slot) => {
                    snap.insert(w.id, slot);
                }
                // Written since the snapshot (this intent applied by
                // another, or a snapshot behind): read what is there now.
                // Who won is read by the pass that wrote the intent.
                Err(Fail::Conflict) => {
                    let slot = kv::get(conn, names, &key).map_err(|f| conn.error(what, f))?;
                    snap.insert(w.id, slot);
                }
                Err(f) => return Err(conn.error(what, f)),
            }
        }
        Ok(())
    }

    /// The `txn` key: its revision and the intent in it.
    fn intent(&self, team: &str, names: &TeamNames, what: &str) -> Result<(u64, Intent)> {
        let conn = self.conn();
        let slot = kv::get(conn, names, TXN).map_err(|f| conn.error(what, f))?;
        let intent = match &slot.value {
            None => Intent::default(),
            // Without it the highest id is unknown and an id could be
            // reused: refuse, name the key, write nothing.
            Some(raw) => serde_json::from_slice(raw).map_err(|source| Error::Corrupt {
                path: self.location(team, TXN),
                moved_to: None,
                source,
            })?,
        };
        Ok((slot.rev, intent))
    }

    /// Every task key up to `high`, read at once.
    fn snapshot(&self, names: &TeamNames, high: u64, what: &str) -> Result<Snapshot> {
        let conn = self.conn();
        let keys: Vec<String> = (1..=high).map(task_key).collect();
        let slots = kv::get_many(conn, names, &keys).map_err(|f| conn.error(what, f))?;
        Ok((1..=high).zip(slots).collect())
    }
}

/// `#1, #4` for people.
fn ids(ids: &[u64]) -> String {
    ids.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Puts the intent's writes that are not applied yet over `snap`.
fn overlay(snap: &mut Snapshot, intent: &Intent) {
    for w in &intent.writes {
        let Some(slot) = snap.get_mut(&w.id) else {
            continue;
        };
        if slot.rev == w.expect {
            slot.value = w
                .task
                .as_ref()
                .and_then(|t| serde_json::to_vec_pretty(t).ok())
                .map(Bytes::from);
        }
    }
}

/// One pass over a snapshot; writes are kept until the commit.
struct Pass<'a> {
    store: &'a NatsStore,
    team: &'a str,
    names: &'a TeamNames,
    snap: Snapshot,
    high: u64,
    writes: BTreeMap<u64, Option<Task>>,
    set_aside: Vec<u64>,
}

impl Pass<'_> {
    /// Task `n` as this pass sees it.
    fn current(&mut self, n: u64, for_change: bool) -> Result<Option<Task>> {
        if let Some(w) = self.writes.get(&n) {
            return Ok(w.clone());
        }
        let Some(raw) = self.snap.get(&n).and_then(|s| s.value.clone()) else {
            return Ok(None);
        };
        match serde_json::from_slice::<Task>(&raw) {
            Ok(t) => Ok(Some(t)),
            Err(source) => {
                let key = task_key(n);
                let conn = self.store.conn();
                let moved_to = if for_change {
                    match kv::set_aside(conn, self.names, &key, raw) {
                        Ok(aside) => {
                            self.set_aside.push(n);
                            Some(self.store.location(self.team, &aside))
                        }
                        Err(f) => {
                            tracing::warn!(error = %conn.error("set a corrupt task aside", f), "left a corrupt task in place");
                            None
                        }
                    }
                } else {
                    None
                };
                Err(Error::Corrupt {
                    path: self.store.location(self.team, &key),
                    moved_to,
                    source,
                })
            }
        }
    }
}

impl TaskTxn for Pass<'_> {
    fn next_id(&mut self) -> Result<u64> {
        let written = self.writes.keys().next_back().copied().unwrap_or(0);
        let seen = self.snap.keys().next_back().copied().unwrap_or(0);
        Ok(self.high.max(written).max(seen) + 1)
    }

    fn get(&mut self, id: &str) -> Result<Option<Task>> {
        let n = parse_task_id(id)?;
        self.current(n, true)
    }

    fn all(&mut self) -> Result<Vec<Task>> {
        let ids: Vec<u64> = self
            .snap
            .keys()
            .chain(self.writes.keys())
            .copied()
            .collect();
        let mut ids = ids;
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::new();
        for n in ids {
            match self.current(n, false) {
                Ok(Some(t)) => out.push(t),
                Ok(None) => {}
                Err(e) => tracing::warn!("skipping task #{n}: {e}"),
            }
        }
        Ok(out)
    }

    fn put(&mut self, task: &Task) -> Result<()> {
        let n = parse_task_id(&task.id)?;
        self.high = self.high.max(n);
        self.writes.insert(n, Some(task.clone()));
        Ok(())
    }

    fn modify(
        &mut self,
        id: &str,
        f: &mut dyn FnMut(&mut Task) -> Result<bool>,
    ) -> Result<Option<Task>> {
        let n = parse_task_id(id)?;
        let Some(mut task) = self.current(n, true)? else {
            return Ok(None);
        };
        if f(&mut task)? {
            self.writes.insert(n, Some(task.clone()));
        }
        Ok(Some(task))
    }

    fn remove(&mut self, id: &str) -> Result<()> {
        let n = parse_task_id(id)?;
        self.high = self.high.max(n);
        let present = self.writes.get(&n).map_or_else(
            || self.snap.get(&n).is_some_and(|s| s.value.is_some()),
            Option::is_some,
        );
        if present {
            self.writes.insert(n, None);
        }
        Ok(())
    }
}
