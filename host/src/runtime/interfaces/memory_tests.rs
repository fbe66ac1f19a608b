//! The WIT glue on the in-memory store, without wasm: each test builds a
//! teammate's [`AgentCtx`] with [`AgentCtx::builder`] over
//! [`Store::in_memory`] and calls the interface functions as a guest would.
//! What they check is what the glue adds above the store: who a call acts
//! as, the sandbox's decision, protocol messages and their wording.

use crate::protocol::{Parsed, ProtocolMessage, TaskAssignment};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::bindings::{mailbox, messaging, tasks, team};
use crate::runtime::state::AgentCtx;
use crate::sandbox::{PermissionMode, ToolRules};
use crate::store::{MemoryStore, NewMember, NewTeam, Store, Team};

/// A team `t` in memory with the lead and members `a` and `b`; the
/// directory the tools open.
fn team() -> (tempfile::TempDir, MemoryStore, Team) {
    let memory = MemoryStore::new();
    let store = Store::with_backend(std::sync::Arc::new(memory.clone()));
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in ["a", "b"] {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })
        .unwrap();
    }
    (tempfile::tempdir().unwrap(), memory, team)
}

fn ctx(team: &Team, dir: &tempfile::TempDir, name: &str) -> AgentCtx {
    AgentCtx::builder(team.clone(), name, dir.path())
        .build()
        .unwrap()
}

fn new_task(subject: &str) -> tasks::NewTask {
    tasks::NewTask {
        subject: subject.into(),
        description: format!("do {subject}"),
        active_form: None,
        metadata: None,
    }
}

#[tokio::test]
async fn a_task_created_claimed_and_assigned_through_the_glue_lands_in_the_store() {
    use tasks::Host as _;
    let (dir, _memory, team) = team();
    let mut a = ctx(&team, &dir, "a");

    let one = a.create(new_task("one")).await.unwrap().unwrap();
    let two = a.create(new_task("two")).await.unwrap().unwrap();
    assert_eq!((one.id.as_str(), two.id.as_str()), ("1", "2"));
    a.add_dependency(two.id.clone(), one.id.clone())
        .await
        .unwrap()
        .unwrap();

    // The blocked task is refused with its blocker; the free one is taken.
    match a.claim(two.id.clone(), true).await.unwrap() {
        Err(tasks::ClaimError::Blocked(by)) => assert_eq!(by, ["1"]),
        other => panic!("claiming a blocked task: {other:?}"),
    }
    let claimed = a.claim(one.id.clone(), true).await.unwrap().unwrap();
    assert_eq!(claimed.owner.as_deref(), Some("a"));
    assert_eq!(team.task("1").unwrap().owner.as_deref(), Some("a"));

    // Assigning task 2 to b as a: b is told, by a, in the reference's words.
    let update = tasks::TaskUpdate {
        subject: None,
        description: None,
        active_form: None,
        status: None,
        owner: Some(tasks::OwnerChange::Assign("b".into())),
        metadata: None,
    };
    a.update(two.id.clone(), update).await.unwrap().unwrap();
    let inbox = team.unread("b").unwrap();
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert_eq!(inbox[0].from, "a");
    match ProtocolMessage::parse(&inbox[0].text) {
        Parsed::Protocol(ProtocolMessage::TaskAssignment(TaskAssignment { task_id, .. })) => {
            assert_eq!(task_id, "2")
        }
        other => panic!("not an assignment: {other:?}"),
    }
    let listed = a.list().await.unwrap().unwrap();
    assert_eq!(listed.len(), 2);
}

#[tokio::test]
async fn messages_go_to_members_only_and_are_consumed_into_the_history() {
    use mailbox::Host as _;
    use messaging::Host as _;
    let (dir, _memory, team) = team();
    let mut a = ctx(&team, &dir, "a");
    let mut b = ctx(&team, &dir, "b");

    a.send("b".into(), "hello b".into(), Some("hi".into()))
        .await
        .unwrap()
        .unwrap();
    match a.send("nobody".into(), "lost".into(), None).await.unwrap() {
        Err(WitError::NotFound(why)) => assert!(why.contains("nobody"), "{why}"),
        other => panic!("a message to a non-member: {other:?}"),
    }
    let sent = a
        .broadcast("to all".into(), Some("all".into()))
        .await
        .unwrap()
        .unwrap();
    let mut recipients = sent.recipients.clone();
    recipients.sort();
    assert_eq!(recipients, ["b", "team-lead"]);

    let unread = b.unread().await.unwrap().unwrap();
    let texts: Vec<&str> = unread.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["hello b", "to all"]);
    let taken = b.take(None, Some(1)).await.unwrap().unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].from, "a");
    assert_eq!(b.unread().await.unwrap().unwrap().len(), 1);
    let history = b.history(10).await.unwrap().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].text, "hello b");
}

#[tokio::test]
async fn a_deny_rule_stops_coordination_before_the_store_is_touched() {
    use messaging::Host as _;
    use tasks::Host as _;
    let (dir, _memory, team) = team();
    let rules = ToolRules::new(Vec::<String>::new(), ["SendMessage", "TaskCreate"]).unwrap();
    let mut a = AgentCtx::builder(team.clone(), "a", dir.path())
        .rules(rules)
        .build()
        .unwrap();

    match a.send("b".into(), "psst".into(), None).await.unwrap() {
        Err(WitError::Denied(_)) => {}
        other => panic!("a denied send: {other:?}"),
    }
    match a.create(new_task("sneaky")).await.unwrap() {
        Err(WitError::Denied(_)) => {}
        other => panic!("a denied task: {other:?}"),
    }
    assert!(team.unread("b").unwrap().is_empty());
    assert!(team.list_tasks().unwrap().is_empty());
}

#[tokio::test]
async fn a_plan_goes_to_the_store_and_the_lead_only_in_plan_mode() {
    use messaging::Host as _;
    let (dir, memory, team) = team();
    let mut coder = ctx(&team, &dir, "a");
    match coder.request_plan_approval("1. act".into()).await.unwrap() {
        Err(WitError::Invalid(why)) => assert!(why.contains("plan mode"), "{why}"),
        other => panic!("a plan outside plan mode: {other:?}"),
    }
    assert!(memory.plans("t").is_empty());

    let mut planner = AgentCtx::builder(team.clone(), "b", dir.path())
        .mode(PermissionMode::Plan)
        .build()
        .unwrap();
    let id = planner
        .request_plan_approval("1. read\n2. write".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        memory.plans("t"),
        [("b".to_string(), "1. read\n2. write".to_string())]
    );
    let to_lead = team.unread("team-lead").unwrap();
    assert_eq!(to_lead.len(), 1);
    match ProtocolMessage::parse(&to_lead[0].text) {
        Parsed::Protocol(ProtocolMessage::PlanApprovalRequest(req)) => {
            assert_eq!(req.request_id, id);
            assert!(
                req.plan_file_path.starts_with("memory:"),
                "{}",
                req.plan_file_path
            );
        }
        other => panic!("not a plan request: {other:?}"),
    }
}

#[tokio::test]
async fn whoami_and_roster_come_from_the_member_entries() {
    use team::Host as _;
    let (dir, _memory, team) = team();
    let mut b = ctx(&team, &dir, "b");
    let me = b.whoami().await.unwrap();
    assert_eq!((me.name.as_str(), me.agent_id.as_str()), ("b", "b@t"));
    let roster = b.roster().await.unwrap().unwrap();
    let names: Vec<&str> = roster.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["team-lead", "a", "b"]);
}
