use std::path::Path;

use serde_json::json;

use super::*;
use crate::protocol::{PermissionRequest, PlanApprovalRequest};

fn bash(from: &str, command: &str) -> Request {
    Request::Permission(PermissionRequest::new(
        from,
        "Bash",
        "toolu_1",
        "run",
        json!({ "command": command }),
    ))
}

fn plan(from: &str) -> Request {
    Request::Plan(PlanApprovalRequest::new(from, "t", "plan.md", "do it"))
}

fn route(teammate: &str, tool: &str, decider: Decider) -> Route {
    Route {
        teammate: teammate.into(),
        tool: tool.into(),
        decider,
    }
}

const CWD: &str = "/nonexistent/work";

#[test]
fn the_leads_own_request_always_goes_to_the_person() {
    let routes = Routes::new(
        Decider::Lead,
        vec![route("*", "*", Decider::Policy)],
        Policy::default(),
    )
    .unwrap();
    assert_eq!(
        routes.decider_for(&bash("team-lead", "ls"), "team-lead", Path::new(CWD)),
        Decider::Person
    );
    assert_eq!(
        routes.decider_for(&bash("fixer", "ls"), "team-lead", Path::new(CWD)),
        Decider::Policy
    );
}

#[test]
fn the_first_matching_route_wins_before_the_default() {
    let routes = Routes::new(
        Decider::Lead,
        vec![
            route("fixer", "Bash(git push:*)", Decider::Person),
            route("fixer", "plan", Decider::Person),
            route("*", "Bash", Decider::Policy),
        ],
        Policy::default(),
    )
    .unwrap();
    let at = |r: &Request| routes.decider_for(r, "team-lead", Path::new(CWD));
    assert_eq!(at(&bash("fixer", "git push origin")), Decider::Person);
    assert_eq!(at(&bash("fixer", "cargo test")), Decider::Policy);
    assert_eq!(at(&bash("tester", "git push")), Decider::Policy);
    assert_eq!(at(&plan("fixer")), Decider::Person);
    assert_eq!(at(&plan("tester")), Decider::Lead);
}

#[test]
fn the_policy_allows_denies_and_escalates() {
    let routes = Routes::new(
        Decider::Policy,
        Vec::new(),
        Policy {
            allow: vec!["Bash(cargo test:*)".into()],
            deny: vec!["Bash(rm:*)".into()],
            plans: PlanPolicy::Person,
        },
    )
    .unwrap();
    let v = |r: &Request| routes.policy_verdict(r, Path::new(CWD));
    assert!(matches!(
        v(&bash("a", "cargo test -q")),
        PolicyVerdict::Allow(_)
    ));
    assert!(
        matches!(v(&bash("a", "rm -rf /")), PolicyVerdict::Deny(w) if w.contains("Bash(rm:*)"))
    );
    assert!(matches!(
        v(&bash("a", "curl x")),
        PolicyVerdict::Escalate(_)
    ));
    assert!(matches!(v(&plan("a")), PolicyVerdict::Escalate(_)));
}

#[test]
fn a_plan_is_approved_by_the_policy_only_when_it_says_approve() {
    let routes = Routes::new(
        Decider::Policy,
        Vec::new(),
        Policy {
            plans: PlanPolicy::Approve,
            ..Policy::default()
        },
    )
    .unwrap();
    assert!(matches!(
        routes.policy_verdict(&plan("a"), Path::new(CWD)),
        PolicyVerdict::Allow(_)
    ));
}

#[test]
fn a_tool_teamhost_does_not_run_is_matched_by_its_bare_name_only() {
    let routes = Routes::new(
        Decider::Policy,
        Vec::new(),
        Policy {
            allow: vec!["WebFetch".into()],
            ..Policy::default()
        },
    )
    .unwrap();
    let req = Request::Permission(PermissionRequest::new(
        "a",
        "WebFetch",
        "toolu_1",
        "fetch",
        json!({"url": "https://example.com"}),
    ));
    assert!(matches!(
        routes.policy_verdict(&req, Path::new(CWD)),
        PolicyVerdict::Allow(_)
    ));
}

#[test]
fn malformed_rules_are_refused_with_the_item_named() {
    let e = Routes::new(
        Decider::Lead,
        vec![route("fixer", "bash(ls)", Decider::Person)],
        Policy::default(),
    )
    .unwrap_err();
    assert!(e.contains("[[approvals.route]] #1"), "{e}");
    let e = Routes::new(
        Decider::Lead,
        Vec::new(),
        Policy {
            deny: vec!["Bash(".into()],
            ..Policy::default()
        },
    )
    .unwrap_err();
    assert!(e.contains("[approvals.policy]"), "{e}");
}

#[test]
fn routes_survive_json_and_json_with_a_bad_rule_is_refused() {
    let routes = Routes::new(
        Decider::Person,
        vec![route("*", "plan", Decider::Lead)],
        Policy {
            allow: vec!["Read".into()],
            ..Policy::default()
        },
    )
    .unwrap();
    let text = serde_json::to_string(&routes).unwrap();
    assert_eq!(serde_json::from_str::<Routes>(&text).unwrap(), routes);
    let bad = text.replace("\"Read\"", "\"Read(\"");
    assert!(serde_json::from_str::<Routes>(&bad).is_err());
}
