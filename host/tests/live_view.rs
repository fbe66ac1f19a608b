//! The live view in a real terminal: `teamhost run` inside tmux on a private
//! socket. The screen (read with `capture-pane`) shows the teammates, their
//! states and the task progress; a key press (`send-keys`) answers a
//! teammate's permission request, and the `permission_response` is on disk.
//! The run's end is a `tmux wait-for` channel the pane's shell signals.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use teamhost::protocol::{Parsed, PermissionOutcome, ProtocolMessage};
use teamhost::store::{Home, Store};

/// A tmux server on a private socket, killed on drop.
struct Tmux {
    sock: PathBuf,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .args(args)
            .output()
            .expect("tmux runs (scripts/test installs it)")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args);
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Polls `capture-pane` (tmux has no event for "the screen changed"):
    /// at most 600 tries, 50 ms apart.
    fn screen_shows(&self, needles: &[&str]) -> String {
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
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
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
    let script = format!(
        "'{bin}' --home '{home}' run '{manifest}' --keep --teammate-mode in-process; echo $? > '{exit}'; tmux -S '{sock}' wait-for -S run-done; exec cat",
        bin = env!("CARGO_BIN_EXE_teamhost"),
        home = home.display(),
        manifest = manifest.display(),
        exit = exit_file.display(),
        sock = tmux.sock.display(),
    );
    tmux.ok(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "live",
        "-x",
        "180",
        "-y",
        "45",
        &script,
    ]);

    // The board: both teammates, the asker waiting, the task done, the request.
    let screen = tmux.screen_shows(&[
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
    let waited = Command::new("timeout")
        .args(["120", "tmux", "-S"])
        .arg(&tmux.sock)
        .args(["wait-for", "run-done"])
        .status()
        .unwrap();
    assert!(waited.success(), "the run did not end within 120 s");
    let code = std::fs::read_to_string(&exit_file).unwrap();
    let screen = tmux.ok(&["capture-pane", "-p", "-S", "-100", "-t", "live"]);
    assert_eq!(
        code.trim(),
        "0",
        "the run failed; the pane shows:\n{screen}"
    );

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
