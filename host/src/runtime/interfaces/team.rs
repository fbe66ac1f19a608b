//! `teamhost:agent/team`: the caller's identity and the roster.

use super::convert::{mode_to_wit, to_wit_member};
use super::{blocking, AgentCtx};
use crate::runtime::bindings::team::{Host, Identity, Member};
use crate::runtime::bindings::types::Error as WitError;

impl Host for AgentCtx {
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
