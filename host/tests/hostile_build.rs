//! Hostile tests (issue 40, item 1): the manifest's `build` never runs,
//! reads or counts as a source a file a teammate can write, however the
//! manifest spells the teammate's directory. Real `teamhost` processes,
//! the real worker component; mallory's writes are made by the test into
//! mallory's directory (what a teammate in `acceptEdits` can do there).
//!
//! The arena: a project with teammates `ann` (in `data/`) and `mallory`
//! (in `work/mallory`), a link `tools -> work/mallory`, a sentinel
//! `outside/secret.txt` outside every teammate directory, and mallory's
//! `build.sh`, which would copy the sentinel to `leaked` and leave `pwned`
//! if anything ran it.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use crate::run_common::{shown, teamhost};

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// The arena, with mallory's directory spelled `mallory_cwd` and ann's
    /// build given as the TOML value `build` (with `workdir` when given).
    fn new(mallory_cwd: &str, build: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for d in ["data", "work/mallory", "outside"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        // Either worker may take the task.
        std::fs::write(p.join("data/a.txt"), "one two three").unwrap();
        std::fs::write(p.join("work/mallory/a.txt"), "one two three").unwrap();
        std::fs::write(p.join("outside/secret.txt"), "the sentinel").unwrap();
        std::os::unix::fs::symlink(p.join("work/mallory"), p.join("tools")).unwrap();
        std::fs::write(
            p.join("work/mallory/build.sh"),
            format!(
                "cp {outside}/secret.txt {root}/leaked; touch {root}/pwned\n",
                outside = p.join("outside").display(),
                root = p.display()
            ),
        )
        .unwrap();
        let toml = format!(
            "[team]\nname = \"b\"\n\
             [[teammate]]\nname = \"ann\"\ncomponent = \"target/worker.wasm\"\nprompt = \"You count words.\"\ncwd = \"data\"\nmode = \"acceptEdits\"\n{build}\n\
             [[teammate]]\nname = \"mallory\"\ncomponent = {worker:?}\nprompt = \"You count words.\"\ncwd = {mallory_cwd:?}\nmode = \"acceptEdits\"\n\
             [[task]]\nsubject = \"Count a\"\ndescription = \"- a.txt\"\n",
            worker = teamhost_tests::WORKER
        );
        std::fs::write(p.join("team.toml"), toml).unwrap();
        Project { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn teamhost(&self, args: &[&str]) -> Output {
        teamhost()
            .current_dir(self.path())
            .arg("--home")
            .arg(self.path().join("home"))
            .args(args)
            .output()
            .expect("the teamhost binary runs")
    }

    /// Nothing ran mallory's script and nothing read the sentinel.
    fn assert_untouched(&self, out: &Output) {
        assert!(!self.path().join("pwned").exists(), "{}", shown(out));
        assert!(!self.path().join("leaked").exists(), "{}", shown(out));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// ann's build: the worker copied into `target/`, with a workdir.
fn copy_build(workdir: &str, extra: &str) -> String {
    format!(
        "[teammate.build]\ncommand = \"{extra}mkdir -p target && cp {} target/worker.wasm\"\nworkdir = {workdir:?}",
        teamhost_tests::WORKER
    )
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_build_workdir_reaching_a_teammate_directory_by_dot_dot_or_a_link_is_refused_and_nothing_runs()
{
    for workdir in ["work/../work/mallory", "tools", "work/./mallory/"] {
        let build = format!("[teammate.build]\ncommand = \"sh build.sh\"\nworkdir = {workdir:?}");
        let p = Project::new("work/mallory", &build);
        for args in [&["check"][..], &["run"][..]] {
            let out = p.teamhost(args);
            assert!(!out.status.success(), "{workdir}: {args:?} {}", shown(&out));
            let e = stderr(&out);
            assert!(
                e.contains("build.workdir") && e.contains("a teammate can write"),
                "{workdir}: {args:?} {}",
                shown(&out)
            );
            p.assert_untouched(&out);
        }
    }
}

#[test]
fn a_build_command_naming_a_teammate_file_is_refused_and_nothing_runs() {
    for command in [
        "sh work/mallory/build.sh",
        "cd work/mallory && sh build.sh",
        "sh tools/build.sh",
        "sh ./work/../work/mallory/build.sh",
    ] {
        let build = format!("build = {command:?}");
        let p = Project::new("work/mallory", &build);
        for args in [&["check"][..], &["run"][..]] {
            let out = p.teamhost(args);
            assert!(!out.status.success(), "{command}: {args:?} {}", shown(&out));
            assert!(
                stderr(&out).contains("a directory a teammate can write"),
                "{command}: {args:?} {}",
                shown(&out)
            );
            p.assert_untouched(&out);
        }
    }
}

/// Sets `path`'s modification time `secs` from now.
fn touch_ahead(path: &Path, secs: u64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(
            std::fs::FileTimes::new().set_modified(SystemTime::now() + Duration::from_secs(secs)),
        )
        .unwrap();
}

#[test]
fn a_teammate_file_is_never_a_reason_to_build_however_its_directory_is_spelled() {
    for mallory_cwd in ["work/../work/mallory", "tools"] {
        let p = Project::new(mallory_cwd, &copy_build(".", ""));
        let out = p.teamhost(&["run"]);
        assert!(out.status.success(), "{mallory_cwd}: {}", shown(&out));
        assert!(
            stderr(&out).contains("building worker.wasm for ann (not built yet)"),
            "{}",
            shown(&out)
        );
        // Mallory writes a newer file in its directory: no reason to build.
        let planted: PathBuf = p.path().join("work/mallory/planted.rs");
        std::fs::write(&planted, "fn main() {}").unwrap();
        touch_ahead(&planted, 120);
        touch_ahead(&p.path().join("work/mallory/build.sh"), 120);
        let out = p.teamhost(&["run"]);
        assert!(out.status.success(), "{mallory_cwd}: {}", shown(&out));
        assert!(
            !stderr(&out).contains("building"),
            "{mallory_cwd}: a teammate's file made a build: {}",
            shown(&out)
        );
        p.assert_untouched(&out);
    }
}

#[test]
fn a_build_that_reaches_a_teammate_directory_by_a_route_no_check_spells_finds_it_empty() {
    // The words name no teammate directory (`work/*`), so the checks pass;
    // the mount namespace must hide mallory's script from the loop.
    let p = Project::new(
        "work/mallory",
        &copy_build(
            ".",
            "for f in work/*/build.sh; do [ -f $f ] && sh $f; done; ",
        ),
    );
    let out = p.teamhost(&["run"]);
    if !is_root() {
        // Without CAP_SYS_ADMIN no namespace is made, and the line says so.
        assert!(stderr(&out).contains("not hidden"), "{}", shown(&out));
        eprintln!("not root: the hiding itself is not tested here");
        return;
    }
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        stderr(&out).contains("teammate directories hidden"),
        "{}",
        shown(&out)
    );
    p.assert_untouched(&out);
    // The host's own view is unchanged: the script is still there.
    assert!(p.path().join("work/mallory/build.sh").is_file());
}
