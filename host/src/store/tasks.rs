//! The shared task list and its rules: ids, dependencies, claims, what a
//! teammate leaving gives back. Kept by a backend as one document per task
//! (`tasks/{team}/{id}.json` in the file store).
//!
//! Ids are `"1"`, `"2"`, …: a new id is one more than any id ever used, and
//! is never reused. Every change runs inside one [`TaskTxn`] pass, which the
//! backend serialises with every other writer of the list (the file store:
//! the reference's list lock plus the per-task lock of each file it
//! rewrites, so neither another teamhost process nor a Claude Code process
//! can interleave).
//!
//! Optional keys (`activeForm`, `owner`, `metadata`) are omitted when unset and
//! keys keep the reference's order; unknown keys are preserved.
//!
//! [`TaskTxn`]: super::backend::TaskTxn

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::mailbox::OutgoingMessage;
use super::names::parse_task_id;
use super::Team;
use crate::error::{Error, Result};
use crate::protocol::{TaskAssignment, WireMessage};

/// A task's status. Statuses other programs may invent are kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum TaskStatus {
    /// Not started.
    Pending,
    /// Someone is on it.
    InProgress,
    /// Done.
    Completed,
    /// Any other status string, preserved as written.
    Other(String),
}

impl TaskStatus {
    /// The wire string (`pending`, `in_progress`, `completed`, …).
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Other(s) => s,
        }
    }
}

impl From<String> for TaskStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "pending" => TaskStatus::Pending,
            "in_progress" => TaskStatus::InProgress,
            "completed" => TaskStatus::Completed,
            _ => TaskStatus::Other(s),
        }
    }
}

impl From<TaskStatus> for String {
    fn from(s: TaskStatus) -> String {
        s.as_str().to_string()
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Decimal id, never reused.
    pub id: String,
    /// Imperative title.
    pub subject: String,
    /// Details and acceptance criteria.
    #[serde(default)]
    pub description: String,
    /// Text shown while in progress ("Compiling wasm module").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    /// Owner's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Status.
    pub status: TaskStatus,
    /// Ids of tasks this one blocks.
    #[serde(default)]
    pub blocks: Vec<String>,
    /// Ids of tasks blocking this one.
    #[serde(default)]
    pub blocked_by: Vec<String>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Fields written by other programs, preserved as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What [`Team::create_task`] needs. Only `subject` is required.
#[derive(Debug, Clone, Default)]
pub struct NewTask {
    /// Imperative title.
    pub subject: String,
    /// Details.
    pub description: String,
    /// Present-continuous form.
    pub active_form: Option<String>,
    /// Blocking task ids (must exist).
    pub blocked_by: Vec<String>,
    /// Initial metadata.
    pub metadata: Option<Map<String, Value>>,
}

/// A partial change to a task. `None` leaves a field as it is. The id cannot
/// be changed: it is not a field here.
#[derive(Debug, Clone, Default)]
pub struct TaskUpdate {
    /// New subject.
    pub subject: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New active form.
    pub active_form: Option<String>,
    /// New status. `Other("deleted")` deletes the task, as in the reference.
    pub status: Option<TaskStatus>,
    /// `Some(Some(name))` sets the owner (and sends a `task_assignment` to that
    /// inbox when it changes); `Some(None)` clears it.
    pub owner: Option<Option<String>>,
    /// Merged into metadata; a `null` value deletes that key.
    pub metadata: Option<Map<String, Value>>,
}

/// Why a claim was refused (the reference's reason strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// No such task.
    TaskNotFound,
    /// Someone else owns it.
    AlreadyClaimed,
    /// It is completed.
    AlreadyResolved,
    /// A blocker is not completed.
    Blocked,
    /// The claimant owns other unfinished tasks (only with the busy check).
    AgentBusy,
}

impl ClaimRefusal {
    /// The reference's reason string (`task_not_found`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimRefusal::TaskNotFound => "task_not_found",
            ClaimRefusal::AlreadyClaimed => "already_claimed",
            ClaimRefusal::AlreadyResolved => "already_resolved",
            ClaimRefusal::Blocked => "blocked",
            ClaimRefusal::AgentBusy => "agent_busy",
        }
    }
}

/// The result of [`Team::claim_task`].
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimOutcome {
    /// The task now belongs to the claimant and is `in_progress`.
    Claimed(Task),
    /// Refused; `blockers` lists unfinished blockers (for `Blocked`) and
    /// `busy_with` the claimant's unfinished tasks (for `AgentBusy`).
    Refused {
        /// Why.
        reason: ClaimRefusal,
        /// The task as it is, when it exists.
        task: Option<Task>,
        /// Unfinished blocking task ids.
        blockers: Vec<String>,
        /// The claimant's other unfinished task ids.
        busy_with: Vec<String>,
    },
}

/// What [`Team::unassign_agent`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unassigned {
    /// `(id, subject)` of every task returned to `pending`.
    pub tasks: Vec<(String, String)>,
    /// The reference's notification text for the lead.
    pub notification: String,
}

impl Team {
    /// Creates a task with the next free id. Blockers must exist; each gets the
    /// new id in its `blocks`.
    pub fn create_task(&self, new: NewTask) -> Result<Task> {
        if new.subject.trim().is_empty() {
            return Err(Error::StoreRule("a task needs a non-empty subject".into()));
        }
        for b in &new.blocked_by {
            parse_task_id(b)?;
        }
        let blocked_by = dedup(&new.blocked_by);
        let mut made = None;
        self.write_tasks(&mut |txn| {
            let id = txn.next_id()?.to_string();
            for b in &blocked_by {
                // Every blocker must exist before anything is written.
                if txn.get(b)?.is_none() {
                    return Err(self.task_not_found(b));
                }
            }
            let task = Task {
                id: id.clone(),
                subject: new.subject.clone(),
                description: new.description.clone(),
                active_form: new.active_form.clone(),
                owner: None,
                status: TaskStatus::Pending,
                blocks: Vec::new(),
                blocked_by: blocked_by.clone(),
                metadata: new.metadata.clone(),
                extra: Map::new(),
            };
            txn.put(&task)?;
            for b in &blocked_by {
                txn.modify(b, &mut |t| Ok(push_unique(&mut t.blocks, &id)))?;
            }
            made = Some(task);
            Ok(())
        })?;
        Ok(made.expect("a successful update made the task"))
    }

    /// Reads one task ([`Error::TaskNotFound`] when absent).
    pub fn task(&self, id: &str) -> Result<Task> {
        parse_task_id(id)?;
        self.backend()
            .read_task(self.name(), id)?
            .ok_or_else(|| self.task_not_found(id))
    }

    /// Every task, by numeric id. A task that cannot be read is skipped
    /// with a warning naming it.
    pub fn list_tasks(&self) -> Result<Vec<Task>> {
        self.backend().list_tasks(self.name())
    }

    /// Applies `update` to task `id` and returns the task as written (or, for
    /// status `deleted`, as it was). `by` names who is acting (the assigner in
    /// a `task_assignment`).
    pub fn update_task(&self, id: &str, update: TaskUpdate, by: &str) -> Result<Task> {
        if matches!(&update.status, Some(TaskStatus::Other(s)) if s == "deleted") {
            return self.delete_task(id);
        }
        parse_task_id(id)?;
        let mut result = None;
        self.write_tasks(&mut |txn| {
            let mut assigned = false;
            let task = txn.modify(id, &mut |task| {
                let update = update.clone();
                let before_owner = task.owner.clone();
                if let Some(s) = update.subject {
                    task.subject = s;
                }
                if let Some(d) = update.description {
                    task.description = d;
                }
                if let Some(a) = update.active_form {
                    task.active_form = Some(a);
                }
                if let Some(s) = update.status {
                    task.status = s;
                }
                if let Some(o) = update.owner {
                    task.owner = o;
                }
                if let Some(patch) = update.metadata {
                    let meta = task.metadata.get_or_insert_with(Map::new);
                    for (k, v) in patch {
                        if v.is_null() {
                            meta.remove(&k);
                        } else {
                            meta.insert(k, v);
                        }
                    }
                }
                assigned = task.owner.is_some() && task.owner != before_owner;
                Ok(true)
            })?;
            result = Some((task.ok_or_else(|| self.task_not_found(id))?, assigned));
            Ok(())
        })?;
        let (task, assigned) = result.expect("a successful update changed the task");
        if assigned {
            self.notify_assignment(&task, by)?;
        }
        Ok(task)
    }

    /// Deletes task `id`: removes it, keeps its id from ever being reused,
    /// and removes the id from every other task's dependencies. Returns the
    /// task as it was.
    pub fn delete_task(&self, id: &str) -> Result<Task> {
        parse_task_id(id)?;
        let mut gone = None;
        self.write_tasks(&mut |txn| {
            let task = txn.get(id)?.ok_or_else(|| self.task_not_found(id))?;
            txn.remove(id)?;
            for other in txn.all()? {
                if other.blocks.iter().any(|b| b == id) || other.blocked_by.iter().any(|b| b == id)
                {
                    txn.modify(&other.id, &mut |t| {
                        t.blocks.retain(|b| b != id);
                        t.blocked_by.retain(|b| b != id);
                        Ok(true)
                    })?;
                }
            }
            gone = Some(task);
            Ok(())
        })?;
        Ok(gone.expect("a successful update found the task"))
    }

    /// Records that `blocker` blocks `blocked`, on both tasks. Refuses a task
    /// blocking itself and any dependency that would make a cycle.
    pub fn add_dependency(&self, blocker: &str, blocked: &str) -> Result<()> {
        if blocker == blocked {
            return Err(Error::StoreRule(format!(
                "task #{blocker} cannot block itself"
            )));
        }
        parse_task_id(blocker)?;
        parse_task_id(blocked)?;
        self.write_tasks(&mut |txn| {
            for id in [blocker, blocked] {
                if txn.get(id)?.is_none() {
                    return Err(self.task_not_found(id));
                }
            }
            if reaches(&txn.all()?, blocked, blocker) {
                return Err(Error::StoreRule(format!(
                    "task #{blocked} already (transitively) blocks #{blocker}; adding #{blocker} → #{blocked} would make a cycle"
                )));
            }
            txn.modify(blocker, &mut |a| Ok(push_unique(&mut a.blocks, blocked)))?;
            txn.modify(blocked, &mut |b| Ok(push_unique(&mut b.blocked_by, blocker)))?;
            Ok(())
        })?;
        Ok(())
    }

    /// Claims task `id` for `agent`: owner set, status `in_progress`. With
    /// `check_busy`, refuses when `agent` owns another unfinished task.
    pub fn claim_task(&self, id: &str, agent: &str, check_busy: bool) -> Result<ClaimOutcome> {
        parse_task_id(id)?;
        let refuse = |reason, task: &Task, blockers, busy_with| ClaimOutcome::Refused {
            reason,
            task: Some(task.clone()),
            blockers,
            busy_with,
        };
        let not_found = ClaimOutcome::Refused {
            reason: ClaimRefusal::TaskNotFound,
            task: None,
            blockers: vec![],
            busy_with: vec![],
        };
        let mut outcome = None;
        self.write_tasks(&mut |txn| {
            let all = txn.all()?;
            let mut decided = not_found.clone();
            txn.modify(id, &mut |task| {
                if task.status == TaskStatus::Completed {
                    decided = refuse(ClaimRefusal::AlreadyResolved, task, vec![], vec![]);
                    return Ok(false);
                }
                if task.owner.as_deref().is_some_and(|o| o != agent) {
                    decided = refuse(ClaimRefusal::AlreadyClaimed, task, vec![], vec![]);
                    return Ok(false);
                }
                let blockers = open_blockers(task, &all);
                if !blockers.is_empty() {
                    decided = refuse(ClaimRefusal::Blocked, task, blockers, vec![]);
                    return Ok(false);
                }
                if check_busy {
                    let busy: Vec<String> = all
                        .iter()
                        .filter(|t| {
                            t.id != task.id
                                && t.status != TaskStatus::Completed
                                && t.owner.as_deref() == Some(agent)
                        })
                        .map(|t| t.id.clone())
                        .collect();
                    if !busy.is_empty() {
                        decided = refuse(ClaimRefusal::AgentBusy, task, vec![], busy);
                        return Ok(false);
                    }
                }
                task.owner = Some(agent.to_string());
                task.status = TaskStatus::InProgress;
                decided = ClaimOutcome::Claimed(task.clone());
                Ok(true)
            })?;
            outcome = Some(decided);
            Ok(())
        })?;
        let outcome = outcome.expect("a successful update decided the claim");
        Ok(outcome)
    }

    /// The task an idle teammate would pick up: the lowest id that is
    /// `pending`, has no owner, and whose blockers are all completed (a blocker
    /// that no longer exists does not block).
    pub fn find_claimable(&self) -> Result<Option<Task>> {
        self.backend().find_claimable(self.name())
    }

    /// Claims the task an idle teammate picks up — the lowest-id claimable
    /// one ([`Team::find_claimable`]) — for `agent`, in one locked pass: no
    /// other claimer can take it between the choice and the claim. `None`
    /// when there is none, or when `agent` owns an unfinished task already
    /// (the busy check).
    pub fn claim_next(&self, agent: &str) -> Result<Option<Task>> {
        self.claim_next_noting(agent, &mut |_| Ok(()))
    }

    /// [`Team::claim_next`], calling `note` with the task's id inside the
    /// locked pass, after the choice and before the claim is written: what
    /// `note` records (the host's claim ledger) is on disk before anyone,
    /// a crash included, can see the claim. An error from `note` leaves the
    /// task unclaimed. `note` may run more than once for one claim (a store
    /// that retries its pass).
    pub fn claim_next_noting(
        &self,
        agent: &str,
        note: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<Option<Task>> {
        let mut claimed = None;
        self.write_tasks(&mut |txn| {
            claimed = None;
            let mut pick = None;
            txn.scan(&mut |all| {
                let busy = all.iter().any(|t| {
                    t.status != TaskStatus::Completed && t.owner.as_deref() == Some(agent)
                });
                pick = if busy {
                    None
                } else {
                    claimable_among(all).map(|t| t.id.clone())
                };
            })?;
            let Some(id) = pick else {
                return Ok(());
            };
            let mut took = false;
            let task = txn.modify(&id, &mut |task| {
                // As listed, since the list lock keeps other claimers out;
                // checked all the same.
                took = task.status == TaskStatus::Pending && task.owner.is_none();
                if took {
                    note(&task.id)?;
                    task.owner = Some(agent.to_string());
                    task.status = TaskStatus::InProgress;
                }
                Ok(took)
            })?;
            claimed = task.filter(|_| took);
            Ok(())
        })?;
        Ok(claimed)
    }

    /// Returns every unfinished task owned by `name` (or `agent_id`) to
    /// `pending` without owner, as the reference does when a teammate shuts
    /// down (`terminated: false`) or is killed (`true`).
    pub fn unassign_agent(
        &self,
        name: &str,
        agent_id: &str,
        terminated: bool,
    ) -> Result<Unassigned> {
        let mut tasks = Vec::new();
        let owned = |t: &Task| {
            t.owner
                .as_deref()
                .is_some_and(|o| o == name || o == agent_id)
        };
        // Most teammates leave owning nothing: then no locked pass at all.
        // (A task assigned to it from now on races its leaving either way.)
        if !self
            .list_tasks()?
            .iter()
            .any(|t| owned(t) && t.status != TaskStatus::Completed)
        {
            return Ok(Unassigned {
                notification: unassign_notification(name, terminated, &tasks),
                tasks,
            });
        }
        self.write_tasks(&mut |txn| {
            tasks.clear();
            // Only the tasks it owns are touched (each re-checked under its
            // own lock): the others are neither locked nor rewritten.
            for t in txn.all()?.into_iter().filter(owned) {
                let mut changed = false;
                txn.modify(&t.id, &mut |t| {
                    changed = owned(t) && t.status != TaskStatus::Completed;
                    if changed {
                        t.owner = None;
                        t.status = TaskStatus::Pending;
                    }
                    Ok(changed)
                })?;
                if changed {
                    tasks.push((t.id.clone(), t.subject.clone()));
                }
            }
            Ok(())
        })?;
        let notification = unassign_notification(name, terminated, &tasks);
        Ok(Unassigned {
            tasks,
            notification,
        })
    }

    // --- internals ---------------------------------------------------------

    fn notify_assignment(&self, task: &Task, by: &str) -> Result<()> {
        let Some(owner) = &task.owner else {
            return Ok(());
        };
        // Taking a task oneself is no news to oneself: a task_assignment
        // would cost the taker a turn (and the lead a second idle
        // notification) for nothing.
        if owner == by || *owner == format!("{by}@{}", self.name()) {
            return Ok(());
        }
        let text = TaskAssignment::new(&task.id, &task.subject, &task.description, by).to_text();
        self.deliver(owner, OutgoingMessage::new(by, text))?;
        Ok(())
    }

    pub(crate) fn task_not_found(&self, id: &str) -> Error {
        Error::TaskNotFound {
            team: self.name().to_string(),
            id: id.to_string(),
        }
    }
}

/// Whether `from` reaches `to` through `blocks` edges of `all`.
fn reaches(all: &[Task], from: &str, to: &str) -> bool {
    let mut stack = vec![from.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(id) = stack.pop() {
        if id == to {
            return true;
        }
        if !seen.insert(id.clone()) {
            continue;
        }
        if let Some(t) = all.iter().find(|t| t.id == id) {
            stack.extend(t.blocks.iter().cloned());
        }
    }
    false
}

/// The lowest-id claimable task of `tasks` (see [`Team::find_claimable`]).
pub fn claimable(tasks: &[Task]) -> Option<&Task> {
    let all: Vec<&Task> = tasks.iter().collect();
    claimable_among(&all)
}

/// [`claimable`] over borrowed tasks: the lowest-id task that is `pending`,
/// has no owner and no unfinished blocker. Linear in the tasks and their
/// dependencies.
pub fn claimable_among<'a>(tasks: &[&'a Task]) -> Option<&'a Task> {
    let unfinished: HashSet<&str> = tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Completed)
        .map(|t| t.id.as_str())
        .collect();
    tasks
        .iter()
        .copied()
        .filter(|t| t.status == TaskStatus::Pending && t.owner.is_none())
        .filter(|t| !t.blocked_by.iter().any(|b| unfinished.contains(b.as_str())))
        .min_by_key(|t| parse_task_id(&t.id).unwrap_or(u64::MAX))
}

/// Ids in `task.blocked_by` that are still unfinished tasks of `all` (a
/// blocker that no longer exists does not block).
pub fn open_blockers(task: &Task, all: &[Task]) -> Vec<String> {
    task.blocked_by
        .iter()
        .filter(|b| {
            all.iter()
                .any(|t| &t.id == *b && t.status != TaskStatus::Completed)
        })
        .cloned()
        .collect()
}

/// The reference's text telling the lead a teammate left and what it dropped.
pub fn unassign_notification(name: &str, terminated: bool, tasks: &[(String, String)]) -> String {
    let mut msg = format!(
        "{name} {}.",
        if terminated {
            "was terminated"
        } else {
            "has shut down"
        }
    );
    if !tasks.is_empty() {
        let list: Vec<String> = tasks
            .iter()
            .map(|(id, subject)| format!("#{id} \"{subject}\""))
            .collect();
        msg.push_str(&format!(
            " {} task(s) were unassigned: {}. Use TaskList to check availability and TaskUpdate with owner to reassign them to idle teammates.",
            tasks.len(),
            list.join(", ")
        ));
    }
    msg
}

/// Adds `id` to `v` unless it is there; whether it was added.
fn push_unique(v: &mut Vec<String>, id: &str) -> bool {
    let add = !v.iter().any(|x| x == id);
    if add {
        v.push(id.to_string());
    }
    add
}

fn dedup(ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        push_unique(&mut out, id);
    }
    out
}
