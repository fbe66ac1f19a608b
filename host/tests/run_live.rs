//! A team a live `teamhost run` runs, end to end with real processes:
//!
//! - no command destroys it: a second `run`, `run --replace`, `run
//!   --resume`, `team delete` and `team delete --force` are refused, naming
//!   the host's pid, and leave every file as it was (the permission request
//!   waiting for the lead is still waiting, and answering it lets the first
//!   run finish normally); once the host is dead (SIGKILL), a plain run
//!   points to `--resume`;
//! - stopping is prompt: with the probe waiting for the lead's permission
//!   answer, SIGINT, SIGTERM and `--timeout` end the run within moments,
//!   saying so; a second SIGINT ends a host whose stop is stuck (a Bash call
//!   held open), leaving the team as a crash would.
//!
//! The teammate is the real `probe` (`complete-tasks bash-on-task`: its task
//! turn runs a Bash call held open until a file `release` exists, which asks
//! the lead unless Bash is allowed). Waits watch the files (inotify) or read
//! the run's output as it comes; none sleeps.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::run_common::{shown, teamhost, wait_on_files, LIMIT};
use teamhost::approvals::Request;
use teamhost::home::Home;
use teamhost::store::{Store, Team};

/// A manifest with one probe `p` in `work/p`, given `prompt` and the extra
/// manifest lines `extra`, and `tasks` tasks.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    manifest: PathBuf,
    team: String,
}

impl Project {
    fn new(team: &str, prompt: &str, extra: &str, tasks: usize) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("work/p")).unwrap();
        let mut toml = format!("[team]\nname = {team:?}\n");
        toml += &format!(
            "[[teammate]]\nname = \"p\"\ncomponent = {:?}\nprompt = {prompt:?}\ncwd = \"work/p\"\nmode = \"acceptEdits\"\n{extra}\n",
            teamhost_tests::PROBE
        );
        for i in 1..=tasks {
            toml += &format!("[[task]]\nsubject = \"Step {i}\"\n");
        }
        let manifest = root.join("team.toml");
        std::fs::write(&manifest, toml).unwrap();
        Project {
            home: root.join("home"),
            manifest,
            team: team.to_string(),
            root,
            _dir: dir,
        }
    }

    fn dir(&self) -> PathBuf {
        self.root.join("work/p")
    }

    fn team(&self) -> Team {
        Store::new(Home::new(&self.home)).team(&self.team).unwrap()
    }

    /// `teamhost run` of the manifest with `args`, started, in-process,
    /// its output read as it comes.
    fn start(&self, args: &[&str]) -> Run {
        let child = teamhost()
            .arg("--home")
            .arg(&self.home)
            .arg("run")
            .arg(&self.manifest)
            .args(["--lines", "--teammate-mode", "in-process"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("teamhost runs");
        Run::follow(child)
    }

    /// A `teamhost` command (with `--home`), run to its end.
    fn cli(&self, args: &[&str]) -> Output {
        teamhost()
            .arg("--home")
            .arg(&self.home)
            .args(args)
            .output()
            .unwrap()
    }

    /// `teamhost run` of the manifest with `args`, run to its end.
    fn run(&self, args: &[&str]) -> Output {
        let manifest = self.manifest.to_string_lossy().to_string();
        let mut all = vec![
            "run",
            manifest.as_str(),
            "--lines",
            "--teammate-mode",
            "in-process",
        ];
        all.extend_from_slice(args);
        self.cli(&all)
    }

    /// The permission requests waiting for the lead, by id.
    fn pending_permissions(&self) -> Vec<String> {
        teamhost::approvals::pending(&self.team())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|r| match r {
                Request::Permission(p) => Some(p.request_id),
                Request::Plan(_) => None,
            })
            .collect()
    }

    /// Waits, watching the home and the work directory, until `check` holds.
    fn wait_until(&self, what: &str, check: impl FnMut() -> bool) {
        wait_on_files(&[&self.home, &self.root], what, check);
    }

    /// Starts the run and waits until its probe's permission request waits
    /// for the lead; answers the run and the request's id.
    fn start_asking(&self, args: &[&str]) -> (Run, String) {
        self.start_asking_anew(args, None)
    }

    /// [`Project::start_asking`], for a request other than `old`.
    fn start_asking_anew(&self, args: &[&str], old: Option<&str>) -> (Run, String) {
        let run = self.start(args);
        let mut id = None;
        self.wait_until("p's permission request", || {
            id = self
                .pending_permissions()
                .into_iter()
                .find(|r| Some(r.as_str()) != old);
            id.is_some()
        });
        (run, id.unwrap())
    }

    /// Every file of the team (config, inboxes, histories, tasks) and what
    /// this machine keeps of it.
    fn team_paths(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for dir in [
            self.home.join("teams").join(&self.team),
            self.home.join("tasks").join(&self.team),
            self.home.join("kept").join(&self.team),
        ] {
            collect(&dir, &mut out);
        }
        out.sort();
        out
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        // Locks and a write's temporary files come and go.
        if name.contains(".lock")
            || name.ends_with(".flock")
            || name.contains(".tmp")
            || name.ends_with(".swap")
        {
            continue;
        }
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// A started `teamhost run` whose stdout and stderr are read as they come.
struct Run {
    child: Child,
    output: Arc<Mutex<String>>,
    lines: mpsc::Receiver<()>,
}

impl Run {
    fn follow(mut child: Child) -> Run {
        let output = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        for stream in [
            Box::new(out) as Box<dyn std::io::Read + Send>,
            Box::new(err) as Box<dyn std::io::Read + Send>,
        ] {
            let (output, tx) = (output.clone(), tx.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let mut all = output.lock().unwrap();
                    all.push_str(&line);
                    all.push('\n');
                    let _ = tx.send(());
                }
            });
        }
        Run {
            child,
            output,
            lines,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits until the output contains `needle`.
    fn wait_for_output(&self, needle: &str) {
        let deadline = Instant::now() + LIMIT;
        while !self.output().contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.lines.recv_timeout(left).is_err() {
                panic!(
                    "the run never printed {needle:?}; it printed:\n{}",
                    self.output()
                );
            }
        }
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill takes integers only.
        assert_eq!(unsafe { libc::kill(self.pid() as libc::pid_t, sig) }, 0);
    }

    /// Waits for the run to end (at most [`LIMIT`]); its status, and how
    /// long the wait took.
    fn wait(&mut self) -> (ExitStatus, Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The readers see the pipes close right after.
                let _ = self.lines.recv_timeout(Duration::from_millis(200));
                return (status, start.elapsed());
            }
            assert!(
                start.elapsed() < LIMIT,
                "the run did not end:\n{}",
                self.output()
            );
            let _ = self.lines.recv_timeout(Duration::from_millis(5));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---- Task A: no command destroys a team a live host runs ----

#[test]
fn a_team_a_live_run_hosts_is_never_deleted_and_its_run_finishes_when_answered() {
    // Bash is not allowed: the task's call asks the lead, and waits.
    let p = Project::new("guarded", "complete-tasks bash-on-task", "", 1);
    let (mut run, request) = p.start_asking(&["--timeout", "100"]);
    let pid = run.pid();
    let before = p.team_paths();
    assert!(!before.is_empty());

    let refusals = [
        p.run(&[]),
        p.run(&["--replace"]),
        p.run(&["--resume"]),
        p.cli(&["team", "delete", &p.team]),
        p.cli(&["team", "delete", &p.team, "--force"]),
    ];
    for out in &refusals {
        assert!(!out.status.success(), "{}", shown(out));
        let text = shown(out);
        assert!(
            text.contains(&format!("still run by teamhost process {pid}")),
            "the refusal names the host: {text}"
        );
        assert!(
            text.contains("running since")
                && text.contains(&format!("kill {pid}"))
                && text.contains(&format!("`teamhost stop {}`", p.team)),
            "it says since when and how to stop it: {text}"
        );
    }
    // Not a file went: the request still waits, the task is still p's.
    let after = p.team_paths();
    let gone: Vec<_> = before.iter().filter(|f| !after.contains(f)).collect();
    assert!(gone.is_empty(), "the refused commands removed {gone:?}");
    assert_eq!(p.pending_permissions(), vec![request.clone()]);
    let config = p.team().config().unwrap();
    assert_eq!(config.member_names(), vec!["team-lead", "p"]);
    let task = &p.team().list_tasks().unwrap()[0];
    assert_eq!(task.owner.as_deref(), Some("p"));

    // The first run goes on: answered, it finishes normally.
    std::fs::write(p.dir().join("release"), "").unwrap();
    let permit = p.cli(&["permit", &request, "--team", &p.team, "--allow"]);
    assert!(permit.status.success(), "{}", shown(&permit));
    let (status, _) = run.wait();
    assert!(status.success(), "{}", run.output());
    assert_eq!(
        std::fs::read_to_string(p.dir().join("completed.log")).unwrap(),
        "1\n"
    );
    assert!(!p.team().exists(), "the run deleted its team at the end");
}

#[test]
fn after_the_host_died_a_plain_run_points_to_resume_and_replace_starts_afresh() {
    let p = Project::new("crashed", "complete-tasks bash-on-task", "", 1);
    let (mut run, request) = p.start_asking(&["--timeout", "100"]);
    let pid = run.pid();
    run.signal(libc::SIGKILL);
    run.wait();

    let plain = p.run(&[]);
    assert!(!plain.status.success());
    let text = shown(&plain);
    assert!(
        text.contains("--resume")
            && text.contains(&format!(
                "left by teamhost process {pid}, which is no longer running"
            )),
        "{text}"
    );
    assert!(!text.contains("still run by"), "{text}");
    assert!(
        p.pending_permissions().contains(&request),
        "a refused run touches nothing: {:?}",
        p.pending_permissions()
    );

    // --replace throws the dead host's team away and starts afresh.
    std::fs::write(p.dir().join("release"), "").unwrap();
    let (mut again, fresh) =
        p.start_asking_anew(&["--replace", "--timeout", "100"], Some(&request));
    again.wait_for_output("deleted the existing team crashed (--replace)");
    let permit = p.cli(&["permit", &fresh, "--team", &p.team, "--allow"]);
    assert!(permit.status.success(), "{}", shown(&permit));
    let (status, _) = again.wait();
    assert!(status.success(), "{}", again.output());
}

#[test]
fn a_home_under_a_file_is_named_as_such() {
    let p = Project::new("nowhere", "complete-tasks", "", 1);
    let file = p.root.join("somefile");
    std::fs::write(&file, "not a directory").unwrap();
    let home = file.join("home");
    let out = teamhost()
        .arg("--home")
        .arg(&home)
        .arg("run")
        .arg(&p.manifest)
        .arg("--lines")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = shown(&out);
    assert!(
        text.contains(&format!("{} is a file, not a directory", file.display())),
        "{text}"
    );
    assert!(!text.contains("already exists"), "{text}");
}

// ---- Task B: stopping is prompt ----

/// Stops a run whose probe waits for the lead with `sig`: it ends at once,
/// saying so, and the waiting call was denied (never run).
fn stopped_by(team: &str, sig: libc::c_int, said: &str) {
    let p = Project::new(team, "complete-tasks bash-on-task", "", 1);
    let (mut run, _) = p.start_asking(&["--timeout", "100"]);
    run.signal(sig);
    let (status, took) = run.wait();
    let output = run.output();
    assert!(
        took < Duration::from_secs(2),
        "the run took {took:?} to stop:\n{output}"
    );
    assert!(!status.success(), "an interrupted run fails:\n{output}");
    assert!(
        output.contains(&format!("stopping: interrupted ({said})"))
            && output.contains("stopping 1 teammate(s)"),
        "it says what it is doing:\n{output}"
    );
    assert!(
        !p.dir().join("bash.log").exists(),
        "the call waiting for the lead was never run"
    );
}

#[test]
fn sigint_stops_a_run_whose_teammate_waits_for_the_lead_at_once() {
    stopped_by("stop-int", libc::SIGINT, "Ctrl-C");
}

#[test]
fn sigterm_stops_a_run_whose_teammate_waits_for_the_lead_at_once() {
    stopped_by("stop-term", libc::SIGTERM, "SIGTERM");
}

#[test]
fn the_timeout_stops_a_run_whose_teammate_waits_for_the_lead_at_once() {
    let p = Project::new("stop-timeout", "complete-tasks bash-on-task", "", 1);
    let started = Instant::now();
    let (mut run, _) = p.start_asking(&["--timeout", "2"]);
    let asked = started.elapsed();
    let (status, _) = run.wait();
    let took = started.elapsed();
    let output = run.output();
    assert!(!status.success(), "{output}");
    assert!(
        output.contains("the work was not done after 2s"),
        "{output}"
    );
    // The timeout counts from the end of spawning, which came before the
    // request; the stop adds a moment.
    assert!(
        took < asked + Duration::from_secs(2) + Duration::from_millis(1500),
        "asked after {asked:?}, ended after {took:?}:\n{output}"
    );
}

#[test]
fn a_second_sigint_ends_a_stuck_stop_and_leaves_the_team_to_resume() {
    // Bash allowed: the task's call runs, held open until `release`; the
    // first SIGINT's shutdown waits for the turn, so the stop is stuck.
    let p = Project::new(
        "stop-forced",
        "complete-tasks bash-on-task",
        "allowed_tools = [\"Bash\"]",
        1,
    );
    let mut run = p.start(&["--timeout", "100"]);
    let holding = p.dir().join("holding-1");
    p.wait_until("p's Bash call running", || holding.exists());
    run.signal(libc::SIGINT);
    run.wait_for_output("stopping 1 teammate(s) (Ctrl-C again to force)");
    assert!(
        run.child.try_wait().unwrap().is_none(),
        "the stop waits for the Bash call:\n{}",
        run.output()
    );
    run.signal(libc::SIGINT);
    let (status, took) = run.wait();
    let output = run.output();
    assert!(took < Duration::from_secs(2), "{took:?}:\n{output}");
    assert_eq!(status.code(), Some(128 + libc::SIGINT), "{output}");
    assert!(output.contains("forced stop"), "{output}");
    // The Bash call's processes went with the host: released now, nobody
    // appends to bash.log.
    std::fs::write(p.dir().join("release"), "").unwrap();
    // The team is left as a crash leaves it: a plain run points to
    // --resume, and the resume finishes the task.
    assert!(p.team().exists());
    let plain = p.run(&[]);
    assert!(shown(&plain).contains("--resume"), "{}", shown(&plain));
    let resumed = p.run(&["--resume", "--timeout", "100"]);
    assert!(resumed.status.success(), "{}", shown(&resumed));
    assert_eq!(
        std::fs::read_to_string(p.dir().join("completed.log")).unwrap(),
        "1\n"
    );
    let bash_log = std::fs::read_to_string(p.dir().join("bash.log")).unwrap_or_default();
    assert_eq!(bash_log, "1\n", "only the resumed call ran to its end");
}
