//! The lead's purse (issue 45): what a lead component spends on its own
//! model calls and what it gives the teammates it spawns come out of one
//! cost budget, its own. The scripted lead (`guests/leadscript`) calls the
//! scripted model (`think`) and spawns `echo` teammates with budgets, on a
//! real host and components.

use teamhost::embed::{CatalogueEntry, TeammateState};
use teamhost::model::{CassetteMode, ModelPolicy};

use crate::lead_seat::{result, Led};

/// Every call answers one word and reports 8,000 output tokens: at `fake`'s
/// $15 per million, US$0.12 a call (plus US$0.00003 of input).
const ANSWER: &str = r#"{"agents":[{"name":"any","match":[],"turns_by":"calls","after_last":"repeat-last",
  "turns":[{"text":"ok","usage":{"input_tokens":10,"output_tokens":8000}}]}]}"#;

/// A call's cost in microdollars: 10 tokens in at $3, 8,000 out at $15 per
/// million.
const CALL: u64 = 30 + 120_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_s_own_model_calls_and_its_gifts_share_its_one_budget() {
    let (hub, stats) = crate::common::models::hub(ANSWER, CassetteMode::Live, None);
    let led = Led::with_options(crate::common::models::options(hub));
    // Its purse: US$0.50. Two calls leave 500,000 - 240,060 = 259,940: a
    // gift of US$0.30 is more than that, one of US$0.20 fits, and then a
    // call that may cost US$0.12 does not.
    let script = "\
create purse
think 2 8000
spawn worker w1 model=fake budget=0.3 hi
spawn worker w1 model=fake budget=0.2 hi
think 1 8000
shutdown w1
wait-gone w1
delete";
    let mut spec = led.spec(script);
    let mut policy = ModelPolicy::new(vec!["fake".into()]);
    policy.requests_per_minute = None;
    policy.max_tokens_per_call = 8000;
    policy.budget_microdollars = Some(500_000);
    spec.settings.model_policy = Some(policy);
    spec.catalogue = vec![CatalogueEntry {
        models: vec!["fake".into()],
        budget_usd: Some(1.0),
        auto_claim: false,
        ..CatalogueEntry::new("worker", teamhost_tests::ECHO)
    }];
    let end = led.run("purse", spec).await;
    let log = led.log("purse", "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");

    let left = 500_000 - 2 * CALL;
    assert_eq!(
        result(&log, "think", 0),
        format!("think\tOK\tspent {} left {left}", 2 * CALL),
        "{log}"
    );
    // The gift is held to what its own calls left, not to its whole budget.
    let over = result(&log, "spawn", 0);
    assert!(
        over.starts_with(
            "spawn\tERR\tdenied: budget US$0.3 is more than the lead has left to give"
        ),
        "{over}\n{log}"
    );
    assert!(
        result(&log, "spawn", 1).starts_with("spawn\tOK\tw1@purse"),
        "{log}"
    );
    // And its own call is held to what its gift left.
    let refused = result(&log, "think", 1);
    assert!(
        refused.starts_with("think\tERR\tbudget-exhausted: ")
            && refused.contains("given to teammates"),
        "{refused}\n{log}"
    );
    assert_eq!(
        stats.calls(),
        2,
        "the refused call never reached the provider"
    );
}
