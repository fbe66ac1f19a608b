//! The live view fits the terminal it has (issue 31): `teamhost watch` in a
//! real tmux at 80×24 and 120×36, read with `capture-pane`. Every teammate's
//! state and every task's subject is whole, the keys bar keeps `? help` and
//! `q quit`; `?` opens the help; `Shift-↓` and `Enter` open a teammate's
//! detail (its turns and its log's tail, a hostile escape sequence shown,
//! not run); `Esc` goes back; after `q` the last frame stays on the
//! terminal. No wasm: the team is written with the store's API.
//!
//! tmux has no event for "the screen changed": the test polls
//! `capture-pane`, at most 400 tries 50 ms apart; the command's end is a
//! `tmux wait-for` channel.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use teamhost::home::{Home, Kept};
use teamhost::protocol::{PermissionRequest, WireMessage};
use teamhost::store::{NewMember, NewTask, NewTeam, OutgoingMessage, Store, TaskUpdate, Team};

use crate::tmux_server::TmuxServer as Tmux;

/// Every word a teammate's state can be shown with, long and short.
const STATE_WORDS: [&str; 14] = [
    "compiling",
    "starting",
    "active",
    "idle",
    "stopping",
    "awaiting approval",
    "asks you",
    "asks lead",
    "awaiting",
    "killed",
    "failed",
    "dead",
    "stopped",
    "unknown",
];

const SUBJECTS: [&str; 3] = [
    "Write down the river story in the shared notes",
    "Count every word of chapter one and report the total",
    "Summarise the counts for the lead",
];

/// A teammate whose name is wider than the view's name column, and what it
/// asks and says: each longer than its line at 80 columns.
const LONG_NAME: &str = "bob-the-long-named-reviewer";
const LONG_COMMAND: &str =
    "cargo test --workspace --all-targets -- --include-ignored and then report";
const LONG_MESSAGE: &str =
    "reviewed every chapter twice and found three places where the counts disagree with the notes";

/// The texts the view shows that no cut may leave half a word of without
/// `…`.
fn texts() -> Vec<String> {
    let mut all: Vec<String> = [
        LONG_NAME,
        LONG_COMMAND,
        LONG_MESSAGE,
        "waiting for you",
        "none recorded (a teammate without a model calls tools through the host: see its log)",
        "count chapter one, please",
        "asks permission to use Bash: Run the tests",
        // The view's own words (column names, titles) that begin another.
        "alice bob py-checker team-lead permission asks Write Bash command",
        "team fit tasks task teammates teammate turn turns name state last tool calls log",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.extend(SUBJECTS.iter().map(|s| s.to_string()));
    all
}

/// Asserts no word of [`texts`] shows cut on `screen` without `…`: every
/// token that is a proper beginning of one of their words is either that
/// word whole, another whole word, or ends with `…`.
fn assert_no_word_cut(screen: &str, size: &str) {
    let split = |t: &str| -> Vec<String> {
        t.split(|c: char| c.is_whitespace() || "│─┌┐└┘\"{}:,[]()·▶".contains(c))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let known: std::collections::BTreeSet<String> = texts().iter().flat_map(|t| split(t)).collect();
    for token in split(screen) {
        if token.ends_with('…') || known.contains(&token) || token.chars().count() < 3 {
            continue;
        }
        if let Some(word) = known.iter().find(|w| w.starts_with(&token)) {
            panic!("{size}: {word:?} is cut to {token:?} without …:\n{screen}");
        }
    }
}

/// A log line that would retitle the pane if it reached the terminal.
const HOSTILE_LOG: &str = "\x1b]2;PWNED\x07\x1b[2J after the escape";

fn capture(t: &Tmux) -> String {
    t.ok(&["capture-pane", "-p", "-t", "fit"])
}

/// Polls the pane until it shows every one of `needles`.
fn shows(t: &Tmux, needles: &[&str]) -> String {
    for _ in 0..400 {
        let screen = capture(t);
        if needles.iter().all(|n| screen.contains(n)) {
            return screen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "the view never showed {needles:?}; it shows:\n{}",
        capture(t)
    );
}

/// Polls the pane until it shows none of `gone`.
fn hides(t: &Tmux, gone: &[&str]) -> String {
    for _ in 0..400 {
        let screen = capture(t);
        if gone.iter().all(|n| !screen.contains(n)) {
            return screen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the view still shows one of {gone:?}:\n{}", capture(t));
}

/// The team: three teammates, long subjects, a request waiting for the
/// lead, a turn in progress, a message taken and a log with an escape
/// sequence in it.
fn fixture(home: &Path) -> Team {
    let team = Store::new(Home::new(home)).team("fit").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in ["alice", "bob", "py-checker", LONG_NAME] {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })
        .unwrap();
    }
    for (subject, owner) in SUBJECTS.iter().zip(["alice", "bob", "py-checker"]) {
        let t = team
            .create_task(NewTask {
                subject: subject.to_string(),
                ..Default::default()
            })
            .unwrap();
        team.update_task(
            &t.id,
            TaskUpdate {
                owner: Some(Some(owner.into())),
                ..Default::default()
            },
            "team-lead",
        )
        .unwrap();
    }
    let request = PermissionRequest::new(
        "alice",
        "Write",
        "toolu_1",
        "Write notes.md",
        serde_json::json!({}),
    );
    team.send(
        "team-lead",
        OutgoingMessage::new("alice", request.to_text()),
    )
    .unwrap();
    let bash = PermissionRequest::new(
        LONG_NAME,
        "Bash",
        "toolu_2",
        "Run the tests",
        serde_json::json!({ "command": LONG_COMMAND }),
    );
    team.send("team-lead", OutgoingMessage::new(LONG_NAME, bash.to_text()))
        .unwrap();
    team.send("team-lead", OutgoingMessage::new(LONG_NAME, LONG_MESSAGE))
        .unwrap();
    team.send(
        "bob",
        OutgoingMessage::new("team-lead", "count chapter one, please"),
    )
    .unwrap();
    team.take_unread("bob").unwrap();
    let h = Home::new(home);
    let log = h.teammate_log("fit", "bob");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, format!("bob joined\n{HOSTILE_LOG}\nLAST-LOG-LINE\n")).unwrap();
    let turn = h.kept("fit", "bob", Kept::Turn).unwrap();
    std::fs::create_dir_all(turn.parent().unwrap()).unwrap();
    std::fs::write(
        &turn,
        r#"{"from":"team-lead","text":"count chapter one, please","timestamp":"2026-11-27T07:00:00.000Z","read":true}"#,
    )
    .unwrap();
    team
}

/// Starts `teamhost watch --team fit` in a `w`×`h` session named `fit`;
/// answers the file its exit code goes to.
fn start_watch(t: &Tmux, home: &Path, dir: &Path, w: u16, h: u16) -> std::path::PathBuf {
    let exit = dir.join("exit-code");
    let script = format!(
        "'{bin}' --home '{home}' watch --team fit; echo $? > '{exit}'; tmux -S '{sock}' wait-for -S done; exec cat",
        bin = env!("CARGO_BIN_EXE_teamhost"),
        home = home.display(),
        exit = exit.display(),
        sock = t.sock.display(),
    );
    let (w, h) = (w.to_string(), h.to_string());
    t.ok(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "fit",
        "-x",
        &w,
        "-y",
        &h,
        &script,
    ]);
    exit
}

/// Asserts every teammate's state and every subject is whole, and the keys
/// bar keeps help and quit.
fn assert_whole(screen: &str, size: &str) {
    let words: Vec<&str> = screen
        .split(|c: char| c.is_whitespace() || "│─┌┐└┘".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    for name in ["alice", "bob", "py-checker"] {
        let row = screen
            .lines()
            .find(|l| l.trim_start_matches('│').starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{size}: no row for {name}:\n{screen}"));
        assert!(
            STATE_WORDS
                .iter()
                .any(|s| row.contains(&format!(" {s} ")) || row.contains(&format!(" {s}│"))),
            "{size}: {name}'s state is cut: {row:?}\n{screen}"
        );
    }
    for subject in SUBJECTS {
        for w in subject.split(' ') {
            assert!(
                words.contains(&w),
                "{size}: {subject:?} lost {w:?}:\n{screen}"
            );
        }
    }
    for key in ["? help", "q quit", "a approve", "d deny"] {
        assert!(
            screen.contains(key),
            "{size}: the keys bar lost {key:?}:\n{screen}"
        );
    }
}

fn wait_done(t: &Tmux, exit: &Path) -> String {
    let waited = Command::new("timeout")
        .args(["60", "tmux", "-S"])
        .arg(&t.sock)
        .args(["wait-for", "done"])
        .status()
        .unwrap();
    assert!(waited.success(), "the watch did not end within 60 s");
    std::fs::read_to_string(exit).unwrap().trim().to_string()
}

fn fits_and_answers_keys_at(w: u16, h: u16) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fixture(&home);
    let t = Tmux {
        sock: tmp.path().join("sock"),
    };
    let exit = start_watch(&t, &home, tmp.path(), w, h);
    let size = format!("{w}×{h}");
    let screen = shows(&t, &["team fit", "alice permission asks: Write", "q quit"]);
    assert_whole(&screen, &size);
    assert_no_word_cut(&screen, &size);
    // bob's turn is in progress: a spinner and its elapsed time.
    let bob = screen.lines().find(|l| l.contains("│bob ")).unwrap();
    assert!(
        bob.contains('s') && bob.chars().any(|c| ('⠀'..='⣿').contains(&c)),
        "{size}: {bob}"
    );

    // `?`: every key; any key back.
    t.ok(&["send-keys", "-t", "fit", "?"]);
    shows(&t, &["help: every key", "Shift-↑ Shift-↓", "any key back"]);
    t.ok(&["send-keys", "-t", "fit", "Escape"]);
    hides(&t, &["help: every key"]);

    // Shift-↓ picks bob, Enter opens his detail.
    t.ok(&["send-keys", "-t", "fit", "S-Down"]);
    t.ok(&["send-keys", "-t", "fit", "Enter"]);
    let detail = shows(
        &t,
        &[
            "teammate bob",
            "team-lead: count chapter one, please",
            "LAST-LOG-LINE",
            "Esc back",
        ],
    );
    assert!(
        detail.contains("turn now"),
        "{size}: the turn in progress:\n{detail}"
    );
    assert_no_word_cut(&detail, &size);
    assert!(
        detail.contains(r"\u{1b}]2;PWNED\u{7}"),
        "{size}: the log's escape sequence is shown as text:\n{detail}"
    );
    let title = t.ok(&["display-message", "-p", "-t", "fit", "#{pane_title}"]);
    assert_ne!(
        title, "PWNED",
        "a teammate's log retitled the person's pane"
    );
    t.ok(&["send-keys", "-t", "fit", "Escape"]);
    hides(&t, &["teammate bob"]);
    // The first frame without the detail can be one tmux captured while the
    // board was being painted: wait for the board's own keys bar.
    let board = shows(&t, &["team fit", "alice permission asks: Write", "q quit"]);
    assert_whole(&board, &size);
    assert_no_word_cut(&board, &size);

    // q quits; the last frame stays on the terminal.
    t.ok(&["send-keys", "-t", "fit", "q"]);
    assert_eq!(wait_done(&t, &exit), "0");
    let after = t.ok(&["capture-pane", "-p", "-S", "-200", "-t", "fit"]);
    assert!(
        after.contains("team fit") && after.contains("alice permission asks: Write"),
        "{size}: the last frame is gone after the view ended:\n{after}"
    );
}

#[test]
fn watch_at_80_by_24_shows_whole_states_subjects_and_keys_and_answers_help_and_selection() {
    fits_and_answers_keys_at(80, 24);
}

#[test]
fn watch_at_120_by_36_shows_whole_states_subjects_and_keys_and_answers_help_and_selection() {
    fits_and_answers_keys_at(120, 36);
}

#[test]
fn run_inside_tmux_puts_teammates_in_their_own_window_and_the_view_keeps_the_width() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(tmp.path().join("asker")).unwrap();
    let manifest = tmp.path().join("team.toml");
    std::fs::write(
        &manifest,
        format!(
            r#"
[team]
name = "wide"

[[teammate]]
name = "asker"
component = "{hostile}"
prompt = "write-file x.txt hello"
cwd = "asker"
mode = "default"
auto_claim = false
"#,
            hostile = teamhost_tests::HOSTILE,
        ),
    )
    .unwrap();
    let t = Tmux {
        sock: tmp.path().join("sock"),
    };
    // Inside the pane `$TMUX` names this private server.
    let script = format!(
        "'{bin}' --home '{home}' run '{manifest}' --teammate-mode tmux",
        bin = env!("CARGO_BIN_EXE_teamhost"),
        home = home.display(),
        manifest = manifest.display(),
    );
    t.ok(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "fit",
        "-x",
        "80",
        "-y",
        "24",
        &script,
    ]);
    // The teammate asks the lead before it writes: it stays until answered.
    let screen = shows(&t, &["team wide", "asker permission asks: Write"]);
    let windows = t.ok(&[
        "list-windows",
        "-t",
        "fit",
        "-F",
        "#{window_name} #{window_panes}",
    ]);
    let lines: Vec<&str> = windows.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "the view's window and the team's: {windows}"
    );
    assert!(lines[1].starts_with("teamhost-wide 1"), "{windows}");
    let view = t.ok(&[
        "display-message",
        "-p",
        "-t",
        "fit:0",
        "#{window_panes} #{pane_width}",
    ]);
    assert_eq!(view, "1 80", "the view keeps its pane whole:\n{screen}");
    assert_whole_row(&screen, "asker");
    // The server's end (on drop) ends the run here; stopping it with a key
    // is live_view.rs's (q_in_the_run_view_stops_a_tmux_pane_teammate_…).
}

/// Asserts `name`'s row shows a whole state word.
fn assert_whole_row(screen: &str, name: &str) {
    let row = screen
        .lines()
        .find(|l| l.trim_start_matches('│').starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row for {name}:\n{screen}"));
    assert!(
        STATE_WORDS.iter().any(|s| row.contains(&format!(" {s} "))),
        "{name}'s state is cut: {row:?}\n{screen}"
    );
}
