//! A guest that traps fails alone: it is marked failed, the lead is told why,
//! its task goes back to `pending`, it leaves the team, and everyone else keeps
//! working.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{line, next_event, turns, Fixture};
use teamhost::embed::{Event, HostOptions, TeammateState};
use teamhost::home::Home;
use teamhost::store::{NewTask, Store, TaskStatus};

fn task(subject: &str) -> NewTask {
    NewTask {
        subject: subject.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_that_traps_on_its_task_fails_alone_and_the_others_finish_its_task() {
    // No fallback poll: a runner wakes only on this host's own writes, which
    // lets the test decide who sees task 1 first.
    let f = Fixture::with_options(
        "trap",
        HostOptions {
            poll_interval: Duration::from_secs(3600),
            // Nor file notifications: "another process" below is a store
            // without the host's observer, and must not wake anyone.
            watch_files: false,
            ..Default::default()
        },
    );
    let mut good_dirs = Vec::new();
    for _ in 0..2 {
        let name = format!("good-{}", good_dirs.len());
        let dir = f.dir(&name);
        let mut req = common::probe_request("good", "complete-tasks", &dir);
        req.settings.auto_claim = true;
        f.host.spawn("trap", req).await.unwrap();
        good_dirs.push(dir);
    }
    f.settle().await;

    // Task 1 is written as another process would (no wake-up for the idle
    // probes), then the trapping probe joins: after its initial turn it finds
    // task 1, claims it and traps.
    let outside = Store::new(Home::new(&f.home)).team("trap").unwrap();
    outside.create_task(task("Trap bait")).unwrap();
    let mut events = f.host.events();
    let trap_dir = f.dir("trapper");
    let mut req = common::probe_request("trapper", "trap-on-task", &trap_dir);
    req.settings.auto_claim = true;
    f.host.spawn("trap", req).await.unwrap();

    let failed = next_event(&mut events, "the trapper to fail", |e| {
        matches!(e, Event::StateChanged { name, state, .. } if name == "trapper" && state.is_finished())
    })
    .await;
    let Event::StateChanged {
        state: TeammateState::Failed(reason),
        ..
    } = failed
    else {
        panic!("the trapper should have failed: {failed:?}");
    };
    assert!(reason.contains("unreachable"), "reason: {reason}");
    let trap_turns = turns(&trap_dir);
    assert_eq!(trap_turns.len(), 2, "{trap_turns:?}");
    assert_eq!(trap_turns[0], line("initial", "team-lead", "trap-on-task"));
    assert_eq!(
        (&*trap_turns[1].0, &*trap_turns[1].2),
        ("task-claimed", "1")
    );

    // More work arrives; the two others do all of it, task 1 included.
    for subject in ["Two", "Three", "Four"] {
        f.team.create_task(task(subject)).unwrap();
    }
    f.settle().await;

    let tasks = f.team.list_tasks().unwrap();
    assert_eq!(tasks.len(), 4);
    for t in &tasks {
        assert_eq!(t.status, TaskStatus::Completed, "{t:?}");
        let owner = t.owner.as_deref().unwrap_or_default();
        assert!(owner == "good" || owner == "good-2", "{t:?}");
    }
    let claimed_by_good: BTreeSet<String> = good_dirs
        .iter()
        .flat_map(|d| turns(d))
        .filter(|(kind, _, _)| kind == "task-claimed")
        .map(|(_, _, id)| id)
        .collect();
    assert_eq!(
        claimed_by_good.into_iter().collect::<Vec<_>>(),
        ["1", "2", "3", "4"]
    );

    // The lead was told, by the host, who failed and which task went back.
    let notices: Vec<String> = f
        .lead_inbox()
        .into_iter()
        .filter(|m| m.from == teamhost::runner::HOST_SENDER)
        .map(|m| m.text)
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let notice = &notices[0];
    assert!(
        notice.contains("trapper failed") && notice.contains("#1 \"Trap bait\""),
        "notice: {notice}"
    );

    // It is gone from the team; the others are still there and running.
    assert_eq!(f.members(), ["team-lead", "good", "good-2"]);
    let states: Vec<(String, &'static str)> = f
        .host
        .teammates("trap")
        .into_iter()
        .map(|t| (t.name, t.state.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            ("good".to_string(), "idle"),
            ("good-2".to_string(), "idle"),
            ("trapper".to_string(), "failed"),
        ]
    );
    let err = f.host.inject("trap", "trapper", "hello").unwrap_err();
    assert!(err.to_string().contains("trapper"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_that_traps_on_a_message_fails_while_its_peer_keeps_answering() {
    let f = Fixture::new("trap-msg");
    f.probe("fragile", "trap-on-message").await;
    f.probe("steady", "steady").await;
    f.settle().await;

    let mut events = f.host.events();
    f.host
        .send_as_lead("trap-msg", "fragile", "please trap now", None)
        .unwrap();
    let failed = next_event(&mut events, "fragile to fail", |e| {
        matches!(e, Event::StateChanged { name, state, .. } if name == "fragile" && state.is_finished())
    })
    .await;
    assert!(
        matches!(
            &failed,
            Event::StateChanged {
                state: TeammateState::Failed(_),
                ..
            }
        ),
        "{failed:?}"
    );

    f.host
        .send_as_lead("trap-msg", "steady", "reply", None)
        .unwrap();
    f.until("steady's ack", || {
        f.lead_inbox()
            .iter()
            .any(|m| m.from == "steady" && m.text == "ack")
    })
    .await;
    let notice = f
        .lead_inbox()
        .into_iter()
        .find(|m| m.from == teamhost::runner::HOST_SENDER)
        .expect("a notice from the host");
    assert!(notice.text.starts_with("fragile failed: "), "{notice:?}");
    assert_eq!(f.members(), ["team-lead", "steady"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_panic_is_recorded_with_its_message_and_the_log_file() {
    let f = Fixture::new("panic");
    f.probe("fragile", "steady").await;
    f.settle().await;

    let mut events = f.host.events();
    f.host
        .send_as_lead("panic", "fragile", "panic out of cheese \u{1b}[2J", None)
        .unwrap();
    let failed = next_event(&mut events, "fragile to fail", |e| {
        matches!(e, Event::StateChanged { name, state, .. } if name == "fragile" && state.is_finished())
    })
    .await;
    let Event::StateChanged {
        state: TeammateState::Failed(why),
        ..
    } = failed
    else {
        panic!("{failed:?}")
    };
    let log = f.home.join("logs/panic/fragile.log");
    // The panic's words, labelled as the guest's and made inert; the log
    // file itself; the frames named from the name section (the probe's own
    // code is inlined into its export), never `<wasm function N>`.
    assert!(
        why.starts_with("the guest crashed (wasm trap: wasm `unreachable`"),
        "{why}"
    );
    assert!(why.contains("its stderr said: «"), "{why}");
    assert!(why.contains("out of cheese [2J»"), "{why}");
    assert!(why.contains(&format!("log: {}", log.display())), "{why}");
    assert!(why.contains("; in teamhost:agent/handler@"), "{why}");
    assert!(!why.contains("<wasm function"), "{why}");
    assert!(f.log("fragile").contains("out of cheese"));
    // The lead is told the same.
    let notice = f
        .lead_inbox()
        .into_iter()
        .find(|m| m.from == teamhost::runner::HOST_SENDER)
        .expect("a notice from the host");
    assert!(notice.text.contains("out of cheese"), "{notice:?}");
}
