//! The `model` capability through the host with real components: the
//! `modelbench` teammate calls a scripted model through the WIT glue, the
//! broker and the usage recorder. What the lead sees (usage in the team's
//! files and `status`, the budget notice), and that stopping a teammate
//! cancels its call.

mod common;

use std::sync::Arc;

use common::{models, next_event, Fixture};
use teamhost::host::{Event, SpawnRequest};
use teamhost::model::scripted::ScriptedStats;
use teamhost::model::{CassetteMode, ModelCallEvent, ModelPolicy};

/// Every ping answered at once, with fixed usage (10 in, 2 out).
const QUICK: &str = r#"{"agents":[{"name":"bench","match":["ping"],"after_last":"repeat-last",
  "turns":[{"text":"pong","usage":{"input_tokens":10,"output_tokens":2}}]}]}"#;

/// Every ping answered after ten minutes: a call that is in flight until
/// something stops it.
const SLOW: &str = r#"{"agents":[{"name":"bench","match":["ping"],"after_last":"repeat-last",
  "turns":[{"text":"pong","delay_ms":600000}]}]}"#;

/// A host whose one model, `fake`, is `script`.
fn fixture(team: &str, script: &str) -> (Fixture, Arc<ScriptedStats>) {
    let (hub, stats) = models::hub(script, CassetteMode::Live, None);
    (Fixture::with_options(team, models::options(hub)), stats)
}

fn policy() -> ModelPolicy {
    models::policy()
}

fn bench(f: &Fixture, name: &str, prompt: &str, policy: ModelPolicy) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::MODELBENCH, prompt, &f.dir(name));
    req.auto_claim = false;
    req.model_policy = Some(policy);
    req
}

/// The texts `from` sent the lead.
fn said(f: &Fixture, from: &str) -> Vec<String> {
    f.lead_inbox().into_iter().filter(|m| m.from == from).map(|m| m.text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammates_calls_show_in_events_and_in_the_usage_status_reads() {
    let (f, stats) = fixture("usage", QUICK);
    let mut events = f.host.events();
    f.host.spawn(&f.name, bench(&f, "mb", "3", policy())).await.unwrap();
    f.until("mb to answer", || said(&f, "mb").iter().any(|t| t == "done 3")).await;
    assert_eq!(stats.calls(), 3);
    let mut finished = 0;
    while finished < 3 {
        if let Event::Model { name, call: ModelCallEvent::Finished { usage, spend, .. }, .. } =
            next_event(&mut events, "a model call to finish", |e| matches!(e, Event::Model { .. })).await
        {
            assert_eq!(name, "mb");
            assert_eq!((usage.input_tokens, usage.output_tokens), (10, 2));
            finished += 1;
            assert_eq!(spend.calls, finished);
        }
    }

    f.host
        .shutdown_team(&f.name, "done", common::LIMIT)
        .await
        .unwrap();
    let snapshot = teamhost::status::snapshot(&f.team).unwrap();
    let usage = snapshot.model_usage.get("mb").expect("a usage record for mb");
    assert_eq!((usage.calls, usage.input_tokens, usage.output_tokens), (3, 30, 6));
    // 30 × 3 + 6 × 15 microdollars
    assert_eq!(usage.cost_microdollars, 180);
    assert_eq!(usage.waiting_since, None);
    let line = teamhost::status::describe_model_usage(usage);
    assert!(line.contains("3 calls"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_breach_fails_the_call_and_tells_the_lead_once() {
    let (f, _) = fixture("budget", QUICK);
    let mut p = policy();
    // Each call reserves its input estimate + 16 output tokens and uses 12:
    // the budget runs out after a few calls.
    p.budget_tokens = Some(200);
    f.host.spawn(&f.name, bench(&f, "mb", "50", p)).await.unwrap();
    f.until("mb to report", || said(&f, "mb").iter().any(|t| t.starts_with("error:"))).await;
    let report = said(&f, "mb").into_iter().find(|t| t.starts_with("error:")).unwrap();
    assert!(report.contains("BudgetExhausted") && report.contains("token budget exhausted"), "{report}");
    // Ask again: the guest is refused again, the lead is not told twice.
    f.host.send_as_lead(&f.name, "mb", "5", None).unwrap();
    f.until("mb to report again", || said(&f, "mb").iter().filter(|t| t.starts_with("error:")).count() == 2)
        .await;
    let notices: Vec<String> = said(&f, teamhost::runner::HOST_SENDER)
        .into_iter()
        .filter(|t| t.contains("budget"))
        .collect();
    assert_eq!(notices.len(), 1, "{notices:#?}");
    assert!(notices[0].starts_with("mb: model token budget exhausted"), "{notices:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_teammate_cancels_its_model_call() {
    let (f, stats) = fixture("cancel", SLOW);
    let mut events = f.host.events();
    f.host.spawn(&f.name, bench(&f, "mb", "1", policy())).await.unwrap();
    next_event(&mut events, "the call to start", |e| {
        matches!(e, Event::Model { call: ModelCallEvent::Started { .. }, .. })
    })
    .await;
    common::bounded("the provider to get the call", stats.until(|s| s.in_flight() == 1)).await;
    common::bounded("the kill", f.host.kill(&f.name, "mb")).await.unwrap();
    // The call's future was dropped with the teammate: nothing is left
    // waiting on the provider.
    common::bounded("the call to end", stats.until(|s| s.in_flight() == 0)).await;
    assert_eq!(stats.calls(), 1);
    assert!(said(&f, "mb").is_empty(), "a cancelled call never answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_without_a_policy_is_denied_and_a_host_without_models_refuses_one() {
    let (f, stats) = fixture("nopolicy", QUICK);
    let mut req = bench(&f, "mb", "2", policy());
    req.model_policy = None;
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("mb to report", || said(&f, "mb").iter().any(|t| t.starts_with("error:"))).await;
    let report = said(&f, "mb").into_iter().find(|t| t.starts_with("error:")).unwrap();
    assert!(report.contains("Denied") && report.contains("no model access"), "{report}");
    assert_eq!(stats.calls(), 0);

    let plain = Fixture::new("nomodels");
    let err = plain
        .host
        .spawn(&plain.name, bench(&plain, "mb", "1", policy()))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no model access configured"), "{err}");
}
