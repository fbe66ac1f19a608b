//! `teamhost run` end to end: the real binary on manifests whose teammates are
//! the real `worker` component (`teamhost_tests::WORKER`), and on
//! `examples/polyglot/team.toml`, whose workers are in Rust, Python and
//! JavaScript.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::run_common::{project, shown};

/// Runs `teamhost --home HOME ARGS…` and returns what it did.
fn teamhost(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .expect("the teamhost binary runs")
}

/// Everything a failing assertion needs to show.
/// The event lines of `stdout` (before the summary) are one ordered stream
/// of events only: each a `+  T.TTTs  WHO  WHAT` line, times never going
/// back, no diagnostic (tracing) line among them; each teammate's messages
/// to the lead after its first turn, its approval after its shutdown
/// turn; each teammate's end
/// (`stopped`, a teammate's state, never `completed`, a task's status)
/// after its shutdown turn, whose line comes before the state it causes;
/// each task's lines in the order its states were written (`pending`,
/// `in_progress`, `completed`), none twice.
fn stream_is_in_order(stdout: &str, out: &Output) {
    let events: Vec<&str> = stdout.lines().take_while(|l| !l.is_empty()).collect();
    assert!(!events.is_empty(), "{}", shown(out));
    let mut last = 0.0;
    let mut shutdown_turn: std::collections::HashMap<&str, usize> = Default::default();
    let mut first_turn: std::collections::HashMap<&str, usize> = Default::default();
    let mut task_step: std::collections::HashMap<String, usize> = Default::default();
    for (i, line) in events.iter().enumerate() {
        let fields: Vec<&str> = line.trim_start_matches('+').split_whitespace().collect();
        assert!(
            line.starts_with('+') && fields.len() >= 3,
            "not an event line: {line:?}\n{}",
            shown(out)
        );
        for noise in ["WARN", "ERROR", "INFO", "DEBUG"] {
            assert!(
                !line.contains(noise),
                "a diagnostic in the stream: {line:?}"
            );
        }
        let t: f64 = fields[0]
            .trim_start_matches('+')
            .trim_end_matches('s')
            .parse()
            .unwrap();
        assert!(t >= last, "time went back at {line:?}\n{}", shown(out));
        last = t;
        let (who, what) = (fields[1], fields[2..].join(" "));
        if who == "tasks" {
            // `#2 in_progress, owner bob: Count b`: this run's tasks are
            // only ever written forward.
            let (id, rest) = what.split_once(' ').unwrap_or((&what, ""));
            let status = rest.split([',', ':']).next().unwrap_or_default();
            let step = ["pending", "in_progress", "completed"]
                .iter()
                .position(|s| *s == status)
                .unwrap_or_else(|| panic!("an unknown task status in {line:?}"));
            let before = task_step.insert(id.to_string(), step);
            assert!(
                before.is_none_or(|b| b < step),
                "task {id}'s lines out of the order written, or twice, at {line:?}\n{}",
                shown(out)
            );
        }
        if what.starts_with("turn ") && what.ends_with(": shutdown-request") {
            shutdown_turn.insert(who, i);
        }
        if what.starts_with("turn ") {
            first_turn.entry(who).or_insert(i);
        }
        // A message to the lead prints after the turn that wrote it.
        if what.starts_with("→ team-lead:") && who != "teamhost" {
            let turn = first_turn.get(who).copied();
            assert!(
                turn.is_some_and(|t| t < i),
                "{who}'s message before its turn: {line:?}\n{}",
                shown(out)
            );
        }
        if what == "→ team-lead: approves the shutdown" {
            let turn = shutdown_turn.get(who).copied();
            assert!(
                turn.is_some_and(|t| t < i),
                "{who}'s approval before its shutdown turn\n{}",
                shown(out)
            );
        }
        if what == "stopping" {
            let turn = shutdown_turn.get(who).copied();
            assert!(
                turn.is_some_and(|t| t < i),
                "{who}'s state before its turn\n{}",
                shown(out)
            );
        }
        if what == "stopped" {
            let turn = shutdown_turn.get(who).copied();
            assert!(
                turn.is_some_and(|t| t < i),
                "{who} stopped before its shutdown turn\n{}",
                shown(out)
            );
        }
        assert!(
            what != "completed",
            "a teammate state reads like a task status: {line:?}"
        );
    }
    for who in ["ann", "bob"] {
        assert!(
            events
                .iter()
                .any(|l| l.split_whitespace().nth(2) == Some(who) && l.ends_with(" stopped")),
            "no end of {who}\n{}",
            shown(out)
        );
    }
}

#[test]
fn runs_a_team_to_completion_and_names_each_tasks_owner() {
    let (dir, manifest) = project("words", "");
    let home = dir.path().join("home");
    let out = teamhost(&home, &["run", manifest.to_str().unwrap()]);
    assert!(out.status.success(), "{}", shown(&out));
    // The team is deleted, with what this machine kept to resume it.
    assert!(!home.join("teams/words").exists());
    assert!(!home.join("kept/words").exists());
    let stdout = String::from_utf8_lossy(&out.stdout);
    stream_is_in_order(&stdout, &out);
    let summary = stdout
        .split_once("\ntasks\n")
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no task table\n{}", shown(&out)));
    for (id, subject) in [
        (1, "Count a"),
        (2, "Count b"),
        (3, "Count c"),
        (4, "Count all"),
    ] {
        let line = summary
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("#{id} ")))
            .unwrap_or_else(|| panic!("no line for task #{id}\n{}", shown(&out)));
        assert!(line.contains("completed"), "{line}\n{}", shown(&out));
        assert!(
            line.contains(" ann ") || line.contains(" bob "),
            "task #{id} names no owner: {line}"
        );
        assert!(line.contains(subject), "{line}");
    }
    assert!(
        stdout.contains("→ team-lead: Task #4 done: 6 words"),
        "{}",
        shown(&out)
    );
    assert!(
        stdout.contains("shutdown: 2 stopped, 0 killed"),
        "{}",
        shown(&out)
    );
    let report = std::fs::read_to_string(dir.path().join("data/reports/task-4.md")).unwrap();
    assert!(report.contains("**6**"), "{report}");
    assert!(
        !home.join("teams/words").exists(),
        "the team files are deleted"
    );
    assert!(
        !home.join("tasks/words").exists(),
        "the task files are deleted"
    );
}

#[test]
fn json_prints_one_summary_with_every_task_completed() {
    let (dir, manifest) = project("json-words", "description = \"counts\"");
    let home = dir.path().join("home");
    let out = teamhost(
        &home,
        &["--json", "run", "--keep", manifest.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", shown(&out));
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e})\n{}", shown(&out)));
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["outcome"], "completed");
    let tasks = summary["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    for t in tasks {
        assert_eq!(t["status"], "completed", "{t}");
        let owner = t["owner"]
            .as_str()
            .unwrap_or_else(|| panic!("no owner: {t}"));
        assert!(["ann", "bob"].contains(&owner), "{t}");
    }
    assert_eq!(tasks[3]["blockedBy"], serde_json::json!(["1", "2", "3"]));
    let mates = summary["teammates"].as_array().unwrap();
    assert_eq!(mates.len(), 2);
    let mut done: Vec<String> = Vec::new();
    for m in mates {
        assert_eq!(m["state"], "stopped", "{m}");
        assert!(m["turns"].as_u64().unwrap() >= 2, "{m}");
        for id in m["completedTasks"].as_array().unwrap() {
            done.push(id.as_str().unwrap().to_string());
        }
    }
    done.sort();
    assert_eq!(done, ["1", "2", "3", "4"]);
    let messages = &summary["messages"];
    assert!(messages["toLead"].as_u64().unwrap() >= 4, "{messages}");
    assert_eq!(messages["byKind"]["shutdown_approved"], 2, "{messages}");
    assert_eq!(
        summary["shutdown"]["stopped"],
        serde_json::json!(["ann", "bob"])
    );
    // --keep: the team is still on disk, with only its lead left.
    assert!(home.join("teams/json-words/config.json").is_file());
    assert!(home.join("tasks/json-words/4.json").is_file());
}

#[test]
fn an_unknown_manifest_key_fails_naming_the_key() {
    let (dir, manifest) = project("typo", "colour = \"blue\"");
    let home = dir.path().join("home");
    let out = teamhost(&home, &["run", manifest.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", shown(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown field `colour`"), "{}", shown(&out));
    assert!(stderr.contains("team.toml"), "names the file: {stderr}");
    assert!(!home.join("teams/typo").exists(), "nothing was created");
}

#[test]
fn an_existing_team_is_refused_unless_replace() {
    let (dir, manifest) = project("again", "");
    let home = dir.path().join("home");
    let path = manifest.to_str().unwrap();
    let first = teamhost(&home, &["run", "--keep", path]);
    assert!(first.status.success(), "{}", shown(&first));
    let refused = teamhost(&home, &["run", path]);
    assert!(!refused.status.success(), "{}", shown(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--replace"),
        "{}",
        shown(&refused)
    );
    let replaced = teamhost(&home, &["--json", "run", "--replace", path]);
    assert!(replaced.status.success(), "{}", shown(&replaced));
    let summary: Value = serde_json::from_slice(&replaced.stdout).unwrap();
    let ids: Vec<&str> = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4"], "a replaced team starts afresh");
}

/// `run --join` seeds no tasks, and the file store's feed cannot hear a
/// team directory appear: both are refused at once, creating nothing. (A
/// joined run on a NATS store is in `nats_store`.)
#[test]
fn join_refuses_tasks_of_its_own_and_a_file_team_not_made_yet() {
    let (dir, manifest) = project("later", "");
    let home = dir.path().join("home");
    let with_tasks = teamhost(&home, &["run", "--join", manifest.to_str().unwrap()]);
    assert!(!with_tasks.status.success(), "{}", shown(&with_tasks));
    assert!(
        String::from_utf8_lossy(&with_tasks.stderr).contains("--join seeds no tasks"),
        "{}",
        shown(&with_tasks)
    );
    let text = std::fs::read_to_string(&manifest).unwrap();
    let teammates_only = &text[..text.find("[[task]]").unwrap()];
    std::fs::write(&manifest, teammates_only).unwrap();
    let no_team = teamhost(&home, &["run", "--join", manifest.to_str().unwrap()]);
    assert!(!no_team.status.success(), "{}", shown(&no_team));
    assert!(
        String::from_utf8_lossy(&no_team.stderr).contains("needs the team made first"),
        "{}",
        shown(&no_team)
    );
    assert!(!home.join("teams/later").exists(), "nothing was created");
}

#[test]
fn a_task_nobody_can_finish_stops_the_run_with_an_error_naming_it() {
    let (dir, manifest) = project("stuck", "");
    std::fs::remove_file(dir.path().join("data/b.txt")).unwrap();
    let home = dir.path().join("home");
    let out = teamhost(&home, &["--json", "run", manifest.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", shown(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["ok"], false);
    assert_eq!(summary["outcome"], "stuck", "{summary:#}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Task #2 failed: cannot read b.txt"),
        "{}",
        shown(&out)
    );
    assert!(
        stderr.contains("error: every teammate is idle but 2 task(s)"),
        "{}",
        shown(&out)
    );
    assert!(stderr.contains("#2 \"Count b\""), "{}", shown(&out));
}

#[test]
fn a_teammate_without_cwd_works_in_its_own_work_directory_beside_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    // Only ann's file is there beforehand; bob's directory is made at start.
    let ann = dir.path().join("work").join("ann");
    std::fs::create_dir_all(&ann).unwrap();
    std::fs::write(ann.join("a.txt"), "one two three").unwrap();
    let mut toml = String::from("[team]\nname = \"defaults\"\n");
    for who in ["ann", "bob"] {
        toml += &format!(
            "[[teammate]]\nname = {who:?}\ncomponent = {:?}\nprompt = \"You count words.\"\nmode = \"acceptEdits\"\nauto_claim = {}\n",
            teamhost_tests::WORKER,
            who == "ann"
        );
    }
    toml += "[[task]]\nsubject = \"Count a\"\ndescription = \"- a.txt\"\n";
    let manifest = dir.path().join("team.toml");
    std::fs::write(&manifest, toml).unwrap();
    let out = teamhost(&home, &["run", manifest.to_str().unwrap()]);
    assert!(out.status.success(), "{}", shown(&out));
    let report = std::fs::read_to_string(ann.join("reports/task-1.md"))
        .unwrap_or_else(|e| panic!("no report in work/ann ({e})\n{}", shown(&out)));
    assert!(report.contains("**3**"), "{report}");
    assert!(
        dir.path().join("work/bob").is_dir(),
        "bob's directory was made"
    );
    assert!(
        !dir.path().join("reports").exists(),
        "nothing was written beside the manifest"
    );
}

/// `examples/polyglot/team.toml` as it is, but for its component paths
/// (written for the repository's `target/`), pointed at the components this
/// build made; with its three stories. Returns the directory and manifest.
fn polyglot_example(py: &str, js: &str) -> (tempfile::TempDir, PathBuf) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/polyglot");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    for story in ["harbour.txt", "orchard.txt", "signal.txt"] {
        std::fs::copy(
            example.join("data").join(story),
            dir.path().join("data").join(story),
        )
        .unwrap();
    }
    let mut languages = Vec::new();
    let manifest: String = std::fs::read_to_string(example.join("team.toml"))
        .unwrap()
        .lines()
        .map(|line| match line.strip_prefix("component = ") {
            None => format!("{line}\n"),
            Some(path) => {
                let file = Path::new(path.trim_matches('"')).file_name().unwrap();
                let (language, built) = match file.to_str().unwrap() {
                    "worker.wasm" => ("rust", teamhost_tests::WORKER),
                    "worker-py.wasm" => ("python", py),
                    "worker-js.wasm" => ("js", js),
                    other => panic!("examples/polyglot/team.toml names {other}: which language?"),
                };
                languages.push(language);
                format!("component = {built:?}\n")
            }
        })
        .collect();
    languages.sort();
    assert_eq!(
        languages,
        ["js", "python", "rust"],
        "one worker per language"
    );
    let path = dir.path().join("team.toml");
    std::fs::write(&path, manifest).unwrap();
    (dir, path)
}

/// The `**total** | **N**` of a report.
fn report_total(report: &str) -> usize {
    report
        .lines()
        .find_map(|l| l.strip_prefix("| **total** | **"))
        .and_then(|rest| rest.strip_suffix("** |"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total in the report:\n{report}"))
}

#[test]
fn the_polyglot_example_of_a_rust_a_python_and_a_js_worker_counts_its_corpus() {
    use teamhost_tests::polyglot::component;
    let (Some(py), Some(js)) = (
        component(teamhost_tests::WORKER_PY),
        component(teamhost_tests::WORKER_JS),
    ) else {
        return;
    };
    let (dir, manifest) = polyglot_example(py, js);
    let home = dir.path().join("home");
    let out = teamhost(&home, &["--json", "run", manifest.to_str().unwrap()]);
    assert!(out.status.success(), "{}", shown(&out));
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e})\n{}", shown(&out)));
    assert_eq!(summary["outcome"], "completed", "{}", shown(&out));
    let tasks = summary["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4, "{summary:#}");
    for t in tasks {
        assert_eq!(t["status"], "completed", "{t}");
        let owner = t["owner"]
            .as_str()
            .unwrap_or_else(|| panic!("no owner: {t}"));
        assert!(["python", "js", "rust"].contains(&owner), "{t}");
    }
    // All three joined, ran and approved the shutdown, whoever did the work.
    let mut mates: Vec<&str> = summary["teammates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["state"], "stopped", "{m}");
            assert!(m["turns"].as_u64().unwrap() >= 2, "{m}");
            m["name"].as_str().unwrap()
        })
        .collect();
    mates.sort();
    assert_eq!(mates, ["js", "python", "rust"]);
    assert_eq!(summary["messages"]["byKind"]["shutdown_approved"], 3);

    // One line per component as it is queued, one when it is ready, at
    // most one in between; compiled in turn, smallest first, so the Rust
    // worker (a few hundred KB against megabytes) is ready first.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let count = |needle: &str| stderr.lines().filter(|l| l.contains(needle)).count();
    for file in ["worker.wasm", "worker-py.wasm", "worker-js.wasm"] {
        assert_eq!(count(&format!("compiling {file} for")), 1, "{stderr}");
        assert_eq!(count(&format!("{file} ready in")), 1, "{stderr}");
        assert!(count(&format!("still compiling {file}")) <= 1, "{stderr}");
    }
    let first_ready = stderr.lines().find(|l| l.contains(" ready in ")).unwrap();
    assert!(first_ready.contains("worker.wasm ready"), "{stderr}");

    // The right counts: each story's, and the corpus's in task 4.
    let words = |story: &str| {
        std::fs::read_to_string(dir.path().join("data").join(story))
            .unwrap()
            .split_whitespace()
            .count()
    };
    let stories = ["harbour.txt", "orchard.txt", "signal.txt"];
    let reports = dir.path().join("data/reports");
    for (i, story) in stories.iter().enumerate() {
        let report = std::fs::read_to_string(reports.join(format!("task-{}.md", i + 1))).unwrap();
        assert_eq!(report_total(&report), words(story), "{report}");
    }
    let corpus: usize = stories.iter().map(|s| words(s)).sum();
    let report = std::fs::read_to_string(reports.join("task-4.md")).unwrap();
    assert_eq!(report_total(&report), corpus, "{report}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("Task #4 done: {corpus} words in 3 file(s)")),
        "{}",
        shown(&out)
    );
}

#[test]
fn a_crash_shows_its_reason_in_the_stream_and_diagnostics_stay_out_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let toml = format!(
        "[team]\nname = \"crash\"\n[[teammate]]\nname = \"fragile\"\ncomponent = {:?}\nprompt = \"panic-on-task\"\ncwd = \"work\"\nmode = \"acceptEdits\"\n[[task]]\nsubject = \"Boom now\"\ndescription = \"d\"\n",
        teamhost_tests::PROBE
    );
    let manifest = dir.path().join("team.toml");
    std::fs::write(&manifest, toml).unwrap();
    let out = teamhost(&home, &["run", manifest.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", shown(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = home.join("logs/crash/fragile.log");
    let failed = stdout
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some("fragile") && l.contains(" failed: "))
        .unwrap_or_else(|| panic!("no failure line\n{}", shown(&out)));
    assert!(
        failed.contains("its stderr said: «")
            && failed.contains("cannot do task #1: Boom now»")
            && failed.contains(&format!("log: {}", log.display())),
        "{failed}"
    );
    // The summary says the same.
    assert!(
        stdout.contains("fragile failed: the guest crashed")
            || stderr.contains("fragile failed: the guest crashed"),
        "{}",
        shown(&out)
    );
    // The host's warning about it is a diagnostic: in the home's log, not
    // among the lines a person reads.
    for text in [&stdout, &stderr] {
        assert!(!text.contains("WARN"), "{}", shown(&out));
    }
    let diagnostics = std::fs::read_to_string(home.join("logs/teamhost.log")).unwrap();
    assert!(diagnostics.contains("teammate failed"), "{diagnostics}");
}
