//! Store benchmark: inbox append and take at several inbox sizes, what the
//! lead's signing adds to an append, and eight `teamhost` processes
//! appending to one inbox at once.
//!
//! Run with `cargo bench -p teamhost --bench store`. Prints a Markdown table;
//! the README quotes it with the machine it ran on. Every figure is measured
//! on real files under a temporary directory on the same disk as the target
//! directory (not tmpfs), with the real lock and atomic write.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use teamhost::home::Home;
use teamhost::store::{InboxMessage, NewMember, NewTeam, OutgoingMessage, Store, Team};

fn main() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    println!("| operation | inbox size | median | p90 | samples |");
    println!("|---|---:|---:|---:|---:|");
    for size in [10usize, 1_000, 10_000] {
        let (_dir, team) = fresh_team(base);
        fill(&team, size);
        let samples = if size >= 10_000 { 30 } else { 200 };
        let mut times = Vec::with_capacity(samples);
        for i in 0..samples {
            let t = Instant::now();
            team.send(
                "sink",
                OutgoingMessage::new("team-lead", format!("bench message {i}")),
            )
            .unwrap();
            times.push(t.elapsed());
        }
        row("append (lock + read + rename)", size, &mut times);
    }
    for size in [10usize, 1_000, 10_000] {
        let (_dir, team) = fresh_team(base);
        let rounds = if size >= 10_000 { 10 } else { 50 };
        let mut times = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            fill(&team, size);
            let t = Instant::now();
            let taken = team.take_unread("sink").unwrap();
            times.push(t.elapsed());
            assert_eq!(taken.len(), size);
        }
        row("take all unread (+ history append)", size, &mut times);
    }
    lead_signing(base);
    contention(base);
}

/// A lead's append to a 10-entry inbox four ways, interleaved sample by
/// sample so that the disk's drift falls on all alike: through a store
/// without a lead guard; through the host's guard (the home's keyring) in
/// a team without a key (failed lookups of key files); for an inbox with a
/// launch key (an Ed25519 signature); and for an in-process teammate in a
/// team with a key (a signature for the recipient, and the ledger). Then
/// reads of a screened inbox beside unscreened ones.
fn lead_signing(base: &Path) {
    use std::sync::Arc;
    use teamhost::home::lead_keys::HomeKeyring;
    use teamhost::protocol::lead_sig::LeadSigningKey;
    use teamhost::store::LeadGuard;
    let guarded = |dir: &Path| {
        let ring = Arc::new(HomeKeyring::new(Home::new(dir)));
        Store::new(Home::new(dir)).with_lead_guard(Arc::new(LeadGuard::from_keyring(ring)))
    };
    let (plain_dir, plain) = fresh_team(base);
    let (miss_dir, _) = fresh_team(base);
    let miss = guarded(miss_dir.path()).team("bench").unwrap();
    let (keyed_dir, _) = fresh_team(base);
    let keyed_store = guarded(keyed_dir.path());
    let key = Arc::new(LeadSigningKey::generate(0).unwrap());
    keyed_store
        .lead_guard()
        .unwrap()
        .sign_for("bench", "sink", key)
        .unwrap();
    let keyed = keyed_store.team("bench").unwrap();
    // A team made by a host's guard has a team key; the host screens its
    // in-process teammate's inbox with it (and its ledger).
    let team_dir = tempfile::tempdir_in(base).unwrap();
    let team_store = guarded(team_dir.path());
    let team_keyed = team_store.team("bench").unwrap();
    team_keyed.create(NewTeam::default()).unwrap();
    team_keyed
        .add_member(NewMember {
            name: "sink".into(),
            ..Default::default()
        })
        .unwrap();
    let published = team_keyed.config().unwrap().team_lead_key().unwrap();
    team_store.lead_guard().unwrap().screen_member(
        "bench",
        "sink",
        "team-lead",
        published,
        Vec::new(),
    );
    let mut times = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for i in 0..200 {
        for (which, team) in [&plain, &miss, &keyed, &team_keyed].into_iter().enumerate() {
            if i % 50 == 0 {
                team.take_unread("sink").unwrap();
                fill(team, 10);
            }
            let t = Instant::now();
            team.send(
                "sink",
                OutgoingMessage::new("team-lead", format!("bench message {i}")),
            )
            .unwrap();
            times[which].push(t.elapsed());
        }
    }
    let [a, b, c, d] = &mut times;
    row("append as the lead, no lead guard", 10, a);
    row("append as the lead, guard, team without a key", 10, b);
    row("append as the lead, guard, signed (launch key)", 10, c);
    row("append as the lead, team key, screened (in-process)", 10, d);
    // Reading an inbox of 10 entries, 5 of them the lead's, unscreened and
    // screened (every lead entry checked; a signature once).
    let mut reads = [Vec::new(), Vec::new()];
    for team in [&plain, &team_keyed] {
        team.take_unread("sink").unwrap();
        fill(team, 5);
        for i in 0..5 {
            team.send(
                "sink",
                OutgoingMessage::new("team-lead", format!("lead {i}")),
            )
            .unwrap();
        }
    }
    for _ in 0..200 {
        for (which, team) in [&plain, &team_keyed].into_iter().enumerate() {
            let t = Instant::now();
            assert_eq!(team.unread("sink").unwrap().len(), 10);
            reads[which].push(t.elapsed());
        }
    }
    let [r1, r2] = &mut reads;
    row("read unread, no lead guard", 10, r1);
    row("read unread, screened with the team key", 10, r2);
    drop((plain_dir, miss_dir, keyed_dir, team_dir));
}

fn fresh_team(base: &Path) -> (tempfile::TempDir, Team) {
    let dir = tempfile::tempdir_in(base).unwrap();
    let store = Store::new(Home::new(dir.path()));
    let team = store.team("bench").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "sink".into(),
        ..Default::default()
    })
    .unwrap();
    (dir, team)
}

/// Puts `n` typical messages in the inbox with one write.
fn fill(team: &Team, n: usize) {
    let entries: Vec<InboxMessage> = (0..n)
        .map(|i| {
            OutgoingMessage::new(
                "worker",
                format!("a typical message body of a few words, number {i}"),
            )
            .summary("progress")
            .color(Some("blue".into()))
            .into_entry()
        })
        .collect();
    team.append_entries("sink", &entries).unwrap();
}

fn row(op: &str, size: usize, times: &mut [Duration]) {
    times.sort();
    let median = times[times.len() / 2];
    let p90 = times[times.len() * 9 / 10];
    println!(
        "| {op} | {size} | {:.2} ms | {:.2} ms | {} |",
        ms(median),
        ms(p90),
        times.len()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Eight processes each send 250 messages to one inbox while one consumer
/// process takes them (so the inbox stays small, as with a live teammate).
fn contention(base: &Path) {
    let dir = tempfile::tempdir_in(base).unwrap();
    let home = dir.path();
    let (writers, per_writer) = (8, 250);
    let store = Store::new(Home::new(home));
    let team = store.team("bench").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "sink".into(),
        ..Default::default()
    })
    .unwrap();
    let start = Instant::now();
    let children: Vec<_> = (0..writers)
        .map(|w| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_teamhost"))
                .arg("--home")
                .arg(home)
                .args(["send", "--team", "bench", "sink", "--stdin"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let feeder = std::thread::spawn(move || {
                for i in 0..per_writer {
                    writeln!(stdin, "w{w} message {i}").unwrap();
                }
            });
            (child, feeder)
        })
        .collect();
    let mut taken = 0;
    let mut alive = children;
    while !alive.is_empty() {
        taken += team.take_unread("sink").unwrap().len();
        alive.retain_mut(|(c, _)| c.try_wait().unwrap().is_none());
    }
    taken += team.take_unread("sink").unwrap().len();
    let elapsed = start.elapsed();
    let total = writers * per_writer;
    assert_eq!(taken, total, "every message arrives exactly once");
    println!();
    println!(
        "8-process contention: {total} messages from {writers} processes to one inbox (consumer taking meanwhile) in {:.2} s = {:.0} messages/s, {:.2} ms per message; none lost",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        ms(elapsed) / total as f64
    );
}
