//! Cost budgets with real components: the default per-teammate budget, and
//! the team-wide one (`[model] team_budget_usd`) shared by every teammate,
//! refusing calls once spent with one notice per teammate naming the key to
//! raise, counting what the team's usage records say it spent before (as
//! after `--resume`), and shown by `status`.

use crate::common;

use std::sync::Arc;

use common::{models, Fixture};
use teamhost::embed::SpawnRequest;
use teamhost::model::config::Price;
use teamhost::model::policy::DEFAULT_BUDGET_MICRODOLLARS;
use teamhost::model::scripted::{Script, Scripted};
use teamhost::model::{CassetteMode, ModelHub, ModelPolicy};
use teamhost::store::ModelUsage;

/// Every ping answered at once: 10 in, 2 out, so 60 µ$ a call at $3 / $15.
const QUICK: &str = r#"{"agents":[{"name":"bench","match":["ping"],"after_last":"repeat-last",
  "turns":[{"text":"pong","usage":{"input_tokens":10,"output_tokens":2}}]}]}"#;

/// The team's budget in these tests, in microdollars: a handful of calls.
const TEAM_BUDGET: u64 = 2_000;

fn team_fixture(team: &str) -> Fixture {
    let (hub, _) = models::hub(QUICK, CassetteMode::Live, None);
    hub.set_team_budget(Some(TEAM_BUDGET));
    Fixture::with_options(team, models::options(hub))
}

fn bench(f: &Fixture, name: &str, prompt: &str) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::MODELBENCH, prompt, f.dir(name));
    req.settings.auto_claim = false;
    req.settings.model_policy = Some(models::policy());
    req
}

fn refused(f: &Fixture, name: &str) -> Option<String> {
    f.said_by(name)
        .into_iter()
        .find(|t| t.starts_with("error:"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_team_budget_is_shared_by_every_teammate_and_refuses_once_spent() {
    let f = team_fixture("teambudget");
    for name in ["a", "b"] {
        f.host.spawn(&f.name, bench(&f, name, "50")).await.unwrap();
    }
    f.until("both to be refused", || {
        refused(&f, "a").is_some() && refused(&f, "b").is_some()
    })
    .await;
    for name in ["a", "b"] {
        let report = refused(&f, name).unwrap();
        assert!(
            report.contains("BudgetExhausted") && report.contains("team cost budget exhausted"),
            "{report}"
        );
    }
    // The notices come when each refused turn ends (the runner's idle
    // notification), after the teammates' own reports.
    let notices = || -> Vec<String> {
        f.said_by(teamhost::runner::HOST_SENDER)
            .into_iter()
            .filter(|t| t.contains("budget"))
            .collect()
    };
    f.until("a budget notice per teammate", || notices().len() >= 2)
        .await;
    f.settle().await;
    let notices = notices();
    assert_eq!(notices.len(), 2, "one per teammate: {notices:#?}");
    assert!(
        notices
            .iter()
            .all(|n| n.contains("team_budget_usd under [model]")),
        "the notice names the key to raise: {notices:#?}"
    );

    f.host
        .shutdown_team(&f.name, "done", common::LIMIT)
        .await
        .unwrap();
    let usage = f.team.model_usage().unwrap();
    let spent: u64 = usage.values().map(|u| u.cost_microdollars).sum();
    assert!(
        (60 * 2..=TEAM_BUDGET).contains(&spent),
        "both spent, the team no more than its budget: {spent}"
    );
    let calls: u64 = usage.values().map(|u| u.calls).sum();
    assert!(calls < 100, "the budget stopped them early: {calls}");
    assert!(usage
        .values()
        .all(|u| u.team_budget_microdollars == Some(TEAM_BUDGET)
            && u.cost_budget_microdollars == Some(DEFAULT_BUDGET_MICRODOLLARS)));
    let team_line = teamhost::status::describe_team_spending(&usage).unwrap();
    assert_eq!(
        team_line,
        format!("${:.4} of $0.0020 team budget", spent as f64 / 1e6)
    );
    let mate_line = teamhost::status::describe_model_usage(&usage["a"]);
    assert!(mate_line.contains("of $1.0000 budget"), "{mate_line}");
}

/// Hostile: a guest writes its own failure reason, so a reason that only
/// says "budget" must not keep the host's notice of a spent budget from
/// the lead (only a reason quoting the host's own words stands for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guests_failure_reason_that_claims_a_budget_does_not_silence_the_hosts_notice() {
    let f = team_fixture("forgedbudget");
    f.host
        .spawn(&f.name, bench(&f, "a", "fail 50"))
        .await
        .unwrap();
    f.idle_from("a", 1).await;
    f.settle().await;
    let idle = f
        .said_by("a")
        .into_iter()
        .find(|t| t.contains("the budget is fine"));
    assert!(
        idle.is_some(),
        "the forged reason reached the lead: {:#?}",
        f.lead_inbox()
    );
    let notices: Vec<String> = f
        .said_by(teamhost::runner::HOST_SENDER)
        .into_iter()
        .filter(|t| t.contains("team cost budget exhausted"))
        .collect();
    assert_eq!(notices.len(), 1, "the host's own notice: {notices:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_team_spent_in_an_earlier_life_counts_against_its_budget() {
    let f = team_fixture("teamresume");
    // An earlier life's record, as a `--resume` finds it: all but 100 µ$
    // of the budget gone, less than one call's reservation.
    let earlier = ModelUsage {
        calls: 30,
        input_tokens: 300,
        output_tokens: 60,
        cost_microdollars: TEAM_BUDGET - 100,
        updated_at: "2026-01-01T00:00:00.000Z".into(),
        ..ModelUsage::default()
    };
    f.team.write_model_usage("old", &earlier).unwrap();
    f.host.spawn(&f.name, bench(&f, "a", "3")).await.unwrap();
    f.until("a to be refused", || refused(&f, "a").is_some())
        .await;
    let report = refused(&f, "a").unwrap();
    assert!(
        report.contains(&format!(
            "the team spent $0.{:06} of $0.002000",
            TEAM_BUDGET - 100
        )),
        "{report}"
    );
}

fn hub_with(price: Option<Price>) -> Arc<ModelHub> {
    let mut config = models::config();
    config.models.get_mut("fake").unwrap().price = price;
    let hub = ModelHub::new(config, CassetteMode::Live, None).unwrap();
    let script = Script::parse(QUICK).unwrap();
    hub.set_provider("script", Arc::new(Scripted::new(script)));
    hub
}

#[test]
fn a_teammate_without_budget_usd_gets_the_default_only_with_priced_models() {
    let policy = models::policy();
    let priced = hub_with(Some(Price {
        input: 3.0,
        output: 15.0,
        cache_read: None,
        cache_write: None,
    }));
    let spent = priced
        .client("t", "a", Some(policy.clone()))
        .unwrap()
        .spent();
    assert_eq!(spent.budget_microdollars, Some(DEFAULT_BUDGET_MICRODOLLARS));
    assert_eq!(spent.cost_left_microdollars, Some(1_000_000));

    let mut given = policy.clone();
    given.budget_microdollars = Some(5_000_000);
    let spent = priced.client("t", "b", Some(given)).unwrap().spent();
    assert_eq!(
        spent.budget_microdollars,
        Some(5_000_000),
        "the manifest's wins"
    );

    let free = hub_with(Some(Price {
        input: 0.0,
        output: 0.0,
        cache_read: None,
        cache_write: None,
    }));
    let spent = free.client("t", "a", Some(policy.clone())).unwrap().spent();
    assert_eq!(spent.budget_microdollars, None, "a free model needs none");
    let unpriced = hub_with(None);
    let spent = unpriced.client("t", "a", Some(policy)).unwrap().spent();
    assert_eq!(spent.budget_microdollars, None, "nor can one be kept");
}

#[test]
fn a_team_budget_refuses_a_model_without_a_price_at_the_start() {
    let hub = hub_with(None);
    hub.set_team_budget(Some(1_000));
    let policy: ModelPolicy = models::policy();
    let err = hub.client("t", "a", Some(policy)).unwrap_err().to_string();
    assert!(err.contains("team_budget_usd"), "{err}");
}
