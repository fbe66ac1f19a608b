//! Host failover with real processes (issue 32): a real `nats-server`, the
//! real `teamhost` binary and the real `probe` component. The test is the
//! lead: it creates the team and seeds its tasks through the store, and
//! reads the lead's inbox. Host A (`teamhost run --join --lease 2`, home A)
//! runs `p1` and `p2`, whose every task holds in a Bash call until a
//! `release` file appears (`bash-on-task`); host B (`teamhost run --adopt
//! --lease 2`, home B) stands by. A dies (SIGKILL) or stops (SIGSTOP) with
//! both tasks in progress; B takes p1 and p2 over after the lease, they
//! complete every task, each exactly once, and the lead hears what moved
//! where. A revived A finds its lease taken and stops without writing.
//!
//! A's probes keep their directives in A's home (`state.save`), out of B's
//! reach: the adopted copies complete tasks without holding, which is how a
//! completion by A's copies is told apart (`bash.log`, written only by a
//! held call that was released).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::nats_store::{store, teamhost, Running};
use crate::run_common::shown;
use teamhost::store::{LeaseState, NewTask, NewTeam, TaskStatus, Team};
use teamhost_tests::nats_server::NatsServer;

const TASKS: usize = 6;
const TEAM: &str = "fo";

/// A team on `url` seeded with [`TASKS`] tasks, manifests for host A (p1,
/// p2 holding every task) and host B (the same component, standing by).
struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    url: String,
    team: Team,
}

impl Setup {
    fn new(url: String) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let team_section = format!("[team]\nname = {TEAM:?}\nstore = {url:?}\n");
        let mate = |name: &str, prompt: &str| {
            format!(
                "[[teammate]]\nname = {name:?}\ncomponent = {:?}\nprompt = {prompt:?}\ncwd = \"work/{name}\"\nmode = \"acceptEdits\"\nallowed_tools = [\"Bash\"]\n",
                teamhost_tests::PROBE
            )
        };
        for name in ["p1", "p2"] {
            std::fs::create_dir_all(root.join("work").join(name)).unwrap();
        }
        let a = team_section.clone()
            + &mate("p1", "complete-tasks bash-on-task")
            + &mate("p2", "complete-tasks bash-on-task");
        std::fs::write(root.join("a.toml"), a).unwrap();
        std::fs::write(
            root.join("b.toml"),
            team_section + &mate("p1", "standby: its component is what counts"),
        )
        .unwrap();
        let team = store(&url).team(TEAM).unwrap();
        team.create(NewTeam::default()).unwrap();
        for i in 1..=TASKS {
            team.create_task(NewTask {
                subject: format!("Step {i}"),
                ..Default::default()
            })
            .unwrap();
        }
        Setup {
            _dir: dir,
            root,
            url,
            team,
        }
    }

    fn home(&self, which: &str) -> PathBuf {
        self.root.join(format!("home-{which}"))
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.root.join("work").join(name)
    }

    fn start(&self, which: &str, args: &[&str]) -> Running {
        let manifest = self.root.join(format!("{which}.toml"));
        let mut all = vec!["--json", "run"];
        all.extend_from_slice(args);
        all.extend(["--lease", "2", "--timeout", "120"]);
        all.push(manifest.to_str().unwrap());
        Running::start(&self.home(which), &all)
    }

    /// Waits (reading the store and the files, 60 s at most) until `what`.
    fn wait_until(&self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; tasks: {:?}",
                self.team.list_tasks()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Both of A's teammates hold a task in progress (in their Bash call).
    fn wait_both_holding(&self) -> Vec<String> {
        let mut held = Vec::new();
        self.wait_until("p1 and p2 holding a task each", || {
            let tasks = self.team.list_tasks().unwrap();
            held = tasks
                .iter()
                .filter(|t| t.status == TaskStatus::InProgress)
                .filter_map(|t| {
                    let owner = t.owner.clone()?;
                    self.dir(&owner)
                        .join(format!("holding-{}", t.id))
                        .exists()
                        .then(|| t.id.clone())
                })
                .collect();
            held.len() == 2
        });
        held
    }

    /// Every task completed, noted in `completed.log` (the probe notes it
    /// after its update succeeded) and reported to the lead; the counts of
    /// the log by task id.
    fn wait_all_completed(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        self.wait_until("every task completed", || {
            counts = completions(&[self.dir("p1"), self.dir("p2")]);
            let tasks = self.team.list_tasks().unwrap();
            // The lead's report leaves after the turn, after the log.
            tasks.iter().all(|t| t.status == TaskStatus::Completed)
                && counts.values().sum::<usize>() >= TASKS
                && self.reports().values().sum::<usize>() >= TASKS
        });
        counts
    }

    /// The completion reports in the lead's inbox (nobody consumes it: the
    /// test is the lead), by task id.
    fn reports(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for m in self.team.read_inbox("team-lead").unwrap() {
            let v: serde_json::Value = match serde_json::from_str(&m.text) {
                Ok(v) => v,
                Err(_) => continue,
            };
            if let Some(id) = v["completedTaskId"].as_str() {
                *out.entry(id.to_string()).or_default() += 1;
            }
        }
        out
    }

    /// The host's takeover messages to the lead.
    fn told(&self) -> Vec<String> {
        self.team
            .read_inbox("team-lead")
            .unwrap()
            .into_iter()
            .filter(|m| m.from == "teamhost")
            .map(|m| m.text)
            .collect()
    }

    /// Asks p1 and p2 to shut down as the lead; B then ends cleanly.
    fn shut_down_and_finish(&self, b: Running) -> serde_json::Value {
        for name in ["p1", "p2"] {
            let asked = teamhost(
                &self.home("lead"),
                &self.url,
                &["shutdown", "--team", TEAM, name],
            );
            assert!(asked.status.success(), "{}", shown(&asked));
        }
        let (status, summary, shown) = b.finish();
        assert!(status.success(), "{shown}");
        assert_eq!(summary["outcome"], "shut-down", "{shown}");
        let mut adopted: Vec<&str> = summary["adopted"]
            .as_array()
            .unwrap_or_else(|| panic!("no adopted list: {shown}"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        adopted.sort();
        assert_eq!(adopted, ["p1", "p2"], "{shown}");
        summary
    }

    /// The id of the host that took A's lease over, from the store.
    fn adopter(&self) -> String {
        let s = store(&self.url);
        let f = s.backend().failover().expect("NATS keeps leases");
        let leases = f.read_leases(TEAM).unwrap();
        leases
            .iter()
            .find_map(|(l, _)| match &l.state {
                LeaseState::TakenOver { by, .. } => Some(by.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no lease taken over: {leases:?}"))
    }
}

/// Task id → how many `completed.log` lines name it, over `dirs`.
fn completions(dirs: &[PathBuf]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for d in dirs {
        let log = std::fs::read_to_string(d.join("completed.log")).unwrap_or_default();
        for id in log.lines() {
            *out.entry(id.to_string()).or_default() += 1;
        }
    }
    out
}

fn release(dir: &Path) {
    std::fs::write(dir.join("release"), "").unwrap();
}

fn signal(child: &std::process::Child, sig: libc::c_int) {
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({sig}) failed");
}

fn each_once(counts: &BTreeMap<String, usize>, what: &str) {
    let want: BTreeMap<String, usize> = (1..=TASKS).map(|i| (i.to_string(), 1)).collect();
    assert_eq!(counts, &want, "{what}: every task exactly once");
}

#[test]
fn a_killed_hosts_teammates_are_adopted_after_the_lease_and_finish_every_task_once() {
    let Some(server) = NatsServer::start_or_skip("failover") else {
        return;
    };
    let s = Setup::new(server.url("fk"));
    let mut b = s.start("b", &["--adopt"]);
    b.wait_for_line("standing by for team fo");
    let mut a = s.start("a", &["--join"]);
    let held = s.wait_both_holding();

    let killed = Instant::now();
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    b.wait_for_line("adopted p1, p2 from host");
    let adopted_after = killed.elapsed();
    eprintln!("death -> adopted: {adopted_after:?}");
    // B counts the lease from the last renewal it saw, which A sent up to a
    // third of a lease before it died: adoption comes 2 s after that
    // renewal, so at least 2 s - 2/3 s after the death, never within the
    // half lease A itself counts its renewal valid (1 s); and at most the
    // lease, one 250 ms look and the takeover after it.
    assert!(
        adopted_after >= Duration::from_secs(1),
        "adopted while A still counted its lease valid: {adopted_after:?}"
    );
    assert!(
        adopted_after < Duration::from_secs(5),
        "adopted too late: {adopted_after:?}"
    );

    let done = s.wait_all_completed();
    each_once(&done, "completed.log");
    each_once(&s.reports(), "completion reports to the lead");
    for id in &held {
        let task = s
            .team
            .list_tasks()
            .unwrap()
            .into_iter()
            .find(|t| &t.id == id)
            .unwrap();
        assert!(
            matches!(task.owner.as_deref(), Some("p1" | "p2")),
            "{task:?}"
        );
    }
    let told = s.told();
    assert_eq!(told.len(), 1, "one message from the host: {told:?}");
    let by = s.adopter();
    for needle in [
        by.as_str(),
        "p1, p2 now run",
        "handed back to p1",
        "handed back to p2",
    ] {
        assert!(told[0].contains(needle), "{needle:?} not in {}", told[0]);
    }
    // The held Bash calls of the dead host's copies are released only
    // now: they complete nothing more.
    release(&s.dir("p1"));
    release(&s.dir("p2"));
    s.shut_down_and_finish(b);
    each_once(
        &completions(&[s.dir("p1"), s.dir("p2")]),
        "completed.log at the end",
    );
    // B removed the run records of the teammates that ended on it, and
    // released its lease as it ended: nothing is left to take over.
    let there = store(&s.url);
    let f = there.backend().failover().unwrap();
    let runs = f.read_runs(TEAM).unwrap();
    assert!(runs.is_empty(), "run records left: {runs:?}");
    let leases = f.read_leases(TEAM).unwrap();
    let mine = leases.iter().find(|(l, _)| l.host == by).unwrap();
    assert_eq!(mine.0.state, LeaseState::Released, "{leases:?}");
}

#[test]
fn a_paused_host_whose_lease_was_taken_stops_without_writing_and_names_the_adopter() {
    let Some(server) = NatsServer::start_or_skip("failover") else {
        return;
    };
    let s = Setup::new(server.url("fs"));
    let mut b = s.start("b", &["--adopt"]);
    b.wait_for_line("standing by for team fo");
    let a = s.start("a", &["--join"]);
    s.wait_both_holding();

    signal(&a.child, libc::SIGSTOP);
    // The held calls may end now: A's copies would complete their tasks as
    // soon as A runs again, if A still wrote.
    release(&s.dir("p1"));
    release(&s.dir("p2"));
    b.wait_for_line("adopted p1, p2 from host");
    let done = s.wait_all_completed();
    each_once(&done, "completed.log before A runs again");
    let by = s.adopter();

    signal(&a.child, libc::SIGCONT);
    let (status, summary, shown) = a.finish();
    assert!(!status.success(), "{shown}");
    let error = summary["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("taken over") && error.contains(&by),
        "A's error names the adopter {by}: {shown}"
    );
    // Nothing from A's copies landed: still one completion per task in the
    // logs and in the lead's mail.
    each_once(
        &completions(&[s.dir("p1"), s.dir("p2")]),
        "completed.log after A ran again",
    );
    each_once(&s.reports(), "completion reports after A ran again");
    s.shut_down_and_finish(b);
}

#[test]
fn adopt_is_refused_on_the_file_store_and_with_tasks_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("team.toml");
    let mate = format!(
        "[[teammate]]\nname = \"p\"\ncomponent = {:?}\nprompt = \"standby\"\ncwd = \"work\"\n",
        teamhost_tests::PROBE
    );
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let home = dir.path().join("home");
    let run = |toml: &str| {
        std::fs::write(&manifest, toml).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .arg("--home")
            .arg(&home)
            .args(["run", "--adopt", manifest.to_str().unwrap()])
            .env_remove("TEAMHOST_STORE")
            .output()
            .unwrap()
    };
    let files = run(&format!("[team]\nname = \"local\"\n{mate}"));
    assert!(!files.status.success(), "{}", shown(&files));
    let err = String::from_utf8_lossy(&files.stderr);
    assert!(
        err.contains("--adopt") && err.contains("--store nats://"),
        "{err}"
    );
    let tasks = run(&format!(
        "[team]\nname = \"local\"\n{mate}[[task]]\nsubject = \"x\"\n"
    ));
    assert!(!tasks.status.success(), "{}", shown(&tasks));
    assert!(
        String::from_utf8_lossy(&tasks.stderr).contains("--adopt seeds no tasks"),
        "{}",
        shown(&tasks)
    );
    assert!(!home.join("teams/local").exists(), "nothing was created");
}
