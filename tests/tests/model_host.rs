//! The `model` capability through the host with real components: the
//! `modelbench` teammate calls a scripted model through the WIT glue, the
//! broker and the usage recorder. What the lead sees (usage in the team's
//! files and `status`, the budget notice), and that stopping a teammate
//! cancels its call.

use crate::common;

use std::sync::Arc;

use common::{models, next_event, Fixture};
use teamhost::embed::{Event, SpawnRequest};
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
    let mut req = SpawnRequest::new(name, teamhost_tests::MODELBENCH, prompt, f.dir(name));
    req.settings.auto_claim = false;
    req.settings.model_policy = Some(policy);
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammates_calls_show_in_events_and_in_the_usage_status_reads() {
    let (f, stats) = fixture("usage", QUICK);
    let mut events = f.host.events();
    f.host
        .spawn(&f.name, bench(&f, "mb", "3", policy()))
        .await
        .unwrap();
    f.until("mb to answer", || {
        f.said_by("mb").iter().any(|t| t == "done 3")
    })
    .await;
    assert_eq!(stats.calls(), 3);
    let mut finished = 0;
    while finished < 3 {
        if let Event::Model {
            name,
            call: ModelCallEvent::Finished { usage, spend, .. },
            ..
        } = next_event(&mut events, "a model call to finish", |e| {
            matches!(e, Event::Model { .. })
        })
        .await
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
    let usage = snapshot
        .model_usage
        .get("mb")
        .expect("a usage record for mb");
    assert_eq!(
        (usage.calls, usage.input_tokens, usage.output_tokens),
        (3, 30, 6)
    );
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
    f.host
        .spawn(&f.name, bench(&f, "mb", "50", p))
        .await
        .unwrap();
    f.until("mb to report", || {
        f.said_by("mb").iter().any(|t| t.starts_with("error:"))
    })
    .await;
    let report = f
        .said_by("mb")
        .into_iter()
        .find(|t| t.starts_with("error:"))
        .unwrap();
    assert!(
        report.contains("BudgetExhausted") && report.contains("token budget exhausted"),
        "{report}"
    );
    // Ask again: the guest is refused again, the lead is not told twice.
    f.host.send_as_lead(&f.name, "mb", "5", None).unwrap();
    f.until("mb to report again", || {
        f.said_by("mb")
            .iter()
            .filter(|t| t.starts_with("error:"))
            .count()
            == 2
    })
    .await;
    let notices: Vec<String> = f
        .said_by(teamhost::runner::HOST_SENDER)
        .into_iter()
        .filter(|t| t.contains("budget"))
        .collect();
    assert_eq!(notices.len(), 1, "{notices:#?}");
    assert!(
        notices[0].starts_with("mb: model token budget exhausted"),
        "{notices:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_teammate_cancels_its_model_call() {
    let (f, stats) = fixture("cancel", SLOW);
    let mut events = f.host.events();
    f.host
        .spawn(&f.name, bench(&f, "mb", "1", policy()))
        .await
        .unwrap();
    next_event(&mut events, "the call to start", |e| {
        matches!(
            e,
            Event::Model {
                call: ModelCallEvent::Started { .. },
                ..
            }
        )
    })
    .await;
    common::bounded(
        "the provider to get the call",
        stats.until(|s| s.in_flight() == 1),
    )
    .await;
    common::bounded("the kill", f.host.kill(&f.name, "mb"))
        .await
        .unwrap();
    // The call's future was dropped with the teammate: nothing is left
    // waiting on the provider.
    common::bounded("the call to end", stats.until(|s| s.in_flight() == 0)).await;
    assert_eq!(stats.calls(), 1);
    assert!(
        f.said_by("mb").is_empty(),
        "a cancelled call never answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_without_a_policy_is_denied_and_a_host_without_models_refuses_one() {
    let (f, stats) = fixture("nopolicy", QUICK);
    let mut req = bench(&f, "mb", "2", policy());
    req.settings.model_policy = None;
    f.host.spawn(&f.name, req).await.unwrap();
    f.until("mb to report", || {
        f.said_by("mb").iter().any(|t| t.starts_with("error:"))
    })
    .await;
    let report = f
        .said_by("mb")
        .into_iter()
        .find(|t| t.starts_with("error:"))
        .unwrap();
    assert!(
        report.contains("Denied") && report.contains("no model access"),
        "{report}"
    );
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

/// A key no guest, file or error may ever show.
const KEY: &str = "sk-test-SECRET-5678";

/// `(step, ok, detail)` of every result line `name` sent the lead.
fn results(f: &Fixture, name: &str) -> Vec<(String, bool, String)> {
    f.lead_inbox()
        .into_iter()
        .filter(|m| m.from == name)
        .filter_map(|m| {
            let mut parts = m.text.splitn(3, '\t');
            Some((
                parts.next()?.to_string(),
                parts.next()? == "OK",
                parts.next().unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

/// Every file under `dir`, read as text where it is text.
fn every_file(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            every_file(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_key_reaches_no_guest_no_command_no_error_and_no_file() {
    use teamhost::model::provider::{self, ApiKey, Dialect, ProviderSettings};
    use teamhost_tests::model_server::{Api, FakeProvider, Reply};
    // The provider rejects the key and quotes it back in its error body;
    // then it answers.
    let server = FakeProvider::start(
        Api::OpenAi,
        vec![
            Reply::status(
                401,
                &format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#),
            ),
            Reply::text("pong"),
        ],
    )
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let hub = teamhost::model::ModelHub::new(
        models::config(),
        CassetteMode::Record,
        Some(cassettes.clone()),
    )
    .unwrap();
    let settings =
        ProviderSettings::new(Dialect::Openai, server.base_url(), Some(ApiKey::new(KEY)));
    hub.set_provider("script", provider::build(settings).unwrap());
    let f = Fixture::with_options("keys", models::options(hub));
    let mut req = SpawnRequest::new("spy", teamhost_tests::HOSTILE, "model env", f.dir("spy"));
    req.settings.auto_claim = false;
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::BypassPermissions);
    req.settings.model_policy = Some(policy());
    f.host.spawn(&f.name, req).await.unwrap();
    let done = |n: usize| {
        results(&f, "spy")
            .iter()
            .filter(|(s, _, d)| {
                s == "model" && !d.is_empty() && d.chars().all(|c| c.is_ascii_digit())
            })
            .count()
            >= n
    };
    f.until("spy to look at its environment", || done(1)).await;
    for (i, cmd) in ["model call - hello", "model call - hello again"]
        .iter()
        .enumerate()
    {
        f.host.send_as_lead(&f.name, "spy", cmd, None).unwrap();
        f.until("spy's model call", || done(i + 2)).await;
    }
    f.host
        .send_as_lead(
            &f.name,
            "spy",
            "bash-run env | grep -c -e SECRET -e API_KEY -e Bearer",
            None,
        )
        .unwrap();
    f.until("spy's Bash", || {
        results(&f, "spy").iter().any(|(s, _, _)| s == "bash-run")
    })
    .await;

    let got = results(&f, "spy");
    let env = got.iter().find(|(s, _, _)| s == "model/env").unwrap();
    assert_eq!(
        env.2, "vars=[] args=[]",
        "a guest has no environment and no arguments"
    );
    let calls: Vec<_> = got.iter().filter(|(s, _, _)| s == "model/call").collect();
    assert_eq!(calls.len(), 2, "{got:#?}");
    assert!(
        !calls[0].1 && calls[0].2.contains("credentials") && calls[0].2.contains("<redacted>"),
        "{:?}",
        calls[0]
    );
    assert!(calls[1].1 && calls[1].2 == "pong", "{:?}", calls[1]);
    let bash = got.iter().find(|(s, _, _)| s == "bash-run").unwrap();
    assert!(
        bash.2.contains("stdout=0"),
        "Bash's environment holds nothing of the key: {bash:?}"
    );
    let url = server.base_url();
    for (step, _, detail) in &got {
        assert!(
            !detail.contains(KEY) && !detail.contains(&url),
            "{step}: {detail}"
        );
    }
    // Nothing on disk either: team files, logs, usage records, cassettes.
    let mut files = Vec::new();
    every_file(tmp.path(), &mut files);
    every_file(f.tmp.path(), &mut files);
    assert!(
        files.iter().any(|(p, _)| p.starts_with(&cassettes)),
        "the answer was recorded"
    );
    for (path, text) in &files {
        assert!(!text.contains(KEY), "{} holds the key", path.display());
        assert!(
            !text.contains(&url),
            "{} holds the provider's URL",
            path.display()
        );
    }
    // The provider did get it, in its header.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}
