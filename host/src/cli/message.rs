//! `teamhost send`, `teamhost broadcast`, `teamhost inbox`.

use std::io::Write;

use clap::Args;
use serde_json::json;

use super::output::body;
use super::{Output, TeamArg};
use crate::protocol::describe::{printable_json, printable_line};
use crate::store::config::LEAD_NAME;
use crate::store::{InboxMessage, OutgoingMessage, Store};

/// Arguments of `teamhost send`.
#[derive(Debug, Args)]
pub struct SendArgs {
    #[command(flatten)]
    team: TeamArg,
    /// Recipient (a member name or agent id).
    to: String,
    /// Message text (omit with --stdin).
    #[arg(required_unless_present = "stdin")]
    text: Option<String>,
    /// Send every line of standard input as its own message, printing one line
    /// per message once it is on disk (JSON with --json).
    #[arg(long, conflicts_with = "text")]
    stdin: bool,
    /// Short preview shown to readers.
    #[arg(long)]
    summary: Option<String>,
    /// Sender name (must be a member).
    #[arg(long, default_value = LEAD_NAME)]
    from: String,
}

/// Arguments of `teamhost broadcast`.
#[derive(Debug, Args)]
pub struct BroadcastArgs {
    #[command(flatten)]
    team: TeamArg,
    /// Message text.
    text: String,
    /// Short preview shown to readers.
    #[arg(long)]
    summary: Option<String>,
    /// Sender name (must be a member).
    #[arg(long, default_value = LEAD_NAME)]
    from: String,
}

/// Arguments of `teamhost inbox`.
#[derive(Debug, Args)]
pub struct InboxArgs {
    #[command(flatten)]
    team: TeamArg,
    /// Whose inbox.
    name: String,
    /// Consume the unread messages (they move to the history).
    #[arg(long, conflicts_with = "history")]
    take: bool,
    /// Show consumed messages instead of the inbox.
    #[arg(long)]
    history: bool,
}

fn outgoing(
    store: &Store,
    team: &str,
    from: &str,
    text: String,
    summary: Option<String>,
) -> anyhow::Result<OutgoingMessage> {
    let config = store.team(team)?.config()?;
    let Some(sender) = config.member(from) else {
        anyhow::bail!(
            "sender {from:?} is not a member of team {:?}; members are: {}",
            config.name,
            config.member_names().join(", ")
        );
    };
    Ok(OutgoingMessage {
        from: sender.name.clone(),
        text,
        summary,
        color: sender.color.clone(),
    })
}

pub(super) fn send(store: &Store, out: &Output, a: SendArgs) -> anyhow::Result<()> {
    let template = outgoing(store, &a.team.team, &a.from, String::new(), a.summary)?;
    let team = store.team(&a.team.team)?;
    let Some(text) = a.text else {
        // One message per input line; each acknowledgement is printed (and
        // flushed) only after that message is on disk.
        let mut stdout = std::io::stdout().lock();
        for (n, line) in std::io::stdin().lines().enumerate() {
            let msg = OutgoingMessage {
                text: line?,
                ..template.clone()
            };
            let entry = team.send(&a.to, msg)?;
            if out.is_json() {
                let json = serde_json::to_string(&entry)?;
                writeln!(stdout, "{}", printable_json(&json))?;
            } else {
                writeln!(stdout, "sent {} to {}", n + 1, a.to)?;
            }
            stdout.flush()?;
        }
        return Ok(());
    };
    let entry = team.send(&a.to, OutgoingMessage { text, ..template })?;
    out.print(&json!({"to": a.to, "message": entry}), || {
        format!("sent to {}'s inbox", a.to)
    })
}

pub(super) fn broadcast(store: &Store, out: &Output, a: BroadcastArgs) -> anyhow::Result<()> {
    let msg = outgoing(store, &a.team.team, &a.from, a.text, a.summary)?;
    let recipients = store.team(&a.team.team)?.broadcast(msg)?;
    out.print(&json!({"recipients": recipients}), || {
        format!(
            "broadcast to {} member(s): {}",
            recipients.len(),
            recipients.join(", ")
        )
    })
}

pub(super) fn inbox(store: &Store, out: &Output, a: InboxArgs) -> anyhow::Result<()> {
    let team = store.team(&a.team.team)?;
    let messages = if a.take {
        team.take_unread(&a.name)?
    } else if a.history {
        team.history(&a.name)?
    } else {
        team.read_inbox(&a.name)?
    };
    out.print(&messages, || human(&messages))
}

fn human(messages: &[InboxMessage]) -> String {
    if messages.is_empty() {
        return "no messages".into();
    }
    messages
        .iter()
        .map(|m| {
            let summary = m
                .summary
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            // The header is one line whatever the sender wrote into its
            // fields; the text keeps its lines, indented under it.
            let header = format!("[{}] {}{}:", m.timestamp, m.from, summary);
            format!("{} {}", printable_line(&header), body(&m.text))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
