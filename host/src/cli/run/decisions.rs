//! The run summary's "decisions" section: who decided the
//! team's permission requests and plans during this run, from the home's
//! decisions record (`home::decisions`): counts, and one line each
//! (`plan from fixer: approved by the lead`).

use serde::Serialize;

use crate::approvals::{Decider, Decision, Outcome};
use crate::cli::output::push_line;

/// What the summary shows of the decisions.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Decisions {
    /// Answered by the lead component.
    by_lead: usize,
    /// Answered by the person.
    by_person: usize,
    /// Answered by the approval policy.
    by_policy: usize,
    /// Escalations to the person (a request may be escalated, then answered).
    escalated: usize,
    /// Every decision and escalation, oldest first.
    items: Vec<Decision>,
}

impl Decisions {
    /// Counts `items` (this run's, oldest first).
    pub(super) fn new(items: Vec<Decision>) -> Decisions {
        let mut d = Decisions::default();
        for i in &items {
            match (i.outcome, i.decider) {
                (Outcome::Escalated, _) => d.escalated += 1,
                (_, Decider::Lead) => d.by_lead += 1,
                (_, Decider::Person) => d.by_person += 1,
                (_, Decider::Policy) => d.by_policy += 1,
            }
        }
        d.items = items;
        d
    }

    /// The section as text; nothing when nothing was decided.
    pub(super) fn human(&self, s: &mut String) {
        if self.items.is_empty() {
            return;
        }
        s.push_str(&format!(
            "\ndecisions: {} by the lead, {} by the person, {} by the policy; {} escalated to the person\n",
            self.by_lead, self.by_person, self.by_policy, self.escalated
        ));
        for d in &self.items {
            // The tool name and the summary are the teammate's text:
            // `push_line` makes them inert.
            match d.tool.is_some() && !d.summary.is_empty() {
                true => push_line(s, format!("  {}: {}", d.line(), d.summary)),
                false => push_line(s, format!("  {}", d.line())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approvals::{Answer, PlanAnswer, Request};
    use crate::protocol::{PermissionRequest, PlanApprovalRequest};

    #[test]
    fn the_section_counts_by_decider_and_shows_one_inert_line_each() {
        let plan = Request::Plan(PlanApprovalRequest::new("fixer", "t", "p.md", "x"));
        let forged = Request::Permission(PermissionRequest::new(
            "tester",
            "Bash\u{1b}[2J",
            "t",
            "d",
            json!({"command": "ls"}),
        ));
        let d = Decisions::new(vec![
            Decision::answered(
                &plan,
                Decider::Lead,
                &Answer::Plan(PlanAnswer::Approve { mode: None }),
            ),
            Decision::escalated(&forged, Decider::Policy, "no rule"),
        ]);
        let mut s = String::new();
        d.human(&mut s);
        assert!(
            s.contains("1 by the lead, 0 by the person, 0 by the policy; 1 escalated"),
            "{s}"
        );
        assert!(
            s.contains("  plan from fixer: approved by the lead\n"),
            "{s}"
        );
        assert!(!s.contains('\u{1b}'), "{s:?}");
        // A permission request's line says what was asked.
        assert!(s.contains("by the policy: ls"), "{s}");
        let j = serde_json::to_value(&d).unwrap();
        assert_eq!(j["byLead"], 1);
        assert_eq!(j["items"][0]["decider"], "lead");
    }
}
