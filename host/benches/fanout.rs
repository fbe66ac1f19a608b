//! A lead's fan-out: one broadcast to a team of 100 teammates (100 inboxes,
//! one entry each), as `Team::broadcast` does it for the CLI, the lead's
//! tools and the guests' `broadcast`.
//!
//! Run with `cargo bench -p teamhost --bench fanout` (under a minute).
//! `TEAMHOST_FANOUT_MEMBERS` sets the team's size (default 100),
//! `TEAMHOST_FANOUT_ROUNDS` the samples (default 30), `TEAMHOST_FANOUT_DIR`
//! where the team lives (default the target directory; `/dev/shm` shows the
//! code's own cost without the disk's). Between samples each
//! inbox is checked (one entry) and removed, untimed, so each broadcast meets
//! empty inboxes, as a team whose teammates read their mail does. Prints a Markdown table:
//! the broadcast's median and p90, and per message.

use std::time::{Duration, Instant};

use teamhost::home::Home;
use teamhost::store::{NewMember, NewTeam, OutgoingMessage, Store};

fn main() {
    let members = env_usize("TEAMHOST_FANOUT_MEMBERS", 100);
    let rounds = env_usize("TEAMHOST_FANOUT_ROUNDS", 30);
    let parent = std::env::var("TEAMHOST_FANOUT_DIR")
        .unwrap_or_else(|_| env!("CARGO_TARGET_TMPDIR").to_string());
    let dir = tempfile::tempdir_in(parent).unwrap();
    let team = Store::new(Home::new(dir.path().join("home")))
        .team("fan")
        .unwrap();
    team.create(NewTeam::default()).unwrap();
    let names: Vec<String> = (0..members)
        .map(|i| {
            team.add_member(NewMember {
                name: format!("mate-{i}"),
                ..Default::default()
            })
            .unwrap()
            .name
        })
        .collect();
    let paths = team.file_paths().unwrap();
    let mut samples: Vec<Duration> = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let t = Instant::now();
        let to = team
            .broadcast(OutgoingMessage::new("team-lead", format!("round {round}")))
            .unwrap();
        samples.push(t.elapsed());
        assert_eq!(to.len(), members, "every teammate is a recipient");
        // Checked, then emptied by removing the file: what the next sample
        // meets is a short inbox, and nothing else of the team changes.
        for name in &names {
            assert_eq!(team.read_inbox(name).unwrap().len(), 1, "one entry each");
            std::fs::remove_file(paths.inbox(name).unwrap()).unwrap();
        }
    }
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!("machine: {}", teamhost_tests::measure::machine());
    println!();
    println!("## A broadcast to {members} teammates ({rounds} samples)");
    println!();
    println!("| operation | median | p90 | per message (median) |");
    println!("|---|---:|---:|---:|");
    println!(
        "| `Team::broadcast`, {members} inboxes | {} | {} | {} |",
        fmt(pick(0.5)),
        fmt(pick(0.9)),
        fmt(pick(0.5) / members as u32)
    );
}

fn fmt(d: Duration) -> String {
    teamhost_tests::measure::fmt(d)
}

fn env_usize(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
