//! A one-shot snapshot of a team, read from its files (its JSON keys are
//! camelCase, as the team's own files and `teamhost run --json` are): teammates with their
//! state and current task, the task board with progress, pending permission
//! and plan requests, and the latest messages to the lead. Works on any team
//! under a home, a Claude Code team included; it reads, never writes.
//!
//! A teammate's state comes from what is on disk: `isActive` in the config,
//! and for teammates teamhost started in their own process, whether that
//! process is still alive (a dead one is reported `dead`, not idle); an
//! in-process teammate whose host is gone is `dead` too (`teamhost run
//! --resume` brings it back). One rule names the state from these facts
//! ([`MemberState::decide`], `member_state.rs`), for every screen.

mod member_state;

pub use member_state::{MemberState, StateFacts};

use serde::Serialize;

use crate::approvals::{self, Request};
use crate::error::Result;
use crate::home::started;
use crate::protocol::describe::describe;
use crate::protocol::{Parsed, ProtocolMessage};
use std::collections::{HashMap, HashSet};

use crate::home::Home;
use crate::store::{HistoryCache, InboxMessage, Task, TaskStatus, Team};

/// How many of the lead's latest messages a snapshot keeps.
pub const RECENT_MESSAGES: usize = 10;

/// The whole snapshot.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Team name.
    pub team: String,
    /// The lead's member name.
    pub lead: String,
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
    /// The lead's latest messages, newest first.
    pub recent_messages: Vec<FeedItem>,
    /// Model use of every teammate that used a model, members or not any
    /// more (by agent file name).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub model_usage: std::collections::BTreeMap<String, crate::store::ModelUsage>,
    /// The team's cost account, when it has a team budget: its budget and
    /// what each process of the team claimed of it
    /// (`model::team_account`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_account: Option<crate::model::team_account::TeamAccount>,
}

/// One line about a teammate's model use: calls, tokens, cost, what is
/// left, and whether it waits on the model now.
pub fn describe_model_usage(u: &crate::store::ModelUsage) -> String {
    let mut s = format!(
        "{} call{}, {} tokens ({} in, {} out, {} cache reads, {} cache writes), ${:.4}",
        u.calls,
        if u.calls == 1 { "" } else { "s" },
        u.total_tokens(),
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.cost_microdollars as f64 / 1e6
    );
    if let Some(budget) = u.cost_budget_microdollars {
        s.push_str(&format!(" of ${:.4} budget", budget as f64 / 1e6));
    }
    if u.given_microdollars > 0 {
        s.push_str(&format!(
            ", ${:.4} of it given to teammates",
            u.given_microdollars as f64 / 1e6
        ));
    }
    if u.estimated_calls > 0 {
        s.push_str(&format!(
            " ({} estimated: the provider reported no usage)",
            if u.estimated_calls == u.calls {
                "all".to_string()
            } else {
                format!(
                    "{} call{}",
                    u.estimated_calls,
                    if u.estimated_calls == 1 { "" } else { "s" }
                )
            }
        ));
    }
    if let Some(left) = u.tokens_left {
        s.push_str(&format!(", {left} tokens left"));
    }
    if let (Some(left), None) = (u.cost_left_microdollars, u.cost_budget_microdollars) {
        s.push_str(&format!(", ${:.4} left", left as f64 / 1e6));
    }
    if let Some(since) = &u.waiting_since {
        s.push_str(&format!(", waiting on the model since {since}"));
    }
    if let Some(e) = &u.last_error {
        s.push_str(&format!(", last call failed: {e}"));
    }
    s
}

/// One line about the whole team's model spending (every teammate's
/// record, members or not any more), with the team's budget when it has
/// one; `None` when no teammate used a model.
pub fn describe_team_spending(
    usage: &std::collections::BTreeMap<String, crate::store::ModelUsage>,
) -> Option<String> {
    if usage.is_empty() {
        return None;
    }
    let spent: u64 = usage.values().map(|u| u.cost_microdollars).sum();
    let budget = usage.values().find_map(|u| u.team_budget_microdollars);
    let mut s = format!("${:.4}", spent as f64 / 1e6);
    match budget {
        Some(b) => s.push_str(&format!(" of ${:.4} team budget", b as f64 / 1e6)),
        None => s.push_str(" (no team budget)"),
    }
    Some(s)
}

/// One message to the lead, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedItem {
    /// Sender.
    pub from: String,
    /// When it was sent (ISO 8601, as written in the mailbox).
    pub timestamp: String,
    /// What it says, on one line ([`describe`]).
    pub text: String,
}

/// One teammate as the snapshot sees it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TeammateView {
    /// Member name.
    pub name: String,
    /// Display colour.
    pub color: Option<String>,
    /// `in-process`, `process`, `tmux`.
    pub backend: Option<String>,
    /// Its state ([`MemberState`]: `active`, `idle`, `awaiting approval`,
    /// `stopping`, `dead` or `unknown` from the files alone).
    pub state: MemberState,
    /// What the state was decided from, for a reader that knows more (the
    /// host running the teammates) to decide it again.
    #[serde(skip)]
    pub facts: StateFacts,
    /// The task it owns that is in progress.
    pub current_task: Option<String>,
    /// When it last wrote to the lead (ISO 8601), if ever.
    pub last_message: Option<String>,
    /// Its model use, when it has used a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::store::ModelUsage>,
    /// Its sub-agents (running, started, deepest, limits), when it started
    /// any on this machine (read from the home, so only with one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagents: Option<crate::home::subagent_counts::TreeRecord>,
}

/// A request waiting for the lead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingView {
    /// `permission` or `plan`.
    pub kind: &'static str,
    /// The request id, for `teamhost permit` / `teamhost plan`.
    pub request_id: String,
    /// Who asks.
    pub from: String,
    /// What for (tool and input, or the plan's first line).
    pub what: String,
    /// All of it: the tool, its description and its input pretty-printed, or
    /// the plan's file and full text.
    pub detail: String,
}

/// Reads the snapshot of `team`, with the lead's [`RECENT_MESSAGES`] latest
/// messages.
pub fn snapshot(team: &Team) -> Result<Snapshot> {
    snapshot_with(team, RECENT_MESSAGES)
}

/// Reads the snapshot of `team`, with the lead's `messages` latest messages.
pub fn snapshot_with(team: &Team, messages: usize) -> Result<Snapshot> {
    snapshot_cached(team, None, messages, &mut HistoryCache::new())
}

/// [`snapshot`], also telling which teammates' recorded processes under
/// the machine-local `home` are gone.
pub fn snapshot_local(team: &Team, home: &Home) -> Result<Snapshot> {
    snapshot_cached(team, Some(home), RECENT_MESSAGES, &mut HistoryCache::new())
}

/// [`snapshot_with`], reading histories through `cache`: a reader that looks
/// often (the live view) parses only the messages that are new since its
/// last look.
pub fn snapshot_cached(
    team: &Team,
    home: Option<&Home>,
    messages: usize,
    cache: &mut HistoryCache,
) -> Result<Snapshot> {
    let config = team.config()?;
    let lead = config.lead_name().to_string();
    let tasks = team.list_tasks()?;
    let processes = home
        .map(|h| started::list(h, team.name()).unwrap_or_default())
        .unwrap_or_default();
    // In-process teammates whose host is gone (killed, crashed): their
    // spawn record names a host that no longer runs.
    let me = std::process::id();
    let host_gone: HashSet<String> = home
        .map(|h| crate::home::spawn_record::list(h, team.name()).unwrap_or_default())
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.host_pid != me && !r.host_alive_elsewhere())
        .map(|r| r.name)
        .collect();
    let pending_requests = pending(team, cache)?;
    let inbox = team.read_inbox(&lead)?;
    let lead_mail: Vec<&InboxMessage> = cache.history(team, &lead)?.iter().chain(&inbox).collect();
    let names: HashSet<&str> = config.members.iter().map(|m| m.name.as_str()).collect();
    let last_message = last_messages(&lead_mail, &names);
    let model_usage = team.model_usage().unwrap_or_default();
    let teammates = config
        .members
        .iter()
        .filter(|m| m.name != lead)
        .map(|m| {
            let gone = match processes.iter().find(|p| p.name == m.name) {
                Some(p) => p.open_if_running().is_none(),
                None => host_gone.contains(&m.name),
            };
            let facts = StateFacts {
                host: None,
                gone,
                asked_to_stop: !gone && shutdown_pending(team, &m.name),
                is_active: m.is_active,
                waits_for_answer: pending_requests.iter().any(|p| p.from == m.name),
            };
            TeammateView {
                name: m.name.clone(),
                color: m.color.clone(),
                backend: m.backend_type.clone(),
                state: MemberState::decide(&facts),
                facts,
                last_message: last_message.get(m.name.as_str()).map(|t| t.to_string()),
                model: crate::store::names::agent_file_stem(&m.name)
                    .ok()
                    .and_then(|stem| model_usage.get(&stem).cloned()),
                subagents: home
                    .and_then(|h| crate::home::subagent_counts::read(h, team.name(), &m.name)),

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
        lead,
        description: config.description.clone(),
        teammates,
        completed,
        tasks,
        pending_requests,
        recent_messages: recent(&lead_mail, messages),
        model_usage,
        team_account: config
            .extra
            .get(crate::store::config::TEAM_ACCOUNT_FIELD)
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
    })
}

/// When each of `names` last wrote to the lead: one pass from the newest
/// message, ending as soon as all of them are found.
fn last_messages<'a>(
    lead_mail: &[&'a InboxMessage],
    names: &HashSet<&str>,
) -> HashMap<&'a str, &'a str> {
    let mut last = HashMap::new();
    for m in lead_mail.iter().rev() {
        if names.contains(&m.from.as_str()) {
            last.entry(m.from.as_str()).or_insert(m.timestamp.as_str());
            if last.len() == names.len() {
                break;
            }
        }
    }
    last
}

/// The requests still waiting for the lead ([`approvals::pending`]), in words.
fn pending(team: &Team, cache: &mut HistoryCache) -> Result<Vec<PendingView>> {
    Ok(approvals::pending_cached(team, cache)?
        .into_iter()
        .map(|request| {
            let from = request.from().to_string();
            let (kind, what, detail) = match &request {
                Request::Permission(r) => (
                    "permission",
                    format!("{} {}", r.tool_name, r.input),
                    format!(
                        "{} wants to use {}: {}\n\ninput:\n{}",
                        from,
                        r.tool_name,
                        r.description,
                        serde_json::to_string_pretty(&r.input).unwrap_or_default()
                    ),
                ),
                Request::Plan(r) => (
                    "plan",
                    r.plan_content.lines().next().unwrap_or("").to_string(),
                    format!(
                        "{} submits the plan {}:\n\n{}",
                        from, r.plan_file_path, r.plan_content
                    ),
                ),
            };
            PendingView {
                kind,
                request_id: request.id().to_string(),
                from,
                what,
                detail,
            }
        })
        .collect())
}

/// The `n` latest of the lead's messages, newest first, each on one line.
fn recent(lead_mail: &[&InboxMessage], n: usize) -> Vec<FeedItem> {
    lead_mail
        .iter()
        .rev()
        .take(n)
        .map(|m| FeedItem {
            from: m.from.clone(),
            timestamp: m.timestamp.clone(),
            text: describe(&m.text),
        })
        .collect()
}

/// Whether a `shutdown_request` waits unread in `name`'s inbox.
fn shutdown_pending(team: &Team, name: &str) -> bool {
    team.unread(name).unwrap_or_default().iter().any(|m| {
        matches!(
            ProtocolMessage::parse(&m.text),
            Parsed::Protocol(ProtocolMessage::ShutdownRequest(_))
        )
    })
}
