//! The seam between the `subagents` interface (and the toolbox's `Agent`
//! tool) and the sub-agent lifecycle, which lives above the runtime in
//! [`crate::subagents`] because it builds instances of its own.
//!
//! A teammate's [`AgentCtx::subagents`](super::AgentCtx) holds its
//! [`SubagentHost`]: `None` means it may start no sub-agents (every call is
//! `denied`). The glue checks the caller's permissions (the `Agent` tool
//! rule) and passes its current mode and rules; everything else the host
//! knew at spawn.

use std::future::Future;
use std::pin::Pin;

use crate::sandbox::{PermissionMode, ToolRules};

/// A boxed future, for the object-safe trait.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What to start (the `Agent` tool's input, seed 003).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartRequest {
    /// 3–5 words for lists and notifications.
    pub description: String,
    /// The task: the sub-agent's first message.
    pub prompt: String,
    /// The agent definition (`None`: `general-purpose`, the caller's own
    /// component).
    pub subagent_type: Option<String>,
    /// A model alias the caller may use.
    pub model: Option<String>,
    /// A name to address it by.
    pub name: Option<String>,
    /// A permission mode, at most the caller's.
    pub mode: Option<String>,
    /// Run it in a git worktree of the caller's directory.
    pub worktree: bool,
    /// The model's id of the `Agent` call, for the notification.
    pub tool_use_id: Option<String>,
    /// Return at once; notify the caller when it ends.
    pub background: bool,
}

/// Where a sub-agent is in its life (seed 003's state machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubagentStatus {
    /// Working (or resumed).
    Running,
    /// Ended normally; `output` is its result.
    Completed,
    /// Its turn failed or it trapped; `output` says why.
    Failed,
    /// Stopped by its caller, or its caller stopped.
    Killed,
}

impl SubagentStatus {
    /// The reference's word (`completed`, `failed`, `killed`, `running`).
    pub fn as_str(self) -> &'static str {
        match self {
            SubagentStatus::Running => "running",
            SubagentStatus::Completed => "completed",
            SubagentStatus::Failed => "failed",
            SubagentStatus::Killed => "killed",
        }
    }
}

/// One sub-agent as its caller sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentInfo {
    /// `agentId`.
    pub id: String,
    /// The name it was given.
    pub name: Option<String>,
    /// The caller's description.
    pub description: String,
    /// The definition it runs.
    pub subagent_type: String,
    /// Its state.
    pub status: SubagentStatus,
    /// Result (completed), error (failed, killed), empty while running.
    pub output: String,
    /// 1 for a teammate's own sub-agents.
    pub depth: u32,
    /// Its worktree, if it has one.
    pub worktree: Option<String>,
    /// Tokens its model calls used.
    pub total_tokens: u64,
    /// Toolbox calls it made.
    pub total_tool_use_count: u32,
    /// How long it ran, in milliseconds (over every resumption).
    pub total_duration_ms: u64,
}

/// What `start` gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// A synchronous sub-agent ended (completed, failed or killed).
    Finished(SubagentInfo),
    /// A background one is running with this id.
    Launched(SubagentInfo),
}

/// Why a sub-agent call was refused: the WIT `error` cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubagentError {
    /// More than the caller has, a depth or count limit, or no sub-agents.
    #[error("{0}")]
    Denied(String),
    /// No such sub-agent or definition.
    #[error("{0}")]
    NotFound(String),
    /// A malformed request.
    #[error("{0}")]
    Invalid(String),
    /// The component, worktree or instance could not be made.
    #[error("{0}")]
    Unavailable(String),
}

/// Who a sub-agent is, told to itself (`subagents.whoami`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentContext {
    /// Its id.
    pub id: String,
    /// The member or sub-agent that started it.
    pub parent: String,
    /// The definition's prompt.
    pub system_prompt: Option<String>,
    /// Its depth.
    pub depth: u32,
}

/// The caller's permissions at the moment of the call.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Its mode.
    pub mode: PermissionMode,
    /// Its tool rules, grants included.
    pub rules: ToolRules,
}

/// One agent's sub-agents. Implemented by [`crate::subagents::Seat`].
pub trait SubagentHost: Send + Sync {
    /// Starts a sub-agent for `caller`; waits for it unless
    /// `req.background`.
    fn start(
        &self,
        caller: Caller,
        req: StartRequest,
    ) -> BoxFuture<'_, Result<Started, SubagentError>>;
    /// Whether `to` (an id or name) is one of this agent's sub-agents.
    fn knows(&self, to: &str) -> bool;
    /// Gives a running sub-agent more to do, or resumes a finished one.
    fn send(&self, to: &str, message: String) -> Result<SubagentInfo, SubagentError>;
    /// One sub-agent.
    fn output(&self, id: &str) -> Result<SubagentInfo, SubagentError>;
    /// Stops a running sub-agent.
    fn stop(&self, id: &str) -> Result<SubagentInfo, SubagentError>;
    /// Waits up to `timeout` for a running sub-agent to end; its state
    /// then (still `Running` when the time ran out).
    fn wait(
        &self,
        id: &str,
        timeout: std::time::Duration,
    ) -> BoxFuture<'_, Result<SubagentInfo, SubagentError>>;
    /// Every sub-agent, oldest first.
    fn list(&self) -> Vec<SubagentInfo>;
    /// `Some` when this agent is itself a sub-agent.
    fn context(&self) -> Option<SubagentContext>;
    /// This agent, a sub-agent, sets its result.
    fn report(&self, text: String);
    /// This agent made a toolbox call (counted for its parent's totals).
    fn count_tool_use(&self);
}
