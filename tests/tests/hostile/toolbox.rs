//! Hostile tests of the toolbox (`teamhost:agent/toolbox`): a model's tool
//! calls, written by the `hostile` guest as a model might write them, go
//! through the same sandbox as direct calls. Definitions follow the mode
//! and the rules; each tool works end to end with its effect on disk; bad
//! JSON, paths out of the directory, unknown tools and deny rules are error
//! results for the model, never a trap, and nothing outside the directory
//! is read or changed.

use crate::sandbox_support::{hostile_request, step, wait_done, Arena, Step, SECRET};

/// Sends `name` the command `cmd` (a `model …` line) and waits for its
/// `times`-th `model` command to finish.
async fn run(a: &Arena, name: &str, cmd: &str, times: usize) -> Vec<Step> {
    a.f.host.send_as_lead(&a.f.name, name, cmd, None).unwrap();
    wait_done(&a.f, name, "model", times).await
}

/// The `n`-th result of `model/invoke` (1-based).
fn invoke(steps: &[Step], n: usize) -> &Step {
    steps
        .iter()
        .filter(|s| s.step == "model/invoke")
        .nth(n - 1)
        .unwrap_or_else(|| panic!("no result {n} of model/invoke: {steps:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_a_model_is_given_follow_the_mode_and_the_deny_rules() {
    let a = Arena::new("toolbox-defs").await;
    // Agent, TaskOutput and TaskStop (sub-agents, which never get more than
    // their parent) in every mode, unless a rule denies Agent.
    let all =
        "Read,Write,Edit,Glob,Grep,Bash,SendMessage,TaskCreate,TaskGet,TaskUpdate,TaskList,Agent,TaskOutput,TaskStop";
    let cases: [(&str, &str, &[&str], &str); 4] = [
        ("d-default", "default", &[], all),
        (
            "d-plan",
            "plan",
            &[],
            "Read,Glob,Grep,SendMessage,TaskCreate,TaskGet,TaskUpdate,TaskList,Agent,TaskOutput,TaskStop",
        ),
        (
            "d-delegate",
            "delegate",
            &[],
            // Coordination only (seed 001): no sub-agents either; a lead in
            // delegate mode gets the Agent tool back for teammates alone.
            "SendMessage,TaskCreate,TaskGet,TaskUpdate,TaskList",
        ),
        (
            "d-nobash",
            "bypassPermissions",
            &["Bash", "TaskCreate", "Agent"],
            "Read,Write,Edit,Glob,Grep,SendMessage,TaskGet,TaskUpdate,TaskList",
        ),
    ];
    for (name, mode, deny, expected) in cases {
        let mut req = hostile_request(name, "model tools", &a.dir(name), mode);
        req.settings.rules =
            teamhost::sandbox::ToolRules::new(req.settings.rules.allowed_texts(), deny).unwrap();
        let name = a.spawn(req).await;
        let got = wait_done(&a.f, &name, "model", 1).await;
        assert_eq!(
            step(&got, "model/tools").detail,
            expected,
            "{mode} denying {deny:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tool_runs_end_to_end_through_the_sandbox() {
    let a = Arena::new("toolbox-run").await;
    let name = "tb";
    let dir = a.dir(name);
    let name = a
        .spawn(hostile_request(
            name,
            "model tools",
            &dir,
            "bypassPermissions",
        ))
        .await;
    wait_done(&a.f, &name, "model", 1).await;
    let mut n = 1;
    let mut call = |tool: &str, json: &str| {
        n += 1;
        (format!("model invoke {tool} {json}"), n)
    };

    let (c, k) = call(
        "Write",
        r#"{"file_path":"notes.txt","content":"alpha\nbeta\n"}"#,
    );
    let got = run(&a, &name, &c, k).await;
    let w = invoke(&got, 1);
    assert!(w.ok() && w.detail.contains("notes.txt"), "{w:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "alpha\nbeta\n"
    );

    let (c, k) = call(
        "Edit",
        r#"{"file_path":"notes.txt","old_string":"beta","new_string":"gamma"}"#,
    );
    let got = run(&a, &name, &c, k).await;
    assert!(invoke(&got, 2).ok(), "{:?}", invoke(&got, 2));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );

    let (c, k) = call("Read", r#"{"file_path":"notes.txt"}"#);
    let got = run(&a, &name, &c, k).await;
    let r = invoke(&got, 3);
    // `cat -n` lines: a right-aligned number, a tab (a space once the
    // guest's report flattens it), the line.
    assert!(
        r.ok() && r.detail.contains("     1 alpha") && r.detail.contains("     2 gamma"),
        "{r:?}"
    );

    let (c, k) = call("Glob", r#"{"pattern":"*.txt"}"#);
    let got = run(&a, &name, &c, k).await;
    assert!(
        invoke(&got, 4).detail.contains("notes.txt"),
        "{:?}",
        invoke(&got, 4)
    );

    let (c, k) = call("Grep", r#"{"pattern":"gam+a","output_mode":"content"}"#);
    let got = run(&a, &name, &c, k).await;
    assert!(
        invoke(&got, 5).detail.contains("gamma"),
        "{:?}",
        invoke(&got, 5)
    );

    let (c, k) = call("Bash", r#"{"command":"echo hi; exit 3"}"#);
    let got = run(&a, &name, &c, k).await;
    let b = invoke(&got, 6);
    assert!(
        !b.ok() && b.detail.contains("hi") && b.detail.contains("Exit code 3"),
        "{b:?}"
    );

    let (c, k) = call(
        "TaskCreate",
        r#"{"subject":"Check it","description":"see notes.txt"}"#,
    );
    let got = run(&a, &name, &c, k).await;
    let created = invoke(&got, 7);
    assert!(
        created.detail.starts_with("Task #")
            && created.detail.ends_with("created successfully: Check it"),
        "{created:?}"
    );
    let id = created
        .detail
        .trim_start_matches("Task #")
        .split(' ')
        .next()
        .unwrap()
        .to_string();

    let (c, k) = call(
        "TaskUpdate",
        &format!(r#"{{"taskId":"{id}","status":"in_progress","owner":"{name}"}}"#),
    );
    let got = run(&a, &name, &c, k).await;
    assert_eq!(
        invoke(&got, 8).detail,
        format!("Updated task #{id} status, owner")
    );

    let (c, k) = call("TaskList", "{}");
    let got = run(&a, &name, &c, k).await;
    let line = format!("#{id} [in_progress] Check it ({name})");
    assert!(
        invoke(&got, 9).detail.contains(&line),
        "{:?}",
        invoke(&got, 9)
    );

    let (c, k) = call("TaskGet", &format!(r#"{{"taskId":"{id}"}}"#));
    let got = run(&a, &name, &c, k).await;
    assert!(
        invoke(&got, 10)
            .detail
            .contains("Description: see notes.txt"),
        "{:?}",
        invoke(&got, 10)
    );

    let (c, k) = call(
        "SendMessage",
        &format!(r#"{{"to":"{}","message":"ping","summary":"p"}}"#, a.echo),
    );
    let got = run(&a, &name, &c, k).await;
    let sent: serde_json::Value = serde_json::from_str(&invoke(&got, 11).detail).unwrap();
    assert_eq!(sent["success"], true, "{sent}");
    assert_eq!(sent["routing"]["target"], format!("@{}", a.echo));

    let (c, k) = call(
        "SendMessage",
        r#"{"type":"message","recipient":"nobody","content":"x","summary":"s"}"#,
    );
    let got = run(&a, &name, &c, k).await;
    let missing = invoke(&got, 12);
    let v: serde_json::Value = serde_json::from_str(&missing.detail).unwrap();
    assert!(!missing.ok() && v["success"] == false, "{missing:?}");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_model_output_is_an_error_result_and_reaches_nothing_outside() {
    let a = Arena::new("toolbox-hostile").await;
    let name = "tbh";
    let dir = a.dir(name);
    let mut req = hostile_request(name, "model tools", &dir, "bypassPermissions");
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(req.settings.rules.allowed_texts(), vec!["Bash(curl:*)"])
            .unwrap();
    let name = a.spawn(req).await;
    wait_done(&a.f, &name, "model", 1).await;
    let attempts = [
        ("Read", "{not json".to_string(), "not valid JSON"),
        (
            "Read",
            "[\"/etc/passwd\"]".to_string(),
            "must be a JSON object",
        ),
        (
            "Read",
            r#"{"file_path":"/etc/passwd"}"#.to_string(),
            "outside",
        ),
        (
            "Read",
            r#"{"file_path":"../sentinel/secret.txt"}"#.to_string(),
            "outside",
        ),
        (
            "Write",
            r#"{"file_path":"../sentinel/pwned.txt","content":"x"}"#.to_string(),
            "outside",
        ),
        (
            "Edit",
            r#"{"file_path":"../sentinel/secret.txt","old_string":"TOP","new_string":"X"}"#
                .to_string(),
            "outside",
        ),
        ("rm", "{}".to_string(), "there is no tool"),
        (
            "Bash",
            r#"{"command":"curl http://example.com"}"#.to_string(),
            "denied",
        ),
        (
            "Read",
            format!(r#"{{"file_path":"{}"}}"#, "a".repeat(100_000)),
            "Error",
        ),
    ];
    for (i, (tool, json, expect)) in attempts.iter().enumerate() {
        let got = run(&a, &name, &format!("model invoke {tool} {json}"), i + 2).await;
        let r = invoke(&got, i + 1);
        assert!(!r.ok(), "{tool} {json:.60} should have failed: {r:?}");
        let outside = *expect == "outside" && r.detail.contains("climbs out");
        assert!(
            r.detail.contains(expect) || outside,
            "{tool} {json:.60}: expected {expect:?} in {r:?}"
        );
        assert!(
            !r.detail.contains(SECRET) && !r.detail.contains("root:x:0:0"),
            "{r:?}"
        );
    }
    // The teammate is alive and the sentinel untouched.
    a.assert_contained().await;
}
