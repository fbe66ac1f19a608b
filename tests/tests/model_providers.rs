//! The HTTP providers (Anthropic Messages, OpenAI chat completions) against
//! a fake provider on loopback: real sockets, real SSE. Each test runs both
//! dialects: the mapping of requests and answers, streamed and whole;
//! retries honouring `retry-after`; errors that are not retried; malformed,
//! truncated and stalled answers; cancellation; and the key, which goes in
//! its header and nowhere else. The `llama_cpp_*` tests run the OpenAI
//! dialect against a fake with the quirks llama.cpp's server showed
//! (`Quirks::LLAMA_CPP`): each failed before the provider was fixed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use teamhost::model::provider::{
    self, ApiKey, Dialect, Provider, ProviderCall, ProviderError, ProviderSettings,
};
use teamhost::model::{
    ContentBlock, Message, Request, Response, Role, StopReason, Thinking, ToolDefinition,
    ToolResult, ToolUse,
};
use teamhost_tests::model_server::{Api, Block, FakeProvider, Quirks, Reply};

const KEY: &str = "sk-test-SECRET-1234";
const BOTH: [(Api, Dialect); 2] = [
    (Api::Anthropic, Dialect::Anthropic),
    (Api::OpenAi, Dialect::Openai),
];

fn settings(dialect: Dialect, server: &FakeProvider, stream: bool) -> ProviderSettings {
    let mut s = ProviderSettings::new(dialect, server.base_url(), Some(ApiKey::new(KEY)));
    s.stream = stream;
    s.retry_base = Duration::from_millis(5);
    s.max_retries = 2;
    s.idle_timeout = Duration::from_secs(10);
    s
}

fn provider(s: ProviderSettings) -> Arc<dyn Provider> {
    provider::build(s).unwrap()
}

fn hello() -> Request {
    Request {
        model: "fake".into(),
        system: Some("be brief".into()),
        messages: vec![Message {
            role: Role::User,
            content: vec![ContentBlock::Text("hello".into())],
        }],
        tools: vec![ToolDefinition {
            name: "Read".into(),
            description: "read a file".into(),
            input_schema: r#"{"type":"object","properties":{"file_path":{"type":"string"}}}"#
                .into(),
        }],
        tool_choice: None,
        max_tokens: Some(100),
        temperature: Some(0.0),
        stop_sequences: vec![],
    }
}

async fn complete(p: &dyn Provider, r: &Request) -> Result<Response, ProviderError> {
    p.complete(ProviderCall {
        model_id: "model-x",
        request: r,
        max_tokens: 100,
        // The dialects' own shapes; the cache marks are tested in
        // prompt_caching.rs.
        prompt_caching: false,
    })
    .await
}

fn assert_no_key(e: &ProviderError) {
    let text = format!("{e} {e:?}");
    assert!(!text.contains(KEY), "the key leaked: {text}");
    assert!(!text.contains("127.0.0.1"), "the URL leaked: {text}");
}

#[tokio::test]
async fn a_text_answer_comes_back_streamed_and_whole_with_the_key_in_its_header() {
    for (api, dialect) in BOTH {
        for stream in [true, false] {
            let server = FakeProvider::always(api, Reply::text("hello there")).await;
            let p = provider(settings(dialect, &server, stream));
            let r = complete(&*p, &hello()).await.unwrap();
            assert_eq!(
                r.content,
                vec![ContentBlock::Text("hello there".into())],
                "{api:?} stream={stream}"
            );
            assert_eq!(r.stop_reason, StopReason::EndTurn);
            assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (10, 2));
            assert_eq!(r.model, "model-x");
            let got = &server.requests()[0];
            assert_eq!(got.body["model"], "model-x");
            assert_eq!(got.body["max_tokens"], 100);
            match api {
                Api::Anthropic => {
                    assert_eq!(got.path, "/v1/messages");
                    assert_eq!(got.header("x-api-key"), Some(KEY));
                    assert_eq!(got.header("anthropic-version"), Some("2023-06-01"));
                    assert_eq!(got.body["system"], "be brief");
                    assert_eq!(got.body["tools"][0]["input_schema"]["type"], "object");
                }
                Api::OpenAi => {
                    assert_eq!(got.path, "/v1/chat/completions");
                    assert_eq!(
                        got.header("authorization"),
                        Some(format!("Bearer {KEY}").as_str())
                    );
                    assert_eq!(
                        got.body["messages"][0],
                        json!({"role": "system", "content": "be brief"})
                    );
                    assert_eq!(got.body["tools"][0]["function"]["name"], "Read");
                    if stream {
                        assert_eq!(got.body["stream_options"]["include_usage"], true);
                    }
                }
            }
        }
    }
}

#[tokio::test]
async fn a_tool_use_comes_back_and_its_result_goes_out_in_the_dialects_shape() {
    for (api, dialect) in BOTH {
        let server = FakeProvider::start(
            api,
            vec![
                Reply::tool_use("call_1", "Read", json!({"file_path": "a.txt"})),
                Reply::text("done"),
            ],
        )
        .await;
        let p = provider(settings(dialect, &server, true));
        let mut r = hello();
        let first = complete(&*p, &r).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse, "{api:?}");
        let ContentBlock::ToolUse(use_) = &first.content[0] else {
            panic!("{first:?}")
        };
        assert_eq!((use_.id.as_str(), use_.name.as_str()), ("call_1", "Read"));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&use_.input).unwrap(),
            json!({"file_path": "a.txt"})
        );
        r.messages.push(Message {
            role: Role::Assistant,
            content: first.content.clone(),
        });
        r.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                tool_use_id: "call_1".into(),
                content: "no such file".into(),
                is_error: true,
            })],
        });
        complete(&*p, &r).await.unwrap();
        let body = &server.requests()[1].body;
        match api {
            Api::Anthropic => {
                assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
                assert_eq!(
                    body["messages"][1]["content"][0]["input"],
                    json!({"file_path": "a.txt"})
                );
                assert_eq!(
                    body["messages"][2]["content"][0],
                    json!({"type": "tool_result", "tool_use_id": "call_1", "content": "no such file", "is_error": true})
                );
            }
            Api::OpenAi => {
                assert_eq!(
                    body["messages"][2]["tool_calls"][0]["function"]["name"],
                    "Read"
                );
                assert_eq!(
                    body["messages"][3],
                    json!({"role": "tool", "tool_call_id": "call_1", "content": "Error: no such file"})
                );
            }
        }
    }
}

#[tokio::test]
async fn thinking_comes_back_with_its_signature_and_goes_out_unchanged() {
    let server = FakeProvider::always(
        Api::Anthropic,
        Reply::Answer {
            blocks: vec![
                Block::Thinking {
                    text: "hmm".into(),
                    signature: "sig-1".into(),
                },
                Block::Text("ok".into()),
            ],
            usage: (5, 5),
        },
    )
    .await;
    let p = provider(settings(Dialect::Anthropic, &server, true));
    let mut r = hello();
    let answer = complete(&*p, &r).await.unwrap();
    assert_eq!(
        answer.content[0],
        ContentBlock::Thinking(Thinking {
            text: "hmm".into(),
            signature: "sig-1".into()
        })
    );
    r.messages.push(Message {
        role: Role::Assistant,
        content: answer.content,
    });
    r.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::Text("go on".into())],
    });
    complete(&*p, &r).await.unwrap();
    assert_eq!(
        server.requests()[1].body["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "hmm", "signature": "sig-1"})
    );
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_as_the_provider_says() {
    for (api, dialect) in BOTH {
        let server = FakeProvider::start(
            api,
            vec![
                Reply::status(429, r#"{"error":{"message":"slow down"}}"#)
                    .with_header("retry-after-ms", "80"),
                Reply::text("ok"),
            ],
        )
        .await;
        let p = provider(settings(dialect, &server, true));
        complete(&*p, &hello()).await.unwrap();
        let got = server.requests();
        assert_eq!(got.len(), 2, "{api:?}");
        let waited = got[1].at - got[0].at;
        assert!(
            waited >= Duration::from_millis(80),
            "{api:?}: retried after {waited:?}"
        );
    }
}

#[tokio::test]
async fn a_wait_longer_than_the_host_waits_is_handed_to_the_guest_at_once() {
    for (api, dialect) in BOTH {
        let server = FakeProvider::always(
            api,
            Reply::status(429, r#"{"error":{"message":"later"}}"#)
                .with_header("retry-after", "120"),
        )
        .await;
        let p = provider(settings(dialect, &server, true));
        match complete(&*p, &hello()).await {
            Err(ProviderError::RateLimited {
                retry_after,
                message,
            }) => {
                assert_eq!(retry_after, Duration::from_secs(120));
                assert!(message.contains("later"), "{message}");
            }
            other => panic!("{api:?}: expected rate-limited, got {other:?}"),
        }
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn errors_that_retrying_cannot_cure_are_not_retried() {
    for (api, dialect) in BOTH {
        let quota = match api {
            Api::Anthropic => {
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Your credit balance is too low"}}"#
            }
            Api::OpenAi => {
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#
            }
        };
        for (reply, check) in [
            (
                Reply::status(429, quota),
                (|e: &ProviderError| matches!(e, ProviderError::SpendCap(_)))
                    as fn(&ProviderError) -> bool,
            ),
            (
                Reply::status(
                    401,
                    &format!(r#"{{"error":{{"message":"invalid key {KEY}"}}}}"#),
                ),
                |e| matches!(e, ProviderError::Credentials(_)),
            ),
            (
                Reply::status(400, r#"{"error":{"message":"bad request"}}"#),
                |e| matches!(e, ProviderError::Invalid(_)),
            ),
        ] {
            let server = FakeProvider::always(api, reply).await;
            let p = provider(settings(dialect, &server, true));
            let e = complete(&*p, &hello()).await.unwrap_err();
            assert!(check(&e), "{api:?}: {e:?}");
            assert_no_key(&e);
            assert_eq!(server.requests().len(), 1, "{api:?}: {e:?} was retried");
        }
    }
}

#[tokio::test]
async fn server_errors_malformed_and_truncated_answers_are_retried_then_reported() {
    for (api, dialect) in BOTH {
        for stream in [true, false] {
            for bad in [
                Reply::status(529, r#"{"error":{"message":"overloaded"}}"#),
                Reply::Malformed,
                Reply::Truncated,
            ] {
                let server = FakeProvider::start(api, vec![bad.clone(), Reply::text("ok")]).await;
                let p = provider(settings(dialect, &server, stream));
                let r = complete(&*p, &hello()).await;
                assert!(r.is_ok(), "{api:?} stream={stream} {bad:?}: {r:?}");
                assert_eq!(server.requests().len(), 2);

                let server = FakeProvider::always(api, bad.clone()).await;
                let p = provider(settings(dialect, &server, stream));
                let e = complete(&*p, &hello()).await.unwrap_err();
                assert!(
                    matches!(e, ProviderError::Unavailable(_)),
                    "{api:?} {bad:?}: {e:?}"
                );
                assert_no_key(&e);
                assert_eq!(server.requests().len(), 3, "one try and two retries");
            }
        }
    }
}

#[tokio::test]
async fn a_provider_that_says_nothing_times_out() {
    for (api, dialect) in BOTH {
        let server = FakeProvider::always(api, Reply::Hang).await;
        let mut s = settings(dialect, &server, true);
        s.idle_timeout = Duration::from_millis(200);
        s.max_retries = 1;
        let e = complete(&*provider(s), &hello()).await.unwrap_err();
        assert!(
            matches!(&e, ProviderError::Unavailable(m) if m.contains("idle_timeout")),
            "{api:?}: {e:?}"
        );
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn dropping_the_call_closes_the_connection() {
    for (api, dialect) in BOTH {
        let server = FakeProvider::always(api, Reply::Hang).await;
        let p = provider(settings(dialect, &server, true));
        let call = tokio::spawn(async move { complete(&*p, &hello()).await });
        tokio::time::timeout(Duration::from_secs(30), server.until_requests(1))
            .await
            .unwrap();
        call.abort();
        // The server sees the client go away: the request was abandoned,
        // not left running.
        tokio::time::timeout(Duration::from_secs(30), server.until_abandoned(1))
            .await
            .expect("the connection closed");
    }
}

#[tokio::test]
async fn a_model_written_tool_input_that_is_not_json_is_refused_for_anthropic_and_passed_on_for_openai(
) {
    let mut r = hello();
    r.messages.push(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse(ToolUse {
            id: "t".into(),
            name: "Read".into(),
            input: "{broken".into(),
        })],
    });
    r.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult(ToolResult {
            tool_use_id: "t".into(),
            content: "bad input".into(),
            is_error: true,
        })],
    });
    let server = FakeProvider::always(Api::Anthropic, Reply::text("ok")).await;
    let e = complete(&*provider(settings(Dialect::Anthropic, &server, true)), &r)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ProviderError::Invalid(m) if m.contains("not a JSON object")),
        "{e:?}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");

    let server = FakeProvider::always(Api::OpenAi, Reply::text("ok")).await;
    complete(&*provider(settings(Dialect::Openai, &server, true)), &r)
        .await
        .unwrap();
    assert_eq!(
        server.requests()[0].body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{broken"
    );
}

#[tokio::test]
async fn a_base_url_that_is_not_http_is_refused_when_the_provider_is_built() {
    let s = ProviderSettings::new(Dialect::Openai, "file:///etc/passwd", None);
    let err = provider::build(s).err().expect("refused").to_string();
    assert!(err.contains("http://"), "{err}");
}

/// A server that sends a streamed tool call's whole name in every chunk
/// (llama.cpp's) gives the name once, not `ReadReadRead`.
#[tokio::test]
async fn llama_cpp_a_streamed_tool_name_repeated_in_every_chunk_is_read_once() {
    let server = FakeProvider::start_with(
        Api::OpenAi,
        Quirks::LLAMA_CPP,
        vec![Reply::tool_use(
            "call__0_Read",
            "Read",
            json!({"file_path": "a.txt"}),
        )],
    )
    .await;
    let p = provider(settings(Dialect::Openai, &server, true));
    let answer = complete(&*p, &hello()).await.unwrap();
    let ContentBlock::ToolUse(call) = &answer.content[0] else {
        panic!("no tool call: {answer:?}")
    };
    assert_eq!(call.name, "Read");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&call.input).unwrap(),
        json!({"file_path": "a.txt"})
    );
}

/// Tools with no `tool_choice` go out with `"auto"` (OpenAI's default, said
/// out loud): a server that defaults to nothing would drop them silently.
#[tokio::test]
async fn llama_cpp_tools_go_out_with_tool_choice_auto_so_the_server_keeps_them() {
    for stream in [true, false] {
        let server = FakeProvider::start_with(
            Api::OpenAi,
            Quirks::LLAMA_CPP,
            vec![Reply::tool_use("c1", "Read", json!({"file_path": "a.txt"}))],
        )
        .await;
        let p = provider(settings(Dialect::Openai, &server, stream));
        let answer = complete(&*p, &hello()).await.unwrap();
        assert_eq!(server.requests()[0].body["tool_choice"], "auto");
        assert_eq!(
            answer.stop_reason,
            StopReason::ToolUse,
            "stream={stream}: {answer:?}"
        );
    }
    // No tools, no tool_choice.
    let server = FakeProvider::always(Api::OpenAi, Reply::text("hi")).await;
    let p = provider(settings(Dialect::Openai, &server, false));
    let mut r = hello();
    r.tools.clear();
    complete(&*p, &r).await.unwrap();
    assert!(server.requests()[0].body.get("tool_choice").is_none());
}

/// An assistant turn that only calls tools goes out with `content: ""`,
/// which OpenAI and llama.cpp's server both take (`null` is a 500 there).
#[tokio::test]
async fn llama_cpp_an_assistant_turn_with_only_tool_calls_is_sent_with_empty_content() {
    let server = FakeProvider::start_with(
        Api::OpenAi,
        Quirks::LLAMA_CPP,
        vec![
            Reply::tool_use("c1", "Read", json!({"file_path": "a.txt"})),
            Reply::text("done"),
        ],
    )
    .await;
    let p = provider(settings(Dialect::Openai, &server, false));
    let mut r = hello();
    let first = complete(&*p, &r).await.unwrap();
    r.messages.push(Message {
        role: Role::Assistant,
        content: first.content.clone(),
    });
    r.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult(ToolResult {
            tool_use_id: "c1".into(),
            content: "one line".into(),
            is_error: false,
        })],
    });
    let second = complete(&*p, &r).await.unwrap();
    assert_eq!(second.content, vec![ContentBlock::Text("done".into())]);
    let body = &server.requests()[1].body;
    assert_eq!(body["messages"][2]["role"], "assistant");
    assert_eq!(body["messages"][2]["content"], "");
}

/// A 500 that comes back word for word is the server's answer, not a
/// passing fault: asked once more, then reported, saying so. A 500 that
/// changes is retried as before.
#[tokio::test]
async fn a_500_repeated_word_for_word_is_not_retried_again() {
    let same = Reply::status(500, r#"{"error":{"message":"7 validation errors"}}"#);
    let server = FakeProvider::always(Api::OpenAi, same).await;
    let mut s = settings(Dialect::Openai, &server, false);
    s.max_retries = 4;
    let p = provider(s);
    let e = complete(&*p, &hello()).await.unwrap_err();
    assert_eq!(server.requests().len(), 2, "one try, one retry: {e}");
    assert!(e.to_string().contains("the same error twice"), "{e}");

    let server = FakeProvider::start(
        Api::OpenAi,
        vec![
            Reply::status(500, r#"{"error":{"message":"worker 1 died"}}"#),
            Reply::status(500, r#"{"error":{"message":"worker 2 died"}}"#),
            Reply::text("ok"),
        ],
    )
    .await;
    let p = provider(settings(Dialect::Openai, &server, false));
    complete(&*p, &hello()).await.unwrap();
    assert_eq!(server.requests().len(), 3);
}

/// A stream with no usage (llama.cpp's never has any) reaches the broker
/// with zero tokens; `stream_options.include_usage` asks for it.
#[tokio::test]
async fn llama_cpp_a_stream_without_usage_says_zero_and_usage_was_asked_for() {
    let server =
        FakeProvider::start_with(Api::OpenAi, Quirks::LLAMA_CPP, vec![Reply::text("hi")]).await;
    let p = provider(settings(Dialect::Openai, &server, true));
    let answer = complete(&*p, &hello()).await.unwrap();
    assert_eq!(answer.usage.total(), 0);
    assert_eq!(
        server.requests()[0].body["stream_options"]["include_usage"],
        true
    );
}
