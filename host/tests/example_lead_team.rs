//! `examples/lead-team` replayed from its cassettes by the real binary
//! (issue 29): the LLM lead forms its team, creates two tasks, spawns
//! `fixer` and `tester` from the catalogue, approves fixer's plan, the
//! `[approvals]` policy denies tester's `rm`, the lead shuts both down and
//! deletes the team, and the repository's tests pass afterwards.
//!
//! It lives here rather than in tests/tests because it runs the `teamhost`
//! binary (`CARGO_BIN_EXE_teamhost`), as `examples/lead-team/run` does.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The example's directory in the repository.
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/lead-team")
}

/// Copies the files of `from` (not its directories) into `to`.
fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Copies the example (manifest with the components made absolute,
/// `repo/` as `work/`, the cassettes) to `to`, as its `run` script does.
fn copy_example(to: &Path) -> PathBuf {
    let manifest = std::fs::read_to_string(example().join("team.toml"))
        .unwrap()
        .replace(
            "../../target/guests/wasm32-wasip2/release/lead.wasm",
            teamhost_tests::LEAD,
        )
        .replace(
            "../../target/guests/wasm32-wasip2/release/agent.wasm",
            teamhost_tests::AGENT,
        );
    assert!(!manifest.contains("../../target"), "{manifest}");
    std::fs::write(to.join("team.toml"), manifest).unwrap();
    copy_files(&example().join("repo"), &to.join("work"));
    copy_files(
        &example().join("cassettes/lead-team"),
        &to.join("cassettes/lead-team"),
    );
    to.join("team.toml")
}

/// The tool results the lead's model was given, in order.
fn tool_results(conversation: &Value) -> Vec<String> {
    conversation["messages"]
        .as_array()
        .expect("a kept conversation has messages")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["tool-result"]["content"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_offline_lead_team_forms_works_decides_and_deletes_itself_from_its_cassettes() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = copy_example(dir.path());
    let home = dir.path().join("home");
    let out = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(&home)
        .args([
            "run",
            manifest.to_str().unwrap(),
            "--json",
            "--timeout",
            "60",
        ])
        .output()
        .expect("the teamhost binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{stderr}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.status.success(), "{shown}");
    let summary: Value = serde_json::from_slice(&out.stdout).expect(&shown);
    assert_eq!(summary["outcome"], "completed", "{shown}");
    // The shape of every run's summary, read before the lead deleted its
    // team: ok, the tasks, the teammates with their model use, the mail,
    // the spending.
    assert_eq!(summary["ok"], true, "{shown}");
    let tasks = summary["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{shown}");
    assert!(tasks.iter().all(|t| t["status"] == "completed"), "{shown}");
    let mates: Vec<&str> = summary["teammates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for name in ["team-lead", "fixer", "tester"] {
        assert!(mates.contains(&name), "no {name} in {shown}");
    }
    assert!(
        summary["messages"]["total"].as_u64().unwrap() > 0,
        "{shown}"
    );
    assert!(summary["modelSpending"].is_string(), "{shown}");

    // The summary's decisions: the plan by the lead, the `rm` by the policy.
    let decisions = &summary["decisions"];
    assert_eq!(decisions["byLead"], 1, "{shown}");
    assert_eq!(decisions["byPolicy"], 1, "{shown}");
    assert_eq!(decisions["byPerson"], 0, "{shown}");
    assert_eq!(decisions["escalated"], 0, "{shown}");
    let items = decisions["items"].as_array().unwrap();
    let plan = items
        .iter()
        .find(|i| i["tool"].is_null())
        .expect("a plan decision");
    assert_eq!(
        (&plan["from"], &plan["decider"], &plan["outcome"]),
        (&"fixer".into(), &"lead".into(), &"approved".into()),
        "{shown}"
    );
    let rm = items
        .iter()
        .find(|i| i["tool"] == "Bash")
        .expect("a Bash decision");
    assert_eq!(
        (&rm["from"], &rm["decider"], &rm["outcome"]),
        (&"tester".into(), &"policy".into(), &"denied".into()),
        "{shown}"
    );
    assert!(
        rm["summary"].as_str().unwrap().starts_with("rm "),
        "{shown}"
    );
    assert!(
        rm["reason"].as_str().unwrap().contains("Bash(rm:*)"),
        "{shown}"
    );

    // Both tasks created by the lead and completed by the teammates it
    // spawned from the catalogue.
    for line in [
        "tasks      #1 pending: Fix the failing test in test_mathutil.py",
        "tasks      #2 pending: Test textutil.slug",
        "tasks      #1 completed, owner fixer:",
        "tasks      #2 completed, owner tester:",
    ] {
        assert!(stderr.contains(line), "no {line:?} in\n{shown}");
    }

    // What the lead's tools answered it, from its kept conversation.
    let kept = home.join("kept/lead-team/team-lead.conversation.json");
    let conversation: Value =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let results = tool_results(&conversation);
    // The summary counts every call the lead made, its last one (in the
    // turn that deleted the team) included: one answer each in its
    // conversation.
    let answers = conversation["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count() as u64;
    let lead = summary["teammates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "team-lead")
        .unwrap();
    assert_eq!(lead["model"]["calls"], answers, "{shown}");
    assert!(lead["model"]["waitingSince"].is_null(), "{shown}");
    let said = |what: &str| results.iter().any(|r| r.contains(what));
    for what in [
        r#""lead_agent_id":"team-lead@lead-team""#,
        "Task #1 created successfully",
        "Task #2 created successfully",
        r#""teammate_id":"fixer@lead-team","agent_id":"fixer@lead-team","agent_type":"fixer""#,
        r#""teammate_id":"tester@lead-team","agent_id":"tester@lead-team","agent_type":"tester""#,
        "Plan approved",
        "Shutdown request sent to fixer",
        "Shutdown request sent to tester",
    ] {
        assert!(said(what), "no tool result with {what}: {results:#?}");
    }
    // The first TeamDelete succeeded: the team is gone.
    let deleted = results
        .iter()
        .position(|r| r.contains("Cleaned up"))
        .expect("a TeamDelete that succeeded");
    assert!(
        !results[..deleted]
            .iter()
            .any(|r| r.contains("still members")),
        "{results:#?}"
    );
    let team = home.join("teams/lead-team");
    assert!(!team.join("config.json").exists());
    assert!(!team.join("inboxes").exists());

    // The repository's tests pass, the new one included.
    let work = dir.path().join("work");
    assert!(work.join("test_textutil.py").is_file());
    let tests = Command::new("python3")
        .args(["-m", "unittest", "-q", "test_mathutil", "test_textutil"])
        .current_dir(&work)
        .output()
        .unwrap();
    assert!(
        tests.status.success(),
        "{}",
        String::from_utf8_lossy(&tests.stderr)
    );
}

/// Whether `file` (a JSON record) exists and holds `text`.
fn holds(file: &Path, text: &str) -> bool {
    std::fs::read_to_string(file).is_ok_and(|s| s.contains(text))
}

/// The lead's kept conversation's messages (none when it is not there).
fn lead_messages(kept: &Path) -> Vec<Value> {
    std::fs::read_to_string(kept.join("team-lead.conversation.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|c| c["messages"].as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn the_offline_lead_team_killed_after_its_spawns_resumes_with_its_llm_lead_s_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = copy_example(dir.path());
    let home = dir.path().join("home");
    let run = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_teamhost"));
        c.arg("--home")
            .arg(&home)
            .args(["run", manifest.to_str().unwrap(), "--timeout", "60"])
            .args(extra);
        c
    };
    let mut first = run(&["--lines"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the lead has spawned both teammates (the seat keeps
    // tester before its spawn returns), whatever it is doing then.
    let kept = home.join("kept/lead-team");
    crate::run_common::wait_on_files(&[&home], "tester spawned", || {
        holds(&kept.join("tester.spawn.json"), "tester")
            && holds(&kept.join(".lead.json"), "tester")
    });
    first.kill().unwrap(); // SIGKILL
    let _ = first.wait();
    let before = lead_messages(&kept);
    assert!(!before.is_empty());
    let out = run(&["--resume", "--json", "--keep"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{stderr}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains("resumed the lead"), "{shown}");
    let summary: Value = serde_json::from_slice(&out.stdout).expect(&shown);
    // The lead created no task again. (Whether the replayed teammates
    // finish theirs depends, like the lead's ending below, on where the
    // cut fell in the recording.)
    let tasks = summary["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{shown}");
    // The lead went on from its first life's conversation.
    let after = lead_messages(&kept);
    assert!(after.len() > before.len(), "{shown}");
    assert_eq!(after[..before.len()], before[..], "{shown}");
    // How the replayed lead ends depends on where it was cut: a cassette
    // answers by position, and the resume's report is one message more.
    // Either it deletes its team, or the run ends saying nothing was left
    // to wake it: never a hang. Live, the model reads its messages.
    match summary["outcome"].as_str() {
        Some("completed") => assert_eq!(summary["ok"], true, "{shown}"),
        Some("stuck") => assert!(
            summary["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("nothing was left to wake the lead")),
            "{shown}"
        ),
        _ => panic!("{shown}"),
    }
}
