//! The newcomer's path through the real `teamhost` binary: `teamhost new`
//! (templates shipped in the binary), `teamhost run` finding `./team.toml`,
//! and the manifest's `build` command run for a component missing or older
//! than its sources (a warning without one).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use crate::run_common::{shown, teamhost};

/// Runs `teamhost --home HOME ARGS…` in `dir`.
fn teamhost_in(dir: &Path, home: &Path, args: &[&str]) -> Output {
    teamhost()
        .current_dir(dir)
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .expect("the teamhost binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every file below `dir`, relative, but build output.
fn files(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name();
            if e.file_type().unwrap().is_dir() {
                if !["target", "bindings", "types", "__pycache__", "node_modules"]
                    .iter()
                    .any(|s| name == *s)
                {
                    walk(root, &p, out);
                }
            } else {
                out.insert(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn new_writes_the_template_and_the_wit_contract_personalised() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = teamhost_in(tmp.path(), &home, &["new", "my-bot"]);
    assert!(out.status.success(), "{}", shown(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("next: cd my-bot && teamhost run"),
        "{stdout}"
    );
    let dir = tmp.path().join("my-bot");

    // Exactly the template's files, then wit/ with its deps.
    let written = files(&dir);
    let mut expected = files(&repo().join("templates/teammate"));
    expected.retain(|f| !f.starts_with("work/out/"));
    expected.extend(
        files(&repo().join("wit"))
            .into_iter()
            .map(|f| format!("wit/{f}")),
    );
    assert_eq!(written, expected);
    assert!(written.iter().any(|f| f.starts_with("wit/deps/")));

    let toml = std::fs::read_to_string(dir.join("team.toml")).unwrap();
    assert!(toml.contains("name = \"my-bot\""), "{toml}");
    assert!(toml.contains("release/my_bot.wasm\""), "{toml}");
    assert!(
        toml.contains("command = \"cargo build --release\""),
        "{toml}"
    );
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("name = \"my-bot\""), "{cargo}");
    // Nothing in the home: `new` needs none.
    assert!(!home.exists());
}

#[test]
fn new_python_writes_an_executable_build_named_after_the_teammate() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let out = teamhost_in(
        tmp.path(),
        &tmp.path().join("home"),
        &["new", "--lang", "python", "scribe", "py/scribe"],
    );
    assert!(out.status.success(), "{}", shown(&out));
    // It says what a Python build needs, and nothing of JavaScript's.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("componentize-py"), "{said}");
    assert!(
        !said.contains("componentize-js") && !said.contains("tsc"),
        "{said}"
    );
    let js = teamhost_in(
        tmp.path(),
        &tmp.path().join("home"),
        &["new", "--lang", "js", "scribe", "js/scribe"],
    );
    let said = String::from_utf8_lossy(&js.stdout);
    assert!(said.contains("componentize-js"), "{said}");
    // Its ./build never looks on the PATH: the note does not promise it.
    assert!(!said.contains("PATH"), "{said}");
    let build = tmp.path().join("py/scribe/build");
    assert_eq!(
        std::fs::metadata(&build).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let text = std::fs::read_to_string(&build).unwrap();
    assert!(text.contains("\nname=scribe\n"), "{text}");
    assert!(!text.contains("@POLYGLOT@"), "{text}");
    let toml = std::fs::read_to_string(tmp.path().join("py/scribe/team.toml")).unwrap();
    assert!(
        toml.contains("component = \"target/scribe.wasm\""),
        "{toml}"
    );
    assert!(tmp.path().join("py/scribe/app.py").is_file());
}

#[test]
fn new_refuses_a_non_empty_directory_and_bad_names_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = tmp.path().join("taken");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let out = teamhost_in(tmp.path(), &home, &["new", "bot", "taken"]);
    assert!(!out.status.success(), "{}", shown(&out));
    let e = stderr(&out);
    assert!(e.contains("already exists and is not empty"), "{e}");
    assert!(e.contains("teamhost new NAME DIR"), "{e}");
    assert_eq!(files(&dir), BTreeSet::from(["notes.txt".to_string()]));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );

    for (name, says) in [
        ("2bot", "not a valid teammate name"),
        ("team-lead", "reserved"),
    ] {
        let out = teamhost_in(tmp.path(), &home, &["new", name]);
        assert!(!out.status.success(), "{}", shown(&out));
        assert!(stderr(&out).contains(says), "{}", shown(&out));
        assert!(!tmp.path().join(name).exists());
    }

    // An empty directory is fine.
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let out = teamhost_in(tmp.path(), &home, &["new", "bot", "empty"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(tmp.path().join("empty/team.toml").is_file());
}

#[test]
fn run_without_a_manifest_names_the_file_it_looked_for_and_teamhost_new() {
    let tmp = tempfile::tempdir().unwrap();
    let out = teamhost_in(tmp.path(), &tmp.path().join("home"), &["run"]);
    assert!(!out.status.success(), "{}", shown(&out));
    let e = stderr(&out);
    assert!(
        e.contains(&tmp.path().join("team.toml").display().to_string()),
        "{e}"
    );
    assert!(e.contains("teamhost new NAME"), "{e}");
    assert!(!tmp.path().join("home/teams").exists());
}

/// A project whose teammate `ann` is the real worker component, copied
/// into `target/worker.wasm` by its build command (`build` is the TOML
/// value, or nothing); one task counting `data/a.txt`; a source file
/// `src.txt`.
fn project(team: &str, build: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/a.txt"), "one two three").unwrap();
    std::fs::write(dir.path().join("src.txt"), "the sources").unwrap();
    let build = build.map(|b| format!("build = {b}\n")).unwrap_or_default();
    let toml = format!(
        "[team]\nname = {team:?}\n[[teammate]]\nname = \"ann\"\ncomponent = \"target/worker.wasm\"\n{build}prompt = \"You count words.\"\ncwd = \"data\"\nmode = \"acceptEdits\"\n[[task]]\nsubject = \"Count a\"\ndescription = \"- a.txt\"\n"
    );
    std::fs::write(dir.path().join("team.toml"), toml).unwrap();
    dir
}

fn copy_worker() -> String {
    format!(
        "\"mkdir -p target && cp {} target/worker.wasm\"",
        teamhost_tests::WORKER
    )
}

/// Sets `path`'s modification time `secs` from now.
fn touch(path: &Path, secs: i64) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    if !path.exists() {
        std::fs::write(path, "").unwrap();
    }
    let t = if secs >= 0 {
        SystemTime::now() + Duration::from_secs(secs as u64)
    } else {
        SystemTime::now() - Duration::from_secs((-secs) as u64)
    };
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(t))
        .unwrap();
}

#[test]
fn run_finds_team_toml_here_builds_a_missing_component_and_rebuilds_a_stale_one() {
    let dir = project("built", Some(&copy_worker()));
    let home = dir.path().join("home");
    let wasm = dir.path().join("target/worker.wasm");

    let out = teamhost_in(dir.path(), &home, &["run"]);
    assert!(out.status.success(), "{}", shown(&out));
    let e = stderr(&out);
    assert!(
        e.contains(&format!("using {}", dir.path().join("team.toml").display())),
        "{e}"
    );
    assert!(
        e.contains("building worker.wasm for ann (not built yet)"),
        "{e}"
    );
    assert!(wasm.is_file());

    // Up to date: no build.
    touch(&dir.path().join("src.txt"), -60);
    let out = teamhost_in(dir.path(), &home, &["run"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(!stderr(&out).contains("building"), "{}", shown(&out));

    // A teammate's own files are never sources: no build.
    std::fs::write(dir.path().join("data/new.txt"), "written by ann").unwrap();
    touch(&dir.path().join("data/new.txt"), 60);
    let out = teamhost_in(dir.path(), &home, &["run"]);
    assert!(!stderr(&out).contains("building"), "{}", shown(&out));

    // A source changed after the build: built again.
    touch(&dir.path().join("src.txt"), 60);
    let out = teamhost_in(dir.path(), &home, &["run"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        stderr(&out).contains("building worker.wasm for ann (older than src.txt)"),
        "{}",
        shown(&out)
    );
}

#[test]
fn run_warns_about_a_stale_component_without_a_build_command() {
    let dir = project("stale", None);
    std::fs::create_dir(dir.path().join("target")).unwrap();
    std::fs::copy(
        teamhost_tests::WORKER,
        dir.path().join("target/worker.wasm"),
    )
    .unwrap();
    // What a build does not read is no source: a log, a note, a teammate's
    // output beside the manifest.
    for other in ["ask.log", "notes.md", "out/result.txt"] {
        touch(&dir.path().join(other), 60);
    }
    let out = teamhost_in(dir.path(), &dir.path().join("home"), &["run", "team.toml"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(!stderr(&out).contains("is older than"), "{}", shown(&out));
    // A crate's source is.
    touch(&dir.path().join("src/lib.rs"), 60);
    let out = teamhost_in(dir.path(), &dir.path().join("home"), &["run", "team.toml"]);
    assert!(out.status.success(), "{}", shown(&out));
    let e = stderr(&out);
    assert!(e.contains("is older than its source"), "{e}");
    assert!(e.contains("src/lib.rs"), "{e}");
    assert!(e.contains("build = "), "{e}");
}

/// A component outside the manifest's directory, named through `..`, is no
/// file of that project: what changes beside the manifest says nothing of
/// its age (`proj/../target` lexically starts with `proj`).
#[test]
fn run_does_not_judge_a_component_outside_the_project_by_its_files() {
    let dir = project("outside", None);
    let proj = dir.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    for f in ["team.toml", "src.txt", "data"] {
        std::fs::rename(dir.path().join(f), proj.join(f)).unwrap();
    }
    let toml = std::fs::read_to_string(proj.join("team.toml")).unwrap();
    std::fs::write(
        proj.join("team.toml"),
        toml.replace("\"target/worker.wasm\"", "\"../target/worker.wasm\""),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    std::fs::copy(
        teamhost_tests::WORKER,
        dir.path().join("target/worker.wasm"),
    )
    .unwrap();
    touch(&proj.join("src.txt"), 60);
    let out = teamhost_in(&proj, &dir.path().join("home"), &["run", "team.toml"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(!stderr(&out).contains("older than"), "{}", shown(&out));
}

#[test]
fn a_failing_build_starts_nothing_and_says_what_to_fix() {
    let dir = project("broken", Some("\"echo the compiler says no >&2; exit 3\""));
    let home = dir.path().join("home");
    let out = teamhost_in(dir.path(), &home, &["run", "--json"]);
    assert!(!out.status.success(), "{}", shown(&out));
    let e = stderr(&out);
    assert!(e.contains("the compiler says no"), "{e}");
    assert!(e.contains("failed"), "{e}");
    assert!(e.contains("nothing was started"), "{e}");
    // The build's output went to stderr: stdout is the run's JSON alone.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("compiler"));
    assert!(!home.join("teams/broken").exists());
}

#[test]
fn a_build_that_would_run_in_a_teammate_directory_is_refused() {
    let dir = project("inside", Some("{ command = \"make\", workdir = \"data\" }"));
    let out = teamhost_in(dir.path(), &dir.path().join("home"), &["run"]);
    assert!(!out.status.success(), "{}", shown(&out));
    let e = stderr(&out);
    assert!(e.contains("build.workdir"), "{e}");
    assert!(e.contains("a teammate can write"), "{e}");
    assert!(!dir.path().join("target").exists(), "no build ran");
}

#[test]
fn a_python_syntax_error_stops_the_build_in_run_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = teamhost_in(tmp.path(), &home, &["new", "--lang", "python", "scribe"]);
    assert!(out.status.success(), "{}", shown(&out));
    let dir = tmp.path().join("scribe");
    std::fs::write(dir.join("oops.py"), "x = 1\ndef broken(:\n    pass\n").unwrap();
    // The check needs only a python3, not the componentize-py toolchain.
    let out = teamhost()
        .current_dir(&dir)
        .env("TEAMHOST_POLYGLOT", tmp.path().join("no-toolchain"))
        .arg("--home")
        .arg(&home)
        .arg("run")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", shown(&out));
    let e = stderr(&out);
    assert!(
        e.contains("building scribe.wasm for scribe (not built yet): ./build"),
        "{e}"
    );
    assert!(e.contains("./oops.py:2:"), "{e}");
    assert!(e.contains("SyntaxError"), "{e}");
    assert!(e.contains("fix the syntax error above"), "{e}");
    assert!(
        !e.contains("componentize-py not found"),
        "checked before the tools: {e}"
    );
    assert!(!home.join("teams/scribe").exists());
}
