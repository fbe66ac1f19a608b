//! Host failover (issue 32): how long from a host's death (SIGKILL) to its
//! teammate running again on the adopting host. Real processes: a
//! `nats-server`, host A (`teamhost run --join --lease L`) running one
//! `probe` that holds its task in a Bash call, host B (`teamhost run
//! --adopt --lease L`) standing by. Per repetition A is killed with its
//! task in progress and two spans are measured from the kill:
//!
//! - death → takeover: the `at` B stamps in A's lease as it takes it over;
//! - death → the teammate's first turn on B: the line the probe appends to
//!   `turns.log` at the start of its turn (watched every 2 ms).
//!
//! Both processes run on this machine, so their wall clocks are one clock.
//! The target is the lease plus under 1 s: B takes over once it has seen
//! one revision of A's lease unchanged for a whole lease (counted from the
//! last renewal it saw, which A sent up to a third of a lease before it
//! died), looking every 250 ms.
//!
//! Run with `cargo bench -p teamhost --bench failover` (about 90 s after
//! the build; `-- 3` for three repetitions per lease instead of five).
//! Needs a `nats-server` (see `teamhost_tests::nats_server`). Prints a
//! Markdown table.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use teamhost::store::{LeaseState, NatsStore, NatsUrl, NewTask, NewTeam, Store};
use teamhost_tests::nats_server::NatsServer;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn start(home: &Path, args: &[&str], log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("TEAMHOST_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("the teamhost binary runs")
}

/// Waits (at most 120 s) until `done`, looking every `every`.
fn wait(what: &str, every: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(every);
    }
}

/// One repetition: the two spans in milliseconds.
fn once(server: &NatsServer, root: &Path, lease: u64, rep: usize) -> (u64, u64) {
    let prefix = format!("fb{lease}x{rep}");
    let url = server.url(&prefix);
    let team_name = "bench";
    let work = root.join(format!("work-{prefix}"));
    std::fs::create_dir_all(&work).unwrap();
    let manifest = |prompt: &str| {
        format!(
            "[team]\nname = {team_name:?}\nstore = {url:?}\n[[teammate]]\nname = \"p\"\ncomponent = {:?}\nprompt = {prompt:?}\ncwd = {:?}\nmode = \"acceptEdits\"\nallowed_tools = [\"Bash\"]\n",
            teamhost_tests::PROBE,
            work
        )
    };
    let (a_toml, b_toml) = (
        root.join(format!("{prefix}-a.toml")),
        root.join(format!("{prefix}-b.toml")),
    );
    std::fs::write(&a_toml, manifest("complete-tasks bash-on-task")).unwrap();
    std::fs::write(&b_toml, manifest("standby")).unwrap();
    let store = Store::with_backend(Arc::new(
        NatsStore::connect(&NatsUrl::parse(&url).unwrap()).unwrap(),
    ));
    let team = store.team(team_name).unwrap();
    team.create(NewTeam::default()).unwrap();
    team.create_task(NewTask {
        subject: "Hold".into(),
        ..Default::default()
    })
    .unwrap();
    let lease_s = lease.to_string();
    let common = [
        "--json",
        "run",
        "--lease",
        lease_s.as_str(),
        "--timeout",
        "300",
    ];
    let b_log = root.join(format!("{prefix}-b.log"));
    let mut b = start(
        &root.join("home-b"),
        &[&common[..], &["--adopt", b_toml.to_str().unwrap()]].concat(),
        &b_log,
    );
    wait("B standing by", Duration::from_millis(20), || {
        std::fs::read_to_string(&b_log)
            .unwrap_or_default()
            .contains("standing by")
    });
    let mut a = start(
        &root.join("home-a"),
        &[&common[..], &["--join", a_toml.to_str().unwrap()]].concat(),
        &root.join(format!("{prefix}-a.log")),
    );
    wait(
        "A's teammate holding its task",
        Duration::from_millis(20),
        || work.join("holding-1").exists(),
    );
    let turns = || {
        std::fs::read_to_string(work.join("turns.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let before = turns();
    let died = now_ms();
    a.kill().unwrap();
    a.wait().unwrap();
    wait(
        "the adopted teammate's first turn",
        Duration::from_millis(2),
        || turns() > before,
    );
    let first_turn = now_ms() - died;
    let f = store.backend().failover().unwrap();
    let taken_at = f
        .read_leases(team_name)
        .unwrap()
        .into_iter()
        .find_map(|(l, _)| match l.state {
            LeaseState::TakenOver { at, .. } => Some(at),
            _ => None,
        })
        .expect("A's lease was taken over");
    std::fs::write(work.join("release"), "").unwrap();
    let _ = b.kill();
    let _ = b.wait();
    (taken_at.saturating_sub(died), first_turn)
}

fn stats(v: &mut [u64]) -> (u64, u64) {
    v.sort_unstable();
    (v[v.len() / 2], *v.last().unwrap())
}

fn main() {
    let reps: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let Some(server) = NatsServer::start_or_skip("failover bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().to_path_buf();
    println!("| lease | runs | death → takeover p50 | max | death → teammate's first turn p50 | max | first turn − lease, max |");
    println!("|---|---|---|---|---|---|---|");
    for lease in [1u64, 2, 5] {
        let (mut taken, mut turned) = (Vec::new(), Vec::new());
        for rep in 0..reps {
            let (t, f) = once(&server, &root, lease, rep);
            eprintln!("lease {lease}s run {rep}: takeover {t} ms, first turn {f} ms");
            taken.push(t);
            turned.push(f);
        }
        let (t50, tmax) = stats(&mut taken);
        let (f50, fmax) = stats(&mut turned);
        println!(
            "| {lease} s | {reps} | {t50} ms | {tmax} ms | {f50} ms | {fmax} ms | {} ms |",
            fmax as i64 - (lease * 1000) as i64
        );
    }
}
