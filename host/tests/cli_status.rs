//! `teamhost status`: a snapshot read from the team's files, through the real
//! binary.

use std::process::Command;

use serde_json::Value;
use teamhost::home::started::{self, Started};
use teamhost::home::Home;
use teamhost::protocol::{PermissionRequest, PermissionResponse, WireMessage};
use teamhost::store::{NewMember, NewTask, NewTeam, OutgoingMessage, Store, TaskUpdate};

fn status(home: &std::path::Path, json: bool) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_teamhost"));
    cmd.arg("--home")
        .arg(home)
        .args(["status", "--team", "board"]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn status_shows_states_progress_pending_requests_and_latest_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    let team = store.team("board").unwrap();
    team.create(NewTeam {
        description: Some("a board".into()),
        ..Default::default()
    })
    .unwrap();
    for name in ["busy", "resting", "gone"] {
        team.add_member(NewMember {
            name: name.into(),
            backend_type: Some(
                if name == "gone" {
                    "process"
                } else {
                    "in-process"
                }
                .into(),
            ),
            ..Default::default()
        })
        .unwrap();
    }
    team.set_active("busy", true).unwrap();
    team.set_active("resting", false).unwrap();
    team.set_active("gone", true).unwrap();
    // "gone" ran in a process that has exited without leaving the team.
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    started::record(
        &Home::new(tmp.path()),
        team.name(),
        &Started::new("gone", "process", pid),
    )
    .unwrap();

    for subject in ["one", "two"] {
        team.create_task(NewTask {
            subject: subject.into(),
            ..Default::default()
        })
        .unwrap();
    }
    let update = |status| TaskUpdate {
        owner: Some(Some("busy".into())),
        status: Some(status),
        ..Default::default()
    };
    team.update_task(
        "1",
        update(teamhost::store::TaskStatus::Completed),
        "team-lead",
    )
    .unwrap();
    team.update_task(
        "2",
        update(teamhost::store::TaskStatus::InProgress),
        "team-lead",
    )
    .unwrap();

    let request = PermissionRequest::new(
        "busy",
        "Write",
        "toolu_1",
        "Write notes.md",
        serde_json::json!({"file_path": "notes.md", "content": "x"}),
    );
    let id = request.request_id.clone();
    team.send("team-lead", OutgoingMessage::new("busy", request.to_text()))
        .unwrap();
    team.send(
        "team-lead",
        OutgoingMessage::new("resting", "all done here"),
    )
    .unwrap();

    let snap: Value = serde_json::from_str(&status(tmp.path(), true)).unwrap();
    let states: Vec<(&str, &str)> = snap["teammates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["state"].as_str().unwrap()))
        .collect();
    // A teammate whose request waits for the lead is `awaiting approval`,
    // not `active` (its `isActive` is true while it waits).
    assert_eq!(
        states,
        [
            ("busy", "awaiting approval"),
            ("resting", "idle"),
            ("gone", "dead")
        ]
    );
    // One function decides: the live view's board (and `watch`, which
    // prints it) names every state as `status --json` does.
    let board = teamhost::view::Board::read_cached(
        &team,
        Some(&Home::new(tmp.path())),
        &[],
        &mut Default::default(),
    )
    .unwrap();
    let on_board: Vec<(&str, &str)> = board
        .teammates
        .iter()
        .map(|t| (t.name.as_str(), t.state.word()))
        .collect();
    assert_eq!(on_board, states);
    assert_eq!(snap["teammates"][0]["currentTask"], "2");
    assert_eq!(
        (
            snap["completed"].as_u64(),
            snap["tasks"].as_array().unwrap().len()
        ),
        (Some(1), 2)
    );
    assert_eq!(snap["pendingRequests"][0]["requestId"], id.as_str());
    assert_eq!(snap["recentMessages"][0]["text"], "all done here");
    assert_eq!(snap["recentMessages"][0]["from"], "resting");
    assert!(snap["pendingRequests"][0]["detail"]
        .as_str()
        .unwrap()
        .contains("notes.md"));

    let text = status(tmp.path(), false);
    assert!(text.contains("tasks 1/2 completed"), "{text}");
    assert!(text.contains(&format!("teamhost permit {id}")), "{text}");
    assert!(text.contains("dead"), "{text}");
    assert!(text.contains("awaiting approval"), "{text}");

    // Once the lead answers, the request is no longer pending.
    let answer = PermissionResponse::deny(&id, "no");
    team.send("busy", OutgoingMessage::new("team-lead", answer.to_text()))
        .unwrap();
    let snap: Value = serde_json::from_str(&status(tmp.path(), true)).unwrap();
    assert!(snap["pendingRequests"].as_array().unwrap().is_empty());
    assert_eq!(snap["teammates"][0]["state"], "active");
}

#[test]
fn status_of_a_missing_team_says_how_to_create_one() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(tmp.path())
        .args(["status", "--team", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("teamhost team create nope"), "{err}");
}

#[test]
fn status_shows_cache_reads_and_writes_and_spending_against_both_budgets() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    let team = store.team("board").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "coder".into(),
        ..Default::default()
    })
    .unwrap();
    let usage = |cost, read, write| teamhost::store::ModelUsage {
        calls: 2,
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: read,
        cache_write_tokens: write,
        cost_microdollars: cost,
        cost_left_microdollars: Some(1_000_000 - cost),
        cost_budget_microdollars: Some(1_000_000),
        team_budget_microdollars: Some(3_000_000),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
        ..Default::default()
    };
    team.write_model_usage("coder", &usage(250_000, 4_000, 1_200))
        .unwrap();
    team.write_model_usage("reviewer", &usage(500_000, 0, 0))
        .unwrap();
    let out = status(tmp.path(), false);
    assert!(
        out.contains(
            "2 calls, 5320 tokens (100 in, 20 out, 4000 cache reads, 1200 cache writes), $0.2500 of $1.0000 budget"
        ),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("whole team")
            && l.ends_with("$0.7500 of $3.0000 team budget")),
        "{out}"
    );
}
