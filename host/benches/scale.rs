//! teamhost at scale: the main job (`teamhost run`) with growing teams, the
//! spawn cost as a team grows, idle teammates by the thousand, cross-process
//! wake-ups, and the store under eight writer processes — each side by side
//! with the reference's algorithm where the issue asks (a 500 ms poll, an
//! inbox rewritten per message, no lock).
//!
//! Run with `cargo bench -p teamhost --bench scale` (about ten minutes), or
//! name sections: `cargo bench -p teamhost --bench scale -- grid wake`.
//! Sections: `grid`, `crowd`, `spawn`, `idle`, `wake`, `writers`. Set
//! `TEAMHOST_SCALE_QUICK=1` for smaller sizes while iterating. Prints
//! Markdown tables.
//!
//! To compare builds side by side in one run (an old commit's binary beside
//! the new), `TEAMHOST_SCALE_EXES=old=/path/a,new=/path/b` makes `grid` and
//! `crowd` run each size with each binary in turn, `TEAMHOST_SCALE_REPEAT` times
//! (default 1), interleaved A/B/A/B, a row each.
//!
//! `grid` run with this build's own binary compares each size's best
//! per-task cost with the baseline stored for this machine class and build
//! profile (`benches/baseline/scale.json`, [`baseline`]): a size more than
//! 20 % slower prints a `REGRESSION` line and the bench exits with status 1.
//! `TEAMHOST_SCALE_BASELINE=save` stores this run's figures as the baseline.
//!
//! `TEAMHOST_SCALE_BLOCKING=N` caps the bench's runtime at `N` blocking
//! threads (tokio's `max_blocking_threads`; 512 when unset), for `idle`:
//! how much of the spawn goes to the blocking pool's own hand-offs.
//!
//! `wake` also measures the floor under any file-based wake-up in the same
//! run (`benches/support/wake_floor.rs`) and prints teamhost's ratio to it;
//! `TEAMHOST_WAKE_FLOOR=0` leaves it out.
//!
//! Every team is generated here: `grid` writes a corpus of small files and a
//! manifest of `worker` teammates with one task per file, runs the real
//! `teamhost run --json` binary and reads its summary (work, spawn and
//! shutdown times) and its peak resident memory (`wait4`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use teamhost::embed::{Host, SpawnRequest};
use teamhost::home::Home;
use teamhost::store::{InboxMessage, NewMember, NewTeam, OutgoingMessage, Store};

const TEAMHOST: &str = env!("CARGO_BIN_EXE_teamhost");

#[path = "support/baseline.rs"]
mod baseline;
#[path = "support/wake_floor.rs"]
mod wake_floor;
#[path = "support/writers.rs"]
mod writers;
use writers::{now_us, Wakeup};

fn main() {
    // This binary also plays the writer processes of `writers` (a library
    // user's process, its allocator left as it was measured before).
    if let Ok(role) = std::env::var("SCALE_ROLE") {
        if role == "floor" {
            wake_floor::reader_role();
            return;
        }
        writer_role(&role);
        return;
    }
    // As the `teamhost` binary does, before the runtime's threads start:
    // the in-process figures are its.
    teamhost::embed::limit_malloc_arenas();
    let quick = std::env::var_os("TEAMHOST_SCALE_QUICK").is_some();
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let on = |s: &str| wanted.is_empty() || wanted.iter().any(|w| w == s);
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    println!("machine: {}", machine());
    let mut regressed = false;
    if on("grid") {
        regressed = grid(base.path(), quick);
    }
    if on("crowd") {
        crowd_run(base.path(), if quick { 200 } else { 1000 });
    }
    if on("spawn") {
        store_growth(base.path());
        spawn_growth(base.path(), if quick { 200 } else { 1000 });
    }
    if on("idle") {
        let count = std::env::var("TEAMHOST_SCALE_IDLE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if quick { 1000 } else { 10_000 });
        idle_crowd(base.path(), count);
    }
    if on("wake") {
        wake(base.path(), if quick { 30 } else { 100 });
    }
    if on("writers") {
        writers(base.path(), if quick { 100 } else { 500 });
    }
    if regressed {
        eprintln!("the main job regressed against its baseline (the REGRESSION lines above)");
        std::process::exit(1);
    }
}

// --- grid: teammates × tasks through `teamhost run` -----------------------

/// What one `teamhost run` reported and cost.
struct RunResult {
    ok: bool,
    exit: i32,
    work_ms: u64,
    spawn_ms: u64,
    shutdown_ms: u64,
    killed: usize,
    peak_rss_kib: i64,
    error: Option<String>,
}

/// Runs the grid; `true` when this build's own binary regressed against
/// the stored baseline ([`baseline::check`]).
fn grid(base: &Path, quick: bool) -> bool {
    let sizes: &[(usize, usize)] = if quick {
        &[(10, 100), (30, 300)]
    } else {
        &[(10, 100), (10, 300), (30, 300), (100, 500), (100, 1000)]
    };
    println!();
    println!("## `teamhost run`: worker teammates, one small file per task");
    println!();
    println!("| teammates × tasks | work | per task | spawn all | shutdown | peak RSS | exit |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    let exes = grid_exes();
    let repeat = repeat();
    let runs = sizes.iter().flat_map(|&size| {
        let exes = &exes;
        (0..repeat).flat_map(move |_| exes.iter().map(move |e| (size, e)))
    });
    let own = exes.len() == 1 && exes[0].0.is_empty();
    let mut best: std::collections::BTreeMap<String, f64> = Default::default();
    // Each run in a directory of its own, none removed until the end: on
    // ext4, creating files soon after thousands were deleted nearby costs
    // several times more (the allocator steps over recently freed inodes),
    // so removing one run's tree right before the next slowed the next.
    for (n, ((mates, tasks), (label, exe))) in runs.enumerate() {
        let dir = base.join(format!("grid-{mates}x{tasks}-{n}"));
        let manifest = wordcount_team(&dir, mates, tasks);
        let r = run_manifest(exe, &dir, &manifest);
        if own && r.ok {
            let per_task = r.work_ms as f64 / tasks as f64;
            let b = best.entry(format!("{mates}x{tasks}")).or_insert(f64::MAX);
            *b = b.min(per_task);
        }
        let label = if label.is_empty() {
            String::new()
        } else {
            format!(" ({label})")
        };
        println!(
            "| {mates} × {tasks}{label} | {:.2} s | {:.1} ms | {:.2} s | {:.2} s | {:.0} MiB | {}{} |",
            r.work_ms as f64 / 1e3,
            r.work_ms as f64 / tasks as f64,
            r.spawn_ms as f64 / 1e3,
            r.shutdown_ms as f64 / 1e3,
            r.peak_rss_kib as f64 / 1024.0,
            r.exit,
            if r.killed > 0 {
                format!(", {} killed", r.killed)
            } else {
                String::new()
            }
        );
        if !r.ok {
            println!(
                "|   ↳ not ok: {} | | | | | | |",
                r.error.unwrap_or_default()
            );
        }
    }
    baseline::check(&best)
}

/// How many times `grid` and `crowd` run each binary
/// (`TEAMHOST_SCALE_REPEAT`, default 1).
fn repeat() -> usize {
    std::env::var("TEAMHOST_SCALE_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// The binaries `grid` runs: `TEAMHOST_SCALE_EXES` (`label=path,…`), else
/// this build's `teamhost` without a label.
fn grid_exes() -> Vec<(String, String)> {
    match std::env::var("TEAMHOST_SCALE_EXES") {
        Ok(list) if !list.is_empty() => list
            .split(',')
            .map(|e| match e.split_once('=') {
                Some((label, path)) => (label.to_string(), path.to_string()),
                None => (e.to_string(), e.to_string()),
            })
            .collect(),
        _ => vec![(String::new(), TEAMHOST.to_string())],
    }
}

/// A corpus of `tasks` small files and a manifest of `mates` workers, one
/// task per file. Returns the manifest's path.
fn wordcount_team(dir: &Path, mates: usize, tasks: usize) -> PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut m = String::from("[team]\nname = \"scale\"\n\n");
    for i in 0..mates {
        m.push_str(&format!(
            "[[teammate]]\nname = \"w{i}\"\ncomponent = {:?}\nprompt = \"Count words.\"\ncwd = \"data\"\nmode = \"acceptEdits\"\n\n",
            teamhost_tests::WORKER
        ));
    }
    for t in 0..tasks {
        let file = format!("f{t:05}.txt");
        let words: Vec<String> = (0..20 + t % 30).map(|w| format!("word{w}")).collect();
        std::fs::write(data.join(&file), words.join(" ")).unwrap();
        m.push_str(&format!(
            "[[task]]\nsubject = \"Count {file}\"\ndescription = \"\"\"\nCount the words.\n- {file}\n\"\"\"\n\n"
        ));
    }
    let path = dir.join("team.toml");
    std::fs::write(&path, m).unwrap();
    path
}

/// Runs `teamhost run --json` on `manifest` with a fresh home in `dir`.
// The child is reaped by `wait4`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run_manifest(exe: &str, dir: &Path, manifest: &Path) -> RunResult {
    let out = dir.join("run.out");
    let err = dir.join("run.err");
    let child = Command::new(exe)
        .arg("--home")
        .arg(dir.join("home"))
        .arg("--json")
        .args(["run", "--timeout", "900"])
        .arg(manifest)
        .env_remove("TMUX")
        .env_remove("TEAMHOST_TEAMMATE_MODE")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let (exit, peak_rss_kib) = wait_with_rusage(child.id() as i32);
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        let tail = std::fs::read_to_string(&err).unwrap_or_default();
        let tail: String = tail.lines().rev().take(20).collect::<Vec<_>>().join("\n");
        panic!("no JSON summary from teamhost run (exit {exit}): {e}\n{tail}")
    });
    RunResult {
        ok: v["ok"].as_bool().unwrap_or(false),
        exit,
        work_ms: v["workMs"].as_u64().unwrap_or(0),
        spawn_ms: v["spawnMs"].as_u64().unwrap_or(0),
        shutdown_ms: v["shutdownMs"].as_u64().unwrap_or(0),
        killed: v["shutdown"]["killed"].as_array().map_or(0, Vec::len),
        peak_rss_kib,
        error: v["error"].as_str().map(str::to_string),
    }
}

/// Waits for child `pid`; its exit status and peak resident memory (KiB).
fn wait_with_rusage(pid: i32) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child; the pointers are valid for the call.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let exit = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    (exit, usage.ru_maxrss)
}

// --- crowd: idle teammates by the thousand through `teamhost run` ----------

fn crowd_run(base: &Path, count: usize) {
    let dir = base.join(format!("crowd-{count}"));
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let mut m = String::from("[team]\nname = \"crowd\"\nnotifications = \"none\"\n\n");
    for i in 0..count {
        m.push_str(&format!(
            "[[teammate]]\nname = \"e{i}\"\ncomponent = {:?}\nprompt = \"ready\"\ncwd = \"work\"\n\n",
            teamhost_tests::ECHO
        ));
    }
    let manifest = dir.join("team.toml");
    std::fs::write(&manifest, m).unwrap();
    println!();
    println!(
        "## `teamhost run`: {count} idle `echo` teammates, no tasks (`notifications = \"none\"`)"
    );
    println!();
    println!("| binary | spawn all | all started and idle | shutdown | killed | peak RSS | exit |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    // Side by side like `grid`: each binary in turn, `TEAMHOST_SCALE_REPEAT` times.
    let exes = grid_exes();
    let repeat = repeat();
    for n in 0..repeat {
        for (i, (label, exe)) in exes.iter().enumerate() {
            let run = dir.join(format!("run-{n}-{i}"));
            std::fs::create_dir_all(&run).unwrap();
            let r = run_manifest(exe, &run, &manifest);
            println!(
                "| {} | {:.2} s | {:.2} s | {:.2} s | {} | {:.0} MiB | {}{} |",
                if label.is_empty() {
                    "this build"
                } else {
                    label
                },
                r.spawn_ms as f64 / 1e3,
                r.work_ms as f64 / 1e3,
                r.shutdown_ms as f64 / 1e3,
                r.killed,
                r.peak_rss_kib as f64 / 1024.0,
                r.exit,
                r.error.map(|e| format!(" ({e})")).unwrap_or_default()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// --- spawn: cost as the team grows, through the API -----------------------

fn runtime() -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.worker_threads(2).enable_all();
    // An experiment's knob (see the module docs); 0 or not a number is
    // refused, not ignored.
    if let Ok(v) = std::env::var("TEAMHOST_SCALE_BLOCKING") {
        match v.parse::<usize>() {
            Ok(n) if n > 0 => {
                b.max_blocking_threads(n);
            }
            _ => {
                panic!("TEAMHOST_SCALE_BLOCKING={v}: give a number of blocking threads, 1 or more")
            }
        }
    }
    b.build().unwrap()
}

fn echo_request(dir: &Path) -> SpawnRequest {
    let mut req = SpawnRequest::new("echo", teamhost_tests::ECHO, "ready", dir);
    req.settings.auto_claim = false;
    req.settings.notifications = Some(teamhost::teammate::NotificationLevel::None);
    req
}

fn spawn_growth(base: &Path, count: usize) {
    let dir = base.join("spawn");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let mut samples = Vec::with_capacity(count);
    runtime().block_on(async {
        let host = Host::new(Home::new(dir.join("home"))).unwrap();
        host.create_team("grow", NewTeam::default()).unwrap();
        host.runtime()
            .prepare(
                Path::new(teamhost_tests::ECHO),
                teamhost::runtime::WasiHttpGrant::NotGranted,
            )
            .unwrap();
        for _ in 0..count {
            let t = Instant::now();
            host.spawn("grow", echo_request(&dir.join("work")))
                .await
                .unwrap();
            samples.push(t.elapsed());
        }
        host.wait_idle("grow").await.unwrap();
        host.delete_team("grow").await.unwrap();
    });
    let k = (count / 10).clamp(1, 100);
    let mut first: Vec<Duration> = samples[..k].to_vec();
    let mut last: Vec<Duration> = samples[count - k..].to_vec();
    let (f, l) = (median(&mut first), median(&mut last));
    println!();
    println!("## Spawn through `Host::spawn` as one team grows to {count} (warm cache)");
    println!();
    println!("| first {k} (median) | last {k} (median) | last ÷ first |");
    println!("|---:|---:|---:|");
    println!(
        "| {} | {} | {:.2} |",
        fmt(f),
        fmt(l),
        l.as_secs_f64() / f.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a spawn asks of the store, at a team of 10 and of 1,000: register a
/// member, deliver its prompt, read the config, flip `isActive`.
fn store_growth(base: &Path) {
    println!();
    println!("## The store's part of a spawn, as the team grows (one thread, medians of 50)");
    println!();
    println!("| members | add member | deliver prompt | read config | set isActive |");
    println!("|---:|---:|---:|---:|---:|");
    for size in [10usize, 1000] {
        let dir = base.join(format!("store-{size}"));
        let team = Store::new(Home::new(&dir)).team("grow").unwrap();
        team.create(NewTeam::default()).unwrap();
        for i in 0..size {
            team.add_member(NewMember {
                name: format!("m{i}"),
                ..Default::default()
            })
            .unwrap();
        }
        let time = |f: &mut dyn FnMut(usize)| {
            let mut v: Vec<Duration> = (0..50)
                .map(|i| {
                    let t = Instant::now();
                    f(i);
                    t.elapsed()
                })
                .collect();
            median(&mut v)
        };
        let add = time(&mut |i| {
            team.add_member(NewMember {
                name: format!("x{i}"),
                ..Default::default()
            })
            .unwrap();
        });
        let deliver = time(&mut |i| {
            team.send(
                &format!("x{i}"),
                OutgoingMessage::new("team-lead", "prompt"),
            )
            .unwrap();
        });
        let read = time(&mut |_| {
            team.config().unwrap();
        });
        let active = time(&mut |i| team.set_active(&format!("x{i}"), i % 2 == 0).unwrap());
        println!(
            "| {size} | {} | {} | {} | {} |",
            fmt(add),
            fmt(deliver),
            fmt(read),
            fmt(active)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

// --- idle: memory of many idle teammates in one host ----------------------

fn idle_crowd(base: &Path, count: usize) {
    let dir = base.join("idle");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let width: usize = std::env::var("TEAMHOST_SCALE_AT_ONCE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    // `Host::spawn_many` unless `TEAMHOST_SCALE_SPAWN=each` (`Host::spawn`
    // for each, `width` at a time).
    let one_by_one = std::env::var("TEAMHOST_SCALE_SPAWN").is_ok_and(|v| v == "each");
    let how = if one_by_one {
        format!("`Host::spawn`, {width} at a time")
    } else {
        "`Host::spawn_many`".to_string()
    };
    let (before, after, idle, spawned, started, took) = runtime().block_on(async {
        let host = Host::new(Home::new(dir.join("home"))).unwrap();
        host.create_team("idle", NewTeam::default()).unwrap();
        host.runtime()
            .prepare(
                Path::new(teamhost_tests::ECHO),
                teamhost::runtime::WasiHttpGrant::NotGranted,
            )
            .unwrap();
        // The lead reads its inbox as a lead does (each echo greets it), so
        // the inbox stays short. (The events already queued are answered by
        // one take: until 2026-12-01 it took once per event, most of them
        // finding nothing.)
        let lead_reads = {
            let (team, mut events) = (host.team("idle").unwrap(), host.events());
            tokio::spawn(async move {
                loop {
                    match events.recv().await {
                        Ok(teamhost::embed::Event::InboxChanged { agent, .. })
                            if agent == "team-lead" =>
                        {
                            // One take answers every change already
                            // queued, as a runner's wake-up stands for all
                            // the writes before its poll.
                            use tokio::sync::broadcast::error::TryRecvError;
                            while let Ok(_) | Err(TryRecvError::Lagged(_)) = events.try_recv() {}
                            let team = team.clone();
                            let _ =
                                tokio::task::spawn_blocking(move || team.take_unread("team-lead"))
                                    .await;
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        _ => {}
                    }
                }
            })
        };
        let before = rss_kib();
        let t = Instant::now();
        let spawned = if one_by_one {
            // 16 at a time, as `teamhost run` started a team before
            // `spawn_many`: registrations share config writes
            // (`TEAMHOST_SCALE_AT_ONCE` tries another width).
            let gate = Arc::new(tokio::sync::Semaphore::new(width));
            let mut spawning = tokio::task::JoinSet::new();
            for _ in 0..count {
                let (host, gate, work) = (host.clone(), gate.clone(), dir.join("work"));
                spawning.spawn(async move {
                    let _slot = gate.acquire_owned().await;
                    host.spawn("idle", echo_request(&work)).await
                });
            }
            let mut spawned = 0;
            while let Some(done) = spawning.join_next().await {
                match done.unwrap() {
                    Ok(_) => spawned += 1,
                    Err(e) => eprintln!("a spawn failed: {e}"),
                }
            }
            spawned
        } else {
            let requests = (0..count)
                .map(|_| echo_request(&dir.join("work")))
                .collect();
            let mut spawned = 0;
            for done in host.spawn_many("idle", requests).await.unwrap() {
                match done {
                    Ok(_) => spawned += 1,
                    Err(e) => eprintln!("a spawn failed: {e}"),
                }
            }
            spawned
        };
        // Spawned: registered, prompted, instantiated and running (the
        // issue's "spawn"); their first turns are under way.
        let started = t.elapsed();
        host.wait_idle("idle").await.unwrap();
        let took = t.elapsed();
        lead_reads.abort();
        let after = rss_kib();
        // Idle a while, as teammates do: the blocking pool's threads that
        // served the spawns exit after 10 s, and what stays is the cost of
        // the idle teammates.
        tokio::time::sleep(Duration::from_secs(15)).await;
        // SAFETY: malloc_trim has no preconditions.
        unsafe { libc::malloc_trim(0) };
        let idle = rss_kib();
        if std::env::var_os("SCALE_SMAPS").is_some() {
            teamhost_tests::measure::print_smaps();
        }
        if std::env::var_os("SCALE_MAPS").is_some() {
            let _ = std::fs::copy("/proc/self/maps", "/tmp/scale-maps.txt");
        }
        // Ends here, with every teammate still held: a heap profiler
        // (`heaptrack`) then reports what the idle teammates hold as not
        // freed, by where it was allocated.
        if std::env::var_os("SCALE_HEAP_EXIT").is_some() {
            std::process::exit(0);
        }
        host.delete_team("idle").await.unwrap();
        (before, after, idle, spawned, started, took)
    });
    println!();
    println!("## {count} idle `echo` teammates in one host process ({how})");
    println!();
    println!("| spawned | time to spawn | to spawn and settle | RSS added, settled | per teammate | after 15 s idle | per teammate |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let per = |kib: i64| (kib - before) as f64 / spawned.max(1) as f64;
    println!(
        "| {spawned} | {} | {} | {:.1} MiB | {:.1} KiB | {:.1} MiB | {:.1} KiB |",
        fmt(started),
        fmt(took),
        (after - before) as f64 / 1024.0,
        per(after),
        (idle - before) as f64 / 1024.0,
        per(idle)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// --- wake: send → turn start in another process ----------------------------

fn wake(base: &Path, rounds: usize) {
    println!();
    println!("## Cross-process wake-up: a message written here → the turn starts in a `teamhost teammate` process");
    println!();
    println!("| wake-up | median | p90 | samples |");
    println!("|---|---:|---:|---:|");
    // `TEAMHOST_WAKE_FLOOR=0` leaves the floor out: its writes free inodes
    // too, which changes what teamhost's next file creation costs, so an
    // A/B of two builds compares them without it.
    let mut floor = (std::env::var("TEAMHOST_WAKE_FLOOR").as_deref() != Ok("0"))
        .then(|| wake_floor::Floor::start(base));
    let (mut ours, mut sends, mut least) = wake_samples(base, &[], rounds, floor.as_mut());
    drop(floor);
    row_us("teamhost (change feed: inotify)", &mut ours);
    row_us("… of which the send (`Team::send` returning)", &mut sends);
    if !least.is_empty() {
        row_us(
            "the floor: new file, `fdatasync`, rename → inotify in another process, read and parsed (alternating with teamhost's samples)",
            &mut least,
        );
        println!(
            "| teamhost ÷ the floor, medians | {:.2}× | | |",
            median_us(&ours) as f64 / median_us(&least).max(1) as f64
        );
    }
    let (mut poll, _, _) = wake_samples(base, &["--no-watch"], rounds.min(30), None);
    row_us("the reference's 500 ms poll (`--no-watch`)", &mut poll);
}

/// Wake-up latencies (send → turn start) and, for each, how long the
/// send itself took, in µs; with a `floor`, one floor sample after each
/// of teamhost's, so both see the same state of the machine.
fn wake_samples(
    base: &Path,
    extra: &[&str],
    rounds: usize,
    mut floor: Option<&mut wake_floor::Floor>,
) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let tmp = tempfile::tempdir_in(base).unwrap();
    let home = tmp.path().join("home");
    let team = Store::new(Home::new(&home)).team("wake").unwrap();
    team.create(NewTeam::default()).unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let m = team
        .add_member(NewMember {
            name: "probe".into(),
            cwd: Some(work.display().to_string()),
            backend_type: Some("process".into()),
            ..Default::default()
        })
        .unwrap();
    team.deliver(&m.name, OutgoingMessage::new("team-lead", "listen"))
        .unwrap();
    let mut child = Command::new(TEAMHOST)
        .arg("--home")
        .arg(&home)
        .arg("--json")
        .args(["teammate", "--agent-id", &m.agent_id, "--no-auto-claim"])
        .args(["--permission-mode", "acceptEdits", "--component"])
        .arg(teamhost_tests::PROBE)
        .args(extra)
        .current_dir(&work)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                if tx.send(v).is_err() {
                    return;
                }
            }
        }
    });
    let next = |pred: &dyn Fn(&Value) -> bool| loop {
        let v = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the teammate reports within 60 s");
        if pred(&v) {
            return v;
        }
    };
    let idle = |v: &Value| v["event"] == "state" && v["state"] == "idle";
    next(&|v| v["event"] == "turn" && v["kind"] == "initial");
    next(&idle);
    let mut samples = Vec::with_capacity(rounds);
    let mut sends = Vec::with_capacity(rounds);
    let mut least = Vec::with_capacity(rounds);
    for i in 0..rounds {
        // At a random point of the poll cycle, as a real lead would send.
        std::thread::sleep(Duration::from_millis(fastrand::u64(1..500)));
        let sent = now_us();
        team.send("probe", OutgoingMessage::new("team-lead", format!("m{i}")))
            .unwrap();
        sends.push(now_us().saturating_sub(sent));
        let turn = next(&|v| v["event"] == "turn" && v["kind"] == "message");
        samples.push(turn["atUs"].as_u64().unwrap().saturating_sub(sent));
        next(&idle);
        if let Some(floor) = floor.as_deref_mut() {
            std::thread::sleep(Duration::from_millis(fastrand::u64(1..500)));
            least.push(floor.sample());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    (samples, sends, least)
}

/// The median of `samples`, in whatever order.
fn median_us(samples: &[u64]) -> u64 {
    let mut v = samples.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}

// --- writers: 8 processes → one inbox, teamhost vs the reference -----------

/// A writer process: `SCALE_ROLE=teamhost|reference`, `SCALE_HOME`,
/// `SCALE_INBOX`, `SCALE_ID`, `SCALE_COUNT`. Each message's text is
/// `{id}:{n}:{sent µs}`.
fn writer_role(role: &str) {
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"));
    match role {
        "teamhost" => writers::teamhost_writer(),
        "reference" => {
            let id = var("SCALE_ID");
            let count: usize = var("SCALE_COUNT").parse().unwrap();
            let inbox = PathBuf::from(var("SCALE_INBOX"));
            for n in 0..count {
                reference_append(&inbox, &format!("{id}:{n}:{}", now_us()));
            }
        }
        other => panic!("unknown SCALE_ROLE {other}"),
    }
}

/// The reference's append without a lock: read the array, push, write a
/// temp file and rename it over the inbox.
fn reference_append(inbox: &Path, text: &str) {
    let mut all: Vec<Value> = std::fs::read(inbox)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    all.push(serde_json::json!({
        "from": "team-lead", "text": text, "timestamp": "", "read": false
    }));
    let tmp = inbox.with_extension(format!("json.tmp.{:08x}", fastrand::u32(..)));
    std::fs::write(&tmp, serde_json::to_vec(&all).unwrap()).unwrap();
    std::fs::rename(&tmp, inbox).unwrap();
}

/// The reference's take without a lock: read the array, keep what was not
/// seen, write the rest back.
fn reference_take(inbox: &Path) -> Vec<String> {
    let all: Vec<Value> = std::fs::read(inbox)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if all.is_empty() {
        return Vec::new();
    }
    let tmp = inbox.with_extension("json.tmp.reader");
    std::fs::write(&tmp, b"[]").unwrap();
    std::fs::rename(&tmp, inbox).unwrap();
    all.iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect()
}

fn writers(base: &Path, per_writer: usize) {
    const WRITERS: usize = 8;
    let total = WRITERS * per_writer;
    println!();
    println!("## {WRITERS} writer processes × {per_writer} messages → one inbox, one consumer");
    println!();
    println!(
        "| algorithm | messages/s | received | lost | duplicated | delivery latency median | p90 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for role in ["teamhost", "reference"] {
        let tmp = tempfile::tempdir_in(base).unwrap();
        let home = tmp.path().join("home");
        let team = Store::new(Home::new(&home)).team("writers").unwrap();
        team.create(NewTeam::default()).unwrap();
        team.add_member(NewMember {
            name: "sink".into(),
            ..Default::default()
        })
        .unwrap();
        let inbox = team.file_paths().unwrap().inbox("sink").unwrap();
        let (tx, rx) = mpsc::channel();
        let _feed = (role == "teamhost").then(|| team.watch(Arc::new(Wakeup(tx))).unwrap());
        let start = Instant::now();
        let mut children: Vec<_> = (0..WRITERS)
            .map(|w| {
                Command::new(std::env::current_exe().unwrap())
                    .env("SCALE_ROLE", role)
                    .env("SCALE_HOME", &home)
                    .env("SCALE_INBOX", &inbox)
                    .env("SCALE_ID", w.to_string())
                    .env("SCALE_COUNT", per_writer.to_string())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut got: Vec<String> = Vec::with_capacity(total);
        let mut latency = Vec::with_capacity(total);
        let take = |got: &mut Vec<String>, latency: &mut Vec<u64>| {
            let texts: Vec<String> = if role == "teamhost" {
                team.take_unread("sink")
                    .unwrap()
                    .into_iter()
                    .map(|m: InboxMessage| m.text)
                    .collect()
            } else {
                reference_take(&inbox)
            };
            let now = now_us();
            for t in texts {
                if let Some(sent) = t.rsplit(':').next().and_then(|s| s.parse::<u64>().ok()) {
                    latency.push(now.saturating_sub(sent));
                }
                got.push(t);
            }
        };
        loop {
            let running = children.iter_mut().any(|c| c.try_wait().unwrap().is_none());
            if role == "teamhost" {
                // Woken by the change feed; the timeout only re-checks the
                // writers' exit.
                let _ = rx.recv_timeout(Duration::from_millis(100));
            } else {
                std::thread::sleep(Duration::from_millis(500));
            }
            take(&mut got, &mut latency);
            if !running {
                take(&mut got, &mut latency);
                break;
            }
        }
        let elapsed = start.elapsed();
        let mut unique = got.clone();
        unique.sort();
        unique.dedup();
        let duplicated = got.len() - unique.len();
        let lost = total - unique.len();
        latency.sort_unstable();
        let pick = |q: f64| {
            latency
                .get(((latency.len().max(1) - 1) as f64 * q) as usize)
                .copied()
                .unwrap_or(0)
        };
        println!(
            "| {} | {:.0} | {} | {lost} ({:.1} %) | {duplicated} | {:.2} ms | {:.2} ms |",
            if role == "teamhost" {
                "teamhost (locks, change feed)"
            } else {
                "reference (no lock, 500 ms poll)"
            },
            total as f64 / elapsed.as_secs_f64(),
            unique.len(),
            lost as f64 * 100.0 / total as f64,
            pick(0.5) as f64 / 1e3,
            pick(0.9) as f64 / 1e3,
        );
    }
}

// --- helpers ----------------------------------------------------------------

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn row_us(name: &str, samples: &mut [u64]) {
    samples.sort_unstable();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "| {name} | {:.2} ms | {:.2} ms | {} |",
        pick(0.5) as f64 / 1e3,
        pick(0.9) as f64 / 1e3,
        samples.len()
    );
}

fn fmt(d: Duration) -> String {
    teamhost_tests::measure::fmt(d)
}

fn rss_kib() -> i64 {
    teamhost_tests::measure::rss_kib() as i64
}

fn machine() -> String {
    teamhost_tests::measure::machine()
}
