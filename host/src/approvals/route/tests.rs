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
        entry: None,
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
        routes.decider_for(&bash("team-lead", "ls"), "team-lead", &Requester::at(CWD)),
        Decider::Person
    );
    assert_eq!(
        routes.decider_for(&bash("fixer", "ls"), "team-lead", &Requester::at(CWD)),
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
    let at = |r: &Request| routes.decider_for(r, "team-lead", &Requester::at(CWD));
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

/// A route to a stricter decider is not dodged by spelling.
#[test]
fn a_route_to_a_stricter_decider_catches_any_part_and_any_path_of_the_program() {
    let routes = Routes::new(
        Decider::Lead,
        vec![
            route("*", "Bash(rm:*)", Decider::Person),
            route("*", "Bash(git push:*)", Decider::Person),
        ],
        Policy::default(),
    )
    .unwrap();
    let at = |r: &Request| routes.decider_for(r, "team-lead", &Requester::at(CWD));
    for command in [
        "rm -f x",
        "cd . && rm -f x",
        "/bin/rm -f x",
        "/usr/bin/rm -f x",
        "true; rm -f x",
        "ls | rm -f x",
        "git status && git push",
        "git status; git push origin main",
    ] {
        assert_eq!(at(&bash("fixer", command)), Decider::Person, "{command:?}");
    }
    for command in ["ls", "git status", "cargo test && echo rmdir"] {
        assert_eq!(at(&bash("fixer", command)), Decider::Lead, "{command:?}");
    }
}

#[test]
fn a_route_to_a_laxer_decider_takes_only_whole_calls() {
    let routes = Routes::new(
        Decider::Person,
        vec![route("*", "Bash(cargo test:*)", Decider::Policy)],
        Policy::default(),
    )
    .unwrap();
    let at = |r: &Request| routes.decider_for(r, "team-lead", &Requester::at(CWD));
    assert_eq!(at(&bash("fixer", "cargo test -q")), Decider::Policy);
    assert_eq!(
        at(&bash("fixer", "cargo test && curl evil.example")),
        Decider::Person,
        "a compound call a lax route names only in part stays with the default"
    );
}

#[test]
fn the_strictest_touching_route_wins_whatever_the_order() {
    let routes = Routes::new(
        Decider::Lead,
        vec![
            route("*", "Bash(cargo test:*)", Decider::Lead),
            route("*", "Bash(curl:*)", Decider::Policy),
            route("*", "Bash(rm:*)", Decider::Person),
        ],
        Policy::default(),
    )
    .unwrap();
    let at = |r: &Request| routes.decider_for(r, "team-lead", &Requester::at(CWD));
    assert_eq!(at(&bash("a", "cargo test")), Decider::Lead);
    assert_eq!(at(&bash("a", "cargo test && curl x")), Decider::Policy);
    assert_eq!(
        at(&bash("a", "curl x; rm -rf y; cargo test")),
        Decider::Person
    );
}

#[test]
fn a_route_naming_a_catalogue_entry_binds_every_member_spawned_from_it() {
    let by_entry = Route {
        teammate: String::new(),
        entry: Some("fixer".into()),
        tool: "Bash(git push:*)".into(),
        decider: Decider::Person,
    };
    let routes = Routes::new(Decider::Lead, vec![by_entry], Policy::default()).unwrap();
    let from_fixer = Requester {
        cwd: CWD.into(),
        entry: Some("fixer".into()),
    };
    for name in ["fixer", "fixer-2", "helpful-bob"] {
        assert_eq!(
            routes.decider_for(&bash(name, "git push"), "team-lead", &from_fixer),
            Decider::Person,
            "{name}"
        );
    }
    assert_eq!(
        routes.decider_for(&bash("fixer", "git push"), "team-lead", &Requester::at(CWD)),
        Decider::Lead,
        "a member named like the entry but spawned from none is not bound by it"
    );
    let both = Route {
        teammate: "x".into(),
        entry: Some("fixer".into()),
        tool: "*".into(),
        decider: Decider::Person,
    };
    let e = Routes::new(Decider::Lead, vec![both], Policy::default()).unwrap_err();
    assert!(e.contains("not both"), "{e}");
}

fn network(from: &str, host: &str) -> Request {
    Request::Permission(PermissionRequest::new(
        from,
        "Network",
        "toolu_1",
        "reach",
        json!({ "host": host, "port": 443 }),
    ))
}

#[test]
fn network_questions_match_domain_rules_as_the_network_rules_match_hosts() {
    let routes = Routes::new(
        Decider::Lead,
        vec![
            route("*", "Network(domain:*.internal.test)", Decider::Person),
            route("*", "Network", Decider::Policy),
        ],
        Policy {
            allow: vec![
                "Network(domain:*.pypi.org)".into(),
                "Network(domain:pkgs.test)".into(),
            ],
            deny: vec!["Network(domain:evil.test)".into()],
            ..Policy::default()
        },
    )
    .unwrap();
    let who = |r: &Request| routes.decider_for(r, "team-lead", &Requester::at(CWD));
    assert_eq!(who(&network("a", "db.internal.test")), Decider::Person);
    assert_eq!(who(&network("a", "files.pypi.org")), Decider::Policy);
    // A route for another tool does not take a network question.
    assert_eq!(who(&bash("a", "ls")), Decider::Lead);

    let v = |r: &Request| routes.policy_verdict(r, Path::new(CWD));
    assert!(matches!(
        v(&network("a", "files.pypi.org")),
        PolicyVerdict::Allow(_)
    ));
    assert!(matches!(
        v(&network("a", "PKGS.test.")),
        PolicyVerdict::Allow(_)
    ));
    assert!(matches!(
        v(&network("a", "evil.test")),
        PolicyVerdict::Deny(_)
    ));
    // Suffix tricks are not the domain; the bare pattern is not below itself.
    for other in [
        "pypi.org",
        "evilpypi.org",
        "files.pypi.org.evil",
        "pkgs.test.evil",
    ] {
        assert!(
            matches!(v(&network("a", other)), PolicyVerdict::Escalate(_)),
            "{other}"
        );
    }
    // A domain rule never matches another tool's request.
    assert!(matches!(
        v(&bash("a", "curl files.pypi.org")),
        PolicyVerdict::Escalate(_)
    ));
}
