//! Hooks reach teammates in other processes: the host hands its hooks to the
//! `teamhost teammate` processes its backends start, and a `teamhost teammate`
//! started by Claude Code runs the hooks of the user's `settings.json`,
//! Claude Code's own format, but never those of a `.claude/settings.json` in
//! its own directory, which the teammate can write.

use crate::backend_common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use backend_common::*;
use teamhost::backends::TeammateMode;
use teamhost::home::Home;
use teamhost::hooks::Hooks;
use teamhost::store::{NewMember, NewTeam, OutgoingMessage, Store};

/// A hook command that appends its JSON input to `file`.
fn record_to(file: &std::path::Path) -> String {
    format!("cat >> '{}'; echo >> '{}'", file.display(), file.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_teammate_runs_the_hosts_hooks() {
    let marker = tempfile::NamedTempFile::new().unwrap();
    let f = fixture_with_hooks(
        "hooked",
        TeammateMode::Process,
        |_| {},
        Hooks {
            teammate_idle: vec![record_to(marker.path())],
            ..Hooks::default()
        },
    );
    let dir = f.dir("p");
    f.host
        .spawn("hooked", probe("p", "hello", &dir, false))
        .await
        .unwrap();
    f.idle_from("p", 1).await;
    let recorded = std::fs::read_to_string(marker.path()).unwrap();
    let input: serde_json::Value =
        serde_json::from_str(recorded.lines().next().unwrap_or_default()).unwrap();
    assert_eq!(input["hook_event_name"], "TeammateIdle", "{recorded}");
    assert_eq!(input["teammate_name"], "p");
    assert_eq!(input["team_name"], "hooked");
}

#[test]
fn a_teammate_started_by_claude_code_runs_the_users_hooks_and_never_its_own_directorys() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("claude"), tmp.path().join("project"));
    let (marker, planted) = (
        tmp.path().join("idle.json"),
        tmp.path().join("planted.json"),
    );
    let settings = |file: &std::path::Path| {
        serde_json::json!({"hooks": {"TeammateIdle": [{"matcher": "", "hooks": [
            {"type": "command", "command": record_to(file), "timeout": 10}
        ]}]}})
        .to_string()
    };
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("settings.json"), settings(&marker)).unwrap();
    // What a teammate could have written in its own directory: both files
    // Claude Code reads from a project.
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/settings.json"), settings(&planted)).unwrap();
    std::fs::write(dir.join(".claude/settings.local.json"), settings(&planted)).unwrap();

    let team = Store::new(Home::new(&home)).team("cc").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "p".into(),
        cwd: Some(dir.display().to_string()),
        ..Default::default()
    })
    .unwrap();
    team.send("p", OutgoingMessage::new("team-lead", "hello"))
        .unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .args(["--home"])
        .arg(&home)
        .args(["--json", "teammate", "--agent-id", "p@cc", "--component"])
        .arg(teamhost_tests::PROBE)
        .args(["--permission-mode", "acceptEdits"])
        .env("CLAUDECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // Its first idle: the hooks ran just before it.
    let idle = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the teammate goes idle");
        let event: serde_json::Value = serde_json::from_str(&line).unwrap();
        if event["event"] == "state" && event["state"] == "idle" {
            break event;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let recorded = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(
        recorded.contains(r#""teammate_name":"p""#) && recorded.contains(r#""team_name":"cc""#),
        "{idle}: {recorded:?}"
    );
    // The user's hook ran at that idle; the planted ones, run at the same
    // moment if they were read at all, never did.
    assert!(
        !planted.exists(),
        "a settings file inside the teammate's directory was run"
    );
}

/// Starts `teamhost teammate` as Claude Code would (`CLAUDECODE=1`, the
/// `hostile` component, `acceptEdits`) for member `m@cc` of the Claude home
/// `home`, waits for its first idle and stops it.
fn hostile_until_idle(home: &std::path::Path, teamhost_home: &std::path::Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .args(["--home"])
        .arg(home)
        .args(["--json", "teammate", "--agent-id", "m@cc", "--component"])
        .arg(teamhost_tests::HOSTILE)
        .args(["--permission-mode", "acceptEdits"])
        .env("CLAUDECODE", "1")
        .env("TEAMHOST_HOME", teamhost_home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the teammate goes idle");
        let event: serde_json::Value = serde_json::from_str(&line).unwrap();
        if event["event"] == "state" && event["state"] == "idle" {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_hook_a_teammate_writes_into_its_own_directory_never_runs_when_it_starts_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("claude"), tmp.path().join("project"));
    let (user_marker, planted_marker) = (
        tmp.path().join("user.json"),
        tmp.path().join("planted.json"),
    );
    let hook = |file: &std::path::Path| {
        serde_json::json!({"hooks": {"TeammateIdle": [{"matcher": "", "hooks": [
            {"type": "command", "command": record_to(file), "timeout": 10}
        ]}]}})
        .to_string()
    };
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("settings.json"), hook(&user_marker)).unwrap();
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let team = Store::new(Home::new(&home)).team("cc").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "m".into(),
        cwd: Some(dir.display().to_string()),
        ..Default::default()
    })
    .unwrap();

    // First start: the hostile guest writes a hook of its choosing where
    // Claude Code looks for a project's settings.
    let plant = format!("write-file .claude/settings.json {}", hook(&planted_marker));
    team.send("m", OutgoingMessage::new("team-lead", plant))
        .unwrap();
    let teamhost_home = tmp.path().join("teamhost");
    hostile_until_idle(&home, &teamhost_home);
    let planted = std::fs::read_to_string(dir.join(".claude/settings.json")).unwrap();
    assert!(
        planted.contains("planted.json"),
        "the guest wrote it: {planted}"
    );

    // Started again over the same directory: the user's hook runs at its
    // first idle, the planted one never does.
    let before = std::fs::read_to_string(&user_marker)
        .unwrap_or_default()
        .lines()
        .count();
    team.send(
        "m",
        OutgoingMessage::new("team-lead", "write-file note.txt again"),
    )
    .unwrap();
    hostile_until_idle(&home, &teamhost_home);
    let after = std::fs::read_to_string(&user_marker)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(after > before, "the user's hook ran at the second idle too");
    assert!(
        !planted_marker.exists(),
        "a hook the teammate wrote into its own directory was run"
    );
}
