//! teamhost's runtime costs on real files and real components, printed as a
//! Markdown table:
//!
//! - first compile of a component vs loading its cached artifact in a fresh
//!   runtime (the component cache);
//! - spawn: cached component → teammate registered, prompt delivered, instance
//!   ready for its first turn (`Host::spawn`);
//! - in-process wake: `send_as_lead` → the recipient's `TurnStarted` event;
//! - 1,000 idle teammates in one process: resident memory and spawn time.
//!
//! Run with `cargo bench -p teamhost-tests --bench runtime`. Set
//! `TEAMHOST_BENCH_CROWD` to change the number of idle teammates (default
//! 1,000).

use std::path::Path;
use std::time::{Duration, Instant};

use teamhost_tests::measure::{fmt, rss_kib};

use teamhost::embed::{Event, Host, SpawnRequest, TeammateState};
use teamhost::home::Home;
use teamhost::runtime::Runtime;
use teamhost::store::NewTeam;
use tokio::sync::broadcast::{self, error::RecvError};

/// Safety bound of every wait.
const LIMIT: Duration = Duration::from_secs(300);
const COMPILES: usize = 5;
const CACHED_LOADS: usize = 20;
const SPAWNS: usize = 50;
const WAKES: usize = 200;
/// Stop spawning the crowd after this long and report what was reached.
const CROWD_BUDGET: Duration = Duration::from_secs(180);

struct Row {
    what: String,
    n: usize,
    median: String,
    p90: String,
    target: String,
}

fn row(what: &str, samples: &mut [Duration], target: &str) -> Row {
    samples.sort();
    let n = samples.len();
    Row {
        what: what.to_string(),
        n,
        median: fmt(samples[n / 2]),
        p90: fmt(samples[((n * 9) / 10).min(n - 1)]),
        target: target.to_string(),
    }
}

fn single(what: &str, value: String, target: &str) -> Row {
    Row {
        what: what.to_string(),
        n: 1,
        median: value,
        p90: "–".into(),
        target: target.to_string(),
    }
}

/// User + system CPU time of this process.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command name (which is in parentheses).
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_secs_f64(ticks as f64 / hz as f64)
}

async fn next_event(
    events: &mut broadcast::Receiver<Event>,
    mut pred: impl FnMut(&Event) -> bool,
) -> Event {
    tokio::time::timeout(LIMIT, async {
        loop {
            match events.recv().await {
                Ok(e) if pred(&e) => return e,
                Ok(_) => {}
                Err(RecvError::Lagged(n)) => panic!("benchmark lost {n} events"),
                Err(RecvError::Closed) => panic!("host events closed"),
            }
        }
    })
    .await
    .expect("event within the safety bound")
}

async fn settle(host: &Host, team: &str) {
    tokio::time::timeout(LIMIT, host.wait_idle(team))
        .await
        .expect("team settles within the safety bound")
        .unwrap();
}

fn request(component: &str, name: &str, dir: &Path) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, component, "ready", dir);
    req.settings.auto_claim = false;
    req
}

fn compile_vs_load(tmp: &Path, rows: &mut Vec<Row>) {
    let probe = Path::new(teamhost_tests::PROBE);
    let size = std::fs::metadata(probe).unwrap().len();
    let mut compiles = Vec::new();
    for i in 0..COMPILES {
        let rt = Runtime::new(Some(tmp.join(format!("compile-{i}")))).unwrap();
        let t = Instant::now();
        rt.cache().load(probe).unwrap();
        compiles.push(t.elapsed());
    }
    let cache = tmp.join("compile-0");
    let mut loads = Vec::new();
    for _ in 0..CACHED_LOADS {
        let rt = Runtime::new(Some(cache.clone())).unwrap();
        let t = Instant::now();
        rt.cache().load(probe).unwrap();
        loads.push(t.elapsed());
    }
    let rt = Runtime::new(Some(cache)).unwrap();
    rt.cache().load(probe).unwrap();
    let mut hits = Vec::new();
    for _ in 0..CACHED_LOADS {
        let t = Instant::now();
        rt.cache().load(probe).unwrap();
        hits.push(t.elapsed());
    }
    let kib = size / 1024;
    rows.push(row(
        &format!("first compile of `probe` ({kib} KiB), compile + save artifact"),
        &mut compiles,
        "(context)",
    ));
    rows.push(row(
        "load of the cached artifact in a fresh runtime (read + hash + deserialize)",
        &mut loads,
        "(context)",
    ));
    rows.push(row(
        "load again in the same runtime (read + hash, in-memory hit)",
        &mut hits,
        "(context)",
    ));
}

async fn spawn_latency(host: &Host, dir: &Path, rows: &mut Vec<Row>) {
    host.create_team("spawn", NewTeam::default()).unwrap();
    // Warm: compile and link the component once.
    host.spawn("spawn", request(teamhost_tests::PROBE, "warm", dir))
        .await
        .unwrap();
    settle(host, "spawn").await;
    let mut samples = Vec::new();
    for _ in 0..SPAWNS {
        let t = Instant::now();
        host.spawn("spawn", request(teamhost_tests::PROBE, "p", dir))
            .await
            .unwrap();
        samples.push(t.elapsed());
        // Not timed: let its first turn run so spawns do not overlap turns.
        settle(host, "spawn").await;
    }
    rows.push(row(
        &format!(
            "spawn (warm cache; register + prompt + instantiate), team grows to {} members",
            SPAWNS + 2
        ),
        &mut samples,
        "< 5 ms",
    ));
}

async fn wake_latency(host: &Host, dir: &Path, rows: &mut Vec<Row>) {
    host.create_team("wake", NewTeam::default()).unwrap();
    host.spawn("wake", request(teamhost_tests::PROBE, "probe", dir))
        .await
        .unwrap();
    settle(host, "wake").await;
    let mut events = host.events();
    let (mut sends, mut wakes, mut turns) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..WAKES {
        let t = Instant::now();
        host.send_as_lead("wake", "probe", "ping", None).unwrap();
        let sent = t.elapsed();
        next_event(
            &mut events,
            |e| matches!(e, Event::TurnStarted { name, .. } if name == "probe"),
        )
        .await;
        let started = t.elapsed();
        next_event(&mut events, |e| {
            matches!(e, Event::StateChanged { name, state: TeammateState::Idle, .. } if name == "probe")
        })
        .await;
        sends.push(sent);
        wakes.push(started);
        turns.push(t.elapsed() - started);
    }
    rows.push(row(
        "in-process wake: `send_as_lead` → `TurnStarted` (includes the inbox write)",
        &mut wakes,
        "< 3 ms median",
    ));
    rows.push(row(
        "… of which `send_as_lead` (locked inbox append + rename)",
        &mut sends,
        "",
    ));
    rows.push(row(
        "… then turn + `isActive` writes + idle notification → `Idle`",
        &mut turns,
        "",
    ));
}

async fn crowd(host: &Host, dir: &Path, count: usize, rows: &mut Vec<Row>) {
    host.create_team("crowd", NewTeam::default()).unwrap();
    // Compile and link the echo component before measuring.
    host.runtime()
        .prepare(
            Path::new(teamhost_tests::ECHO),
            teamhost::runtime::WasiHttpGrant::NotGranted,
        )
        .unwrap();
    let before = rss_kib();
    let start = Instant::now();
    let mut spawned = 0;
    let mut spawns = Vec::new();
    while spawned < count && start.elapsed() < CROWD_BUDGET {
        let t = Instant::now();
        host.spawn("crowd", request(teamhost_tests::ECHO, "echo", dir))
            .await
            .unwrap();
        spawns.push(t.elapsed());
        spawned += 1;
    }
    let spawn_total = start.elapsed();
    settle(host, "crowd").await;
    let settled = start.elapsed();
    let after = rss_kib();
    // Idle cost: CPU used over 5 s with every teammate idle (their fallback
    // poll runs every 500 ms).
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle_cpu = (cpu_time() - cpu0).as_secs_f64() / wall0.elapsed().as_secs_f64() * 100.0;
    let after_idle = rss_kib();

    let label = if spawned == count {
        format!("{count}")
    } else {
        format!("{spawned} of {count} (budget of {CROWD_BUDGET:?} reached)")
    };
    let per = (after.saturating_sub(before)) as f64 / spawned as f64;
    rows.push(single(
        &format!("{label} idle `echo` teammates: RSS before → after"),
        format!(
            "{:.1} → {:.1} MiB (+{:.1} MiB)",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            (after.saturating_sub(before)) as f64 / 1024.0
        ),
        "< 150 MiB",
    ));
    rows.push(single(
        "… resident memory per idle teammate",
        format!("{per:.0} KiB"),
        "",
    ));
    rows.push(single(
        "… RSS after 5 s more of idling",
        format!("{:.1} MiB", after_idle as f64 / 1024.0),
        "",
    ));
    rows.push(single(
        "… total time to spawn them all (sequential `spawn`s, first turns running meanwhile)",
        fmt(spawn_total),
        "",
    ));
    rows.push(single(
        "… until every one has taken its first turn and is idle",
        fmt(settled),
        "",
    ));
    let mut first: Vec<Duration> = spawns.iter().take(100).copied().collect();
    let mut last: Vec<Duration> = spawns.iter().rev().take(100).copied().collect();
    rows.push(row(
        "… spawn latency, first 100 of the crowd",
        &mut first,
        "",
    ));
    rows.push(row(
        "… spawn latency, last 100 of the crowd (config.json and the lead's inbox have grown)",
        &mut last,
        "",
    ));
    rows.push(single(
        "… CPU while all are idle (fallback poll)",
        format!("{idle_cpu:.1} % of one core"),
        "",
    ));
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let count: usize = std::env::var("TEAMHOST_BENCH_CROWD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();

    eprintln!("compile vs cached load…");
    compile_vs_load(tmp.path(), &mut rows);

    rt.block_on(async {
        let host = Host::new(Home::new(tmp.path().join("home"))).unwrap();
        let dir = tmp.path().join("work");
        std::fs::create_dir_all(&dir).unwrap();
        eprintln!("spawn latency…");
        spawn_latency(&host, &dir, &mut rows).await;
        eprintln!("wake latency…");
        wake_latency(&host, &dir, &mut rows).await;
        host.delete_team("spawn").await.unwrap();
        host.delete_team("wake").await.unwrap();
        eprintln!("{count} idle teammates…");
        crowd(&host, &dir, count, &mut rows).await;
        host.delete_team("crowd").await.unwrap();
    });

    println!();
    println!("| measurement | n | median | p90 | target |");
    println!("|---|---:|---:|---:|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.what, r.n, r.median, r.p90, r.target
        );
    }
}
