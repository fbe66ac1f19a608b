//! `tasks/{team}/{id}.json`: the shared task list.
//!
//! Ids are `"1"`, `"2"`, …: a new id is `max(ids on disk, .highwatermark) + 1`
//! and is never reused (deleting bumps `.highwatermark`, a bare decimal without
//! newline, as the reference writes it). Every mutation holds the list lock
//! (`.lock` → the reference's `.lock.lock` directory) for its whole cycle, plus
//! the per-task lock (`{id}.json.lock`) of each file it rewrites, so neither
//! another teamhost process nor a Claude Code process can interleave.
//!
//! Optional keys (`activeForm`, `owner`, `metadata`) are omitted when unset and
//! keys keep the reference's order; unknown keys are preserved.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::atomic::{read_json, read_json_or_move_aside, write_atomic, write_json};
use super::lock::with_lock;
use super::mailbox::OutgoingMessage;
use super::paths::parse_task_id;
use super::{StoreEvent, Team};
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
            return Err(Error::Invalid("a task needs a non-empty subject".into()));
        }
        for b in &new.blocked_by {
            parse_task_id(b)?;
        }
        let task = self.with_list_lock(|| {
            let id = (self.max_task_id()? + 1).to_string();
            for b in dedup(&new.blocked_by) {
                self.load(&b)?; // every blocker must exist before anything is written
            }
            let task = Task {
                id: id.clone(),
                subject: new.subject,
                description: new.description,
                active_form: new.active_form,
                owner: None,
                status: TaskStatus::Pending,
                blocks: Vec::new(),
                blocked_by: dedup(&new.blocked_by),
                metadata: new.metadata,
                extra: Map::new(),
            };
            self.save(&task)?;
            for b in &task.blocked_by {
                self.modify(b, |t| {
                    push_unique(&mut t.blocks, &id);
                    Ok(((), true))
                })?;
            }
            Ok(task)
        })?;
        self.tasks_changed();
        Ok(task)
    }

    /// Reads one task ([`Error::TaskNotFound`] when absent).
    pub fn task(&self, id: &str) -> Result<Task> {
        read_json(&self.paths.task(id)?)?.ok_or_else(|| self.task_not_found(id))
    }

    /// Every task, by numeric id. Files that are not `{id}.json` are skipped;
    /// a task file that does not parse is skipped with a warning naming it.
    pub fn list_tasks(&self) -> Result<Vec<Task>> {
        let mut ids: Vec<u64> = self.task_file_ids(false)?;
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            match read_json::<Task>(&self.paths.task(&id.to_string())?) {
                Ok(Some(t)) => out.push(t),
                Ok(None) => {} // deleted meanwhile
                Err(e) => tracing::warn!("skipping task #{id}: {e}"),
            }
        }
        Ok(out)
    }

    /// Applies `update` to task `id` and returns the task as written (or, for
    /// status `deleted`, as it was). `by` names who is acting (the assigner in
    /// a `task_assignment`).
    pub fn update_task(&self, id: &str, update: TaskUpdate, by: &str) -> Result<Task> {
        if matches!(&update.status, Some(TaskStatus::Other(s)) if s == "deleted") {
            return self.delete_task(id);
        }
        let (task, assigned) = self.with_list_lock(|| {
            self.modify(id, |task| {
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
                let assigned = task.owner.is_some() && task.owner != before_owner;
                Ok(((task.clone(), assigned), true))
            })
        })?;
        self.tasks_changed();
        if assigned {
            self.notify_assignment(&task, by)?;
        }
        Ok(task)
    }

    /// Deletes task `id`: removes its file, raises `.highwatermark` so the id is
    /// never reused, and removes the id from every other task's dependencies.
    /// Returns the task as it was.
    pub fn delete_task(&self, id: &str) -> Result<Task> {
        let task = self.with_list_lock(|| {
            let task = self.load(id)?;
            let n = parse_task_id(id)?;
            if n > self.highwatermark()? {
                write_atomic(&self.paths.highwatermark(), n.to_string().as_bytes())?;
            }
            let path = self.paths.task(id)?;
            with_lock(&path, self.lock_opts(), || {
                std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))
            })?;
            for other in self.list_tasks()? {
                if other.blocks.iter().any(|b| b == id) || other.blocked_by.iter().any(|b| b == id)
                {
                    self.modify(&other.id, |t| {
                        t.blocks.retain(|b| b != id);
                        t.blocked_by.retain(|b| b != id);
                        Ok(((), true))
                    })?;
                }
            }
            Ok(task)
        })?;
        self.tasks_changed();
        Ok(task)
    }

    /// Records that `blocker` blocks `blocked`, on both tasks. Refuses a task
    /// blocking itself and any dependency that would make a cycle.
    pub fn add_dependency(&self, blocker: &str, blocked: &str) -> Result<()> {
        if blocker == blocked {
            return Err(Error::Invalid(format!(
                "task #{blocker} cannot block itself"
            )));
        }
        self.with_list_lock(|| {
            self.load(blocker)?;
            self.load(blocked)?;
            if self.reaches(blocked, blocker)? {
                return Err(Error::Invalid(format!(
                    "task #{blocked} already (transitively) blocks #{blocker}; adding #{blocker} → #{blocked} would make a cycle"
                )));
            }
            self.modify(blocker, |a| Ok((push_unique(&mut a.blocks, blocked), true)))?;
            self.modify(blocked, |b| Ok((push_unique(&mut b.blocked_by, blocker), true)))
        })?;
        self.tasks_changed();
        Ok(())
    }

    /// Claims task `id` for `agent`: owner set, status `in_progress`. With
    /// `check_busy`, refuses when `agent` owns another unfinished task.
    pub fn claim_task(&self, id: &str, agent: &str, check_busy: bool) -> Result<ClaimOutcome> {
        let refuse = |reason, task: &Task, blockers, busy_with| ClaimOutcome::Refused {
            reason,
            task: Some(task.clone()),
            blockers,
            busy_with,
        };
        let outcome = self.with_list_lock(|| {
            let all = self.list_tasks()?;
            let result = self.modify(id, |task| {
                if task.status == TaskStatus::Completed {
                    return Ok((
                        refuse(ClaimRefusal::AlreadyResolved, task, vec![], vec![]),
                        false,
                    ));
                }
                if task.owner.as_deref().is_some_and(|o| o != agent) {
                    return Ok((
                        refuse(ClaimRefusal::AlreadyClaimed, task, vec![], vec![]),
                        false,
                    ));
                }
                let blockers = open_blockers(task, &all);
                if !blockers.is_empty() {
                    return Ok((refuse(ClaimRefusal::Blocked, task, blockers, vec![]), false));
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
                        return Ok((refuse(ClaimRefusal::AgentBusy, task, vec![], busy), false));
                    }
                }
                task.owner = Some(agent.to_string());
                task.status = TaskStatus::InProgress;
                Ok((ClaimOutcome::Claimed(task.clone()), true))
            });
            match result {
                Err(Error::TaskNotFound { .. }) => Ok(ClaimOutcome::Refused {
                    reason: ClaimRefusal::TaskNotFound,
                    task: None,
                    blockers: vec![],
                    busy_with: vec![],
                }),
                other => other,
            }
        })?;
        if matches!(outcome, ClaimOutcome::Claimed(_)) {
            self.tasks_changed();
        }
        Ok(outcome)
    }

    /// The task an idle teammate would pick up: the lowest id that is
    /// `pending`, has no owner, and whose blockers are all completed (a blocker
    /// that no longer exists does not block).
    pub fn find_claimable(&self) -> Result<Option<Task>> {
        Ok(claimable(&self.list_tasks()?).cloned())
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
        let tasks = self.with_list_lock(|| {
            let mut done = Vec::new();
            for t in self.list_tasks()? {
                let changed = self.modify(&t.id, |t| {
                    let owned = t
                        .owner
                        .as_deref()
                        .is_some_and(|o| o == name || o == agent_id);
                    if !owned || t.status == TaskStatus::Completed {
                        return Ok((false, false));
                    }
                    t.owner = None;
                    t.status = TaskStatus::Pending;
                    Ok((true, true))
                })?;
                if changed {
                    done.push((t.id.clone(), t.subject.clone()));
                }
            }
            Ok(done)
        })?;
        if !tasks.is_empty() {
            self.tasks_changed();
        }
        let notification = unassign_notification(name, terminated, &tasks);
        Ok(Unassigned {
            tasks,
            notification,
        })
    }

    // --- internals ---------------------------------------------------------

    fn with_list_lock<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let target = self.paths.tasks_lock_target();
        if !target.exists() {
            // The reference keeps `.lock` as an empty regular file.
            std::fs::create_dir_all(self.paths.tasks_dir())
                .map_err(|e| Error::io("create", self.paths.tasks_dir(), e))?;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&target)
                .map_err(|e| Error::io("create", &target, e))?;
        }
        with_lock(&target, self.lock_opts(), f)
    }

    /// Loads a task for modification; a corrupt file is moved aside (its id
    /// stays used) and reported.
    fn load(&self, id: &str) -> Result<Task> {
        match read_json_or_move_aside(&self.paths.task(id)?) {
            Ok(Some(t)) => Ok(t),
            Ok(None) => Err(self.task_not_found(id)),
            Err(e) => Err(e),
        }
    }

    /// Writes a new task file under its per-task lock.
    fn save(&self, task: &Task) -> Result<()> {
        let path = self.paths.task(&task.id)?;
        with_lock(&path, self.lock_opts(), || write_json(&path, task))
    }

    /// Loads task `id`, lets `f` change it and writes it back when `f` says so,
    /// all under the per-task lock (the reference's `{id}.json.lock`), so a
    /// Claude Code process updating the same task cannot interleave.
    fn modify<T>(&self, id: &str, f: impl FnOnce(&mut Task) -> Result<(T, bool)>) -> Result<T> {
        let path = self.paths.task(id)?;
        with_lock(&path, self.lock_opts(), || {
            let mut task = self.load(id)?;
            let (out, write) = f(&mut task)?;
            if write {
                write_json(&path, &task)?;
            }
            Ok(out)
        })
    }

    fn highwatermark(&self) -> Result<u64> {
        let path = self.paths.highwatermark();
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(s.trim().parse().unwrap_or_else(|_| {
                tracing::warn!(file = %path.display(), "ignoring unreadable .highwatermark");
                0
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(Error::io("read", path, e)),
        }
    }

    /// Highest id ever used: task files, quarantined task files, high-water mark.
    fn max_task_id(&self) -> Result<u64> {
        let on_disk = self.task_file_ids(true)?.into_iter().max().unwrap_or(0);
        Ok(on_disk.max(self.highwatermark()?))
    }

    /// Ids of `{id}.json` files; with `include_aside`, also of
    /// `{id}.json.corrupt-*` files (so a quarantined id is never reused).
    fn task_file_ids(&self, include_aside: bool) -> Result<Vec<u64>> {
        let dir = self.paths.tasks_dir();
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("read", dir, e)),
        };
        Ok(entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|name| {
                let (stem, rest) = name.split_once(".json")?;
                let counts = rest.is_empty() || (include_aside && rest.starts_with(".corrupt-"));
                counts.then(|| parse_task_id(stem).ok()).flatten()
            })
            .collect())
    }

    /// Whether `from` reaches `to` through `blocks` edges.
    fn reaches(&self, from: &str, to: &str) -> Result<bool> {
        let all = self.list_tasks()?;
        let mut stack = vec![from.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(id) = stack.pop() {
            if id == to {
                return Ok(true);
            }
            if !seen.insert(id.clone()) {
                continue;
            }
            if let Some(t) = all.iter().find(|t| t.id == id) {
                stack.extend(t.blocks.iter().cloned());
            }
        }
        Ok(false)
    }

    fn notify_assignment(&self, task: &Task, by: &str) -> Result<()> {
        let Some(owner) = &task.owner else {
            return Ok(());
        };
        let text = TaskAssignment::new(&task.id, &task.subject, &task.description, by).to_text();
        self.deliver(owner, OutgoingMessage::new(by, text))?;
        Ok(())
    }

    fn tasks_changed(&self) {
        self.emit(StoreEvent::TasksChanged {
            team: self.name().into(),
        });
    }

    fn task_not_found(&self, id: &str) -> Error {
        Error::TaskNotFound {
            team: self.name().to_string(),
            id: id.to_string(),
        }
    }
}

/// The lowest-id claimable task of `tasks` (see [`Team::find_claimable`]).
pub fn claimable(tasks: &[Task]) -> Option<&Task> {
    tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Pending && t.owner.is_none())
        .filter(|t| open_blockers(t, tasks).is_empty())
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

fn push_unique(v: &mut Vec<String>, id: &str) {
    if !v.iter().any(|x| x == id) {
        v.push(id.to_string());
    }
}

fn dedup(ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        push_unique(&mut out, id);
    }
    out
}
