//! Sub-agents of the LLM teammate (`guests/agent`) on a scripted model,
//! recorded to cassettes and replayed: the `Agent` tool's synchronous
//! result is the tool result the model sees, a background sub-agent's
//! `<task-notification>` is the model's next turn, and SendMessage to a
//! finished sub-agent resumes it with its conversation.
//!
//! What the model saw is read back from the parent's cassette (the requests
//! it was sent), so the tests check the conversation itself.

use crate::common;

use std::path::Path;

use common::{models, Fixture};
use teamhost::embed::SpawnRequest;
use teamhost::model::CassetteMode;

fn agent(f: &Fixture, name: &str, prompt: &str) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::AGENT, prompt, f.dir(name));
    req.settings.auto_claim = false;
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req.settings.model_policy = Some(models::policy());
    req
}

fn said(f: &Fixture, from: &str) -> Vec<String> {
    f.lead_inbox()
        .into_iter()
        .filter(|m| m.from == from && common::is_plain(m))
        .map(|m| m.text)
        .collect()
}

/// The requests `teammate` sent, from its cassette, oldest first.
fn requests(cassettes: &Path, team: &str, teammate: &str) -> Vec<serde_json::Value> {
    let text =
        std::fs::read_to_string(cassettes.join(team).join(format!("{teammate}.jsonl"))).unwrap();
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["request"].clone())
        .collect()
}

/// The texts of the last message of `request` (text and tool-result blocks).
fn last_message(request: &serde_json::Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    messages.last().unwrap().to_string()
}

/// Runs `ann` with `script` in `mode` until she tells the lead `done`.
async fn run(team: &str, script: &str, mode: CassetteMode, cassettes: &Path) -> Fixture {
    let (hub, _) = models::hub(script, mode, Some(cassettes.to_path_buf()));
    let f = Fixture::with_options(team, models::options(hub));
    f.host.spawn(&f.name, agent(&f, "ann", "go")).await.unwrap();
    f.until("ann to tell the lead done", || said(&f, "ann") == ["done"])
        .await;
    f
}

const SYNC: &str = r#"{"agents":[
 {"name":"sub","match":["SUBTASK-SYNC"],"turns":[{"text":"the answer is 42"}]},
 {"name":"ann","match":["You are ann,"],"turns":[
   {"tool_use":[{"id":"c1","name":"Agent","input":{"description":"find the answer","prompt":"SUBTASK-SYNC: what is the answer?"}}]},
   {"tool_use":[{"id":"c2","name":"SendMessage","input":{"to":"team-lead","message":"done","summary":"s"}}]},
   {"text":"ok"}]}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_tools_synchronous_result_is_the_tool_result_and_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let f = run("sub-llm-sync", SYNC, CassetteMode::Record, &cassettes).await;
    let seen = requests(&cassettes, &f.name, "ann");
    let result = last_message(&seen[1]);
    assert!(
        result.contains("\"c1\""),
        "the answer to the Agent call: {result}"
    );
    assert!(result.contains("the answer is 42"), "{result}");
    assert!(result.contains("agentId: a"), "{result}");
    assert!(result.contains("<usage>total_tokens: "), "{result}");
    // The sub-agent had its own conversation, with its own system prompt.
    let sub = std::fs::read_dir(cassettes.join(&f.name))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("ann.a"))
        .expect("the sub-agent's cassette");
    let sub_seen = requests(&cassettes, &f.name, sub.trim_end_matches(".jsonl"));
    assert_eq!(sub_seen.len(), 1);
    assert!(sub_seen[0]["system"]
        .as_str()
        .unwrap()
        .contains("a sub-agent started by ann"));
    drop(f);

    // Replayed: the same conversation, no provider call.
    let f = run("sub-llm-sync", SYNC, CassetteMode::Replay, &cassettes).await;
    assert_eq!(said(&f, "ann"), ["done"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_sub_agents_notification_is_the_models_next_turn() {
    let script = r#"{"agents":[
     {"name":"sub","match":["SUBTASK-BG"],"turns":[{"text":"background work finished"}]},
     {"name":"ann","match":["You are ann,"],"turns":[
       {"tool_use":[{"id":"c1","name":"Agent","input":{"description":"bg job","prompt":"SUBTASK-BG: work","run_in_background":true}}]},
       {"text":"launched; waiting"},
       {"tool_use":[{"id":"c2","name":"SendMessage","input":{"to":"team-lead","message":"done","summary":"s"}}]},
       {"text":"ok"}]}]}"#;
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let f = run("sub-llm-bg", script, CassetteMode::Record, &cassettes).await;
    let seen = requests(&cassettes, &f.name, "ann");
    let launched = last_message(&seen[1]);
    assert!(
        launched.contains("Async agent launched successfully"),
        "{launched}"
    );
    let note = last_message(&seen[2]);
    assert!(note.contains("<task-notification>"), "{note}");
    assert!(note.contains("<tool-use-id>c1</tool-use-id>"), "{note}");
    assert!(note.contains("<status>completed</status>"), "{note}");
    assert!(
        note.contains("<result>background work finished</result>"),
        "{note}"
    );
    assert!(!note.contains("teammate-message"), "shown as it is: {note}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_message_to_a_finished_sub_agent_resumes_its_conversation() {
    // The sub-agent's script answers by position: a fresh start would get
    // "first answer" again.
    let script = r#"{"agents":[
     {"name":"sub","match":["SUBTASK-RESUME"],"turns":[{"text":"first answer"},{"text":"second answer, with context"}]},
     {"name":"ann","match":["You are ann,"],"turns":[
       {"tool_use":[{"id":"c1","name":"Agent","input":{"description":"resumable","prompt":"SUBTASK-RESUME: begin","name":"helper"}}]},
       {"tool_use":[{"id":"c2","name":"SendMessage","input":{"to":"helper","message":"continue please","summary":"more"}}]},
       {"text":"waiting"},
       {"tool_use":[{"id":"c3","name":"SendMessage","input":{"to":"team-lead","message":"done","summary":"s"}}]},
       {"text":"ok"}]}]}"#;
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let f = run("sub-llm-resume", script, CassetteMode::Record, &cassettes).await;
    let seen = requests(&cassettes, &f.name, "ann");
    assert!(last_message(&seen[1]).contains("first answer"));
    let sent = last_message(&seen[2]);
    assert!(sent.contains("resumed in the background"), "{sent}");
    let note = last_message(&seen[3]);
    assert!(
        note.contains("<result>second answer, with context</result>"),
        "{note}"
    );
    // The finished sub-agent's instance was let go; its resumption came
    // back from the conversation the host kept for it, under its name.
    let kept: Vec<_> = std::fs::read_dir(f.home.join("kept").join(&f.name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("ann.a") && n.ends_with(".conversation.json")
        })
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let text = std::fs::read_to_string(&kept[0]).unwrap();
    assert!(
        text.contains("first answer")
            && text.contains("continue please")
            && text.contains("second answer"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_agent_definition_gives_its_prompt_and_tools() {
    use teamhost::teammate::{Definition, Definitions};
    let script = r#"{"agents":[
     {"name":"rev","match":["REVIEWER-DEFINITION"],"turns":[
       {"tool_use":[{"id":"w","name":"Write","input":{"file_path":"x.txt","content":"no"}}]},
       {"text":"reviewed"}]},
     {"name":"ann","match":["You are ann,"],"turns":[
       {"tool_use":[{"id":"c1","name":"Agent","input":{"description":"review","prompt":"review it","subagent_type":"reviewer"}}]},
       {"tool_use":[{"id":"c2","name":"SendMessage","input":{"to":"team-lead","message":"done","summary":"s"}}]},
       {"text":"ok"}]}]}"#;
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let (hub, _) = models::hub(script, CassetteMode::Record, Some(cassettes.clone()));
    let f = Fixture::with_options("sub-llm-def", models::options(hub));
    let mut defs = Definitions::new();
    defs.insert(Definition {
        name: "reviewer".into(),
        description: "reviews".into(),
        prompt: "You are the REVIEWER-DEFINITION. Read, never write.".into(),
        tools: Some(vec!["Read".into(), "Grep".into(), "Glob".into()]),
        ..Definition::default()
    });
    let mut req = agent(&f, "ann", "go");
    req.settings.agents = Some(std::sync::Arc::new(defs));
    let dir = req.cwd.clone();
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("ann to tell the lead done", || said(&f, "ann") == ["done"])
        .await;
    let sub = std::fs::read_dir(cassettes.join(&f.name))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("ann.a"))
        .expect("the sub-agent's cassette");
    let seen = requests(&cassettes, &f.name, sub.trim_end_matches(".jsonl"));
    assert_eq!(
        seen[0]["system"].as_str().unwrap(),
        "You are the REVIEWER-DEFINITION. Read, never write."
    );
    let tools: Vec<&str> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["Read", "Glob", "Grep"],
        "only the definition's tools"
    );
    // The Write the model tried anyway was refused.
    assert!(
        last_message(&seen[1]).contains("permission denied"),
        "{}",
        last_message(&seen[1])
    );
    assert!(!dir.join("x.txt").exists());
    let parent = requests(&cassettes, &f.name, "ann");
    assert!(last_message(&parent[1]).contains("reviewed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_output_waits_for_a_background_sub_agent_and_gives_its_result() {
    let script = r#"{"agents":[
     {"name":"sub","match":["SUBTASK-OUT"],"turns":[{"text":"background result"}]},
     {"name":"ann","match":["You are ann,"],"after_last":"repeat-last","turns":[
       {"tool_use":[{"id":"c1","name":"Agent","input":{"description":"bg","prompt":"SUBTASK-OUT","run_in_background":true,"name":"helper"}}]},
       {"tool_use":[{"id":"c2","name":"TaskOutput","input":{"task_id":"helper","timeout":60000}}]},
       {"tool_use":[{"id":"c3","name":"TaskStop","input":{"task_id":"helper"}}]},
       {"tool_use":[{"id":"c4","name":"SendMessage","input":{"to":"team-lead","message":"done","summary":"s"}}]},
       {"text":"ok"}]}]}"#;
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let f = run("sub-llm-out", script, CassetteMode::Record, &cassettes).await;
    let seen = requests(&cassettes, &f.name, "ann");
    let out = last_message(&seen[2]);
    assert!(
        out.contains("<retrieval_status>success</retrieval_status>"),
        "{out}"
    );
    assert!(out.contains("<output>background result</output>"), "{out}");
    // A finished agent cannot be stopped: an error result the model reads.
    let stop = last_message(&seen[3]);
    assert!(
        stop.contains("not running") && stop.contains("\"is-error\":true"),
        "{stop}"
    );
}

/// `ann` may fork (`[team] fork_subagents`): an `Agent` call without a
/// `subagent_type` forks her.
fn forking(f: &Fixture) -> SpawnRequest {
    let mut req = agent(f, "ann", "go");
    req.settings.agents = Some(std::sync::Arc::new(
        teamhost::teammate::Definitions::new().with_fork(true),
    ));
    req
}

/// The cassette names of `parent`'s sub-agents in `team`, sorted.
fn sub_cassettes(cassettes: &Path, team: &str, parent: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cassettes.join(team))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .map(|n| n.trim_end_matches(".jsonl").to_string())
        .filter(|n| n.starts_with(&format!("{parent}.")))
        .collect();
    names.sort();
    names
}

/// ann and her forks share one script: a fork's first request holds ann's
/// conversation, so it gets the turn ann would get at that point. At turn
/// 1, ann forks again, and her first fork tries to fork (refused); at turn
/// 2 both forks answer; then ann tells the lead.
const FORKS: &str = r#"{"agents":[
 {"name":"ann","match":["You are ann,"],"after_last":"repeat-last","turns":[
   {"tool_use":[{"id":"c1","name":"Agent","input":{"description":"first fork","prompt":"FORK-TASK-1: count"}}]},
   {"tool_use":[{"id":"c2","name":"Agent","input":{"description":"another fork","prompt":"FORK-TASK-2: count"}}]},
   {"text":"forked work done"},
   {"tool_use":[{"id":"c3","name":"SendMessage","input":{"to":"team-lead","message":"done","summary":"s"}}]},
   {"text":"ok"}]}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_call_without_a_type_forks_the_caller_from_its_conversation() {
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let (hub, _) = models::hub(FORKS, CassetteMode::Record, Some(cassettes.clone()));
    let f = Fixture::with_options("sub-llm-fork", models::options(hub));
    f.host.spawn(&f.name, forking(&f)).await.unwrap();
    f.until("ann to tell the lead done", || {
        said(&f, "ann").contains(&"done".to_string())
    })
    .await;
    let ann = requests(&cassettes, &f.name, "ann");
    // The Agent call came back at once: a fork runs in the background.
    assert!(last_message(&ann[1]).contains("\"c1\""), "{}", ann[1]);
    let forks = sub_cassettes(&cassettes, &f.name, "ann");
    assert_eq!(forks.len(), 2, "{forks:?}");
    let mut refused = 0;
    for fork in &forks {
        let seen = requests(&cassettes, &f.name, fork);
        let first = &seen[0];
        // Its parent's system prompt, and its parent's conversation up to
        // the call that started it.
        assert_eq!(first["system"], ann[0]["system"], "{fork}");
        let messages = first["messages"].as_array().unwrap();
        assert_eq!(messages[0], ann[0]["messages"][0], "{fork}");
        let start = messages.last().unwrap().to_string();
        let n = if start.contains("FORK-TASK-1") { 1 } else { 2 };
        assert!(
            start.contains(&format!("\"c{n}\""))
                && start.contains("Forked: this call started a fork"),
            "{fork}: {start}"
        );
        assert!(start.contains("You are a fork of ann"), "{fork}: {start}");
        assert!(start.contains(&format!("FORK-TASK-{n}")), "{fork}: {start}");
        // The first fork got ann's turn 1 (a fork) and was refused.
        if n == 1 {
            let answer = last_message(&seen[1]);
            assert!(answer.contains("a fork cannot fork again"), "{answer}");
            refused += 1;
        }
    }
    assert_eq!(refused, 1, "{forks:?}");
    // ann hears back from both, each with its answer, in her next turns.
    let heard = || -> usize {
        requests(&cassettes, &f.name, "ann")
            .iter()
            .map(|r| {
                last_message(r)
                    .matches("<result>forked work done</result>")
                    .count()
            })
            .sum()
    };
    f.until("both forks' results to reach ann", || heard() == 2)
        .await;
}
