//! The glue views: each WIT interface is implemented on the narrowest part of
//! [`AgentCtx`] it needs, the way wasmtime-wasi implements `random` on its
//! random context rather than on the whole store data. [`Fixed`] (identity,
//! lead, limits, budget) is what every view but the model's reads; the rest
//! is held by capability.
//!
//! | view | interfaces | reads | changes |
//! |---|---|---|---|
//! | [`ReadGlue`] | `team`, `types`, `protocol` | fixed, team seat, permissions, coordination | nothing |
//! | [`CoordinationGlue`] | `mailbox`, `tasks`, `messaging` | fixed, team seat, lead seat (a lead's shutdown and plan answers go through it), permissions | coordination records |
//! | [`ToolGlue`] | `tools`, `toolbox` | fixed, team seat, tool seat, sub-agent and lead seats (the toolbox's `Agent` and lead tools) | permissions (only through the lead's grant), coordination records (the toolbox's task and message tools) |
//! | [`ModelGlue`] | `model` | nothing else | the model seat |
//! | [`StateGlue`] | `state` | fixed (its budget), the state seat | nothing in memory: its saved-state file |
//! | [`SubagentGlue`] | `subagents` | fixed, sub-agent seat, permissions | nothing of its own (the seat keeps the sub-agents) |
//! | [`LeadGlue`](super::LeadGlue) | `leading` | fixed, lead seat, permissions | the turn's message take (settled before `delete-team`) |
//!
//! `types` has no functions, only `convert_error` (turning a
//! [`GuestError`](crate::runtime::GuestError) back into the WIT `error` or a
//! trap); it is implemented on every view whose interfaces return that error
//! (`mod.rs`), since the generated code converts through the caller's view.
//!
//! The borrow checker holds the table: a view holds `&` to what it reads and
//! `&mut` only to what it changes, and no field for a capability its
//! interfaces do not use, so no interface can change what its view does
//! not hand out (the coordination glue cannot rewrite the mode, the team
//! glue cannot count an act, no tool call can reach the model's meter, the
//! model glue cannot reach the team or the tools, the state glue cannot
//! write to the team).

use wasmtime::component::HasData;

use crate::runtime::permissions::Permissions;
use crate::runtime::state::{
    AgentCtx, Coordination, Fixed, LeadSeatRef, ModelSeat, StateSeat, SubagentSeat, TeamSeat,
    ToolSeat,
};

/// Read-only view for the `team`, `types` and `protocol` interfaces.
///
/// It cannot record anything:
///
/// ```compile_fail,E0594
/// fn record(g: &mut teamhost::runtime::ReadGlue<'_>) {
///     g.coordination.pending_plan = None;
/// }
/// ```
pub struct ReadGlue<'a> {
    /// Identity, lead, limits, budget.
    pub fixed: &'a Fixed,
    /// The team's store.
    pub team: &'a TeamSeat,
    /// Mode and rules, for decisions.
    pub permissions: &'a Permissions,
    /// The act counts, for the limits left.
    pub coordination: &'a Coordination,
}

/// View for the `mailbox`, `tasks` and `messaging` interfaces: decisions on
/// the permissions, records in the coordination state.
///
/// It cannot replace the permissions:
///
/// ```compile_fail,E0594
/// use teamhost::runtime::{CoordinationGlue, Permissions};
/// use teamhost::sandbox::{PermissionMode, ToolRules};
/// fn widen(g: &mut CoordinationGlue<'_>) {
///     let all = Permissions::new(PermissionMode::BypassPermissions, ToolRules::default(), "/".as_ref());
///     *g.permissions = all;
/// }
/// ```
///
/// Nor reach the tools:
///
/// ```compile_fail,E0609
/// fn tools(g: &teamhost::runtime::CoordinationGlue<'_>) {
///     let _ = &g.tools;
/// }
/// ```
pub struct CoordinationGlue<'a> {
    /// Identity, lead, limits, budget.
    pub fixed: &'a Fixed,
    /// The team's store and waits.
    pub team: &'a TeamSeat,
    /// The lead's seat, for a lead's shutdown requests and plan answers.
    pub lead_seat: &'a LeadSeatRef,
    /// Mode and rules, for decisions.
    pub permissions: &'a Permissions,
    /// Act counts, the turn's record, pending protocol requests.
    pub coordination: &'a mut Coordination,
}

/// View for the `tools` and `toolbox` interfaces: the only one that may
/// change the permissions, and only with a grant from the lead.
pub struct ToolGlue<'a> {
    /// Identity, lead, limits, budget.
    pub fixed: &'a Fixed,
    /// The team's store and waits (the permission ask, the toolbox's team
    /// tools).
    pub team: &'a TeamSeat,
    /// The tools.
    pub tools: &'a ToolSeat,
    /// The sub-agent seat (the `Agent` tool).
    pub subagents: &'a SubagentSeat,
    /// The lead seat (the lead's tools).
    pub lead_seat: &'a LeadSeatRef,
    /// Mode and rules; changed by `Permissions::apply_grant`.
    pub permissions: &'a mut Permissions,
    /// For the toolbox's task and message tools.
    pub coordination: &'a mut Coordination,
}

/// View for the `model` interface: the model seat and nothing else.
///
/// It does not see the permissions:
///
/// ```compile_fail,E0609
/// fn mode(g: &teamhost::runtime::ModelGlue<'_>) -> teamhost::sandbox::PermissionMode {
///     g.permissions.mode()
/// }
/// ```
///
/// Nor the team or the tools:
///
/// ```compile_fail,E0609
/// fn team(g: &teamhost::runtime::ModelGlue<'_>) {
///     let _ = &g.team;
/// }
/// ```
///
/// ```compile_fail,E0609
/// fn tools(g: &teamhost::runtime::ModelGlue<'_>) {
///     let _ = &g.tools;
/// }
/// ```
pub struct ModelGlue<'a> {
    /// The client, its meter and where its calls are reported.
    pub model: &'a mut ModelSeat,
}

/// View for the `state` interface: the teammate's own saved-state file and
/// the budget its writes count against.
///
/// It cannot reach the team:
///
/// ```compile_fail,E0609
/// fn team(g: &teamhost::runtime::StateGlue<'_>) {
///     let _ = &g.team;
/// }
/// ```
pub struct StateGlue<'a> {
    /// Identity, lead, limits, budget.
    pub fixed: &'a Fixed,
    /// Its saved-state file and this turn's save count.
    pub state: &'a StateSeat,
}

impl AgentCtx {
    /// The read-only view.
    pub fn read_glue(&self) -> ReadGlue<'_> {
        ReadGlue {
            fixed: &self.fixed,
            team: &self.team,
            permissions: &self.permissions,
            coordination: &self.coordination,
        }
    }

    /// The coordination view.
    pub fn coordination_glue(&mut self) -> CoordinationGlue<'_> {
        CoordinationGlue {
            fixed: &self.fixed,
            team: &self.team,
            lead_seat: &self.lead_seat,
            permissions: &self.permissions,
            coordination: &mut self.coordination,
        }
    }

    /// The tools view.
    pub fn tool_glue(&mut self) -> ToolGlue<'_> {
        ToolGlue {
            fixed: &self.fixed,
            team: &self.team,
            tools: &self.tools,
            subagents: &self.subagents,
            lead_seat: &self.lead_seat,
            permissions: &mut self.permissions,
            coordination: &mut self.coordination,
        }
    }

    /// The model view.
    pub fn model_glue(&mut self) -> ModelGlue<'_> {
        ModelGlue {
            model: &mut self.model,
        }
    }

    /// The saved-state view.
    pub fn state_glue(&self) -> StateGlue<'_> {
        StateGlue {
            fixed: &self.fixed,
            state: &self.state,
        }
    }
}

impl ToolGlue<'_> {
    /// The coordination view inside the tools view, for the toolbox's task
    /// and message tools (they pass the same gates as the WIT calls).
    pub fn coordination_glue(&mut self) -> CoordinationGlue<'_> {
        CoordinationGlue {
            fixed: self.fixed,
            team: self.team,
            lead_seat: self.lead_seat,
            permissions: self.permissions,
            coordination: self.coordination,
        }
    }
}

/// View for the `subagents` interface: decisions on the permissions (the
/// `Agent` rule, the caller's mode and rules handed to the lifecycle); the
/// sub-agents themselves live behind the seat.
pub struct SubagentGlue<'a> {
    /// Identity, lead, limits, budget.
    pub fixed: &'a Fixed,
    /// The sub-agent seat.
    pub subagents: &'a SubagentSeat,
    /// Mode and rules, for decisions and narrowing.
    pub permissions: &'a Permissions,
}

impl AgentCtx {
    /// The sub-agents view.
    pub fn subagent_glue(&mut self) -> SubagentGlue<'_> {
        SubagentGlue {
            fixed: &self.fixed,
            subagents: &self.subagents,
            permissions: &self.permissions,
        }
    }
}

impl ToolGlue<'_> {
    /// The sub-agents view inside the tools view, for the `Agent` tool.
    pub fn subagent_glue(&self) -> SubagentGlue<'_> {
        SubagentGlue {
            fixed: self.fixed,
            subagents: self.subagents,
            permissions: self.permissions,
        }
    }
}

/// Selects [`SubagentGlue`] for `add_to_linker`.
pub(crate) struct SubagentData;
impl HasData for SubagentData {
    type Data<'a> = SubagentGlue<'a>;
}

/// Selects [`ReadGlue`] for `add_to_linker`.
pub(crate) struct ReadData;
impl HasData for ReadData {
    type Data<'a> = ReadGlue<'a>;
}

/// Selects [`StateGlue`] for `add_to_linker`.
pub(crate) struct StateData;
impl HasData for StateData {
    type Data<'a> = StateGlue<'a>;
}

/// Selects [`CoordinationGlue`] for `add_to_linker`.
pub(crate) struct CoordinationData;
impl HasData for CoordinationData {
    type Data<'a> = CoordinationGlue<'a>;
}

/// Selects [`ToolGlue`] for `add_to_linker`.
pub(crate) struct ToolData;
impl HasData for ToolData {
    type Data<'a> = ToolGlue<'a>;
}

/// Selects [`ModelGlue`] for `add_to_linker`.
pub(crate) struct ModelData;
impl HasData for ModelData {
    type Data<'a> = ModelGlue<'a>;
}
