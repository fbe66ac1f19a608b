//! What one teammate's wasmtime `Store` holds: its WASI context (one preopened
//! directory, nothing else), its resource limits, and the [`AgentCtx`]
//! the teamhost interfaces are implemented on, in parts (fixed at spawn,
//! permissions, coordination records, model seat) that the glue views hand
//! out one interface at a time. They are put together in one place:
//! [`Assembly`](super::Assembly).

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::budget::TreeBudget;
use super::permissions::Permissions;
use crate::sandbox::{Limits, TeamAct, TeamActs};
use crate::store::Team;

/// The data of a teammate's `Store`.
pub struct TeammateState {
    pub(crate) wasi: WasiCtx,
    /// Every WASI resource the guest holds (descriptors, streams, pollables),
    /// capped at [`Limits::max_open_resources`]: a push past it fails and
    /// the guest traps, which the instance reports as "descriptor limit".
    pub(crate) table: ResourceTable,
    /// Memory: each linear memory at most `memory_bytes`, all of them drawn
    /// from the tree's pool.
    pub(crate) limiter: super::limiter::TreeLimiter,
    /// Epoch ticks the current turn has run; reset at each turn.
    pub(crate) cpu_ticks: u64,
    /// Ticks a turn may run ([`Limits::cpu_per_turn`] / the tick).
    pub(crate) cpu_budget: u64,
    /// `wasi:http`'s context and send hook (used only by a component
    /// linked with `wasi:http`: one granted `allowed_outbound_hosts`).
    pub(crate) http: super::wasi_http::HttpSeat,
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

impl wasmtime_wasi_http::WasiHttpView for TeammateState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        self.http.view(&mut self.table)
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
    /// The last message this turn sent the lead: the idle notification's
    /// `result` (the turn's final text, as a 2.1.332 lead reads it).
    pub to_lead: Option<String>,
    /// The answer to a shutdown request, if one was given.
    pub shutdown: Option<ShutdownDecision>,
    /// Messages, broadcasts and tasks created this turn (the per-turn
    /// coordination limits; the record is replaced after every turn).
    pub acts: TeamActs,
}

/// What every view reads and none can change: who the teammate is, whom it
/// answers to, and what bounds it. The rest of what it is given at spawn is
/// held by capability ([`TeamSeat`], [`ToolSeat`], [`StateSeat`], the
/// sub-agent and lead seats), and a glue view holds only the parts its
/// interfaces use.
pub struct Fixed {
    /// Who this teammate is.
    pub identity: Identity,
    /// The lead's member name.
    pub lead: String,
    /// Resource and coordination limits.
    pub limits: Limits,
    /// The budgets it shares with its whole tree (the root teammate's;
    /// a sub-agent gets its parent's).
    pub budget: Arc<TreeBudget>,
}

/// The team capability: the store handle and what a wait on the team needs.
/// The `team`, `mailbox`, `tasks` and `messaging` interfaces hold it (and
/// the tools view, for the permission ask and the toolbox's task and
/// message tools); the `model`, `state` and `subagents` views do not.
pub struct TeamSeat {
    /// The team's store handle (its writes are the store's to make atomic).
    pub store: Team,
    /// Woken when the teammate's inbox changes (shared with its runner, which
    /// is not waiting while a call of its turn is).
    pub wake: Arc<Notify>,
    /// Fallback poll while waiting for an answer written by another process.
    pub poll_interval: Duration,
    /// Set by the host when it stops this teammate: a wait for the lead's
    /// answer ends at once, denied ([`super::Stopping`]).
    pub stopping: super::Stopping,
    /// Approve plans at once (the reference's behaviour); off by default.
    pub auto_approve_plans: bool,
    /// The lead's hooks.
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The host's record of the tasks it claims itself (`None`: not
    /// recorded; a resume hands none back).
    pub claims: Option<crate::home::kept::ClaimLedger>,
}

/// The tools capability: the tools bound to the capability directory, and
/// what their results must not name.
pub struct ToolSeat {
    /// The tools, bound to the capability directory at spawn.
    pub tools: Arc<crate::tools::ToolBox>,
    /// Host directories never named to the guest (the machine-local home,
    /// the file store's home): tool errors show `<teamhost home>` instead.
    pub hidden_dirs: Vec<std::path::PathBuf>,
    /// Its network, when it has one: Bash runs in its namespace, through
    /// its proxy.
    pub network: Option<Arc<super::NetworkSeat>>,
}

/// The saved-state capability: the teammate's own file in the host's home.
pub struct StateSeat {
    /// Where its `state.save` goes (`None`: the host keeps no state for it,
    /// and `state` calls are `unavailable`).
    pub saved: Option<crate::home::kept::SavedState>,
    /// `state.save`/`state.clear` calls of the current turn (reset when a
    /// turn starts).
    pub saves_turn: AtomicU32,
}

/// A teammate's sub-agent seat (`None`: it may start none).
pub type SubagentSeat = Option<Arc<dyn super::subagent_host::SubagentHost>>;

/// A teammate's lead seat (`None`: not a team's lead; every `leading` call
/// and lead tool is `denied`).
pub type LeadSeatRef = Option<Arc<dyn super::lead_host::LeadHost>>;

/// What the coordination calls (mailbox, tasks, messaging) record as the
/// teammate works: the per-turn record, the life-long act counts, and the
/// protocol requests waiting for an answer.
#[derive(Debug, Default)]
pub struct Coordination {
    /// What the current turn did.
    pub turn: TurnRecord,
    /// Request ids of shutdown requests delivered to this teammate and not
    /// answered yet.
    pub pending_shutdowns: Vec<String>,
    /// The request id of the plan waiting for the lead's answer.
    pub pending_plan: Option<String>,
    /// That plan's `planDigest` (hex SHA-256 of its text), which a keyed
    /// teammate requires on the lead's approval (`None`: not known, e.g.
    /// a plan adopted on a resume; then not required).
    pub pending_plan_digest: Option<String>,
    /// The take of the message this turn handles, while it is in flight
    /// ([`super::PendingTake`]): finished before any `mailbox` call.
    pub pending_take: Option<super::PendingTake>,
}

impl Coordination {
    /// Waits for the take of the message this turn handles, if one is in
    /// flight, so the inbox no longer shows it.
    pub async fn settle_take(&mut self) {
        if let Some(take) = self.pending_take.take() {
            take.finish().await;
        }
    }
}

impl Coordination {
    /// Counts one act on the team against the per-turn limits (this
    /// instance's turn) and the tree's life totals in `budget`. `Err` is a
    /// trap whose message names the limit (`coordination limit: …
    /// (max_messages_per_turn)`): the agent fails, the lead is told, the
    /// act does not happen.
    pub fn count_act(&mut self, budget: &TreeBudget, act: TeamAct) -> wasmtime::Result<()> {
        budget
            .count_act(act, &mut self.turn.acts)
            .map_err(wasmtime::Error::msg)
    }

    /// Counts `bytes` that `what` writes into the team's store against the
    /// tree's `max_team_bytes_total`. `Err` is a trap naming the limit
    /// (`team-bytes limit: …`); nothing is written.
    pub fn count_team_bytes(
        &mut self,
        budget: &TreeBudget,
        what: &str,
        bytes: usize,
    ) -> wasmtime::Result<()> {
        budget
            .count_team_bytes(what, bytes as u64)
            .map_err(wasmtime::Error::msg)
    }
}

/// The state teamhost's WIT interfaces are implemented on, in parts by
/// capability so each interface gets only what it needs ([`glue
/// views`](crate::runtime::ReadGlue)): the model view sees nothing but the
/// model seat, the state view nothing but its own file, only the tools glue
/// (through the lead's answers) can change the permissions, and the `team`
/// interface changes nothing at all.
pub struct AgentCtx {
    /// Identity, lead, limits and budget: every view reads them.
    pub fixed: Fixed,
    /// The team's store and waits.
    pub team: TeamSeat,
    /// The tools.
    pub tools: ToolSeat,
    /// The saved state.
    pub state: StateSeat,
    /// Its sub-agents.
    pub subagents: SubagentSeat,
    /// Its lead's seat.
    pub lead_seat: LeadSeatRef,
    /// Mode and rules; changed only by the lead's answers.
    pub permissions: Permissions,
    /// What the coordination calls record.
    pub coordination: Coordination,
    /// The teammate's model capability.
    pub model: ModelSeat,
}

/// A teammate's model capability: its client (policy, meter, cassette) and
/// where its calls are reported.
pub struct ModelSeat {
    /// The broker's per-teammate client (disabled when it has no policy).
    pub client: crate::model::ModelClient,
    /// Receives each call's events (the host's event channel).
    pub sink: Option<crate::model::ModelCallSink>,
    /// Time the current turn waited on the model (left out of its wall-time
    /// limit).
    pub clock: std::sync::Arc<crate::model::ModelClock>,
    /// Run once when the teammate ends, before its final state is
    /// published (the usage record's last write).
    pub at_end: Option<crate::model::AtEnd>,
}
