//! A one-shot snapshot of a team, read from its files: teammates with their
//! state and current task, the task board with progress, pending permission
//! and plan requests, and the latest messages to the lead. Works on any team
//! under a home, a Claude Code team included; it reads, never writes.
//!
//! A teammate's state comes from what is on disk: `isActive` in the config,
//! and for teammates teamhost started in their own process, whether that
//! process is still alive (a dead one is reported `dead`, not idle).

use serde::Serialize;

use crate::approvals::{self, Request};
use crate::backends::started;
use crate::error::Result;
use crate::protocol::{Parsed, ProtocolMessage};
use crate::store::{Task, TaskStatus, Team};

/// How many of the lead's latest messages a snapshot keeps.
pub const RECENT_MESSAGES: usize = 10;

/// The whole snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Team name.
    pub team: String,
    /// Its description, when it has one.
    pub description: Option<String>,
    /// Every member but the lead, in join order.
    pub teammates: Vec<TeammateView>,
    /// Every task, by id.
    pub tasks: Vec<Task>,
    /// Completed tasks.
    pub completed: usize,
    /// Permission and plan requests no answer has been written for.
    pub pending_requests: Vec<PendingView>,
    /// The lead's latest messages, newest first: `(from, one line)`.
    pub recent_messages: Vec<(String, String)>,
}

/// One teammate as the snapshot sees it.
#[derive(Debug, Clone, Serialize)]
pub struct TeammateView {
    /// Member name.
    pub name: String,
    /// Display colour.
    pub color: Option<String>,
    /// `in-process`, `process`, `tmux`.
    pub backend: Option<String>,
    /// `active`, `idle`, `dead` or `unknown`.
    pub state: &'static str,
    /// The task it owns that is in progress.
    pub current_task: Option<String>,
}

/// A request waiting for the lead.
#[derive(Debug, Clone, Serialize)]
pub struct PendingView {
    /// `permission` or `plan`.
    pub kind: &'static str,
    /// The request id, for `teamhost permit` / `teamhost plan`.
    pub request_id: String,
    /// Who asks.
    pub from: String,
    /// What for (tool and input, or the plan's first line).
    pub what: String,
}

/// Reads the snapshot of `team`.
pub fn snapshot(team: &Team) -> Result<Snapshot> {
    let config = team.config()?;
    let lead = config.lead_name().to_string();
    let tasks = team.list_tasks()?;
    let processes = started::list(team).unwrap_or_default();
    let teammates = config
        .members
        .iter()
        .filter(|m| m.name != lead)
        .map(|m| {
            let dead = processes
                .iter()
                .find(|p| p.name == m.name)
                .is_some_and(|p| p.open_if_running().is_none());
            TeammateView {
                name: m.name.clone(),
                color: m.color.clone(),
                backend: m.backend_type.clone(),
                state: match (dead, m.is_active) {
                    (true, _) => "dead",
                    (false, Some(true)) => "active",
                    (false, Some(false)) => "idle",
                    (false, None) => "unknown",
                },
                current_task: tasks
                    .iter()
                    .find(|t| {
                        t.owner.as_deref() == Some(m.name.as_str())
                            && t.status == TaskStatus::InProgress
                    })
                    .map(|t| t.id.clone()),
            }
        })
        .collect();
    let completed = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .count();
    Ok(Snapshot {
        team: config.name.clone(),
        description: config.description.clone(),
        teammates,
        completed,
        tasks,
        pending_requests: pending(team)?,
        recent_messages: recent(team, &lead)?,
    })
}

/// Requests whose id no response in the requester's inbox or history carries.
fn pending(team: &Team) -> Result<Vec<PendingView>> {
    let mut out = Vec::new();
    for request in approvals::requests(team)? {
        let from = request.from().to_string();
        let mut mail = team.history(&from).unwrap_or_default();
        mail.extend(team.read_inbox(&from).unwrap_or_default());
        let answered = mail.iter().any(|m| match ProtocolMessage::parse(&m.text) {
            Parsed::Protocol(ProtocolMessage::PermissionResponse(r)) => {
                r.request_id == request.id()
            }
            Parsed::Protocol(ProtocolMessage::PlanApprovalResponse(r)) => {
                r.request_id == request.id()
            }
            _ => false,
        });
        if answered {
            continue;
        }
        let (kind, what) = match &request {
            Request::Permission(r) => ("permission", format!("{} {}", r.tool_name, r.input)),
            Request::Plan(r) => (
                "plan",
                r.plan_content.lines().next().unwrap_or("").to_string(),
            ),
        };
        out.push(PendingView {
            kind,
            request_id: request.id().to_string(),
            from,
            what,
        });
    }
    Ok(out)
}

/// The lead's latest messages, newest first, each on one line.
fn recent(team: &Team, lead: &str) -> Result<Vec<(String, String)>> {
    let mut all = team.history(lead)?;
    all.extend(team.read_inbox(lead)?);
    Ok(all
        .iter()
        .rev()
        .take(RECENT_MESSAGES)
        .map(|m| {
            let line = match ProtocolMessage::parse(&m.text) {
                Parsed::Protocol(p) => format!("[{}]", p.kind()),
                _ => m.text.lines().next().unwrap_or("").to_string(),
            };
            (m.from.clone(), line)
        })
        .collect())
}
