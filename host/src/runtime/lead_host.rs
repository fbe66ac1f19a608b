//! The seam between the `leading` interface (and the toolbox's lead tools:
//! TeamCreate, TeamDelete, the `Agent` tool with `team_name`, SendMessage's
//! protocol answers) and the lead's seat, which lives above the runtime in
//! [`crate::embed`] because it spawns teammates, deletes teams and answers
//! requests through the host.
//!
//! A teammate's [`AgentCtx::lead_seat`](super::AgentCtx) holds its [`LeadHost`]:
//! `None` for every component that is not a team's lead, and then every
//! `leading` call (and every lead tool) is `denied`. The glue passes the
//! lead's own permissions at the moment of the call ([`Caller`]), so the seat
//! can hold a spawn or an answer to at most the lead's grant.

pub use super::subagent_host::{BoxFuture, Caller};
use crate::approvals::{Decider, PermitAnswer, PlanAnswer};
use crate::sandbox::PermissionMode;

/// One component the lead may spawn, and the most it may be given
/// (the WIT `catalogue-entry`).
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueView {
    /// The name a spawn names.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The widest mode a teammate from it may have.
    pub max_mode: PermissionMode,
    /// Its allow rules at most (reference syntax); empty: its own rules.
    pub tools: Vec<String>,
    /// The model aliases it may use.
    pub models: Vec<String>,
    /// The most it may spend, in US dollars.
    pub budget_usd: Option<f64>,
}

/// What the lead asks to spawn (the WIT `spawn-request`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeadSpawn {
    /// A catalogue entry's name.
    pub entry: String,
    /// The new member's name.
    pub name: String,
    /// Its first message.
    pub prompt: String,
    /// Its mode (`None`: the entry's widest, narrowed to the lead's).
    pub mode: Option<PermissionMode>,
    /// Its allow rules (`None`: the entry's).
    pub tools: Option<Vec<String>>,
    /// A model alias (`None`: the entry's first).
    pub model: Option<String>,
    /// Its model budget in US dollars (`None`: the entry's).
    pub budget_usd: Option<f64>,
    /// It must have a plan approved before it edits.
    pub plan_mode_required: bool,
}

/// What a waiting request asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PendingKind {
    /// A tool call, with its tool name.
    Permission(String),
    /// A plan.
    Plan,
}

/// A request waiting for an answer, as the lead sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingView {
    /// Its id.
    pub id: String,
    /// The teammate that asked.
    pub from: String,
    /// A permission or a plan.
    pub kind: PendingKind,
    /// The call's input (JSON) or the plan's text, bounded.
    pub detail: String,
    /// Who decides it.
    pub decider: Decider,
}

/// One teammate as the lead sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeammateView {
    /// Its member name.
    pub name: String,
    /// The catalogue entry it came from (`None`: not spawned by this lead).
    pub entry: Option<String>,
    /// `active`, `idle` or `stopped`.
    pub state: String,
    /// Its mode now.
    pub mode: PermissionMode,
    /// The id of the task it owns and works on.
    pub task: Option<String>,
}

/// Why a lead call was refused: the WIT `error` cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeadError {
    /// Outside the catalogue's or the lead's grant, not the lead's to
    /// decide, past a limit, or not a lead's seat at all.
    #[error("{0}")]
    Denied(String),
    /// No such entry, member or request.
    #[error("{0}")]
    NotFound(String),
    /// The team or request is not in a state that allows it (not formed,
    /// already formed, already answered, teammates still running).
    #[error("{0}")]
    Conflict(String),
    /// A malformed request.
    #[error("{0}")]
    Invalid(String),
    /// The store or a component could not be reached; nothing happened.
    #[error("{0}")]
    Unavailable(String),
}

/// A team's lead seat. Implemented in [`crate::embed`].
pub trait LeadHost: Send + Sync {
    /// Every catalogue entry, in the manifest's order.
    fn catalogue(&self) -> Vec<CatalogueView>;
    /// Forms the lead's team; returns its real name.
    fn create_team(
        &self,
        name: String,
        description: Option<String>,
    ) -> BoxFuture<'_, Result<String, LeadError>>;
    /// Deletes the lead's team (refused while a teammate runs).
    fn delete_team(&self) -> BoxFuture<'_, Result<(), LeadError>>;
    /// Spawns a teammate from the catalogue for `caller` (at most its
    /// grant); returns the agent id.
    fn spawn(&self, caller: Caller, req: LeadSpawn) -> BoxFuture<'_, Result<String, LeadError>>;
    /// Answers a permission request routed to the lead.
    fn answer_permission(
        &self,
        caller: Caller,
        request_id: String,
        answer: PermitAnswer,
    ) -> BoxFuture<'_, Result<(), LeadError>>;
    /// Answers a plan routed to the lead.
    fn answer_plan(
        &self,
        caller: Caller,
        request_id: String,
        answer: PlanAnswer,
    ) -> BoxFuture<'_, Result<(), LeadError>>;
    /// Asks a teammate to shut down; returns the request id.
    fn shutdown(
        &self,
        name: String,
        reason: Option<String>,
    ) -> BoxFuture<'_, Result<String, LeadError>>;
    /// The requests waiting for an answer, with who decides each.
    fn pending(&self) -> Result<Vec<PendingView>, LeadError>;
    /// The team's teammates.
    fn teammates(&self) -> Result<Vec<TeammateView>, LeadError>;
    /// Whether the lead deleted its team: its runner ends once the turn
    /// that did returns (added by the seat; `false` by default).
    fn ended(&self) -> bool {
        false
    }
}
