//! One team budget across processes (issue 45): two `modelbench` teammates,
//! each in a `teamhost teammate` process of its own (the process backend,
//! the real binary), call the scripted model until the team's budget, kept
//! in the team's account in its config, is spent: together they never spend
//! more than it, and `teamhost status --json` shows who spent what.

use std::time::Duration;

use serde_json::Value;
use teamhost::backends::{BackendOptions, TeammateMode};
use teamhost::embed::{HostOptions, SpawnRequest};
use teamhost::manifest::ModelSpec;
use teamhost::model::ModelPolicy;
use teamhost::run::{model_access, ModelChoice};
use teamhost_tests::fixture::TeamFixture;

use crate::run_common::{shown, write_scripted_models};

/// Every call reports 10 tokens in and 16 out (`modelbench` asks for 16):
/// 270 microdollars, never more than the call's reservation.
const ANSWER: &str = r#"{"agents":[{"name":"any","match":[],"turns_by":"calls","after_last":"repeat-last",
  "turns":[{"text":"ok","usage":{"input_tokens":10,"output_tokens":16}}]}]}"#;

/// The team's budget: US$0.01, 37 such calls (36 once each call's
/// worst case must fit what is left).
const BUDGET: u64 = 10_000;

fn bench(name: &str, dir: &std::path::Path) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::MODELBENCH, "40", dir);
    let mut policy = ModelPolicy::new(vec!["fake".into()]);
    policy.requests_per_minute = None;
    policy.calls_per_turn = None;
    req.settings.model_policy = Some(policy);
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teammates_in_processes_of_their_own_spend_from_one_team_budget() {
    let config = tempfile::tempdir().unwrap();
    let models_toml = write_scripted_models(config.path(), ANSWER);
    let spec = ModelSpec {
        team_budget_usd: Some(BUDGET as f64 / 1e6),
        ..ModelSpec::default()
    };
    let choice = ModelChoice {
        mode: Some("live".into()),
        config: Some(models_toml),
        cassettes: None,
    };
    let models = model_access(config.path(), &choice, Some(&spec)).unwrap();
    let backends = BackendOptions {
        mode: TeammateMode::Process,
        interactive: true,
        teamhost_exe: Some(env!("CARGO_BIN_EXE_teamhost").into()),
        stop_timeout: Duration::from_secs(5),
        ..Default::default()
    };
    let f = TeamFixture::with_options(
        "account",
        HostOptions {
            backends,
            models,
            ..Default::default()
        },
    );
    for name in ["a", "b"] {
        let dir = f.dir(name);
        f.host.spawn("account", bench(name, &dir)).await.unwrap();
    }
    // Each asks for 40 calls; the team can pay for 37 in all.
    f.until("both teammates answered", || {
        let mail = f.lead_inbox();
        ["a", "b"].iter().all(|n| mail.iter().any(|m| m.from == *n))
    })
    .await;
    let mail = f.lead_inbox();
    let answers: Vec<String> = mail
        .iter()
        .map(|m| format!("{}: {}", m.from, m.text))
        .collect();
    assert!(
        answers
            .iter()
            .any(|a| a.contains("error:") && a.contains("team cost budget exhausted")),
        "{answers:?}"
    );
    f.host
        .shutdown_team("account", "done", Duration::from_secs(20))
        .await
        .unwrap();

    // Who spent what, from any process: `status --json`.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(&f.home)
        .args(["status", "--team", "account", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    let usage = &snap["modelUsage"];
    let cost = |n: &str| usage[n]["costMicrodollars"].as_u64().unwrap_or(0);
    let calls = |n: &str| usage[n]["calls"].as_u64().unwrap_or(0);
    assert!(cost("a") > 0 && cost("b") > 0, "both spent: {usage}");
    assert!(
        cost("a") + cost("b") <= BUDGET,
        "the team spent {} of {BUDGET}: {usage}",
        cost("a") + cost("b")
    );
    // Spent to within one call's worst case (about 330 microdollars): no
    // slice was lost.
    assert!(
        BUDGET - (cost("a") + cost("b")) < 400,
        "{} calls: {usage}",
        calls("a") + calls("b")
    );
    // The account: every claim within the budget; the processes that
    // ended handed back what they did not spend.
    let account = &snap["teamAccount"];
    assert_eq!(account["budgetMicrodollars"], BUDGET, "{snap}");
    let claimed: u64 = account["claims"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(claimed, cost("a") + cost("b"), "{account}");
}
