//! Every cassette set checked into the repository replays by the real
//! binary and ends as its recording did; a replay that drifts, and a turn
//! that fails, fail `teamhost run`.
//!
//! The sets are found, not listed: every `*.jsonl` under the repository
//! (`target/` and copies in `work/` left out) whose first line is a
//! cassette's header belongs to the set two directories up
//! (`{set}/{team}/{teammate}.jsonl`). Each set found must have a replay in
//! [`REPLAYS`], so a set added without one fails here until it gets one.
//!
//! A strict replay (`replay`) that drifts fails the run, so its exit status
//! proves there was none; `replay-lenient` (the lead-team example: the
//! lead's requests depend on timing) serves the recording anyway, and its
//! set is checked by its outcome only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The repository's root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// How one checked-in set is replayed, and what the replay must show.
struct Replay {
    /// The set's directory, relative to the repository.
    set: &'static str,
    /// The example directory copied to run it (its manifest, models,
    /// script and `repo/` as `work/`); `None`: [`live_agent_manifest`].
    example: Option<&'static str>,
    /// `teamhost run` flags after the manifest.
    flags: &'static [&'static str],
    /// Checks the summary (`--json`) and stderr of a run that exited 0.
    check: fn(&Value, &str),
}

/// Sets replayed elsewhere, by a test that does what a replay here cannot
/// (answer a question at the live view, serve a package index).
const REPLAYED_ELSEWHERE: &[(&str, &str)] = &[(
    "examples/net-team/cassettes",
    "host/tests/example_net_team.rs",
)];

const REPLAYS: &[Replay] = &[
    Replay {
        set: "examples/llm-team/cassettes",
        example: Some("examples/llm-team"),
        flags: &[],
        check: every_task_completed,
    },
    Replay {
        set: "examples/lead-team/cassettes",
        example: Some("examples/lead-team"),
        flags: &[],
        check: the_lead_completed,
    },
    Replay {
        set: "examples/local-model/cassettes",
        example: Some("examples/local-model"),
        flags: &[
            "--model-config",
            "models.toml",
            "--model-mode",
            "replay",
            "--allow-failed-turns",
        ],
        check: greeter_stopped_by_its_call_limit,
    },
    Replay {
        set: "tests/cassettes/live-smollm2",
        example: None,
        flags: &[
            "--model-config",
            "models.toml",
            "--model-mode",
            "replay",
            "--allow-failed-turns",
        ],
        check: ava_ends_as_recorded,
    },
];

fn every_task_completed(summary: &Value, shown: &str) {
    assert_eq!(summary["outcome"], "completed", "{shown}");
    let tasks = summary["tasks"].as_array().unwrap();
    assert!(!tasks.is_empty(), "{shown}");
    assert!(tasks.iter().all(|t| t["status"] == "completed"), "{shown}");
    no_failed_turn(summary, shown);
}

fn the_lead_completed(summary: &Value, shown: &str) {
    assert_eq!(summary["outcome"], "completed", "{shown}");
    assert_eq!(summary["error"], Value::Null, "{shown}");
}

fn greeter_stopped_by_its_call_limit(summary: &Value, shown: &str) {
    let failed = &summary["turnFailures"]["failedTurns"];
    assert_eq!(failed[0]["teammate"], "greeter", "{shown}");
    assert_eq!(failed[0]["count"], 1, "{shown}");
    let reason = failed[0]["firstReason"].as_str().unwrap();
    assert!(reason.contains("(calls_per_turn)"), "{shown}");
}

/// `outcome.json`, kept beside the set when it was recorded live
/// (tests/tests/live_model.rs): the replay's failure is the live run's.
fn ava_ends_as_recorded(summary: &Value, shown: &str) {
    let live: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/cassettes/live-smollm2/outcome.json")).unwrap(),
    )
    .unwrap();
    let failed = &summary["turnFailures"]["failedTurns"];
    assert_eq!(failed[0]["teammate"], "ava", "{shown}");
    assert_eq!(failed[0]["firstReason"], live["failure"], "{shown}");
    let ava = summary["teammates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ava")
        .expect("ava in the summary");
    assert_eq!(ava["model"]["calls"], live["calls"], "{shown}");
}

fn no_failed_turn(summary: &Value, shown: &str) {
    assert_eq!(
        summary["turnFailures"]["failedTurns"],
        Value::Array(vec![]),
        "{shown}"
    );
}

/// The cassette sets in the repository: the directories two up from each
/// cassette file, relative to it.
fn checked_in_sets() -> Vec<String> {
    let root = repo();
    let mut sets = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | "work" | "node_modules")
                    && !name.starts_with('.')
                {
                    dirs.push(path);
                }
                continue;
            }
            if !name.ends_with(".jsonl") || !is_cassette(&path) {
                continue;
            }
            let set = path.parent().unwrap().parent().unwrap();
            let set = set
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            if !sets.contains(&set) {
                sets.push(set);
            }
        }
    }
    sets.sort();
    sets
}

/// Whether the file's first line is a cassette's header.
fn is_cassette(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let Some(first) = text.lines().next() else {
        return false;
    };
    let Ok(header) = serde_json::from_str::<Value>(first) else {
        return false;
    };
    header["v"].is_u64() && header["team"].is_string() && header["teammate"].is_string()
}

/// Copies the files under `from` to `to`, leaving out `work/`.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() && entry.file_name() != "work" {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// The guests' directory, as the examples name it, made absolute.
pub(crate) fn absolute_components(manifest: &str) -> String {
    let guests = Path::new(teamhost_tests::AGENT).parent().unwrap();
    let text = manifest.replace(
        "../../target/guests/wasm32-wasip2/release",
        guests.to_str().unwrap(),
    );
    assert!(!text.contains("../../target"), "{text}");
    text
}

/// The team tests/tests/live_model.rs's `run_agent` spawns, as a manifest:
/// `ava` on `smol` with SendMessage only, 64 tokens and 3 calls a turn.
fn live_agent_manifest(dir: &Path) {
    let manifest = format!(
        r#"[team]
name = "live-agent"

[[teammate]]
name = "ava"
component = "{}"
prompt = "Send the lead (team-lead) one short message that says hello, with SendMessage. Then stop."
auto_claim = false
model = "smol"
disallowed_tools = ["Read", "Edit", "Bash", "Glob", "Grep", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList", "Agent"]

[teammate.model_policy]
max_tokens_per_call = 64
calls_per_turn = 3
"#,
        teamhost_tests::AGENT
    );
    std::fs::write(dir.join("team.toml"), manifest).unwrap();
    std::fs::copy(
        repo().join("examples/local-model/models.toml"),
        dir.join("models.toml"),
    )
    .unwrap();
}

/// Sets up `r` in `dir` (its cassettes under `dir/cassettes`) and runs it.
fn replay(r: &Replay, dir: &Path) -> Output {
    match r.example {
        Some(example) => {
            copy_tree(&repo().join(example), dir);
            let manifest = std::fs::read_to_string(dir.join("team.toml")).unwrap();
            std::fs::write(dir.join("team.toml"), absolute_components(&manifest)).unwrap();
            if dir.join("repo").is_dir() {
                copy_tree(&dir.join("repo"), &dir.join("work"));
            }
        }
        None => {
            live_agent_manifest(dir);
            copy_tree(&repo().join(r.set), &dir.join("cassettes"));
        }
    }
    run(dir, r.flags)
}

/// `teamhost run team.toml --json FLAGS --cassettes cassettes` in `dir`.
fn run(dir: &Path, flags: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .current_dir(dir)
        .arg("--home")
        .arg(dir.join("home"))
        .args(["run", "team.toml", "--json", "--timeout", "120"])
        .args(flags)
        .args(["--cassettes", "cassettes"])
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

#[test]
fn every_checked_in_cassette_set_replays_without_drift_and_ends_as_recorded() {
    let found = checked_in_sets();
    let known: Vec<&str> = REPLAYS
        .iter()
        .map(|r| r.set)
        .chain(REPLAYED_ELSEWHERE.iter().map(|(set, _)| *set))
        .collect();
    for set in &found {
        assert!(
            known.contains(&set.as_str()),
            "the cassette set {set} has no replay here: add it to REPLAYS (how to run it, what it must show)"
        );
    }
    for (set, by) in REPLAYED_ELSEWHERE {
        assert!(found.iter().any(|s| s == set), "{set} holds no cassette");
        assert!(
            repo().join(by).is_file(),
            "{set} is replayed by {by}, which is missing"
        );
    }
    for r in REPLAYS {
        assert!(
            found.iter().any(|s| s == r.set),
            "{} is in REPLAYS but holds no cassette: {found:?}",
            r.set
        );
        let dir = tempfile::tempdir().unwrap();
        let out = replay(r, dir.path());
        let shown = format!("{}: {}", r.set, shown(&out));
        assert!(out.status.success(), "{shown}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("drift at"), "{shown}");
        let summary: Value = serde_json::from_slice(&out.stdout).expect(&shown);
        if summary.get("turnFailures").is_some() {
            assert_eq!(
                summary["turnFailures"]["replayDrifts"],
                Value::Array(vec![]),
                "{shown}"
            );
        }
        (r.check)(&summary, &shown);
    }
}

/// The local-model example copied to `dir`, its cassette changed by `edit`.
fn local_model_with(dir: &Path, edit: impl FnOnce(String) -> String) {
    copy_tree(&repo().join("examples/local-model"), dir);
    let manifest = std::fs::read_to_string(dir.join("team.toml")).unwrap();
    std::fs::write(dir.join("team.toml"), absolute_components(&manifest)).unwrap();
    let cassette = dir.join("cassettes/local-model/greeter.jsonl");
    let text = std::fs::read_to_string(&cassette).unwrap();
    std::fs::write(&cassette, edit(text)).unwrap();
}

#[test]
fn a_replay_that_drifts_fails_the_run_naming_the_teammate_and_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    // The tool result the third request carries, as if the host's refusal
    // had been worded otherwise when it was recorded.
    // (An entry is found by its request's hash: both change.)
    local_model_with(dir.path(), |text| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut entry: Value = serde_json::from_str(&lines[3]).unwrap();
        assert_eq!(entry["pos"], 2, "{entry}");
        let request = entry["request"].to_string();
        let changed = request.replacen(
            "only the team's lead may use SendMessage's shutdown_request",
            "only the lead may ask for a shutdown",
            1,
        );
        assert_ne!(changed, request, "the cassette holds the refusal");
        entry["request"] = serde_json::from_str(&changed).unwrap();
        entry["req_sha256"] = "0".repeat(64).into();
        lines[3] = entry.to_string();
        lines.join("\n") + "\n"
    });
    // Even a run that expects failed turns fails on a drift.
    let out = run(
        dir.path(),
        &[
            "--model-config",
            "models.toml",
            "--model-mode",
            "replay",
            "--allow-failed-turns",
        ],
    );
    let shown = shown(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .expect(&shown);
    assert!(
        error.contains("teammate greeter's replay drifted from its cassette"),
        "{shown}"
    );
    assert!(error.contains("drift at greeter/"), "{shown}");
    assert!(
        error.contains("request.messages[4].content[0].tool-result.content: recorded"),
        "{shown}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect(&shown);
    assert_eq!(summary["ok"], false, "{shown}");
    assert_eq!(
        summary["turnFailures"]["replayDrifts"][0]["teammate"], "greeter",
        "{shown}"
    );
}

#[test]
fn a_failed_turn_fails_the_run_unless_it_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    local_model_with(dir.path(), |text| text);
    let flags = ["--model-config", "models.toml", "--model-mode", "replay"];
    let out = run(dir.path(), &flags);
    let shown = shown(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "error: teammate greeter: 1 turn(s) failed, the first: the model call was denied"
        ),
        "{shown}"
    );
    assert!(stderr.contains("--allow-failed-turns"), "{shown}");
    let summary: Value = serde_json::from_slice(&out.stdout).expect(&shown);
    assert_eq!(summary["outcome"], "completed", "{shown}");
    assert_eq!(summary["ok"], false, "{shown}");

    // The same run, told to expect it: exit 0, the failure still reported.
    std::fs::remove_dir_all(dir.path().join("home")).unwrap();
    let mut allowed = flags.to_vec();
    allowed.push("--allow-failed-turns");
    let out = run(dir.path(), &allowed);
    let shown = self::shown(&out);
    assert!(out.status.success(), "{shown}");
    let summary: Value = serde_json::from_slice(&out.stdout).expect(&shown);
    assert_eq!(summary["ok"], true, "{shown}");
    assert_eq!(
        summary["turnFailures"]["failedTurns"][0]["teammate"], "greeter",
        "{shown}"
    );
}
