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
        Setup::new_with(url, true)
    }

    /// The manifests; the team created and seeded through the store when
    /// `make_team` (the test is the lead), else left to host A's run.
    fn new_with(url: String, make_team: bool) -> Setup {
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
        if make_team {
            team.create(NewTeam::default()).unwrap();
            for i in 1..=TASKS {
                team.create_task(NewTask {
                    subject: format!("Step {i}"),
                    ..Default::default()
                })
                .unwrap();
            }
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

    /// A team led by host A's own `teamhost run` (issue 32, resume): the
    /// same as [`Setup::new`], but the team is not made here: `a.toml`
    /// seeds the [`TASKS`] tasks and its run creates the team.
    fn led(url: String) -> Setup {
        let s = Setup::new_with(url, false);
        let tasks: String = (1..=TASKS)
            .map(|i| format!("[[task]]\nsubject = \"Step {i}\"\n"))
            .collect();
        let a = std::fs::read_to_string(s.root.join("a.toml")).unwrap() + &tasks;
        std::fs::write(s.root.join("a.toml"), a).unwrap();
        s
    }

    fn start(&self, which: &str, args: &[&str]) -> Running {
        self.start_leased(which, args, "2")
    }

    /// [`Setup::start`] with a lease of `lease` seconds.
    fn start_leased(&self, which: &str, args: &[&str], lease: &str) -> Running {
        let manifest = self.root.join(format!("{which}.toml"));
        let mut all = vec!["--json", "run"];
        all.extend_from_slice(args);
        all.extend(["--lease", lease, "--timeout", "120"]);
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

    /// B, whose adopted teammates a resumed lead's run asked to shut down,
    /// ends cleanly: the teammates it adopted, sorted.
    fn shut_down_and_finish_asked(&self, b: Running) -> Vec<String> {
        let (status, summary, shown) = b.finish();
        assert!(status.success(), "{shown}");
        assert_eq!(summary["outcome"], "shut-down", "{shown}");
        let mut adopted: Vec<String> = summary["adopted"]
            .as_array()
            .unwrap_or_else(|| panic!("no adopted list: {shown}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        adopted.sort();
        adopted
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
pub(crate) fn completions(dirs: &[PathBuf]) -> BTreeMap<String, usize> {
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

/// Every task completed (read in the store) and noted in `completed.log`:
/// the counts of the log by task id. For a team led by a `teamhost run`,
/// whose reporter reads the lead's mail.
fn wait_tasks_done(s: &Setup) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    s.wait_until("every task completed", || {
        counts = completions(&[s.dir("p1"), s.dir("p2")]);
        let tasks = s.team.list_tasks().unwrap();
        tasks.iter().all(|t| t.status == TaskStatus::Completed)
            && counts.values().sum::<usize>() >= TASKS
    });
    counts
}

/// The hosts the store's run records name, by teammate.
fn run_hosts(s: &Setup) -> BTreeMap<String, String> {
    let there = store(&s.url);
    let f = there.backend().failover().expect("NATS keeps run records");
    f.read_runs(TEAM)
        .unwrap()
        .into_iter()
        .map(|(r, _)| (r.name, r.host))
        .collect()
}

/// Host A (the lead's own `teamhost run`) is killed; standby B adopts p1
/// and p2 after A's lease; then `run --resume` with A's manifest and home
/// respawns neither (their run records name B): it says they are on B,
/// waits for their work, and asks them to shut down at the end. Every task
/// is completed once.
#[test]
fn a_resume_leaves_the_teammates_an_adopting_host_took_over_to_it() {
    let Some(server) = NatsServer::start_or_skip("failover") else {
        return;
    };
    let s = Setup::led(server.url("fr"));
    let mut b = s.start("b", &["--adopt"]);
    let mut a = s.start("a", &[]);
    b.wait_for_line("standing by for team fo");
    s.wait_both_holding();
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    b.wait_for_line("adopted p1, p2 from host");
    let by = s.adopter();
    let on_b: BTreeMap<String, String> = [("p1", &by), ("p2", &by)]
        .into_iter()
        .map(|(n, h)| (n.to_string(), h.clone()))
        .collect();
    s.wait_until("the run records name B", || run_hosts(&s) == on_b);

    let resumed = s.start("a", &["--resume"]);
    let done = wait_tasks_done(&s);
    each_once(&done, "completed.log");
    // The dead host's held calls end now: they complete nothing more.
    release(&s.dir("p1"));
    release(&s.dir("p2"));
    let (status, summary, shown) = resumed.finish();
    assert!(status.success(), "{shown}");
    assert_eq!(summary["outcome"], "completed", "{shown}");
    for name in ["p1", "p2"] {
        assert!(
            shown.contains(&format!("left {name} to host {by}, which took it over")),
            "the resume names where {name} went: {shown}"
        );
    }
    assert!(!shown.contains("respawned p"), "nothing respawned: {shown}");
    // The resumed run asked B's copies to shut down; B ends cleanly.
    let adopted = s.shut_down_and_finish_asked(b);
    assert_eq!(adopted, ["p1", "p2"]);
    each_once(
        &completions(&[s.dir("p1"), s.dir("p2")]),
        "completed.log at the end",
    );
}

/// Host A (lease 20 s) is killed and resumed at once, before its lease
/// expires: the resume takes A's lease over itself, rewrites p1's and p2's
/// run records naming the resumed host and respawns them; standby B never
/// adopts anything. Every task is completed once.
#[test]
fn a_resume_before_the_lease_expires_takes_the_dead_hosts_lease_and_no_standby_adopts() {
    let Some(server) = NatsServer::start_or_skip("failover") else {
        return;
    };
    let s = Setup::led(server.url("fq"));
    let mut b = s.start("b", &["--adopt"]);
    let mut a = s.start_leased("a", &[], "20");
    b.wait_for_line("standing by for team fo");
    s.wait_both_holding();
    let a_pid = a.child.id();
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    // The resumed copies hold in their Bash calls too: let them through.
    release(&s.dir("p1"));
    release(&s.dir("p2"));

    let mut resumed = s.start("a", &["--resume"]);
    resumed.wait_for_line("took over the lease of host");
    let me = format!("-{}-", resumed.child.id());
    let there = store(&s.url);
    let f = there.backend().failover().unwrap();
    let leases = f.read_leases(TEAM).unwrap();
    let dead = leases
        .iter()
        .find(|(l, _)| l.pid == a_pid)
        .unwrap_or_else(|| panic!("no lease of A: {leases:?}"));
    assert!(
        matches!(&dead.0.state, LeaseState::TakenOver { by, .. } if by.contains(&me)),
        "A's lease taken over by the resumed host ({me}): {leases:?}"
    );
    for (name, (run, _)) in f
        .read_runs(TEAM)
        .unwrap()
        .into_iter()
        .map(|(r, rev)| (r.name.clone(), (r, rev)))
    {
        assert!(run.host.contains(&me), "{name}'s record: {run:?}");
        assert_eq!(run.generation, 2, "{run:?}");
        assert!(run.adopted_from.is_some(), "{run:?}");
    }
    let done = wait_tasks_done(&s);
    each_once(&done, "completed.log");
    let (status, summary, shown) = resumed.finish();
    assert!(status.success(), "{shown}");
    assert_eq!(summary["outcome"], "completed", "{shown}");
    assert!(
        shown.contains("respawned p1, p2") || shown.contains("respawned p2, p1"),
        "both respawned: {shown}"
    );
    for needle in ["handed back to p1", "handed back to p2"] {
        assert!(shown.contains(needle), "{needle:?}: {shown}");
    }
    // The resumed run deleted the team as it ended: B stops standing by,
    // having adopted nothing.
    let (_, b_summary, b_shown) = b.finish();
    assert!(
        !b_shown.contains("adopted p"),
        "B adopted something: {b_shown}"
    );
    let adopted = b_summary["adopted"].as_array().cloned().unwrap_or_default();
    assert!(adopted.is_empty(), "{b_shown}");
    each_once(
        &completions(&[s.dir("p1"), s.dir("p2")]),
        "completed.log at the end",
    );
}
