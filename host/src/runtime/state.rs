//! What one teammate's wasmtime `Store` holds: its WASI context (one preopened
//! directory, nothing else), its resource limits, and the narrow [`AgentCtx`]
//! the teamhost interfaces are implemented on.

use wasmtime::component::ResourceTable;
use wasmtime::StoreLimits;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::store::Team;

/// The data of a teammate's `Store`.
pub struct TeammateState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: StoreLimits,
    /// State of the teamhost interfaces.
    pub agent: AgentCtx,
}

impl WasiView for TeammateState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Who a teammate is: what `team.whoami` returns and what the runner stamps on
/// its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Member name.
    pub name: String,
    /// `name@team`.
    pub agent_id: String,
    /// Sanitised team name.
    pub team: String,
    /// Display colour.
    pub color: String,
    /// Role.
    pub agent_type: String,
    /// Model id.
    pub model: String,
    /// Permission mode (reference spelling: `default`, `acceptEdits`, …).
    pub mode: String,
    /// Whether plans need approval.
    pub plan_mode_required: bool,
    /// `in-process`, `process` or `tmux`.
    pub backend_type: String,
    /// Pane id reported in `shutdown_approved`.
    pub pane_id: String,
}

/// How the guest answered a shutdown request during a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShutdownDecision {
    /// Approved: the runner stops after the turn.
    Approved {
        /// The request answered.
        request_id: String,
    },
    /// Rejected (already sent to the requester); work goes on.
    Rejected {
        /// The request answered.
        request_id: String,
        /// Why.
        reason: String,
    },
}

/// What happened during the current turn, for the idle notification after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnRecord {
    /// Direct messages to teammates other than the lead: `(to, summary)`.
    pub peer_dms: Vec<(String, Option<String>)>,
    /// The answer to a shutdown request, if one was given.
    pub shutdown: Option<ShutdownDecision>,
}

/// The state teamhost's WIT interfaces are implemented on.
pub struct AgentCtx {
    /// The team's files.
    pub team: Team,
    /// Who this teammate is.
    pub identity: Identity,
    /// The lead's member name.
    pub lead: String,
    /// What the current turn did.
    pub turn: TurnRecord,
    /// Request ids of shutdown requests delivered to this teammate and not
    /// answered yet.
    pub pending_shutdowns: Vec<String>,
}
