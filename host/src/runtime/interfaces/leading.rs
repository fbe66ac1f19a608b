//! `teamhost:agent/leading`: the lead's seat.
//!
//! Glue only: each function takes the caller's
//! [`AgentCtx::lead_seat`](crate::runtime::AgentCtx) (`None`: not a team's lead,
//! and the call is `denied` "only a team's lead may …"), passes the caller's
//! mode and rules at the moment of the call ([`Caller`]) where the seat
//! holds a grant to them, and converts the WIT types to the seam's
//! ([`crate::runtime::lead_host`]). Every decision is the seat's, in
//! [`crate::embed`].
//!
//! Implemented on [`LeadGlue`]: the caller's fixed parts, its lead seat and
//! its permissions, read only, and its coordination state for one thing:
//! `delete-team` first finishes this turn's take of its message (a write in
//! the team's directory that would race the deletion).

use std::sync::Arc;

use wasmtime::component::HasData;

use super::convert::mode_to_wit;
use super::mode_from_wit;
use crate::approvals::{Decider as SeatDecider, PermitAnswer, PlanAnswer};
use crate::runtime::bindings::leading::{
    CatalogueEntry, Decider, Host, PendingRequest, PermissionAnswer, PlanAnswer as WitPlanAnswer,
    RequestKind, SpawnRequest, TeammateState,
};
use crate::runtime::bindings::types::{self, Error as WitError};
use crate::runtime::lead_host::{Caller, LeadHost, LeadSpawn, PendingKind};
use crate::runtime::permissions::Permissions;
use crate::runtime::state::{AgentCtx, Coordination, Fixed, LeadSeatRef};
use crate::runtime::GuestError;

/// View for the `leading` interface: the caller's seat and its permissions, for the grant a spawn or an answer is held
/// to; its coordination state only to settle the turn's message take
/// before `delete-team`.
pub struct LeadGlue<'a> {
    /// Identity, lead, limits, budget.
    pub fixed: &'a Fixed,
    /// The caller's lead seat (`None`: not a team's lead).
    pub lead_seat: &'a LeadSeatRef,
    /// The caller's mode and rules now.
    pub permissions: &'a Permissions,
    /// The turn's pending message take.
    pub coordination: &'a mut Coordination,
}

impl AgentCtx {
    /// The leading view.
    pub fn lead_glue(&mut self) -> LeadGlue<'_> {
        LeadGlue {
            fixed: &self.fixed,
            lead_seat: &self.lead_seat,
            permissions: &self.permissions,
            coordination: &mut self.coordination,
        }
    }
}

/// Selects [`LeadGlue`] for `add_to_linker`.
pub(crate) struct LeadData;
impl HasData for LeadData {
    type Data<'a> = LeadGlue<'a>;
}

impl types::Host for LeadGlue<'_> {
    fn convert_error(&mut self, err: GuestError) -> wasmtime::Result<WitError> {
        err.into_wit()
    }
}

/// The caller's seat, or `denied` naming what only a lead may do.
pub(crate) fn seat_of(
    seat: &LeadSeatRef,
    fixed: &Fixed,
    what: &str,
) -> Result<Arc<dyn LeadHost>, GuestError> {
    seat.clone().ok_or_else(|| {
        WitError::Denied(format!(
            "only a team's lead may {what}; {} is not its team's lead component",
            fixed.identity.name
        ))
        .into()
    })
}

/// The caller's permissions now, for the seat.
pub(crate) fn caller_of(permissions: &Permissions) -> Caller {
    Caller {
        mode: permissions.mode(),
        rules: permissions.rules().clone(),
    }
}

impl LeadGlue<'_> {
    fn seat(&self, what: &str) -> Result<Arc<dyn LeadHost>, GuestError> {
        seat_of(self.lead_seat, self.fixed, what)
    }
}

/// A WIT permission answer as the approvals module takes it. The JSON text
/// of an `allow` must parse: a malformed one is `invalid`, nothing sent.
pub(crate) fn permit_answer(answer: PermissionAnswer) -> Result<PermitAnswer, GuestError> {
    Ok(match answer {
        PermissionAnswer::Allow(input) => PermitAnswer::Allow {
            updated_input: input
                .map(|text| {
                    serde_json::from_str(&text).map_err(|e| {
                        WitError::Invalid(format!("the replacement input is not JSON: {e}"))
                    })
                })
                .transpose()?,
            permission_updates: Vec::new(),
        },
        PermissionAnswer::Deny(reason) => PermitAnswer::Deny { reason },
    })
}

/// A WIT plan answer as the approvals module takes it.
pub(crate) fn plan_answer(answer: WitPlanAnswer) -> PlanAnswer {
    match answer {
        WitPlanAnswer::Approve(mode) => PlanAnswer::Approve {
            mode: mode.map(mode_from_wit),
        },
        WitPlanAnswer::Reject(feedback) => PlanAnswer::Reject { feedback },
    }
}

impl Host for LeadGlue<'_> {
    async fn catalogue(&mut self) -> wasmtime::Result<Vec<CatalogueEntry>> {
        // Not a lead: nothing to spawn from (the other calls say why).
        let Some(seat) = self.lead_seat.clone() else {
            return Ok(Vec::new());
        };
        Ok(seat
            .catalogue()
            .into_iter()
            .map(|c| CatalogueEntry {
                name: c.name,
                description: c.description,
                max_mode: mode_to_wit(c.max_mode),
                tools: c.tools,
                models: c.models,
                budget_usd: c.budget_usd,
            })
            .collect())
    }

    async fn create_team(
        &mut self,
        name: String,
        description: Option<String>,
    ) -> Result<String, GuestError> {
        let seat = self.seat("create a team")?;
        Ok(seat.create_team(name, description).await?)
    }

    async fn delete_team(&mut self) -> Result<(), GuestError> {
        let seat = self.seat("delete a team")?;
        self.coordination.settle_take().await;
        Ok(seat.delete_team().await?)
    }

    async fn spawn(&mut self, req: SpawnRequest) -> Result<String, GuestError> {
        let seat = self.seat("spawn a teammate")?;
        let req = LeadSpawn {
            entry: req.entry,
            name: req.name,
            prompt: req.prompt,
            mode: req.mode.map(mode_from_wit),
            tools: req.tools,
            model: req.model,
            budget_usd: req.budget_usd,
            plan_mode_required: req.plan_mode_required,
        };
        Ok(seat.spawn(caller_of(self.permissions), req).await?)
    }

    async fn answer_permission(
        &mut self,
        request_id: String,
        answer: PermissionAnswer,
    ) -> Result<(), GuestError> {
        let seat = self.seat("answer a permission request")?;
        let answer = permit_answer(answer)?;
        Ok(seat
            .answer_permission(caller_of(self.permissions), request_id, answer)
            .await?)
    }

    async fn answer_plan(
        &mut self,
        request_id: String,
        answer: WitPlanAnswer,
    ) -> Result<(), GuestError> {
        let seat = self.seat("answer a plan")?;
        Ok(seat
            .answer_plan(caller_of(self.permissions), request_id, plan_answer(answer))
            .await?)
    }

    async fn shutdown(
        &mut self,
        name: String,
        reason: Option<String>,
    ) -> Result<String, GuestError> {
        let seat = self.seat("ask a teammate to shut down")?;
        Ok(seat.shutdown(name, reason).await?)
    }

    async fn pending(&mut self) -> Result<Vec<PendingRequest>, GuestError> {
        let seat = self.seat("see the requests waiting for an answer")?;
        let pending = super::blocking_lead(move || seat.pending()).await?;
        Ok(pending
            .into_iter()
            .map(|p| PendingRequest {
                id: p.id,
                from: p.from,
                kind: match p.kind {
                    PendingKind::Permission(tool) => RequestKind::Permission(tool),
                    PendingKind::Plan => RequestKind::Plan,
                },
                detail: p.detail,
                decider: match p.decider {
                    SeatDecider::Lead => Decider::Lead,
                    SeatDecider::Person => Decider::Person,
                    SeatDecider::Policy => Decider::Policy,
                },
            })
            .collect())
    }

    async fn teammates(&mut self) -> Result<Vec<TeammateState>, GuestError> {
        let seat = self.seat("see its teammates")?;
        let teammates = super::blocking_lead(move || seat.teammates()).await?;
        Ok(teammates
            .into_iter()
            .map(|t| TeammateState {
                name: t.name,
                entry: t.entry,
                state: t.state,
                mode: mode_to_wit(t.mode),
                task: t.task,
            })
            .collect())
    }
}

/// No bypass (the lead's seat has no side door): a lead seat's `messaging` calls that
/// stop a teammate or answer a plan go through the seat, exactly as
/// `leading.shutdown` and `leading.answer-plan` do. `None` for a caller
/// without a seat (the teammate path stays as it was).
pub(crate) async fn messaging_shutdown(
    seat: &LeadSeatRef,
    to: String,
    reason: Option<String>,
) -> Option<Result<crate::runtime::bindings::messaging::ShutdownRequestDelivery, GuestError>> {
    let seat = seat.clone()?;
    Some(match seat.shutdown(to.clone(), reason).await {
        Ok(request_id) => Ok(
            crate::runtime::bindings::messaging::ShutdownRequestDelivery {
                message: format!("Shutdown request sent to {to}. Request ID: {request_id}"),
                request_id,
                target: to,
            },
        ),
        Err(e) => Err(e.into()),
    })
}

/// [`messaging_shutdown`]'s twin for `respond-plan-approval`.
pub(crate) async fn messaging_plan_answer(
    seat: &LeadSeatRef,
    permissions: &Permissions,
    request_id: String,
    response: crate::runtime::bindings::protocol::PlanResponse,
) -> Option<Result<(), GuestError>> {
    use crate::runtime::bindings::protocol::PlanResponse;
    let seat = seat.clone()?;
    let answer = match response {
        PlanResponse::Approve(mode) => PlanAnswer::Approve {
            mode: Some(mode_from_wit(mode)),
        },
        PlanResponse::Reject(feedback) => PlanAnswer::Reject { feedback },
    };
    Some(
        seat.answer_plan(caller_of(permissions), request_id, answer)
            .await
            .map_err(Into::into),
    )
}
