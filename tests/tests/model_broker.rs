//! The model broker end to end without wasm: a [`ModelHub`] over the
//! scripted provider and real cassette files. Record then replay with no
//! provider at all, drift, replay-or-record, budgets and the lead's notice,
//! policies, and 100 teammates calling at once without waiting on each
//! other.

use std::path::Path;
use std::sync::Arc;

use teamhost::model::config::{ModelConfig, ModelEntry, Price, ProviderSpec};
use teamhost::model::scripted::{Script, Scripted};
use teamhost::model::{
    CassetteMode, ContentBlock, Message, ModelError, ModelHub, ModelPolicy, Request, Role,
};

const SCRIPT: &str = r#"{"agents":[
  {"name":"w","match":["You are w"],"turns":[
    {"text":"reading","tool_use":[{"id":"t1","name":"Read","input":{"file_path":"a.txt"}}],"usage":{"input_tokens":100,"output_tokens":20}},
    {"text":"done","usage":{"input_tokens":150,"output_tokens":10}}]},
  {"name":"bench","match":["ping"],"after_last":"repeat-last","turns":[{"text":"pong","delay_ms":50,"usage":{"input_tokens":5,"output_tokens":1}}]}
]}"#;

/// A config whose only model, `fake`, is served by the provider `script`
/// (a scripted provider from `script_path`, or none at all).
fn config(script_path: Option<&Path>) -> ModelConfig {
    let mut c = ModelConfig::from_env();
    c.providers.clear();
    if let Some(p) = script_path {
        c.providers.insert(
            "script".into(),
            ProviderSpec::Scripted {
                script: p.to_path_buf(),
            },
        );
    } else {
        // The provider the recording used is gone: a replay must not need it.
        c.providers.insert(
            "script".into(),
            ProviderSpec::Scripted {
                script: "/nonexistent/script.json".into(),
            },
        );
    }
    c.models.clear();
    c.models.insert(
        "fake".into(),
        ModelEntry {
            provider: "script".into(),
            id: "fake-1".into(),
            context_window: 10_000,
            max_output_tokens: 1_000,
            price: Some(Price {
                input: 3.0,
                output: 15.0,
                cache_read: None,
                cache_write: None,
            }),
            prompt_caching: true,
        },
    );
    c
}

fn policy() -> ModelPolicy {
    let mut p = ModelPolicy::new(vec!["fake".into()]);
    p.max_tokens_per_call = 500;
    p.requests_per_minute = None;
    p
}

fn first_request(who: &str) -> Request {
    Request {
        system: Some(format!("You are {who}. Started at 2026-11-24T06:00:00Z.")),
        max_tokens: Some(200),
        ..Request::new(vec![Message::user("Fix a.txt")])
    }
}

/// The second request of the conversation, after the model's tool use.
fn second_request(
    first: &Request,
    answer: &teamhost::model::Response,
    tool_output: &str,
) -> Request {
    let mut r = first.clone();
    r.messages.push(Message {
        role: Role::Assistant,
        content: answer.content.clone(),
    });
    let id = answer
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u.id.clone()),
            _ => None,
        })
        .expect("a tool use");
    r.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult(teamhost::model::ToolResult {
            tool_use_id: id,
            content: tool_output.into(),
            is_error: false,
        })],
    });
    r
}

fn script_file(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("script.json");
    std::fs::write(&p, SCRIPT).unwrap();
    p
}

#[tokio::test]
async fn a_recorded_conversation_replays_with_no_provider_and_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let cassettes = dir.path().join("cassettes");
    let script = script_file(dir.path());

    let rec = ModelHub::new(
        config(Some(&script)),
        CassetteMode::Record,
        Some(cassettes.clone()),
    )
    .unwrap();
    let client = rec.client("team", "w", Some(policy())).unwrap();
    let r1 = first_request("w");
    let a1 = client.complete(r1.clone()).await.unwrap();
    let r2 = second_request(&r1, &a1, "hello");
    let a2 = client.complete(r2.clone()).await.unwrap();
    let text = std::fs::read_to_string(cassettes.join("team/w.jsonl")).unwrap();
    assert_eq!(
        text.lines().count(),
        3,
        "a header and two exchanges:\n{text}"
    );

    // Replay under a config whose provider cannot even be built: every
    // answer comes from the file, and the run's timestamp does not matter.
    let play = ModelHub::new(config(None), CassetteMode::Replay, Some(cassettes)).unwrap();
    let client = play.client("team", "w", Some(policy())).unwrap();
    let mut r1_later = r1.clone();
    r1_later.system = Some("You are w. Started at 2027-01-01T00:00:00Z.".into());
    assert_eq!(client.complete(r1_later).await.unwrap(), a1);
    assert_eq!(client.complete(r2).await.unwrap(), a2);
    let spent = client.spent();
    assert_eq!(
        (
            spent.calls,
            spent.usage.input_tokens,
            spent.usage.output_tokens
        ),
        (2, 250, 30)
    );
    // 250 × 3 + 30 × 15 µ$
    assert_eq!(spent.cost_microdollars, 1_200);
}

#[tokio::test]
async fn strict_replay_refuses_a_drifted_request_naming_where_lenient_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    let cassettes = dir.path().join("cassettes");
    let script = script_file(dir.path());
    let rec = ModelHub::new(
        config(Some(&script)),
        CassetteMode::Record,
        Some(cassettes.clone()),
    )
    .unwrap();
    let client = rec.client("team", "w", Some(policy())).unwrap();
    let r1 = first_request("w");
    let a1 = client.complete(r1.clone()).await.unwrap();
    client
        .complete(second_request(&r1, &a1, "hello"))
        .await
        .unwrap();

    let drifted = second_request(&r1, &a1, "HELLO, changed");
    let strict =
        ModelHub::new(config(None), CassetteMode::Replay, Some(cassettes.clone())).unwrap();
    match strict
        .client("team", "w", Some(policy()))
        .unwrap()
        .complete(drifted.clone())
        .await
    {
        Err(ModelError::NotRecorded(text)) => {
            assert!(text.contains("messages[2].content[0]"), "{text}");
            assert!(text.contains("HELLO, changed"), "{text}");
        }
        other => panic!("expected not-recorded, got {other:?}"),
    }
    let lenient = ModelHub::new(
        config(None),
        CassetteMode::ReplayLenient,
        Some(cassettes.clone()),
    )
    .unwrap();
    let served = lenient
        .client("team", "w", Some(policy()))
        .unwrap()
        .complete(drifted)
        .await
        .unwrap();
    assert_eq!(served.content[0], ContentBlock::Text("done".into()));

    // A conversation never recorded.
    match strict
        .client("team", "other", Some(policy()))
        .unwrap()
        .complete(first_request("w"))
        .await
    {
        Err(ModelError::NotRecorded(text)) => assert!(text.contains("other.jsonl"), "{text}"),
        other => panic!("expected not-recorded, got {other:?}"),
    }
}

#[tokio::test]
async fn replay_or_record_calls_the_provider_for_a_miss_and_appends_it() {
    let dir = tempfile::tempdir().unwrap();
    let cassettes = dir.path().join("cassettes");
    let script = script_file(dir.path());
    let rec = ModelHub::new(
        config(Some(&script)),
        CassetteMode::Record,
        Some(cassettes.clone()),
    )
    .unwrap();
    let r1 = first_request("w");
    rec.client("team", "w", Some(policy()))
        .unwrap()
        .complete(r1.clone())
        .await
        .unwrap();

    let hub = ModelHub::new(
        config(Some(&script)),
        CassetteMode::ReplayOrRecord,
        Some(cassettes.clone()),
    )
    .unwrap();
    let scripted = Arc::new(Scripted::new(Script::parse(SCRIPT).unwrap()));
    let stats = scripted.stats();
    hub.set_provider("script", scripted);
    let client = hub.client("team", "w", Some(policy())).unwrap();
    let a1 = client.complete(r1.clone()).await.unwrap();
    assert_eq!(stats.calls(), 0, "the recorded answer was served");
    client
        .complete(second_request(&r1, &a1, "new"))
        .await
        .unwrap();
    assert_eq!(stats.calls(), 1, "the miss went to the provider");
    let text = std::fs::read_to_string(cassettes.join("team/w.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 3, "the miss was appended:\n{text}");
}

#[tokio::test]
async fn a_budget_breach_is_a_typed_error_and_one_notice() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path());
    let hub = ModelHub::new(config(Some(&script)), CassetteMode::Live, None).unwrap();
    let mut p = policy();
    p.budget_tokens = Some(400);
    let client = hub.client("team", "w", Some(p)).unwrap();
    let r1 = first_request("w");
    let a1 = client.complete(r1.clone()).await.unwrap(); // 120 tokens
    let err = client
        .complete(second_request(&r1, &a1, "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::BudgetExhausted(t) if t.contains("120 of 400")),
        "{err}"
    );
    let notice = client.take_budget_notice().expect("a notice for the lead");
    assert!(notice.contains("token budget"), "{notice}");
    assert_eq!(client.take_budget_notice(), None, "the lead is told once");
    assert_eq!(client.spent().tokens_left, Some(280));
}

#[tokio::test]
async fn policies_deny_what_they_do_not_allow() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path());
    let hub = ModelHub::new(config(Some(&script)), CassetteMode::Live, None).unwrap();

    let none = hub.client("team", "n", None).unwrap();
    assert!(none.models().is_empty());
    assert!(matches!(
        none.complete(first_request("w")).await,
        Err(ModelError::Denied(_))
    ));

    let client = hub.client("team", "w", Some(policy())).unwrap();
    let mut other = first_request("w");
    other.model = "sonnet".into();
    match client.complete(other).await {
        Err(ModelError::Denied(t)) => assert!(t.contains("may use: fake"), "{t}"),
        e => panic!("expected denied, got {e:?}"),
    }
    let mut too_big = first_request("w");
    too_big.max_tokens = Some(501);
    assert!(
        matches!(client.complete(too_big).await, Err(ModelError::Invalid(t)) if t.contains("1..=500"))
    );
    let models = client.models();
    assert_eq!(
        (
            models.len(),
            models[0].max_output_tokens,
            models[0].is_default
        ),
        (1, 500, true)
    );

    let mut unknown = policy();
    unknown.allow = vec!["gpt-17".into()];
    unknown.default = "gpt-17".into();
    let err = hub
        .client("team", "u", Some(unknown))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not in the host's catalog"), "{err}");

    let mut per_turn = policy();
    per_turn.calls_per_turn = Some(1);
    let client = hub.client("team", "w2", Some(per_turn)).unwrap();
    client.complete(first_request("w")).await.unwrap();
    assert!(matches!(
        client.complete(first_request("w")).await,
        Err(ModelError::Denied(_))
    ));
    client.start_turn();
    client.complete(first_request("w")).await.unwrap();

    let mut rpm = policy();
    rpm.requests_per_minute = Some(1);
    let client = hub.client("team", "w3", Some(rpm)).unwrap();
    client.complete(first_request("w")).await.unwrap();
    assert!(matches!(
        client.complete(first_request("w")).await,
        Err(ModelError::RateLimited { .. })
    ));

    let disabled = ModelHub::none();
    assert!(
        disabled.client("team", "w", Some(policy())).is_err(),
        "a host without model access refuses a policy"
    );
}

#[tokio::test]
async fn a_hundred_teammates_call_at_once_without_waiting_on_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path());
    let hub = ModelHub::new(config(Some(&script)), CassetteMode::Live, None).unwrap();
    let scripted = Arc::new(Scripted::new(Script::parse(SCRIPT).unwrap()));
    let stats = scripted.stats();
    hub.set_provider("script", scripted);
    let (go_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut calls = Vec::new();
    for i in 0..100 {
        let client = hub
            .client("team", &format!("t{i}"), Some(policy()))
            .unwrap();
        let mut go = go_tx.subscribe();
        calls.push(tokio::spawn(async move {
            go.recv().await.unwrap();
            let mut r = first_request("bench");
            r.messages[0].content = vec![ContentBlock::Text(format!("ping {i}"))];
            client.complete(r).await
        }));
    }
    go_tx.send(()).unwrap();
    for c in calls {
        c.await.unwrap().unwrap();
    }
    assert_eq!(stats.calls(), 100);
    // Each call waits 50 ms in the provider; had the broker serialised
    // them, no two would ever have been in flight together.
    assert!(
        stats.max_in_flight() >= 90,
        "at most {} calls were in flight at once",
        stats.max_in_flight()
    );
}

/// The conversation the broker keeps comes back to the teammate's next life
/// (a new client after a crash), with the answer's tool call, whose result
/// was never kept, answered as unknown; and a call that fails keeps nothing.
#[tokio::test]
async fn a_kept_conversation_is_given_to_the_next_life_with_lost_results_marked() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path());
    let path = dir.path().join("kept/team/w.conversation.json");
    let hub = ModelHub::new(config(Some(&script)), CassetteMode::Live, None).unwrap();
    let life1 = hub
        .client_keeping(
            "team",
            "w",
            Some(policy()),
            Some(teamhost::model::Transcript::at(&path)),
        )
        .unwrap();
    assert!(life1.history().is_empty(), "nothing kept yet");
    let r1 = first_request("w");
    let a1 = life1.complete(r1.clone()).await.unwrap();
    assert!(
        a1.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse(_))),
        "the script's first answer asks for a tool"
    );
    // A request the broker refuses changes nothing kept.
    assert!(life1.complete(Request::new(vec![])).await.is_err());
    drop(life1);

    let life2 = hub
        .client_keeping(
            "team",
            "w",
            Some(policy()),
            Some(teamhost::model::Transcript::at(&path)),
        )
        .unwrap();
    let back = life2.history();
    assert_eq!(back.len(), r1.messages.len() + 2, "{back:?}");
    assert_eq!(&back[..r1.messages.len()], &r1.messages[..]);
    assert_eq!(back[r1.messages.len()].content, a1.content);
    let lost = &back[r1.messages.len() + 1];
    assert_eq!(lost.role, Role::User);
    assert!(matches!(
        &lost.content[..],
        [ContentBlock::ToolResult(r)] if r.tool_use_id == "t1" && r.is_error
            && r.content == teamhost::model::transcript::LOST_RESULT
    ));
    // The next life goes on from there: the conversation is valid as it is.
    let mut r2 = r1.clone();
    r2.messages = back;
    assert!(life2.complete(r2).await.is_ok());
}

/// A side call (`model.complete-aside`, an agent's summary, say) is metered
/// like any other but does not become the kept conversation: a host that
/// dies right after it gives the next life the real conversation back.
#[tokio::test]
async fn a_side_call_is_metered_but_not_kept_as_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path());
    let path = dir.path().join("kept/team/w.conversation.json");
    let hub = ModelHub::new(config(Some(&script)), CassetteMode::Live, None).unwrap();
    let keeping = || {
        hub.client_keeping(
            "team",
            "w",
            Some(policy()),
            Some(teamhost::model::Transcript::at(&path)),
        )
        .unwrap()
    };
    let life1 = keeping();
    let r1 = first_request("w");
    let a1 = life1.complete(r1.clone()).await.unwrap();
    let calls_before = life1.spent().calls;
    let aside = Request {
        system: Some("You summarise the earlier part of a conversation.".into()),
        max_tokens: Some(100),
        ..Request::new(vec![Message::user("<conversation>ping</conversation>")])
    };
    life1.complete_aside(aside).await.unwrap();
    assert_eq!(
        life1.spent().calls,
        calls_before + 1,
        "the side call is metered"
    );
    drop(life1);

    let back = keeping().history();
    assert_eq!(&back[..r1.messages.len()], &r1.messages[..], "{back:?}");
    assert_eq!(back[r1.messages.len()].content, a1.content);
    assert!(
        !format!("{back:?}").contains("<conversation>"),
        "the side call was kept: {back:?}"
    );
}

/// A run refused a call by its meter (here `calls_per_turn`) replays that
/// refusal, not "not recorded": in replay, the meter decides before the
/// cassette, as it does before a live call.
#[tokio::test]
async fn a_replayed_run_is_refused_by_the_meter_where_the_live_run_was() {
    let dir = tempfile::tempdir().unwrap();
    let cassettes = dir.path().join("cassettes");
    let script = script_file(dir.path());
    let mut p = policy();
    p.calls_per_turn = Some(1);
    let mut outcomes = Vec::new();
    for (mode, script) in [
        (CassetteMode::Record, Some(script.as_path())),
        (CassetteMode::Replay, None),
    ] {
        let hub = ModelHub::new(config(script), mode, Some(cassettes.clone())).unwrap();
        let client = hub.client("team", "w", Some(p.clone())).unwrap();
        let r1 = first_request("w");
        let a1 = client.complete(r1.clone()).await.unwrap();
        let refused = client
            .complete(second_request(&r1, &a1, "hello"))
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, ModelError::Denied(t) if t.contains("calls_per_turn")),
            "{mode:?}: {refused}"
        );
        outcomes.push((a1, refused, client.spent()));
    }
    assert_eq!(outcomes[0], outcomes[1], "the replay is the live run");
}

/// A provider that reports no usage (llama.cpp's server in a stream; here
/// a script that says zero) is charged the host's estimate, never zero, and the spend says how many
/// calls were estimated; a token budget goes down with each. The cassette
/// keeps the provider's own answer, so a replay bills the same estimate.
#[tokio::test]
async fn an_answer_without_usage_is_charged_an_estimate_and_says_so() {
    const NO_USAGE: &str = r#"{"agents":[{"name":"w","match":["You are w"],"after_last":"repeat-last","turns":[
      {"text":"an answer of about forty bytes, give or take","usage":{"input_tokens":0,"output_tokens":0}}]}]}"#;
    let dir = tempfile::tempdir().unwrap();
    let cassettes = dir.path().join("cassettes");
    let script = dir.path().join("script.json");
    std::fs::write(&script, NO_USAGE).unwrap();
    let mut p = policy();
    p.budget_tokens = Some(10_000);
    let mut runs = Vec::new();
    // Recorded, then replayed with the provider gone: the same estimate.
    for (mode, script) in [
        (CassetteMode::Record, Some(script.as_path())),
        (CassetteMode::Replay, None),
    ] {
        let hub = ModelHub::new(config(script), mode, Some(cassettes.clone())).unwrap();
        let client = hub.client("team", "w", Some(p.clone())).unwrap();
        let answer = client.complete(first_request("w")).await.unwrap();
        assert!(
            answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0,
            "{mode:?}: {answer:?}"
        );
        let spent = client.spent();
        assert_eq!(spent.estimated_calls, 1, "{mode:?}");
        assert_eq!(spent.usage, answer.usage, "charged what the guest was told");
        assert!(spent.tokens_left.unwrap() < 10_000);
        assert!(spent.cost_microdollars > 0);
        runs.push((answer, spent));
    }
    assert_eq!(runs[0], runs[1], "the replay is the live run");
}
