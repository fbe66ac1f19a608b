//! The lead's hooks with real components: TaskCompleted can refuse a
//! completion, TeammateIdle can keep a teammate working, a hanging hook is
//! killed at its timeout and reported, and none of it is fatal.

use std::sync::Arc;
use std::time::Duration;

use teamhost::embed::{Host, HostOptions, SpawnRequest, TeammateSettings};
use teamhost::hooks::Hooks;
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{Home, NewTask, NewTeam, TaskStatus};

struct Fixture {
    _tmp: tempfile::TempDir,
    host: Host,
    work: std::path::PathBuf,
}

fn fixture(hooks: Hooks) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let host = Host::with_options(
        Home::new(tmp.path().join("home")),
        HostOptions {
            hooks: Arc::new(hooks),
            ..Default::default()
        },
    )
    .unwrap();
    host.create_team("hooks", NewTeam::default()).unwrap();
    Fixture {
        _tmp: tmp,
        host,
        work,
    }
}

fn probe(f: &Fixture, auto_claim: bool) -> SpawnRequest {
    SpawnRequest {
        settings: TeammateSettings {
            mode: Some(teamhost::sandbox::PermissionMode::AcceptEdits),
            auto_claim,
            ..Default::default()
        },
        ..SpawnRequest::new("probe", teamhost_tests::PROBE, "hello", &f.work)
    }
}

async fn settle(f: &Fixture) {
    tokio::time::timeout(Duration::from_secs(30), f.host.wait_idle("hooks"))
        .await
        .expect("the team settles")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_completed_hook_exiting_2_keeps_the_task_open_and_the_teammate_sees_why() {
    let f = fixture(Hooks {
        task_completed: vec![
            "cat >/dev/null; echo 'no: the tests have not run' >&2; exit 2".into(),
        ],
        ..Hooks::default()
    });
    let team = f.host.team("hooks").unwrap();
    team.create_task(NewTask {
        subject: "ship it".into(),
        ..Default::default()
    })
    .unwrap();
    f.host.spawn("hooks", probe(&f, true)).await.unwrap();
    settle(&f).await;

    let task = team.task("1").unwrap();
    assert_eq!(
        task.status,
        TaskStatus::InProgress,
        "the completion was refused"
    );
    assert_eq!(task.owner.as_deref(), Some("probe"));
    // The probe's completion call failed with the hook's message, and it said
    // so in the idle notification after that turn.
    let told = team.unread("team-lead").unwrap().into_iter().any(|m| {
        matches!(ProtocolMessage::parse(&m.text),
            Parsed::Protocol(ProtocolMessage::IdleNotification(n))
                if n.completed_task_id.as_deref() == Some("1")
                    && n.failure_reason.as_deref().is_some_and(|r| r.contains("the tests have not run")))
    });
    assert!(told, "the teammate saw the hook's stderr");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_idle_hook_exiting_2_keeps_the_teammate_working_with_the_hooks_message() {
    let tmp = tempfile::tempdir().unwrap();
    let flag = tmp.path().join("asked-once");
    // Refuses the first time, lets it go idle the second.
    let hook = format!(
        "cat >/dev/null; if [ -e {f} ]; then exit 0; fi; touch {f}; echo 'before you stop: write the summary' >&2; exit 2",
        f = flag.display()
    );
    let f = fixture(Hooks {
        teammate_idle: vec![hook],
        ..Hooks::default()
    });
    f.host.spawn("hooks", probe(&f, false)).await.unwrap();
    settle(&f).await;

    let log = std::fs::read_to_string(f.work.join("turns.log")).unwrap();
    let turns: Vec<&str> = log.lines().collect();
    assert_eq!(turns.len(), 2, "{log}");
    assert!(turns[0].starts_with("initial\t"), "{log}");
    assert_eq!(
        turns[1],
        "message\tteamhost\tbefore you stop: write the summary"
    );
    // Only the turn that really ended in idleness produced a notification.
    let idles = f
        .host
        .team("hooks")
        .unwrap()
        .unread("team-lead")
        .unwrap()
        .into_iter()
        .filter(|m| {
            matches!(
                ProtocolMessage::parse(&m.text),
                Parsed::Protocol(ProtocolMessage::IdleNotification(_))
            )
        })
        .count();
    assert_eq!(idles, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_hook_is_killed_at_its_timeout_reported_to_the_lead_and_not_fatal() {
    let f = fixture(Hooks {
        task_completed: vec!["sleep 60".into()],
        timeout: Duration::from_millis(300),
        ..Hooks::default()
    });
    let team = f.host.team("hooks").unwrap();
    team.create_task(NewTask {
        subject: "ship it".into(),
        ..Default::default()
    })
    .unwrap();
    f.host.spawn("hooks", probe(&f, true)).await.unwrap();
    settle(&f).await;
    assert_eq!(team.task("1").unwrap().status, TaskStatus::Completed);
    let notice = team
        .unread("team-lead")
        .unwrap()
        .into_iter()
        .find(|m| m.from == "teamhost" && m.text.contains("TaskCompleted hook"))
        .expect("the lead is told");
    assert!(notice.text.contains("timed out"), "{}", notice.text);
}
