//! The LLM teammate (`guests/agent`) end to end with real components and a
//! scripted model: its conversation persists across turns, it approves
//! shutdown without asking the model, plan mode goes through the lead, a
//! drifted replay fails visibly, a task it finishes is reported resolved,
//! and the offline example (`examples/llm-team`) completes from its
//! checked-in cassettes through the real `teamhost run`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{models, Fixture};
use teamhost::approvals::PlanAnswer;
use teamhost::embed::{SpawnRequest, TeammateState};
use teamhost::model::CassetteMode;

fn agent(f: &Fixture, name: &str, prompt: &str) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::AGENT, prompt, f.dir(name));
    req.settings.auto_claim = false;
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req.settings.model_policy = Some(models::policy());
    req
}

/// Plain texts `from` sent the lead.
fn said(f: &Fixture, from: &str) -> Vec<String> {
    f.lead_inbox()
        .into_iter()
        .filter(|m| m.from == from && common::is_plain(m))
        .map(|m| m.text)
        .collect()
}

fn state(f: &Fixture, name: &str) -> Option<TeammateState> {
    f.host
        .teammates(&f.name)
        .into_iter()
        .find(|t| t.name == name)
        .map(|t| t.state)
}

/// A script for `name` whose even turns send the lead `say[i]` and whose odd
/// turns end the turn.
fn talker(name: &str, say: &[&str]) -> String {
    let mut turns = Vec::new();
    for (i, text) in say.iter().enumerate() {
        turns.push(format!(
            r#"{{"tool_use":[{{"id":"t{i}","name":"SendMessage","input":{{"to":"team-lead","message":"{text}","summary":"s"}}}}]}}"#
        ));
        turns.push(r#"{"text":"done"}"#.to_string());
    }
    format!(
        r#"{{"agents":[{{"name":"{name}","match":["You are {name},"],"turns":[{}]}}]}}"#,
        turns.join(",")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_persists_across_turns() {
    // The scripted model answers by position in the conversation: had the
    // agent started afresh, its second turn would get the first answer again.
    let (hub, stats) = models::hub(
        &talker("ann", &["first", "second"]),
        CassetteMode::Live,
        None,
    );
    let f = Fixture::with_options("persist", models::options(hub));
    f.host
        .spawn(&f.name, agent(&f, "ann", "hello"))
        .await
        .unwrap();
    f.until("ann's first message", || said(&f, "ann") == ["first"])
        .await;
    f.settle().await;
    f.host.send_as_lead(&f.name, "ann", "go on", None).unwrap();
    f.until("ann's second message", || {
        said(&f, "ann") == ["first", "second"]
    })
    .await;
    common::bounded("ann's last call", stats.until(|s| s.calls() == 4)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_request_is_approved_without_asking_the_model() {
    let (hub, stats) = models::hub(&talker("bob", &["hi"]), CassetteMode::Live, None);
    let f = Fixture::with_options("agent-stop", models::options(hub));
    f.host
        .spawn(&f.name, agent(&f, "bob", "hello"))
        .await
        .unwrap();
    f.until("bob's message", || said(&f, "bob") == ["hi"]).await;
    f.settle().await;
    let report = f
        .host
        .shutdown_team(&f.name, "done", common::LIMIT)
        .await
        .unwrap();
    assert_eq!(
        state(&f, "bob"),
        Some(TeammateState::Completed),
        "{report:?}"
    );
    assert_eq!(stats.calls(), 2, "the shutdown turn made no model call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_sends_the_models_plan_and_works_after_approval() {
    let script = r#"{"agents":[{"name":"pat","match":["You are pat,"],"turns":[
      {"tool_use":[{"id":"w0","name":"Write","input":{"file_path":"early.txt","content":"x"}}]},
      {"text":"PLAN: write done.txt with the word done."},
      {"tool_use":[{"id":"w1","name":"Write","input":{"file_path":"done.txt","content":"done"}}]},
      {"text":"written"}]}]}"#;
    let (hub, _) = models::hub(script, CassetteMode::Live, None);
    let f = Fixture::with_options("agent-plan", models::options(hub));
    let mut req = agent(&f, "pat", "write done.txt");
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::Plan);
    req.settings.plan_mode_required = true;
    let dir = req.cwd.clone();
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("pat's plan", || !plan_requests(&f).is_empty())
        .await;
    let (id, plan) = plan_requests(&f).remove(0);
    assert_eq!(plan, "PLAN: write done.txt with the word done.");
    // The Write the model tried while planning was refused.
    assert!(!dir.join("early.txt").exists());
    assert!(!dir.join("done.txt").exists());

    f.host
        .answer_plan(
            &f.name,
            &id,
            PlanAnswer::Approve {
                mode: Some(teamhost::sandbox::PermissionMode::AcceptEdits),
            },
        )
        .unwrap();
    f.until("pat to carry the plan out", || {
        dir.join("done.txt").exists()
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(dir.join("done.txt")).unwrap(),
        "done"
    );
}

/// `(requestId, planContent)` of every plan request in the lead's inbox.
fn plan_requests(f: &Fixture) -> Vec<(String, String)> {
    f.lead_inbox()
        .iter()
        .filter_map(|m| serde_json::from_str::<serde_json::Value>(&m.text).ok())
        .filter(|v| v["type"] == "plan_approval_request")
        .map(|v| {
            (
                v["requestId"].as_str().unwrap().to_string(),
                v["planContent"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const READER: &str = r#"{"agents":[{"name":"rex","match":["You are rex,"],"turns":[
  {"tool_use":[{"id":"r0","name":"Read","input":{"file_path":"input.txt"}}]},
  {"tool_use":[{"id":"r1","name":"SendMessage","input":{"to":"team-lead","message":"read it","summary":"s"}}]},
  {"text":"done"}]}]}"#;

/// Runs `rex` (reads input.txt, tells the lead) in `mode` against the
/// cassettes in `cassettes`, with `input` in its file.
async fn reader(team: &str, mode: CassetteMode, cassettes: &Path, input: &str) -> Fixture {
    let (hub, _) = models::hub(READER, mode, Some(cassettes.to_path_buf()));
    let f = Fixture::with_options(team, models::options(hub));
    let req = agent(&f, "rex", "read input.txt");
    std::fs::write(req.cwd.join("input.txt"), input).unwrap();
    f.host.spawn(&f.name, req).await.unwrap();
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_that_drifted_fails_the_turn_and_says_where() {
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let f = reader("drift", CassetteMode::Record, &cassettes, "one\n").await;
    f.until("rex to report", || said(&f, "rex") == ["read it"])
        .await;
    drop(f);

    // The same file: the replay matches and needs no provider call.
    let f = reader("drift", CassetteMode::Replay, &cassettes, "one\n").await;
    f.until("rex to report on replay", || said(&f, "rex") == ["read it"])
        .await;
    drop(f);

    // Another file: the Read result in the second request differs.
    let f = reader("drift", CassetteMode::Replay, &cassettes, "two\n").await;
    // The lead hears of the failed turn, with where the request drifted.
    let drift = || {
        f.lead_inbox()
            .into_iter()
            .map(|m| m.text)
            .find(|t| t.contains("drift"))
    };
    f.until("the lead to hear of the drift", || drift().is_some())
        .await;
    let why = drift().unwrap();
    assert!(why.contains("request.messages[2].content[0]"), "{why}");
    assert!(said(&f, "rex").is_empty(), "a drifted turn sent nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_the_model_completes_is_reported_resolved() {
    // The first answer ends the initial turn; the task turn gets the next.
    let script = r#"{"agents":[{"name":"tia","match":["You are tia,"],"turns":[
      {"text":"ready"},
      {"tool_use":[{"id":"u0","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}}]},
      {"text":"done"}]}]}"#;
    let (hub, _) = models::hub(script, CassetteMode::Live, None);
    let f = Fixture::with_options("agent-task", models::options(hub));
    f.team
        .create_task(teamhost::store::NewTask {
            subject: "Do it".into(),
            description: "anything".into(),
            ..Default::default()
        })
        .unwrap();
    let mut req = agent(&f, "tia", "hello");
    req.settings.auto_claim = true;
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("task #1 to be completed by tia", || {
        f.lead_protocol().iter().any(|p| {
            matches!(p, teamhost::protocol::ProtocolMessage::IdleNotification(n)
                if n.completed_task_id.as_deref() == Some("1") && n.completed_status.as_deref() == Some("resolved"))
        })
    })
    .await;
}

/// Copies `examples/llm-team` (manifest, repository, cassettes) to `to`,
/// with the component path made absolute.
fn copy_example(to: &Path) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/llm-team");
    let manifest = std::fs::read_to_string(example.join("team.toml"))
        .unwrap()
        .replace(
            "../../target/guests/wasm32-wasip2/release/agent.wasm",
            teamhost_tests::AGENT,
        );
    std::fs::write(to.join("team.toml"), manifest).unwrap();
    for (from, dest) in [
        ("repo", "work"),
        ("cassettes/llm-team", "cassettes/llm-team"),
    ] {
        let dest = to.join(dest);
        std::fs::create_dir_all(&dest).unwrap();
        for entry in std::fs::read_dir(example.join(from)).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), dest.join(entry.file_name())).unwrap();
            }
        }
    }
    to.join("team.toml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offline_example_team_fixes_the_bug_from_its_cassettes() {
    use clap::Parser;
    let tmp = tempfile::tempdir().unwrap();
    let manifest = copy_example(tmp.path());
    let home = tmp.path().join("home");
    let argv = [
        "teamhost",
        "run",
        manifest.to_str().unwrap(),
        "--home",
        home.to_str().unwrap(),
        "--json",
    ];
    let parsed = teamhost::cli::Cli::try_parse_from(argv).unwrap();
    // `teamhost run` exits non-zero unless every task is completed.
    tokio::task::spawn_blocking(move || teamhost::cli::run(parsed))
        .await
        .unwrap()
        .unwrap();
    let fixed = std::fs::read_to_string(tmp.path().join("work/mathutil.py")).unwrap();
    assert!(fixed.contains("sum(values) / len(values)"), "{fixed}");
    assert!(tmp.path().join("work/test_textutil.py").is_file());
    let out = std::process::Command::new("python3")
        .args(["-m", "unittest", "-q", "test_mathutil", "test_textutil"])
        .current_dir(tmp.path().join("work"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
