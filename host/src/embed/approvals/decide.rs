//! The one approval path: the person's seat (`teamhost permit`
//! and `plan`, the live view, [`Host::permit`], [`Host::answer_plan`]), the
//! lead component's seat and the policy desk all answer a permission
//! request or a plan through [`decide`].
//!
//! In order:
//!
//! 1. the request exists (else [`DecideError::NotFound`]);
//! 2. for the lead and the policy: it still waits: no decision recorded,
//!    no answer in the requester's mail, the requester still a member
//!    (else [`DecideError::AlreadyAnswered`], naming who answered). The
//!    person may always answer, late too, as before: the teammate gets a
//!    late answer as a message, and the call keeps its first answer (the
//!    record too);
//! 3. the answerer may decide it: the person always (the person's answer
//!    wins whatever the route); the lead only a request routed to the lead
//!    that is not its own and whose answer stays within the lead's grant
//!    (`answer_grant.rs`); the policy only what is routed to the policy.
//!    Otherwise the refusal is recorded as an escalation and the request
//!    stays waiting for the person ([`DecideError::Escalated`]);
//! 4. the decision is claimed in the home (`home::decisions`: created,
//!    never replaced, so of the lead and the policy racing one answers) and the
//!    answer written to the requester's inbox from the lead's name
//!    ([`approvals::answer_permission`] / [`approvals::answer_plan`]); a
//!    failed write takes the claim back.

use std::path::PathBuf;

use crate::approvals::{self, by_whom, Answer, Decider, Decision, Request, Requester, Routes};
use crate::embed::Host;
use crate::error::Error;
use crate::home::{decisions, Home};
use crate::runtime::lead_host::Caller;
use crate::store::Team;

/// Who answers, with what it holds.
#[derive(Debug, Clone)]
pub enum Answerer {
    /// The person: may answer every waiting request.
    Person,
    /// The lead component, with its own mode and rules at the moment of the
    /// call: may answer what is routed to it, within that grant.
    Lead(Caller),
    /// The approval policy: answers what is routed to it.
    Policy,
}

impl Answerer {
    /// Who this is, as recorded.
    pub fn decider(&self) -> Decider {
        match self {
            Answerer::Person => Decider::Person,
            Answerer::Lead(_) => Decider::Lead,
            Answerer::Policy => Decider::Policy,
        }
    }
}

/// Why an answer was not given. Nothing was sent in every case.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No such request in the lead's mail.
    #[error("{0}")]
    NotFound(String),
    /// Already answered, or no longer waiting (its teammate left).
    #[error("{message}")]
    AlreadyAnswered {
        /// Who answered, when the decisions record says.
        by: Option<Decider>,
        /// What to show.
        message: String,
    },
    /// Not this answerer's to decide: recorded as escalated, it waits for
    /// the person.
    #[error("{0}")]
    Escalated(String),
    /// The answer itself is wrong (the other kind of request, a bad mode).
    #[error("{0}")]
    Invalid(String),
    /// The store or the home failed.
    #[error(transparent)]
    Failed(Error),
}

impl From<DecideError> for Error {
    fn from(e: DecideError) -> Error {
        match e {
            DecideError::Failed(e) => e,
            other => Error::Approval(other.to_string()),
        }
    }
}

/// The routes `decide` holds the lead and the policy to: those a run kept
/// in the home, else everything to the lead (only a team with a lead
/// component has a lead seat to ask; the person may answer anything).
pub fn routes_of(home: &Home, team: &str) -> Routes {
    match decisions::read_routes(home, team) {
        Ok(Some(routes)) => routes,
        Ok(None) => Routes::all_to(Decider::Lead),
        Err(e) => {
            tracing::warn!("team {team}: approval routes unreadable ({e}); the lead decides");
            Routes::all_to(Decider::Lead)
        }
    }
}

/// The directory of member `name` (path rules are read against it).
pub fn member_cwd(team: &Team, name: &str) -> PathBuf {
    team.config()
        .ok()
        .and_then(|c| c.member(name).and_then(|m| m.cwd.clone()))
        .map_or_else(|| PathBuf::from("/nonexistent"), PathBuf::from)
}

/// What routing needs to know of member `name`: its directory and the
/// catalogue entry it was spawned from (its `agentType`, which only the
/// host writes into the config).
pub fn requester(team: &Team, name: &str) -> Requester {
    let config = team.config().ok();
    let member = config.as_ref().and_then(|c| c.member(name));
    Requester {
        cwd: member
            .and_then(|m| m.cwd.clone())
            .map_or_else(|| PathBuf::from("/nonexistent"), PathBuf::from),
        entry: member.and_then(|m| m.agent_type.clone()),
    }
}

/// Answers `request_id` of `team` as `answerer` (see the module docs);
/// returns the decision recorded.
pub fn decide(
    home: &Home,
    team: &Team,
    answerer: &Answerer,
    request_id: &str,
    answer: Answer,
) -> Result<Decision, DecideError> {
    decide_recording(home, team, answerer, request_id, answer, true)
}

/// [`decide`], recording a refusal as an escalation only when
/// `record_refusal`: a lead past its limits of refused answers is refused
/// all the same, without another synced write in the home.
pub(crate) fn decide_recording(
    home: &Home,
    team: &Team,
    answerer: &Answerer,
    request_id: &str,
    answer: Answer,
    record_refusal: bool,
) -> Result<Decision, DecideError> {
    let request = approvals::find_request(team, request_id).map_err(|e| match e {
        Error::Approval(m) => DecideError::NotFound(m),
        other => DecideError::Failed(other),
    })?;
    check_waiting(home, team, &request, answerer)?;
    let lead = team
        .config()
        .map_err(DecideError::Failed)?
        .lead_name()
        .to_string();
    if let Some(why) = refusal(home, team, answerer, &request, &answer, &lead) {
        if record_refusal {
            let escalation = Decision::escalated(&request, answerer.decider(), &why);
            decisions::escalate(home, team.name(), &escalation).map_err(DecideError::Failed)?;
        }
        return Err(DecideError::Escalated(format!(
            "{request_id} is not {}'s to decide: {why}; escalated to the person",
            by_whom(answerer.decider())
        )));
    }
    let decision = Decision::answered(&request, answerer.decider(), &answer);
    let claimed =
        match decisions::claim(home, team.name(), &decision).map_err(DecideError::Failed)? {
            Ok(()) => true,
            // The record keeps the answer that took effect; the person's late
            // one is still sent.
            Err(_) if matches!(answerer, Answerer::Person) => false,
            Err(earlier) => return Err(answered_by(request_id, &earlier)),
        };
    let sent = match answer {
        Answer::Permit(a) => approvals::answer_permission(team, request_id, a),
        Answer::Plan(a) => approvals::answer_plan(team, request_id, a),
    };
    if let Err(e) = sent {
        if claimed {
            if let Err(undo) = decisions::unclaim(home, team.name(), request_id) {
                tracing::warn!(
                    "{request_id}: decision not taken back after a failed answer: {undo}"
                );
            }
        }
        return Err(match e {
            Error::Approval(m) => DecideError::Invalid(m),
            other => DecideError::Failed(other),
        });
    }
    Ok(decision)
}

fn check_waiting(
    home: &Home,
    team: &Team,
    request: &Request,
    answerer: &Answerer,
) -> Result<(), DecideError> {
    let id = request.id();
    if matches!(answerer, Answerer::Person) {
        // The person may always answer, late too (a request the ask
        // timeout denied, one answered before): the teammate gets the
        // answer as a message, and a call already answered keeps its
        // first answer.
        return Ok(());
    }
    if let Some(earlier) = decisions::decided(home, team.name(), id).map_err(DecideError::Failed)? {
        return Err(answered_by(id, &earlier));
    }
    let waiting = approvals::pending(team)
        .map_err(DecideError::Failed)?
        .iter()
        .any(|r| r.id() == id);
    if waiting {
        Ok(())
    } else {
        Err(DecideError::AlreadyAnswered {
            by: None,
            message: format!(
                "{id} is no longer waiting: it was answered (or timed out), or {} left the team",
                request.from()
            ),
        })
    }
}

fn answered_by(id: &str, earlier: &Decision) -> DecideError {
    DecideError::AlreadyAnswered {
        by: Some(earlier.decider),
        message: format!(
            "{id} was already answered: {} by {}",
            earlier.outcome.as_str(),
            by_whom(earlier.decider)
        ),
    }
}

/// `Some(why)` when `answerer` may not decide `request` with `answer`.
fn refusal(
    home: &Home,
    team: &Team,
    answerer: &Answerer,
    request: &Request,
    answer: &Answer,
    lead: &str,
) -> Option<String> {
    let routed = || {
        routes_of(home, team.name()).decider_for(request, lead, &requester(team, request.from()))
    };
    match answerer {
        Answerer::Person => None,
        Answerer::Lead(_) if crate::embed::grant::is_own_request(request, lead) => {
            Some(crate::embed::grant::OWN_REQUEST.into())
        }
        Answerer::Lead(caller) => match routed() {
            Decider::Lead => crate::embed::grant::LeadGrant::answering(caller)
                .within_own(request, answer, &member_cwd(team, request.from()))
                .err(),
            other => Some(format!("the manifest routes it to {}", by_whom(other))),
        },
        Answerer::Policy => match routed() {
            Decider::Policy => None,
            other => Some(format!("the manifest routes it to {}", by_whom(other))),
        },
    }
}

impl Host {
    /// Answers a teammate's permission request as the person, through the
    /// one approval path ([`Host::decide`]); the waiting tool call resumes.
    pub fn permit(
        &self,
        team: &str,
        request_id: &str,
        answer: approvals::PermitAnswer,
    ) -> crate::error::Result<()> {
        let answer = Answer::Permit(answer);
        self.decide(team, &Answerer::Person, request_id, answer)?;
        Ok(())
    }

    /// Approves or rejects a teammate's plan as the person, through the one
    /// approval path ([`Host::decide`]).
    pub fn answer_plan(
        &self,
        team: &str,
        request_id: &str,
        answer: approvals::PlanAnswer,
    ) -> crate::error::Result<()> {
        let answer = Answer::Plan(answer);
        self.decide(team, &Answerer::Person, request_id, answer)?;
        Ok(())
    }

    /// Answers `request_id` of `team` as `answerer`: the one approval path
    /// (see [`decide`]).
    pub fn decide(
        &self,
        team: &str,
        answerer: &Answerer,
        request_id: &str,
        answer: Answer,
    ) -> Result<Decision, DecideError> {
        let team = self.team(team).map_err(DecideError::Failed)?;
        decide(self.home(), &team, answerer, request_id, answer)
    }

    /// Every decision and escalation on `team`'s requests since `since_ms`
    /// (epoch milliseconds), oldest first.
    pub fn decisions(&self, team: &str, since_ms: u64) -> crate::error::Result<Vec<Decision>> {
        decisions::list(self.home(), self.team(team)?.name(), since_ms)
    }
}
