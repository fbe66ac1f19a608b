//! The live view without a terminal (CI, a pipe): the same changes as plain
//! timestamped lines, `HH:MM:SS.mmm  who  what`, one per change between two
//! boards ([`changes`]): teammates joining, leaving and changing state or
//! task, tasks created and changing status or owner, progress, requests
//! waiting for the lead and answered, and new messages to the lead.

use std::io::{self, Write};
use std::sync::mpsc::Receiver;

use super::board::{Board, MateRow};
use super::lead::Seat;
use super::Input;
use crate::protocol::describe::printable_line;
use crate::status::FeedItem;

/// Width of the `who` column.
const WHO: usize = 12;

/// The first lines of a watch: `board` as it is.
pub fn opening(board: &Board) -> Vec<(String, String)> {
    let mut out = vec![(
        "watch".to_string(),
        format!(
            "team {}: {} teammate(s), tasks {}/{} completed, {} waiting for the lead",
            board.team,
            board.teammates.len(),
            board.completed,
            board.tasks.len(),
            board.pending.len()
        ),
    )];
    for m in &board.teammates {
        out.push((m.name.clone(), mate_line(m)));
    }
    for p in &board.pending {
        out.push((p.from.clone(), pending_line(board, p)));
    }
    out
}

/// The lines that say what changed from `old` to `new`, in a stable order:
/// teammates, tasks, progress, requests, messages (oldest first).
pub fn changes(old: &Board, new: &Board) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in &new.teammates {
        match old.teammates.iter().find(|o| o.name == m.name) {
            None => out.push((m.name.clone(), format!("joined: {}", mate_line(m)))),
            Some(o) if o.state != m.state || o.task != m.task => {
                out.push((m.name.clone(), mate_line(m)))
            }
            Some(_) => {}
        }
    }
    for o in &old.teammates {
        if !new.teammates.iter().any(|m| m.name == o.name) {
            out.push((o.name.clone(), "left the team".into()));
        }
    }
    for t in &new.tasks {
        let owner = t
            .owner
            .as_deref()
            .map(|o| format!(", owner {o}"))
            .unwrap_or_default();
        let blocked = if t.blocked_by.is_empty() {
            String::new()
        } else {
            format!(", blocked by #{}", t.blocked_by.join(", #"))
        };
        match old.tasks.iter().find(|o| o.id == t.id) {
            None => out.push((
                "tasks".into(),
                format!(
                    "#{} created ({}{owner}{blocked}): {}",
                    t.id, t.status, t.subject
                ),
            )),
            Some(o) if o.status != t.status || o.owner != t.owner => out.push((
                "tasks".into(),
                format!("#{} {}{owner}: {}", t.id, t.status, t.subject),
            )),
            Some(_) => {}
        }
    }
    for o in &old.tasks {
        if !new.tasks.iter().any(|t| t.id == o.id) {
            out.push(("tasks".into(), format!("#{} deleted: {}", o.id, o.subject)));
        }
    }
    if (old.completed, old.tasks.len()) != (new.completed, new.tasks.len()) {
        out.push((
            "tasks".into(),
            format!("{}/{} completed", new.completed, new.tasks.len()),
        ));
    }
    for p in &new.pending {
        if !old.pending.iter().any(|o| o.request_id == p.request_id) {
            out.push((p.from.clone(), pending_line(new, p)));
        }
    }
    for o in &old.pending {
        if !new.pending.iter().any(|p| p.request_id == o.request_id) {
            out.push((
                o.from.clone(),
                format!("{} request {} answered", o.kind, o.request_id),
            ));
        }
    }
    let mut fresh: Vec<&FeedItem> = new.feed.iter().filter(|m| !old.feed.contains(m)).collect();
    fresh.reverse();
    for m in fresh {
        out.push((m.from.clone(), format!("→ {}: {}", new.lead, m.text)));
    }
    out
}

fn mate_line(m: &MateRow) -> String {
    let mut s = m.state.word().to_string();
    if let super::board::MemberState::Failed(why) = &m.state {
        s += &format!(" ({})", crate::protocol::describe::one_line(why));
    }
    if let Some((id, subject)) = &m.task {
        s += &format!(", on #{id} {subject}");
    }
    if let Some(b) = &m.backend {
        s += &format!(" [{b}]");
    }
    if let Some(model) = &m.model {
        s += &format!(" · model: {model}");
    }
    s
}

fn pending_line(board: &Board, p: &crate::status::PendingView) -> String {
    let answer = if p.kind == "plan" { "plan" } else { "permit" };
    format!(
        "waits for the lead: {} {}: {} (teamhost {answer} {} --team {} …)",
        p.kind, p.request_id, p.what, p.request_id, board.team
    )
}

/// Prints the board, then a line per change, until the team is deleted or
/// [`Input::Stop`] arrives.
pub fn run(seat: &Seat, rx: Receiver<Input>, out: &mut impl Write) -> io::Result<()> {
    let mut board = match seat.board() {
        Ok(b) => b,
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
    print(out, &opening(&board))?;
    while let Ok(first) = rx.recv() {
        let mut stop = false;
        for input in std::iter::once(first).chain(rx.try_iter()) {
            stop |= matches!(input, Input::Stop);
        }
        if stop {
            return Ok(());
        }
        if !seat.exists() {
            return print(out, &[("watch".into(), "the team was deleted".into())]);
        }
        match seat.board() {
            Ok(new) => {
                print(out, &changes(&board, &new))?;
                board = new;
            }
            Err(e) => print(
                out,
                &[("watch".into(), format!("cannot read the team: {e}"))],
            )?,
        }
    }
    Ok(())
}

fn print(out: &mut impl Write, lines: &[(String, String)]) -> io::Result<()> {
    let now = chrono::Local::now().format("%H:%M:%S%.3f");
    // One change, one line: nothing a teammate wrote may start another.
    for (who, what) in lines {
        let who = printable_line(who);
        writeln!(out, "{now}  {who:<WHO$}  {}", printable_line(what))?;
    }
    out.flush()
}
