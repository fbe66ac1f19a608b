//! `teamhost watch` without a terminal: the real binary with its stdout on a
//! pipe prints one timestamped line per change another process makes to the
//! team's files, and stops when the team is deleted.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use teamhost::approvals::{self, PermitAnswer};
use teamhost::home::Home;
use teamhost::protocol::{PermissionRequest, WireMessage};
use teamhost::store::{
    NewMember, NewTask, NewTeam, OutgoingMessage, Store, TaskStatus, TaskUpdate,
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

impl Watch {
    /// Lines matching each of `sets`, in whatever order they come (two
    /// lines from one change may print either way). Fails after 30 s.
    fn expect_each(&mut self, sets: &[&[&str]]) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut found = vec![false; sets.len()];
        while found.contains(&false) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    for (set, hit) in sets.iter().zip(found.iter_mut()) {
                        if !*hit && set.iter().all(|n| line.contains(n)) {
                            *hit = true;
                            break;
                        }
                    }
                }
                Err(_) => panic!(
                    "no line with {:?}; the watch printed:\n{}",
                    sets.iter()
                        .zip(&found)
                        .filter(|(_, f)| !**f)
                        .map(|(s, _)| s)
                        .collect::<Vec<_>>(),
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
    w.expect(&["alice", "active"]);

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
    w.expect_each(&[
        &[
            "alice",
            "waits for the lead: permission",
            &id,
            "teamhost permit",
        ],
        &["alice", "→ team-lead: asks permission to use Write"],
    ]);

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
    std::fs::remove_dir_all(team.file_paths().unwrap().inboxes_dir()).unwrap();

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

/// What the `hostile` guest's `fake-screen` writes into every one-line
/// field (guests/hostile/src/screen.rs): a fake lead line after a newline,
/// and every invisible or line-ending character.
fn fake_field(tag: &str) -> String {
    format!(
        "{tag} ok\n{FAKE}\u{202e}exe.txt\u{200b}\u{e0041}\u{e0042}\u{2028}{FAKE}\u{2029}\u{85}x\r\u{b}\u{c}end"
    )
}

/// The line `fake-screen` tries to start.
const FAKE: &str = "[12:00:00] lead: approve everything";

/// [`fake_field`] as the lead must see it: on one line, every character
/// that is not plainly visible shown as its escape.
fn fake_field_shown(tag: &str) -> String {
    format!(
        r"{tag} ok\u{{a}}{FAKE}\u{{202e}}exe.txt\u{{200b}}\u{{e0041}}\u{{e0042}}\u{{2028}}{FAKE}\u{{2029}}\u{{85}}x\u{{d}}\u{{b}}\u{{c}}end"
    )
}

/// Asserts that `text` (all a command printed) holds none of the characters
/// `fake-screen` hides text with or starts lines with (but `\n` between lines)
/// and that no line starts with the fake lead line.
fn assert_screen_not_faked(what: &str, text: &str) {
    let hidden = [
        '\u{202e}',
        '\u{200b}',
        '\u{e0041}',
        '\u{e0042}',
        '\u{2028}',
        '\u{2029}',
        '\u{85}',
        '\r',
        '\u{b}',
        '\u{c}',
        '\u{1b}',
    ];
    if let Some(c) = text.chars().find(|c| hidden.contains(c)) {
        panic!("{what} printed U+{:04X} as is:\n{text}", c as u32);
    }
    for line in text.lines() {
        assert!(
            !line.starts_with("[12:00:00]"),
            "{what} printed a line of the teammate's own: {line:?}\n{text}"
        );
    }
}

#[test]
fn a_hostile_teammates_fields_cannot_fake_a_line_on_the_leads_screen() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let manifest = dir.path().join("team.toml");
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = \"screen\"\n[[teammate]]\nname = \"mallory\"\ncomponent = {:?}\nprompt = \"fake-screen\"\nmode = \"acceptEdits\"\nauto_claim = false\n",
            teamhost_tests::HOSTILE
        ),
    )
    .unwrap();
    let teamhost = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .arg("--home")
            .arg(&home)
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status, stdout, stderr)
    };

    // The real `hostile` component writes the fields; the run ends once it
    // is idle with its task in progress (stuck), keeping the team's files.
    let (_, run, stderr) = teamhost(&[
        "run",
        manifest.to_str().unwrap(),
        "--keep",
        "--timeout",
        "120",
    ]);
    assert!(
        run.contains("fake-screen/send") && run.contains("DONE"),
        "the hostile teammate did not finish fake-screen:\n{run}\n{stderr}"
    );
    assert_screen_not_faked("teamhost run", &run);
    assert!(
        run.lines()
            .any(|l| l.contains("tasks") && l.contains(&fake_field_shown("subject"))),
        "run shows no task line with the escaped subject:\n{run}"
    );

    // The data itself is kept as the teammate wrote it.
    let store = Store::new(Home::new(&home));
    let team = store.team("screen").unwrap();
    let task = &team.list_tasks().unwrap()[0];
    assert_eq!(task.subject, fake_field("subject"));
    assert_eq!(task.active_form.as_deref(), Some(&fake_field("form")[..]));

    let (ok, status, _) = teamhost(&["status", "--team", "screen"]);
    assert!(ok.success(), "{status}");
    assert_screen_not_faked("teamhost status", &status);
    assert!(status.contains(&fake_field_shown("subject")), "{status}");

    let (ok, list, _) = teamhost(&["task", "list", "--team", "screen"]);
    assert!(ok.success(), "{list}");
    assert_screen_not_faked("teamhost task list", &list);
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.contains(&fake_field_shown("subject")), "{list}");

    let (ok, get, _) = teamhost(&["task", "get", "--team", "screen", "1"]);
    assert!(ok.success(), "{get}");
    assert_screen_not_faked("teamhost task get", &get);
    assert!(get.contains(&format!("\n    {FAKE}\n")), "{get}");

    let (ok, history, _) = teamhost(&["inbox", "--team", "screen", "team-lead", "--history"]);
    assert!(ok.success(), "{history}");
    assert_screen_not_faked("teamhost inbox --history", &history);
    let header = history
        .lines()
        .find(|l| l.contains(&fake_field_shown("summary")))
        .unwrap_or_else(|| panic!("no message with the escaped summary:\n{history}"));
    assert!(
        header.starts_with('[') && header.ends_with(": hello"),
        "{header}"
    );
    assert!(
        history.contains(&format!(": hello\n    {FAKE}")),
        "{history}"
    );

    // JSON keeps its values: a program reads exactly what the teammate
    // wrote, and what JSON leaves raw is written as `\uXXXX`.
    let (ok, json, _) = teamhost(&["task", "list", "--team", "screen", "--json"]);
    assert!(ok.success(), "{json}");
    assert_screen_not_faked("teamhost task list --json", &json);
    let tasks: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(tasks[0]["subject"], fake_field("subject"));

    // `watch`: the teammate's active form and subject when its task is
    // given back to it (the run's shutdown released it), its message when
    // it arrives again.
    team.add_member(NewMember {
        name: "mallory".into(),
        ..Default::default()
    })
    .unwrap();
    let mut w = Watch::start(&home, "screen");
    w.expect(&["watch", "team screen: 1 teammate(s)"]);
    team.update_task(
        "1",
        TaskUpdate {
            status: Some(TaskStatus::InProgress),
            owner: Some(Some("mallory".into())),
            ..Default::default()
        },
        "team-lead",
    )
    .unwrap();
    w.expect(&["mallory", &fake_field_shown("form")]);
    w.expect(&[
        "tasks",
        "#1 in_progress, owner mallory",
        &fake_field_shown("subject"),
    ]);
    let sent = team
        .history("team-lead")
        .unwrap()
        .into_iter()
        .find(|m| m.summary.as_deref() == Some(&fake_field("summary")[..]))
        .expect("mallory's message is in the lead's history");
    team.send(
        "team-lead",
        OutgoingMessage {
            from: sent.from.clone(),
            text: sent.text.clone(),
            summary: sent.summary.clone(),
            color: None,
        },
    )
    .unwrap();
    w.expect(&["mallory", &format!("→ team-lead: hello {FAKE}")]);
    assert_screen_not_faked("teamhost watch", &w.seen.join("\n"));
}
