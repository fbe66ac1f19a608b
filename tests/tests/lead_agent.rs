//! The LLM lead (`guests/lead`) end to end on a scripted model (issue 29):
//! through the toolbox's lead tools it forms its team, creates a task,
//! spawns two teammates from the catalogue, answers a plan and a permission
//! request through its seat, shuts both down and deletes the team; in
//! delegate mode it is offered exactly the coordination tools; a teammate
//! is offered no lead tool and gets an error result when it calls one.
//!
//! The conversations are recorded as cassettes (`CassetteMode::Record`), and
//! the assertions read what the model was given: its tool list and the
//! tool results.

use std::path::Path;

use serde_json::Value;
use teamhost::embed::{CatalogueEntry, Host, LeadSpec, SpawnRequest, TeammateState};
use teamhost::home::Home;
use teamhost::model::CassetteMode;
use teamhost::sandbox::{PermissionMode, ToolRules};

use crate::common::{self, models, Fixture, LIMIT};

/// Every line of the cassette `{dir}/{team}/{member}.jsonl` after its header.
fn exchanges(dir: &Path, team: &str, member: &str) -> Vec<Value> {
    let path = dir.join(team).join(format!("{member}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The tool names the model was offered in `exchange`.
fn offered(exchange: &Value) -> Vec<String> {
    exchange["request"]["tools"]
        .as_array()
        .expect("the request has tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The lead's model. Turn 0 forms the team, creates a task, spawns the
/// planner and tries Read; turn 1 (woken by the plan) approves it and
/// spawns the asker; every later turn answers the newest permission
/// request, and from turn 3 on also shuts both down and tries TeamDelete
/// (three times),
/// so the run ends however the teammates' messages are grouped into the
/// lead's turns (an answer already given, or a teammate already gone, is
/// an error result the lead shrugs off).
fn lead_script(team: &str) -> String {
    let plan_answer = |k: usize| {
        serde_json::json!({"id": format!("p{k}"), "name": "SendMessage", "input": {"to": "p1", "message":
            {"type": "plan_approval_response", "request_id": "{{requestId}}", "approve": true}}})
    };
    let permission_answer = |k: usize| {
        serde_json::json!({"id": format!("q{k}"), "name": "SendMessage", "input": {"to": "a1", "message":
            {"type": "permission_response", "request_id": "{{request_id}}", "approve": true}}})
    };
    let first = serde_json::json!({"tool_use": [
        {"id": "c0", "name": "TeamCreate", "input": {"team_name": "anything", "description": "words"}},
        {"id": "c1", "name": "TaskCreate", "input": {"subject": "Write x.txt", "description": "x.txt says hello"}},
        {"id": "c2", "name": "Agent", "input": {"description": "plan first", "prompt": "plan",
            "subagent_type": "planner", "name": "p1", "team_name": team, "mode": "plan",
            "plan_mode_required": true}},
        {"id": "c4", "name": "Read", "input": {"file_path": "x.txt"}}
    ]});
    let wait = serde_json::json!({"text": "Waiting for the team."});
    let mut turns = vec![first, wait.clone()];
    turns.push(serde_json::json!({"tool_use": [plan_answer(1),
        {"id": "c3", "name": "Agent", "input": {"description": "write x", "prompt": "write-file x.txt hello",
            "subagent_type": "asker", "name": "a1", "team_name": team, "mode": "default"}}]}));
    turns.push(wait.clone());
    turns.push(serde_json::json!({"tool_use": [plan_answer(2), permission_answer(2)]}));
    turns.push(wait.clone());
    for k in 3..=14 {
        turns.push(serde_json::json!({"tool_use": [plan_answer(k), permission_answer(k),
            {"id": format!("s{k}"), "name": "SendMessage", "input": {"to": "a1", "message": {"type": "shutdown_request"}}},
            {"id": format!("t{k}"), "name": "SendMessage", "input": {"to": "p1", "message": {"type": "shutdown_request"}}},
            {"id": format!("d{k}"), "name": "TeamDelete", "input": {}}
        ]}));
        // Tries TeamDelete again, as a model would after `unavailable`
        // (the seat's delete can race a teammate's last inbox write:
        // "Directory not empty"); after a success it is a harmless error.
        for retry in 0..2 {
            turns.push(serde_json::json!({"tool_use": [
                {"id": format!("r{k}-{retry}"), "name": "TeamDelete", "input": {}}]}));
        }
        turns.push(wait.clone());
    }
    serde_json::json!({"agents": [{"name": "lead", "match": ["You are team-lead, the lead"], "turns": turns}]})
        .to_string()
}

fn hostile_entry(name: &str, max_mode: PermissionMode) -> CatalogueEntry {
    CatalogueEntry {
        max_mode,
        auto_claim: false,
        ..CatalogueEntry::new(name, teamhost_tests::HOSTILE)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_lead_forms_spawns_answers_shuts_down_and_deletes_its_team() {
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let team = "llm-led";
    let (hub, _) = models::hub(
        &lead_script(team),
        CassetteMode::Record,
        Some(cassettes.clone()),
    );
    let host =
        Host::with_options(Home::new(tmp.path().join("home")), models::options(hub)).unwrap();
    let work = tmp.path().join("work");
    let mut spec = LeadSpec::new(
        teamhost_tests::LEAD,
        "Write x.txt",
        work.join("team-lead"),
        work.clone(),
    );
    spec.settings.model_policy = Some(models::policy());
    spec.catalogue = vec![hostile_entry("planner", PermissionMode::AcceptEdits), {
        // At most acceptEdits, so the lead may allow its writes; spawned in
        // default mode, so it asks for each.
        let mut e = hostile_entry("asker", PermissionMode::AcceptEdits);
        e.rules = ToolRules::new(["Read"], Vec::<String>::new()).unwrap();
        e
    }];
    host.start_lead(team, spec).await.unwrap();
    let end = tokio::time::timeout(LIMIT * 2, host.wait_lead(team)).await;
    let lead = exchanges(&cassettes, team, "team-lead");
    let all = serde_json::to_string(&lead).unwrap();
    let Ok(Some(end)) = end else {
        let last = lead.last().map(|l| l["request"]["messages"].to_string());
        panic!(
            "the LLM lead's run did not end ({} model calls); its last request's messages: {}",
            lead.len(),
            last.unwrap_or_default()
        );
    };
    assert_eq!(end, TeammateState::Completed, "{all}");

    // Delegate mode: exactly the coordination set, the Agent tool listing
    // the catalogue.
    let mut tools = offered(&lead[0]);
    tools.sort();
    assert_eq!(
        tools,
        [
            "Agent",
            "SendMessage",
            "TaskCreate",
            "TaskGet",
            "TaskList",
            "TaskUpdate",
            "TeamCreate",
            "TeamDelete"
        ]
    );
    let agent_tool = lead[0]["request"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Agent")
        .unwrap()
        .to_string();
    assert!(agent_tool.contains("- planner:") && agent_tool.contains("- asker:"));

    // The first turn's results: formed (under the host's name), a task,
    // a teammate, and Read refused by delegate mode.
    let second = lead[1]["request"].to_string();
    assert!(
        second.contains(r#"\"lead_agent_id\":\"team-lead@llm-led\""#),
        "{second}"
    );
    assert!(second.contains("Task #1 created successfully"), "{second}");
    assert!(
        second.contains(r#"\"teammate_id\":\"p1@llm-led\""#),
        "{second}"
    );
    assert!(
        second.contains("delegate mode allows only coordination"),
        "{second}"
    );

    assert!(all.contains(r#"\"teammate_id\":\"a1@llm-led\""#), "{all}");
    // The answers went through the seat and reached the teammates.
    assert!(all.contains("Plan approved"), "{all}");
    assert!(all.contains("Permission granted"), "{all}");
    assert!(all.contains("Shutdown request sent to a1"), "{all}");
    assert_eq!(
        std::fs::read_to_string(work.join("a1").join("x.txt")).unwrap(),
        "hello"
    );
    // The team is gone: the last TeamDelete succeeded and ended the run.
    assert!(!host.team(team).unwrap().try_exists().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_is_offered_no_lead_tool_and_gets_an_error_result_for_one() {
    let script = r#"{"agents":[{"name":"t","match":["You are t1,"],"turns":[
      {"tool_use":[
        {"id":"a","name":"TeamCreate","input":{"team_name":"mine"}},
        {"id":"b","name":"Agent","input":{"description":"d","prompt":"p","subagent_type":"x","name":"n","team_name":"mine"}},
        {"id":"c","name":"SendMessage","input":{"to":"x","message":{"type":"permission_response","request_id":"perm-1-a","approve":true}}},
        {"id":"d","name":"TeamDelete","input":{}}]},
      {"text":"done"}]}]}"#;
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let (hub, stats) = models::hub(script, CassetteMode::Record, Some(cassettes.clone()));
    let f = Fixture::with_options("not-a-lead", models::options(hub));
    let mut req = SpawnRequest::new("t1", teamhost_tests::AGENT, "go", f.dir("t1"));
    req.settings.auto_claim = false;
    req.settings.model_policy = Some(models::policy());
    f.host.spawn(&f.name, req).await.unwrap();
    common::bounded("t1's two calls", stats.until(|s| s.calls() == 2)).await;
    f.settle().await;
    let ex = exchanges(&cassettes, &f.name, "t1");
    let tools = offered(&ex[0]);
    for lead_tool in ["TeamCreate", "TeamDelete"] {
        assert!(!tools.iter().any(|t| t == lead_tool), "{tools:?}");
    }
    let results = ex[1]["request"].to_string();
    assert_eq!(
        results
            .matches("permission denied: only the team's lead may use")
            .count(),
        4,
        "{results}"
    );
    assert!(results.contains("leave out `team_name` to start a sub-agent"));
    // The team still stands: nothing was deleted.
    assert!(f.host.team(&f.name).unwrap().try_exists().unwrap());
}
