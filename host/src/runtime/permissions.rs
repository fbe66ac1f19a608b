//! A teammate's permissions while it runs: its mode, its tool rules and the
//! directory its path rules are judged against — and the only two ways they
//! change during its life, both answers from the lead: a granted permission
//! request's updates ([`Permissions::apply_grant`], from the tools glue) and
//! an approved plan's mode ([`Permissions::enter_approved_mode`], from the
//! runner).
//!
//! The fields are private: the coordination and team glue hold a shared
//! reference and can only ask for decisions; nothing else in the runtime can
//! widen a teammate's rights.

use std::path::Path;

use crate::protocol::PermissionGrant;
use crate::runtime::bindings::types::Error as WitError;
use crate::sandbox::{
    decide, decide_on_disk, CoordinationKind, Decision, PermissionMode, PolicyContext,
    RuleBehavior, Suggestion, ToolCall, ToolRules,
};

/// Mode, rules and the capability directory, with the permission requests
/// now waiting for the lead.
#[derive(Debug, Clone)]
pub struct Permissions {
    mode: PermissionMode,
    rules: ToolRules,
    policy: PolicyContext,
    waiting: usize,
    /// A sub-agent's: no team calls, never asks the lead.
    sub_agent: bool,
    /// Requests of an earlier life still waiting for the lead (a resumed
    /// teammate), each adopted once by a call asking the same.
    earlier: Vec<crate::protocol::PermissionRequest>,
}

impl Permissions {
    /// The permissions a teammate starts with in capability directory `dir`.
    pub fn new(mode: PermissionMode, rules: ToolRules, dir: &Path) -> Self {
        Permissions {
            mode,
            rules,
            policy: PolicyContext::new(dir),
            waiting: 0,
            sub_agent: false,
            earlier: Vec::new(),
        }
    }

    /// A sub-agent's permissions: `mode` and `rules` (already narrowed to at
    /// most its parent's, `crate::subagents`), and two restrictions of its
    /// own. It is not a member of the team, so every coordination call but
    /// starting sub-agents of its own is denied; and it has nobody to ask,
    /// so what would ask the lead is denied instead (nothing can wait on a
    /// request the lead cannot tell apart from its parent's).
    pub fn for_subagent(mode: PermissionMode, rules: ToolRules, dir: &Path) -> Self {
        Permissions {
            sub_agent: true,
            ..Permissions::new(mode, rules, dir)
        }
    }

    /// Whether these are a sub-agent's ([`Permissions::for_subagent`]).
    pub fn is_sub_agent(&self) -> bool {
        self.sub_agent
    }

    /// A sub-agent's restrictions on top of the engine's decision.
    fn restrict(&self, call: &ToolCall, decision: Decision) -> Decision {
        if !self.sub_agent {
            return decision;
        }
        if let ToolCall::Coordination(kind) = call {
            if *kind != CoordinationKind::Subagents {
                return Decision::Deny {
                    reason: format!(
                        "`{}`: a sub-agent is not a member of the team, so it has no inbox, \
                         messages or task list; it gives its result to its parent by ending its turn",
                        kind.wit_name()
                    ),
                };
            }
        }
        match decision {
            Decision::Ask { reason, .. } => Decision::Deny {
                reason: format!(
                    "{reason}; a sub-agent never asks the lead, so this is refused (its parent can \
                     start it in a mode that allows this, up to the parent's own)"
                ),
            },
            other => other,
        }
    }

    /// Hands a resumed teammate its earlier life's requests still waiting
    /// for the lead ([`crate::teammate::Resumed::open_requests`]).
    pub fn with_earlier_requests(mut self, open: Vec<crate::protocol::PermissionRequest>) -> Self {
        self.earlier = open;
        self
    }

    /// The id of an earlier life's request for exactly `tool` with `input`,
    /// now adopted (so never twice); `None` when there is none.
    pub fn adopt_earlier(&mut self, tool: &str, input: &serde_json::Value) -> Option<String> {
        let at = self
            .earlier
            .iter()
            .position(|r| r.tool_name == tool && &r.input == input)?;
        Some(self.earlier.remove(at).request_id)
    }

    /// The current mode.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// The allow and deny rules, approved additions included.
    pub fn rules(&self) -> &ToolRules {
        &self.rules
    }

    /// The capability directory (and plan file) path rules are judged in.
    pub fn policy(&self) -> &PolicyContext {
        &self.policy
    }

    /// The sandbox's decision on `call` as spelled ([`decide`]).
    pub fn decide(&self, call: &ToolCall) -> Decision {
        self.restrict(call, decide(self.mode, &self.rules, call, &self.policy))
    }

    /// The sandbox's decision on `call`, looking where its path leads
    /// through links ([`decide_on_disk`]; the look happens here so the
    /// decision itself stays pure).
    pub fn decide_on_disk(&self, call: &ToolCall) -> Decision {
        let on_disk = self.policy.look(call);
        self.restrict(
            call,
            decide_on_disk(self.mode, &self.rules, call, &self.policy, &on_disk),
        )
    }

    /// Decides a coordination call. `Err` is the typed `denied` error whose
    /// reason names the deny rule. Coordination never asks the lead: an `Ask`
    /// (which the engine does not give for coordination) is a denial too, so
    /// nothing can wait on it.
    pub fn authorize_coordination(&self, kind: CoordinationKind) -> Result<(), WitError> {
        match self.decide(&ToolCall::Coordination(kind)) {
            Decision::Allow { .. } => Ok(()),
            Decision::Deny { reason } => Err(WitError::Denied(reason)),
            Decision::Ask { reason, .. } => Err(WitError::Denied(format!(
                "{reason}; coordination calls never wait for the lead"
            ))),
        }
    }

    /// Permission requests sent to the lead and not answered yet.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// A request went to the lead ([`done_waiting`](Self::done_waiting)
    /// when its answer, or the timeout, came).
    pub(crate) fn start_waiting(&mut self) {
        self.waiting += 1;
    }

    /// A request's wait ended.
    pub(crate) fn done_waiting(&mut self) {
        self.waiting = self.waiting.saturating_sub(1);
    }

    /// Applies the `permission_updates` of the lead's grant (the reference's
    /// suggestion objects) for the rest of the teammate's life: rules to
    /// allow or deny, a mode to switch to. `addDirectories` and malformed
    /// updates are logged and ignored (a teammate has exactly one
    /// directory). Returns the mode switched to, for the caller to record in
    /// the team's config.
    pub(crate) fn apply_grant(
        &mut self,
        grant: &PermissionGrant,
        teammate: &str,
    ) -> Option<PermissionMode> {
        let mut switched = None;
        for update in &grant.permission_updates {
            match Suggestion::from_json(update) {
                Ok(Suggestion::AddRules {
                    rules, behavior, ..
                }) => {
                    for r in rules {
                        match (r.to_rule(), behavior) {
                            (Ok(rule), RuleBehavior::Allow) => self.rules.add_allowed(rule),
                            (Ok(rule), RuleBehavior::Deny) => self.rules.add_disallowed(rule),
                            (Ok(_), RuleBehavior::Ask) => {}
                            (Err(e), _) => {
                                tracing::warn!(%teammate, error = %e, "ignoring a bad rule from the lead")
                            }
                        }
                    }
                }
                Ok(Suggestion::SetMode { mode, .. }) => {
                    self.mode = mode;
                    switched = Some(mode);
                }
                Ok(Suggestion::AddDirectories { directories, .. }) => {
                    tracing::warn!(%teammate, ?directories,
                        "ignoring addDirectories: a teammate has exactly one directory");
                }
                Err(e) => {
                    tracing::warn!(%teammate, error = %e, "ignoring a permission update")
                }
            }
        }
        switched
    }

    /// Switches to the mode the lead granted with its approval of this
    /// teammate's pending plan (the runner checks sender and request id
    /// before calling this).
    pub(crate) fn enter_approved_mode(&mut self, mode: PermissionMode) {
        self.mode = mode;
    }
}
