//! What a [`Host`](super::Host) reports about its teammates.

/// Where a teammate is in its life (the reference's states, plus teamhost's
/// `Compiling` and `Starting`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeammateState {
    /// Waiting for its component to compile
    /// ([`Host::compile`](crate::embed::Host::compile)); not a member yet.
    Compiling,
    /// Joining: its component is ready, and it is being registered, or is
    /// registered and not yet in its first turn.
    Starting,
    /// Running a turn.
    Active,
    /// Waiting for a message or a task.
    Idle,
    /// Waiting for the lead to answer its plan.
    AwaitingPlanApproval,
    /// Handling a shutdown request.
    ShutdownRequested,
    /// Approved a shutdown and stopped. Shown `stopped`: `completed` is a
    /// task's status, and a teammate's state never reads like one.
    Completed,
    /// Trapped or broke a limit; the reason says which.
    Failed(String),
    /// Stopped by the host (kill, or a shutdown that timed out).
    Killed,
}

impl TeammateState {
    /// Whether the teammate has stopped for good.
    pub fn is_finished(&self) -> bool {
        matches!(
            self,
            TeammateState::Completed | TeammateState::Failed(_) | TeammateState::Killed
        )
    }

    /// A short lower-case name (`active`, `idle`, …): the word
    /// `status::MemberState` gives the same state on every screen.
    pub fn as_str(&self) -> &'static str {
        match self {
            TeammateState::Compiling => "compiling",
            TeammateState::Starting => "starting",
            TeammateState::Active => "active",
            TeammateState::Idle => "idle",
            TeammateState::AwaitingPlanApproval => "awaiting approval",
            TeammateState::ShutdownRequested => "stopping",
            TeammateState::Completed => "stopped",
            TeammateState::Failed(_) => "failed",
            TeammateState::Killed => "killed",
        }
    }
}

/// A snapshot of one teammate run by this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeammateInfo {
    /// Sanitised team name.
    pub team: String,
    /// Member name.
    pub name: String,
    /// `name@team`.
    pub agent_id: String,
    /// Display colour.
    pub color: String,
    /// Current state.
    pub state: TeammateState,
    /// Turns handled so far.
    pub turns: u64,
}

/// Something that happened in a team this host runs. Delivered through a
/// broadcast channel ([`Host::events`](super::Host::events)); a slow receiver
/// loses the oldest events, never blocks the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A teammate changed state.
    StateChanged {
        /// Team.
        team: String,
        /// Teammate.
        name: String,
        /// New state.
        state: TeammateState,
    },
    /// A teammate started a turn.
    TurnStarted {
        /// Team.
        team: String,
        /// Teammate.
        name: String,
        /// `initial`, `message`, `shutdown-request` or `task-claimed`.
        kind: String,
    },
    /// A task was created, changed or deleted: by this process, or by another
    /// one when the host watches the team's files (`HostOptions::watch_files`).
    TasksChanged {
        /// Team.
        team: String,
        /// What a pass of this process wrote, stamped at the write
        /// ([`crate::store::TasksWritten`]); `None` when another process
        /// wrote it (heard through the file or NATS feed).
        written: Option<crate::store::TasksWritten>,
    },
    /// An inbox was written (the lead's included): by this process, or by
    /// another one when the host watches the team's files.
    InboxChanged {
        /// Team.
        team: String,
        /// Whose inbox.
        agent: String,
    },
    /// A teammate's model call started, finished or failed.
    Model {
        /// Team.
        team: String,
        /// Teammate.
        name: String,
        /// What happened.
        call: crate::model::ModelCallEvent,
    },
    /// This host's lease on `team` was taken over by host `by` (host failover):
    /// its copies of `stopped` were stopped here without writing; they run
    /// on `by` now.
    LeaseLost {
        /// Team.
        team: String,
        /// The adopting host's id.
        by: String,
        /// The teammates this host stopped.
        stopped: Vec<String>,
    },
}
