//! Whether an answer of the lead component stays within the lead's own
//! grant (a lead can never give a teammate more than it has).
//! Pure: the lead's mode and rules ([`Caller`]) against what the answer
//! lets run.
//!
//! | answer | within the grant when |
//! |---|---|
//! | deny a call, reject a plan | always (refusing never widens anything) |
//! | allow a call | the lead's own mode and rules would run that call (input as answered) in the requester's directory without asking |
//! | allow with `permission_updates` | each update is an `addRules` with `"behavior": "deny"` (a lead may narrow a teammate, never widen its rules or mode) |
//! | approve a plan into a mode | that mode has no power the lead's lacks |
//!
//! A `delegate` lead uses no tool itself: its grant is its catalogue
//! ([`super::lead_grant::delegates`], the one place that rule is written),
//! so nothing here bounds it; the seat holds each of its answers to the
//! requester's catalogue entry (`LeadSeat::check_within_entry`,
//! `check_plan_mode`) and refuses it a teammate that did not come from its
//! catalogue.

use std::path::Path;

use crate::approvals::{route::tool_call, Answer, PermitAnswer, PlanAnswer, Request};
use crate::runtime::lead_host::Caller;
use crate::sandbox::{decide_on_disk, PermissionMode, PolicyContext};

use super::lead_grant::{delegates, within_own_mode};

/// Why a lead may not answer a request of its own: the person does. The one
/// rule, asked by the seat (which counts the refusal) and by the approval
/// path ([`super::decide`]) alike.
pub const OWN_REQUEST: &str = "a lead never answers its own requests";

/// Whether `request` is the lead's own (`lead`: the lead's name in the
/// team), which the lead may not answer ([`OWN_REQUEST`]).
pub fn is_own_request(request: &Request, lead: &str) -> bool {
    request.from() == lead
}

/// `Some(why)` when `answer` to `request` gives more than `lead` has;
/// `cwd` is the requester's directory.
pub fn beyond_grant(
    lead: &Caller,
    request: &Request,
    answer: &Answer,
    cwd: &Path,
) -> Option<String> {
    // Whoever answers, a permission update may only narrow.
    if let Answer::Permit(PermitAnswer::Allow {
        permission_updates, ..
    }) = answer
    {
        if let Some(update) = permission_updates.iter().find(|u| !narrows(u)) {
            return Some(format!(
                "the permission update {update} would widen the teammate's rules or mode; \
                 a lead may only add deny rules"
            ));
        }
    }
    // A delegating lead's grant is its catalogue (`lead_grant::delegates`):
    // the seat holds each answer to the requester's catalogue entry.
    if delegates(lead.mode) {
        return None;
    }
    let lead_mode = lead.mode;
    match (request, answer) {
        (_, Answer::Permit(PermitAnswer::Deny { .. }))
        | (_, Answer::Plan(PlanAnswer::Reject { .. })) => None,
        (Request::Permission(p), Answer::Permit(PermitAnswer::Allow { updated_input, .. })) => {
            let input = updated_input.as_ref().unwrap_or(&p.input);
            let Some(call) = tool_call(&p.tool_name, input) else {
                return Some(format!(
                    "a {} call is not one the host can hold to the lead's own grant",
                    p.tool_name
                ));
            };
            let ctx = PolicyContext::new(cwd);
            let own = decide_on_disk(lead_mode, &lead.rules, &call, &ctx, &ctx.look(&call));
            (!own.is_allow()).then(|| {
                format!(
                    "allowing it is more than the lead's own grant ({lead_mode} mode and its \
                     rules would not run it: {})",
                    own.reason()
                )
            })
        }
        (Request::Plan(_), Answer::Plan(PlanAnswer::Approve { mode })) => {
            let m = mode.unwrap_or(PermissionMode::Default);
            (!within_own_mode(lead_mode, m)).then(|| {
                format!("approving the plan into {m} mode is more than the lead's own {lead_mode}")
            })
        }
        // The wrong kind of answer is refused by the answer itself.
        (Request::Permission(_), Answer::Plan(_)) | (Request::Plan(_), Answer::Permit(_)) => None,
    }
}

fn narrows(update: &serde_json::Value) -> bool {
    update.get("type").and_then(|t| t.as_str()) == Some("addRules")
        && update.get("behavior").and_then(|b| b.as_str()) == Some("deny")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::{PermissionRequest, PlanApprovalRequest};
    use crate::sandbox::ToolRules;

    fn lead(mode: PermissionMode, allow: &[&str]) -> Caller {
        Caller {
            mode,
            rules: ToolRules::new(allow.iter().copied(), [] as [&str; 0]).unwrap(),
        }
    }

    fn allow(updates: Vec<serde_json::Value>) -> Answer {
        Answer::Permit(PermitAnswer::Allow {
            updated_input: None,
            permission_updates: updates,
        })
    }

    fn bash(command: &str) -> Request {
        Request::Permission(PermissionRequest::new(
            "fixer",
            "Bash",
            "t",
            "d",
            json!({ "command": command }),
        ))
    }

    const CWD: &str = "/nonexistent/work/fixer";

    #[test]
    fn a_lead_may_allow_what_its_rules_allow_and_nothing_more_and_a_delegate_lead_is_bounded_by_the_seat(
    ) {
        let delegate = lead(PermissionMode::Delegate, &[]);
        assert_eq!(
            beyond_grant(&delegate, &bash("git push"), &allow(vec![]), Path::new(CWD)),
            None
        );
        let l = lead(PermissionMode::Default, &["Bash(cargo test:*)"]);
        let cwd = Path::new(CWD);
        assert_eq!(
            beyond_grant(&l, &bash("cargo test"), &allow(vec![]), cwd),
            None
        );
        let why = beyond_grant(&l, &bash("git push"), &allow(vec![]), cwd).unwrap();
        assert!(why.contains("more than the lead's own grant"), "{why}");
        let deny = Answer::Permit(PermitAnswer::Deny {
            reason: "no".into(),
        });
        assert_eq!(beyond_grant(&l, &bash("git push"), &deny, cwd), None);
    }

    #[test]
    fn a_lead_may_add_deny_rules_but_not_allow_rules_or_modes() {
        let l = lead(PermissionMode::Default, &["Bash(cargo test:*)"]);
        let cwd = Path::new(CWD);
        let deny_rule = json!({"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm:*"}], "behavior": "deny", "destination": "session"});
        let allow_rule = json!({"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "session"});
        let set_mode =
            json!({"type": "setMode", "mode": "bypassPermissions", "destination": "session"});
        assert_eq!(
            beyond_grant(&l, &bash("cargo test"), &allow(vec![deny_rule]), cwd),
            None
        );
        assert!(beyond_grant(&l, &bash("cargo test"), &allow(vec![allow_rule]), cwd).is_some());
        assert!(beyond_grant(&l, &bash("cargo test"), &allow(vec![set_mode]), cwd).is_some());
    }

    #[test]
    fn a_lead_approves_a_plan_into_at_most_its_own_mode_and_a_delegate_lead_by_its_catalogue() {
        let plan = Request::Plan(PlanApprovalRequest::new("fixer", "t", "p.md", "x"));
        let delegate = lead(PermissionMode::Delegate, &[]);
        let into_edits = Answer::Plan(PlanAnswer::Approve {
            mode: Some(PermissionMode::AcceptEdits),
        });
        assert_eq!(
            beyond_grant(&delegate, &plan, &into_edits, Path::new(CWD)),
            None
        );
        let l = lead(PermissionMode::Default, &[]);
        let into = |m: &str| {
            Answer::Plan(PlanAnswer::Approve {
                mode: Some(m.parse().unwrap()),
            })
        };
        let cwd = Path::new(CWD);
        assert_eq!(beyond_grant(&l, &plan, &into("default"), cwd), None);
        let why = beyond_grant(&l, &plan, &into("acceptEdits"), cwd).unwrap();
        assert!(why.contains("acceptEdits"), "{why}");
    }

    #[test]
    fn a_delegate_lead_may_not_widen_through_a_permission_update_either() {
        let delegate = lead(PermissionMode::Delegate, &[]);
        let set_mode =
            json!({"type": "setMode", "mode": "bypassPermissions", "destination": "session"});
        let why = beyond_grant(
            &delegate,
            &bash("cargo test"),
            &allow(vec![set_mode]),
            Path::new(CWD),
        )
        .unwrap();
        assert!(why.contains("only add deny rules"), "{why}");
    }
}
