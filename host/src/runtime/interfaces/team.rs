//! `teamhost:agent/team`: the caller's identity and the roster, on the
//! read-only view: nothing here changes the teammate's state. Every
//! coordination call (team, mailbox, messaging, tasks) passes the same gate
//! first, [`Permissions::authorize_coordination`](crate::runtime::Permissions::authorize_coordination)
//! (the sandbox's decision, so a deny rule on `SendMessage`, `TaskCreate`, …
//! holds on the WIT calls); acts are counted by
//! [`Coordination::count_act`](crate::runtime::Coordination::count_act) (the
//! coordination limits).

use super::convert::{mode_to_wit, to_wit_member};
use super::{blocking, ReadGlue};
use crate::runtime::bindings::team::{Host, Identity, Member};
use crate::runtime::GuestError;
use crate::sandbox::{CoordinationKind, TeamCall};

impl Host for ReadGlue<'_> {
    /// Not gated: it reads only the caller's own identity, no rule can name
    /// it (`TeamCall::Whoami` has no reference tool) and it has no error.
    async fn whoami(&mut self) -> wasmtime::Result<Identity> {
        let id = &self.fixed.identity;
        Ok(Identity {
            agent_id: id.agent_id.clone(),
            name: id.name.clone(),
            team_name: id.team.clone(),
            color: id.color.clone(),
            agent_type: id.agent_type.clone(),
            model: id.model.clone(),
            permission_mode: mode_to_wit(self.permissions.mode()),
            plan_mode_required: id.plan_mode_required,
        })
    }

    /// Not gated, like `whoami`: the lead's name is on every message the
    /// lead sends, and the host knows it from the spawn (no read).
    async fn lead(&mut self) -> wasmtime::Result<String> {
        Ok(self.fixed.lead.clone())
    }

    async fn roster(&mut self) -> Result<Vec<Member>, GuestError> {
        self.permissions
            .authorize_coordination(CoordinationKind::Team(TeamCall::Roster))?;
        let team = self.team.store.clone();
        let lead = self.fixed.lead.clone();
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
