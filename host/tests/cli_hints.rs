//! The hints the CLI prints are commands that work: each test provokes an
//! error through the real binary, takes the command the error suggests
//! (between backticks) and runs it, asserting it is accepted. And what an
//! error says is said once: an OS error is not written twice.

use std::path::Path;
use std::process::{Command, Output};

fn teamhost(home: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_teamhost"));
    if let Some(home) = home {
        cmd.arg("--home").arg(home);
    }
    cmd.env_remove("TEAMHOST_HOME").args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The commands between backticks in `text` that start with `teamhost `.
fn suggested(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("teamhost "))
        .map(str::to_string)
        .collect()
}

/// Writes `team.toml` in `dir`: team `team`, one worker counting
/// `data/a.txt`, one task. Returns the manifest's path.
fn one_worker_team(dir: &Path, team: &str) -> std::path::PathBuf {
    std::fs::create_dir(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/a.txt"), "one two").unwrap();
    let manifest = dir.join("team.toml");
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = {team:?}\n[[teammate]]\nname = \"ann\"\ncomponent = {:?}\nprompt = \"Count.\"\ncwd = \"data\"\nmode = \"acceptEdits\"\n[[task]]\nsubject = \"Count a\"\ndescription = \"- a.txt\"\n",
            teamhost_tests::WORKER
        ),
    )
    .unwrap();
    manifest
}

/// Runs a suggested `teamhost …` command with the real binary in `home`.
fn run_suggested(home: &Path, command: &str) -> Output {
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    teamhost(Some(home), &args)
}

#[test]
fn the_hint_for_a_missing_team_creates_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = teamhost(Some(tmp.path()), &["status", "--team", "nope"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    let hints = suggested(&err);
    assert_eq!(hints, ["teamhost team create nope"], "{err}");
    let done = run_suggested(tmp.path(), &hints[0]);
    assert!(done.status.success(), "{}", stderr(&done));
    let again = teamhost(Some(tmp.path()), &["status", "--team", "nope"]);
    assert!(again.status.success(), "{}", stderr(&again));
}

#[test]
fn the_hint_for_a_missing_task_lists_the_tasks() {
    let tmp = tempfile::tempdir().unwrap();
    let made = teamhost(Some(tmp.path()), &["team", "create", "t"]);
    assert!(made.status.success(), "{}", stderr(&made));
    let out = teamhost(Some(tmp.path()), &["task", "get", "--team", "t", "9"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    let hints = suggested(&err);
    assert_eq!(hints, ["teamhost task list --team t"], "{err}");
    let done = run_suggested(tmp.path(), &hints[0]);
    assert!(done.status.success(), "{}", stderr(&done));
}

#[test]
fn an_unwritable_home_names_the_flag_and_the_variable_that_choose_another() {
    // Nothing can be made under /proc, even by root.
    let bad = Path::new("/proc/teamhost-no-home/home");
    let out = teamhost(Some(bad), &["team", "create", "t"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("the home /proc/teamhost-no-home/home cannot be used")
            && err.contains("--home DIR")
            && err.contains("TEAMHOST_HOME"),
        "{err}"
    );
    assert!(!bad.exists());
    // Both ways the hint names work.
    let tmp = tempfile::tempdir().unwrap();
    let flag = teamhost(Some(&tmp.path().join("a")), &["team", "create", "t"]);
    assert!(flag.status.success(), "{}", stderr(&flag));
    let var = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .env("TEAMHOST_HOME", tmp.path().join("b"))
        .args(["team", "create", "t"])
        .output()
        .unwrap();
    assert!(var.status.success(), "{}", stderr(&var));
    assert!(tmp.path().join("b/teams/t/config.json").is_file());
}

#[test]
fn a_home_checked_but_not_there_yet_is_left_unmade() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("new/home");
    let out = teamhost(Some(&home), &["team", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!tmp.path().join("new").exists());
}

#[test]
fn an_os_error_is_written_once() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere/team.toml");
    let out = teamhost(Some(tmp.path()), &["run", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
}

#[test]
fn every_limit_message_names_a_key_the_manifest_accepts() {
    // The limit messages write `([teammate.limits] KEY)`; each KEY must be
    // one a manifest may set.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut keys = std::collections::BTreeSet::new();
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for part in text.split("[teammate.limits] ").skip(1) {
                    let key: String = part
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !key.is_empty() {
                        keys.insert(key);
                    }
                }
            }
        }
    }
    for key in [
        "memory_mb",
        "cpu_per_turn_secs",
        "wall_per_turn_secs",
        "disk_mb",
    ] {
        assert!(keys.contains(key), "no limit message names {key}: {keys:?}");
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("w.wasm"), b"").unwrap();
    for key in &keys {
        let text = format!(
            "[team]\nname = \"t\"\n[[teammate]]\nname = \"a\"\ncomponent = \"w.wasm\"\nprompt = \"p\"\n[teammate.limits]\n{key} = 1\n"
        );
        let parsed = teamhost::manifest::Manifest::parse(&text, &tmp.path().join("team.toml"));
        assert!(parsed.is_ok(), "{key}: {:?}", parsed.err());
    }
}

#[test]
fn the_hints_for_a_team_that_already_exists_resume_or_replace_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let manifest = one_worker_team(tmp.path(), "again");
    let made = teamhost(Some(&home), &["team", "create", "again"]);
    assert!(made.status.success(), "{}", stderr(&made));
    let out = teamhost(Some(&home), &["run", manifest.to_str().unwrap()]);
    assert!(!out.status.success());
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    let hints = suggested(&text);
    let replace = hints
        .iter()
        .find(|h| h.starts_with("teamhost run --replace "))
        .unwrap_or_else(|| panic!("no --replace hint: {text}"));
    assert!(
        hints
            .iter()
            .any(|h| h.starts_with("teamhost run --resume ")),
        "{text}"
    );
    let done = run_suggested(&home, replace);
    assert!(
        done.status.success(),
        "{}{}",
        String::from_utf8_lossy(&done.stdout),
        stderr(&done)
    );
}

/// A team left by a run that ended with `--keep`: running it again is
/// refused with a hint to resume it, and the hinted `run --resume` works.
#[test]
fn the_resume_hint_for_a_team_left_behind_resumes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let manifest = one_worker_team(tmp.path(), "left");
    let m = manifest.to_str().unwrap();
    let first = teamhost(Some(&home), &["run", m, "--keep", "--lines"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let again = teamhost(Some(&home), &["run", m, "--lines"]);
    assert!(!again.status.success());
    let text = stderr(&again);
    let resume = suggested(&text)
        .into_iter()
        .find(|h| h.starts_with("teamhost run --resume "))
        .unwrap_or_else(|| panic!("no --resume hint: {text}"));
    // The hint names the manifest as it was given; run it from its directory.
    let done = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .current_dir(tmp.path())
        .env_remove("TEAMHOST_HOME")
        .arg("--home")
        .arg(&home)
        .args(resume.split_whitespace().skip(1))
        .arg("--lines")
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}{}",
        String::from_utf8_lossy(&done.stdout),
        stderr(&done)
    );
    assert!(
        String::from_utf8_lossy(&done.stdout).contains("shutdown"),
        "the resumed run ran to its end: {}",
        String::from_utf8_lossy(&done.stdout)
    );
}
