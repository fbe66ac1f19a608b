//! The toolbox's lead tools run through the lead's seat:
//! TeamCreate, TeamDelete, the `Agent` tool with `team_name`, and
//! SendMessage's `plan_approval_response`, `permission_response` and
//! `shutdown_request` all call [`AgentCtx::lead_seat`](crate::runtime::AgentCtx)'s
//! [`LeadHost`], the same seat the `leading` interface calls, so a model's
//! answer takes the one routed approval path and never travels as a raw
//! message. A component without a seat (every teammate) gets an error
//! result for each of them; nothing is sent.

use std::sync::Arc;

use super::ToolGlue;
use crate::approvals::{PermitAnswer, PlanAnswer};
use crate::model::ToolDefinition as ModelToolDefinition;
use crate::runtime::lead_host::{Caller, LeadError, LeadHost, LeadSpawn};
use crate::sandbox::PermissionMode;
use crate::toolbox::format;
use crate::toolbox::lead_tools::{self, CatalogueLine, LeadCall, SpawnCall};

/// A call's outcome: the text, and whether it is an error.
type Outcome = (String, bool);

/// A seat's refusal as a sentence for the model, in the words the other
/// tools use for the WIT error cases.
fn lead_error_text(e: &LeadError) -> String {
    match e {
        LeadError::Denied(m) => format!("permission denied: {m}"),
        LeadError::NotFound(m) => format!("not found: {m}"),
        LeadError::Conflict(m) => format!("conflict: {m}"),
        LeadError::Invalid(m) => format!("invalid: {m}"),
        LeadError::Unavailable(m) => format!("unavailable: {m}"),
    }
}

impl ToolGlue<'_> {
    fn lead_seat(&self) -> Option<Arc<dyn LeadHost>> {
        self.lead_seat.clone()
    }

    /// The lead's own mode and rules now: the most it may give.
    fn lead_caller(&self) -> Caller {
        Caller {
            mode: self.permissions.mode(),
            rules: self.permissions.rules().clone(),
        }
    }

    /// The lead tools' definitions for this agent's model: none without a
    /// seat. `sub_agents` says whether the `Agent` tool still starts
    /// sub-agents without `team_name`.
    pub(super) fn lead_definitions(&self, sub_agents: bool) -> Vec<ModelToolDefinition> {
        let Some(seat) = self.lead_seat() else {
            return Vec::new();
        };
        let catalogue: Vec<CatalogueLine> = seat
            .catalogue()
            .into_iter()
            .map(|c| CatalogueLine {
                name: c.name,
                description: c.description,
                max_mode: c.max_mode.as_str().to_string(),
                models: c.models,
            })
            .collect();
        lead_tools::definitions(&catalogue, sub_agents)
    }

    /// Runs a lead's call on the seat; an error result for a non-lead.
    pub(super) async fn run_lead(&mut self, call: LeadCall) -> Outcome {
        let Some(seat) = self.lead_seat() else {
            return (format::error(&lead_tools::not_a_lead(&call)), true);
        };
        let in_send = matches!(
            call,
            LeadCall::AnswerPlan { .. }
                | LeadCall::AnswerPermission { .. }
                | LeadCall::Shutdown { .. }
        );
        let result = match call {
            LeadCall::TeamCreate {
                team_name,
                description,
            } => seat
                .create_team(team_name.clone(), description)
                .await
                .map(|real| lead_tools::team_created(&real, &team_name)),
            LeadCall::TeamDelete => {
                // As the `leading` glue does: the take of the message this
                // turn handles must finish before the team's files go, or
                // it races the deletion and leaves the directory behind.
                self.coordination.settle_take().await;
                seat.delete_team()
                    .await
                    .map(|()| lead_tools::team_deleted(&self.fixed.identity.team))
            }
            LeadCall::Spawn(s) => self.spawn(seat.as_ref(), s).await,
            LeadCall::AnswerPlan {
                request_id,
                approve,
                feedback,
            } => {
                let answer = if approve {
                    PlanAnswer::Approve { mode: None }
                } else {
                    PlanAnswer::Reject {
                        feedback: feedback.unwrap_or_else(|| "no feedback given".into()),
                    }
                };
                seat.answer_plan(self.lead_caller(), request_id, answer)
                    .await
                    .map(|()| {
                        format::answered(if approve {
                            "Plan approved"
                        } else {
                            "Plan rejected"
                        })
                    })
            }
            LeadCall::AnswerPermission {
                request_id,
                approve,
                reason,
            } => {
                let answer = if approve {
                    PermitAnswer::Allow {
                        updated_input: None,
                        permission_updates: Vec::new(),
                    }
                } else {
                    PermitAnswer::Deny {
                        reason: reason.unwrap_or_else(|| "denied by the team lead".into()),
                    }
                };
                seat.answer_permission(self.lead_caller(), request_id, answer)
                    .await
                    .map(|()| {
                        format::answered(if approve {
                            "Permission granted"
                        } else {
                            "Permission denied"
                        })
                    })
            }
            LeadCall::Shutdown { to, reason } => {
                seat.shutdown(to.clone(), reason).await.map(|request_id| {
                    format::shutdown_requested(
                        &format!("Shutdown request sent to {to}"),
                        &request_id,
                        &to,
                    )
                })
            }
        };
        match result {
            Ok(text) => (text, false),
            Err(e) if in_send => (format::send_failed(&lead_error_text(&e)), true),
            Err(e) => (format::error(&lead_error_text(&e)), true),
        }
    }

    async fn spawn(&self, seat: &dyn LeadHost, s: SpawnCall) -> Result<String, LeadError> {
        let mode = match s.mode.as_deref().map(str::parse::<PermissionMode>) {
            None => None,
            Some(Ok(mode)) => Some(mode),
            Some(Err(e)) => return Err(LeadError::Invalid(format!("Agent: `mode`: {e}"))),
        };
        let req = LeadSpawn {
            entry: s.entry.clone(),
            name: s.name.clone(),
            prompt: s.prompt.clone(),
            mode,
            tools: None,
            model: s.model.clone(),
            budget_usd: None,
            plan_mode_required: s.plan_mode_required,
        };
        let agent_id = seat.spawn(self.lead_caller(), req).await?;
        Ok(lead_tools::spawned(&agent_id, &s))
    }
}
