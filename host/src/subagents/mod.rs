//! Sub-agents (seed 003): an agent — a teammate or a sub-agent — starts
//! another component instance with its own context for one piece of work.
//!
//! | file | owns |
//! |---|---|
//! | [`narrow`] | what a sub-agent may have: at most its parent's (pure) |
//! | `child.rs` | `Child`: one sub-agent as its seats and its task share it; the `Command`s its task takes |
//! | [`seat`] | [`Seat`]: one agent's sub-agents, what they are made from ([`SeatConfig`]), their registry, a sub-agent's instance (through [`crate::runtime::Assembly`]) |
//! | [`driver`] | one sub-agent's task: its instance, its turns, its end |
//! | `start.rs` | starting a sub-agent in named steps (checks, at most the parent, counts, worktree, instance, task), and the [`SubagentHost`](crate::runtime::subagent_host::SubagentHost) the glue calls |
//!
//! Imports go one way: `start` → `driver` → `seat` → `child`.
//! | [`tree`] | a teammate's sub-agent counts (running, started, deepest), recorded for the view and `status` |
//!
//! # Lifecycle (seed 003's state machine)
//!
//! `start` checks the request against the parent (mode, rules, model,
//! depth and count limits), makes the worktree when asked, instantiates the
//! component (from the warm cache) and spawns the sub-agent's task. The
//! task runs the first turn with the prompt; messages sent meanwhile run as
//! further turns; then the sub-agent is `completed` (its `report`ed text),
//! `failed` (its turn's error or trap) or `killed` (stopped). A synchronous
//! start waits for that; a background one returns at once and the parent
//! is notified with a `<task-notification>`: a teammate as a message from
//! `teamhost` in its inbox (so it wakes for its next turn), a sub-agent as
//! an extra turn before it may end. A sub-agent with children still running
//! waits for them before it ends. A finished sub-agent lets its instance go
//! (memory stays bounded); `send` resumes it in a fresh instance of the same
//! component, sandbox and model client, and an LLM guest gets its
//! conversation back from the transcript the host kept for it
//! (in the home's kept files, keyed by the sub-agent's name `{parent}.{id}`, read
//! through `model.history`), so it goes on with its whole context.
//!
//! Nothing is orphaned: when a parent ends (its instance dropped), its seat
//! kills every sub-agent it started, which kills theirs. A worktree is
//! removed when its sub-agent's task ends with the worktree clean, and kept
//! (with a log line) when it holds changes.

mod child;
pub mod driver;
pub mod narrow;
pub mod seat;
mod start;
pub mod tree;

pub use crate::teammate::agent_definitions::{Definition, Definitions};
pub use seat::{Seat, SeatConfig};
pub use tree::Tree;

/// Recursion protection. [`SubagentLimits::default`] gives the defaults
/// in brackets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentLimits {
    /// The deepest sub-agent: a teammate's own are depth 1 [2].
    pub max_depth: u32,
    /// Sub-agents of one agent running at once [4].
    pub max_running: usize,
    /// Sub-agents one agent may start over its life [32].
    pub max_total: usize,
}

impl Default for SubagentLimits {
    fn default() -> Self {
        SubagentLimits {
            max_depth: 2,
            max_running: 4,
            max_total: 32,
        }
    }
}
