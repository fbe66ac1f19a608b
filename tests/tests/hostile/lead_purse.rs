//! Hostile tests: the lead's purse. A lead whose manifest gives it models
//! but no `budget_usd` is held by its broker to the default cost budget
//! (US$1 for a priced, costly model); what it may give its teammates is that
//! budget, not "no budget at all". The scripted lead (`guests/leadscript`)
//! asks for US$1e308 (once saturated to `u64::MAX` microdollars) and US$50,
//! then spawns without a budget: the teammate gets the default, and the
//! purse is charged it, so a second unbudgeted spawn finds it empty.

use teamhost::embed::{CatalogueEntry, TeammateState};
use teamhost::model::{CassetteMode, ModelPolicy};

use crate::lead_seat::{result, Led};

/// `spawn` result `nth` of `log`: refused as `denied`, naming every word of
/// `names`.
fn denied(log: &str, nth: usize, names: &[&str]) {
    let line = result(log, "spawn", nth);
    assert!(
        line.starts_with("spawn\tERR\tdenied: "),
        "spawn #{nth}: {line}\n{log}"
    );
    for n in names {
        assert!(line.contains(n), "spawn #{nth} does not name {n:?}: {line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_with_no_budget_set_gives_only_the_default_its_broker_keeps() {
    // One priced model, `fake` ($3 / $15 per million tokens); no call is
    // ever made.
    let (hub, _) = crate::common::models::hub(r#"{"agents":[]}"#, CassetteMode::Live, None);
    let led = Led::with_options(crate::common::models::options(hub));
    let script = "\
create purse
spawn worker w0 budget=1e308 hi
spawn worker w0 budget=50 hi
spawn worker w1 hi
spawn worker w2 hi
spawn worker w2 budget=0.01 hi
shutdown w1
wait-gone w1
spawn worker w2 hi
delete";
    let mut spec = led.spec(script);
    // Models, and no budget_usd: the broker gives the lead US$1.
    spec.settings.model_policy = Some(ModelPolicy::new(vec!["fake".into()]));
    spec.catalogue = vec![CatalogueEntry {
        models: vec!["fake".into()],
        auto_claim: false,
        ..CatalogueEntry::new("worker", teamhost_tests::ECHO)
    }];
    let end = led.run("purse", spec).await;
    let log = led.log("purse", "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");

    // An amount that does not fit is refused, never saturated.
    denied(
        &log,
        0,
        &[
            "budget_usd 1e308",
            "more US dollars than teamhost can count",
        ],
    );
    // More than the default the lead has is refused, naming it.
    denied(&log, 1, &["US$50", "left to give: at most US$1"]);
    // No budget: the teammate gets the default, and the purse pays it.
    assert_eq!(result(&log, "spawn", 2), "spawn\tOK\tw1@purse", "{log}");
    denied(
        &log,
        3,
        &["default cost budget of US$1", "at most US$0", "budget_usd"],
    );
    denied(&log, 4, &["US$0.01", "left to give: at most US$0"]);
    // A teammate's budget is for its life: shutting it down gives none back.
    denied(&log, 5, &["default cost budget of US$1", "at most US$0"]);
    assert!(!led.dir("w0").exists() && !led.dir("w2").exists());
}
