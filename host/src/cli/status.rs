//! `teamhost status`: a one-shot snapshot of a team ([`crate::status`]).

use clap::Args;

use super::output::push_line;
use super::{Output, TeamArg};
use crate::home::Home;
use crate::status::snapshot_local;
use crate::store::Store;

/// Arguments of `teamhost status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    team: TeamArg,
}

pub(super) fn status(
    home: &Home,
    store: &Store,
    out: &Output,
    a: StatusArgs,
) -> anyhow::Result<()> {
    let snap = snapshot_local(&store.team(&a.team.team)?, home)?;
    out.print(&snap, || {
        let total = snap.tasks.len();
        // Every line below is built from fields a teammate may have
        // written; `push_line` keeps each on its line.
        let mut head = format!("team {}", snap.team);
        if let Some(d) = &snap.description {
            head.push_str(&format!(" — {d}"));
        }
        let mut s = String::new();
        push_line(&mut s, head);
        s.push_str(&format!("tasks {}/{} completed\n", snap.completed, total));
        s.push_str("\nteammates\n");
        if snap.teammates.is_empty() {
            s.push_str("  (none)\n");
        }
        for t in &snap.teammates {
            push_line(
                &mut s,
                format!(
                    "  {:<20} {:<8} {:<11} {:<17} {}",
                    t.name,
                    t.color.as_deref().unwrap_or("-"),
                    t.backend.as_deref().unwrap_or("-"),
                    t.state.word(),
                    t.current_task
                        .as_deref()
                        .map(|id| format!("on #{id}"))
                        .unwrap_or_default()
                ),
            );
            if let Some(sub) = &t.subagents {
                push_line(&mut s, format!("  {:<20} {}", "", sub.describe()));
            }
        }
        if !snap.model_usage.is_empty() {
            s.push_str("\nmodel use\n");
            for (name, u) in &snap.model_usage {
                push_line(
                    &mut s,
                    format!("  {:<20} {}", name, crate::status::describe_model_usage(u)),
                );
            }
            if let Some(team) = crate::status::describe_team_spending(&snap.model_usage) {
                push_line(&mut s, format!("  {:<20} {team}", "whole team"));
            }
        }
        s.push_str("\ntasks\n");
        for t in &snap.tasks {
            let blocked = if t.blocked_by.is_empty() {
                String::new()
            } else {
                format!("  (after #{})", t.blocked_by.join(", #"))
            };
            push_line(
                &mut s,
                format!(
                    "  #{:<4} {:<12} {:<12} {}{}",
                    t.id,
                    t.status.as_str(),
                    t.owner.as_deref().unwrap_or("-"),
                    t.subject,
                    blocked
                ),
            );
        }
        if !snap.pending_requests.is_empty() {
            s.push_str("\nwaiting for the lead\n");
            for r in &snap.pending_requests {
                push_line(
                    &mut s,
                    format!(
                        "  {} {} from {}: {}  (teamhost {} {} --team {} …)",
                        r.kind,
                        r.request_id,
                        r.from,
                        r.what,
                        if r.kind == "plan" { "plan" } else { "permit" },
                        r.request_id,
                        snap.team
                    ),
                );
            }
        }
        if !snap.recent_messages.is_empty() {
            s.push_str("\nlatest messages to the lead\n");
            for m in &snap.recent_messages {
                push_line(&mut s, format!("  {}: {}", m.from, m.text));
            }
        }
        s
    })
}
