//! [`Child`]: one sub-agent as its parent's seat, its own seat and its
//! task share it (who it is, what it is made of, its changing state), and
//! the [`Command`]s its task takes. The bottom of the sub-agent files: the
//! seat, the driver and the start all use it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use tokio::sync::{mpsc, watch};

use crate::model::ModelClient;
use crate::runtime::subagent_host::{SubagentInfo, SubagentStatus};

/// What the parent (or the host) tells a sub-agent's task.
#[derive(Debug)]
pub(crate) enum Command {
    /// More instructions: the next turn's message.
    Message(String),
    /// Stop now. `parent_gone`: the parent ended, nobody to notify.
    Kill { parent_gone: bool },
}

/// One sub-agent, shared by its seat (the parent's), its own seat and its
/// task.
pub(crate) struct Child {
    pub id: String,
    pub name: Option<String>,
    pub description: String,
    pub subagent_type: String,
    pub depth: u32,
    pub worktree: Option<PathBuf>,
    pub tool_use_id: Option<String>,
    /// Its identity name (`{parent}.{id}`).
    pub full_name: String,
    /// Its parent's identity name.
    pub parent: String,
    pub system_prompt: Option<String>,
    /// A fork of its parent (it goes on from the parent's conversation): it
    /// may not fork again.
    pub forked: bool,
    pub client: ModelClient,
    /// What a resumption's fresh instance is made of.
    pub component: PathBuf,
    pub dir: PathBuf,
    pub mode: crate::sandbox::PermissionMode,
    pub rules: crate::sandbox::ToolRules,
    /// Its kept conversation (`model.history` after a resumption).
    pub transcript: crate::model::Transcript,
    pub state: Mutex<ChildState>,
    /// Bumped each time it finishes (completed, failed, killed).
    pub finished: watch::Sender<u64>,
    pub commands: mpsc::UnboundedSender<Command>,
    pub tool_uses: AtomicU32,
    /// The text of its last `report`.
    pub reported: Mutex<String>,
}

/// A sub-agent's changing state.
pub(crate) struct ChildState {
    pub status: SubagentStatus,
    pub output: String,
    pub duration_ms: u64,
    /// Notify the parent when it finishes (background, or resumed).
    pub notify: bool,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Child {
    pub(crate) fn info(&self) -> SubagentInfo {
        let s = lock(&self.state);
        SubagentInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            subagent_type: self.subagent_type.clone(),
            status: s.status,
            output: s.output.clone(),
            depth: self.depth,
            worktree: self.worktree.as_ref().map(|p| p.display().to_string()),
            total_tokens: self.client.tokens_used(),
            total_tool_use_count: self.tool_uses.load(Ordering::Relaxed),
            total_duration_ms: s.duration_ms,
        }
    }

    pub(crate) fn is_running(&self) -> bool {
        lock(&self.state).status == SubagentStatus::Running
    }
}
