//! The reference's team run (seeds 000 §10) with real components: a lead, two
//! `worker` teammates and tasks 1, 2, 3 where 3 is blocked by 1 and 2.

use std::time::Duration;

use serde_json::Value;
use teamhost::embed::{Event, Host, SpawnRequest, TeammateSettings};
use teamhost::home::Home;
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{NewTask, NewTeam, TaskStatus};

fn task(subject: &str, files: &[&str], blocked_by: &[&str]) -> NewTask {
    NewTask {
        subject: subject.into(),
        description: files.iter().map(|f| format!("- {f}\n")).collect(),
        blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_finish_three_tasks_in_dependency_order_then_shut_down() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // Tasks 1 and 2 take a while (hundreds of thousands of words), so the
    // worker that claims one is still busy with it when the other worker
    // polls: each claims one of them, whatever the scheduling.
    std::fs::write(data.join("a.txt"), "one two three ".repeat(200_000)).unwrap();
    std::fs::write(data.join("b.txt"), "four five ".repeat(200_000)).unwrap();
    std::fs::write(data.join("c.txt"), "six").unwrap();

    let host = Host::new(Home::new(&home)).unwrap();
    host.create_team("ref", NewTeam::default()).unwrap();
    let team = host.team("ref").unwrap();

    // Watch every task write: task 3 may have an owner only once 1 and 2 are completed.
    let mut events = host.events();
    let watcher_team = team.clone();
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let watcher = tokio::spawn(async move {
        let mut claims = Vec::new();
        let mut checks = 0;
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                _ = &mut stop_rx => return (claims, checks),
            };
            match event {
                Ok(Event::TasksChanged { .. }) => {
                    checks += 1;
                    let tasks = watcher_team.list_tasks().unwrap();
                    let done = |id: &str| {
                        tasks
                            .iter()
                            .any(|t| t.id == id && t.status == TaskStatus::Completed)
                    };
                    if tasks.iter().any(|t| t.id == "3" && t.owner.is_some()) {
                        assert!(
                            done("1") && done("2"),
                            "task 3 was claimed before 1 and 2 completed: {tasks:?}"
                        );
                    }
                }
                Ok(Event::TurnStarted { name, kind, .. }) if kind == "task-claimed" => {
                    claims.push(name)
                }
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    panic!("watcher lagged by {n}")
                }
                Err(_) => return (claims, checks),
            }
        }
    });

    // Two workers join.
    for name in ["worker", "worker"] {
        host.spawn(
            "ref",
            SpawnRequest {
                settings: TeammateSettings {
                    mode: Some(teamhost::sandbox::PermissionMode::AcceptEdits), // it writes its reports itself
                    ..Default::default()
                },
                ..SpawnRequest::new(
                    name,
                    teamhost_tests::WORKER,
                    "You are a word counter.",
                    &data,
                )
            },
        )
        .await
        .unwrap();
    }
    let config = team.config().unwrap();
    let names: Vec<_> = config
        .members
        .iter()
        .map(|m| (m.name.as_str(), m.color.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("team-lead", None),
            ("worker", Some("blue")),
            ("worker-2", Some("green"))
        ]
    );
    assert!(config.members[1..]
        .iter()
        .all(|m| m.backend_type.as_deref() == Some("in-process")
            && m.tmux_pane_id.as_deref() == Some("in-process")));

    // Both finish their initial turn (the spawn prompt) and go idle.
    tokio::time::timeout(Duration::from_secs(30), host.wait_idle("ref"))
        .await
        .expect("idle")
        .unwrap();

    // The lead writes the task list; the idle workers claim from it.
    team.create_task(task("Count a", &["a.txt"], &[])).unwrap();
    team.create_task(task("Count b", &["b.txt"], &[])).unwrap();
    team.create_task(task("Count all", &["a.txt", "b.txt", "c.txt"], &["1", "2"]))
        .unwrap();
    let t3: Value = serde_json::from_slice(
        &std::fs::read(team.file_paths().unwrap().task("3").unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(t3["blockedBy"], serde_json::json!(["1", "2"]));
    assert!(t3.get("owner").is_none());

    // Everything gets done.
    tokio::time::timeout(Duration::from_secs(60), host.wait_idle("ref"))
        .await
        .expect("team settles")
        .unwrap();
    let tasks = team.list_tasks().unwrap();
    assert!(
        tasks.iter().all(|t| t.status == TaskStatus::Completed),
        "{tasks:?}"
    );
    let report = std::fs::read_to_string(data.join("reports/task-3.md")).unwrap();
    assert!(
        report.contains("1000001"),
        "600,000 + 400,000 + 1 words? the report says: {report}"
    );
    for id in ["1", "2"] {
        assert!(data.join(format!("reports/task-{id}.md")).is_file());
    }

    // The lead heard from both workers: idle notifications, and a report per task.
    let lead_inbox = team.unread("team-lead").unwrap();
    let mut idle_from = std::collections::BTreeSet::new();
    let mut done_reports = Vec::new();
    for m in &lead_inbox {
        match ProtocolMessage::parse(&m.text) {
            Parsed::Protocol(ProtocolMessage::IdleNotification(n)) => {
                assert_eq!(n.idle_reason.as_deref(), Some("available"));
                idle_from.insert(n.from.clone());
            }
            Parsed::Plain if m.text.starts_with("Task #") => done_reports.push(m.text.clone()),
            _ => {}
        }
    }
    assert_eq!(
        idle_from.into_iter().collect::<Vec<_>>(),
        ["worker", "worker-2"]
    );
    assert_eq!(done_reports.len(), 3, "{done_reports:?}");

    // Shutdown requests are approved.
    let report = host
        .shutdown_team("ref", "all done", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(report.stopped, ["worker", "worker-2"]);
    assert!(report.killed.is_empty());
    let approvals: Vec<_> = team
        .unread("team-lead")
        .unwrap()
        .into_iter()
        .filter_map(|m| match ProtocolMessage::parse(&m.text) {
            Parsed::Protocol(ProtocolMessage::ShutdownApproved(a)) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(approvals.len(), 2);
    for a in &approvals {
        assert_eq!(
            (a.pane_id.as_deref(), a.backend_type.as_deref()),
            (Some("in-process"), Some("in-process"))
        );
        assert!(
            a.request_id.starts_with("shutdown-")
                && a.request_id.ends_with(&format!("@{}", a.from))
        );
    }
    assert_eq!(team.config().unwrap().member_names(), ["team-lead"]);

    // The team is deleted.
    host.delete_team("ref").await.unwrap();
    assert!(!team.file_paths().unwrap().team_dir().exists());
    assert!(!team.file_paths().unwrap().tasks_dir().exists());
    stop_tx.send(()).unwrap();
    let (claims, checks) = tokio::time::timeout(Duration::from_secs(5), watcher)
        .await
        .expect("watcher ends")
        .unwrap();
    assert!(
        checks >= 6,
        "the invariant was checked at every task write ({checks})"
    );
    // Every task was started by the runner's auto-claim, and both workers claimed.
    assert_eq!(claims.len(), 3, "{claims:?}");
    let claimers: std::collections::BTreeSet<_> = claims.iter().map(String::as_str).collect();
    assert_eq!(
        claimers.into_iter().collect::<Vec<_>>(),
        ["worker", "worker-2"]
    );
}
