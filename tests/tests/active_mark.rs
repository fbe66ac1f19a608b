//! `isActive` in the team config, as an in-process teammate's turns write
//! it: `true` once a turn has lasted a moment, `false` when the teammate
//! runs out of work, and nothing in between while it goes from one turn
//! straight to the next (a busy streak costs two config writes, not two
//! per turn). Over the memory store, whose change feed reports every write
//! at once, so the test sees each value the config took.

use std::sync::{Arc, Mutex};

use teamhost::embed::{Host, HostOptions};
use teamhost::home::Home;
use teamhost::sandbox::ToolRules;
use teamhost::store::{NewTask, NewTeam, Store, StoreEvent, StoreObserver, TaskStatus, Team};
use tokio::sync::mpsc;

use crate::common::{bounded, probe_request};

/// A value `isActive` took, and how many tasks were completed then.
type Seen = (Option<bool>, usize);

/// Records every change of the probe's `isActive`.
struct ActiveWatch {
    team: Team,
    last: Mutex<Option<bool>>,
    seen: mpsc::UnboundedSender<Seen>,
}

impl StoreObserver for ActiveWatch {
    fn changed(&self, e: &StoreEvent) {
        if !matches!(e, StoreEvent::ConfigChanged { .. }) {
            return;
        }
        let Ok(config) = self.team.config() else {
            return;
        };
        let Some(active) = config.member("p").map(|m| m.is_active) else {
            return;
        };
        let mut last = self.last.lock().unwrap();
        if *last == active {
            return;
        }
        *last = active;
        let completed = self
            .team
            .list_tasks()
            .unwrap_or_default()
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count();
        let _ = self.seen.send((active, completed));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_streak_of_turns_marks_the_teammate_active_once_and_idle_once_after_its_last_task() {
    let tmp = tempfile::tempdir().unwrap();
    let host = Host::with_store(
        Home::new(tmp.path().join("home")),
        Store::in_memory(),
        HostOptions::default(),
    )
    .unwrap();
    host.create_team("act", NewTeam::default()).unwrap();
    let team = host.team("act").unwrap();
    for subject in ["one", "two", "three"] {
        team.create_task(NewTask {
            subject: subject.into(),
            ..Default::default()
        })
        .unwrap();
    }
    let (tx, mut seen) = mpsc::unbounded_channel();
    let _feed = team
        .watch(Arc::new(ActiveWatch {
            team: team.clone(),
            last: Mutex::new(None),
            seen: tx,
        }))
        .unwrap();

    // Each task turn holds a Bash call until `release` exists: the first
    // lasts until the config says the teammate is active.
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let mut req = probe_request("p", "bash-on-task", &dir);
    req.settings.auto_claim = true;
    req.settings.rules = ToolRules::new(["Bash"], Vec::<String>::new()).unwrap();
    host.spawn("act", req).await.unwrap();

    let mut values = Vec::new();
    loop {
        let value = bounded("isActive: true", seen.recv()).await.unwrap();
        values.push(value);
        if value.0 == Some(true) {
            break;
        }
    }
    std::fs::write(dir.join("release"), "").unwrap();
    bounded("the teammate to run out of work", host.wait_idle("act"))
        .await
        .unwrap();
    while let Ok(value) = seen.try_recv() {
        values.push(value);
    }

    let done = team
        .list_tasks()
        .unwrap()
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .count();
    assert_eq!(done, 3, "the probe completes the three tasks");
    // Recorded idle at spawn, then one `true` while task #1's turn ran and
    // one `false` once all three were done: no `false` between the turns.
    assert_eq!(
        values,
        vec![(Some(false), 0), (Some(true), 0), (Some(false), 3)],
        "the values isActive took (value, tasks completed then)"
    );
}
