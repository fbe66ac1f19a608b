//! `teamhost watch` without a terminal: the real binary with its stdout on a
//! pipe prints one timestamped line per change another process makes to the
//! team's files, and stops when the team is deleted.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use teamhost::approvals::{self, PermitAnswer};
use teamhost::protocol::{PermissionRequest, WireMessage};
use teamhost::store::{
    Home, NewMember, NewTask, NewTeam, OutgoingMessage, Store, TaskStatus, TaskUpdate,
};

/// The watch process and its stdout, line by line.
struct Watch {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Watch {
    fn start(home: &std::path::Path, team: &str) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .arg("--home")
            .arg(home)
            .args(["watch", "--team", team])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    return;
                }
            }
        });
        Watch {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line containing every one of `needles` (earlier lines are
    /// kept in `seen`). Fails after 30 s.
    fn expect(&mut self, needles: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if needles.iter().all(|n| line.contains(n)) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no line with {needles:?}; the watch printed:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_prints_a_timestamped_line_per_change_and_ends_with_the_team() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    let team = store.team("board").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "alice".into(),
        backend_type: Some("process".into()),
        ..Default::default()
    })
    .unwrap();

    let mut w = Watch::start(tmp.path(), "board");
    let first = w.expect(&["watch", "team board: 1 teammate(s), tasks 0/0 completed"]);
    let stamp = regex::Regex::new(r"^\d\d:\d\d:\d\d\.\d{3}  \S").unwrap();
    assert!(stamp.is_match(&first), "{first:?}");
    w.expect(&["alice", "unknown", "[process]"]);

    team.create_task(NewTask {
        subject: "Write tests".into(),
        ..Default::default()
    })
    .unwrap();
    w.expect(&["tasks", "#1 created (pending): Write tests"]);

    team.set_active("alice", true).unwrap();
    w.expect(&["alice", "running"]);

    team.update_task(
        "1",
        TaskUpdate {
            owner: Some(Some("alice".into())),
            status: Some(TaskStatus::InProgress),
            ..Default::default()
        },
        "team-lead",
    )
    .unwrap();
    w.expect(&["tasks", "#1 in_progress, owner alice: Write tests"]);

    let request = PermissionRequest::new(
        "alice",
        "Write",
        "toolu_1",
        "Write notes.md",
        serde_json::json!({"file_path": "notes.md", "content": "x"}),
    );
    let id = request.request_id.clone();
    team.send(
        "team-lead",
        OutgoingMessage::new("alice", request.to_text()),
    )
    .unwrap();
    w.expect(&[
        "alice",
        "waits for the lead: permission",
        &id,
        "teamhost permit",
    ]);
    w.expect(&["alice", "→ team-lead: asks permission to use Write"]);

    approvals::answer_permission(
        &team,
        &id,
        PermitAnswer::Deny {
            reason: "not now".into(),
        },
    )
    .unwrap();
    w.expect(&["alice", &format!("permission request {id} answered")]);

    team.send("team-lead", OutgoingMessage::new("alice", "all\ndone"))
        .unwrap();
    w.expect(&["alice", "→ team-lead: all done"]);

    team.update_task(
        "1",
        TaskUpdate {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        },
        "alice",
    )
    .unwrap();
    w.expect(&["tasks", "1/1 completed"]);

    // Nothing was written by the watch: it only reads.
    assert!(team.history("team-lead").unwrap().is_empty());
    assert_eq!(team.read_inbox("team-lead").unwrap().len(), 2);

    team.delete(true).unwrap();
    w.expect(&["watch", "the team was deleted"]);
    let status = w.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    for line in &w.seen {
        assert!(stamp.is_match(line), "untimestamped line {line:?}");
    }
}

#[test]
fn watching_a_team_that_does_not_exist_says_how_to_find_one() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(tmp.path())
        .args(["watch", "--team", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no team \"nope\"") && err.contains("teamhost team list"),
        "{err}"
    );
}

/// Every path under `dir` with its contents (directories: empty).
fn tree(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// A home holding a copy of the team Claude Code 2.1.197 wrote (the golden
/// fixture).
fn reference_home() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference-2.1.197");
    let copy = Command::new("cp")
        .arg("-r")
        .arg(fixture.join("teams"))
        .arg(fixture.join("tasks"))
        .arg(tmp.path())
        .status()
        .unwrap();
    assert!(copy.success());
    tmp
}

#[test]
fn watching_a_claude_code_team_shows_it_and_writes_nothing() {
    let tmp = reference_home();
    let before = tree(tmp.path());

    let mut w = Watch::start(tmp.path(), "session-76c4e2e6");
    w.expect(&["team session-76c4e2e6: 1 teammate(s), tasks 0/2 completed"]);
    w.expect(&["wasm-pane", "on #1 Compiling wasm module", "[tmux]"]);
    drop(w);
    assert_eq!(
        tree(tmp.path()),
        before,
        "the watch changed the team's files"
    );
}

#[test]
fn a_team_directory_created_after_the_watch_started_is_followed() {
    let tmp = reference_home();
    // A team nobody has written a message to yet: no inboxes/.
    let team = Store::new(Home::new(tmp.path()))
        .team("session-76c4e2e6")
        .unwrap();
    std::fs::remove_dir_all(team.paths().inboxes_dir()).unwrap();

    let mut w = Watch::start(tmp.path(), "session-76c4e2e6");
    w.expect(&["team session-76c4e2e6: 1 teammate(s)"]);
    team.send("team-lead", OutgoingMessage::new("wasm-pane", "first"))
        .unwrap();
    w.expect(&["wasm-pane", "→ team-lead: first"]);
    // Seen only through a watch on the new inboxes/ itself.
    team.send("team-lead", OutgoingMessage::new("wasm-pane", "second"))
        .unwrap();
    w.expect(&["wasm-pane", "→ team-lead: second"]);
}

#[test]
fn a_teammates_escape_sequences_never_reach_the_leads_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    let team = store.team("board").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "mallory".into(),
        ..Default::default()
    })
    .unwrap();

    let mut w = Watch::start(tmp.path(), "board");
    w.expect(&["team board: 1 teammate(s)"]);
    // What a hostile teammate can write: a message and a task subject.
    team.send(
        "team-lead",
        OutgoingMessage::new("mallory", "\u{1b}[2J\u{1b}]0;pwned\u{7}all clear"),
    )
    .unwrap();
    w.expect(&["mallory", r"\u{1b}[2J\u{1b}]0;pwned\u{7}all clear"]);
    team.create_task(NewTask {
        subject: "fix \u{202e}gnp.exe".into(),
        ..Default::default()
    })
    .unwrap();
    w.expect(&["#1 created", r"fix \u{202e}gnp.exe"]);
    for line in &w.seen {
        assert!(
            !line
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'),
            "{line:?}"
        );
    }

    // The same through `teamhost status` and `teamhost inbox`.
    for args in [
        &["status", "--team", "board"][..],
        &["inbox", "--team", "board", "team-lead"][..],
        &["task", "list", "--team", "board"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .arg("--home")
            .arg(tmp.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'),
            "{args:?}: {text:?}"
        );
        assert!(
            text.contains(r"\u{1b}") || text.contains(r"\u{202e}"),
            "{args:?}: {text}"
        );
    }
}
