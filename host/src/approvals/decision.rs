//! One decision on a request, as the host keeps it (`home::decisions`) and
//! shows it (the live view, `run`'s summary): who decided, what, when, and
//! a bounded summary of what was asked. Also an escalation: a decider that
//! could not decide, and the request left for the person.

use serde::{Deserialize, Serialize};

use super::{Decider, PermitAnswer, PlanAnswer, Request};

/// The most characters of a request's summary that are kept.
pub const SUMMARY_CHARS: usize = 200;

/// What came of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A permission request was allowed.
    Allowed,
    /// A permission request was denied.
    Denied,
    /// A plan was approved.
    Approved,
    /// A plan was rejected.
    Rejected,
    /// The decider could not decide; the request waits for the person.
    Escalated,
}

impl Outcome {
    /// The word shown: `allowed`, …, `escalated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::Approved => "approved",
            Outcome::Rejected => "rejected",
            Outcome::Escalated => "escalated",
        }
    }
}

/// One decision (or escalation) on one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The request's id.
    pub request_id: String,
    /// The teammate that asked.
    pub from: String,
    /// The tool a permission request asks for; `None`: a plan.
    pub tool: Option<String>,
    /// What was asked, one line, at most [`SUMMARY_CHARS`] characters
    /// (teammate text: escape it before a terminal shows it).
    pub summary: String,
    /// Who decided, or who escalated.
    pub decider: Decider,
    /// What came of it.
    pub outcome: Outcome,
    /// The reason, feedback or why it was escalated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When, in epoch milliseconds.
    pub at_ms: u64,
}

impl Decision {
    /// A decision by `decider` on `request` answered with `answer`, now.
    pub fn answered(request: &Request, decider: Decider, answer: &Answer) -> Decision {
        let (outcome, reason) = match answer {
            Answer::Permit(PermitAnswer::Allow { .. }) => (Outcome::Allowed, None),
            Answer::Permit(PermitAnswer::Deny { reason }) => (Outcome::Denied, Some(reason)),
            Answer::Plan(PlanAnswer::Approve { .. }) => (Outcome::Approved, None),
            Answer::Plan(PlanAnswer::Reject { feedback }) => (Outcome::Rejected, Some(feedback)),
        };
        Decision::new(request, decider, outcome, reason.cloned())
    }

    /// `decider` could not decide `request` (`why`); it waits for the person.
    pub fn escalated(request: &Request, decider: Decider, why: &str) -> Decision {
        Decision::new(request, decider, Outcome::Escalated, Some(why.to_string()))
    }

    fn new(request: &Request, decider: Decider, outcome: Outcome, reason: Option<String>) -> Self {
        Decision {
            request_id: request.id().to_string(),
            from: request.from().to_string(),
            tool: match request {
                Request::Permission(p) => Some(p.tool_name.clone()),
                Request::Plan(_) => None,
            },
            summary: summary(request),
            decider,
            outcome,
            reason: reason.map(|r| bounded(&r)),
            at_ms: now_ms(),
        }
    }

    /// One line: `plan from fixer: approved by the lead`,
    /// `Bash from fixer: escalated to the person by the policy`.
    pub fn line(&self) -> String {
        let what = match &self.tool {
            Some(tool) => format!("{tool} from {}", self.from),
            None => format!("plan from {}", self.from),
        };
        let by = by_whom(self.decider);
        match self.outcome {
            Outcome::Escalated => format!("{what}: escalated to the person by {by}"),
            o => format!("{what}: {} by {by}", o.as_str()),
        }
    }
}

/// `the lead`, `the person`, `the policy`.
pub fn by_whom(decider: Decider) -> &'static str {
    match decider {
        Decider::Lead => "the lead",
        Decider::Person => "the person",
        Decider::Policy => "the policy",
    }
}

/// A permission answer or a plan answer: what [`Decision::answered`] and
/// the host's one answer path (`embed::Host::decide`) take.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// To a permission request.
    Permit(PermitAnswer),
    /// To a plan.
    Plan(PlanAnswer),
}

fn summary(request: &Request) -> String {
    let text = match request {
        Request::Permission(p) => match p.input.get("command").and_then(|c| c.as_str()) {
            Some(command) => command.to_string(),
            None => p.input.to_string(),
        },
        Request::Plan(p) => p.plan_content.clone(),
    };
    bounded(&text)
}

fn bounded(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= SUMMARY_CHARS {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::PermissionRequest;

    #[test]
    fn a_decision_says_who_decided_what_in_one_line_without_control_characters() {
        let req = Request::Permission(PermissionRequest::new(
            "fixer",
            "Bash",
            "toolu_1",
            "run",
            json!({"command": "rm -rf x\u{1b}[2J\nsecond line"}),
        ));
        let d = Decision::answered(
            &req,
            Decider::Policy,
            &Answer::Permit(PermitAnswer::Deny {
                reason: "no".into(),
            }),
        );
        assert_eq!(d.line(), "Bash from fixer: denied by the policy");
        assert!(!d.summary.chars().any(char::is_control), "{:?}", d.summary);
        let e = Decision::escalated(&req, Decider::Lead, "beyond the lead's grant");
        assert_eq!(
            e.line(),
            "Bash from fixer: escalated to the person by the lead"
        );
        let long = "x".repeat(5000);
        assert_eq!(bounded(&long).chars().count(), SUMMARY_CHARS);
    }
}
