//! Helpers shared by the tests that run teams (`cli_run`, `nats_store`,
//! `orphans`, `resume`, `run_live`, `run_library`): the binary, a process's
//! output shown whole in a failure, a project of word-counting workers, and
//! waiting on file events (inotify) with a timeout only as a safety bound.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

/// Safety bound of every wait on files.
pub const LIMIT: Duration = Duration::from_secs(120);

/// The `teamhost` binary these tests built.
pub fn teamhost() -> Command {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
}

/// A finished process's exit status, stdout and stderr, for a failure.
pub fn shown(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits until `check` holds, looking again on every file event below
/// `dirs` (each created first, and watched recursively); panics naming
/// `what` after [`LIMIT`]. A process's end makes no file event: wait for
/// one on its pidfd instead.
pub fn wait_on_files(dirs: &[&Path], what: &str, mut check: impl FnMut() -> bool) {
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |_| {
        let _ = tx.send(());
    })
    .unwrap();
    for dir in dirs {
        std::fs::create_dir_all(dir).unwrap();
        // A recursive watch adds one per directory below `dir`; one that
        // went while it was added (a lock directory the host made and
        // removed) fails it with `NotFound`: watched again.
        let mut tries = 0;
        loop {
            match watcher.watch(dir, RecursiveMode::Recursive) {
                Ok(()) => break,
                Err(e)
                    if tries < 100
                        && matches!(&e.kind, notify::ErrorKind::Io(io)
                            if io.kind() == std::io::ErrorKind::NotFound) =>
                {
                    let _ = watcher.unwatch(dir);
                    tries += 1;
                }
                Err(e) => panic!("cannot watch {}: {e}", dir.display()),
            }
        }
    }
    let deadline = Instant::now() + LIMIT;
    while !check() {
        let left = deadline.saturating_duration_since(Instant::now());
        if rx.recv_timeout(left).is_err() {
            panic!("timed out waiting for {what}");
        }
    }
}

/// A directory with `data/{a,b,c}.txt` and a manifest `team.toml` for team
/// `name`: two workers, tasks 1–3 counting one file each, task 4 blocked by
/// them counting all three. `extra` is appended to the `[team]` table.
pub fn project(name: &str, extra: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("a.txt"), "one two three").unwrap();
    std::fs::write(data.join("b.txt"), "four five").unwrap();
    std::fs::write(data.join("c.txt"), "six").unwrap();
    let mut toml = format!("[team]\nname = {name:?}\n{extra}\n");
    for who in ["ann", "bob"] {
        toml += &format!(
            "[[teammate]]\nname = {who:?}\ncomponent = {:?}\nprompt = \"You count words.\"\ncwd = \"data\"\nmode = \"acceptEdits\"\n",
            teamhost_tests::WORKER
        );
    }
    for (subject, files, blocked_by) in [
        ("Count a", "- a.txt", "[]"),
        ("Count b", "- b.txt", "[]"),
        ("Count c", "- c.txt", "[]"),
        ("Count all", "- a.txt\\n- b.txt\\n- c.txt", "[1, 2, 3]"),
    ] {
        toml += &format!(
            "[[task]]\nsubject = {subject:?}\ndescription = \"{files}\"\nblocked_by = {blocked_by}\n"
        );
    }
    let manifest = dir.path().join("team.toml");
    std::fs::write(&manifest, toml).unwrap();
    (dir, manifest)
}

/// A host model config with one model, `fake` ($3 in, $15 out per million
/// tokens), played by the scripted provider from `script.json` beside it.
pub const SCRIPTED_MODELS: &str = r#"[providers.script]
dialect = "scripted"
script = "script.json"

[models.fake]
provider = "script"
id = "fake-1"
context_window = 100000
max_output_tokens = 8000
price = { input = 3.0, output = 15.0 }
"#;

/// Writes [`SCRIPTED_MODELS`] as `dir/models.toml` and `script` (the
/// scripted provider's JSON) as `dir/script.json`; returns the config's path.
pub fn write_scripted_models(dir: &Path, script: &str) -> PathBuf {
    std::fs::write(dir.join("models.toml"), SCRIPTED_MODELS).unwrap();
    std::fs::write(dir.join("script.json"), script).unwrap();
    dir.join("models.toml")
}
