//! Hostile tests: coordination (issue 10, class 5 and the coordination part
//! of class 6). The `hostile` guest's `coord` commands call the mailbox,
//! messaging and tasks interfaces directly: a deny rule on the reference tool
//! (`SendMessage`, `TaskCreate`, `TaskUpdate`) must refuse the WIT call before
//! anything is written, `delegate` mode must keep coordination, a shutdown
//! answer must get through any rule, and a flood must fail the flooding
//! teammate alone, with at most the limit delivered.

use std::path::Path;

use teamhost::embed::{SpawnRequest, TeammateState};
use teamhost::protocol::{ShutdownRequest, WireMessage};
use teamhost::sandbox::Limits;
use teamhost::store::{InboxMessage, NewTask, OutgoingMessage};

use crate::common::next_event;
use crate::sandbox_support::{hostile_request, small_limits, step, wait_done, Arena, Step};

/// A `hostile` request in `bypassPermissions` (so it can write
/// `results.log`) with `disallowed` as its deny rules.
fn denied_request(a: &Arena, name: &str, prompt: &str, disallowed: &[&str]) -> SpawnRequest {
    let dir = a.dir(name);
    let mut req = hostile_request(name, prompt, &dir, "bypassPermissions");
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(req.settings.rules.allowed_texts(), disallowed).unwrap();
    req
}

/// The result lines of `results.log` in `dir` (the guest's own record, for a
/// guest that may not message the lead).
fn logged_steps(dir: &Path) -> Vec<Step> {
    let text = std::fs::read_to_string(dir.join("results.log")).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\t');
            Some(Step {
                step: parts.next()?.to_string(),
                status: parts.next()?.to_string(),
                detail: parts.next().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// Waits until `results.log` in `dir` holds `times` `coord` DONE lines.
async fn wait_logged(a: &Arena, dir: &Path, times: usize) -> Vec<Step> {
    a.f.until(&format!("{times} coord commands in results.log"), || {
        logged_steps(dir)
            .iter()
            .filter(|s| s.step == "coord" && s.status == "DONE")
            .count()
            >= times
    })
    .await;
    logged_steps(dir)
}

/// Every message `name` holds or has read that `from` sent.
/// Everything `name` has received from `from`, read or not. The recipient
/// may take a message between the reads (moving it from its inbox to its
/// history), so the history is read on both sides of the inbox and each
/// message is counted once.
fn received_from(a: &Arena, name: &str, from: &str) -> Vec<InboxMessage> {
    let mut all = a.f.team.history(name).unwrap();
    all.extend(a.f.team.unread(name).unwrap());
    all.extend(a.f.team.history(name).unwrap());
    all.retain(|m| m.from == from);
    let mut seen = std::collections::HashSet::new();
    all.retain(|m| seen.insert((m.timestamp.clone(), m.text.clone())));
    all
}

fn limits(change: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = small_limits();
    change(&mut l);
    l
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_message_deny_rule_keeps_every_message_out_of_the_echo_inbox() {
    let a = Arena::new("coord-deny-send").await;
    let echo = a.echo.clone();
    let prompt =
        format!("coord send {echo} hello\ncoord deliver {echo} hello\ncoord broadcast hello");
    let req = denied_request(&a, "mute", &prompt, &["SendMessage"]);
    let dir = req.cwd.clone();
    let name = a.spawn(req).await;
    let got = wait_logged(&a, &dir, 3).await;
    for call in ["coord/send", "coord/deliver", "coord/broadcast"] {
        let s = step(&got, call);
        s.assert_denied();
        assert!(
            s.detail
                .contains("denied by rule `SendMessage` in disallowedTools"),
            "the reason names the rule: {s:?}"
        );
    }
    assert!(
        received_from(&a, &echo, &name).is_empty(),
        "a denied message reached {echo}: {:?}",
        received_from(&a, &echo, &name)
    );
    let to_lead: Vec<_> =
        a.f.lead_inbox()
            .into_iter()
            .filter(|m| m.from == name && crate::common::is_plain(m))
            .collect();
    assert!(
        to_lead.is_empty(),
        "the guest's reports got through: {to_lead:?}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_create_deny_rule_creates_no_task_file() {
    let a = Arena::new("coord-deny-create").await;
    let req = denied_request(&a, "planner", "coord create sneaky", &["TaskCreate"]);
    let dir = req.cwd.clone();
    a.spawn(req).await;
    let got = wait_logged(&a, &dir, 1).await;
    let s = step(&got, "coord/create");
    s.assert_denied();
    assert!(s.detail.contains("`TaskCreate`"), "{s:?}");
    assert!(a.f.team.list_tasks().unwrap().is_empty());
    let task_file = a.f.team.file_paths().unwrap().task("1").unwrap();
    assert!(!task_file.exists(), "{} was created", task_file.display());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_update_deny_rule_leaves_the_task_file_byte_identical() {
    let a = Arena::new("coord-deny-update").await;
    let task =
        a.f.team
            .create_task(NewTask {
                subject: "the lead's task".into(),
                description: "do not touch".into(),
                active_form: None,
                blocked_by: Vec::new(),
                metadata: None,
            })
            .unwrap();
    let file = a.f.team.file_paths().unwrap().task(&task.id).unwrap();
    let before = std::fs::read(&file).unwrap();
    let id = &task.id;
    let prompt =
        format!("coord update {id} hijacked\ncoord touch-task {id}\ncoord read-tasks {id}");
    let dir = a.dir("meddler");
    let mut req = hostile_request("meddler", &prompt, &dir, "default");
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(req.settings.rules.allowed_texts(), vec!["TaskUpdate"])
            .unwrap();
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "coord", 3).await;
    for call in ["coord/update", "coord/add-dependency", "coord/delete"] {
        let s = step(&got, call);
        s.assert_denied();
        assert!(s.detail.contains("`TaskUpdate`"), "{s:?}");
    }
    let claim = step(&got, "coord/claim");
    assert!(
        !claim.ok() && claim.detail.contains("denied: ") && claim.detail.contains("`TaskUpdate`"),
        "{claim:?}"
    );
    // Reading is another tool: TaskGet and TaskList still work.
    assert!(step(&got, "coord/get").ok(), "{got:#?}");
    assert!(step(&got, "coord/list").ok(), "{got:#?}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "a denied TaskUpdate changed {}",
        file.display()
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_get_and_task_list_deny_rules_hide_the_task_list() {
    let a = Arena::new("coord-deny-read").await;
    a.f.team
        .create_task(NewTask {
            subject: "private plans".into(),
            description: String::new(),
            active_form: None,
            blocked_by: Vec::new(),
            metadata: None,
        })
        .unwrap();
    let req = denied_request(&a, "snoop", "coord read-tasks 1", &["TaskGet", "TaskList"]);
    let dir = req.cwd.clone();
    a.spawn(req).await;
    let got = wait_logged(&a, &dir, 1).await;
    for (call, rule) in [("coord/get", "`TaskGet`"), ("coord/list", "`TaskList`")] {
        let s = step(&got, call);
        s.assert_denied();
        assert!(s.detail.contains(rule), "{s:?}");
        assert!(!s.detail.contains("private plans"), "{s:?}");
    }
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordination_still_works_in_delegate_mode() {
    let a = Arena::new("coord-delegate").await;
    let echo = a.echo.clone();
    let prompt =
        format!("coord send {echo} from the delegate\ncoord create delegated\ncoord read-tasks 1");
    let dir = a.dir("delegate");
    let name = a
        .spawn(hostile_request("delegate", &prompt, &dir, "delegate"))
        .await;
    let got = wait_done(&a.f, &name, "coord", 3).await;
    for call in ["coord/send", "coord/create", "coord/get", "coord/list"] {
        assert!(step(&got, call).ok(), "{call} in delegate mode: {got:#?}");
    }
    a.f.until(&format!("{echo} to receive the delegate's message"), || {
        received_from(&a, &echo, &name)
            .iter()
            .any(|m| m.text == "from the delegate")
    })
    .await;
    let tasks = a.f.team.list_tasks().unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].subject, "delegated");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_request_is_still_approved_under_a_send_message_deny_rule() {
    let a = Arena::new("coord-deny-shutdown").await;
    let req = denied_request(&a, "stoppable", "coord send team-lead hi", &["SendMessage"]);
    let dir = req.cwd.clone();
    let name = a.spawn(req).await;
    let got = wait_logged(&a, &dir, 1).await;
    step(&got, "coord/send").assert_denied();
    let mut events = a.f.host.events();
    let lead = a.f.team.config().unwrap().lead_name().to_string();
    let request = ShutdownRequest::new(&name, &lead, Some("done".into()));
    a.f.team
        .send(&name, OutgoingMessage::new(&lead, request.to_text()))
        .unwrap();
    let ended = next_event(&mut events, &format!("{name} to stop"), |e| {
        matches!(e, teamhost::embed::Event::StateChanged { name: n, state, .. }
            if *n == name && state.is_finished())
    })
    .await;
    match ended {
        teamhost::embed::Event::StateChanged { state, .. } => assert_eq!(
            state,
            TeammateState::Completed,
            "the shutdown answer did not get through the SendMessage deny rule"
        ),
        other => panic!("unexpected event {other:?}"),
    }
    a.echo_answers().await;
}

/// Spawns `name` flooding with `prompt` under `limits`; waits for it to fail
/// and returns the reason, after checking that the lead was told the same.
async fn flood(a: &Arena, name: &str, prompt: &str, limits: Limits) -> String {
    let mut events = a.f.host.events();
    let dir = a.dir(name);
    let mut req = hostile_request(name, prompt, &dir, "default");
    req.settings.limits = limits;
    let name = a.spawn(req).await;
    let reason = a.failure(&mut events, &name).await;
    assert!(reason.contains("coordination limit: "), "{reason}");
    a.f.until("the lead to be told about the coordination limit", || {
        a.host_notices()
            .iter()
            .any(|n| n.contains(&name) && n.contains("coordination limit"))
    })
    .await;
    reason
}

fn floods_from(messages: &[InboxMessage], from: &str) -> usize {
    messages
        .iter()
        .filter(|m| m.from == from && m.text.starts_with("flood #"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_flood_fails_the_teammate_at_the_limit_and_the_echo_still_answers() {
    let a = Arena::new("coord-flood-send").await;
    let l = limits(|l| l.max_messages_per_turn = 20);
    let reason = flood(&a, "flooder", "coord flood-send team-lead 1000", l).await;
    assert!(reason.contains("max_messages_per_turn"), "{reason}");
    let flooded = floods_from(&a.f.lead_inbox(), "flooder");
    assert_eq!(flooded, 20, "the lead's inbox holds exactly the limit");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_flood_fails_the_teammate_at_the_limit() {
    let a = Arena::new("coord-flood-broadcast").await;
    let l = limits(|l| l.max_broadcasts_per_turn = 3);
    let reason = flood(&a, "shouter", "coord flood-broadcast 1000", l).await;
    assert!(reason.contains("max_broadcasts_per_turn"), "{reason}");
    assert!(floods_from(&a.f.lead_inbox(), "shouter") <= 3);
    let echo = a.echo.clone();
    assert!(floods_from(&received_from(&a, &echo, "shouter"), "shouter") <= 3);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_flood_fails_the_teammate_at_the_limit() {
    let a = Arena::new("coord-flood-tasks").await;
    let l = limits(|l| l.max_tasks_per_turn = 5);
    let reason = flood(&a, "tasker", "coord flood-tasks 1000", l).await;
    assert!(reason.contains("max_tasks_per_turn"), "{reason}");
    assert_eq!(a.f.team.list_tasks().unwrap().len(), 5);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_message_limit_holds_across_turns() {
    let a = Arena::new("coord-total").await;
    let echo = a.echo.clone();
    // Each command costs three messages: the send, its report, its DONE line.
    let l = limits(|l| l.max_messages_total = 5);
    let mut events = a.f.host.events();
    let dir = a.dir("chatty");
    let mut req = hostile_request("chatty", &format!("coord send {echo} one"), &dir, "default");
    req.settings.limits = l;
    let name = a.spawn(req).await;
    wait_done(&a.f, &name, "coord", 1).await;
    a.f.host
        .send_as_lead(&a.f.name, &name, &format!("coord send {echo} two"), None)
        .unwrap();
    let reason = a.failure(&mut events, &name).await;
    assert!(reason.contains("max_messages_total"), "{reason}");
    // Five messages in all reached someone, and the sixth trapped. How they
    // split between the lead (reports, DONE lines) and the echo (sends)
    // depends on whether the echo's answer to "one" starts a turn before the
    // lead's "two" does, so only the total is fixed.
    let to_lead =
        a.f.lead_inbox()
            .into_iter()
            .filter(|m| m.from == name && crate::common::is_plain(m))
            .count();
    let to_echo = received_from(&a, &echo, &name).len();
    assert_eq!(
        to_lead + to_echo,
        5,
        "{to_lead} to the lead, {to_echo} to {echo}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn team_lead_names_the_member_the_roster_marks_as_lead() {
    // `team.lead` answers from the spawn, `team.roster` from config.json:
    // the two must agree, and the guest's report (sent to `team.lead`)
    // must reach the real lead.
    let a = Arena::new("coord-lead-name").await;
    let dir = a.dir("asker");
    let name = a
        .spawn(hostile_request("asker", "whoami", &dir, "default"))
        .await;
    let got = wait_done(&a.f, &name, "whoami", 1).await;
    let s = step(&got, "whoami");
    assert!(s.ok(), "{s:?}");
    assert!(
        s.detail.ends_with("lead=team-lead roster-lead=team-lead"),
        "{s:?}"
    );
    a.assert_contained().await;
}
