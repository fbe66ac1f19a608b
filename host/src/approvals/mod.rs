//! The lead's side of the two approval protocols: find a teammate's
//! `permission_request` or `plan_approval_request` in the lead's inbox (or, if
//! something already consumed it, the lead's history) and answer it in the
//! teammate's inbox, from the lead.
//!
//! Used by `teamhost permit`, `teamhost plan` and the [`Host`](crate::embed::Host)
//! API alike. An answer always comes from the lead's name: the runner accepts
//! permission and plan answers from the lead only, so a teammate cannot
//! approve itself.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`Request`], [`PermitAnswer`], [`PlanAnswer`], [`Decider`]: finding requests, answering them in the requester's inbox |
//! | `route.rs` | [`Routes`]: who decides a request (approval routing), what the policy answers |
//! | `decision.rs` | [`Decision`], [`Answer`]: one decision or escalation, as kept and shown |
//!
//! Who may answer what, and the one path every answer takes, is
//! `embed::Host::decide` (above the home, which keeps the decisions).

mod decision;
pub mod route;

pub use decision::{by_whom, Answer, Decision, Outcome, SUMMARY_CHARS};
pub use route::{PlanPolicy, Policy, PolicyVerdict, Requester, Route, Routes};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::protocol::{
    Parsed, PermissionRequest, PermissionResponse, PlanApprovalRequest, PlanApprovalResponse,
    ProtocolMessage, WireMessage,
};
use crate::store::{HistoryCache, InboxMessage, OutgoingMessage, Team};

/// The lead's answer to a permission request.
#[derive(Debug, Clone, PartialEq)]
pub enum PermitAnswer {
    /// Run the call; `updated_input` replaces its input when given, and
    /// `permission_updates` (the reference's suggestion objects, e.g.
    /// `{"type":"addRules",…}`) change the teammate's rules or mode for the
    /// rest of its session.
    Allow {
        /// Replacement input (`None`: the input as requested).
        updated_input: Option<Value>,
        /// Rule or mode changes to apply.
        permission_updates: Vec<Value>,
    },
    /// Refuse the call; the teammate gets the reason.
    Deny {
        /// Why.
        reason: String,
    },
}

/// The lead's answer to a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanAnswer {
    /// Approve; the teammate leaves plan mode for `mode` (`default` when
    /// `None`).
    Approve {
        /// The permission mode granted.
        mode: Option<crate::sandbox::PermissionMode>,
    },
    /// Reject; the teammate stays in plan mode and gets the feedback.
    Reject {
        /// What to change.
        feedback: String,
    },
}

/// A request found in the lead's mail.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// A teammate asks to run a tool call.
    Permission(PermissionRequest),
    /// A teammate submits a plan.
    Plan(PlanApprovalRequest),
}

impl Request {
    /// The request id.
    pub fn id(&self) -> &str {
        match self {
            Request::Permission(r) => &r.request_id,
            Request::Plan(r) => &r.request_id,
        }
    }

    /// The requesting teammate's name.
    pub fn from(&self) -> &str {
        match self {
            Request::Permission(r) => r.agent_id.split('@').next().unwrap_or(&r.agent_id),
            Request::Plan(r) => &r.from,
        }
    }
}

/// Every permission and plan request in the lead's inbox and history, oldest
/// first (answered ones included).
pub fn requests(team: &Team) -> Result<Vec<Request>> {
    requests_cached(team, &mut HistoryCache::new())
}

/// [`requests`], reading histories through `cache` (a reader that looks
/// often parses only what is new).
pub fn requests_cached(team: &Team, cache: &mut HistoryCache) -> Result<Vec<Request>> {
    let lead = team.config()?.lead_name().to_string();
    let inbox = team.read_inbox(&lead)?;
    Ok(cache
        .history(team, &lead)?
        .iter()
        .chain(&inbox)
        // Most of a lead's mail is something else: skip it unparsed.
        .filter(|m| {
            m.text.contains("permission_request") || m.text.contains("plan_approval_request")
        })
        .filter_map(|m| match ProtocolMessage::parse(&m.text) {
            Parsed::Protocol(ProtocolMessage::PermissionRequest(r)) => Some(Request::Permission(r)),
            Parsed::Protocol(ProtocolMessage::PlanApprovalRequest(r)) => Some(Request::Plan(r)),
            _ => None,
        })
        .collect())
}

/// Whether `m` is a permission or plan approval request or response: all a
/// reader of [`pending_cached`] needs of the histories it reads (a cache
/// made with `HistoryCache::keeping(approval_traffic)` holds only those).
pub fn approval_traffic(m: &InboxMessage) -> bool {
    matches!(
        ProtocolMessage::parse(&m.text),
        Parsed::Protocol(
            ProtocolMessage::PermissionRequest(_)
                | ProtocolMessage::PlanApprovalRequest(_)
                | ProtocolMessage::PermissionResponse(_)
                | ProtocolMessage::PlanApprovalResponse(_)
        )
    )
}

/// The requests still waiting for the lead, oldest first: no
/// `permission_response` / `plan_approval_response` with their id is in the
/// requester's inbox or history (a timeout's denial, recorded there by the
/// host, counts as an answer), and the requester is still a member.
pub fn pending(team: &Team) -> Result<Vec<Request>> {
    pending_cached(team, &mut HistoryCache::new())
}

/// [`pending`], reading histories through `cache`.
pub fn pending_cached(team: &Team, cache: &mut HistoryCache) -> Result<Vec<Request>> {
    let members = team.config()?.member_names();
    let mut out = Vec::new();
    for request in requests_cached(team, cache)? {
        let from = request.from();
        if !members.iter().any(|m| m == from) {
            continue;
        }
        let inbox = team.read_inbox(from).unwrap_or_default();
        let history = cache.history(team, from).unwrap_or_default();
        let answered = history
            .iter()
            .chain(&inbox)
            .filter(|m| m.text.contains(request.id()))
            .any(|m| match ProtocolMessage::parse(&m.text) {
                Parsed::Protocol(ProtocolMessage::PermissionResponse(r)) => {
                    r.request_id == request.id()
                }
                Parsed::Protocol(ProtocolMessage::PlanApprovalResponse(r)) => {
                    r.request_id == request.id()
                }
                _ => false,
            });
        if !answered {
            out.push(request);
        }
    }
    Ok(out)
}

/// The `permission_suggestions` of the permission request `request_id` (the
/// rules or mode change it proposes), for an answer that remembers them.
pub fn suggestions(team: &Team, request_id: &str) -> Result<Vec<Value>> {
    match find(team, request_id)? {
        Request::Permission(p) => Ok(p.permission_suggestions.unwrap_or_default()),
        Request::Plan(_) => Err(Error::Approval(format!(
            "{request_id} is a plan approval request: it has no permission suggestions"
        ))),
    }
}

/// The permission or plan request `request_id` in the lead's mail
/// (answered or not); `Error::Approval` when there is none.
pub fn find_request(team: &Team, request_id: &str) -> Result<Request> {
    find(team, request_id)
}

fn find(team: &Team, request_id: &str) -> Result<Request> {
    requests(team)?
        .into_iter()
        .find(|r| r.id() == request_id)
        .ok_or_else(|| {
            Error::Approval(format!(
                "no permission or plan request {request_id:?} in team {:?}; `teamhost inbox --team {} team-lead` shows the lead's messages",
                team.name(),
                team.name()
            ))
        })
}

/// Answers the permission request `request_id` in the requester's inbox.
pub fn answer_permission(team: &Team, request_id: &str, answer: PermitAnswer) -> Result<()> {
    let Request::Permission(request) = find(team, request_id)? else {
        return Err(Error::Approval(format!(
            "{request_id} is a plan approval request; answer it with `teamhost plan`"
        )));
    };
    let response = match answer {
        PermitAnswer::Allow {
            updated_input,
            permission_updates,
        } => PermissionResponse::allow(
            request_id,
            updated_input.unwrap_or(request.input.clone()),
            permission_updates,
        ),
        PermitAnswer::Deny { reason } => PermissionResponse::deny(request_id, reason),
    };
    reply(
        team,
        Request::Permission(request).from(),
        response.to_text(),
    )
}

/// Answers the plan approval request `request_id` in the requester's inbox.
pub fn answer_plan(team: &Team, request_id: &str, answer: PlanAnswer) -> Result<()> {
    let Request::Plan(request) = find(team, request_id)? else {
        return Err(Error::Approval(format!(
            "{request_id} is a permission request; answer it with `teamhost permit`"
        )));
    };
    let response = match answer {
        PlanAnswer::Approve { mode } => {
            let mode = mode.unwrap_or(crate::sandbox::PermissionMode::Default);
            PlanApprovalResponse::approve(request_id, Some(mode.as_str().to_string()))
        }
        PlanAnswer::Reject { feedback } => PlanApprovalResponse::reject(request_id, Some(feedback)),
    }
    // What a 2.1.332 teammate checks the answer against.
    .with_plan_digest(&request.plan_content);
    reply(team, &request.from, response.to_text())
}

fn reply(team: &Team, to: &str, text: String) -> Result<()> {
    let lead = team.config()?.lead_name().to_string();
    team.send(to, OutgoingMessage::new(lead, text)).map(|_| ())
}

/// Who decides a permission request or a plan (approval
/// routing): the manifest says it per teammate and per tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decider {
    /// The lead component (a team whose lead is a component).
    Lead,
    /// The person: the live view, `teamhost permit` / `plan`, the
    /// [`Host`](crate::embed::Host) API. Their answer always wins.
    Person,
    /// A rule in the manifest, answered by the host at once.
    Policy,
}

impl Decider {
    /// The word shown in the live view and the run summary.
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Lead => "lead",
            Decider::Person => "person",
            Decider::Policy => "policy",
        }
    }

    /// How strict a decider is, for routing (`approvals/route.rs`): the
    /// person (2), the policy (1, the person's own written rules, which
    /// escalate to the person what they do not name), the lead (0, an agent
    /// deciding within its grant). A route to a stricter decider catches
    /// any part of a call; one to a laxer decider only whole calls.
    pub fn strictness(self) -> u8 {
        match self {
            Decider::Person => 2,
            Decider::Policy => 1,
            Decider::Lead => 0,
        }
    }
}
