//! `teamhost run --goal TEXT [--lead COMPONENT]` end to end (issue 29): the
//! real binary runs a team whose lead is the scripted lead component
//! (`guests/leadscript`), spawning `echo` teammates from the manifest's
//! `[[catalogue]]`, and ends when the lead deletes the team.

use std::path::Path;
use std::process::{Command, Output};

fn teamhost(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .expect("the teamhost binary runs")
}

fn shown(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A manifest for team `name` with an `echo` catalogue entry and `extra`.
fn manifest(dir: &Path, name: &str, extra: &str) -> std::path::PathBuf {
    let file = dir.join("team.toml");
    std::fs::write(
        &file,
        format!(
            "[team]\nname = {name:?}\n{extra}\n[[catalogue]]\nname = \"echoer\"\ncomponent = {:?}\nauto_claim = false\n",
            teamhost_tests::ECHO
        ),
    )
    .unwrap();
    file
}

#[test]
fn run_with_a_goal_and_a_lead_component_runs_until_the_lead_deletes_its_team() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = manifest(dir.path(), "cli-led", "");
    // An escape sequence in the goal reaches the lead as data and never the
    // person's terminal.
    let goal = "create x \u{1b}[2Jdescription\nspawn echoer e1 hello\nwait-message e1 hello\nshutdown e1\nwait-gone e1\ndelete";
    let out = teamhost(
        &home,
        &[
            "run",
            file.to_str().unwrap(),
            "--lines",
            "--timeout",
            "60",
            "--goal",
            goal,
            "--lead",
            teamhost_tests::LEADSCRIPT,
        ],
    );
    assert!(out.status.success(), "{}", shown(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the lead's run completed"),
        "{}",
        shown(&out)
    );
    assert!(
        !out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b),
        "{}",
        shown(&out)
    );
    let log = std::fs::read_to_string(home.join("logs/cli-led/team-lead.log")).unwrap();
    assert!(log.contains("spawn\tOK\te1@cli-led"), "{log}");
    assert!(log.contains("delete\tOK"), "{log}");
    // The echo teammate worked in its default directory beside the manifest.
    assert!(dir.path().join("work/e1").is_dir());
}

#[test]
fn run_with_a_lead_but_no_catalogue_or_no_goal_is_refused_with_what_to_add() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = dir.path().join("team.toml");
    std::fs::write(
        &file,
        format!(
            "[team]\nname = \"bare\"\n[[teammate]]\nname = \"e\"\ncomponent = {:?}\nprompt = \"p\"\n",
            teamhost_tests::ECHO
        ),
    )
    .unwrap();
    let out = teamhost(
        &home,
        &[
            "run",
            file.to_str().unwrap(),
            "--lines",
            "--goal",
            "delete",
            "--lead",
            teamhost_tests::LEADSCRIPT,
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[[catalogue]]"),
        "{}",
        shown(&out)
    );
    let file = manifest(dir.path(), "nogoal", "[lead]\n");
    let out = teamhost(
        &home,
        &[
            "run",
            file.to_str().unwrap(),
            "--lines",
            "--lead",
            teamhost_tests::LEADSCRIPT,
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--goal"),
        "{}",
        shown(&out)
    );
}
