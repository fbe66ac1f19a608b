//! Golden tests against files the reference CLI (2.1.197) wrote
//! (`tests/fixtures/reference-2.1.197`, copied from ../shared/reference/samples).
//!
//! 1. teamhost reads every sample file and writes it back unchanged, unknown
//!    fields included (tasks and inboxes byte for byte).
//! 2. The same team built through teamhost's API produces files equal to the
//!    samples once timestamps and ids are normalised.

use std::path::{Path, PathBuf};

use serde_json::Value;
use teamhost::home::Home;
use teamhost::store::{
    InboxMessage, NewMember, NewTask, NewTeam, OutgoingMessage, Store, Task, TaskStatus,
    TaskUpdate, TeamConfig,
};

const TEAM: &str = "session-76c4e2e6";
const SESSION: &str = "76c4e2e6-4b27-486a-bf79-cb64c5020986";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference-2.1.197")
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn every_sample_file_round_trips_unchanged() {
    let root = fixtures();
    let config_path = root.join("teams").join(TEAM).join("config.json");
    let config: TeamConfig = serde_json::from_slice(&std::fs::read(&config_path).unwrap()).unwrap();
    assert_eq!(serde_json::to_value(&config).unwrap(), json(&config_path));
    // The teammate entry keeps the reference's key order too.
    let written = serde_json::to_value(&config).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&written["members"][1]),
        keys(&json(&config_path)["members"][1])
    );

    for inbox in ["team-lead", "wasm-pane"] {
        let path = root
            .join("teams")
            .join(TEAM)
            .join("inboxes")
            .join(format!("{inbox}.json"));
        let original = std::fs::read_to_string(&path).unwrap();
        let parsed: Vec<InboxMessage> = serde_json::from_str(&original).unwrap();
        assert_eq!(
            serde_json::to_string_pretty(&parsed).unwrap(),
            original,
            "{inbox}"
        );
    }
    for id in ["1", "3"] {
        let path = root.join("tasks").join(TEAM).join(format!("{id}.json"));
        let original = std::fs::read_to_string(&path).unwrap();
        let parsed: Task = serde_json::from_str(&original).unwrap();
        assert_eq!(
            serde_json::to_string_pretty(&parsed).unwrap(),
            original,
            "task {id}"
        );
    }
}

#[test]
fn a_team_built_by_teamhost_matches_the_reference_files() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    let team = store.team(TEAM).unwrap();
    team.create(NewTeam {
        lead_session_id: Some(SESSION.into()),
        cwd: Some("/home/user/project".into()),
        ..Default::default()
    })
    .unwrap();
    team.add_member(NewMember {
        name: "wasm-pane".into(),
        model: Some("claude-opus-4-8".into()),
        prompt: Some("PANE-TEAMMATE-PROMPT: you are an external worker".into()),
        cwd: Some("/home/user/project".into()),
        backend_type: Some("tmux".into()),
        tmux_pane_id: Some("%1".into()),
        ..Default::default()
    })
    .unwrap();
    let new = |subject: &str, description: &str, blocked_by: Vec<String>| NewTask {
        subject: subject.into(),
        description: description.into(),
        blocked_by,
        ..Default::default()
    };
    team.create_task(NewTask {
        active_form: Some("Compiling wasm module".into()),
        ..new("Compile wasm module", "Build the wasm component", vec![])
    })
    .unwrap();
    team.create_task(new("scratch", "", vec![])).unwrap();
    team.delete_task("2").unwrap();
    team.create_task(new(
        "Run wasm tests",
        "Run the test-suite",
        vec!["1".into()],
    ))
    .unwrap();
    team.update_task(
        "1",
        TaskUpdate {
            owner: Some(Some("wasm-pane".into())),
            status: Some(TaskStatus::InProgress),
            ..Default::default()
        },
        "team-lead",
    )
    .unwrap();
    team.send(
        "team-lead",
        OutgoingMessage::new("wasm-pane", "worker says hi to lead")
            .summary("worker report")
            .color(Some("blue".into())),
    )
    .unwrap();
    let idle = r#"{"type":"idle_notification","from":"wasm-pane","timestamp":"2026-11-21T22:24:52.675Z","idleReason":"available"}"#;
    team.send(
        "team-lead",
        OutgoingMessage::new("wasm-pane", idle).color(Some("blue".into())),
    )
    .unwrap();

    let ours = tmp.path();
    let theirs = fixtures();
    for rel in [
        format!("teams/{TEAM}/config.json"),
        format!("teams/{TEAM}/inboxes/team-lead.json"),
        format!("teams/{TEAM}/inboxes/wasm-pane.json"),
        format!("tasks/{TEAM}/1.json"),
        format!("tasks/{TEAM}/3.json"),
    ] {
        assert_eq!(
            normalise(json(&ours.join(&rel))),
            normalise(json(&theirs.join(&rel))),
            "{rel} differs from the reference"
        );
    }
    assert!(!ours.join(format!("tasks/{TEAM}/2.json")).exists());
}

/// Replaces values that differ run to run (times, random ids), also inside
/// protocol messages carried as JSON text.
fn normalise(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "timestamp" => Value::String("<time>".into()),
                        "msg_id" => Value::String("<uuid>".into()),
                        "createdAt" | "joinedAt" => Value::from(0),
                        "text" => match v
                            .as_str()
                            .and_then(|s| serde_json::from_str::<Value>(s).ok())
                        {
                            Some(inner @ Value::Object(_)) => normalise(inner),
                            _ => v,
                        },
                        _ => normalise(v),
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(normalise).collect()),
        other => other,
    }
}
