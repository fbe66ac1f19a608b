//! The cost of the host-brokered `model` capability, printed as a Markdown
//! table:
//!
//! - per-call host overhead: the broker alone (no wasm), and a real
//!   component's call through both WIT crossings, the broker and the usage
//!   recorder, against a provider that answers at once (in memory, and over
//!   loopback HTTP in both dialects with the fake provider server);
//! - throughput: 100 teammates (`TEAMHOST_MODEL_CROWD`) each making 10 calls to a provider that
//!   takes 50 ms per answer (`modelbench` in memory and over HTTP, and the
//!   LLM teammate with a toolbox call between its calls): the ideal is
//!   500 ms per teammate (no teammate waits on another); the figure is
//!   ideal / measured;
//! - memory: resident (VmRSS) and proportional (PSS) memory per idle
//!   teammate holding a model seat, 200 of each kind (`TEAMHOST_MODEL_IDLE`),
//!   settled and after 15 s idle, from the second of two rounds (the first
//!   grows what the process keeps for any crowd); `MODEL_SMAPS=1` prints
//!   where the memory is, mapping by mapping.
//!
//! Run with `cargo bench -p teamhost-tests --bench model`; name sections to
//! run only those (`-- crowd agents idle`; `overhead` is the rest).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use teamhost_tests::measure::{fmt, rss_kib};

use teamhost::embed::{Event, Host, HostOptions, ModelAccess, SpawnRequest};
use teamhost::home::Home;
use teamhost::model::config::{ModelConfig, ModelEntry, Price, ProviderSpec};
use teamhost::model::provider::Provider;
use teamhost::model::provider::{self, Dialect, ProviderSettings};
use teamhost::model::scripted::{Script, Scripted};
use teamhost::model::{CassetteMode, Message, ModelCallEvent, ModelHub, ModelPolicy, Request};
use teamhost::store::NewTeam;
use teamhost_tests::model_server::{Api, FakeProvider, Reply};
use tokio::sync::broadcast::{self, error::RecvError};

/// Safety bound of every wait.
const LIMIT: Duration = Duration::from_secs(300);
const BROKER_CALLS: usize = 5_000;
const GUEST_CALLS: u32 = 1_000;
const HTTP_CALLS: u32 = 300;
const CROWD_CALLS: u32 = 10;

/// How many teammates the crowd rows run (`TEAMHOST_MODEL_CROWD`, default
/// 100).
fn crowd_size() -> usize {
    std::env::var("TEAMHOST_MODEL_CROWD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}
const CROWD_DELAY_MS: u64 = 50;

fn script(delay_ms: u64) -> Script {
    Script::parse(&format!(
        r#"{{"agents":[{{"name":"bench","match":["ping"],"after_last":"repeat-last",
        "turns":[{{"text":"pong","delay_ms":{delay_ms},"usage":{{"input_tokens":10,"output_tokens":2}}}}]}},
        {{"name":"agent","match":[],"after_last":"repeat-last","turns":[{{"text":"ready"}}]}}]}}"#
    ))
    .unwrap()
}

/// A hub whose one model, `fake`, is served by `provider`.
fn hub(provider: Arc<dyn Provider>) -> Arc<ModelHub> {
    let mut config = ModelConfig::from_env();
    config.providers.clear();
    config.providers.insert(
        "p".into(),
        ProviderSpec::Scripted {
            script: "/unused".into(),
        },
    );
    config.models.clear();
    config.models.insert(
        "fake".into(),
        ModelEntry {
            provider: "p".into(),
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
    let hub = ModelHub::new(config, CassetteMode::Live, None).unwrap();
    hub.set_provider("p", provider);
    hub
}

fn policy() -> ModelPolicy {
    let mut p = ModelPolicy::new(vec!["fake".into()]);
    p.requests_per_minute = None;
    p.calls_per_turn = None;
    p.budget_tokens = None;
    p
}

fn host(tmp: &Path, name: &str, provider: Arc<dyn Provider>) -> Host {
    let opts = HostOptions {
        models: ModelAccess::new(hub(provider)),
        event_capacity: 1 << 16,
        ..HostOptions::default()
    };
    let host = Host::with_options(Home::new(tmp.join(name)), opts).unwrap();
    host.create_team(name, NewTeam::default()).unwrap();
    host
}

fn bench_request(name: &str, prompt: &str, dir: &Path) -> SpawnRequest {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut req = SpawnRequest::new(name, teamhost_tests::MODELBENCH, prompt, &dir);
    req.settings.auto_claim = false;
    req.settings.model_policy = Some(policy());
    req
}

/// When calls ran, as the events were received.
struct Timing {
    /// The first call's start.
    first: Instant,
    /// The last call's end.
    last: Instant,
    /// The teammates that made calls: their first start and last end.
    each: std::collections::HashMap<String, (Instant, Instant)>,
    /// The calls' own time as the host measured it (the broker: provider
    /// and kept conversation), summed over all calls.
    inside: Duration,
}

/// Waits for `n` finished model calls.
async fn finished_calls(events: &mut broadcast::Receiver<Event>, n: u64) -> Timing {
    let mut each: std::collections::HashMap<String, (Instant, Instant)> = Default::default();
    let mut first = None;
    let mut done = 0;
    let mut inside = Duration::ZERO;
    tokio::time::timeout(LIMIT, async {
        loop {
            match events.recv().await {
                Ok(Event::Model { name, call, .. }) => {
                    let now = Instant::now();
                    match call {
                        ModelCallEvent::Started { .. } => {
                            first.get_or_insert(now);
                            each.entry(name).or_insert((now, now));
                        }
                        ModelCallEvent::Finished { millis, .. } => {
                            inside += Duration::from_millis(millis);
                            if let Some(e) = each.get_mut(&name) {
                                e.1 = now;
                            }
                            done += 1;
                            if done == n {
                                return;
                            }
                        }
                        ModelCallEvent::Failed { error, .. } => {
                            panic!("a model call failed: {error}")
                        }
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(k)) => panic!("benchmark lost {k} events"),
                Err(RecvError::Closed) => panic!("host events closed"),
            }
        }
    })
    .await
    .expect("calls finish within the safety bound");
    Timing {
        first: first.expect("a call started"),
        last: Instant::now(),
        each,
        inside,
    }
}

fn ping() -> Request {
    Request {
        system: Some("You answer in one word.".into()),
        max_tokens: Some(16),
        ..Request::new(vec![Message::user("ping 0")])
    }
}

/// The broker alone: policy, meter and an in-memory provider.
async fn broker_overhead(rows: &mut Vec<(String, String, String)>) {
    let hub = hub(Arc::new(Scripted::new(script(0))));
    let client = hub.client("b", "b", Some(policy())).unwrap();
    for _ in 0..100 {
        client.complete(ping()).await.unwrap();
    }
    let t = Instant::now();
    for _ in 0..BROKER_CALLS {
        client.complete(ping()).await.unwrap();
    }
    rows.push((
        format!("broker alone (policy, meter, in-memory provider), {BROKER_CALLS} calls"),
        format!("{} per call", fmt(t.elapsed() / BROKER_CALLS as u32)),
        "< 1 ms".into(),
    ));
}

/// A component making `calls` calls in one turn: the time from the lead's
/// message to the last call's end, per call.
async fn guest_overhead(
    tmp: &Path,
    name: &str,
    provider: Arc<dyn Provider>,
    calls: u32,
) -> Duration {
    let host = host(tmp, name, provider);
    let mut events = host.events();
    // A warm-up turn, then the measured one.
    host.spawn(name, bench_request("mb", "10", &tmp.join("work")))
        .await
        .unwrap();
    finished_calls(&mut events, 10).await;
    // From the lead's message to the last answer's event: one message and
    // one wake-up more than the calls themselves, spread over all of them.
    let start = Instant::now();
    host.send_as_lead(name, "mb", &calls.to_string(), None)
        .unwrap();
    let t = finished_calls(&mut events, u64::from(calls)).await;
    host.delete_team(name).await.unwrap();
    (t.last - start) / calls
}

/// What a crowd row shows: the time the lead took to send its messages,
/// the mean time a teammate took for its 10 calls (ideally 10 × 50 ms: no
/// teammate waits on another), the mean time of one call inside the broker
/// (provider and kept conversation; the rest of a teammate's time is the
/// guest, the crossings and waiting for a thread) and the span from the
/// first call's start to the last call's end.
struct Crowd {
    sent: Duration,
    mean: Duration,
    inside: Duration,
    span: Duration,
}

/// [`crowd_size`] teammates making 10 calls each at once ([`Crowd`]).
async fn crowd_throughput(tmp: &Path, name: &str, provider: Arc<dyn Provider>) -> Crowd {
    let crowd = crowd_size();
    let host = host(tmp, name, provider);
    let mut events = host.events();
    for i in 0..crowd {
        host.spawn(
            name,
            bench_request(&format!("mb{i}"), "0", &tmp.join("work")),
        )
        .await
        .unwrap();
    }
    tokio::time::timeout(LIMIT, host.wait_idle(name))
        .await
        .unwrap()
        .unwrap();
    // The events are timed by a task of their own, so that the sends below
    // do not delay their reception.
    let collector = tokio::spawn(async move {
        finished_calls(&mut events, crowd as u64 * u64::from(CROWD_CALLS)).await
    });
    let sending = Instant::now();
    for i in 0..crowd {
        host.send_as_lead(name, &format!("mb{i}"), &CROWD_CALLS.to_string(), None)
            .unwrap();
    }
    let sent = sending.elapsed();
    let t = collector.await.unwrap();
    host.delete_team(name).await.unwrap();
    assert_eq!(t.each.len(), crowd);
    let mean = t.each.values().map(|(a, b)| *b - *a).sum::<Duration>() / crowd as u32;
    Crowd {
        sent,
        mean,
        inside: t.inside / (crowd as u32 * CROWD_CALLS),
        span: t.last - t.first,
    }
}

fn crowd_row(
    label: &str,
    Crowd {
        sent,
        mean,
        inside,
        span,
    }: Crowd,
) -> (String, String, String) {
    let crowd = crowd_size();
    let ideal = Duration::from_millis(CROWD_DELAY_MS * u64::from(CROWD_CALLS));
    (
        format!(
            "{crowd} teammates × {CROWD_CALLS} calls, {label} taking {CROWD_DELAY_MS} ms: a teammate's {CROWD_CALLS} calls while the others call (ideal {} ms); all {} calls, first to last (the lead's {crowd} messages took {} to send, so starts spread over that)",
            ideal.as_millis(),
            crowd as u64 * u64::from(CROWD_CALLS),
            fmt(sent)
        ),
        share_of_ideal(mean, inside, span),
        "≥ 80 %".into(),
    )
}

/// A crowd row's result: a teammate's mean time for its calls and its
/// share of the ideal, a call's mean time inside the broker, the span of
/// all the calls.
fn share_of_ideal(mean: Duration, inside: Duration, span: Duration) -> String {
    let ideal = Duration::from_millis(CROWD_DELAY_MS * u64::from(CROWD_CALLS));
    format!(
        "{} ({:.0} % of ideal; a call {} inside the broker); {}",
        fmt(mean),
        ideal.as_secs_f64() / mean.as_secs_f64() * 100.0,
        fmt(inside),
        fmt(span)
    )
}

/// 100 LLM teammates (`guests/agent`), each given a task in its prompt: the
/// scripted model makes it call TaskList through the toolbox 9 times, then
/// answer (10 calls, each taking 50 ms in the provider). Returns the mean
/// time a teammate took for its 10 calls, the mean time of a call inside the
/// broker ([`Crowd`]) and the span of all the calls.
async fn agent_crowd(tmp: &Path) -> (Duration, Duration, Duration) {
    let crowd = crowd_size();
    let mut turns: Vec<String> = (0..CROWD_CALLS - 1)
        .map(|i| format!(r#"{{"tool_use":[{{"id":"t{i}","name":"TaskList","input":{{}}}}],"delay_ms":{CROWD_DELAY_MS}}}"#))
        .collect();
    turns.push(format!(r#"{{"text":"done","delay_ms":{CROWD_DELAY_MS}}}"#));
    let script = Script::parse(&format!(
        r#"{{"agents":[{{"name":"any","match":[],"turns":[{}]}}]}}"#,
        turns.join(",")
    ))
    .unwrap();
    let name = "agents";
    let host = host(tmp, name, Arc::new(Scripted::new(script)));
    host.runtime()
        .prepare(
            Path::new(teamhost_tests::AGENT),
            teamhost::runtime::WasiHttpGrant::NotGranted,
        )
        .unwrap();
    let mut events = host.events();
    let collector = tokio::spawn(async move {
        finished_calls(&mut events, crowd as u64 * u64::from(CROWD_CALLS)).await
    });
    for i in 0..crowd {
        let mut req = bench_request(&format!("agent{i}"), "list the tasks", &tmp.join("work"));
        req.component = teamhost_tests::AGENT.into();
        host.spawn(name, req).await.unwrap();
    }
    let t = collector.await.unwrap();
    host.delete_team(name).await.unwrap();
    assert_eq!(t.each.len(), crowd);
    let mean = t.each.values().map(|(a, b)| *b - *a).sum::<Duration>() / crowd as u32;
    (
        mean,
        t.inside / (crowd as u32 * CROWD_CALLS),
        t.last - t.first,
    )
}

/// Resident memory per idle teammate of `component` after one turn with
/// one model call.
/// How long `idle` leaves the teammates idle before measuring again.
const IDLE_WAIT: Duration = Duration::from_secs(15);

async fn idle_memory(
    tmp: &Path,
    component: &str,
    label: &str,
    rows: &mut Vec<(String, String, String)>,
) {
    // `TEAMHOST_MODEL_IDLE` teammates (default 200).
    let idle: usize = std::env::var("TEAMHOST_MODEL_IDLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let team = format!("idle{label}");
    let host = host(tmp, &team, Arc::new(Scripted::new(script(0))));
    host.runtime()
        .prepare(
            Path::new(component),
            teamhost::runtime::WasiHttpGrant::NotGranted,
        )
        .unwrap();
    let before = rss_kib();
    let pss_before = teamhost_tests::measure::pss_kib();
    for i in 0..idle {
        let mut req = bench_request(&format!("{label}{i}"), "1", &tmp.join("work"));
        req.component = component.into();
        host.spawn(&team, req).await.unwrap();
    }
    tokio::time::timeout(LIMIT, host.wait_idle(&team))
        .await
        .unwrap()
        .unwrap();
    let settled = (rss_kib(), teamhost_tests::measure::pss_kib());
    if std::env::var_os("MODEL_SMAPS").is_some() {
        teamhost_tests::measure::print_smaps();
    }
    // Idle long enough for the blocking pool's threads the spawns started
    // to end (tokio keeps an idle one 10 s; each holds a stack).
    tokio::time::sleep(IDLE_WAIT).await;
    let idled = (rss_kib(), teamhost_tests::measure::pss_kib());
    let per = |now: (u64, u64)| {
        format!(
            "{:.0} / {:.0} KiB per teammate",
            now.0.saturating_sub(before) as f64 / idle as f64,
            now.1.saturating_sub(pss_before) as f64 / idle as f64
        )
    };
    rows.push((
        format!("{idle} idle `{label}` teammates with a model seat, after one turn with a model call each: resident (VmRSS) / proportional (PSS), settled"),
        per(settled),
        "".into(),
    ));
    rows.push((
        format!("… the same after {} s idle", IDLE_WAIT.as_secs()),
        per(idled),
        "< 40 KiB".into(),
    ));
    host.delete_team(&team).await.unwrap();
}

fn http(dialect: Dialect, server: &FakeProvider) -> Arc<dyn Provider> {
    let mut settings = ProviderSettings::new(
        dialect,
        server.base_url(),
        Some(provider::ApiKey::new("sk-bench")),
    );
    settings.stream = true;
    provider::build(settings).unwrap()
}

fn main() {
    let crowd = crowd_size();
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    // Arguments name the sections to run: `overhead`, `crowd`, `agents`,
    // `idle` (all when none).
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let on = |s: &str| wanted.is_empty() || wanted.iter().any(|w| w == s);
    rt.block_on(async {
        if on("overhead") {
        eprintln!("broker overhead…");
        broker_overhead(&mut rows).await;

        eprintln!("component → in-memory provider…");
        let per = guest_overhead(tmp.path(), "guest", Arc::new(Scripted::new(script(0))), GUEST_CALLS).await;
        rows.push((
            format!("component → host → in-memory provider, {GUEST_CALLS} calls in one turn"),
            format!("{} per call", fmt(per)),
            "< 1 ms".into(),
        ));
        for (api, dialect, label) in [(Api::Anthropic, Dialect::Anthropic, "Anthropic"), (Api::OpenAi, Dialect::Openai, "OpenAI")] {
            eprintln!("component → {label} over loopback HTTP…");
            let server = FakeProvider::always(api, Reply::text("pong")).await;
            let per = guest_overhead(tmp.path(), &format!("http{label}"), http(dialect, &server), HTTP_CALLS).await;
            rows.push((
                format!("component → host → {label} SSE over loopback HTTP (fake server answering at once), {HTTP_CALLS} calls"),
                format!("{} per call", fmt(per)),
                "(includes the server's own work)".into(),
            ));
        }

        }
        if on("crowd") {
        eprintln!("{crowd} teammates × {CROWD_CALLS} calls at {CROWD_DELAY_MS} ms…");
        let t = crowd_throughput(tmp.path(), "crowd", Arc::new(Scripted::new(script(CROWD_DELAY_MS)))).await;
        rows.push(crowd_row("in-memory provider", t));
        let server = FakeProvider::always(Api::Anthropic, Reply::text("pong").delayed(Duration::from_millis(CROWD_DELAY_MS))).await;
        let t = crowd_throughput(tmp.path(), "crowdhttp", http(Dialect::Anthropic, &server)).await;
        rows.push(crowd_row("Anthropic SSE over loopback HTTP, the server", t));

        }
        if on("agents") {
        eprintln!("{crowd} agent teammates × {CROWD_CALLS} calls…");
        let (mean, inside, span) = agent_crowd(tmp.path()).await;
        let ideal = Duration::from_millis(CROWD_DELAY_MS * u64::from(CROWD_CALLS));
        rows.push((
            format!("{crowd} `agent` teammates (the LLM teammate), each 10 calls with a toolbox TaskList between them, in-memory provider taking {CROWD_DELAY_MS} ms: a teammate's 10 calls (ideal {} ms); all {}, first to last (the spawns spread the starts)", ideal.as_millis(), crowd as u64 * u64::from(CROWD_CALLS)),
            share_of_ideal(mean, inside, span),
            "≥ 80 %".into(),
        ));

        }
        if on("idle") {
        eprintln!("idle memory…");
        // Two rounds, kept from the second: the first grows what the
        // process keeps for any crowd (the allocator's arenas, the blocking
        // pool's threads and their cached stacks), which would otherwise be
        // charged to whichever kind ran first.
        for round in 0..2 {
            let mut kept = Vec::new();
            idle_memory(tmp.path(), teamhost_tests::MODELBENCH, "modelbench", &mut kept).await;
            idle_memory(tmp.path(), teamhost_tests::AGENT, "agent", &mut kept).await;
            if round == 1 {
                rows.extend(kept);
            }
        }
        }
    });

    println!();
    println!("| measurement | result | target |");
    println!("|---|---:|---|");
    for (what, result, target) in &rows {
        println!("| {what} | {result} | {target} |");
    }
}
