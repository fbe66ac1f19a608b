//! The tmux backend against a real tmux server that each test starts on a
//! private socket (`tmux -S <tmp>/sock`), with a pane of "the user's" in the
//! same server that must come through untouched. tmux state is read with
//! `list-panes` / `capture-pane`; where tmux offers no event (a pane's screen
//! filling in) the test polls with a bounded number of retries.

use crate::backend_common;
use crate::tmux_server;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use backend_common::*;
use teamhost::backends::TeammateMode;
use teamhost::embed::TeammateState;
use teamhost::home::started;
use teamhost::home::Home;
use teamhost::protocol::{Parsed, ProtocolMessage};
use tmux_server::TmuxServer as Tmux;

impl Tmux {
    fn start(dir: &Path) -> Tmux {
        let sock = dir.join("sock");
        let t = Tmux { sock };
        // The user's own pane: it prints a marker and waits.
        t.ok(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "user",
            "-x",
            "200",
            "-y",
            "50",
            "sh -c 'echo USER-PANE-MARKER; exec cat'",
        ]);
        t
    }

    /// `pane_id pane_pid session` of every pane.
    fn panes(&self) -> Vec<(String, u32, String)> {
        let out = self.cmd(&[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{pane_pid} #{session_name}",
        ]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut f = l.split(' ');
                Some((
                    f.next()?.to_string(),
                    f.next()?.parse().ok()?,
                    f.next()?.to_string(),
                ))
            })
            .collect()
    }

    fn capture(&self, pane: &str) -> String {
        self.ok(&["capture-pane", "-p", "-t", pane])
    }

    /// Polls `capture-pane` (tmux has no event for "the screen changed"):
    /// at most 200 tries, 50 ms apart.
    async fn screen_shows(&self, pane: &str, needles: &[&str]) -> String {
        for _ in 0..200 {
            let screen = self.capture(pane);
            if needles.iter().all(|n| screen.contains(n)) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "pane {pane} never showed {needles:?}; it shows:\n{}",
            self.capture(pane)
        );
    }
}

/// teamhost processes still running for `home`.
fn teamhost_processes(home: &Path) -> Vec<u32> {
    let needle = home.to_string_lossy().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    let c = String::from_utf8_lossy(&c).replace('\0', " ");
                    c.contains("teammate") && c.contains(&needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

fn user_pane(t: &Tmux) -> (String, u32) {
    let (id, pid, _) = t
        .panes()
        .into_iter()
        .find(|p| p.2 == "user")
        .expect("the user's pane");
    (id, pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmux_teammates_split_the_leads_window_talk_shut_down_and_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(tmp.path());
    let (user_id, user_pid) = user_pane(&t);
    // The lead runs in a pane of its own session; teammates split its window.
    let lead_pane = t.ok(&[
        "new-session",
        "-d",
        "-s",
        "lead",
        "-x",
        "200",
        "-y",
        "50",
        "-P",
        "-F",
        "#{pane_id}",
        "exec cat",
    ]);
    let (sock, lp) = (t.sock.clone(), lead_pane.clone());
    let f = fixture("panes", TeammateMode::Tmux, move |b| {
        b.tmux.socket = Some(sock);
        b.tmux.split_from = Some(lp);
    });
    let (dir_a, dir_b) = (f.dir("a"), f.dir("b"));
    // b joins first, so it is a member when a greets it.
    f.host
        .spawn("panes", probe("b", "listen", &dir_b, false))
        .await
        .unwrap();
    f.host
        .spawn("panes", probe("a", "dm:b", &dir_a, false))
        .await
        .unwrap();

    // Two new panes in the lead's session, recorded as tmuxPaneId.
    let config = f.team.config().unwrap();
    let pane_of = |n: &str| config.member(n).unwrap().tmux_pane_id.clone().unwrap();
    let (pane_a, pane_b) = (pane_of("a"), pane_of("b"));
    for n in ["a", "b"] {
        assert_eq!(
            config.member(n).unwrap().backend_type.as_deref(),
            Some("tmux")
        );
    }
    let panes = t.panes();
    for p in [&pane_a, &pane_b] {
        assert!(p.starts_with('%'), "{p}");
        let found = panes.iter().find(|x| &x.0 == p).expect("pane exists");
        assert_eq!(found.2, "lead", "{panes:?}");
    }
    let pids: Vec<u32> = started::list(&Home::new(&f.home), f.team.name())
        .unwrap()
        .iter()
        .map(|r| r.pid)
        .collect();
    assert_eq!(pids.len(), 2);

    // Messages round-trip: a greets b at its first turn, the lead gets acks.
    f.idle_from("a", 1).await;
    f.idle_from("b", 2).await; // its initial turn, then a's greeting
    assert!(turns(&dir_b)
        .iter()
        .any(|(k, from, text)| k == "message" && from == "a" && text == "hello b"));
    for n in ["a", "b"] {
        f.host.send_as_lead("panes", n, "reply", None).unwrap();
    }
    f.until("acks from a and b", || {
        let inbox = f.lead_inbox();
        ["a", "b"]
            .iter()
            .all(|n| inbox.iter().any(|m| m.from == *n && m.text == "ack"))
    })
    .await;

    // Each pane shows its teammate's live log.
    t.screen_shows(&pane_a, &["joined", "turn", "initial", "message"])
        .await;
    t.screen_shows(&pane_b, &["joined", "turn", "message"])
        .await;

    // Shutdown is approved with the pane ids; the panes and processes go.
    let report = f.host.shutdown_team("panes", "done", LIMIT).await.unwrap();
    assert_eq!(report.stopped, ["a", "b"]);
    let approvals: Vec<(String, Option<String>, Option<String>)> = f
        .lead_inbox()
        .iter()
        .filter_map(|m| match ProtocolMessage::parse(&m.text) {
            Parsed::Protocol(ProtocolMessage::ShutdownApproved(a)) => {
                Some((a.from, a.pane_id, a.backend_type))
            }
            _ => None,
        })
        .collect();
    assert_eq!(approvals.len(), 2, "{approvals:?}");
    for (from, pane, backend) in approvals {
        let want = if from == "a" { &pane_a } else { &pane_b };
        assert_eq!(pane.as_ref(), Some(want));
        assert_eq!(backend.as_deref(), Some("tmux"));
    }
    for info in f.host.teammates("panes") {
        assert_eq!(
            info.state,
            TeammateState::Completed,
            "{info:?}; its log:\n{}",
            f.log(&info.name)
        );
    }
    let left: Vec<String> = t.panes().into_iter().map(|p| p.0).collect();
    assert_eq!(
        left.len(),
        2,
        "only the user's and the lead's panes: {left:?}"
    );
    assert!(
        left.contains(&user_id) && left.contains(&lead_pane),
        "{left:?}"
    );
    for pid in pids {
        assert!(!exists(pid), "teammate process {pid} still there");
    }
    assert!(teamhost_processes(&f.home).is_empty());

    // The user's pane is untouched.
    assert_eq!(user_pane(&t), (user_id.clone(), user_pid));
    assert!(t.capture(&user_id).contains("USER-PANE-MARKER"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_tmux_teammates_get_a_detached_session_and_team_delete_closes_only_recorded_panes()
{
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(tmp.path());
    let (user_id, user_pid) = user_pane(&t);
    let sock = t.sock.clone();
    let f = fixture("winds", TeammateMode::Tmux, move |b| {
        b.tmux.socket = Some(sock);
        b.tmux.split_from = None;
    });
    let (dir_a, dir_b) = (f.dir("a"), f.dir("b"));
    f.host
        .spawn("winds", probe("a", "listen", &dir_a, false))
        .await
        .unwrap();
    f.host
        .spawn("winds", probe("b", "listen", &dir_b, false))
        .await
        .unwrap();
    let config = f.team.config().unwrap();
    let pane_of = |n: &str| config.member(n).unwrap().tmux_pane_id.clone().unwrap();
    let (pane_a, pane_b) = (pane_of("a"), pane_of("b"));
    let windows = t.ok(&[
        "list-windows",
        "-t",
        "=teamhost-winds",
        "-F",
        "#{window_name}",
    ]);
    assert_eq!(windows.lines().collect::<Vec<_>>(), ["a", "b"]);
    f.idle_from("a", 1).await;
    f.idle_from("b", 1).await;

    // The user closes a's pane: a leaves the team (SIGHUP), nothing breaks.
    let mut events = f.host.events();
    t.ok(&["kill-pane", "-t", &pane_a]);
    let state = state_of(&mut events, "a", |s| s.is_finished()).await;
    assert_eq!(state, TeammateState::Killed);
    assert_eq!(f.team.config().unwrap().member_names(), ["team-lead", "b"]);

    // Records teamhost must not act on: the user's pane under a pid it does
    // not run, and a pane that no longer exists.
    let mut fake = started::Started::new("ghost", "tmux", user_pid + 1_000_000);
    fake.pane_id = Some(user_id.clone());
    fake.tmux_socket = Some(t.sock.clone());
    started::record(&Home::new(&f.home), f.team.name(), &fake).unwrap();
    let mut gone = started::Started::new("gone", "tmux", 999_999_999);
    gone.pane_id = Some("%999".into());
    gone.tmux_socket = Some(t.sock.clone());
    started::record(&Home::new(&f.home), f.team.name(), &gone).unwrap();

    // `teamhost team delete --force`, from another process, after a crash:
    // it refuses while a live host runs the team (this test's), so the
    // records are made to name a host that died, as a crash leaves them.
    name_a_dead_host(&Home::new(&f.home), f.team.name());
    let b_pid = started::list(&Home::new(&f.home), f.team.name())
        .unwrap()
        .into_iter()
        .find(|r| r.name == "b")
        .unwrap()
        .pid;
    let out = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(&f.home)
        .args(["team", "delete", "winds", "--force", "--timeout", "10"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!f.team.exists());
    let state = state_of(&mut events, "b", |s| s.is_finished()).await;
    assert_eq!(state, TeammateState::Killed);
    assert!(!exists(b_pid));
    let left: Vec<String> = t.panes().into_iter().map(|p| p.0).collect();
    assert_eq!(
        left,
        std::slice::from_ref(&user_id),
        "only the user's pane is left"
    );
    assert!(!left.contains(&pane_b));
    assert!(!t
        .cmd(&["has-session", "-t", "=teamhost-winds"])
        .status
        .success());
    assert_eq!(user_pane(&t), (user_id.clone(), user_pid));
    assert!(t.capture(&user_id).contains("USER-PANE-MARKER"));
    assert!(teamhost_processes(&f.home).is_empty());
}

/// Rewrites `team`'s spawn and process records to name a host process that
/// has ended, as a host that crashed leaves them.
fn name_a_dead_host(home: &Home, team: &str) {
    // Named by pid and start time: a pid used again is another process.
    let mut ended = Command::new("sleep").arg("30").spawn().unwrap();
    let dead = ended.id();
    let since = teamhost::home::process::start_time(dead);
    assert!(since.is_some());
    ended.kill().unwrap();
    ended.wait().unwrap();
    for mut rec in started::list(home, team).unwrap() {
        rec.host_pid = dead;
        rec.host_start_time = since;
        started::record(home, team, &rec).unwrap();
    }
    for mut rec in teamhost::home::spawn_record::list(home, team).unwrap() {
        rec.host_pid = dead;
        rec.host_start_time = since;
        teamhost::home::spawn_record::record(home, team, &rec).unwrap();
    }
}

/// A teammate in a tmux pane waits for the lead's answer to a permission
/// request (its Bash call); the team is shut down. The host's stop reaches
/// the pane's process at once (SIGUSR1): its wait is denied, "the host is
/// stopping", recorded as answered in its history; its turn ends, it takes
/// its shutdown request and approves it: stopped, not killed, in moments
/// (it took the whole 30 s shutdown timeout, then a kill, before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_teammate_waiting_for_the_lead_is_denied_at_once_and_stops_cleanly_on_shutdown() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(tmp.path());
    let sock = t.sock.clone();
    let f = fixture("asking", TeammateMode::Tmux, move |b| {
        b.tmux.socket = Some(sock);
    });
    let dir = f.dir("p");
    f.host
        .spawn("asking", probe("p", "listen", &dir, false))
        .await
        .unwrap();
    f.idle_from("p", 1).await;
    f.host.send_as_lead("asking", "p", "hold", None).unwrap();
    f.until("p's permission request", || {
        !teamhost::approvals::pending(&f.team)
            .unwrap_or_default()
            .is_empty()
    })
    .await;

    let stopping = std::time::Instant::now();
    let report = f
        .host
        .shutdown_team("asking", "the test stops the team", LIMIT)
        .await
        .unwrap();
    let took = stopping.elapsed();
    assert_eq!(
        report.stopped,
        ["p"],
        "{report:?}; its log:\n{}",
        f.log("p")
    );
    assert!(report.killed.is_empty(), "{report:?}");
    // Generous: it took the 30 s shutdown timeout and ended killed before.
    assert!(
        took < Duration::from_secs(10),
        "the stop took {took:?}; its log:\n{}",
        f.log("p")
    );
    let state = f.host.teammates("asking")[0].state.clone();
    assert_eq!(state, TeammateState::Completed, "its log:\n{}", f.log("p"));
    // It saw the denial: the host's answer recorded in its history, and
    // the call never ran.
    let denial = f
        .team
        .history("p")
        .unwrap()
        .into_iter()
        .find(|m| {
            m.from == teamhost::protocol::HOST_SENDER
                && matches!(
                    ProtocolMessage::parse(&m.text),
                    Parsed::Protocol(ProtocolMessage::PermissionResponse(_))
                )
        })
        .expect("the denial recorded in p's history");
    assert!(
        denial.text.contains("the host is stopping"),
        "{}",
        denial.text
    );
    assert!(
        f.log("p").contains("the host is stopping"),
        "the guest was told; its log:\n{}",
        f.log("p")
    );
    assert!(!dir.join("holding-msg").exists(), "the call never ran");
    assert!(teamhost_processes(&f.home).is_empty());
}

/// The binary a pane would run does not work: one that is not on PATH (the
/// fallback when the host is not named `teamhost`), one that dies at once
/// saying why on stderr. The spawn fails before any pane is opened, saying
/// what failed (the command, its words) and the fix (TEAMHOST_EXE), and
/// names no log file (none was ever written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_command_that_cannot_run_is_refused_with_its_cause_and_teamhost_exe() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(tmp.path());
    let broken = tmp.path().join("teamhost");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'teamhost: error while loading shared libraries: libwasm.so.9' >&2\nexit 127\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let cases: [(&str, std::path::PathBuf, &str); 2] = [
        (
            "missing",
            "teamhost-nowhere-on-path".into(),
            "`teamhost-nowhere-on-path`",
        ),
        ("broken", broken.clone(), "libwasm.so.9"),
    ];
    for (team, exe, cause) in cases {
        let (sock, exe) = (t.sock.clone(), exe.clone());
        let f = fixture(team, TeammateMode::Tmux, move |b| {
            b.tmux.socket = Some(sock);
            b.teamhost_exe = Some(exe);
        });
        let dir = f.dir("p");
        let e = f
            .host
            .spawn(team, probe("p", "listen", &dir, false))
            .await
            .expect_err("a spawn with a broken binary fails")
            .to_string();
        assert!(e.contains(cause), "{team}: {e}");
        assert!(e.contains("TEAMHOST_EXE"), "{team}: {e}");
        for word in e.split_whitespace() {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '.');
            if word.ends_with(".log") {
                assert!(
                    Path::new(word).exists(),
                    "{team}: names {word}, which does not exist: {e}"
                );
            }
        }
        // No pane was opened, and the member was taken back.
        assert_eq!(t.panes().len(), 1, "{team}: {:?}", t.panes());
        assert!(f.team.config().unwrap().member("p").is_none(), "{team}");
    }
}
