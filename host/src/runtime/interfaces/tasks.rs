//! `teamhost:agent/tasks`: the shared task list.
//!
//! Every call passes the sandbox first: `create` is `TaskCreate` for the
//! rules, `get` is `TaskGet`, `list` is `TaskList`, and every change
//! (`update`, `delete`, `add-dependency`, `claim`) is `TaskUpdate`. A deny
//! rule refuses the call before the task list is read or written. `create`
//! is counted against the coordination limits as a task, an `update` that
//! gives the task to another member as a direct message (the assignment
//! lands in its inbox). The texts a `create` or `update` writes count
//! against the tree's `max_team_bytes_total`.

use serde_json::{Map, Value};

use super::convert::{from_wit_task_status, to_wit_task};
use super::{blocking, CoordinationGlue};
use crate::hooks::HookEvent;
use crate::runtime::bindings::tasks::{ClaimError, Host, NewTask, OwnerChange, Task, TaskUpdate};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::bindings::ClaimTrap;
use crate::runtime::GuestError;
use crate::sandbox::{CoordinationKind, TasksCall, TeamAct};
use crate::store::{self, ClaimOutcome, ClaimRefusal};

/// The gate of one `tasks` call.
fn gate(call: TasksCall) -> CoordinationKind {
    CoordinationKind::Tasks(call)
}

fn metadata(json: Option<String>) -> Result<Option<Map<String, Value>>, WitError> {
    match json.map(|s| serde_json::from_str::<Value>(&s)) {
        None => Ok(None),
        Some(Ok(Value::Object(m))) => Ok(Some(m)),
        Some(Ok(_)) => Err(WitError::Invalid("metadata must be a JSON object".into())),
        Some(Err(e)) => Err(WitError::Invalid(format!("metadata is not JSON: {e}"))),
    }
}

impl CoordinationGlue<'_> {
    /// Runs the lead's `TaskCompleted` hooks for task `id` (when it is not
    /// completed yet). A hook exiting 2 refuses the completion: the task stays
    /// open and the guest gets the hook's stderr. Hook failures are told to the
    /// lead and do not stop the completion.
    async fn task_completed_hooks(&mut self, id: &str) -> Result<(), GuestError> {
        let hooks = self.team.hooks.clone();
        let team = self.team.store.clone();
        let task_id = id.to_string();
        let task = blocking(move || team.task(&task_id)).await?;
        if task.status == store::TaskStatus::Completed {
            return Ok(());
        }
        let event = HookEvent::TaskCompleted {
            task_id: task.id.clone(),
            task_subject: task.subject.clone(),
            task_description: task.description.clone(),
            teammate_name: self.fixed.identity.name.clone(),
            team_name: self.fixed.identity.team.clone(),
        };
        if !hooks.wants(&event) {
            return Ok(());
        }
        let outcome = hooks.run(&event).await;
        self.team
            .report_hook_failures(&self.fixed.lead, &outcome)
            .await;
        if outcome.is_blocked() {
            return Err(WitError::Denied(format!(
                "a TaskCompleted hook refused to complete task #{}: {}",
                task.id,
                outcome.message()
            ))
            .into());
        }
        Ok(())
    }
}

impl crate::runtime::TeamSeat {
    /// Tells `lead` about hooks that failed (never fatal).
    pub(crate) async fn report_hook_failures(&self, lead: &str, outcome: &crate::hooks::Outcome) {
        if outcome.failures.is_empty() {
            return;
        }
        let (team, lead) = (self.store.clone(), lead.to_string());
        let text = outcome.failures.join("\n");
        let _ = blocking(move || {
            team.deliver(
                &lead,
                store::OutgoingMessage::new(crate::protocol::HOST_SENDER, text),
            )
            .map(|_| ())
        })
        .await;
    }
}

impl Host for CoordinationGlue<'_> {
    async fn create(&mut self, task: NewTask) -> Result<Task, GuestError> {
        self.permissions
            .authorize_coordination(gate(TasksCall::Create))?;
        let size = task.subject.len()
            + task.description.len()
            + task.active_form.as_ref().map_or(0, String::len)
            + task.metadata.as_ref().map_or(0, String::len);
        self.fixed
            .limits
            .check_message("the task", size)
            .map_err(WitError::Invalid)?;
        let meta = metadata(task.metadata)?;
        self.coordination
            .count_act(&self.fixed.budget, TeamAct::TaskCreate)?;
        self.coordination
            .count_team_bytes(&self.fixed.budget, "the task", size)?;
        let team = self.team.store.clone();
        blocking(move || {
            team.create_task(store::NewTask {
                subject: task.subject,
                description: task.description,
                active_form: task.active_form,
                blocked_by: Vec::new(),
                metadata: meta,
            })
            .map(to_wit_task)
        })
        .await
    }

    async fn get(&mut self, id: String) -> Result<Task, GuestError> {
        self.permissions
            .authorize_coordination(gate(TasksCall::Get))?;
        let team = self.team.store.clone();
        blocking(move || team.task(&id).map(to_wit_task)).await
    }

    async fn list(&mut self) -> Result<Vec<Task>, GuestError> {
        self.permissions
            .authorize_coordination(gate(TasksCall::List))?;
        let team = self.team.store.clone();
        blocking(move || Ok(team.list_tasks()?.into_iter().map(to_wit_task).collect())).await
    }

    async fn update(&mut self, id: String, changes: TaskUpdate) -> Result<Task, GuestError> {
        self.permissions
            .authorize_coordination(gate(TasksCall::Update))?;
        let size = [
            &changes.subject,
            &changes.description,
            &changes.active_form,
            &changes.metadata,
        ]
        .iter()
        .map(|f| f.as_ref().map_or(0, String::len))
        .sum();
        self.fixed
            .limits
            .check_message("the task update", size)
            .map_err(WitError::Invalid)?;
        let meta = metadata(changes.metadata)?;
        let update = store::TaskUpdate {
            subject: changes.subject,
            description: changes.description,
            active_form: changes.active_form,
            status: changes.status.map(from_wit_task_status),
            owner: changes.owner.map(|o| match o {
                OwnerChange::Assign(name) => Some(name),
                OwnerChange::Unassign => None,
            }),
            metadata: meta,
        };
        // Giving a task to another member puts a task_assignment in its
        // inbox: counted as a direct message, so reassigning in a loop is
        // bounded like sending in a loop.
        if let Some(Some(owner)) = &update.owner {
            if *owner != self.fixed.identity.name {
                self.coordination
                    .count_act(&self.fixed.budget, TeamAct::Message)?;
            }
        }
        if size > 0 {
            self.coordination
                .count_team_bytes(&self.fixed.budget, "the task update", size)?;
        }
        if update.status == Some(store::TaskStatus::Completed) {
            self.task_completed_hooks(&id).await?;
        }
        let (team, me) = (self.team.store.clone(), self.fixed.identity.name.clone());
        let claims = self.team.claims.clone();
        let may_claim = update
            .owner
            .as_ref()
            .is_some_and(|o| o.as_deref() == Some(&me))
            || update.status == Some(store::TaskStatus::InProgress);
        blocking(move || {
            // As for `claim`: into the ledger first when the update may make
            // the task its own, then in step with what the update left.
            if let (true, Some(c)) = (may_claim, &claims) {
                c.claimed(&id)?;
            }
            let task = team.update_task(&id, update, &me);
            match &task {
                Ok(task) => record_claim(claims.as_ref(), &me, task),
                Err(_) => {
                    if let (true, Some(c)) = (may_claim, &claims) {
                        c.released(&id)?;
                    }
                }
            }
            task.map(to_wit_task)
        })
        .await
    }

    async fn delete(&mut self, id: String) -> Result<(), GuestError> {
        self.permissions
            .authorize_coordination(gate(TasksCall::Delete))?;
        let team = self.team.store.clone();
        let claims = self.team.claims.clone();
        blocking(move || {
            team.delete_task(&id)?;
            if let Some(claims) = claims {
                claims.released(&id)?;
            }
            Ok(())
        })
        .await
    }

    async fn add_dependency(&mut self, task: String, blocked_by: String) -> Result<(), GuestError> {
        self.permissions
            .authorize_coordination(gate(TasksCall::AddDependency))?;
        let team = self.team.store.clone();
        blocking(move || team.add_dependency(&blocked_by, &task)).await
    }

    async fn claim(&mut self, id: String, check_busy: bool) -> Result<Task, ClaimTrap> {
        self.permissions
            .authorize_coordination(gate(TasksCall::Claim))
            .map_err(ClaimError::Other)?;
        let (team, me) = (self.team.store.clone(), self.fixed.identity.name.clone());
        let claims = self.team.claims.clone();
        let outcome = blocking(move || {
            // Into the ledger before the task file shows the claim (a crash
            // between the two leaves an id the task list does not confirm,
            // which a resume ignores); out again if the claim is refused.
            if let Some(c) = &claims {
                c.claimed(&id)?;
            }
            let outcome = team.claim_task(&id, &me, check_busy);
            match &outcome {
                Ok(ClaimOutcome::Claimed(task)) => record_claim(claims.as_ref(), &me, task),
                _ => {
                    if let Some(c) = &claims {
                        c.released(&id)?;
                    }
                }
            }
            outcome
        })
        .await;
        match outcome {
            Err(e) => Err(e.into()),
            Ok(ClaimOutcome::Claimed(t)) => Ok(to_wit_task(t)),
            Ok(ClaimOutcome::Refused {
                reason,
                task,
                blockers,
                busy_with,
            }) => Err(match reason {
                ClaimRefusal::TaskNotFound => ClaimError::TaskNotFound,
                ClaimRefusal::AlreadyClaimed => {
                    ClaimError::AlreadyClaimed(task.and_then(|t| t.owner).unwrap_or_default())
                }
                ClaimRefusal::AlreadyResolved => ClaimError::AlreadyResolved,
                ClaimRefusal::Blocked => ClaimError::Blocked(blockers),
                ClaimRefusal::AgentBusy => ClaimError::AgentBusy(busy_with),
            }
            .into()),
        }
    }

    fn convert_claim_error(&mut self, err: ClaimTrap) -> wasmtime::Result<ClaimError> {
        err.into_wit()
    }
}

/// Keeps the host's record of `me`'s claims in step with what its own call
/// left `task` as: its own and in progress is a claim; anything else lets
/// the task go. Only the teammate's own calls come here: a peer's update
/// of this task never makes it a claim of `me`'s (see
/// [`ClaimLedger`](crate::home::kept::ClaimLedger)).
fn record_claim(claims: Option<&crate::home::kept::ClaimLedger>, me: &str, task: &store::Task) {
    let Some(claims) = claims else {
        return;
    };
    let mine = task.owner.as_deref() == Some(me) && task.status == store::TaskStatus::InProgress;
    let recorded = if mine {
        claims.claimed(&task.id)
    } else {
        claims.released(&task.id)
    };
    if let Err(e) = recorded {
        tracing::warn!(teammate = %me, task = %task.id, error = %e,
            "the host's record of the teammate's claims was not updated");
    }
}
