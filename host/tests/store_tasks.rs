//! Task list behaviour on real files: ids, dependencies, claims, unassign.

use serde_json::json;
use teamhost::home::Home;
use teamhost::store::{
    ClaimOutcome, ClaimRefusal, NewMember, NewTask, NewTeam, Store, TaskStatus, TaskUpdate, Team,
};
use teamhost::Error;

fn team() -> (tempfile::TempDir, Team) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in ["w1", "w2"] {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })
        .unwrap();
    }
    (tmp, team)
}

fn task(team: &Team, subject: &str, blocked_by: &[&str]) -> String {
    team.create_task(NewTask {
        subject: subject.into(),
        description: format!("do {subject}"),
        blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
    .unwrap()
    .id
}

fn complete(team: &Team, id: &str) {
    team.update_task(
        id,
        TaskUpdate {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        },
        "team-lead",
    )
    .unwrap();
}

#[test]
fn task_three_blocked_by_one_and_two_is_claimable_only_when_both_complete() {
    let (_t, team) = team();
    let (a, b) = (task(&team, "one", &[]), task(&team, "two", &[]));
    let c = task(&team, "three", &[&a, &b]);
    assert_eq!((a.as_str(), b.as_str(), c.as_str()), ("1", "2", "3"));
    assert_eq!(team.task("1").unwrap().blocks, ["3"]);
    assert_eq!(team.task("3").unwrap().blocked_by, ["1", "2"]);

    assert_eq!(team.find_claimable().unwrap().unwrap().id, "1");
    let ClaimOutcome::Refused {
        reason, blockers, ..
    } = team.claim_task("3", "w1", false).unwrap()
    else {
        panic!("3 must be blocked");
    };
    assert_eq!(
        (reason, blockers),
        (
            ClaimRefusal::Blocked,
            vec!["1".to_string(), "2".to_string()]
        )
    );

    assert!(matches!(
        team.claim_task("1", "w1", false).unwrap(),
        ClaimOutcome::Claimed(_)
    ));
    assert!(matches!(
        team.claim_task("2", "w2", false).unwrap(),
        ClaimOutcome::Claimed(_)
    ));
    assert!(team.find_claimable().unwrap().is_none());
    complete(&team, "1");
    assert!(team.find_claimable().unwrap().is_none(), "2 is still open");
    complete(&team, "2");
    assert_eq!(team.find_claimable().unwrap().unwrap().id, "3");
    let ClaimOutcome::Claimed(t) = team.claim_task("3", "w1", false).unwrap() else {
        panic!("3 must be claimable now");
    };
    assert_eq!(
        (t.owner.as_deref(), &t.status),
        (Some("w1"), &TaskStatus::InProgress)
    );
}

#[test]
fn claims_are_refused_with_the_reference_reasons() {
    let (_t, team) = team();
    let a = task(&team, "a", &[]);
    let b = task(&team, "b", &[]);
    let reason = |o: ClaimOutcome| match o {
        ClaimOutcome::Refused { reason, .. } => reason.as_str(),
        ClaimOutcome::Claimed(_) => "claimed",
    };
    assert_eq!(
        reason(team.claim_task("99", "w1", false).unwrap()),
        "task_not_found"
    );
    assert_eq!(reason(team.claim_task(&a, "w1", false).unwrap()), "claimed");
    assert_eq!(
        reason(team.claim_task(&a, "w2", false).unwrap()),
        "already_claimed"
    );
    assert_eq!(
        reason(team.claim_task(&b, "w1", true).unwrap()),
        "agent_busy"
    );
    assert_eq!(reason(team.claim_task(&b, "w1", false).unwrap()), "claimed");
    complete(&team, &a);
    assert_eq!(
        reason(team.claim_task(&a, "w2", false).unwrap()),
        "already_resolved"
    );
}

#[test]
fn ids_are_never_reused_after_delete() {
    let (_t, team) = team();
    let a = task(&team, "a", &[]);
    let b = task(&team, "b", &[&a]);
    team.delete_task(&b).unwrap();
    assert_eq!(
        std::fs::read_to_string(team.file_paths().unwrap().highwatermark()).unwrap(),
        "2"
    );
    assert!(
        team.task("1").unwrap().blocks.is_empty(),
        "deleted id leaves dependencies"
    );
    assert_eq!(task(&team, "c", &[]), "3");
    // status "deleted" through update deletes too.
    team.update_task(
        "3",
        TaskUpdate {
            status: Some(TaskStatus::from("deleted".to_string())),
            ..Default::default()
        },
        "team-lead",
    )
    .unwrap();
    assert!(matches!(team.task("3"), Err(Error::TaskNotFound { .. })));
    assert_eq!(task(&team, "d", &[]), "4");
}

#[test]
fn update_merges_metadata_and_null_deletes_a_key() {
    let (_t, team) = team();
    let a = task(&team, "a", &[]);
    let meta = |v: serde_json::Value| TaskUpdate {
        metadata: Some(v.as_object().unwrap().clone()),
        ..Default::default()
    };
    team.update_task(&a, meta(json!({"x": 1, "y": 2})), "team-lead")
        .unwrap();
    let t = team
        .update_task(&a, meta(json!({"x": null, "z": 3})), "team-lead")
        .unwrap();
    assert_eq!(
        serde_json::Value::Object(t.metadata.unwrap()),
        json!({"y": 2, "z": 3})
    );
    assert_eq!(t.id, a);
}

#[test]
fn setting_an_owner_sends_a_task_assignment_to_that_inbox() {
    let (_t, team) = team();
    let a = task(&team, "Compile wasm module", &[]);
    team.update_task(
        &a,
        TaskUpdate {
            owner: Some(Some("w2".into())),
            ..Default::default()
        },
        "team-lead",
    )
    .unwrap();
    let inbox = team.unread("w2").unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].from, "team-lead");
    let body: serde_json::Value = serde_json::from_str(&inbox[0].text).unwrap();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "type",
            "taskId",
            "subject",
            "description",
            "assignedBy",
            "timestamp"
        ]
    );
    assert_eq!(body["taskId"], "1");
    assert_eq!(body["subject"], "Compile wasm module");
}

#[test]
fn taking_a_task_oneself_sends_oneself_no_task_assignment() {
    let (_t, team) = team();
    let a = task(&team, "Compile wasm module", &[]);
    let b = task(&team, "Link it", &[]);
    for (id, owner) in [(&a, "w2"), (&b, "w2@t")] {
        let t = team
            .update_task(
                id,
                TaskUpdate {
                    owner: Some(Some(owner.into())),
                    ..Default::default()
                },
                "w2",
            )
            .unwrap();
        assert_eq!(t.owner.as_deref(), Some(owner));
    }
    assert!(team.unread("w2").unwrap().is_empty(), "no news to w2");
}

#[test]
fn dependencies_are_recorded_on_both_sides_and_cycles_refused() {
    let (_t, team) = team();
    let (a, b, c) = (
        task(&team, "a", &[]),
        task(&team, "b", &[]),
        task(&team, "c", &[]),
    );
    team.add_dependency(&a, &b).unwrap();
    team.add_dependency(&b, &c).unwrap();
    assert_eq!(team.task(&a).unwrap().blocks, vec![b.clone()]);
    assert_eq!(team.task(&b).unwrap().blocked_by, vec![a.clone()]);
    assert!(team
        .add_dependency(&c, &a)
        .unwrap_err()
        .to_string()
        .contains("cycle"));
    assert!(team.add_dependency(&a, &a).is_err());
    assert!(matches!(
        team.add_dependency(&a, "42"),
        Err(Error::TaskNotFound { .. })
    ));
}

#[test]
fn unassigning_an_agent_returns_its_open_tasks_with_the_reference_text() {
    let (_t, team) = team();
    let a = task(&team, "a", &[]);
    let b = task(&team, "b", &[]);
    team.claim_task(&a, "w1", false).unwrap();
    team.claim_task(&b, "w1", false).unwrap();
    complete(&team, &b);
    let u = team.unassign_agent("w1", "w1@t", false).unwrap();
    assert_eq!(u.tasks, vec![("1".to_string(), "a".to_string())]);
    assert_eq!(
        u.notification,
        "w1 has shut down. 1 task(s) were unassigned: #1 \"a\". Use TaskList to check availability and TaskUpdate with owner to reassign them to idle teammates."
    );
    let t = team.task(&a).unwrap();
    assert_eq!((t.owner, t.status), (None, TaskStatus::Pending));
    assert_eq!(team.task(&b).unwrap().status, TaskStatus::Completed);
    let none = team.unassign_agent("w2", "w2@t", true).unwrap();
    assert_eq!(none.notification, "w2 was terminated.");
}

#[test]
fn list_skips_files_that_are_not_tasks() {
    let (_t, team) = team();
    task(&team, "a", &[]);
    let dir = team.file_paths().unwrap().tasks_dir().to_path_buf();
    std::fs::write(dir.join("notes.txt"), "x").unwrap();
    std::fs::write(dir.join("x.json"), "{}").unwrap();
    let tasks = team.list_tasks().unwrap();
    assert_eq!(tasks.len(), 1);
    assert!(
        dir.join(".lock").is_file(),
        "the reference's .lock file exists"
    );
}

#[test]
fn a_corrupt_task_is_moved_aside_and_its_id_is_not_reused() {
    let (_t, team) = team();
    let a = task(&team, "a", &[]);
    let path = team.file_paths().unwrap().task(&a).unwrap();
    std::fs::write(&path, b"{\"id\": \"1\", ").unwrap();
    let err = team.claim_task(&a, "w1", false).unwrap_err();
    assert!(err.to_string().contains(".corrupt-"), "{err}");
    assert!(!path.exists());
    assert_eq!(task(&team, "b", &[]), "2");
}
