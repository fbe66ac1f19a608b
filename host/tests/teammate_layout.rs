//! `teamhost teammate` refuses, at start, a directory that holds what the
//! host trusts: a teammate can write every file of its directory, so its
//! component, or the home holding its team's files, must lie elsewhere. The
//! real binary, started the way Claude Code starts it (`CLAUDECODE=1`, the
//! component from `$TEAMHOST_COMPONENT`, its directory the project).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use teamhost::home::Home;
use teamhost::store::{NewMember, NewTeam, OutgoingMessage, Store};

/// Registers member `p` of team `cc` in `home`, working in `dir`, with a
/// message waiting.
fn register(home: &Path, dir: &Path) {
    let team = Store::new(Home::new(home)).team("cc").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "p".into(),
        cwd: Some(dir.display().to_string()),
        ..Default::default()
    })
    .unwrap();
    team.send("p", OutgoingMessage::new("team-lead", "hello"))
        .unwrap();
}

/// Runs `teamhost teammate` for `p@cc` and returns how it ended; a teammate
/// that starts instead of refusing fails the test when the bound is reached.
fn teammate(home: &Path, dir: &Path, component: &Path, scratch: &Path) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(["teammate", "--agent-id", "p@cc"])
        .current_dir(dir)
        .env("CLAUDECODE", "1")
        .env("TEAMHOST_COMPONENT", component)
        .env("TEAMHOST_HOME", scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("teamhost teammate started instead of refusing the layout");
        }
    }
}

fn refusal(out: &Output) -> String {
    assert!(!out.status.success(), "it started: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_component_inside_the_teammates_directory_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("claude"), tmp.path().join("project"));
    std::fs::create_dir_all(&dir).unwrap();
    let component = dir.join("probe.wasm");
    std::fs::copy(teamhost_tests::PROBE, &component).unwrap();
    register(&home, &dir);
    let e = refusal(&teammate(&home, &dir, &component, &tmp.path().join("th")));
    assert!(e.contains(&dir.display().to_string()), "{e}");
    assert!(e.contains(&component.display().to_string()), "{e}");
    assert!(e.contains("component"), "{e}");
    assert!(!dir.join("turns.log").exists(), "the guest never ran");
}

#[test]
fn a_home_inside_the_teammates_directory_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    let home = dir.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    register(&home, &dir);
    let component = Path::new(teamhost_tests::PROBE);
    let e = refusal(&teammate(&home, &dir, component, &tmp.path().join("th")));
    assert!(e.contains(&dir.display().to_string()), "{e}");
    assert!(e.contains(&home.display().to_string()), "{e}");
    assert!(!dir.join("turns.log").exists(), "the guest never ran");
}
