//! `teamhost permit` and `teamhost plan` through the one approval path
//! (issue 29), with the real binary: the person's answer is recorded in the
//! home's decisions record and wins over a route to the lead.

use std::process::{Command, Output};

use teamhost::approvals::{Decider, Outcome, Route, Routes};
use teamhost::home::{decisions, Home};
use teamhost::protocol::{PermissionRequest, PlanApprovalRequest, WireMessage};
use teamhost::store::{NewMember, NewTeam, OutgoingMessage, Store, Team};

fn teamhost(home: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap()
}

fn team_with(home: &std::path::Path, members: &[&str]) -> Team {
    let team = Store::new(Home::new(home)).team("routed").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in members {
        team.add_member(NewMember {
            name: name.to_string(),
            ..Default::default()
        })
        .unwrap();
    }
    team
}

#[test]
fn teamhost_permit_answers_a_request_routed_to_the_lead_through_the_one_path() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let team = team_with(tmp.path(), &["fixer"]);
    // Routed to the lead: the person may still answer, and wins.
    let routes = Routes::new(
        Decider::Lead,
        vec![Route {
            teammate: "*".into(),
            entry: None,
            tool: "*".into(),
            decider: Decider::Lead,
        }],
        Default::default(),
    )
    .unwrap();
    decisions::write_routes(&home, team.name(), &routes).unwrap();
    let request = PermissionRequest::new(
        "fixer",
        "Bash",
        "toolu_1",
        "run the tests",
        serde_json::json!({"command": "cargo test"}),
    );
    let id = request.request_id.clone();
    team.send(
        "team-lead",
        OutgoingMessage::new("fixer", request.to_text()),
    )
    .unwrap();

    let out = teamhost(tmp.path(), &["permit", &id, "--team", "routed", "--allow"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decided = decisions::decided(&home, team.name(), &id)
        .unwrap()
        .unwrap();
    assert_eq!(
        (decided.decider, decided.outcome, decided.from.as_str()),
        (Decider::Person, Outcome::Allowed, "fixer")
    );
    assert_eq!(decided.summary, "cargo test");
    let inbox = team.read_inbox("fixer").unwrap();
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert!(inbox[0].text.contains(&id) && inbox[0].from == "team-lead");

    // The person may answer again (a late answer reaches the teammate as a
    // message, as before); the record keeps the answer that took effect.
    let again = teamhost(
        tmp.path(),
        &[
            "permit", &id, "--team", "routed", "--deny", "--reason", "no",
        ],
    );
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(team.read_inbox("fixer").unwrap().len(), 2);
    let kept = decisions::decided(&home, team.name(), &id)
        .unwrap()
        .unwrap();
    assert_eq!(kept.outcome, Outcome::Allowed);
}

#[test]
fn teamhost_plan_is_recorded_with_its_feedback() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new(tmp.path());
    let team = team_with(tmp.path(), &["planner"]);
    let request = PlanApprovalRequest::new("planner", team.name(), "plan.md", "# Plan\nstep");
    let id = request.request_id.clone();
    team.send(
        "team-lead",
        OutgoingMessage::new("planner", request.to_text()),
    )
    .unwrap();
    let out = teamhost(
        tmp.path(),
        &[
            "plan",
            &id,
            "--team",
            "routed",
            "--reject",
            "--feedback",
            "smaller steps",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = decisions::list(&home, team.name(), 0).unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].outcome, Outcome::Rejected);
    assert_eq!(all[0].reason.as_deref(), Some("smaller steps"));
    assert_eq!(all[0].line(), "plan from planner: rejected by the person");
}
