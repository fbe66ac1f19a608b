//! `teamhost:agent/team`: the caller's identity and the roster; and the gate
//! every coordination call (team, mailbox, messaging, tasks) passes first:
//! [`AgentCtx::authorize_coordination`] (the sandbox's decision, so a deny
//! rule on `SendMessage`, `TaskCreate`, … holds on the WIT calls) and
//! [`AgentCtx::count_act`] (the coordination limits).

use super::convert::{mode_to_wit, to_wit_member};
use super::{blocking, AgentCtx};
use crate::runtime::bindings::team::{Host, Identity, Member};
use crate::runtime::bindings::types::Error as WitError;
use crate::sandbox::{decide, CoordinationKind, Decision, TeamAct, TeamCall, ToolCall};

impl AgentCtx {
    /// Decides a coordination call with the teammate's mode and rules.
    /// `Err` is the typed `denied` error whose reason names the deny rule.
    /// Coordination never asks the lead: an `Ask` (which the engine does not
    /// give for coordination) is a denial too, so nothing can wait on it.
    pub(crate) fn authorize_coordination(&self, kind: CoordinationKind) -> Result<(), WitError> {
        let s = &self.sandbox;
        match decide(s.mode, &s.rules, &ToolCall::Coordination(kind), &s.policy) {
            Decision::Allow { .. } => Ok(()),
            Decision::Deny { reason } => Err(WitError::Denied(reason)),
            Decision::Ask { reason, .. } => Err(WitError::Denied(format!(
                "{reason}; coordination calls never wait for the lead"
            ))),
        }
    }

    /// Counts one act on the team against the per-turn and total
    /// coordination limits. `Err` is a trap whose message names the limit
    /// (`coordination limit: … (max_messages_per_turn)`): the teammate fails,
    /// the lead is told, the act does not happen.
    pub(crate) fn count_act(&mut self, act: TeamAct) -> wasmtime::Result<()> {
        self.sandbox
            .limits
            .count_act(act, &mut self.turn.acts, &mut self.acts_total)
            .map_err(wasmtime::Error::msg)
    }
}

impl Host for AgentCtx {
    /// Not gated: it reads only the caller's own identity, no rule can name
    /// it (`TeamCall::Whoami` has no reference tool) and it has no error.
    async fn whoami(&mut self) -> wasmtime::Result<Identity> {
        let id = &self.identity;
        Ok(Identity {
            agent_id: id.agent_id.clone(),
            name: id.name.clone(),
            team_name: id.team.clone(),
            color: id.color.clone(),
            agent_type: id.agent_type.clone(),
            model: id.model.clone(),
            permission_mode: mode_to_wit(self.sandbox.mode),
            plan_mode_required: id.plan_mode_required,
        })
    }

    async fn roster(&mut self) -> wasmtime::Result<Result<Vec<Member>, WitError>> {
        if let Err(e) = self.authorize_coordination(CoordinationKind::Team(TeamCall::Roster)) {
            return Ok(Err(e));
        }
        let team = self.team.clone();
        let lead = self.lead.clone();
        blocking(move || {
            let config = team.config()?;
            Ok(config
                .members
                .iter()
                .map(|m| to_wit_member(m, &lead))
                .collect())
        })
        .await
    }
}
