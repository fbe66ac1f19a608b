//! Summarising compaction (`guests/agent/src/compaction.rs`) on the real
//! agent component: a conversation three times the model's context window
//! is carried to its end, every request inside the window, the oldest part
//! summarised by the model and the summary in the next request.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{models, Fixture};
use serde_json::Value;
use teamhost::embed::SpawnRequest;
use teamhost::model::scripted::{Script, Scripted};
use teamhost::model::{CassetteMode, ModelHub};

/// The model's context window in this test, in tokens.
const WINDOW: u64 = 16_000;
/// Reads of a file of [`FILE_CHARS`]: three windows' worth of results.
const READS: usize = 32;
const FILE_CHARS: usize = 6_000;
const SUMMARY: &str = "SUMMARY-7Q: cam read big.txt again and again; nothing changed.";

/// The script: `cam` reads big.txt [`READS`] times, tells the lead and
/// ends; with `summariser`, an agent answers the summary calls.
fn script(summariser: bool) -> String {
    let mut turns: Vec<Value> = (0..READS)
        .map(|i| {
            serde_json::json!({"tool_use":[{"id":format!("r{i}"),"name":"Read","input":{"file_path":"big.txt"}}]})
        })
        .collect();
    turns.push(
        serde_json::json!({"tool_use":[{"id":"s","name":"SendMessage",
        "input":{"to":"team-lead","message":"all read","summary":"s"}}]}),
    );
    turns.push(serde_json::json!({"text":"done"}));
    let mut agents = vec![serde_json::json!(
        {"name":"cam","match":["You are cam,"],"turns_by":"calls","turns":turns})];
    if summariser {
        agents.insert(
            0,
            serde_json::json!({"name":"summariser","match":["You summarise the earlier part"],
                "after_last":"repeat-last","turns":[{"text":SUMMARY}]}),
        );
    }
    serde_json::json!({ "agents": agents }).to_string()
}

/// Runs `cam` on [`script`] in a [`WINDOW`]-token window until it tells
/// the lead it is done; returns every call in its cassette (request and
/// response), in order.
async fn run(team: &str, summariser: bool) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let (calls, _) = run_in(team, summariser, CassetteMode::Record, &cassettes).await;
    calls
}

/// [`run`] in `mode` with the cassettes in `cassettes`; also returns the
/// provider calls made.
async fn run_in(
    team: &str,
    summariser: bool,
    mode: CassetteMode,
    cassettes: &Path,
) -> (Vec<Value>, u64) {
    let mut config = models::config();
    let fake = config.models.get_mut("fake").unwrap();
    fake.context_window = WINDOW as u32;
    fake.max_output_tokens = 1_000;
    let hub = ModelHub::new(config, mode, Some(cassettes.to_path_buf())).unwrap();
    let scripted = Arc::new(Scripted::new(Script::parse(&script(summariser)).unwrap()));
    let stats = scripted.stats();
    hub.set_provider("script", scripted);
    let f = Fixture::with_options(team, models::options(hub));
    let mut policy = models::policy();
    policy.calls_per_turn = None;
    let mut req = SpawnRequest::new("cam", teamhost_tests::AGENT, "read big.txt", f.dir("cam"));
    req.settings.auto_claim = false;
    req.settings.model_policy = Some(policy);
    std::fs::write(
        req.cwd.join("big.txt"),
        "0123456789\n".repeat(FILE_CHARS / 11),
    )
    .unwrap();
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("cam to finish its reading", || {
        f.lead_inbox()
            .iter()
            .any(|m| m.from == "cam" && m.text == "all read")
    })
    .await;
    f.settle().await;
    let text = std::fs::read_to_string(cassettes.join(&f.name).join("cam.jsonl")).unwrap();
    let calls = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (calls, stats.calls())
}

fn is_summary(c: &Value) -> bool {
    c["request"]["system"]
        .as_str()
        .unwrap()
        .starts_with("You summarise the earlier part")
}

/// Checks that no request, with its answer's room, was larger than the
/// window (the scripted model counts a request's JSON characters / 4).
fn inside_the_window(calls: &[Value]) {
    for (i, c) in calls.iter().enumerate() {
        let input = c["response"]["usage"]["input-tokens"].as_u64().unwrap();
        let room = c["request"]["max-tokens"].as_u64().unwrap();
        assert!(
            input + room <= WINDOW,
            "call {i}: {input} tokens in + {room} out > {WINDOW}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_three_windows_long_is_summarised_and_finishes() {
    let calls = run("compact", true).await;
    let worker: Vec<&Value> = calls.iter().filter(|c| !is_summary(c)).collect();
    assert_eq!(worker.len(), READS + 2, "every scripted turn was played");

    // The whole run held three windows of tool results.
    let read: usize = worker
        .iter()
        .filter_map(|c| c["response"]["content"][0].get("tool-use"))
        .filter(|u| u["name"] == "Read")
        .count()
        * FILE_CHARS;
    assert!(read / 4 >= 3 * WINDOW as usize, "{read} characters read");

    inside_the_window(&calls);

    // Summary calls happened, without tools, and each summary is in the
    // next request of the conversation, marked.
    let first_summary = calls.iter().position(is_summary).expect("a summary call");
    assert!(calls[first_summary]["request"].get("tools").is_none());
    let after = calls[first_summary + 1..]
        .iter()
        .find(|c| !is_summary(c))
        .unwrap();
    let sent = after["request"]["messages"].to_string();
    assert!(sent.contains(SUMMARY), "{sent}");
    assert!(
        sent.contains("[Summary of the earlier conversation"),
        "{sent}"
    );

    // The first message survived every compaction.
    let first = &worker[0]["request"]["messages"][0]["content"][0];
    assert!(
        first["text"].as_str().unwrap().contains("read big.txt"),
        "{first}"
    );
    for (i, c) in worker.iter().enumerate() {
        assert_eq!(
            &c["request"]["messages"][0]["content"][0], first,
            "call {i}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_summary_call_fails_the_oldest_part_is_dropped_with_a_note() {
    // No agent of the script answers the summary calls: each one fails.
    let calls = run("compact-drop", false).await;
    assert!(
        calls.iter().all(|c| !is_summary(c)),
        "failed calls are not recorded"
    );
    assert_eq!(calls.len(), READS + 2, "the run finished");
    inside_the_window(&calls);
    let noted = calls
        .iter()
        .map(|c| c["request"]["messages"].to_string())
        .find(|m| m.contains("[Earlier parts of this conversation were dropped"))
        .expect("a request with the note");
    assert!(noted.contains("summarising them failed"), "{noted}");
    assert!(
        noted.contains("no scripted agent matches"),
        "the note says why: {noted}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summarised_run_replays_with_no_provider() {
    // After a compaction the conversation holds fewer assistant messages:
    // cassette keys repeat, and are answered in recorded order.
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let (recorded, made) = run_in("compact-replay", true, CassetteMode::Record, &cassettes).await;
    assert!(recorded.iter().any(is_summary) && made > 0);
    let (replayed, made) = run_in("compact-replay", true, CassetteMode::Replay, &cassettes).await;
    assert_eq!(made, 0, "the replay needed no provider");
    assert_eq!(replayed, recorded, "the cassette is as recorded");
}
