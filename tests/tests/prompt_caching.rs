//! Anthropic prompt caching through the broker, against a fake Anthropic
//! server that bills as Anthropic's cache does
//! (`FakeProvider::start_caching`): where the breakpoints go, that the
//! second call of a turn reads what the first wrote, that the meter
//! charges reads and writes at their prices, and that turning caching off
//! (or the OpenAI dialect) sends no mark at all.

use std::time::Duration;

use serde_json::{json, Value};
use teamhost::model::config::{ModelConfig, ModelEntry, Price, ProviderSpec};
use teamhost::model::provider::{Dialect, ProviderSettings};
use teamhost::model::{
    CassetteMode, ContentBlock, Message, ModelHub, ModelPolicy, Request, Role, ToolDefinition,
    ToolResult, ToolUse,
};
use teamhost_tests::model_server::{Api, FakeProvider, Reply};

/// $3 / $15 per million tokens: reads $0.30, writes $3.75.
const PRICE: Price = Price {
    input: 3.0,
    output: 15.0,
    cache_read: None,
    cache_write: None,
};

fn hub(dialect: Dialect, server: &FakeProvider, caching: (bool, bool)) -> std::sync::Arc<ModelHub> {
    let mut settings = ProviderSettings::new(dialect, server.base_url(), None);
    settings.retry_base = Duration::from_millis(5);
    settings.prompt_caching = caching.0;
    let mut config = ModelConfig::from_env();
    config.providers.clear();
    config.providers.insert(
        "p".into(),
        ProviderSpec::Http {
            settings,
            key_env: None,
        },
    );
    config.models.clear();
    config.models.insert(
        "m".into(),
        ModelEntry {
            provider: "p".into(),
            id: "claude-test".into(),
            context_window: 200_000,
            max_output_tokens: 1_000,
            price: Some(PRICE),
            prompt_caching: caching.1,
        },
    );
    ModelHub::new(config, CassetteMode::Live, None).unwrap()
}

fn policy() -> ModelPolicy {
    let mut p = ModelPolicy::new(vec!["m".into()]);
    p.requests_per_minute = None;
    p.max_tokens_per_call = 100;
    p
}

/// A turn's first request: two tools, a long system prompt (well over
/// 1,024 tokens), the task.
fn first() -> Request {
    let tool = |name: &str| ToolDefinition {
        name: name.into(),
        description: format!("the {name} tool"),
        input_schema: r#"{"type":"object"}"#.into(),
    };
    Request {
        model: "m".into(),
        system: Some(format!(
            "You are a careful teammate. {}",
            "Rules. ".repeat(800)
        )),
        messages: vec![Message::user("list the files")],
        tools: vec![tool("Read"), tool("Bash")],
        tool_choice: None,
        max_tokens: Some(100),
        temperature: None,
        stop_sequences: vec![],
    }
}

/// The same turn's second request: the model's tool call and its result
/// appended.
fn second() -> Request {
    let mut r = first();
    r.messages.push(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse(ToolUse {
            id: "t1".into(),
            name: "Bash".into(),
            input: r#"{"command":"ls"}"#.into(),
        })],
    });
    r.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult(ToolResult {
            tool_use_id: "t1".into(),
            content: "a.txt\nb.txt".into(),
            is_error: false,
        })],
    });
    r
}

/// The JSON paths of every block carrying `cache_control`.
fn marks(v: &Value) -> Vec<String> {
    fn walk(v: &Value, path: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.contains_key("cache_control") {
                    out.push(path.clone());
                }
                for (k, v) in m {
                    walk(v, format!("{path}.{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(v, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out.sort();
    out
}

#[tokio::test]
async fn the_second_call_of_a_turn_reads_what_the_first_cached_at_the_cache_prices() {
    let server = FakeProvider::start_caching(1024, vec![Reply::text("done")]).await;
    let hub = hub(Dialect::Anthropic, &server, (true, true));
    let client = hub.client("team", "alice", Some(policy())).unwrap();

    let one = client.complete(first()).await.unwrap();
    let two = client.complete(second()).await.unwrap();

    let sent = server.requests();
    assert_eq!(
        marks(&sent[0].body),
        vec![".messages[0].content[0]", ".system[0]", ".tools[1]"],
        "the first call marks the last tool, the system prompt and its message"
    );
    assert_eq!(
        marks(&sent[1].body),
        vec![
            ".messages[0].content[0]",
            ".messages[2].content[0]",
            ".system[0]",
            ".tools[1]"
        ],
        "the second marks the previous exchange's last message and its own last"
    );
    assert!(
        one.usage.cache_write_tokens > 1024 && one.usage.cache_read_tokens == 0,
        "{:?}",
        one.usage
    );
    assert_eq!(
        two.usage.cache_read_tokens, one.usage.cache_write_tokens,
        "the second call reads the whole prefix the first wrote: {:?}",
        two.usage
    );
    assert!(two.usage.cache_write_tokens > 0, "{:?}", two.usage);

    // Reads at 0.1×, writes at 1.25× the input price (microdollars per
    // token = USD per million tokens), rounded up per call.
    let cost = |u: &teamhost::model::Usage| {
        (u.input_tokens as f64 * 3.0
            + u.output_tokens as f64 * 15.0
            + u.cache_read_tokens as f64 * 0.3
            + u.cache_write_tokens as f64 * 3.75)
            .ceil() as u64
    };
    let spent = client.spent();
    assert_eq!(spent.cost_microdollars, cost(&one.usage) + cost(&two.usage));
    assert_eq!(
        spent.usage.cache_read_tokens, two.usage.cache_read_tokens,
        "the meter counts the reads"
    );
    let full_price =
        (one.usage.cache_write_tokens + two.usage.total() - two.usage.output_tokens) as f64 * 3.0;
    assert!(
        (spent.cost_microdollars as f64) < full_price,
        "caching must cost less than sending it all at full price: {} vs {full_price}",
        spent.cost_microdollars
    );
}

#[tokio::test]
async fn prompt_caching_off_for_the_provider_or_the_model_sends_no_mark() {
    for caching in [(false, true), (true, false)] {
        let server = FakeProvider::start_caching(1024, vec![Reply::text("done")]).await;
        let hub = hub(Dialect::Anthropic, &server, caching);
        let client = hub.client("team", "alice", Some(policy())).unwrap();
        client.complete(first()).await.unwrap();
        let two = client.complete(second()).await.unwrap();
        let sent = server.requests();
        assert!(
            sent.iter().all(|r| marks(&r.body).is_empty()),
            "{caching:?}"
        );
        assert_eq!(sent[0].body["system"], json!(first().system.unwrap()));
        assert_eq!(
            (two.usage.cache_read_tokens, two.usage.cache_write_tokens),
            (0, 0)
        );
    }
}

#[tokio::test]
async fn the_openai_dialect_sends_no_mark() {
    let server = FakeProvider::start(Api::OpenAi, vec![Reply::text("done")]).await;
    let hub = hub(Dialect::Openai, &server, (true, true));
    let client = hub.client("team", "alice", Some(policy())).unwrap();
    client.complete(second()).await.unwrap();
    let body = &server.requests()[0].body;
    assert!(marks(body).is_empty(), "{body}");
    assert!(!body.to_string().contains("cache_control"));
}
