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
        // flushed) only after that message is on disk. Lines that are
        // already waiting when one is read go with it, in one write (a group
        // commit, up to `STDIN_BATCH` lines).
        let mut stdout = std::io::stdout().lock();
        let mut lines = WaitingLines::new()?;
        let mut sent = 0usize;
        while let Some(batch) = lines.next_batch(STDIN_BATCH)? {
            let msgs = batch
                .into_iter()
                .map(|text| OutgoingMessage {
                    text,
                    ..template.clone()
                })
                .collect();
            for entry in team.send_all(&a.to, msgs)? {
                sent += 1;
                if out.is_json() {
                    let json = serde_json::to_string(&entry)?;
                    writeln!(stdout, "{}", printable_json(&json))?;
                } else {
                    writeln!(stdout, "sent {sent} to {}", a.to)?;
                }
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

/// The most lines of standard input `send --stdin` writes at once.
const STDIN_BATCH: usize = 256;

/// Standard input, read a line at a time, with the lines already waiting
/// behind it.
struct WaitingLines {
    input: std::io::BufReader<std::fs::File>,
}

impl WaitingLines {
    fn new() -> anyhow::Result<WaitingLines> {
        use std::os::fd::AsFd;
        let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
        Ok(WaitingLines {
            input: std::io::BufReader::new(std::fs::File::from(fd)),
        })
    }

    /// The next line (waiting for it), and up to `max - 1` more that can be
    /// read without waiting; `None` at the end of the input.
    fn next_batch(&mut self, max: usize) -> anyhow::Result<Option<Vec<String>>> {
        let mut batch = Vec::new();
        while batch.len() < max {
            if !batch.is_empty() && !self.more_waiting() {
                break;
            }
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut self.input, &mut line)? == 0 {
                break;
            }
            if line.ends_with('\n') {
                line.pop();
                if line.ends_with('\r') {
                    line.pop();
                }
            }
            batch.push(line);
        }
        Ok((!batch.is_empty()).then_some(batch))
    }

    /// Whether a whole line can be read without waiting. Never waits: a
    /// partial line (its writer may be waiting for the acknowledgements of
    /// the lines before it) ends the batch.
    fn more_waiting(&mut self) -> bool {
        use std::io::BufRead;
        use std::os::fd::AsRawFd;
        if !self.input.buffer().is_empty() {
            return self.input.buffer().contains(&b'\n');
        }
        let mut fd = libc::pollfd {
            fd: self.input.get_ref().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout never blocks.
        if unsafe { libc::poll(&mut fd, 1, 0) } <= 0 {
            return false;
        }
        // Readable: one read that does not wait, into the empty buffer.
        matches!(self.input.fill_buf(), Ok(bytes) if bytes.contains(&b'\n'))
    }
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
