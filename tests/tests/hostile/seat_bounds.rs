//! Hostile tests: what the lead's seat writes is bounded. The scripted lead
//! (`guests/leadscript`, whose word `big:N` stands for N bytes) writes an
//! oversized team description, spawn prompt, shutdown reason, denial
//! reason, plan feedback and replacement input: each is refused naming
//! `max_message_bytes` and its key, and what passes counts against the
//! lead's `team_total_mb`. The spawn prompt stays out of `config.json` but
//! for a bounded prefix. Spawn/shutdown churn stops at `max_spawns_total`;
//! refused answers past `max_refused_answers_per_turn` /
//! `max_refused_answers_total` are refused without another escalation
//! record.

use std::collections::BTreeSet;

use teamhost::approvals::Outcome;
use teamhost::embed::{CatalogueEntry, LeadSpec, TeammateState};
use teamhost::store::OutgoingMessage;

use crate::common::LIMIT;
use crate::lead_seat::{result, Led};

/// An `echo` catalogue entry that claims no tasks.
fn echo_entry() -> CatalogueEntry {
    CatalogueEntry {
        auto_claim: false,
        ..CatalogueEntry::new("worker", teamhost_tests::ECHO)
    }
}

/// `cmd` result `nth` of `log`: `ERR` of `kind`, naming every word of
/// `names`.
fn refused(log: &str, cmd: &str, nth: usize, kind: &str, names: &[&str]) {
    let line = result(log, cmd, nth);
    assert!(
        line.starts_with(&format!("{cmd}\tERR\t{kind}: ")),
        "{cmd} #{nth}: {line}\n{log}"
    );
    for n in names {
        assert!(line.contains(n), "{cmd} #{nth} does not name {n:?}: {line}");
    }
}

/// Waits (on the lead's end or the deadline) for the lead of `team`.
async fn wait_end(led: &Led, team: &str) -> TeammateState {
    match tokio::time::timeout(LIMIT * 2, led.host.wait_lead(team)).await {
        Ok(end) => end.expect("the lead runs in this host"),
        Err(_) => panic!(
            "the lead did not finish; its log:\n{}",
            led.log(team, "team-lead")
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_text_the_seat_writes_is_held_to_the_message_limit_and_counted_as_team_bytes() {
    let led = Led::new();
    let script = "\
create t big:70000
create t big:60000
spawn worker w1 big:70000
spawn worker w1 big:60000
shutdown w1 big:70000
answer-permission-id perm-1-forged deny big:70000
answer-permission-id perm-1-forged allow-input big:69989
answer-plan-id plan_approval-1@w1@seat-bytes reject big:70000
wait-message tester go
shutdown w1 big:60000
wait-gone w1
spawn worker w2 big:60000
delete";
    let mut spec: LeadSpec = led.spec(script);
    spec.settings.limits.max_message_bytes = 64 << 10;
    spec.settings.limits.max_team_bytes_total = 200 << 10;
    spec.catalogue = vec![echo_entry()];
    let mut events = led.host.events();
    led.host.start_lead("seat-bytes", spec).await.unwrap();

    // While w1 is a member (the lead waits for "go"): its prompt is its
    // first message whole, in the config only a bounded prefix.
    let team = led.host.team("seat-bytes").unwrap();
    let deadline = tokio::time::Instant::now() + LIMIT;
    let member = loop {
        if let Some(m) = team.config().ok().and_then(|c| c.member("w1").cloned()) {
            break m;
        }
        // An event (or a lag): look again.
        if tokio::time::timeout_at(deadline, events.recv())
            .await
            .is_err()
        {
            panic!(
                "w1 never joined; the lead's log:\n{}",
                led.log("seat-bytes", "team-lead")
            );
        }
    };
    let prompt = member.prompt.clone().unwrap_or_default();
    assert!(
        prompt.chars().count() <= teamhost::teammate::MEMBER_PROMPT_CHARS + 1
            && prompt.ends_with('…'),
        "the config keeps {} characters of the prompt",
        prompt.len()
    );
    let config_file = led.home.join("teams/seat-bytes/config.json");
    let size = std::fs::metadata(&config_file)
        .unwrap_or_else(|e| panic!("{}: {e}", config_file.display()))
        .len();
    // The description (60,000 bytes, held to max_message_bytes) is in the
    // config; the 60,000-byte prompt is not.
    assert!(size < 60_000 + (16 << 10), "config.json is {size} bytes");
    team.send("team-lead", OutgoingMessage::new("tester", "go"))
        .unwrap();

    let end = wait_end(&led, "seat-bytes").await;
    let log = led.log("seat-bytes", "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");
    let over = ["70000 bytes", "max_message_bytes", "[lead.limits]"];
    refused(&log, "create", 0, "invalid", &over);
    refused(&log, "create", 0, "invalid", &["the team description"]);
    assert_eq!(result(&log, "create", 1), "create\tOK\tseat-bytes");
    refused(&log, "spawn", 0, "invalid", &over);
    refused(&log, "spawn", 0, "invalid", &["the spawn prompt"]);
    assert_eq!(result(&log, "spawn", 1), "spawn\tOK\tw1@seat-bytes");
    refused(&log, "shutdown", 0, "invalid", &over);
    refused(&log, "shutdown", 0, "invalid", &["the shutdown reason"]);
    refused(&log, "answer-permission-id", 0, "invalid", &over);
    refused(
        &log,
        "answer-permission-id",
        0,
        "invalid",
        &["the denial reason"],
    );
    refused(&log, "answer-permission-id", 1, "invalid", &over);
    refused(
        &log,
        "answer-permission-id",
        1,
        "invalid",
        &["the replacement input"],
    );
    refused(&log, "answer-plan-id", 0, "invalid", &over);
    refused(&log, "answer-plan-id", 0, "invalid", &["the plan feedback"]);
    assert!(
        result(&log, "shutdown", 1).starts_with("shutdown\tOK\t"),
        "{log}"
    );
    // 60,000 bytes three times passed; a fourth is past the lead's 200 KiB.
    refused(
        &log,
        "spawn",
        2,
        "denied",
        &["team-bytes limit", "[lead.limits] team_total_mb"],
    );
    assert!(!led.dir("w2").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_and_shutdown_churn_stops_at_the_leads_life_limit() {
    let led = Led::new();
    let script = "\
create t
spawn worker w1 hi
shutdown w1
wait-gone w1
spawn worker w2 hi
shutdown w2
wait-gone w2
spawn worker w3 hi
delete";
    let mut spec = led.spec(script);
    spec.max_teammates = 1;
    spec.max_spawns_total = 2;
    spec.catalogue = vec![echo_entry()];
    let end = led.run("churn", spec).await;
    let log = led.log("churn", "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");
    assert_eq!(result(&log, "spawn", 0), "spawn\tOK\tw1@churn", "{log}");
    assert_eq!(result(&log, "spawn", 1), "spawn\tOK\tw2@churn", "{log}");
    refused(
        &log,
        "spawn",
        2,
        "denied",
        &[
            "at most 2 teammates over its life",
            "[lead] max_spawns_total",
        ],
    );
    assert!(!led.dir("w3").exists());
}

/// Runs a lead that submits `rounds` plans of its own and answers each
/// (every answer refused: a lead never answers its own request), with the
/// refusal limits `per_turn` and `total`. Returns its log, the ids it
/// answered in order, and the ids of the escalations on record.
async fn refusing_lead(
    team: &str,
    rounds: usize,
    per_turn: u32,
    total: u32,
) -> (String, Vec<String>, BTreeSet<String>) {
    let led = Led::new();
    let mut script = String::from("create t\n");
    for _ in 0..rounds {
        script.push_str("own-plan\nanswer-plan approve\n");
    }
    script.push_str("delete");
    let mut spec = led.spec(&script);
    spec.settings.plan_mode_required = true;
    spec.max_refused_answers_per_turn = per_turn;
    spec.max_refused_answers_total = total;
    spec.catalogue = vec![echo_entry()];
    let end = led.run(team, spec).await;
    let log = led.log(team, "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");
    let ids: Vec<String> = (0..rounds)
        .map(|n| {
            let line = result(&log, "own-plan", n);
            line.strip_prefix("own-plan\tOK\t")
                .unwrap_or_else(|| panic!("{line}\n{log}"))
                .to_string()
        })
        .collect();
    let escalated = led
        .host
        .decisions(team, 0)
        .unwrap()
        .into_iter()
        .filter(|d| d.outcome == Outcome::Escalated)
        .map(|d| d.request_id)
        .collect();
    (log, ids, escalated)
}

/// The refusals past `limit` are refused unrecorded, naming `key`; the
/// record holds the escalations of the first `limit` only.
fn recorded_up_to(
    log: &str,
    ids: &[String],
    escalated: &BTreeSet<String>,
    limit: usize,
    key: &str,
) {
    for n in 0..ids.len() {
        let line = result(log, "answer-plan", n);
        assert!(
            line.starts_with("answer-plan\tERR\tdenied: ") && line.contains("own request"),
            "{line}"
        );
        assert_eq!(
            line.contains("not recorded again") && line.contains(key),
            n >= limit,
            "answer #{n}: {line}"
        );
    }
    // Two plans in one millisecond share an id; the record is by id.
    let first: BTreeSet<String> = ids[..limit].iter().cloned().collect();
    assert_eq!(escalated, &first, "{log}");
    assert!(
        ids[limit..].iter().any(|id| !first.contains(id)),
        "every later plan shared an id with an earlier one: {ids:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_answers_past_the_limits_are_not_recorded_again() {
    let (log, ids, escalated) = refusing_lead("refusals-turn", 6, 2, 100).await;
    recorded_up_to(
        &log,
        &ids,
        &escalated,
        2,
        "[lead] max_refused_answers_per_turn = 2",
    );
    let (log, ids, escalated) = refusing_lead("refusals-life", 6, 100, 3).await;
    recorded_up_to(
        &log,
        &ids,
        &escalated,
        3,
        "[lead] max_refused_answers_total = 3",
    );
}
