//! `teamhost task create|list|get|update|claim|delete`.

use crate::protocol::describe::printable_line;
use clap::Subcommand;
use serde_json::{json, Map, Value};

use super::output::{body, BODY_INDENT};
use super::{Output, TeamArg};
use crate::store::config::LEAD_NAME;
use crate::store::{ClaimOutcome, NewTask, Store, Task, TaskStatus, TaskUpdate};

/// Task commands.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task with the next free id.
    Create {
        #[command(flatten)]
        team: TeamArg,
        /// Imperative title ("Run the tests").
        subject: String,
        /// Details and acceptance criteria.
        #[arg(long, default_value = "")]
        description: String,
        /// Text shown while in progress ("Running the tests").
        #[arg(long)]
        active_form: Option<String>,
        /// Ids of tasks that must complete first, comma-separated.
        #[arg(long, value_delimiter = ',', value_name = "IDS")]
        blocked_by: Vec<String>,
        /// Assign it right away (sends a task_assignment to that inbox).
        #[arg(long)]
        owner: Option<String>,
        /// Who is assigning.
        #[arg(long, default_value = LEAD_NAME)]
        by: String,
    },
    /// List every task.
    List {
        #[command(flatten)]
        team: TeamArg,
    },
    /// Show one task.
    Get {
        #[command(flatten)]
        team: TeamArg,
        /// Task id.
        id: String,
    },
    /// Change fields of a task (status `deleted` deletes it).
    Update {
        #[command(flatten)]
        team: TeamArg,
        /// Task id.
        id: String,
        /// New subject.
        #[arg(long)]
        subject: Option<String>,
        /// New description.
        #[arg(long)]
        description: Option<String>,
        /// New active form.
        #[arg(long)]
        active_form: Option<String>,
        /// pending, in_progress, completed or deleted.
        #[arg(long)]
        status: Option<String>,
        /// New owner (sends a task_assignment to that inbox).
        #[arg(long, conflicts_with = "no_owner")]
        owner: Option<String>,
        /// Clear the owner.
        #[arg(long)]
        no_owner: bool,
        /// Metadata to merge, as a JSON object; a null value deletes a key.
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
        /// Ids that this task now depends on, comma-separated.
        #[arg(long, value_delimiter = ',', value_name = "IDS")]
        blocked_by: Vec<String>,
        /// Who is acting.
        #[arg(long, default_value = LEAD_NAME)]
        by: String,
    },
    /// Claim a task for an agent.
    Claim {
        #[command(flatten)]
        team: TeamArg,
        /// Task id.
        id: String,
        /// Who claims it.
        #[arg(long)]
        agent: String,
        /// Refuse when the agent already owns an unfinished task.
        #[arg(long)]
        check_busy: bool,
    },
    /// Delete a task (its id is never reused).
    Delete {
        #[command(flatten)]
        team: TeamArg,
        /// Task id.
        id: String,
    },
}

pub(super) fn run(store: &Store, out: &Output, cmd: TaskCommand) -> anyhow::Result<()> {
    match cmd {
        TaskCommand::Create {
            team,
            subject,
            description,
            active_form,
            blocked_by,
            owner,
            by,
        } => {
            let team = store.team(&team.team)?;
            team.config()?;
            let mut task = team.create_task(NewTask {
                subject,
                description,
                active_form,
                blocked_by,
                metadata: None,
            })?;
            if let Some(owner) = owner {
                let update = TaskUpdate {
                    owner: Some(Some(owner)),
                    ..Default::default()
                };
                task = team.update_task(&task.id, update, &by)?;
            }
            out.print(&task, || {
                let text = format!("created task #{}: {}", task.id, task.subject);
                printable_line(&text).into_owned()
            })
        }
        TaskCommand::List { team } => {
            let team = store.team(&team.team)?;
            let tasks = team.list_tasks()?;
            // A task list with no team (Claude Code keeps some) still lists;
            // a name with neither is a mistake, not "no tasks".
            if tasks.is_empty() && !team.try_exists()? {
                anyhow::bail!(
                    "no team {:?}: its tasks cannot be listed; {}",
                    team.name(),
                    super::team::existing_teams(store)
                );
            }
            out.print(&tasks, || {
                if tasks.is_empty() {
                    return "no tasks".into();
                }
                tasks.iter().map(line).collect::<Vec<_>>().join("\n")
            })
        }
        TaskCommand::Get { team, id } => {
            let task = store.team(&team.team)?.task(&id)?;
            out.print(&task, || {
                format!("{}\n{BODY_INDENT}{}", line(&task), body(&task.description))
            })
        }
        TaskCommand::Update {
            team,
            id,
            subject,
            description,
            active_form,
            status,
            owner,
            no_owner,
            metadata,
            blocked_by,
            by,
        } => {
            let team = store.team(&team.team)?;
            for b in &blocked_by {
                team.add_dependency(b, &id)?;
            }
            let metadata = match metadata {
                None => None,
                Some(text) => match serde_json::from_str::<Value>(&text)? {
                    Value::Object(m) => Some(m),
                    _ => anyhow::bail!("--metadata must be a JSON object, like '{{\"k\": 1}}'"),
                },
            };
            let update = TaskUpdate {
                subject,
                description,
                active_form,
                status: status.map(parse_status).transpose()?,
                owner: if no_owner {
                    Some(None)
                } else {
                    owner.map(Some)
                },
                metadata,
            };
            let task = team.update_task(&id, update, &by)?;
            out.print(&task, || line(&task))
        }
        TaskCommand::Claim {
            team,
            id,
            agent,
            check_busy,
        } => {
            let outcome = store
                .team(&team.team)?
                .claim_task(&id, &agent, check_busy)?;
            match outcome {
                ClaimOutcome::Claimed(task) => out
                    .print(&json!({"success": true, "task": task}), || {
                        format!("{agent} claimed {}", line(&task))
                    }),
                ClaimOutcome::Refused {
                    reason,
                    blockers,
                    busy_with,
                    ..
                } => {
                    let mut body = Map::new();
                    body.insert("success".into(), false.into());
                    body.insert("reason".into(), reason.as_str().into());
                    if !blockers.is_empty() {
                        body.insert("blockedByTasks".into(), json!(blockers));
                    }
                    if !busy_with.is_empty() {
                        body.insert("busyWithTasks".into(), json!(busy_with));
                    }
                    out.print(&body, String::new)?;
                    anyhow::bail!(
                        "cannot claim task #{id}: {}{}{}",
                        reason.as_str(),
                        if blockers.is_empty() {
                            String::new()
                        } else {
                            format!(" (waiting for #{})", blockers.join(", #"))
                        },
                        if busy_with.is_empty() {
                            String::new()
                        } else {
                            format!(" ({agent} still owns #{})", busy_with.join(", #"))
                        },
                    )
                }
            }
        }
        TaskCommand::Delete { team, id } => {
            let task = store.team(&team.team)?.delete_task(&id)?;
            out.print(&json!({"deleted": task.id}), || {
                format!("deleted task #{}", task.id)
            })
        }
    }
}

fn parse_status(s: String) -> anyhow::Result<TaskStatus> {
    match s.as_str() {
        "pending" | "in_progress" | "completed" | "deleted" => Ok(TaskStatus::from(s)),
        _ => anyhow::bail!("unknown status {s:?}; use pending, in_progress, completed or deleted"),
    }
}

/// A task on one line; a subject or owner a teammate wrote cannot break it
/// ([`printable_line`]).
fn line(t: &Task) -> String {
    let owner = t
        .owner
        .as_deref()
        .map(|o| format!(" @{o}"))
        .unwrap_or_default();
    let blocked = if t.blocked_by.is_empty() {
        String::new()
    } else {
        format!(" (blocked by #{})", t.blocked_by.join(", #"))
    };
    let text = format!(
        "#{:<4} {:<12} {}{}{}",
        t.id, t.status, t.subject, owner, blocked
    );
    printable_line(&text).into_owned()
}
