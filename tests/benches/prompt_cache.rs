//! What Anthropic prompt caching saves on the `examples/llm-team`
//! conversation, printed as a Markdown table: input tokens sent, and input
//! tokens billed at full price (uncached input + 0.1 × cache reads + 1.25 ×
//! cache writes), with and without caching.
//!
//! The requests are the ones the example's cassettes hold (the real shapes
//! its two LLM teammates sent, call after call), replayed in order through
//! the host's real Anthropic provider, which places the breakpoints, to the
//! fake Anthropic server billing by Anthropic's caching rules
//! (`teamhost_tests::prompt_cache`: a prefix of at least 1,024 tokens is
//! written on first use and read after; tokens are JSON characters / 4).
//! Both teammates talk to one server, as they would share one account.
//!
//! Run with `cargo bench -p teamhost-tests --bench prompt_cache`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use teamhost::model::provider::{self, ApiKey, Dialect, ProviderCall, ProviderSettings};
use teamhost::model::{Request, Usage};
use teamhost_tests::model_server::{FakeProvider, Reply};

/// Sonnet 4.5's smallest cacheable prefix.
const MIN_CACHEABLE: u64 = 1_024;
/// Sonnet's input price, USD per million tokens.
const INPUT_PRICE: f64 = 3.0;

/// Every request of the example's cassettes, teammate by teammate, in the
/// order they were made.
fn requests() -> Vec<(String, Request)> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/llm-team/cassettes/llm-team");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let who = f.file_stem().unwrap().to_string_lossy().to_string();
        for line in read(&f).lines().skip(1) {
            let v: Value = serde_json::from_str(line).unwrap();
            let request: Request = serde_json::from_value(v["request"].clone()).unwrap();
            out.push((who.clone(), request));
        }
    }
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Sends every request with caching on or off; the usage summed.
async fn run(requests: &[(String, Request)], caching: bool) -> Usage {
    let server = FakeProvider::start_caching(MIN_CACHEABLE, vec![Reply::text("ok")]).await;
    let mut settings = ProviderSettings::new(
        Dialect::Anthropic,
        server.base_url(),
        Some(ApiKey::new("k")),
    );
    settings.prompt_caching = caching;
    settings.retry_base = Duration::from_millis(5);
    let p = provider::build(settings).unwrap();
    let mut total = Usage::default();
    for (_, r) in requests {
        let answer = p
            .complete(ProviderCall {
                model_id: "claude-sonnet-4-5",
                request: r,
                max_tokens: 1_000,
                prompt_caching: true,
            })
            .await
            .unwrap();
        total.add(&answer.usage);
    }
    total
}

/// Input tokens at full price that the usage is billed as.
fn full_price(u: &Usage) -> f64 {
    u.input_tokens as f64 + 0.1 * u.cache_read_tokens as f64 + 1.25 * u.cache_write_tokens as f64
}

fn sent(u: &Usage) -> u64 {
    u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let requests = requests();
    let mates: std::collections::BTreeSet<&str> =
        requests.iter().map(|(w, _)| w.as_str()).collect();
    let off = run(&requests, false).await;
    let on = run(&requests, true).await;
    println!(
        "examples/llm-team: {} requests of {} teammates ({}), Anthropic dialect, prefixes of {MIN_CACHEABLE}+ tokens cached\n",
        requests.len(),
        mates.len(),
        mates.into_iter().collect::<Vec<_>>().join(", ")
    );
    println!("| prompt caching | input tokens sent | of which read / written | billed at full price | input cost at ${INPUT_PRICE}/M |");
    println!("|---|---:|---:|---:|---:|");
    for (name, u) in [("off", &off), ("on", &on)] {
        let billed = full_price(u);
        println!(
            "| {name} | {} | {} / {} | {:.0} | ${:.4} |",
            sent(u),
            u.cache_read_tokens,
            u.cache_write_tokens,
            billed,
            billed * INPUT_PRICE / 1e6
        );
    }
    let saved = 1.0 - full_price(&on) / full_price(&off);
    println!("\nprompt caching bills {:.0}% less input", saved * 100.0);
    assert_eq!(sent(&on), sent(&off), "the same tokens are sent either way");
    assert!(on.cache_read_tokens > 0, "the conversation reads its cache");
}
