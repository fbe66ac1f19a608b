//! `teamhost:agent/messaging`: SendMessage's semantics for a teammate.
//!
//! Direct messages and broadcasts are delivered at once. A shutdown answer is
//! recorded for the runner, which acts on it when the turn ends (an approval
//! stops the teammate; a rejection is sent to the requester right away).
//! Requesting shutdowns and answering plans are the lead's: a teammate calling
//! them gets `denied`.
//!
//! Every call passes the sandbox first (a deny rule on `SendMessage` denies
//! send, broadcast and the lead's requests and answers); `respond-shutdown`
//! and `request-plan-approval` have no reference tool, so no rule can take
//! them away. Direct messages (plans included) and broadcasts are counted
//! against the coordination limits, and what they write into the team's
//! store against the tree's `max_team_bytes_total` (a broadcast once per
//! recipient, a plan twice: its file and the request); a shutdown answer is
//! not.

use super::{blocking, CoordinationGlue};
use crate::protocol::{PlanApprovalRequest, PlanApprovalResponse, ShutdownRejected, WireMessage};
use crate::runtime::bindings::messaging::{
    BroadcastDelivery, Host, MessageDelivery, Routing, ShutdownRequestDelivery,
};
use crate::runtime::bindings::protocol::{PlanResponse, ShutdownResponse};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::state::ShutdownDecision;
use crate::runtime::GuestError;
use crate::sandbox::{CoordinationKind, MessagingCall, PermissionMode, TeamAct};
use crate::store::OutgoingMessage;

impl CoordinationGlue<'_> {
    fn outgoing(&self, text: String, summary: Option<String>) -> OutgoingMessage {
        OutgoingMessage {
            from: self.fixed.identity.name.clone(),
            text,
            summary,
            color: Some(self.fixed.identity.color.clone()),
        }
    }

    fn is_lead(&self) -> bool {
        self.fixed.identity.name == self.fixed.lead
    }

    /// Refuses what a teammate may not send: text over the message limit
    /// (summary included), protocol messages disguised as content (only the
    /// host and the lead write those), and messages to itself.
    pub(crate) fn check_outgoing(
        &self,
        what: &str,
        to: Option<&str>,
        text: &str,
        summary: Option<&str>,
    ) -> Result<(), WitError> {
        self.check_size(what, text, summary)?;
        if let crate::protocol::Parsed::Protocol(_) | crate::protocol::Parsed::Invalid { .. } =
            crate::protocol::ProtocolMessage::parse(text)
        {
            return Err(WitError::Denied(format!(
                "{what} is a protocol message; teammates send those only through the messaging functions (respond-shutdown, request-plan-approval, …)"
            )));
        }
        if to == Some(self.fixed.identity.name.as_str()) {
            return Err(WitError::Invalid(format!(
                "{} cannot send a message to itself",
                self.fixed.identity.name
            )));
        }
        Ok(())
    }

    /// Refuses text over the message limit (summary included).
    pub(crate) fn check_size(
        &self,
        what: &str,
        text: &str,
        summary: Option<&str>,
    ) -> Result<(), WitError> {
        let len = text.len() + summary.map_or(0, str::len);
        self.fixed
            .limits
            .check_message(what, len)
            .map_err(WitError::Invalid)
    }
}

/// The gate of one `messaging` call.
fn gate(call: MessagingCall) -> CoordinationKind {
    CoordinationKind::Messaging(call)
}

impl Host for CoordinationGlue<'_> {
    async fn send(
        &mut self,
        to: String,
        content: String,
        summary: Option<String>,
    ) -> Result<MessageDelivery, GuestError> {
        self.permissions
            .authorize_coordination(gate(MessagingCall::Send))
            .and_then(|()| {
                self.check_outgoing("the message", Some(&to), &content, summary.as_deref())
            })?;
        self.coordination
            .count_act(&self.fixed.budget, TeamAct::Message)?;
        self.coordination.count_team_bytes(
            &self.fixed.budget,
            "the message",
            content.len() + summary.as_ref().map_or(0, String::len),
        )?;
        let team = self.team.store.clone();
        let msg = self.outgoing(content.clone(), summary.clone());
        let target = to.clone();
        let (_, target_color) = blocking(move || {
            let config = team.config()?;
            let color = config.member(&target).and_then(|m| m.color.clone());
            let entry = team.send(&target, msg)?;
            Ok((entry, color))
        })
        .await?;
        if to != self.fixed.lead {
            self.coordination
                .turn
                .peer_dms
                .push((to.clone(), summary.clone()));
        } else {
            self.coordination.turn.to_lead = Some(content.clone());
        }
        Ok(MessageDelivery {
            message: format!("Message sent to {to}'s inbox"),
            routing: Routing {
                sender: self.fixed.identity.name.clone(),
                target: format!("@{to}"),
                target_color,
                summary,
                content,
            },
        })
    }

    async fn broadcast(
        &mut self,
        content: String,
        summary: Option<String>,
    ) -> Result<BroadcastDelivery, GuestError> {
        self.permissions
            .authorize_coordination(gate(MessagingCall::Broadcast))
            .and_then(|()| {
                self.check_outgoing("the broadcast", None, &content, summary.as_deref())
            })?;
        self.coordination
            .count_act(&self.fixed.budget, TeamAct::Broadcast)?;
        // Written once into every other inbox: counted that many times.
        let (team, me) = (self.team.store.clone(), self.fixed.identity.name.clone());
        let others = blocking(move || {
            Ok(team
                .config()?
                .member_names()
                .iter()
                .filter(|n| **n != me)
                .count())
        })
        .await?;
        let len = content.len() + summary.as_ref().map_or(0, String::len);
        self.coordination.count_team_bytes(
            &self.fixed.budget,
            "the broadcast",
            len.saturating_mul(others),
        )?;
        let team = self.team.store.clone();
        let msg = self.outgoing(content.clone(), summary.clone());
        let recipients = blocking(move || team.broadcast(msg)).await?;
        Ok(BroadcastDelivery {
            message: format!(
                "Message broadcast to {} teammate(s): {}",
                recipients.len(),
                recipients.join(", ")
            ),
            recipients,
            routing: Routing {
                sender: self.fixed.identity.name.clone(),
                target: "@team".into(),
                target_color: None,
                summary,
                content,
            },
        })
    }

    async fn request_shutdown(
        &mut self,
        to: String,
        reason: Option<String>,
    ) -> Result<ShutdownRequestDelivery, GuestError> {
        self.permissions
            .authorize_coordination(gate(MessagingCall::RequestShutdown))?;
        if let Some(through_seat) =
            super::leading::messaging_shutdown(self.lead_seat, to.clone(), reason).await
        {
            return through_seat;
        }
        Err(WitError::Denied(format!(
            "only the lead can ask {to} to shut down; {} is a teammate",
            self.fixed.identity.name
        ))
        .into())
    }

    async fn respond_shutdown(
        &mut self,
        request_id: String,
        response: ShutdownResponse,
    ) -> Result<(), GuestError> {
        // Always allowed (no rule can name it) and never counted: the lead
        // must be able to stop any teammate.
        self.permissions
            .authorize_coordination(gate(MessagingCall::RespondShutdown))?;
        let Some(pos) = self
            .coordination
            .pending_shutdowns
            .iter()
            .position(|r| *r == request_id)
        else {
            return Err(WitError::Invalid(format!(
                "no shutdown request {request_id:?} is waiting for an answer from {}",
                self.fixed.identity.name
            ))
            .into());
        };
        self.coordination.pending_shutdowns.remove(pos);
        match response {
            ShutdownResponse::Approve => {
                self.coordination.turn.shutdown = Some(ShutdownDecision::Approved { request_id });
                Ok(())
            }
            ShutdownResponse::Reject(reason) => {
                if let Err(e) = self.check_size("the reason", &reason, None) {
                    self.coordination.pending_shutdowns.push(request_id);
                    return Err(e.into());
                }
                let text =
                    ShutdownRejected::new(&request_id, &self.fixed.identity.name, reason.clone())
                        .to_text();
                let (team, lead) = (self.team.store.clone(), self.fixed.lead.clone());
                let msg = self.outgoing(text, None);
                let sent = blocking(move || team.send(&lead, msg).map(|_| ())).await;
                if sent.is_ok() {
                    self.coordination.turn.shutdown =
                        Some(ShutdownDecision::Rejected { request_id, reason });
                }
                sent
            }
        }
    }

    async fn request_plan_approval(&mut self, plan: String) -> Result<String, GuestError> {
        self.permissions
            .authorize_coordination(gate(MessagingCall::RequestPlanApproval))
            .and_then(|()| self.check_size("the plan", &plan, None))?;
        if self.permissions.mode() != PermissionMode::Plan
            && !self.fixed.identity.plan_mode_required
        {
            return Err(WitError::Invalid(format!(
                "{} is not in plan mode (mode {}); only a teammate in plan mode submits a plan",
                self.fixed.identity.name,
                self.permissions.mode()
            ))
            .into());
        }
        // A plan is a message to the lead (and a file in the team's
        // directory): counted like one.
        self.coordination
            .count_act(&self.fixed.budget, TeamAct::Message)?;
        // Written twice: the plan's file and the request in the lead's inbox.
        self.coordination.count_team_bytes(
            &self.fixed.budget,
            "the plan",
            plan.len().saturating_mul(2),
        )?;
        let team = self.team.store.clone();
        let (me, lead) = (self.fixed.identity.name.clone(), self.fixed.lead.clone());
        let auto = self.team.auto_approve_plans;
        let digest = crate::protocol::lead_sig::plan_digest(&plan);
        let sent = blocking(move || {
            let file = team.write_plan(&me, &plan)?;
            // The approval names the plan it approves (`planDigest`): a
            // keyed teammate takes an approval without it as a rejection.
            let auto_answer = auto.then(|| {
                PlanApprovalResponse::approve("", Some("default".to_string()))
                    .with_plan_digest(&plan)
            });
            let request = PlanApprovalRequest::new(&me, team.name(), file, plan);
            let id = request.request_id.clone();
            // As the reference: no summary and no colour on this message.
            team.send(&lead, OutgoingMessage::new(&me, request.to_text()))?;
            if let Some(mut answer) = auto_answer {
                // The reference's behaviour, only when the host opted in.
                // Written under the lead's name in this process: a keyed
                // teammate's store counts it through its ledger.
                answer.request_id = id.clone();
                team.send(&me, OutgoingMessage::new(&lead, answer.to_text()))?;
            }
            Ok(id)
        })
        .await?;
        self.coordination.pending_plan = Some(sent.clone());
        self.coordination.pending_plan_digest = Some(digest);
        Ok(sent)
    }

    async fn respond_plan_approval(
        &mut self,
        to: String,
        request_id: String,
        response: PlanResponse,
    ) -> Result<(), GuestError> {
        self.permissions
            .authorize_coordination(gate(MessagingCall::RespondPlanApproval))?;
        if !self.is_lead() {
            return Err(WitError::Denied(format!(
                "only the lead can answer {to}'s plan; {} is a teammate",
                self.fixed.identity.name
            ))
            .into());
        }
        if let Some(through_seat) = super::leading::messaging_plan_answer(
            self.lead_seat,
            self.permissions,
            request_id,
            response,
        )
        .await
        {
            return through_seat;
        }
        Err(WitError::Unavailable(
            "plan answers from a lead component are not supported yet".into(),
        )
        .into())
    }
}
