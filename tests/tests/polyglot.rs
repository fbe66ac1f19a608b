//! Python and JavaScript teammates in a team with a Rust one, end to end:
//! the `worker` guest of `guests/python` and of `guests/js` (both JS
//! engines) joins a team beside the Rust `worker`, handles the lead's task
//! assignments, claims and completes tasks, reads and writes files through
//! the sandboxed tools, is denied what its mode forbids, counts a report the
//! Rust teammate wrote, and approves the shutdown. The same steps, with the
//! same assertions, for each language: the WIT contract is the only thing
//! the host knows of a teammate.
//!
//! The components come from `teamhost_tests::polyglot::component`: a missing
//! one fails the test (`scripts/test` builds them), unless
//! `TEAMHOST_NO_POLYGLOT=1` skips it.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Fixture;
use teamhost::embed::{Event, HostOptions, SpawnRequest, TeammateSettings};
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{NewTask, TaskStatus};
use tokio::sync::broadcast::error::RecvError;

/// Text of the file outside every teammate's directory; it must never reach
/// the lead.
const SECRET: &str = "POLYGLOT-SECRET-1717";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_worker_works_beside_a_rust_worker_within_its_sandbox() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::WORKER_PY) {
        works_beside_a_rust_worker("py", component).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_worker_works_beside_a_rust_worker_within_its_sandbox() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::WORKER_JS) {
        works_beside_a_rust_worker("js", component).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_worker_on_quickjs_works_beside_a_rust_worker_within_its_sandbox() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::WORKER_QJS) {
        works_beside_a_rust_worker("qjs", component).await;
    }
}

/// The whole run for one foreign `component`. Its teammates are named
/// `{lang}-mail` (acceptEdits, takes the tasks the lead assigns),
/// `{lang}-plan` (plan mode: may read, may not write) and `{lang}-auto`
/// (acceptEdits, claims open tasks itself); `rust` is the Rust worker.
/// Nobody but `{lang}-auto` claims on its own, and it joins last, so who
/// does which task is fixed.
async fn works_beside_a_rust_worker(lang: &str, component: &str) {
    let f = Fixture::with_options(&format!("polyglot-{lang}"), shared_cache());
    let _logs = ShowGuestLogs(f.home.join("logs").join(&f.name));
    let data = f.dir("data");
    std::fs::write(data.join("a.txt"), "one two three").unwrap();
    std::fs::write(data.join("b.txt"), "four five").unwrap();
    std::fs::write(data.join("c.txt"), "six").unwrap();
    std::fs::write(f.dir("outside").join("secret.txt"), SECRET).unwrap();
    let (mail, plan, auto) = (
        format!("{lang}-mail"),
        format!("{lang}-plan"),
        format!("{lang}-auto"),
    );
    let (stop, turns) = watch_turns(&f);

    // The Rust worker and two foreign ones join; none claims on its own.
    spawn(
        &f,
        "rust",
        teamhost_tests::WORKER,
        &data,
        "acceptEdits",
        false,
    )
    .await;
    spawn(&f, &mail, component, &data, "acceptEdits", false).await;
    spawn(&f, &plan, component, &data, "plan", false).await;
    f.settle().await;
    let config = f.team.config().unwrap();
    assert_eq!(
        config.member_names(),
        ["team-lead", "rust", mail.as_str(), plan.as_str()]
    );
    assert!(config.members[1..]
        .iter()
        .all(|m| m.backend_type.as_deref() == Some("in-process")));

    // A task the lead assigns: the task_assignment message wakes the
    // foreign worker, which claims the task, reads a.txt and writes its
    // report through the tools, completes the task and tells the lead.
    let t1 = assign(&f, "Count a", "- a.txt", &mail);
    let done = lead_message(&f, &mail, &format!("Task #{t1} ")).await;
    assert_eq!(
        done,
        format!("Task #{t1} done: 3 words in 1 file(s); report in reports/task-{t1}.md")
    );
    let task = f.team.task(&t1).unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.owner.as_deref(), Some(mail.as_str()));
    let metadata = serde_json::Value::Object(task.metadata.clone().unwrap_or_default());
    assert_eq!(metadata["report"], format!("reports/task-{t1}.md"));
    assert_eq!(metadata["words"], 3);
    let report = std::fs::read_to_string(data.join(format!("reports/task-{t1}.md"))).unwrap();
    assert!(
        report.contains("| a.txt | 3 |") && report.contains("| **total** | **3** |"),
        "{report}"
    );

    // Plan mode reads but may not write: the report is denied, the task
    // fails, and the lead hears why.
    let t2 = assign(&f, "Count b", "- b.txt", &plan);
    let failed = lead_message(&f, &plan, &format!("Task #{t2} ")).await;
    assert!(
        failed.starts_with(&format!(
            "Task #{t2} failed: cannot write reports/task-{t2}.md: denied: "
        )) && failed.contains("plan approval"),
        "{failed}"
    );
    assert!(!data.join(format!("reports/task-{t2}.md")).exists());
    let task = f.team.task(&t2).unwrap();
    assert_eq!(
        (task.status, task.owner.as_deref()),
        (TaskStatus::InProgress, Some(plan.as_str()))
    );

    // A file outside its directory is denied in every mode, even to a
    // teammate that may write: nothing of it reaches the lead.
    let t3 = assign(&f, "Count the secret", "- ../outside/secret.txt", &mail);
    let failed = lead_message(&f, &mail, &format!("Task #{t3} ")).await;
    assert!(
        failed.starts_with(&format!(
            "Task #{t3} failed: cannot read ../outside/secret.txt: denied: "
        )) && failed.contains("climbs out of the capability directory"),
        "{failed}"
    );
    assert!(!data.join(format!("reports/task-{t3}.md")).exists());

    // The Rust worker takes its assignment the same way.
    let t4 = assign(&f, "Count c", "- c.txt", "rust");
    let done = lead_message(&f, "rust", &format!("Task #{t4} ")).await;
    assert!(
        done.starts_with(&format!("Task #{t4} done: 1 words")),
        "{done}"
    );

    // An open task that counts the Rust worker's report; a foreign worker
    // that claims joins, and takes it (a task-claimed turn).
    let rust_report = format!("reports/task-{t4}.md");
    let words = std::fs::read_to_string(data.join(&rust_report))
        .unwrap()
        .split_whitespace()
        .count();
    let t5 = f
        .team
        .create_task(NewTask {
            subject: "Count the Rust report".into(),
            description: format!("Count the words of what rust wrote.\n- {rust_report}\n"),
            ..Default::default()
        })
        .unwrap()
        .id;
    spawn(&f, &auto, component, &data, "acceptEdits", true).await;
    let done = lead_message(&f, &auto, &format!("Task #{t5} ")).await;
    assert_eq!(
        done,
        format!("Task #{t5} done: {words} words in 1 file(s); report in reports/task-{t5}.md")
    );
    assert_eq!(
        f.team.task(&t5).unwrap().owner.as_deref(),
        Some(auto.as_str())
    );
    f.settle().await;
    assert!(
        !f.lead_inbox().iter().any(|m| m.text.contains(SECRET)),
        "the secret reached the lead"
    );

    // Everyone approves the shutdown.
    let report = f
        .host
        .shutdown_team(&f.name, "done", Duration::from_secs(30))
        .await
        .unwrap();
    let stopped: BTreeSet<_> = report.stopped.iter().map(String::as_str).collect();
    assert_eq!(
        stopped,
        BTreeSet::from(["rust", mail.as_str(), plan.as_str(), auto.as_str()]),
        "{report:?}"
    );
    assert!(report.killed.is_empty(), "{report:?}");
    let approved: BTreeSet<String> = f
        .lead_protocol()
        .into_iter()
        .filter_map(|m| match m {
            ProtocolMessage::ShutdownApproved(a) => Some(a.from),
            _ => None,
        })
        .collect();
    assert_eq!(
        approved,
        ["rust", mail.as_str(), plan.as_str(), auto.as_str()]
            .into_iter()
            .map(String::from)
            .collect::<BTreeSet<_>>()
    );
    assert_eq!(f.members(), ["team-lead"]);

    // The turns each took: messages for the assigned ones, task-claimed for
    // the one that claims, a shutdown request for all.
    stop.send(()).unwrap();
    let seen = common::bounded("the turn watcher", turns).await.unwrap();
    for (name, kind) in [
        (mail.as_str(), "message"),
        (plan.as_str(), "message"),
        ("rust", "message"),
        (auto.as_str(), "task-claimed"),
        (mail.as_str(), "shutdown-request"),
        (plan.as_str(), "shutdown-request"),
        (auto.as_str(), "shutdown-request"),
    ] {
        assert!(
            seen.contains(&(name.to_string(), kind.to_string())),
            "{name} had no {kind} turn: {seen:?}"
        );
    }
    assert!(
        !seen.contains(&(mail.clone(), "task-claimed".to_string())),
        "{mail} claimed on its own: {seen:?}"
    );
}

/// Collects `(teammate, turn kind)` of every turn started until `stop`
/// fires (then it takes the events already sent, and returns).
fn watch_turns(
    f: &Fixture,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<BTreeSet<(String, String)>>,
) {
    let mut events = f.host.events();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let turns = tokio::spawn(async move {
        let mut seen = BTreeSet::new();
        let mut note = |event: Event| {
            if let Event::TurnStarted { name, kind, .. } = event {
                seen.insert((name, kind));
            }
        };
        loop {
            tokio::select! {
                biased;
                event = events.recv() => match event {
                    Ok(event) => note(event),
                    Err(RecvError::Lagged(n)) => panic!("lost {n} events"),
                    Err(RecvError::Closed) => break,
                },
                _ = &mut stopped => {
                    while let Ok(event) = events.try_recv() {
                        note(event);
                    }
                    break;
                }
            }
        }
        seen
    });
    (stop, turns)
}

/// Host options with one component cache for every run of these tests and
/// of `polyglot_examples` (under cargo's temporary directory for integration
/// tests): a Python or JavaScript component is compiled once, not once per
/// test run.
pub(crate) fn shared_cache() -> HostOptions {
    HostOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("polyglot-cache")),
        ..Default::default()
    }
}

async fn spawn(f: &Fixture, name: &str, component: &str, dir: &Path, mode: &str, claims: bool) {
    let req = SpawnRequest {
        settings: TeammateSettings {
            mode: Some(mode.parse().unwrap()),
            auto_claim: claims,
            ..Default::default()
        },
        ..SpawnRequest::new(name, component, "You count words.", dir)
    };
    let info = f.host.spawn(&f.name, req).await.unwrap();
    assert_eq!(info.name, name);
}

/// Creates a task counting `files` and makes `owner` its owner, which sends
/// `owner` a task_assignment. Returns its id.
fn assign(f: &Fixture, subject: &str, files: &str, owner: &str) -> String {
    f.assign(subject, &format!("{files}\n"), owner)
}

/// Waits for the plain message from `from` to the lead that starts with
/// `prefix`, and returns its text.
async fn lead_message(f: &Fixture, from: &str, prefix: &str) -> String {
    let find = || {
        f.lead_inbox()
            .into_iter()
            .find(|m| {
                m.from == from
                    && m.text.starts_with(prefix)
                    && matches!(ProtocolMessage::parse(&m.text), Parsed::Plain)
            })
            .map(|m| m.text)
    };
    f.until(&format!("{from}'s message {prefix}…"), || {
        find().is_some()
    })
    .await;
    find().unwrap()
}

/// Prints the guests' logs (what they wrote to stderr) when the test fails.
pub(crate) struct ShowGuestLogs(pub(crate) PathBuf);

impl Drop for ShowGuestLogs {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return;
        };
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            eprintln!("--- {}\n{text}", entry.path().display());
        }
    }
}
