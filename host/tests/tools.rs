//! The tool executors on real temporary directories and real processes:
//! what each tool does inside the capability directory, and that no input
//! reaches outside it (a sentinel file next to the directory stays as it was).

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use teamhost::sandbox::{BashInput, EditInput, GlobInput, GrepInput, ReadInput, WriteInput};
use teamhost::tools::confine::{kernel_abi, MIN_ABI};
use teamhost::tools::{Confinement, Enforcement, GrepMode, ToolBox, ToolError, ToolLimits};

const SENTINEL: &str = "outside, untouched\n";

/// A temporary tree: `cap/` (the capability directory, with three hostile
/// symlinks planted in it) and `outside/sentinel.txt` beside it.
struct Fixture {
    _tmp: tempfile::TempDir,
    cap: PathBuf,
    outside: PathBuf,
    tools: ToolBox,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_limits(ToolLimits::default())
    }

    fn with_limits(limits: ToolLimits) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let cap = tmp.path().join("cap");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&cap).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("sentinel.txt"), SENTINEL).unwrap();
        symlink("../outside", cap.join("escape")).unwrap();
        symlink("../outside/sentinel.txt", cap.join("sentinel-link")).unwrap();
        symlink("/etc/passwd", cap.join("passwd-link")).unwrap();
        let tools = ToolBox::open(&cap, limits).unwrap();
        Fixture {
            _tmp: tmp,
            cap: fs::canonicalize(cap).unwrap(),
            outside,
            tools,
        }
    }

    fn put(&self, rel: &str, content: &str) {
        let path = self.cap.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.cap.join(rel)).unwrap()
    }

    /// Nothing outside the directory changed.
    fn assert_outside_untouched(&self) {
        assert_eq!(
            fs::read_to_string(self.outside.join("sentinel.txt")).unwrap(),
            SENTINEL
        );
        let names: Vec<_> = fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["sentinel.txt"], "a file appeared outside");
    }

    fn bash(&self, command: &str) -> teamhost::tools::BashOutput {
        self.tools
            .bash(&bash(command, None), Confinement::Required)
            .unwrap()
    }
}

fn read(path: &str) -> ReadInput {
    ReadInput {
        file_path: path.into(),
        offset: None,
        limit: None,
    }
}

fn write(path: &str, content: &str) -> WriteInput {
    WriteInput {
        file_path: path.into(),
        content: content.into(),
    }
}

fn edit(path: &str, old: &str, new: &str) -> EditInput {
    EditInput {
        file_path: path.into(),
        old_string: old.into(),
        new_string: new.into(),
        replace_all: None,
    }
}

fn glob(pattern: &str, path: Option<&str>) -> GlobInput {
    GlobInput {
        pattern: pattern.into(),
        path: path.map(Into::into),
    }
}

fn grep(pattern: &str) -> GrepInput {
    GrepInput {
        pattern: pattern.into(),
        ..GrepInput::default()
    }
}

fn bash(command: &str, timeout: Option<u64>) -> BashInput {
    BashInput {
        command: command.into(),
        timeout,
    }
}

fn keep_all(_: &Path) -> bool {
    true
}

fn landlock() -> bool {
    kernel_abi() >= MIN_ABI
}

#[test]
fn a_tool_box_can_be_shared_across_blocking_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ToolBox>();
}

// ---------------------------------------------------------------------------
// Read

#[test]
fn read_numbers_lines_like_cat_n_and_honours_offset_and_limit() {
    let f = Fixture::new();
    f.put("a.txt", "one\ntwo\r\nthree\nfour\n");
    let all = f.tools.read(&read("a.txt")).unwrap();
    assert_eq!(
        all.content,
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    assert_eq!(
        (all.lines, all.next_offset, all.truncated),
        (4, None, false)
    );

    let window = f
        .tools
        .read(&ReadInput {
            offset: Some(2),
            limit: Some(2),
            ..read("a.txt")
        })
        .unwrap();
    assert_eq!(window.content, "     2\ttwo\n     3\tthree\n");
    assert_eq!((window.start_line, window.next_offset), (2, Some(4)));
}

#[test]
fn read_refuses_binary_files_non_utf8_text_and_directories() {
    let f = Fixture::new();
    fs::write(f.cap.join("bin"), b"ELF\0\x01\x02").unwrap();
    fs::write(f.cap.join("latin1"), b"caf\xe9\n").unwrap();
    fs::create_dir(f.cap.join("d")).unwrap();
    for (path, says) in [("bin", "binary"), ("latin1", "UTF-8"), ("d", "directory")] {
        match f.tools.read(&read(path)) {
            Err(ToolError::Invalid(msg)) => assert!(msg.contains(says), "{msg}"),
            other => panic!("{path}: {other:?}"),
        }
    }
    assert!(matches!(
        f.tools.read(&read("missing")),
        Err(ToolError::NotFound(_))
    ));
}

#[test]
fn read_edit_and_grep_refuse_a_fifo_instead_of_hanging() {
    let f = Fixture::new();
    let fifo = f.cap.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    assert!(matches!(
        f.tools.read(&read("pipe")),
        Err(ToolError::Invalid(_))
    ));
    assert!(matches!(
        f.tools.edit(&edit("pipe", "a", "b")),
        Err(ToolError::Invalid(_))
    ));
    let out = f.tools.grep(&grep("x"), &keep_all).unwrap();
    assert!(out.files.is_empty());
}

#[test]
fn read_stops_at_the_output_cap_and_says_where_to_continue() {
    let f = Fixture::with_limits(ToolLimits {
        max_output_bytes: 100,
        max_line_chars: 10,
        ..ToolLimits::default()
    });
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    f.put("long.txt", &text);
    let out = f.tools.read(&read("long.txt")).unwrap();
    assert!(out.truncated);
    assert!(out.content.len() <= 100);
    assert_eq!(out.next_offset, Some(out.lines + 1));

    f.put("wide.txt", &"x".repeat(50));
    let wide = f.tools.read(&read("wide.txt")).unwrap();
    assert_eq!(wide.content, format!("     1\t{}…\n", "x".repeat(10)));
}

#[test]
fn read_accepts_an_absolute_path_inside_the_directory() {
    let f = Fixture::new();
    f.put("src/main.rs", "fn main() {}\n");
    let abs = f.cap.join("src/main.rs");
    let out = f.tools.read(&read(abs.to_str().unwrap())).unwrap();
    assert_eq!(out.content, "     1\tfn main() {}\n");
    let dotted = f.tools.read(&read("./src/../src/main.rs")).unwrap();
    assert_eq!(dotted.lines, 1);
}

// ---------------------------------------------------------------------------
// Write and Edit

#[test]
fn write_creates_parents_replaces_atomically_and_keeps_permissions() {
    let f = Fixture::new();
    let out = f.tools.write(&write("deep/er/new.txt", "hello")).unwrap();
    assert_eq!(
        (out.path.as_str(), out.bytes, out.created),
        ("deep/er/new.txt", 5, true)
    );
    assert_eq!(f.get("deep/er/new.txt"), "hello");

    f.put("run.sh", "#!/bin/sh\n");
    fs::set_permissions(f.cap.join("run.sh"), fs::Permissions::from_mode(0o751)).unwrap();
    let out = f
        .tools
        .write(&write("run.sh", "#!/bin/sh\necho hi\n"))
        .unwrap();
    assert!(!out.created);
    let mode = fs::metadata(f.cap.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o751);
    let leftovers: Vec<_> = fs::read_dir(&f.cap)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("teamhost-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn write_through_a_symlink_inside_keeps_the_link_and_writes_its_target() {
    let f = Fixture::new();
    f.put("real.txt", "old");
    symlink("real.txt", f.cap.join("alias")).unwrap();
    f.tools.write(&write("alias", "new")).unwrap();
    assert_eq!(f.get("real.txt"), "new");
    assert!(fs::symlink_metadata(f.cap.join("alias"))
        .unwrap()
        .is_symlink());
}

#[test]
fn write_refuses_content_over_the_file_limit() {
    let f = Fixture::with_limits(ToolLimits {
        max_file_bytes: 4,
        ..ToolLimits::default()
    });
    assert!(matches!(
        f.tools.write(&write("x", "12345")),
        Err(ToolError::TooLarge(_))
    ));
}

#[test]
fn edit_replaces_exactly_one_occurrence() {
    let f = Fixture::new();
    f.put("a.rs", "let x = 1;\nlet y = 2;\n");
    let out = f.tools.edit(&edit("a.rs", "y = 2", "y = 3")).unwrap();
    assert_eq!(out.replacements, 1);
    assert_eq!(f.get("a.rs"), "let x = 1;\nlet y = 3;\n");
}

#[test]
fn edit_refuses_missing_ambiguous_and_no_op_replacements() {
    let f = Fixture::new();
    f.put("a.rs", "x x x\n");
    assert!(matches!(
        f.tools.edit(&edit("a.rs", "y", "z")),
        Err(ToolError::NotFound(_))
    ));
    match f.tools.edit(&edit("a.rs", "x", "z")) {
        Err(ToolError::Conflict(msg)) => assert!(msg.contains("3 times"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        f.tools.edit(&edit("a.rs", "x", "x")),
        Err(ToolError::Invalid(_))
    ));
    assert!(matches!(
        f.tools.edit(&edit("a.rs", "", "x")),
        Err(ToolError::Invalid(_))
    ));
    assert_eq!(f.get("a.rs"), "x x x\n");

    let all = f
        .tools
        .edit(&EditInput {
            replace_all: Some(true),
            ..edit("a.rs", "x", "z")
        })
        .unwrap();
    assert_eq!(all.replacements, 3);
    assert_eq!(f.get("a.rs"), "z z z\n");
}

// ---------------------------------------------------------------------------
// Glob and Grep

#[test]
fn glob_lists_matching_files_sorted_relative_to_the_directory() {
    let f = Fixture::new();
    for p in [
        "src/b.rs",
        "src/a.rs",
        "src/sub/c.rs",
        "README.md",
        ".git/x.rs",
    ] {
        f.put(p, "");
    }
    let out = f.tools.glob(&glob("**/*.rs", None), &keep_all).unwrap();
    assert_eq!(out.paths, ["src/a.rs", "src/b.rs", "src/sub/c.rs"]);
    assert!(!out.truncated);

    let out = f
        .tools
        .glob(&glob("*.{md,rs}", Some("src")), &keep_all)
        .unwrap();
    assert_eq!(out.paths, ["src/a.rs", "src/b.rs"]);

    let abs = format!("{}/src/*.rs", f.cap.display());
    let out = f.tools.glob(&glob(&abs, None), &keep_all).unwrap();
    assert_eq!(out.paths, ["src/a.rs", "src/b.rs"]);

    let none = f.tools.glob(&glob("nowhere/**", None), &keep_all).unwrap();
    assert!(none.paths.is_empty());
}

#[test]
fn glob_and_grep_skip_what_the_filter_drops() {
    let f = Fixture::new();
    f.put("keep.txt", "needle\n");
    f.put("secret/key.txt", "needle\n");
    f.put("also.env", "needle\n");
    let keep = |p: &Path| !p.starts_with("secret") && p.extension().is_none_or(|e| e != "env");
    let out = f.tools.glob(&glob("**/*", None), &keep).unwrap();
    assert!(out.paths.contains(&"keep.txt".to_owned()));
    assert!(!out
        .paths
        .iter()
        .any(|p| p.contains("secret") || p.ends_with(".env")));
    let out = f.tools.grep(&grep("needle"), &keep).unwrap();
    assert_eq!(out.files, ["keep.txt"]);
}

#[test]
fn glob_caps_the_number_of_results() {
    let f = Fixture::with_limits(ToolLimits {
        max_results: 3,
        ..ToolLimits::default()
    });
    for i in 0..10 {
        f.put(&format!("f{i}.txt"), "");
    }
    let out = f.tools.glob(&glob("*.txt", None), &keep_all).unwrap();
    assert_eq!(out.paths.len(), 3);
    assert!(out.truncated);
}

#[test]
fn grep_finds_files_counts_and_lines_with_context() {
    let f = Fixture::new();
    f.put("src/a.rs", "fn main() {\n    todo!()\n}\n");
    f.put("src/b.rs", "// TODO one\n// todo two\nfn x() {}\n");
    f.put("notes.md", "todo: write docs\n");
    fs::write(f.cap.join("blob.bin"), b"todo\0binary").unwrap();

    let files = f.tools.grep(&grep("todo"), &keep_all).unwrap();
    assert_eq!(files.mode, GrepMode::FilesWithMatches);
    assert_eq!(files.files, ["notes.md", "src/a.rs", "src/b.rs"]);
    assert_eq!(files.skipped, 1);

    let count = f
        .tools
        .grep(
            &GrepInput {
                output_mode: Some("count".into()),
                case_insensitive: Some(true),
                file_type: Some("rust".into()),
                ..grep("todo")
            },
            &keep_all,
        )
        .unwrap();
    assert_eq!(count.text, "src/a.rs:1\nsrc/b.rs:2\n");

    let content = f
        .tools
        .grep(
            &GrepInput {
                output_mode: Some("content".into()),
                glob: Some("a.rs".into()),
                context: Some(1),
                ..grep("todo")
            },
            &keep_all,
        )
        .unwrap();
    assert_eq!(
        content.text,
        "src/a.rs-1-fn main() {\nsrc/a.rs:2:    todo!()\nsrc/a.rs-3-}\n"
    );

    let limited = f
        .tools
        .grep(
            &GrepInput {
                output_mode: Some("content".into()),
                line_numbers: Some(false),
                head_limit: Some(1),
                ..grep("(?i)todo")
            },
            &keep_all,
        )
        .unwrap();
    assert_eq!(limited.text, "notes.md:todo: write docs\n");
    assert!(limited.truncated);
}

#[test]
fn grep_multiline_matches_across_lines() {
    let f = Fixture::new();
    f.put("a.txt", "start\nmiddle\nend\nother\n");
    let out = f
        .tools
        .grep(
            &GrepInput {
                output_mode: Some("content".into()),
                multiline: Some(true),
                ..grep("start.*?end")
            },
            &keep_all,
        )
        .unwrap();
    assert_eq!(out.text, "a.txt:1:start\na.txt:2:middle\na.txt:3:end\n");
}

#[test]
fn grep_refuses_a_bad_regex_and_an_unknown_mode() {
    let f = Fixture::new();
    assert!(matches!(
        f.tools.grep(&grep("("), &keep_all),
        Err(ToolError::Invalid(_))
    ));
    let bad_mode = GrepInput {
        output_mode: Some("lines".into()),
        ..grep("x")
    };
    assert!(matches!(
        f.tools.grep(&bad_mode, &keep_all),
        Err(ToolError::Invalid(_))
    ));
}

// ---------------------------------------------------------------------------
// Escapes

#[test]
fn file_tools_refuse_every_path_outside_the_directory() {
    let f = Fixture::new();
    let sentinel = f.outside.join("sentinel.txt");
    let sentinel = sentinel.to_str().unwrap();
    let hostile = [
        "../outside/sentinel.txt",
        "a/../../outside/sentinel.txt",
        "/etc/passwd",
        sentinel,
        "sentinel-link",
        "passwd-link",
        "escape/sentinel.txt",
    ];
    for path in hostile {
        let denied = |r: Result<(), ToolError>| match r {
            Err(ToolError::Denied(msg)) => assert!(msg.contains("outside"), "{path}: {msg}"),
            other => panic!("{path}: {other:?}"),
        };
        denied(f.tools.read(&read(path)).map(drop));
        denied(f.tools.write(&write(path, "pwned")).map(drop));
        denied(f.tools.edit(&edit(path, "outside", "pwned")).map(drop));
        f.assert_outside_untouched();
    }
    denied_search(&f, "../outside");
    denied_search(&f, "/etc");
    denied_search(&f, "escape");
    f.assert_outside_untouched();
}

fn denied_search(f: &Fixture, path: &str) {
    assert!(
        matches!(
            f.tools.glob(&glob("*", Some(path)), &keep_all),
            Err(ToolError::Denied(_))
        ),
        "glob {path}"
    );
    let input = GrepInput {
        path: Some(path.into()),
        ..grep("untouched")
    };
    assert!(
        matches!(f.tools.grep(&input, &keep_all), Err(ToolError::Denied(_))),
        "grep {path}"
    );
}

#[test]
fn walks_never_follow_a_symlink_out_of_the_directory() {
    let f = Fixture::new();
    f.put("inside.txt", "untouched? no, inside\n");
    let out = f.tools.glob(&glob("**/*", None), &keep_all).unwrap();
    assert!(
        !out.paths.iter().any(|p| p.contains("sentinel.txt")),
        "{:?}",
        out.paths
    );
    let out = f.tools.glob(&glob("escape/**", None), &keep_all).unwrap();
    assert!(out.paths.is_empty(), "{:?}", out.paths);
    let out = f.tools.grep(&grep("untouched"), &keep_all).unwrap();
    assert_eq!(out.files, ["inside.txt"]);
    assert!(matches!(
        f.tools.glob(&glob("*/../../outside/*", None), &keep_all),
        Err(ToolError::Invalid(_))
    ));
    f.assert_outside_untouched();
}

// ---------------------------------------------------------------------------
// Bash

/// Processes in group `pgid` that are not zombies, from /proc.
fn live_members(pgid: u32) -> Vec<u32> {
    let mut live = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split(' ').collect();
        if fields[2] == pgid.to_string() && fields[0] != "Z" {
            live.push(pid);
        }
    }
    live
}

/// The group was sent SIGKILL before the call returned; the kernel delivers
/// it asynchronously, so give its members a moment to die.
fn assert_group_dies(pgid: u32) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !live_members(pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(live_members(pgid), Vec::<u32>::new());
}

#[test]
fn bash_refuses_without_landlock_or_runs_confined_with_it() {
    let f = Fixture::new();
    let result = f.tools.bash(&bash("true", None), Confinement::Required);
    if landlock() {
        let out = result.unwrap();
        assert!(matches!(out.enforcement, Enforcement::Landlock { .. }));
    } else {
        match result {
            Err(ToolError::Unconfined(msg)) => assert!(msg.contains("bypassPermissions"), "{msg}"),
            other => panic!("expected Unconfined, got {other:?}"),
        }
        let out = f
            .tools
            .bash(&bash("true", None), Confinement::BestEffort)
            .unwrap();
        assert!(matches!(out.enforcement, Enforcement::Unconfined { .. }));
    }
}

/// Does Bash get namespaces of its own here (root or `CAP_SYS_ADMIN`)?
fn namespaced(f: &Fixture) -> bool {
    matches!(
        f.tools.confinement(),
        Enforcement::Landlock {
            namespaces: true,
            ..
        }
    )
}

/// Runs `command` in whatever mode this machine allows.
fn run(f: &Fixture, command: &str) -> teamhost::tools::BashOutput {
    let mode = if landlock() {
        Confinement::Required
    } else {
        Confinement::BestEffort
    };
    f.tools.bash(&bash(command, None), mode).unwrap()
}

#[test]
fn bash_runs_in_the_directory_with_a_scrubbed_environment_and_empty_stdin() {
    // Set once, before any child: the child must not see it.
    std::env::set_var("TEAMHOST_TEST_SECRET", "hunter2");
    let f = Fixture::new();
    let out = run(&f, "pwd; /bin/pwd; env | sort; wc -c");
    // With a mount namespace the command sees its directory at the virtual
    // root and no host path at all; without, at its host path.
    let seen = if namespaced(&f) {
        teamhost::tools::confine::VIRTUAL_ROOT.to_owned()
    } else {
        f.cap.display().to_string()
    };
    let mut lines = out.stdout.lines();
    assert_eq!(lines.next(), Some(seen.as_str()), "{}", out.stderr);
    assert_eq!(lines.next(), Some(seen.as_str()), "the kernel's getcwd");
    let rest: Vec<&str> = lines.collect();
    assert!(!out.stdout.contains("hunter2"), "{}", out.stdout);
    if namespaced(&f) {
        assert!(
            !out.stdout.contains(f.cap.to_str().unwrap()),
            "{}",
            out.stdout
        );
    }
    assert!(rest.contains(&"LANG=C.UTF-8"));
    assert!(rest.contains(&"PATH=/usr/local/bin:/usr/bin:/bin"));
    assert!(rest.contains(&format!("HOME={seen}").as_str()));
    assert!(rest.contains(&format!("TMPDIR={seen}").as_str()));
    assert_eq!(rest.last(), Some(&"0"), "stdin is not empty");
    assert_eq!(out.exit_code, Some(0));
}

#[test]
fn bash_reports_exit_codes_and_stderr() {
    let f = Fixture::new();
    let out = run(&f, "echo oops >&2; exit 3");
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.stderr, "oops\n");
    assert!(!out.timed_out);
}

#[test]
fn bash_timeout_kills_the_whole_process_group() {
    let f = Fixture::new();
    let mode = if landlock() {
        Confinement::Required
    } else {
        Confinement::BestEffort
    };
    let started = Instant::now();
    let out = f
        .tools
        .bash(&bash("sleep 60 & sleep 60", Some(300)), mode)
        .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_group_dies(out.pid);
}

#[test]
fn bash_background_jobs_do_not_outlive_the_call() {
    let f = Fixture::new();
    let started = Instant::now();
    let out = run(&f, "sleep 60 & echo started");
    assert_eq!(out.stdout, "started\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_group_dies(out.pid);
}

#[test]
fn bash_output_is_capped_and_both_pipes_drain_together() {
    let f = Fixture::with_limits(ToolLimits {
        max_output_bytes: 1000,
        ..ToolLimits::default()
    });
    // 4 MB on each pipe: more than a pipe buffer, so a reader that drained
    // one stream before the other would deadlock.
    let out = run(
        &f,
        "head -c 4000000 /dev/zero | tr '\\0' e >&2 & head -c 4000000 /dev/zero | tr '\\0' o; wait",
    );
    assert!(out.truncated);
    assert_eq!(out.stdout, "o".repeat(1000));
    assert_eq!(out.stderr, "e".repeat(1000));
    assert_eq!(out.exit_code, Some(0));
}

#[test]
fn landlock_confines_bash_to_the_directory() {
    let f = Fixture::new();
    if !landlock() {
        assert!(matches!(
            f.tools.bash(&bash("true", None), Confinement::Required),
            Err(ToolError::Unconfined(_))
        ));
        return;
    }
    let probe = format!("/var/tmp/teamhost-landlock-probe-{}", std::process::id());
    let out = f.bash(&format!("cd /; touch {probe}"));
    assert_ne!(out.exit_code, Some(0));
    assert!(!Path::new(&probe).exists());
    // With a mount namespace, `/tmp` is the directory itself: the host's
    // `/tmp` (and every socket in it) cannot even be named.
    let host_tmp = format!("/tmp/teamhost-landlock-probe-{}", std::process::id());
    let out = f.bash(&format!("cd /; touch {host_tmp}"));
    assert!(!Path::new(&host_tmp).exists());
    if namespaced(&f) {
        assert_eq!(out.exit_code, Some(0), "{}", out.stderr);
        assert!(f
            .cap
            .join(format!("teamhost-landlock-probe-{}", std::process::id()))
            .exists());
    } else {
        assert_ne!(out.exit_code, Some(0));
    }

    let out = f.bash("echo pwned > ../outside/new; echo pwned >> ../outside/sentinel.txt");
    assert_ne!(out.exit_code, Some(0));
    let out = f.bash("rm -f ../outside/sentinel.txt; mv ../outside/sentinel.txt moved");
    assert_ne!(out.exit_code, Some(0));
    let out = f.bash("cat sentinel-link");
    assert_ne!(out.exit_code, Some(0), "{}", out.stdout);
    f.assert_outside_untouched();

    for secret in [
        "cat /etc/shadow",
        "ls /root",
        "cat /proc/1/environ",
        "ls /home",
    ] {
        let out = f.bash(secret);
        assert_ne!(out.exit_code, Some(0), "{secret}: {}", out.stdout);
    }

    let out = f.bash("touch inside && mkdir -p d/e && echo ok > d/e/f && cat d/e/f");
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "ok\n");
    assert!(f.cap.join("inside").exists());

    let out = f.bash("ls /usr/bin >/dev/null && echo listed");
    assert_eq!(out.stdout, "listed\n", "{}", out.stderr);
}

#[test]
fn landlock_blocks_tcp_and_signals_to_the_host() {
    let f = Fixture::new();
    let Enforcement::Landlock {
        network, scoped, ..
    } = f.tools.confinement()
    else {
        return;
    };
    if network && Path::new("/bin/bash").exists() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let out = f.bash(&format!(
            "/bin/bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'"
        ));
        assert_ne!(out.exit_code, Some(0));
        assert!(listener.accept().is_err(), "the child connected");
    }
    if scoped {
        let out = f.bash(&format!("kill -0 {}", std::process::id()));
        assert_ne!(out.exit_code, Some(0), "the child could signal the host");
    }
}

#[test]
fn bash_children_have_no_capabilities_even_when_the_host_is_root() {
    let f = Fixture::new();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let out = run(&f, "touch mine && chown 1234 mine");
    assert_ne!(
        out.exit_code,
        Some(0),
        "chown worked: capabilities were kept"
    );
}

// ---- Budgets: host memory per call is bounded whatever the file's shape ----

/// A file of `len` bytes that is a text line of `text_len` `a`s followed by
/// a hole: no newline anywhere, no NUL in the first 8 KiB, no disk used.
fn sparse_line(f: &Fixture, rel: &str, text_len: usize, len: u64) {
    let path = f.cap.join(rel);
    fs::write(&path, "a".repeat(text_len)).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn read_of_a_gigabyte_line_shows_its_start_and_stops_at_the_scan_budget() {
    let f = Fixture::new();
    sparse_line(&f, "huge.txt", 16 * 1024, 1 << 30);
    let out = f.tools.read(&read("huge.txt")).unwrap();
    assert!(out.truncated, "the scan budget cut it");
    assert_eq!(out.lines, 1);
    assert_eq!(out.next_offset, None, "stopped inside the line");
    let limits = ToolLimits::default();
    assert!(
        out.content.starts_with("     1\taaaa"),
        "{:.40}",
        out.content
    );
    assert!(out.content.ends_with("…\n"));
    assert!(out.content.len() <= limits.max_line_chars * 4 + 16);
}

#[test]
fn read_past_the_scan_budget_stops_with_truncated_instead_of_reading_on() {
    let f = Fixture::new();
    // One line of text, then a line of a gigabyte: line 3 is out of reach.
    let path = f.cap.join("deep.txt");
    fs::write(&path, format!("{}\n", "a".repeat(16 * 1024))).unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let input = ReadInput {
        offset: Some(3),
        ..read("deep.txt")
    };
    let out = f.tools.read(&input).unwrap();
    assert_eq!(out.lines, 0);
    assert!(out.truncated);
    assert_eq!(out.next_offset, None);
}

#[test]
fn grep_skips_a_file_over_the_size_cap_without_reading_it() {
    let f = Fixture::new();
    sparse_line(&f, "huge.txt", 16 * 1024, 100 << 30);
    f.put("small.txt", "aaa\n");
    let out = f.tools.grep(&grep("a+"), &keep_all).unwrap();
    assert_eq!(out.files, ["small.txt"]);
    assert_eq!(out.skipped, 1, "the 100 GiB file is skipped, not searched");
}

#[test]
fn grep_skips_a_file_of_more_lines_than_it_indexes() {
    let f = Fixture::new();
    let lines = teamhost::tools::grep::MAX_FILE_LINES;
    f.put("newlines.txt", &"\n".repeat(lines));
    f.put("small.txt", "x\n");
    let out = f.tools.grep(&grep("^$|x"), &keep_all).unwrap();
    assert_eq!(out.files, ["small.txt"]);
    assert_eq!(out.skipped, 1);
}

#[test]
fn glob_in_a_directory_wider_than_the_walk_budget_stops_and_says_so() {
    let f = Fixture::with_limits(ToolLimits {
        max_walk_entries: 50,
        ..ToolLimits::default()
    });
    for i in 0..500 {
        f.put(&format!("wide/{i:04}.txt"), "");
    }
    let out = f.tools.glob(&glob("**/*.txt", None), &keep_all).unwrap();
    assert!(out.truncated);
    assert!(out.paths.len() < 50, "{}", out.paths.len());
    let out = f.tools.grep(&grep("x"), &keep_all).unwrap();
    assert!(out.truncated, "Grep shares the walk and its budget");
}

#[test]
fn edit_refuses_a_sparse_file_bigger_than_it_rewrites() {
    let f = Fixture::new();
    sparse_line(&f, "huge.txt", 16, 1 << 30);
    let err = f.tools.edit(&edit("huge.txt", "aaa", "b")).unwrap_err();
    assert!(matches!(err, ToolError::TooLarge(_)), "{err:?}");
    assert!(err.to_string().contains("bytes Edit rewrites"), "{err}");
}

#[test]
fn write_and_edit_refuse_in_advance_what_would_break_the_disk_budget() {
    use teamhost::tools::DiskBudget;
    let f = Fixture::new();
    f.put("a.txt", &"a".repeat(600));
    let budget = DiskBudget {
        bytes: 1000,
        entries: 1000,
    };
    let err = f
        .tools
        .write_within(&write("b.txt", &"b".repeat(500)), Some(&budget))
        .unwrap_err();
    assert!(matches!(err, ToolError::TooLarge(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("disk limit") && text.contains("[teammate.limits] disk_mb"),
        "{text}"
    );
    assert!(!f.cap.join("b.txt").exists(), "nothing was written");
    // Replacing a file counts its new size in place of the old one.
    f.tools
        .write_within(&write("a.txt", &"c".repeat(900)), Some(&budget))
        .unwrap();
    let err = f
        .tools
        .edit_within(
            &EditInput {
                replace_all: Some(true),
                ..edit("a.txt", "c", "cc")
            },
            Some(&budget),
        )
        .unwrap_err();
    assert!(err.to_string().contains("disk limit"), "{err}");
    assert_eq!(f.get("a.txt"), "c".repeat(900));
}

#[test]
fn the_disk_measurement_counts_sparse_files_at_their_length_and_stops_at_its_entry_budget() {
    let f = Fixture::new();
    sparse_line(&f, "sparse.bin", 1, 100 << 30);
    let usage = f.tools.disk_usage(1_000);
    assert!(usage.bytes >= 100 << 30, "{usage:?}");
    assert!(!usage.incomplete);
    for i in 0..100 {
        f.put(&format!("many/{i}"), "");
    }
    let usage = f.tools.disk_usage(50);
    assert!(usage.incomplete);
    assert_eq!(usage.entries, 50);
    let budget = teamhost::tools::DiskBudget {
        bytes: u64::MAX,
        entries: 50,
    };
    let why = budget.breach(&usage).unwrap();
    assert!(why.contains("[teammate.limits] disk_entries"), "{why}");
}

#[test]
fn a_deep_tree_is_walked_to_a_bounded_depth_and_measured_without_recursion() {
    let f = Fixture::new();
    let mut deep = PathBuf::new();
    for _ in 0..300 {
        deep.push("d");
    }
    fs::create_dir_all(f.cap.join(&deep)).unwrap();
    fs::write(f.cap.join(&deep).join("bottom.txt"), "x").unwrap();
    f.put("top.txt", "x");
    let out = f.tools.glob(&glob("**/*.txt", None), &keep_all).unwrap();
    assert!(out.paths.contains(&"top.txt".to_owned()), "{out:?}");
    assert!(
        !out.paths.iter().any(|p| p.ends_with("bottom.txt")),
        "the walk stops 128 levels down"
    );
    let usage = f.tools.disk_usage(10_000);
    assert!(!usage.incomplete);
    assert!(usage.entries > 300, "{usage:?}");
}

#[test]
fn edit_refuses_a_result_over_the_size_cap_before_building_it() {
    let f = Fixture::new();
    // A million one-byte matches, each to become 1 MiB: a terabyte, if built.
    f.put("many.txt", &"a".repeat(1 << 20));
    let input = EditInput {
        replace_all: Some(true),
        ..edit("many.txt", "a", &"b".repeat(1 << 20))
    };
    let err = f.tools.edit(&input).unwrap_err();
    assert!(matches!(err, ToolError::TooLarge(_)), "{err:?}");
    assert!(err.to_string().contains("1099511627776 bytes"), "{err}");
    assert_eq!(f.get("many.txt").len(), 1 << 20, "the file is unchanged");
}
