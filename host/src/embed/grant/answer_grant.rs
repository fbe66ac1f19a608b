//! [`LeadGrant`]'s questions about answers: whether an answer of the lead
//! component stays within the requester's catalogue entry
//! ([`LeadGrant::within_entry`], asked by the seat before the one approval
//! path) and within the lead's own grant ([`LeadGrant::within_own`], asked
//! by that path after routing), so a lead can never give a teammate more
//! than the person gave it. Pure: the lead's mode and rules against what
//! the answer lets run.
//!
//! | answer | within the grant when |
//! |---|---|
//! | deny a call, reject a plan | always (refusing never widens anything) |
//! | allow a call | the lead's own mode and rules would run that call (input as answered) in the requester's directory without asking |
//! | allow with `permission_updates` | each update is an `addRules` with `"behavior": "deny"` (a lead may narrow a teammate, never widen its rules or mode) |
//! | approve a plan into a mode | that mode has no power the lead's lacks |
//!
//! A `delegate` lead uses no tool itself: its grant is its catalogue
//! ([`crate::embed::grant::lead_grant::delegates`], the one place that rule is written),
//! so its own grant bounds nothing; [`LeadGrant::within_entry`] holds each
//! of its answers to the requester's catalogue entry and refuses it a
//! teammate that did not come from its catalogue.

use std::path::Path;

use crate::approvals::{route::tool_call, Answer, PermitAnswer, PlanAnswer, Request};
use crate::sandbox::{decide_on_disk, PermissionMode, PolicyContext};

use crate::embed::grant::lead_grant::{delegates, mode_at_most, within_own_mode, LeadGrant};
use crate::embed::grant::spec::CatalogueEntry;

/// Why a lead may not answer a request of its own: the person does. The one
/// rule, asked by the seat (which counts the refusal) and by the approval
/// path ([`crate::embed::approvals::decide`]) alike.
pub const OWN_REQUEST: &str = "a lead never answers its own requests";

/// Whether `request` is the lead's own (`lead`: the lead's name in the
/// team), which the lead may not answer ([`OWN_REQUEST`]).
pub fn is_own_request(request: &Request, lead: &str) -> bool {
    request.from() == lead
}

impl LeadGrant {
    /// Whether `answer` to `request` stays within this lead's own grant;
    /// `Err(why)` when it gives more than the lead has. `cwd` is the
    /// requester's directory. The one approval path asks it of every
    /// answer of a lead ([`crate::embed::approvals::decide`]), after routing.
    pub fn within_own(&self, request: &Request, answer: &Answer, cwd: &Path) -> Result<(), String> {
        match beyond_own(self, request, answer, cwd) {
            None => Ok(()),
            Some(why) => Err(why),
        }
    }

    /// Whether `answer` to `request` stays within what the requester's
    /// catalogue entry allows (`entry`: `None` when the requester did not
    /// come from this lead's catalogue). Allowing a call: the entry's
    /// `max_mode` and allow rules would run it unasked, and a delegating
    /// lead may allow no call of a teammate it did not spawn. Approving a
    /// plan: into at most the entry's `max_mode` (without an entry, the
    /// lead's mode) and at most the lead's own. Refusing is always within.
    pub fn within_entry(
        &self,
        entry: Option<&CatalogueEntry>,
        request: &Request,
        answer: &Answer,
        cwd: &Path,
    ) -> Result<(), String> {
        match answer {
            Answer::Permit(PermitAnswer::Deny { .. }) | Answer::Plan(PlanAnswer::Reject { .. }) => {
                Ok(())
            }
            Answer::Permit(PermitAnswer::Allow { .. }) => match entry {
                Some(entry) => {
                    let most = LeadGrant {
                        mode: entry.max_mode,
                        rules: entry.rules.clone(),
                        models: Vec::new(),
                        budget_left_microdollars: None,
                    };
                    most.within_own(request, answer, cwd).map_err(|why| {
                        format!(
                            "it asks for more than catalogue entry {:?} allows ({why})",
                            entry.name
                        )
                    })
                }
                None if delegates(self.mode) => Err(format!(
                    "{} was not spawned from this lead's catalogue, and a delegating lead's \
                     grant is its catalogue",
                    request.from()
                )),
                None => Ok(()),
            },
            Answer::Plan(PlanAnswer::Approve { mode }) => {
                let mode = mode.unwrap_or(PermissionMode::Default);
                let ceiling = entry.map_or(self.mode, |e| e.max_mode);
                if mode_at_most(mode, ceiling) && within_own_mode(self.mode, mode) {
                    Ok(())
                } else {
                    Err(format!(
                        "approving {}'s plan into mode {mode} is more than the lead may give",
                        request.from()
                    ))
                }
            }
        }
    }
}

/// `Some(why)` when `answer` to `request` gives more than `lead` has.
fn beyond_own(lead: &LeadGrant, request: &Request, answer: &Answer, cwd: &Path) -> Option<String> {
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

    fn lead(mode: PermissionMode, allow: &[&str]) -> LeadGrant {
        LeadGrant {
            mode,
            rules: ToolRules::new(allow.iter().copied(), [] as [&str; 0]).unwrap(),
            models: Vec::new(),
            budget_left_microdollars: None,
        }
    }

    fn beyond_grant(lead: &LeadGrant, r: &Request, a: &Answer, cwd: &Path) -> Option<String> {
        lead.within_own(r, a, cwd).err()
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

    #[test]
    fn within_entry_holds_an_answer_to_the_requesters_catalogue_entry() {
        let cwd = Path::new(CWD);
        let entry = CatalogueEntry {
            max_mode: PermissionMode::AcceptEdits,
            rules: ToolRules::new(["Bash(cargo test:*)"], [] as [&str; 0]).unwrap(),
            ..CatalogueEntry::new("tester", "tester.wasm")
        };
        let delegate = lead(PermissionMode::Delegate, &[]);
        let yes = allow(vec![]);
        assert_eq!(
            delegate.within_entry(Some(&entry), &bash("cargo test"), &yes, cwd),
            Ok(())
        );
        let why = delegate
            .within_entry(Some(&entry), &bash("git push"), &yes, cwd)
            .unwrap_err();
        assert!(why.contains("catalogue entry \"tester\" allows"), "{why}");
        // A delegating lead may allow no call of a teammate it did not spawn;
        // another lead's own grant is asked on the approval path instead.
        let why = delegate
            .within_entry(None, &bash("cargo test"), &yes, cwd)
            .unwrap_err();
        assert!(
            why.contains("not spawned from this lead's catalogue"),
            "{why}"
        );
        let l = lead(PermissionMode::Default, &[]);
        assert_eq!(l.within_entry(None, &bash("git push"), &yes, cwd), Ok(()));
        // Refusing is always within.
        let deny = Answer::Permit(PermitAnswer::Deny {
            reason: "no".into(),
        });
        assert_eq!(delegate.within_entry(None, &bash("x"), &deny, cwd), Ok(()));
        // A plan: at most the entry's max_mode, and at most the lead's own.
        let plan = Request::Plan(PlanApprovalRequest::new("fixer", "t", "p.md", "x"));
        let into = |m: PermissionMode| Answer::Plan(PlanAnswer::Approve { mode: Some(m) });
        let edits = into(PermissionMode::AcceptEdits);
        assert_eq!(
            delegate.within_entry(Some(&entry), &plan, &edits, cwd),
            Ok(())
        );
        let bypass = into(PermissionMode::BypassPermissions);
        assert!(delegate
            .within_entry(Some(&entry), &plan, &bypass, cwd)
            .is_err());
        let why = l
            .within_entry(Some(&entry), &plan, &edits, cwd)
            .unwrap_err();
        assert!(why.contains("fixer's plan into mode acceptEdits"), "{why}");
    }
}
