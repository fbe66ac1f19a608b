//! Resume after a crash, end to end: the real `teamhost run` process is
//! killed with SIGKILL at a chosen moment (a task just claimed, a tool call
//! running, a permission request waiting for the lead), then `teamhost run
//! --resume` brings the team back and runs it to the end. The teammates are
//! the real `probe` component; every wait watches the files (inotify), none
//! sleeps.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use crate::run_common::{shown, teamhost, wait_on_files, LIMIT};
use serde_json::Value;
use teamhost::backends::{BackendOptions, TeammateMode};
use teamhost::embed::{Host, HostOptions, SpawnRequest};
use teamhost::home::started;
use teamhost::home::Home;
use teamhost::store::{NewTask, NewTeam, TaskStatus};

/// A project: probes `names` in `work/{name}` with `prompt`, `tasks` tasks,
/// in-process unless `mode` says otherwise.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    manifest: PathBuf,
    team: String,
}

impl Project {
    fn new(team: &str, names: &[&str], prompt: &str, extra: &str, tasks: usize) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let mut toml = format!("[team]\nname = {team:?}\n");
        for name in names {
            std::fs::create_dir_all(root.join("work").join(name)).unwrap();
            toml += &format!(
                "[[teammate]]\nname = {name:?}\ncomponent = {:?}\nprompt = {prompt:?}\ncwd = \"work/{name}\"\nmode = \"acceptEdits\"\n{extra}\n",
                teamhost_tests::PROBE
            );
        }
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

    fn dir(&self, name: &str) -> PathBuf {
        self.root.join("work").join(name)
    }

    /// Only for [`Project::wait_until`] over `home` and `root/work`... or,
    /// here, `root` itself holding the teammates' directories.
    fn watching(home: &Path, root: &Path) -> Project {
        std::fs::create_dir_all(root.join("work")).unwrap();
        Project {
            _dir: tempfile::tempdir().unwrap(),
            root: root.to_path_buf(),
            home: home.to_path_buf(),
            manifest: PathBuf::new(),
            team: String::new(),
        }
    }

    /// `teamhost run` (plus `args`), started.
    fn start(&self, args: &[&str], mode: &str) -> Child {
        teamhost()
            .arg("--home")
            .arg(&self.home)
            .arg("run")
            .arg(&self.manifest)
            .args(["--lines", "--teammate-mode", mode, "--timeout", "100"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("teamhost runs")
    }

    fn cli(&self, args: &[&str]) -> Output {
        teamhost()
            .arg("--home")
            .arg(&self.home)
            .args(args)
            .output()
            .unwrap()
    }

    fn task(&self, id: u32) -> Option<Value> {
        let path = self
            .home
            .join("tasks")
            .join(&self.team)
            .join(format!("{id}.json"));
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    fn lead_mail(&self) -> String {
        let team = self.home.join("teams").join(&self.team);
        let mut all = String::new();
        for f in ["inboxes/team-lead.json", "history/team-lead.jsonl"] {
            all += &std::fs::read_to_string(team.join(f)).unwrap_or_default();
        }
        all
    }

    /// Waits, watching the home and the work directories, until `check`
    /// holds.
    fn wait_until(&self, what: &str, check: impl FnMut() -> bool) {
        wait_on_files(&[&self.home, &self.root], what, check);
    }

    /// Task ids in every probe's `completed.log`, with repeats.
    fn completions(&self, names: &[&str]) -> Vec<String> {
        let mut ids: Vec<String> = names
            .iter()
            .flat_map(|n| {
                std::fs::read_to_string(self.dir(n).join("completed.log"))
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        ids.sort_by_key(|i| i.parse::<u32>().unwrap_or(0));
        ids
    }
}

fn in_progress_by(task: Option<Value>, who: &str) -> bool {
    task.is_some_and(|t| t["status"] == "in_progress" && t["owner"] == who)
}

fn kill(mut child: Child) {
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

/// Kills the host right after `p` claimed task 1 (its turn holds it open
/// in a tool call), resumes, and checks the team finishes with each task
/// completed exactly once, task 1 by `p` in its second life.
fn kill_and_resume(p: &Project, moment: &str, at: impl FnMut() -> bool, lives: usize) {
    let run = p.start(&[], "in-process");
    p.wait_until(moment, at);
    kill(run);
    // The killed host left its teammate's work in flight, and the lead
    // sees the teammate dead, not idle.
    assert!(in_progress_by(p.task(1), "p"), "{:?}", p.task(1));
    let status = p.cli(&["status", "--team", &p.team, "--json"]);
    let snap: Value =
        serde_json::from_slice(&status.stdout).unwrap_or_else(|_| panic!("{}", shown(&status)));
    assert_eq!(snap["teammates"][0]["name"], "p");
    assert_eq!(snap["teammates"][0]["state"], "dead", "{snap}");
    std::fs::write(p.dir("p").join("release"), "").unwrap();
    let out = finish(p.start(&["--resume", "--keep"], "in-process"));
    assert!(out.status.success(), "{}", shown(&out));
    let log =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("resumed team")
            && log.contains("respawned p")
            && log.contains("task #1 handed back to p"),
        "{}",
        shown(&out)
    );
    assert_eq!(
        p.completions(&["p"]),
        vec!["1", "2", "3"],
        "each task completed once"
    );
    for id in 1..=3 {
        assert_eq!(p.task(id).unwrap()["status"], "completed");
    }
    // Its second life kept its directives (state.save/load) and was handed
    // its task back: task 1's turn ran in both lives.
    let turns = std::fs::read_to_string(p.dir("p").join("turns.log")).unwrap();
    let task1 = turns
        .lines()
        .filter(|l| l.starts_with("task-claimed") && l.ends_with("\t1"))
        .count();
    // Killed before its turn began, task 1's turn ran only in the second life.
    assert!(task1 == lives || task1 == 2, "{turns}");
    assert!(
        p.lead_mail().contains("handed back to p"),
        "the lead is told"
    );
}

#[test]
fn a_host_killed_right_after_a_claim_resumes_and_finishes_every_task_once() {
    let p = Project::new(
        "resume-claim",
        &["p"],
        "complete-tasks bash-on-task",
        "allowed_tools = [\"Bash\"]",
        3,
    );
    kill_and_resume(
        &p,
        "task 1 claimed by p",
        || in_progress_by(p.task(1), "p"),
        1,
    );
}

#[test]
fn a_host_killed_during_a_tool_call_resumes_and_finishes_every_task_once() {
    let p = Project::new(
        "resume-tool",
        &["p"],
        "complete-tasks bash-on-task",
        "allowed_tools = [\"Bash\"]",
        3,
    );
    let holding = p.dir("p").join("holding-1");
    kill_and_resume(&p, "p's Bash call running", || holding.exists(), 2);
}

#[test]
fn a_permission_request_waiting_when_the_host_died_is_answered_after_the_resume() {
    // Bash is not allowed: each task's call asks the lead.
    let p = Project::new("resume-ask", &["p"], "complete-tasks bash-on-task", "", 1);
    let run = p.start(&[], "in-process");
    p.wait_until("p's permission request", || {
        p.lead_mail().contains("permission_request")
    });
    kill(run);
    let request_id = {
        // In the lead's inbox, or its history once the run showed it.
        let team = p.home.join("teams").join(&p.team);
        let mut mail: Vec<Value> = std::fs::read(team.join("inboxes/team-lead.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let history =
            std::fs::read_to_string(team.join("history/team-lead.jsonl")).unwrap_or_default();
        mail.extend(history.lines().filter_map(|l| serde_json::from_str(l).ok()));
        mail.iter()
            .filter_map(|m| serde_json::from_str::<Value>(m["text"].as_str()?).ok())
            .find(|t| t["type"] == "permission_request")
            .and_then(|t| t["request_id"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("a permission request in {mail:?}"))
    };
    std::fs::write(p.dir("p").join("release"), "").unwrap();
    let resumed = p.start(&["--resume", "--keep"], "in-process");
    // The request from before the crash is still the one to answer: the
    // resumed teammate asks nothing new.
    p.wait_until("the resumed p waiting on its request", || {
        turns_of(&p.dir("p"), "task-claimed") >= 2
    });
    let permit = p.cli(&["permit", &request_id, "--team", &p.team, "--allow"]);
    assert!(permit.status.success(), "{}", shown(&permit));
    let out = finish(resumed);
    assert!(out.status.success(), "{}", shown(&out));
    assert_eq!(p.completions(&["p"]), vec!["1"]);
    assert_eq!(
        std::fs::read_to_string(p.dir("p").join("bash.log")).unwrap(),
        "1\n",
        "the call ran once, after the lead's answer"
    );
    let mail = p.lead_mail();
    let requests: std::collections::BTreeSet<&str> = mail
        .match_indices("request_id")
        .filter_map(|(at, _)| {
            mail[at..]
                .split(['"', '\\'])
                .find(|w| w.starts_with("perm"))
        })
        .collect();
    assert_eq!(requests.len(), 1, "one request, answered once: {mail}");
}

fn turns_of(dir: &Path, kind: &str) -> usize {
    std::fs::read_to_string(dir.join("turns.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(kind))
        .count()
}

/// A host whose teammates run as `teamhost teammate` processes, in a tokio
/// runtime of its own: dropping the runtime ends the host (its monitors)
/// the way a crash does, while its children run on.
fn process_host(home: &Path) -> (tokio::runtime::Runtime, Host) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = rt.block_on(async {
        Host::with_options(
            Home::new(home),
            HostOptions {
                backends: BackendOptions {
                    mode: TeammateMode::Process,
                    interactive: true,
                    teamhost_exe: Some(env!("CARGO_BIN_EXE_teamhost").into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .unwrap()
    });
    (rt, host)
}

fn probe(name: &str, dir: &Path) -> SpawnRequest {
    let mut req = SpawnRequest::new(
        name,
        teamhost_tests::PROBE,
        "complete-tasks bash-on-task",
        dir,
    );
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req.settings.rules = teamhost::sandbox::ToolRules::new(["Bash"], [""; 0]).unwrap();
    req
}

#[test]
fn a_teammate_process_outliving_its_host_is_adopted_and_one_that_died_is_respawned() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (dir_a, dir_b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&dir_a).unwrap();
    std::fs::create_dir_all(&dir_b).unwrap();
    let (rt, host) = process_host(&home);
    let team = host.team("orphans").unwrap();
    host.create_team("orphans", NewTeam::default()).unwrap();
    for i in 1..=2 {
        team.create_task(NewTask {
            subject: format!("Step {i}"),
            ..Default::default()
        })
        .unwrap();
    }
    rt.block_on(async {
        host.spawn("orphans", probe("a", &dir_a)).await.unwrap();
        host.spawn("orphans", probe("b", &dir_b)).await.unwrap();
    });
    let watch = Project::watching(&home, tmp.path());
    watch.wait_until("both probes holding a task", || {
        holding(&dir_a).is_some() && holding(&dir_b).is_some()
    });
    // The host dies; its children run on. Then b dies too, unwatched.
    drop(host);
    drop(rt);
    let records = started::list(&Home::new(&home), "orphans").unwrap();
    let pid_of = |n: &str| records.iter().find(|r| r.name == n).unwrap().pid;
    let (pid_a, pid_b) = (pid_of("a"), pid_of("b"));
    let b_task = holding(&dir_b).unwrap();
    kill_and_wait_gone(pid_b, "b's process");
    // While no host runs, the lead's command writes to b: signed with the
    // key b's earlier life was launched with, which the home kept. b comes
    // back with that key, so the entry counts.
    let ring = std::sync::Arc::new(teamhost::home::lead_keys::HomeKeyring::new(Home::new(
        &home,
    )));
    let lead_command = teamhost::store::Store::new(Home::new(&home)).with_lead_guard(
        std::sync::Arc::new(teamhost::store::LeadGuard::from_keyring(ring)),
    );
    let note = lead_command
        .team("orphans")
        .unwrap()
        .send(
            "b",
            teamhost::store::OutgoingMessage::new("team-lead", "while you were away"),
        )
        .unwrap();
    assert!(note.extra.contains_key("lead_sig"), "{note:?}");

    let (rt, host) = process_host(&home);
    let report = rt.block_on(host.resume("orphans")).unwrap();
    assert_eq!(report.adopted, vec!["a".to_string()], "{report:?}");
    assert_eq!(report.respawned, vec!["b".to_string()], "{report:?}");
    assert!(
        report
            .handed_back
            .contains(&(b_task.clone(), "b".to_string())),
        "{report:?}"
    );
    // b runs in its own process again (this host's backend), a new one.
    let again = started::list(&Home::new(&home), "orphans").unwrap();
    let b_again = again
        .iter()
        .find(|r| r.name == "b")
        .expect("b's new process");
    assert_ne!(b_again.pid, pid_b);
    assert_eq!(b_again.host_pid, std::process::id());
    std::fs::write(dir_a.join("release"), "").unwrap();
    std::fs::write(dir_b.join("release"), "").unwrap();
    let completions = || {
        let mut done: Vec<String> = [&dir_a, &dir_b]
            .iter()
            .flat_map(|d| {
                std::fs::read_to_string(d.join("completed.log"))
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        done.sort();
        done
    };
    // The probe notes a completion after the task's update: wait for both.
    watch.wait_until("both tasks completed", || completions().len() >= 2);
    assert_eq!(completions(), vec!["1", "2"], "each task completed once");
    let note_turn = |d: &Path| {
        teamhost_tests::fixture::turns(d)
            .into_iter()
            .find(|t| t.2.contains("while you were away"))
    };
    watch.wait_until("b's turn on the lead's note", || {
        note_turn(&dir_b).is_some()
    });
    assert_eq!(
        note_turn(&dir_b).unwrap(),
        teamhost_tests::fixture::line("message", "team-lead", "while you were away"),
        "counted as the lead's, not marked unverified"
    );
    assert!(team
        .list_tasks()
        .unwrap()
        .iter()
        .all(|t| t.status == TaskStatus::Completed));
    // The adopted process is this host's now: it stops it.
    let shutdown = rt
        .block_on(host.shutdown_team("orphans", "done", Duration::from_secs(30)))
        .unwrap();
    assert!(shutdown.stopped.contains(&"a".to_string()), "{shutdown:?}");
    assert!(!alive(pid_a), "the adopted process ended");
}

/// A process teammate whose host died, brought back in-process (a resume
/// without `--teammate-mode process`): the launch key its process had is
/// forgotten, so the lead's commands sign with the team's key, which the
/// teammate now checks, and are obeyed.
#[test]
fn a_process_teammate_resumed_in_process_obeys_the_lead_s_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = tmp.path().join("b");
    std::fs::create_dir_all(&dir).unwrap();
    let (rt, host) = process_host(&home);
    host.create_team("moved", NewTeam::default()).unwrap();
    rt.block_on(async {
        let mut req = probe("b", &dir);
        req.prompt = "listen".into();
        host.spawn("moved", req).await.unwrap();
    });
    let key_file = Home::new(&home).root().join("lead-keys/moved/b.json");
    let watch = Project::watching(&home, tmp.path());
    watch.wait_until("b's first turn", || {
        teamhost_tests::fixture::turns(&dir).len() == 1
    });
    assert!(key_file.exists(), "b's launch key is kept");
    drop(host);
    drop(rt);
    let pid = started::list(&Home::new(&home), "moved").unwrap()[0].pid;
    kill_and_wait_gone(pid, "b's process");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = rt.block_on(async {
        let opts = HostOptions {
            backends: BackendOptions {
                mode: TeammateMode::InProcess,
                ..Default::default()
            },
            ..Default::default()
        };
        Host::with_options(Home::new(&home), opts).unwrap()
    });
    let report = rt.block_on(host.resume("moved")).unwrap();
    assert_eq!(report.respawned, vec!["b".to_string()], "{report:?}");
    assert!(!key_file.exists(), "the process's launch key is forgotten");
    let out = teamhost()
        .arg("--home")
        .arg(&home)
        .args(["send", "--team", "moved", "b", "reply"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    let reply_turn = || {
        teamhost_tests::fixture::turns(&dir)
            .into_iter()
            .find(|t| t.2.ends_with("reply"))
    };
    watch.wait_until("b's turn on the lead's command", || reply_turn().is_some());
    assert_eq!(
        reply_turn().unwrap(),
        teamhost_tests::fixture::line("message", "team-lead", "reply"),
        "the lead's command, counted; every turn: {:?}",
        teamhost_tests::fixture::turns(&dir)
    );
    rt.block_on(host.shutdown_team("moved", "done", Duration::from_secs(30)))
        .unwrap();
}

fn holding(dir: &Path) -> Option<String> {
    std::fs::read_dir(dir).ok()?.find_map(|e| {
        e.ok()?
            .file_name()
            .to_str()?
            .strip_prefix("holding-")
            .map(str::to_string)
    })
}

/// Kills `pid` (a teammate process this test's host started) and waits
/// until it has ended. A process's end makes no file event, so the wait is
/// on its pidfd, opened before the kill (a pid reused later is not it).
fn kill_and_wait_gone(pid: u32, what: &str) {
    // SAFETY: pidfd_open takes a pid and flags; the descriptor is ours.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) } as i32;
    assert!(pidfd >= 0, "{what} runs");
    // SAFETY: kill(2) of a teammate process this test's host started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let mut ready = libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd; the descriptor is closed right after.
    let n = unsafe { libc::poll(&mut ready, 1, LIMIT.as_millis() as i32) };
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(pidfd) };
    assert_eq!(n, 1, "{what} ended");
    assert!(!alive(pid), "{what} is gone");
}

fn alive(pid: u32) -> bool {
    // A zombie (a child nobody reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn resume_refuses_a_team_whose_host_still_runs_and_one_that_does_not_exist() {
    let p = Project::new(
        "resume-alive",
        &["p"],
        "complete-tasks bash-on-task",
        "allowed_tools = [\"Bash\"]",
        1,
    );
    let nothing = finish(p.start(&["--resume"], "in-process"));
    assert!(!nothing.status.success());
    assert!(
        shown(&nothing).contains("nothing to resume"),
        "{}",
        shown(&nothing)
    );
    let run = p.start(&[], "in-process");
    p.wait_until("task 1 claimed by p", || in_progress_by(p.task(1), "p"));
    let second = finish(p.start(&["--resume"], "in-process"));
    let pid = run.id();
    assert!(!second.status.success(), "{}", shown(&second));
    assert!(
        shown(&second).contains(&format!("still run by teamhost process {pid}")),
        "{}",
        shown(&second)
    );
    // The running team is untouched: the same teammate holds the task.
    assert!(in_progress_by(p.task(1), "p"));
    std::fs::write(p.dir("p").join("release"), "").unwrap();
    let out = finish(run);
    assert!(out.status.success(), "{}", shown(&out));
    assert_eq!(p.completions(&["p"]), vec!["1"]);
}

#[test]
fn the_message_a_turn_was_handling_when_the_host_died_is_delivered_again() {
    // q holds the one task in a Bash call until `release`: with the task
    // done early the run would end, and shut p down, before p took "hold"
    // (a shutdown request goes before unread messages). p takes messages
    // only and holds its turn on "hold" in a Bash call.
    let p = Project::new(
        "resume-message",
        &["q"],
        "complete-tasks bash-on-task",
        "allowed_tools = [\"Bash\"]",
        1,
    );
    std::fs::create_dir_all(p.dir("p")).unwrap();
    let mut toml = std::fs::read_to_string(&p.manifest).unwrap();
    toml += &format!(
        "[[teammate]]\nname = \"p\"\ncomponent = {:?}\nprompt = \"complete-tasks\"\ncwd = \"work/p\"\nmode = \"acceptEdits\"\nallowed_tools = [\"Bash\"]\nauto_claim = false\n",
        teamhost_tests::PROBE
    );
    std::fs::write(&p.manifest, toml).unwrap();
    let run = p.start(&[], "in-process");
    p.wait_until("p's first turn", || turns_of(&p.dir("p"), "initial") == 1);
    let sent = p.cli(&["send", "--team", &p.team, "p", "hold"]);
    assert!(sent.status.success(), "{}", shown(&sent));
    let holding = p.dir("p").join("holding-msg");
    // The take runs beside the turn: kill only once it has landed (the
    // message gone from p's inbox), so the host dies with the message
    // consumed and only the turn journal holding it. Killed before, the
    // message would still be unread and simply taken again.
    let inbox = p.home.join("teams").join(&p.team).join("inboxes/p.json");
    p.wait_until("p's message turn holding, its message taken", || {
        holding.exists()
            && !std::fs::read_to_string(&inbox)
                .unwrap_or_default()
                .contains("\"hold\"")
    });
    kill(run);
    std::fs::write(p.dir("p").join("release"), "").unwrap();
    std::fs::write(p.dir("q").join("release"), "").unwrap();
    let out = finish(p.start(&["--resume"], "in-process"));
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        shown(&out).contains("the message p was handling delivered again"),
        "{}",
        shown(&out)
    );
    // Both lives had the message turn: the second finished it.
    let holds = std::fs::read_to_string(p.dir("p").join("turns.log"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("message\tteam-lead\thold"))
        .count();
    assert_eq!(holds, 2);
    assert!(std::fs::read_to_string(p.dir("p").join("bash.log"))
        .unwrap()
        .contains("msg"));
    assert_eq!(p.completions(&["q"]), vec!["1"]);
}

/// How many `idle_notification`s in the lead's mail (inbox and history)
/// name each completed task, by task id.
fn completion_reports(p: &Project) -> std::collections::BTreeMap<String, usize> {
    let team = p.home.join("teams").join(&p.team);
    let mut mail: Vec<Value> = std::fs::read(team.join("inboxes/team-lead.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let history = std::fs::read_to_string(team.join("history/team-lead.jsonl")).unwrap_or_default();
    mail.extend(history.lines().filter_map(|l| serde_json::from_str(l).ok()));
    let mut reports = std::collections::BTreeMap::new();
    for text in mail.iter().filter_map(|m| m["text"].as_str()) {
        let Ok(body) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        if body["type"] == "idle_notification" {
            if let Some(id) = body["completedTaskId"].as_str() {
                *reports.entry(id.to_string()).or_insert(0) += 1;
            }
        }
    }
    reports
}

#[test]
fn a_completion_cut_from_its_report_by_a_crash_is_reported_once_after_the_resume() {
    // p completes task 1, then holds its turn before it ends: the host dies
    // with the task completed and the lead not told.
    let p = Project::new(
        "resume-report",
        &["p"],
        "complete-tasks hold-after-complete",
        "allowed_tools = [\"Bash\"]",
        2,
    );
    let run = p.start(&[], "in-process");
    let holding = p.dir("p").join("holding-done-1");
    p.wait_until("p holding after completing task 1", || holding.exists());
    kill(run);
    assert_eq!(p.task(1).unwrap()["status"], "completed");
    assert_eq!(completion_reports(&p).get("1"), None, "not told yet");
    std::fs::write(p.dir("p").join("release"), "").unwrap();
    let out = finish(p.start(&["--resume", "--keep"], "in-process"));
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        shown(&out).contains("task #1 was completed by p as its host died: reported now"),
        "{}",
        shown(&out)
    );
    let reports = completion_reports(&p);
    assert_eq!(reports.get("1"), Some(&1), "{reports:?}");
    assert_eq!(reports.get("2"), Some(&1), "{reports:?}");
    assert_eq!(p.completions(&["p"]), vec!["1", "2"]);
}

#[test]
fn after_a_crash_and_a_resume_the_lead_learns_of_every_completed_task_exactly_once() {
    // Four workers and forty tasks, the host killed wherever it is after ten
    // completions: between a claim and its turn, inside a turn, between a
    // completion and its report, or after the report.
    let names = ["w1", "w2", "w3", "w4"];
    let p = Project::new("resume-reports", &names, "complete-tasks", "", 40);
    let run = p.start(&[], "in-process");
    p.wait_until("ten completions", || p.completions(&names).len() >= 10);
    kill(run);
    let out = finish(p.start(&["--resume", "--keep"], "in-process"));
    assert!(out.status.success(), "{}", shown(&out));
    for id in 1..=40u32 {
        assert_eq!(p.task(id).unwrap()["status"], "completed", "task {id}");
    }
    let reports = completion_reports(&p);
    let wrong: Vec<_> = (1..=40u32)
        .map(|id| id.to_string())
        .filter(|id| reports.get(id) != Some(&1))
        .map(|id| (id.clone(), reports.get(&id).copied().unwrap_or(0)))
        .collect();
    assert!(
        wrong.is_empty(),
        "tasks not reported exactly once: {wrong:?}\n{}",
        shown(&out)
    );
    // The guest's own log: no task done twice (one cut between its update
    // and its log line may be missing).
    let done = p.completions(&names);
    let mut unique = done.clone();
    unique.dedup();
    assert_eq!(done, unique, "a task completed twice");
}
