//! The NATS store against the file store, in one run: send, take and claim
//! latency through [`Team`], and cross-process wake-up latency two ways —
//! the store's change feed in another process (send → the other process's
//! observer called), and a real `teamhost teammate` process (send → its
//! turn starts).
//!
//! The same operations and the feed's wake-up run on a three-node JetStream
//! cluster too (`teamhost_tests::nats_cluster`, all on this machine): once
//! with the team's streams replicated on all three (R3, read through each
//! stream's leader: store/nats/reads.rs) and once with `?replicas=1`, so the
//! cost of replication and of leader reads shows beside one server's.
//!
//! Run with `cargo bench -p teamhost --bench nats` (about two minutes). Needs
//! a `nats-server` (see `teamhost_tests::nats_server`); `$NATS_SERVER` picks
//! one, `$NATS_SERVER_CLUSTER` the cluster's (2.9.21 or newer for R3; an
//! older one gets R1 rows only). Prints the machine, then Markdown tables.
//! Times are wall-clock microseconds on this machine, stamped by each
//! process as the event happens.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use teamhost::home::Home;
use teamhost::store::{
    NatsStore, NatsUrl, NewMember, NewTask, NewTeam, OutgoingMessage, Store, StoreEvent,
    StoreObserver, Team,
};
use teamhost_tests::nats_cluster::NatsCluster;
use teamhost_tests::nats_server::NatsServer;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// `files:HOME` or a `nats://` URL.
fn open(spec: &str) -> Store {
    match spec.strip_prefix("files:") {
        Some(home) => Store::new(Home::new(home)),
        None => Store::with_backend(Arc::new(
            NatsStore::connect(&NatsUrl::parse(spec).unwrap()).unwrap(),
        )),
    }
}

fn row(name: &str, store: &str, samples: &mut [u64]) {
    samples.sort_unstable();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let ms = |us: u64| format!("{:.2} ms", us as f64 / 1000.0);
    println!(
        "| {name} | {store} | {} | {} | {} |",
        ms(pick(0.5)),
        ms(pick(0.9)),
        samples.len()
    );
}

fn timed(f: impl FnOnce()) -> u64 {
    let t = Instant::now();
    f();
    t.elapsed().as_micros() as u64
}

fn fresh(spec: &str, name: &str) -> Team {
    let team = open(spec).team(name).unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "sink".into(),
        ..Default::default()
    })
    .unwrap();
    team
}

fn operations(spec: &str, label: &str) {
    let team = fresh(spec, "ops");
    let mut send = Vec::new();
    for i in 0..300 {
        send.push(timed(|| {
            team.send("sink", OutgoingMessage::new("team-lead", format!("m{i}")))
                .map(drop)
                .unwrap()
        }));
        if i % 20 == 19 {
            team.take_unread("sink").unwrap();
        }
    }
    row("send", label, &mut send);
    let mut take = Vec::new();
    for i in 0..300 {
        team.send("sink", OutgoingMessage::new("team-lead", format!("t{i}")))
            .unwrap();
        take.push(timed(|| {
            assert_eq!(team.take_unread("sink").unwrap().len(), 1)
        }));
    }
    row("take (1 unread)", label, &mut take);
    let mut claim = Vec::new();
    for i in 0..100 {
        let t = team
            .create_task(NewTask {
                subject: format!("task {i}"),
                ..Default::default()
            })
            .unwrap();
        claim.push(timed(|| {
            team.claim_task(&t.id, "sink", false).unwrap();
        }));
    }
    row("claim (list of 1–100 tasks)", label, &mut claim);
}

/// The child side of the feed benchmark: prints `ready`, then the time of
/// every inbox event it hears.
fn feed_child(spec: &str) {
    struct Print(Mutex<std::io::Stdout>);
    impl StoreObserver for Print {
        fn changed(&self, e: &StoreEvent) {
            if matches!(e, StoreEvent::InboxAppended { agent, .. } if agent == "sink") {
                let mut out = self.0.lock().unwrap();
                let _ = writeln!(out, "{}", now_us());
                let _ = out.flush();
            }
        }
    }
    let team = open(spec).team("feed").unwrap();
    let _feed = team
        .watch(Arc::new(Print(Mutex::new(std::io::stdout()))))
        .unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line); // until the parent closes it
}

fn feed_wake(spec: &str, label: &str) {
    let team = fresh(spec, "feed");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("NATS_BENCH_FEED", spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "ready");
    let mut samples = Vec::new();
    for i in 0..200 {
        std::thread::sleep(Duration::from_millis(fastrand::u64(2..20)));
        // Drain what a take or an earlier write reported.
        while rx.try_recv().is_ok() {}
        let sent = now_us();
        team.send("sink", OutgoingMessage::new("team-lead", format!("w{i}")))
            .unwrap();
        let heard: u64 = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the other process hears the send")
            .parse()
            .unwrap();
        samples.push(heard.saturating_sub(sent));
    }
    drop(child.stdin.take());
    let _ = child.wait();
    row("wake: feed in another process", label, &mut samples);
}

fn turn_wake(spec: &str, label: &str, base: &Path) {
    let team = fresh(spec, "turns");
    let tmp = tempfile::tempdir_in(base).unwrap();
    let home = tmp.path().join("home");
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let m = team
        .add_member(NewMember {
            name: "probe".into(),
            cwd: Some(dir.display().to_string()),
            backend_type: Some("process".into()),
            ..Default::default()
        })
        .unwrap();
    team.deliver(&m.name, OutgoingMessage::new("team-lead", "listen"))
        .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_teamhost"));
    match spec.strip_prefix("files:") {
        Some(h) => cmd.args(["--home", h]),
        None => cmd.arg("--home").arg(&home).args(["--store", spec]),
    };
    let mut child: Child = cmd
        .args([
            "--json",
            "teammate",
            "--agent-id",
            &m.agent_id,
            "--no-auto-claim",
        ])
        .args(["--permission-mode", "acceptEdits", "--component"])
        .arg(teamhost_tests::PROBE)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(tmp.path().join("teammate.log")).unwrap())
        .spawn()
        .unwrap();
    let log = tmp.path().join("teammate.log");
    let (tx, rx) = mpsc::channel::<Value>();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&l) {
                let _ = tx.send(v);
            }
        }
    });
    let next = |pred: &dyn Fn(&Value) -> bool| loop {
        let v = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!(
                    "the teammate did not report; its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        if pred(&v) {
            return v;
        }
    };
    let idle = || next(&|v| v["event"] == "state" && v["state"] == "idle");
    next(&|v| v["event"] == "turn" && v["kind"] == "initial");
    idle();
    let mut samples = Vec::new();
    for i in 0..60 {
        std::thread::sleep(Duration::from_millis(fastrand::u64(5..50)));
        let sent = now_us();
        team.send("probe", OutgoingMessage::new("team-lead", format!("m{i}")))
            .unwrap();
        let turn = next(&|v| v["event"] == "turn" && v["kind"] == "message");
        samples.push(turn["atUs"].as_u64().unwrap().saturating_sub(sent));
        idle();
    }
    let _ = child.kill();
    let _ = child.wait();
    row("wake: teammate process's turn starts", label, &mut samples);
}

fn main() {
    if let Ok(spec) = std::env::var("NATS_BENCH_FEED") {
        return feed_child(&spec);
    }
    let Some(server) = NatsServer::start_or_skip("nats bench") else {
        return;
    };
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let files = tempfile::tempdir_in(base).unwrap();
    let cluster = NatsCluster::start_or_skip("nats bench cluster", 3);
    machine(&server, cluster.as_ref());
    let stores = [
        (format!("files:{}", files.path().display()), "files"),
        (server.url("bench"), "nats"),
    ];
    let mut clustered = Vec::new();
    if let Some(c) = &cluster {
        if c.version() >= (2, 9, 21) {
            clustered.push((c.url("benchr3"), "nats, 3-node cluster, R3"));
        }
        clustered.push((
            format!("{}?replicas=1", c.url("benchr1")),
            "nats, 3-node cluster, R1",
        ));
    }
    let some: Vec<(String, &str)> = stores.iter().cloned().chain(clustered).collect();
    println!("| operation | store | median | p90 | samples |");
    println!("|---|---|---:|---:|---:|");
    for (spec, label) in &some {
        operations(spec, label);
    }
    for (spec, label) in &some {
        feed_wake(spec, label);
    }
    for (spec, label) in &stores {
        turn_wake(spec, label, base);
    }
}

/// The machine and the servers, for the table's reader.
fn machine(server: &NatsServer, cluster: Option<&NatsCluster>) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?");
    println!(
        "Machine: {cpu}, {cores} cores, load {load}; one server on port {}; cluster: {}",
        server.port(),
        match cluster {
            Some(c) => format!("3 nodes, nats-server {:?}", c.version()),
            None => "none".into(),
        }
    );
}
