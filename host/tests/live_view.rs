//! The live view in a real terminal, inside tmux on a private socket:
//!
//! - `teamhost run`: the screen (read with `capture-pane`) shows the
//!   teammates, their states and the task progress; a key press (`send-keys`)
//!   answers a teammate's permission request, and the `permission_response` is
//!   on disk;
//! - `teamhost watch`: a plan is read in full, rejected with a typed reason,
//!   and a message is typed to a teammate;
//! - a team led by a component, at 80×24: the lead's own permission request
//!   (a lead never answers its own) is the person's, answered with a key.
//!
//! A command's end is a `tmux wait-for` channel the pane's shell signals.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use teamhost::home::Home;
use teamhost::protocol::{
    Parsed, PermissionOutcome, PlanApprovalRequest, ProtocolMessage, WireMessage,
};
use teamhost::store::{NewMember, NewTeam, OutgoingMessage, Store};

use crate::tmux_server;
use tmux_server::TmuxServer as Tmux;

impl Tmux {
    /// Polls `capture-pane` (tmux has no event for "the screen changed"):
    /// at most 600 tries, 50 ms apart.
    pub(crate) fn view_shows(&self, needles: &[&str]) -> String {
        for _ in 0..600 {
            let screen = self.ok(&["capture-pane", "-p", "-t", "live"]);
            if needles.iter().all(|n| screen.contains(n)) {
                return screen;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the view never showed {needles:?}; it shows:\n{}",
            self.ok(&["capture-pane", "-p", "-t", "live"])
        );
    }

    /// Starts `command` (then `echo $? > exit_file`, then signal `done`) in a
    /// 180×45 session named `live`.
    pub(crate) fn run_in_pane(&self, command: &str, exit_file: &Path) {
        self.run_in_pane_sized(command, exit_file, (180, 45));
    }

    /// [`Tmux::run_in_pane`] on a terminal of `(columns, rows)`.
    fn run_in_pane_sized(&self, command: &str, exit_file: &Path, (cols, rows): (u16, u16)) {
        let script = format!(
            "{command}; echo $? > '{exit}'; tmux -S '{sock}' wait-for -S done; exec cat",
            exit = exit_file.display(),
            sock = self.sock.display(),
        );
        self.ok(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "live",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            &script,
        ]);
    }

    /// Waits (at most 120 s) for the command started by [`Tmux::run_in_pane`] to end;
    /// answers its exit code.
    pub(crate) fn wait_done(&self, exit_file: &Path) -> String {
        let waited = Command::new("timeout")
            .args(["120", "tmux", "-S"])
            .arg(&self.sock)
            .args(["wait-for", "done"])
            .status()
            .unwrap();
        assert!(waited.success(), "the command did not end within 120 s");
        std::fs::read_to_string(exit_file)
            .unwrap()
            .trim()
            .to_string()
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn run_on_a_terminal_shows_the_team_and_a_key_answers_a_permission_request() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    write(&tmp.path().join("data/one.txt"), "one two three four\n");
    std::fs::create_dir_all(tmp.path().join("asker")).unwrap();
    let manifest = tmp.path().join("team.toml");
    write(
        &manifest,
        &format!(
            r#"
[team]
name = "live"

[[teammate]]
name = "counter"
component = "{worker}"
prompt = "count words"
cwd = "data"
mode = "acceptEdits"

[[teammate]]
name = "asker"
component = "{hostile}"
prompt = "write-file x.txt hello from the asker"
cwd = "asker"
mode = "default"
auto_claim = false

[[task]]
subject = "Count one"
description = "- one.txt"
"#,
            worker = teamhost_tests::WORKER,
            hostile = teamhost_tests::HOSTILE,
        ),
    );
    let exit_file = tmp.path().join("exit-code");
    let tmux = Tmux {
        sock: tmp.path().join("sock"),
    };
    tmux.run_in_pane(
        &format!(
            "'{bin}' --home '{home}' run '{manifest}' --keep --teammate-mode in-process",
            bin = env!("CARGO_BIN_EXE_teamhost"),
            home = home.display(),
            manifest = manifest.display(),
        ),
        &exit_file,
    );

    // The board: both teammates, the asker waiting, the task done, the request.
    let screen = tmux.view_shows(&[
        "team live",
        "counter",
        "asker",
        "awaiting approval",
        "tasks 1/1 completed",
        "asker permission asks: Write",
    ]);
    assert!(screen.contains("in-process"), "{screen}");

    // One key approves the selected (only) request.
    tmux.ok(&["send-keys", "-t", "live", "a"]);
    // The pane's shell signals the channel once the run has exited.
    let code = tmux.wait_done(&exit_file);
    let screen = tmux.ok(&["capture-pane", "-p", "-S", "-100", "-t", "live"]);
    assert_eq!(code, "0", "the run failed; the pane shows:\n{screen}");
    // The last frame, left on the terminal above the summary, shows the
    // team as the stop found it: both teammates stopped.
    let frame_at = screen.rfind("team live").expect("the last frame");
    let summary_at = screen
        .rfind("live: 1/1 task(s) completed")
        .expect("the summary");
    let frame = &screen[frame_at..summary_at];
    for name in ["counter", "asker"] {
        let row = frame
            .lines()
            .find(|l| l.trim_start_matches(['│', ' ']).starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name} in the last frame:\n{frame}"));
        assert!(
            row.contains("stopped"),
            "{name} in the last frame: {row}\n{frame}"
        );
    }

    // The answer is the lead's permission_response, in the asker's mail.
    let team = Store::new(Home::new(&home)).team("live").unwrap();
    let mut mail = team.history("asker").unwrap();
    mail.extend(team.read_inbox("asker").unwrap());
    let responses: Vec<_> = mail
        .iter()
        .filter_map(|m| match ProtocolMessage::parse(&m.text) {
            Parsed::Protocol(ProtocolMessage::PermissionResponse(r)) => Some((m.from.clone(), r)),
            _ => None,
        })
        .collect();
    assert_eq!(responses.len(), 1, "{mail:#?}");
    let (from, response) = &responses[0];
    assert_eq!(from, "team-lead");
    assert!(
        matches!(response.outcome(), Ok(PermissionOutcome::Allowed(_))),
        "{response:?}"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("asker/x.txt")).unwrap(),
        "hello from the asker"
    );
}

#[test]
fn watch_on_a_terminal_shows_a_plan_in_full_rejects_it_with_a_reason_and_sends_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let team = Store::new(Home::new(&home)).team("plans").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "alice".into(),
        ..Default::default()
    })
    .unwrap();
    let plan = PlanApprovalRequest::new(
        "alice",
        "plans",
        "plan.md",
        "# Rewrite the parser\n1. split the lexer\n2. LAST-STEP-OF-THE-PLAN",
    );
    team.send("team-lead", OutgoingMessage::new("alice", plan.to_text()))
        .unwrap();

    let exit_file = tmp.path().join("exit-code");
    let tmux = Tmux {
        sock: tmp.path().join("sock"),
    };
    tmux.run_in_pane(
        &format!(
            "'{bin}' --home '{home}' watch --team plans",
            bin = env!("CARGO_BIN_EXE_teamhost"),
            home = home.display(),
        ),
        &exit_file,
    );
    tmux.view_shows(&["team plans", "alice plan asks: # Rewrite the parser"]);

    // The whole plan, then a rejection with a typed reason.
    tmux.ok(&["send-keys", "-t", "live", "v"]);
    tmux.view_shows(&["plan request from alice", "LAST-STEP-OF-THE-PLAN"]);
    tmux.ok(&["send-keys", "-t", "live", "d"]);
    tmux.view_shows(&["deny: the reason"]);
    tmux.ok(&["send-keys", "-t", "live", "-l", "split the parser too"]);
    tmux.ok(&["send-keys", "-t", "live", "Enter"]);
    tmux.view_shows(&["rejected plan", "nothing waits for you"]);

    // A message typed to alice.
    tmux.ok(&["send-keys", "-t", "live", "m"]);
    tmux.view_shows(&["message from the lead", "to alice"]);
    tmux.ok(&["send-keys", "-t", "live", "-l", "see you at standup"]);
    tmux.ok(&["send-keys", "-t", "live", "Enter"]);
    tmux.view_shows(&["sent to alice"]);
    tmux.ok(&["send-keys", "-t", "live", "q"]);
    assert_eq!(tmux.wait_done(&exit_file), "0");

    let inbox = team.read_inbox("alice").unwrap();
    assert_eq!(inbox.len(), 2, "{inbox:#?}");
    assert!(inbox.iter().all(|m| m.from == "team-lead"));
    match ProtocolMessage::parse(&inbox[0].text) {
        Parsed::Protocol(ProtocolMessage::PlanApprovalResponse(r)) => {
            assert_eq!(r.request_id, plan.request_id);
            assert!(!r.approved);
            assert_eq!(r.feedback.as_deref(), Some("split the parser too"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(inbox[1].text, "see you at standup");
    // Watching consumed nothing of the lead's.
    assert_eq!(team.read_inbox("team-lead").unwrap().len(), 1);
    assert!(team.history("team-lead").unwrap().is_empty());
}

#[test]
fn q_in_the_run_view_stops_a_teammate_waiting_for_the_lead_at_once() {
    quit_the_run_view_with("q", "q in the live view", "Ctrl-C to force", "in-process");
}

/// The default inside tmux: the teammate runs in a tmux pane of its own
/// process. `q` stops it as promptly: its host tells its process at once,
/// its wait is denied, and it approves its shutdown (stopped, not killed
/// after the 30 s shutdown timeout).
#[test]
fn q_in_the_run_view_stops_a_tmux_pane_teammate_waiting_for_the_lead_at_once() {
    quit_the_run_view_with("q", "q in the live view", "Ctrl-C to force", "tmux");
}

/// Raw mode makes Ctrl-C a key of the view: it stops the run as `q` does,
/// and is reported as what it is.
#[test]
fn ctrl_c_in_the_run_view_stops_the_run_and_is_reported_as_ctrl_c() {
    quit_the_run_view_with(
        "C-c",
        "Ctrl-C in the live view",
        "Ctrl-C again to force",
        "in-process",
    );
}

/// Quits `teamhost run`'s view with `key` while its probe (in `mode`)
/// waits for the lead: the run stops at once, saying `interrupted ({how})`
/// and `hint`, the probe stopped, not killed.
fn quit_the_run_view_with(key: &str, how: &str, hint: &str, mode: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(tmp.path().join("p")).unwrap();
    let manifest = tmp.path().join("team.toml");
    // Bash is not allowed: the probe's task call asks the lead and waits.
    write(
        &manifest,
        &format!(
            r#"
[team]
name = "quit"

[[teammate]]
name = "p"
component = "{probe}"
prompt = "complete-tasks bash-on-task"
cwd = "p"
mode = "acceptEdits"

[[task]]
subject = "Step 1"
"#,
            probe = teamhost_tests::PROBE,
        ),
    );
    let exit_file = tmp.path().join("exit-code");
    let tmux = Tmux {
        sock: tmp.path().join("sock"),
    };
    tmux.run_in_pane(
        &format!(
            "'{bin}' --home '{home}' run '{manifest}' --teammate-mode {mode}",
            bin = env!("CARGO_BIN_EXE_teamhost"),
            home = home.display(),
            manifest = manifest.display(),
        ),
        &exit_file,
    );
    tmux.view_shows(&["team quit", "p permission asks: Bash"]);
    let quit = std::time::Instant::now();
    tmux.ok(&["send-keys", "-t", "live", key]);
    let code = tmux.wait_done(&exit_file);
    let took = quit.elapsed();
    let screen = tmux.ok(&["capture-pane", "-p", "-S", "-100", "-t", "live"]);
    assert_eq!(
        code, "1",
        "an interrupted run fails; the pane shows:\n{screen}"
    );
    assert!(
        screen.contains(&format!("stopping 1 teammate(s) ({hint})")),
        "it says what it does:\n{screen}"
    );
    assert!(
        screen.contains(&format!("interrupted ({how})")),
        "it says how it was stopped:\n{screen}"
    );
    assert!(
        screen.contains("shutdown: 1 stopped, 0 killed"),
        "the probe approved its shutdown:\n{screen}"
    );
    eprintln!("{key} ({mode}) stopped the run in {took:?}");
    // `wait-for` and the pane's shell add a little to the run's own stop; a
    // pane's process also has to hear the stop, deny, approve and end.
    let bound = if mode == "tmux" { 10 } else { 3 };
    assert!(
        took < Duration::from_secs(bound),
        "{key} took {took:?}:\n{screen}"
    );
    assert!(!tmp.path().join("p/bash.log").exists());
}

/// Every file called `name` below `dir`.
fn find_files(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find_files(&path, name));
        } else if path.file_name().is_some_and(|n| n == name) {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_led_team_at_80_by_24_shows_the_leads_own_request_and_a_key_answers_it_as_the_person() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let manifest = tmp.path().join("team.toml");
    // The lead writes a file in `default` mode: its own permission request,
    // which only the person may answer; then it deletes its team.
    write(
        &manifest,
        &format!(
            "[team]\nname = \"ledview\"\n[lead]\ncomponent = {:?}\nmode = \"default\"\ngoal = \"create x\\nwrite note.txt from the lead\\ndelete\"\n[[catalogue]]\nname = \"echoer\"\ncomponent = {:?}\n",
            teamhost_tests::LEADSCRIPT,
            teamhost_tests::ECHO,
        ),
    );
    let exit_file = tmp.path().join("exit-code");
    let tmux = Tmux {
        sock: tmp.path().join("sock"),
    };
    tmux.run_in_pane_sized(
        &format!(
            "'{bin}' --home '{home}' run '{manifest}'",
            bin = env!("CARGO_BIN_EXE_teamhost"),
            home = home.display(),
            manifest = manifest.display(),
        ),
        &exit_file,
        (80, 24),
    );
    // At 80 columns: the lead on the board, its request, whom it waits for.
    let screen = tmux.view_shows(&[
        "team ledview",
        "team-lead",
        "team-lead permission asks: Write",
    ]);
    assert!(
        screen.lines().all(|l| l.chars().count() <= 80),
        "nothing is drawn past the terminal's width:\n{screen}"
    );
    assert_eq!(screen.lines().count(), 24, "{screen}");
    // One key allows it, as the person.
    tmux.ok(&["send-keys", "-t", "live", "a"]);
    let code = tmux.wait_done(&exit_file);
    let shown = tmux.ok(&["capture-pane", "-p", "-S", "-200", "-t", "live"]);
    assert_eq!(code, "0", "the run failed; the pane shows:\n{shown}");
    assert!(shown.contains("the lead's run completed"), "{shown}");
    assert!(shown.contains("1 by the person"), "{shown}");
    assert!(
        shown.contains("Write from team-lead: allowed by the person"),
        "{shown}"
    );
    // The write ran, after the person's answer, in the lead's directory.
    let notes = find_files(tmp.path(), "note.txt");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(std::fs::read_to_string(&notes[0]).unwrap(), "from the lead");
}
