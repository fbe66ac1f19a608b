//! A weak model (SmolLM2-135M was seen doing all of this) against the
//! real agent component and a scripted model: tools that do not exist,
//! `"Write:"` as a name, arguments that are not JSON or do not fit the
//! schema, paths full of HTML entities, the same garbage for ever. Each bad
//! call comes back to the model as an error result it can read, bounded in
//! size; garbage without end stops at the per-turn limit or the budget with
//! one clear message to the lead; a replay of such a run is the live run.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{models, Fixture};
use serde_json::Value;
use teamhost::embed::SpawnRequest;
use teamhost::model::scripted::ScriptedStats;
use teamhost::model::CassetteMode;
use teamhost::protocol::ProtocolMessage;

/// The longest error result a malformed call may come back as.
const MAX_ERROR_CHARS: usize = 2_000;

fn agent(f: &Fixture, name: &str, policy: teamhost::model::ModelPolicy) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::AGENT, "go", f.dir(name));
    req.settings.auto_claim = false;
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req.settings.model_policy = Some(policy);
    req
}

/// Every request recorded in `name`'s cassette, in order.
fn recorded_requests(cassettes: &Path, team: &str, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(cassettes.join(team).join(format!("{name}.jsonl"))).unwrap();
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["request"].clone())
        .collect()
}

/// The tool results (`content`, `is_error`) in a request's last message.
fn last_results(request: &Value) -> Vec<(String, bool)> {
    let messages = request["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b.get("tool-result"))
        .map(|r| {
            (
                r["content"].as_str().unwrap().to_string(),
                r["is-error"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// What the lead's inbox holds about `name`: plain texts from it or from
/// `teamhost`, and the failure reasons of its idle notifications.
fn lead_heard(f: &Fixture, name: &str) -> Vec<String> {
    f.lead_inbox()
        .into_iter()
        .filter_map(|m| {
            if common::is_plain(&m) {
                (m.from == name || m.from == "teamhost").then(|| format!("{}: {}", m.from, m.text))
            } else {
                match common::protocol_of(std::slice::from_ref(&m)).pop() {
                    Some(ProtocolMessage::IdleNotification(n)) if n.from == name => {
                        n.failure_reason.map(|r| format!("{name} failed: {r}"))
                    }
                    _ => None,
                }
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_tool_calls_come_back_to_the_model_as_short_error_results() {
    let huge_name = "W".repeat(20_000);
    let huge_path = "&lt;div&gt;".repeat(10_000);
    let script = serde_json::json!({"agents":[{"name":"wes","match":["You are wes,"],"turns":[
        {"text":"I will use my tools.","tool_use":[
            {"id":"c0","name":"Frobnicate","input":{"x":1}},
            {"id":"c1","name":"Write:","input":{"file_path":"a.txt","content":"b"}},
            {"id":"c2","name":"","input":{}},
            {"id":"c3","name":huge_name,"input":{}},
            {"id":"c4","name":"Read","input":"{\"file_path\": \"a.txt\""},
            {"id":"c5","name":"Read","input":"Read the file please"},
            {"id":"c6","name":"Read","input":{"file_path":5}},
            {"id":"c7","name":"Bash","input":"[\"ls\"]"},
            {"id":"c8","name":"Read","input":{"file_path":"&lt;html&gt;&amp;/index&#x2F;.html"}},
            {"id":"c9","name":"Read","input":{"file_path":huge_path}},
            {"id":"c10","name":"Write","input":{"file_path":"a.txt"}}
        ]},
        {"tool_use":[{"id":"s0","name":"SendMessage","input":{"to":"team-lead","message":"still here","summary":"s"}}]},
        {"text":"done"}]}]})
    .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let (hub, _) = models::hub(&script, CassetteMode::Record, Some(cassettes.clone()));
    let f = Fixture::with_options("weak-calls", models::options(hub));
    f.host
        .spawn(&f.name, agent(&f, "wes", models::policy()))
        .await
        .unwrap();
    f.until("wes to tell the lead it is still here", || {
        lead_heard(&f, "wes") == ["wes: still here"]
    })
    .await;
    f.settle().await;
    assert_eq!(
        lead_heard(&f, "wes"),
        ["wes: still here"],
        "no failure, no notice"
    );

    let requests = recorded_requests(&cassettes, &f.name, "wes");
    assert_eq!(requests.len(), 3, "three calls, the turn went on");
    let results = last_results(&requests[1]);
    assert_eq!(results.len(), 11, "one result per call: {results:#?}");
    let expect = [
        "there is no tool \"Frobnicate\"",
        "there is no tool \"Write:\"",
        "there is no tool \"\"",
        "there is no tool \"WWWW",
        "not valid JSON",
        "not valid JSON",
        "`file_path` must be a string",
        "must be a JSON object",
        "",
        "",
        "`content`",
    ];
    for (i, ((content, is_error), says)) in results.iter().zip(expect).enumerate() {
        assert!(*is_error, "call c{i} is an error: {content}");
        assert!(content.contains(says), "call c{i} says {says:?}: {content}");
        assert!(
            content.chars().count() <= MAX_ERROR_CHARS,
            "call c{i}'s error is bounded: {} characters",
            content.chars().count()
        );
    }
    assert!(!f.dir("wes").join("a.txt").exists(), "no bad call wrote");

    // The names no provider takes back are not sent back to it: the
    // conversation goes on with the next call.
    let names: Vec<&str> = requests[1]["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b.get("tool-use"))
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Frobnicate",
            "invalid_tool_name",
            "invalid_tool_name",
            "invalid_tool_name",
            "Read",
            "Read",
            "Read",
            "Bash",
            "Read",
            "Read",
            "Write"
        ]
    );
}

/// A model that answers every call with the same broken tool call.
fn garbage(name: &str) -> String {
    serde_json::json!({"agents":[{"name":name,"match":[format!("You are {name},")],
        "after_last":"repeat-last","turns":[
        {"text":"Write: Write: Write:","tool_use":[{"name":"Write:","input":"Write: {{{"}]}]}]})
    .to_string()
}

/// Runs `name` on [`garbage`] under `policy` until its turn fails; returns
/// what the lead heard once the team settled.
async fn garbage_run(
    team: &str,
    name: &str,
    policy: teamhost::model::ModelPolicy,
    mode: CassetteMode,
    cassettes: Option<&Path>,
) -> (Fixture, Vec<String>, Arc<ScriptedStats>) {
    garbage_run_told(team, name, policy, mode, cassettes, None, " failed: ").await
}

/// [`garbage_run`] at notification `level`, waiting until the lead heard
/// `until`.
async fn garbage_run_told(
    team: &str,
    name: &str,
    policy: teamhost::model::ModelPolicy,
    mode: CassetteMode,
    cassettes: Option<&Path>,
    level: Option<teamhost::runner::NotificationLevel>,
    until: &str,
) -> (Fixture, Vec<String>, Arc<ScriptedStats>) {
    let (hub, stats) = models::hub(&garbage(name), mode, cassettes.map(Path::to_path_buf));
    let f = Fixture::with_options(team, models::options(hub));
    let mut req = agent(&f, name, policy);
    req.settings.notifications = level;
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("the lead to hear of the garbage turn", || {
        lead_heard(&f, name).iter().any(|h| h.contains(until))
    })
    .await;
    f.settle().await;
    let heard = lead_heard(&f, name);
    (f, heard, stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_garbage_stops_at_the_call_limit_with_one_clear_message() {
    let mut policy = models::policy();
    policy.calls_per_turn = None;
    let (_f, heard, stats) =
        garbage_run("weak-loop", "gus", policy, CassetteMode::Live, None).await;
    assert_eq!(heard.len(), 1, "one message, not one per call: {heard:#?}");
    let said = &heard[0];
    assert!(said.contains("40 model calls"), "{said}");
    assert!(
        said.contains("40 of its 40 tool calls failed")
            && said.contains("there is no tool \"Write:\""),
        "it says what went wrong: {said}"
    );
    assert!(said.contains("stronger model"), "and what to do: {said}");
    assert_eq!(stats.calls(), 40, "the agent's own limit ended it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_garbage_stops_at_the_budget_with_one_clear_message() {
    let mut policy = models::policy();
    policy.calls_per_turn = None;
    policy.budget_tokens = Some(30_000);
    let (_f, heard, stats) =
        garbage_run("weak-budget", "bea", policy, CassetteMode::Live, None).await;
    assert_eq!(heard.len(), 1, "one message, not one per call: {heard:#?}");
    assert!(heard[0].contains("budget is spent"), "{}", heard[0]);
    assert!(
        heard[0].contains("tool calls failed (the last: Error: there is no tool \"Write:\""),
        "{}",
        heard[0]
    );
    assert!(stats.calls() < 40, "the budget ended it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_is_told_by_teamhost_when_idle_notifications_are_kept_out() {
    let mut policy = models::policy();
    policy.calls_per_turn = None;
    policy.budget_tokens = Some(30_000);
    let (_f, heard, _) = garbage_run_told(
        "weak-quiet",
        "qed",
        policy,
        CassetteMode::Live,
        None,
        Some(teamhost::runner::NotificationLevel::None),
        "teamhost: ",
    )
    .await;
    assert_eq!(heard.len(), 1, "{heard:#?}");
    assert!(
        heard[0].starts_with("teamhost: qed: model token budget exhausted"),
        "{}",
        heard[0]
    );
}

/// The conversation the host kept of `name` (tool results included).
fn kept(f: &Fixture, name: &str) -> String {
    let home = teamhost::home::Home::new(&f.home);
    std::fs::read_to_string(teamhost::home::kept::conversation(&home, &f.name, name).unwrap())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_garbage_run_is_the_live_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let mut policy = models::policy();
    policy.calls_per_turn = None;
    policy.budget_tokens = Some(30_000);
    let mut runs = Vec::new();
    for mode in [CassetteMode::Record, CassetteMode::Replay] {
        let (f, heard, stats) =
            garbage_run("weak-replay", "rey", policy.clone(), mode, Some(&cassettes)).await;
        if mode == CassetteMode::Replay {
            assert_eq!(stats.calls(), 0, "the replay needed no provider");
        }
        // A teammate that ends writes its usage record one last time.
        f.host
            .shutdown_team(&f.name, "done", common::LIMIT)
            .await
            .unwrap();
        let mut usage = f.team.model_usage().unwrap().remove("rey").unwrap();
        assert!(usage.last_error.is_some(), "{usage:?}");
        usage.updated_at.clear();
        runs.push((heard, usage, kept(&f, "rey")));
    }
    assert!(runs[0].0[0].contains("budget"), "{:?}", runs[0].0);
    assert_eq!(runs[0].0, runs[1].0, "the same message to the lead");
    assert_eq!(runs[0].1, runs[1].1, "the same usage");
    assert_eq!(
        runs[0].2, runs[1].2,
        "the same conversation and tool results"
    );
}

/// Only the host's words about a call are bounded: a failing command's own
/// output (a test run's failures, what the model needs most) comes back
/// whole, with its exit code, as an error result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_commands_long_output_comes_back_whole() {
    let script = serde_json::json!({"agents":[{"name":"bo","match":["You are bo,"],"turns":[
        {"tool_use":[{"id":"b0","name":"Bash","input":{"command":"echo hi; seq 1 2000; exit 3"}}]},
        {"tool_use":[{"id":"s0","name":"SendMessage","input":{"to":"team-lead","message":"ran it","summary":"s"}}]},
        {"text":"done"}]}]})
    .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let (hub, _) = models::hub(&script, CassetteMode::Record, Some(cassettes.clone()));
    let f = Fixture::with_options("weak-bash", models::options(hub));
    let mut req = agent(&f, "bo", models::policy());
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::BypassPermissions);
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("bo to tell the lead it ran it", || {
        lead_heard(&f, "bo") == ["bo: ran it"]
    })
    .await;
    f.settle().await;
    let requests = recorded_requests(&cassettes, &f.name, "bo");
    let results = last_results(&requests[1]);
    let (content, is_error) = &results[0];
    assert!(*is_error, "a failing command is an error result");
    assert!(
        content.starts_with("hi\n1\n")
            && content.contains("\n2000\n")
            && content.ends_with("Exit code 3"),
        "{} characters: {}…",
        content.len(),
        &content[..content.len().min(200)]
    );
}
