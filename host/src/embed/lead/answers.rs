//! The lead's answers to its teammates' permission and plan requests: which
//! request it may answer (not its own, not one answered), the bound of the
//! requester's catalogue entry ([`LeadGrant::within_entry`]), its refusals
//! recorded as escalations within its limits (`refusals.rs`), and the one
//! approval path every answer then takes ([`answer_through_host`]).

use crate::approvals::{self, Answer, Decider, Decision, PermitAnswer, PlanAnswer, Request};
use crate::embed::approvals::{decide_recording, member_cwd, Answerer, DecideError};
use crate::embed::grant::{CatalogueEntry, LeadGrant};
use crate::embed::lead::seat::{unavailable, LeadSeat};
use crate::embed::Host;
use crate::home::decisions;
use crate::runtime::lead_host::{Caller, LeadError};
use crate::store::Team;

impl LeadSeat {
    /// Whether a refusal now may still be recorded as an escalation.
    pub(super) fn refusal_quota(&self) -> Result<(), String> {
        self.refusals.lock().expect("refusals lock").quota(
            self.turn(),
            self.spec.max_refused_answers_per_turn,
            self.spec.max_refused_answers_total,
        )
    }

    /// Counts a refused answer of `request`, recorded as an escalation
    /// while `quota` allows; past it, the refusal says which limit kept it
    /// off the record.
    pub(super) fn refused(
        &self,
        request: &Request,
        refusal: LeadError,
        quota: &Result<(), String>,
    ) -> LeadError {
        self.refusals
            .lock()
            .expect("refusals lock")
            .count(self.turn());
        match quota {
            Ok(()) => {
                if let Ok(host) = self.host() {
                    record_escalation(&host, &self.team, request, &refusal.to_string());
                }
                refusal
            }
            Err(limit) => unrecorded(refusal, limit),
        }
    }

    /// Counts a refusal [`decide`](crate::embed::approvals::decide) made (and
    /// recorded, while `quota` allowed).
    pub(super) fn decided_refusal(
        &self,
        result: Result<(), LeadError>,
        quota: &Result<(), String>,
    ) -> Result<(), LeadError> {
        match result {
            Err(refusal @ LeadError::Denied(_)) => {
                self.refusals
                    .lock()
                    .expect("refusals lock")
                    .count(self.turn());
                Err(match quota {
                    Ok(()) => refusal,
                    Err(limit) => unrecorded(refusal, limit),
                })
            }
            other => other,
        }
    }

    /// Finds `id` among this team's requests; refuses the lead's own
    /// (recorded while `quota` allows) and answered ones.
    pub(super) fn answerable(
        &self,
        id: &str,
        quota: &Result<(), String>,
    ) -> Result<Request, LeadError> {
        let all = approvals::requests(&self.team).map_err(unavailable)?;
        let Some(request) = all.into_iter().find(|r| r.id() == id) else {
            return Err(LeadError::NotFound(format!(
                "no permission or plan request {id:?} in the lead's team"
            )));
        };
        if crate::embed::grant::is_own_request(&request, self.lead_name()) {
            let why = format!(
                "{id} is the lead's own request: {}; escalated to the person",
                crate::embed::grant::OWN_REQUEST
            );
            return Err(self.refused(&request, LeadError::Denied(why), quota));
        }
        let waiting = approvals::pending(&self.team).map_err(unavailable)?;
        if !waiting.iter().any(|r| r.id() == id) {
            return Err(LeadError::Conflict(format!(
                "{id} was already answered (or its teammate left)"
            )));
        }
        Ok(request)
    }

    /// The catalogue entry teammate `name` was spawned from by this lead
    /// (`None`: it was not).
    pub(super) fn entry_of(&self, name: &str) -> Option<CatalogueEntry> {
        let entry = self
            .spawned
            .lock()
            .expect("spawned lock")
            .get(name)
            .cloned();
        entry.and_then(|e| self.entry(&e).ok().cloned())
    }

    /// An answer gives at most what the requester's catalogue entry allows
    /// ([`LeadGrant::within_entry`]); [`decide`] then holds it to the
    /// lead's own grant. A refusal is the person's to answer.
    pub(super) fn check_within_entry(
        &self,
        caller: &Caller,
        request: &Request,
        answer: &Answer,
    ) -> Result<(), LeadError> {
        let entry = self.entry_of(request.from());
        let cwd = member_cwd(&self.team, request.from());
        LeadGrant::answering(caller)
            .within_entry(entry.as_ref(), request, answer, &cwd)
            .map_err(|why| {
                LeadError::Denied(format!("{}: {why}; escalated to the person", request.id()))
            })
    }

    /// Answers a permission request; a refusal counted is kept
    /// (`record.rs`).
    pub(super) async fn answer_permission_now(
        &self,
        caller: Caller,
        request_id: String,
        answer: PermitAnswer,
    ) -> Result<(), LeadError> {
        let before = self.refusals_total();
        let answered = self.answer_permission_counted(caller, request_id, answer);
        self.keep_if_refused(before).await;
        answered
    }

    /// Answers a plan; a refusal counted is kept (`record.rs`).
    pub(super) async fn answer_plan_now(
        &self,
        caller: Caller,
        request_id: String,
        answer: PlanAnswer,
    ) -> Result<(), LeadError> {
        let before = self.refusals_total();
        let answered = self.answer_plan_counted(caller, request_id, answer);
        self.keep_if_refused(before).await;
        answered
    }

    fn refusals_total(&self) -> u32 {
        self.refusals.lock().expect("refusals lock").total()
    }

    /// Keeps the seat when a refusal was counted since `before`.
    async fn keep_if_refused(&self, before: u32) {
        if self.refusals_total() != before {
            self.keep().await;
        }
    }

    fn answer_permission_counted(
        &self,
        caller: Caller,
        request_id: String,
        answer: PermitAnswer,
    ) -> Result<(), LeadError> {
        if let Some((what, text)) = permit_text(&answer) {
            self.check_text(what, &text)?;
        }
        let quota = self.refusal_quota();
        let request = self.answerable(&request_id, &quota)?;
        if !matches!(request, Request::Permission(_)) {
            return Err(LeadError::Invalid(format!(
                "{request_id} is a plan: answer it with answer-plan"
            )));
        }
        let host = self.host()?;
        let within = Answer::Permit(answer.clone());
        if let Err(refusal) = self.check_within_entry(&caller, &request, &within) {
            return Err(self.refused(&request, refusal, &quota));
        }
        if let Some((what, text)) = permit_text(&answer) {
            self.count_text(what, &text)?;
        }
        let answered = answer_through_host(
            &host,
            &self.team,
            caller,
            &request_id,
            SeatAnswer::Permission(answer),
            quota.is_ok(),
        );
        self.decided_refusal(answered, &quota)
    }

    fn answer_plan_counted(
        &self,
        caller: Caller,
        request_id: String,
        answer: PlanAnswer,
    ) -> Result<(), LeadError> {
        if let PlanAnswer::Reject { feedback } = &answer {
            self.check_text("the plan feedback", feedback)?;
        }
        let quota = self.refusal_quota();
        let request = self.answerable(&request_id, &quota)?;
        let Request::Plan(_) = &request else {
            return Err(LeadError::Invalid(format!(
                "{request_id} is a permission request: answer it with answer-permission"
            )));
        };
        let within = Answer::Plan(answer.clone());
        if let Err(refusal) = self.check_within_entry(&caller, &request, &within) {
            return Err(self.refused(&request, refusal, &quota));
        }
        if let PlanAnswer::Reject { feedback } = &answer {
            self.count_text("the plan feedback", feedback)?;
        }
        let host = self.host()?;
        let answered = answer_through_host(
            &host,
            &self.team,
            caller,
            &request_id,
            SeatAnswer::Plan(answer),
            quota.is_ok(),
        );
        self.decided_refusal(answered, &quota)
    }
}

/// The one place a lead's answer reaches the host:
/// [`decide`](crate::embed::approvals::decide) as
/// [`Answerer::Lead`] with the lead's grant at the moment of the call, the
/// same path the person's seat and the policy take (one
/// approval path). A refusal there is recorded as an escalation (when
/// `record_refusal`: the lead is within its limits of refused answers) and
/// the request stays waiting for the person.
pub(crate) fn answer_through_host(
    host: &Host,
    team: &Team,
    caller: Caller,
    request_id: &str,
    answer: SeatAnswer,
    record_refusal: bool,
) -> Result<(), LeadError> {
    let answer = match answer {
        SeatAnswer::Permission(a) => Answer::Permit(a),
        SeatAnswer::Plan(a) => Answer::Plan(a),
    };
    decide_recording(
        host.home(),
        team,
        &Answerer::Lead(caller),
        request_id,
        answer,
        record_refusal,
    )
    .map(|_| ())
    .map_err(|e| match e {
        DecideError::NotFound(m) => LeadError::NotFound(m),
        DecideError::AlreadyAnswered { message, .. } => LeadError::Conflict(message),
        DecideError::Escalated(m) => LeadError::Denied(m),
        DecideError::Invalid(m) => LeadError::Invalid(m),
        DecideError::Failed(e) => unavailable(e),
    })
}

/// Records that the lead was refused `request` before it reached
/// [`decide`](crate::embed::approvals::decide) (its own request, a plan mode wider
/// than its entry), so the person sees it escalated like every other
/// refusal.
fn record_escalation(host: &Host, team: &Team, request: &Request, why: &str) {
    let escalation = Decision::escalated(request, Decider::Lead, why);
    if let Err(e) = decisions::escalate(host.home(), team.name(), &escalation) {
        tracing::warn!("{}: escalation not recorded: {e}", request.id());
    }
}

/// `refusal`, with why it was not recorded as an escalation this time.
fn unrecorded(refusal: LeadError, limit: &str) -> LeadError {
    LeadError::Denied(format!(
        "{refusal} (not recorded again: {limit}; the request still waits for the person)"
    ))
}

/// The text of the lead's a permission answer writes to the teammate:
/// the denial reason or the replacement input.
fn permit_text(answer: &PermitAnswer) -> Option<(&'static str, String)> {
    match answer {
        PermitAnswer::Deny { reason } => Some(("the denial reason", reason.clone())),
        PermitAnswer::Allow {
            updated_input,
            permission_updates,
        } => {
            let text: String = updated_input
                .iter()
                .chain(permission_updates)
                .map(|v| v.to_string())
                .collect();
            (!text.is_empty()).then_some(("the replacement input", text))
        }
    }
}

/// An answer the seat passes on.
pub(crate) enum SeatAnswer {
    Permission(PermitAnswer),
    Plan(PlanAnswer),
}
