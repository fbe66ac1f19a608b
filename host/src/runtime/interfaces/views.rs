//! The glue views: each WIT interface is implemented on the narrowest part of
//! [`AgentCtx`] it needs, the way wasmtime-wasi implements `random` on its
//! random context rather than on the whole store data.
//!
//! | view | interfaces | reads | changes |
//! |---|---|---|---|
//! | [`ReadGlue`] | `team`, `types`, `protocol` | fixed, permissions, coordination | nothing |
//! | [`CoordinationGlue`] | `mailbox`, `tasks`, `messaging` | fixed, permissions | coordination records |
//! | [`ToolGlue`] | `tools`, `toolbox` | fixed | permissions (only through the lead's grant), coordination records (the toolbox's task and message tools) |
//! | [`ModelGlue`] | `model` | fixed | the model seat |
//! | [`ReadGlue`] | `state` | fixed (its own file's path) | nothing in memory: its saved-state file |
//! | [`SubagentGlue`] | `subagents` | fixed (its sub-agent seat), permissions | nothing of its own (the seat keeps the sub-agents) |
//!
//! `types` has no functions, only `convert_error` (turning a
//! [`GuestError`](crate::runtime::GuestError) back into the WIT `error` or a
//! trap); it is implemented on every view whose interfaces return that error
//! (`mod.rs`), since the generated code converts through the caller's view.
//!
//! The borrow checker holds the table: a view holds `&` to what it reads and
//! `&mut` only to what it changes, so no interface can change what its view
//! does not hand out (the coordination glue cannot rewrite the mode, the
//! team glue cannot count an act, no tool call can reach the model's meter).

use wasmtime::component::HasData;

use crate::runtime::permissions::Permissions;
use crate::runtime::state::{AgentCtx, Coordination, Fixed, ModelSeat};

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
    /// Fixed at spawn.
    pub fixed: &'a Fixed,
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
pub struct CoordinationGlue<'a> {
    /// Fixed at spawn.
    pub fixed: &'a Fixed,
    /// Mode and rules, for decisions.
    pub permissions: &'a Permissions,
    /// Act counts, the turn's record, pending protocol requests.
    pub coordination: &'a mut Coordination,
}

/// View for the `tools` and `toolbox` interfaces: the only one that may
/// change the permissions, and only with a grant from the lead.
pub struct ToolGlue<'a> {
    /// Fixed at spawn.
    pub fixed: &'a Fixed,
    /// Mode and rules; changed by [`Permissions::apply_grant`].
    pub permissions: &'a mut Permissions,
    /// For the toolbox's task and message tools.
    pub coordination: &'a mut Coordination,
}

/// View for the `model` interface.
///
/// It does not see the permissions at all:
///
/// ```compile_fail,E0609
/// fn mode(g: &teamhost::runtime::ModelGlue<'_>) -> teamhost::sandbox::PermissionMode {
///     g.permissions.mode()
/// }
/// ```
pub struct ModelGlue<'a> {
    /// Fixed at spawn.
    pub fixed: &'a Fixed,
    /// The client, its meter and where its calls are reported.
    pub model: &'a mut ModelSeat,
}

impl AgentCtx {
    /// The read-only view.
    pub fn read_glue(&self) -> ReadGlue<'_> {
        ReadGlue {
            fixed: &self.fixed,
            permissions: &self.permissions,
            coordination: &self.coordination,
        }
    }

    /// The coordination view.
    pub fn coordination_glue(&mut self) -> CoordinationGlue<'_> {
        CoordinationGlue {
            fixed: &self.fixed,
            permissions: &self.permissions,
            coordination: &mut self.coordination,
        }
    }

    /// The tools view.
    pub fn tool_glue(&mut self) -> ToolGlue<'_> {
        ToolGlue {
            fixed: &self.fixed,
            permissions: &mut self.permissions,
            coordination: &mut self.coordination,
        }
    }

    /// The model view.
    pub fn model_glue(&mut self) -> ModelGlue<'_> {
        ModelGlue {
            fixed: &self.fixed,
            model: &mut self.model,
        }
    }
}

impl ToolGlue<'_> {
    /// The coordination view inside the tools view, for the toolbox's task
    /// and message tools (they pass the same gates as the WIT calls).
    pub fn coordination_glue(&mut self) -> CoordinationGlue<'_> {
        CoordinationGlue {
            fixed: self.fixed,
            permissions: self.permissions,
            coordination: self.coordination,
        }
    }
}

/// View for the `subagents` interface: decisions on the permissions (the
/// `Agent` rule, the caller's mode and rules handed to the lifecycle); the
/// sub-agents themselves live behind [`Fixed::subagents`].
pub struct SubagentGlue<'a> {
    /// Fixed at spawn.
    pub fixed: &'a Fixed,
    /// Mode and rules, for decisions and narrowing.
    pub permissions: &'a Permissions,
}

impl AgentCtx {
    /// The sub-agents view.
    pub fn subagent_glue(&mut self) -> SubagentGlue<'_> {
        SubagentGlue {
            fixed: &self.fixed,
            permissions: &self.permissions,
        }
    }
}

impl ToolGlue<'_> {
    /// The sub-agents view inside the tools view, for the `Agent` tool.
    pub fn subagent_glue(&self) -> SubagentGlue<'_> {
        SubagentGlue {
            fixed: self.fixed,
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
