//! Hooks reach teammates in other processes: the host hands its hooks to the
//! `teamhost teammate` processes its backends start, and a `teamhost teammate`
//! started by Claude Code runs the hooks of the project's
//! `.claude/settings.json`, Claude Code's own format.

mod backend_common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use backend_common::*;
use teamhost::backends::TeammateMode;
use teamhost::hooks::Hooks;
use teamhost::store::{Home, NewMember, NewTeam, OutgoingMessage, Store};

/// A hook command that appends its JSON input to `file`.
fn record_to(file: &std::path::Path) -> String {
    format!("cat >> '{}'; echo >> '{}'", file.display(), file.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_teammate_runs_the_hosts_hooks() {
    let marker = tempfile::NamedTempFile::new().unwrap();
    let f = Fixture::with_hooks(
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
fn a_teammate_started_by_claude_code_runs_the_projects_settings_hooks() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("claude"), tmp.path().join("project"));
    let marker = tmp.path().join("idle.json");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let settings = serde_json::json!({"hooks": {"TeammateIdle": [{"matcher": "", "hooks": [
        {"type": "command", "command": record_to(&marker), "timeout": 10}
    ]}]}});
    std::fs::write(dir.join(".claude/settings.json"), settings.to_string()).unwrap();

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
    // Its first idle: the hook ran just before it.
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
}
