//! Contention: eight writer processes × 250 messages into one inbox while
//! one consumer takes them, teamhost beside the peer crate `agent-teams`
//! 0.1.0, interleaved round by round in one run.
//!
//! Run with `cargo bench -p teamhost --bench contention` (a minute or two;
//! the first run also builds the peer, below). Prints a Markdown table: per
//! row, the messages consumed per second from the writers' start to the last
//! message taken, what was lost or duplicated, and the delivery latency
//! (sent → taken).
//!
//! Rows, each round in this order:
//! - **agent-teams 0.1.0**: `host/benches/peer` (a crate of its own, outside
//!   the workspace, built here on first use with `cargo build --release`
//!   into `$CARGO_TARGET_DIR/peer`; when it cannot be built the rows say why
//!   and the others still run). Its writers call `send_message`. Two rows,
//!   two consumers: one reads the whole inbox every 2 ms and marks nothing
//!   read, the cheapest way the crate offers that loses nothing; the other
//!   consumes as the crate's API means it, `read_unread` and then
//!   `mark_read` for each message.
//! - **teamhost, library writers**: processes calling `Team::send` in a
//!   loop, one message in flight each. The writer role is the one the
//!   `scale` bench's writers play (`SCALE_ROLE=teamhost`), so an old
//!   commit's `scale` bench binary is an old library writer:
//!   `TEAMHOST_CONTENTION_LIB=old=/path/to/scale-bench` adds a row for it.
//! - **teamhost, CLI writers**: `teamhost send --stdin` processes, fed one
//!   line at a time, the next only after the last one's acknowledgement
//!   (one message in flight each, as the library writers).
//!   `TEAMHOST_CONTENTION_CLI=old=/path/to/teamhost` adds a row for another
//!   binary. A second row pipes each writer's 250 lines at once (a burst).
//!
//! Arguments keep only the rows whose label holds one of them:
//! `cargo bench -p teamhost --bench contention -- agent-teams library`.
//!
//! The teamhost consumer is this process: woken by the change feed, it takes
//! the unread messages (a locked rewrite of the inbox and an append to the
//! history, every time). `TEAMHOST_CONTENTION_ROUNDS` (default 3) sets the
//! rounds; `TEAMHOST_CONTENTION_COUNT` the messages per writer.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use teamhost::home::Home;
use teamhost::store::{NewMember, NewTeam, Store};

#[path = "support/writers.rs"]
mod writers;
use writers::{now_us, Wakeup};

const TEAMHOST: &str = env!("CARGO_BIN_EXE_teamhost");
const WRITERS: usize = 8;

fn main() {
    if let Ok(role) = std::env::var("SCALE_ROLE") {
        assert_eq!(role, "teamhost", "unknown SCALE_ROLE {role}");
        writers::teamhost_writer();
        return;
    }
    let rounds = env_usize("TEAMHOST_CONTENTION_ROUNDS", 3);
    let per_writer = env_usize("TEAMHOST_CONTENTION_COUNT", 250);
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let own = std::env::current_exe().unwrap().display().to_string();
    let mut rows: Vec<Row> = Vec::new();
    for marking in [false, true] {
        let label = if marking {
            "agent-teams 0.1.0, consumer marks each message read"
        } else {
            "agent-teams 0.1.0, consumer only reads"
        };
        rows.push(Row::new(
            label,
            Writers::Peer {
                exe: String::new(),
                marking,
            },
        ));
    }
    for (label, exe) in labelled("TEAMHOST_CONTENTION_LIB", own) {
        rows.push(Row::new(
            &format!("teamhost {label}, library writers"),
            Writers::Library(exe),
        ));
    }
    for (label, exe) in labelled("TEAMHOST_CONTENTION_CLI", TEAMHOST.to_string()) {
        rows.push(Row::new(
            &format!("teamhost {label}, CLI writers, one line in flight"),
            Writers::Cli {
                exe: exe.clone(),
                burst: false,
            },
        ));
        rows.push(Row::new(
            &format!("teamhost {label}, CLI writers, 250 lines piped at once"),
            Writers::Cli { exe, burst: true },
        ));
    }
    // Arguments keep only the rows whose label holds one of them
    // (`-- peer library`).
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    rows.retain(|r| wanted.is_empty() || wanted.iter().any(|w| r.label.contains(w.as_str())));
    if rows
        .iter()
        .any(|r| matches!(r.writers, Writers::Peer { .. }))
    {
        match build_peer() {
            Ok(built) => rows.iter_mut().for_each(|r| {
                if let Writers::Peer { exe, .. } = &mut r.writers {
                    exe.clone_from(&built);
                }
            }),
            Err(why) => {
                println!("agent-teams 0.1.0: not measured ({why})");
                rows.retain(|r| !matches!(r.writers, Writers::Peer { .. }));
            }
        }
    }
    println!("machine: {}", teamhost_tests::measure::machine());
    println!();
    println!("## {WRITERS} writer processes × {per_writer} messages → one inbox, one consumer ({rounds} rounds, interleaved)");
    println!();
    let mut failed = false;
    for round in 0..rounds {
        for (i, row) in rows.iter_mut().enumerate() {
            let dir = base.path().join(format!("round{round}-row{i}"));
            let result = measure(&dir, &row.writers, per_writer);
            if result.lost > 0 || result.duplicated > 0 {
                failed |= !matches!(row.writers, Writers::Peer { .. });
            }
            let _ = std::fs::remove_dir_all(&dir);
            row.results.push(result);
        }
    }
    println!("| writers | messages/s, each round | received | lost | duplicated | delivery median (p90), last round |");
    println!("|---|---:|---:|---:|---:|---:|");
    for row in &rows {
        let rates: Vec<String> = row
            .results
            .iter()
            .map(|r| format!("{:.0}", r.rate))
            .collect();
        let last = row.results.last().expect("one round at least");
        println!(
            "| {} | {} | {} | {} | {} | {:.2} ms ({:.2}) |",
            row.label,
            rates.join(" / "),
            last.received,
            row.results.iter().map(|r| r.lost).sum::<usize>(),
            row.results.iter().map(|r| r.duplicated).sum::<usize>(),
            last.p50_us as f64 / 1e3,
            last.p90_us as f64 / 1e3,
        );
    }
    let peers: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.writers, Writers::Peer { .. }))
        .collect();
    if !peers.is_empty() {
        println!();
        println!("Medians of the rounds, against each peer row:");
        println!();
        for row in rows
            .iter()
            .filter(|r| !matches!(r.writers, Writers::Peer { .. }))
        {
            let ratios: Vec<String> = peers
                .iter()
                .map(|p| format!("{:.1}×", median_rate(row) / median_rate(p)))
                .collect();
            println!("- {}: {}", row.label, ratios.join(" / "));
        }
    }
    if failed {
        eprintln!("a teamhost row lost or duplicated messages");
        std::process::exit(1);
    }
}

/// How a row's writers write.
enum Writers {
    /// The peer crate's binary (`host/benches/peer`); its consumer marks
    /// each message read, or only reads.
    Peer { exe: String, marking: bool },
    /// A binary playing `SCALE_ROLE=teamhost`.
    Library(String),
    /// A `teamhost` binary's `send --stdin`.
    Cli { exe: String, burst: bool },
}

struct Row {
    label: String,
    writers: Writers,
    results: Vec<Outcome>,
}

impl Row {
    fn new(label: &str, writers: Writers) -> Row {
        Row {
            label: label.to_string(),
            writers,
            results: Vec::new(),
        }
    }
}

fn median_rate(row: &Row) -> f64 {
    let mut rates: Vec<f64> = row.results.iter().map(|r| r.rate).collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// One round of one row.
struct Outcome {
    rate: f64,
    received: usize,
    lost: usize,
    duplicated: usize,
    p50_us: u64,
    p90_us: u64,
}

fn measure(dir: &Path, writers: &Writers, per_writer: usize) -> Outcome {
    let total = WRITERS * per_writer;
    std::fs::create_dir_all(dir).unwrap();
    if let Writers::Peer { exe, marking } = writers {
        return measure_peer(dir, exe, *marking, per_writer);
    }
    let home = dir.join("home");
    let team = Store::new(Home::new(&home)).team("writers").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "sink".into(),
        ..Default::default()
    })
    .unwrap();
    let (tx, rx) = mpsc::channel();
    let _feed = team.watch(Arc::new(Wakeup(tx))).unwrap();
    let start = Instant::now();
    let mut children: Vec<Child> = Vec::new();
    let mut feeders = Vec::new();
    for w in 0..WRITERS {
        match writers {
            Writers::Library(exe) => children.push(
                Command::new(exe)
                    .env("SCALE_ROLE", "teamhost")
                    .env("SCALE_HOME", &home)
                    .env("SCALE_ID", w.to_string())
                    .env("SCALE_COUNT", per_writer.to_string())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
            ),
            Writers::Cli { exe, burst } => {
                let mut child = Command::new(exe)
                    .arg("--home")
                    .arg(&home)
                    .args(["send", "--team", "writers", "sink", "--stdin"])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap();
                let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
                let burst = *burst;
                feeders.push(std::thread::spawn(move || {
                    feed(stdin, stdout, w, per_writer, burst)
                }));
                children.push(child);
            }
            Writers::Peer { .. } => unreachable!("measured above"),
        }
    }
    let mut got: Vec<String> = Vec::with_capacity(total);
    let mut latency = Vec::with_capacity(total);
    let take = |got: &mut Vec<String>, latency: &mut Vec<u64>| {
        let taken = team.take_unread("sink").unwrap();
        let now = now_us();
        for m in taken {
            if let Some(sent) = sent_at(&m.text) {
                latency.push(now.saturating_sub(sent));
            }
            got.push(m.text);
        }
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let running = children.iter_mut().any(|c| c.try_wait().unwrap().is_none());
        // Woken by the change feed; the timeout only re-checks the writers.
        let _ = rx.recv_timeout(Duration::from_millis(100));
        take(&mut got, &mut latency);
        if !running || Instant::now() > deadline {
            take(&mut got, &mut latency);
            break;
        }
    }
    let elapsed = start.elapsed();
    for c in children.iter_mut() {
        let status = c.wait().unwrap();
        assert!(status.success(), "a teamhost writer failed: {status}");
    }
    for f in feeders {
        f.join().unwrap();
    }
    outcome(got, latency, total, elapsed)
}

/// Feeds a `send --stdin` process its lines: one at a time, each after the
/// last one's acknowledgement, or all at once (`burst`).
fn feed(
    mut stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    id: usize,
    count: usize,
    burst: bool,
) {
    let mut acks = BufReader::new(stdout).lines();
    if burst {
        let mut all = String::new();
        for n in 0..count {
            all.push_str(&format!("{id}:{n}:{}\n", now_us()));
        }
        stdin.write_all(all.as_bytes()).unwrap();
        drop(stdin);
        assert_eq!(acks.count(), count, "one acknowledgement a line");
        return;
    }
    for n in 0..count {
        writeln!(stdin, "{id}:{n}:{}", now_us()).unwrap();
        stdin.flush().unwrap();
        acks.next().expect("an acknowledgement").unwrap();
    }
}

fn measure_peer(dir: &Path, exe: &str, marking: bool, per_writer: usize) -> Outcome {
    let total = WRITERS * per_writer;
    let base = dir.join("teams");
    std::fs::create_dir_all(base.join("writers/inboxes")).unwrap();
    let start = Instant::now();
    let consumer = Command::new(exe)
        .arg(if marking {
            "consume-marking"
        } else {
            "consume"
        })
        .arg(&base)
        .arg(total.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut writers: Vec<Child> = (0..WRITERS)
        .map(|w| {
            Command::new(exe)
                .arg("write")
                .arg(&base)
                .arg(w.to_string())
                .arg(per_writer.to_string())
                .spawn()
                .unwrap()
        })
        .collect();
    for w in writers.iter_mut() {
        assert!(w.wait().unwrap().success(), "a peer writer failed");
    }
    let out = consumer.wait_with_output().unwrap();
    let elapsed = start.elapsed();
    assert!(out.status.success(), "the peer's consumer failed");
    let line = String::from_utf8_lossy(&out.stdout);
    let f: Vec<u64> = line
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    Outcome {
        rate: total as f64 / elapsed.as_secs_f64(),
        received: f[0] as usize,
        lost: f[1] as usize,
        duplicated: f[2] as usize,
        p50_us: f[3],
        p90_us: f[4],
    }
}

fn outcome(got: Vec<String>, mut latency: Vec<u64>, total: usize, elapsed: Duration) -> Outcome {
    let mut unique = got.clone();
    unique.sort();
    unique.dedup();
    latency.sort_unstable();
    let pick = |q: f64| {
        latency
            .get(((latency.len().max(1) - 1) as f64 * q) as usize)
            .copied()
            .unwrap_or(0)
    };
    Outcome {
        rate: total as f64 / elapsed.as_secs_f64(),
        received: unique.len(),
        lost: total - unique.len(),
        duplicated: got.len() - unique.len(),
        p50_us: pick(0.5),
        p90_us: pick(0.9),
    }
}

/// Builds the peer's binary (`host/benches/peer`), or says why not.
fn build_peer() -> Result<String, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peer/Cargo.toml");
    let target = PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| {
        Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("..")
            .display()
            .to_string()
    }))
    .join("peer");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!(
        "contention: building the peer crate (agent-teams 0.1.0) into {}",
        target.display()
    );
    let out = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "--locked",
            "--manifest-path",
        ])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cargo could not run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("").to_string();
        return Err(format!("its build failed: {last}"));
    }
    Ok(target.join("release/peer-contention").display().to_string())
}

/// This build's binary as `new`, then `label=path` pairs from `var`.
fn labelled(var: &str, own: String) -> Vec<(String, String)> {
    let mut all = vec![("new".to_string(), own)];
    if let Ok(list) = std::env::var(var) {
        for pair in list.split(',').filter(|p| !p.is_empty()) {
            let (label, path) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("{var}: expected label=path, got {pair:?}"));
            all.push((label.to_string(), path.to_string()));
        }
    }
    all
}

fn sent_at(text: &str) -> Option<u64> {
    text.rsplit(':').next().and_then(|s| s.parse().ok())
}

fn env_usize(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
