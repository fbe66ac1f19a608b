//! One sub-agent's task: it owns the instance, runs its turns and ends it
//! (seed 003's state machine: running → completed | failed | killed, and
//! back to running when a message resumes it).

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Instant;

use tokio::sync::mpsc;

use super::child::{lock, Child, Command};
use super::seat::Seat;
use crate::home::Home;
use crate::runtime::bindings::handler::{Turn, TurnKind};
use crate::runtime::bindings::mailbox::Message;
use crate::runtime::subagent_host::SubagentStatus;
use crate::runtime::Instance;
use crate::toolbox::agent_format::{self, AgentReport};

/// Everything a sub-agent's task holds.
pub(crate) struct Drive {
    pub instance: Instance,
    /// The sub-agent's own seat (its sub-agents).
    pub own: Arc<Seat>,
    pub child: Arc<Child>,
    /// The parent's seat (for a notification); not kept alive by this.
    pub parent: Weak<Seat>,
    pub rx: mpsc::UnboundedReceiver<Command>,
    pub prompt: String,
    pub home: Home,
    /// The teammate's counts.
    pub tree: Arc<super::Tree>,
}

fn message(from: &str, text: String) -> Message {
    Message {
        from: from.to_string(),
        text,
        timestamp: crate::protocol::time::timestamp_now(),
        summary: None,
        color: None,
        protocol: None,
    }
}

fn message_turn(messages: Vec<Message>) -> Turn {
    Turn {
        kind: TurnKind::Message,
        prompt: messages
            .iter()
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        from: messages.first().map(|m| m.from.clone()).unwrap_or_default(),
        messages,
    }
}

/// How one turn ended.
enum Ended {
    Done(SubagentStatus, String),
    Killed { parent_gone: bool },
}

/// Runs the sub-agent until it is killed or its parent ends.
///
/// Between its end and a resumption it holds no instance: the instance
/// (and its own seat, whose sub-agents have all ended by then) is let go
/// when it finishes, and a message builds a fresh one of the same
/// component, sandbox and model client. Its conversation comes back from
/// the transcript the host kept for it (`model.history`), as after a host
/// restart; a component without a model starts from its memory's zero.
pub(crate) async fn drive(d: Drive) {
    let Drive {
        instance,
        own,
        child,
        parent,
        mut rx,
        prompt,
        home,
        tree,
    } = d;
    let mut alive = Some((instance, own));
    let mut turn = Turn {
        kind: TurnKind::Initial,
        prompt,
        from: child.parent.clone(),
        messages: Vec::new(),
    };
    let mut pending: Vec<Message> = Vec::new();
    // A killed sub-agent's notification goes after its worktree's cleanup,
    // so a parent told of the end finds it done.
    let mut tell_after_cleanup = false;
    // Counted running again when a message resumes it after its end.
    let mut resumed = false;
    loop {
        if std::mem::take(&mut resumed) {
            tree.resumed();
        }
        set_running(&child);
        *lock(&child.reported) = String::new();
        let started = Instant::now();
        if alive.is_none() {
            match revive(&child, &parent).await {
                Ok(made) => alive = Some(made),
                Err(why) => {
                    finish(&child, &tree, SubagentStatus::Failed, why);
                    notify(&child, &parent).await;
                    match next_message(&mut rx, &child).await {
                        Some(t) => {
                            resumed = true;
                            turn = t;
                            continue;
                        }
                        None => break,
                    }
                }
            }
        }
        let Some((instance, own)) = alive.as_mut() else {
            break;
        };
        let ended = run_turn(instance, &turn, &mut rx, &mut pending).await;
        lock(&child.state).duration_ms += started.elapsed().as_millis() as u64;
        let (status, output) = match ended {
            Ended::Killed { parent_gone } => {
                finish(
                    &child,
                    &tree,
                    SubagentStatus::Killed,
                    "stopped by its parent".into(),
                );
                tell_after_cleanup = !parent_gone;
                break;
            }
            Ended::Done(SubagentStatus::Completed, _) => (
                SubagentStatus::Completed,
                std::mem::take(&mut *lock(&child.reported)),
            ),
            Ended::Done(status, output) => (status, output),
        };
        if status == SubagentStatus::Completed {
            // Before it may end: messages sent meanwhile, and what its own
            // sub-agents reported (it waits for those still running).
            match more_work(own, &mut rx, &mut pending, &child).await {
                More::Turn(messages) => {
                    turn = message_turn(messages);
                    continue;
                }
                More::Killed { parent_gone } => {
                    finish(
                        &child,
                        &tree,
                        SubagentStatus::Killed,
                        "stopped by its parent".into(),
                    );
                    tell_after_cleanup = !parent_gone;
                    break;
                }
                More::None => {}
            }
        }
        // Ended: the instance goes (its own seat with it); the transcript
        // and the worktree stay for a resumption.
        alive = None;
        finish(&child, &tree, status, output);
        notify(&child, &parent).await;
        match next_message(&mut rx, &child).await {
            Some(t) => {
                resumed = true;
                turn = t;
            }
            None => break,
        }
    }
    // Its own seat goes with the instance: its sub-agents are killed.
    drop(alive);
    if let Some(wt) = child.worktree.clone() {
        remove_worktree(home, wt).await;
    }
    let _ = child.transcript.remove();
    if tell_after_cleanup {
        notify(&child, &parent).await;
    }
    tree.gone();
}

/// Waits, after an end, for a message that resumes the sub-agent (its
/// turn); `None` when it is killed or its parent ended.
async fn next_message(rx: &mut mpsc::UnboundedReceiver<Command>, child: &Child) -> Option<Turn> {
    match rx.recv().await {
        Some(Command::Message(text)) => {
            lock(&child.state).notify = true;
            Some(message_turn(vec![message(&child.parent, text)]))
        }
        Some(Command::Kill { .. }) | None => None,
    }
}

/// A fresh instance for a resumed sub-agent, from its parent's seat.
async fn revive(child: &Arc<Child>, parent: &Weak<Seat>) -> Result<(Instance, Arc<Seat>), String> {
    let parent = parent
        .upgrade()
        .ok_or_else(|| "its parent has ended".to_string())?;
    parent
        .instantiate(child)
        .await
        .map_err(|e| format!("it could not be resumed: {e}"))
}

fn set_running(child: &Child) {
    let mut s = lock(&child.state);
    s.status = SubagentStatus::Running;
    s.output.clear();
}

/// Records its end: the state first, so whoever the counters or the watch
/// wake finds it ended.
fn finish(child: &Child, tree: &Arc<super::Tree>, status: SubagentStatus, output: String) {
    {
        let mut s = lock(&child.state);
        s.status = status;
        s.output = output;
    }
    tree.ended();
    child.finished.send_modify(|n| *n += 1);
}

/// Sends the parent the `<task-notification>` of a background (or resumed)
/// sub-agent that just finished.
async fn notify(child: &Child, parent: &Weak<Seat>) {
    if !lock(&child.state).notify {
        return;
    }
    let Some(parent) = parent.upgrade() else {
        return;
    };
    let info = child.info();
    let text = agent_format::task_notification(
        &AgentReport {
            id: &info.id,
            description: &info.description,
            status: info.status.as_str(),
            content: &info.output,
            total_tokens: info.total_tokens,
            tool_uses: info.total_tool_use_count,
            duration_ms: info.total_duration_ms,
            worktree: info.worktree.as_deref(),
        },
        child.tool_use_id.as_deref(),
    );
    parent.deliver(text).await;
}

/// Runs one turn; messages that arrive meanwhile wait in `pending`.
async fn run_turn(
    instance: &mut Instance,
    turn: &Turn,
    rx: &mut mpsc::UnboundedReceiver<Command>,
    pending: &mut Vec<Message>,
) -> Ended {
    let call = instance.handle_turn(turn);
    tokio::pin!(call);
    let mut open = true;
    loop {
        tokio::select! {
            r = &mut call => {
                return match r {
                    Err(trap) => Ended::Done(SubagentStatus::Failed, format!("{trap:#}")),
                    Ok(Err(reason)) => Ended::Done(SubagentStatus::Failed, reason),
                    Ok(Ok(_)) => Ended::Done(SubagentStatus::Completed, String::new()),
                };
            }
            cmd = rx.recv(), if open => match cmd {
                Some(Command::Message(text)) => pending.push(message("parent", text)),
                Some(Command::Kill { parent_gone }) => return Ended::Killed { parent_gone },
                None => open = false,
            },
        }
    }
}

enum More {
    Turn(Vec<Message>),
    Killed { parent_gone: bool },
    None,
}

/// What a completed turn leaves to do: pending messages, notifications from
/// its own sub-agents, or a wait for those still running.
async fn more_work(
    seat: &Seat,
    rx: &mut mpsc::UnboundedReceiver<Command>,
    pending: &mut Vec<Message>,
    child: &Child,
) -> More {
    loop {
        let mut messages: Vec<Message> = std::mem::take(pending)
            .into_iter()
            .map(|mut m| {
                m.from = child.parent.clone();
                m
            })
            .collect();
        messages.extend(
            seat.take_queue()
                .into_iter()
                .map(|t| message(crate::protocol::HOST_SENDER, t)),
        );
        if !messages.is_empty() {
            return More::Turn(messages);
        }
        if seat.running() == 0 {
            return More::None;
        }
        tokio::select! {
            () = seat.arrival() => {}
            cmd = rx.recv() => match cmd {
                Some(Command::Message(text)) => pending.push(message(&child.parent, text)),
                Some(Command::Kill { parent_gone }) => return More::Killed { parent_gone },
                None => return More::Killed { parent_gone: true },
            },
        }
    }
}

async fn remove_worktree(home: Home, wt: PathBuf) {
    let shown = wt.display().to_string();
    let removed = crate::blocking::try_run("worktree cleanup", move || {
        crate::worktree::remove_if_clean(&home, &wt)
    });
    match removed.await {
        Ok(true) => {
            tracing::debug!(worktree = %shown, "a sub-agent's clean worktree was removed")
        }
        Ok(false) => {
            tracing::info!(worktree = %shown, "a sub-agent's worktree holds changes: kept")
        }
        Err(e) => {
            tracing::warn!(worktree = %shown, error = %e, "a sub-agent's worktree could not be cleaned up")
        }
    }
}
