//! Live view benchmark: how long the view takes to catch up with a team of
//! 100 teammates, 200 tasks, 2,000 messages to the lead and 5 requests
//! waiting for it.
//!
//! - **read**: reading the whole board from the files (`Board::read`);
//! - **draw**: drawing it into a 200×60 screen (ratatui's test backend);
//! - **write → board**: a task update by someone else, until the view has
//!   been told (inotify) and has read the board again: what a person waits
//!   for between a change and the redraw;
//! - **a long history**: the same team after 50,000 messages to the lead,
//!   read whole (`teamhost status`, the view's first look) and again after
//!   one new message through the view's `HistoryCache`.
//!
//! Run with `cargo bench -p teamhost --bench view`. Prints a Markdown table;
//! the README quotes it with the machine it ran on.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use teamhost::home::Home;
use teamhost::protocol::{IdleNotification, IdleReason, PermissionRequest, WireMessage};
use teamhost::store::{
    HistoryCache, NewMember, NewTask, NewTeam, OutgoingMessage, Store, TaskStatus, TaskUpdate, Team,
};
use teamhost::view::{draw, Board, Changes, Input, Moment, Seat, Ui};

const TEAMMATES: usize = 100;
const TASKS: usize = 200;
const MESSAGES: usize = 2_000;
const PENDING: usize = 5;

fn main() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).unwrap();
    let team = build_team(dir.path());
    println!(
        "{TEAMMATES} teammates, {TASKS} tasks, {MESSAGES} messages to the lead, {PENDING} pending requests\n"
    );
    println!("| step | median | p90 | samples |");
    println!("|---|---:|---:|---:|");

    let mut times = Vec::new();
    let mut board = None;
    for _ in 0..50 {
        let t = Instant::now();
        board = Some(Board::read(&team, &[]).unwrap());
        times.push(t.elapsed());
    }
    let board = board.unwrap();
    assert_eq!(board.teammates.len(), TEAMMATES);
    assert_eq!(board.pending.len(), PENDING);
    row("read the board", &mut times);

    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let ui = Ui::default();
    let moment = Moment {
        now: std::time::SystemTime::now(),
        tick: 0,
    };
    let mut times = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        terminal
            .draw(|f| draw(f, &board, &ui, "bench", &moment, None))
            .unwrap();
        times.push(t.elapsed());
    }
    row("draw it (200×60)", &mut times);

    let (tx, rx) = mpsc::channel();
    let _watch = Changes::start(&team, tx).unwrap();
    let seat = Seat::watching(team.clone());
    let mut times = Vec::new();
    for i in 0..50 {
        let t = Instant::now();
        team.update_task(
            &((i % TASKS) + 1).to_string(),
            TaskUpdate {
                status: Some(if i % 2 == 0 {
                    TaskStatus::InProgress
                } else {
                    TaskStatus::Pending
                }),
                ..Default::default()
            },
            "team-lead",
        )
        .unwrap();
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Input::Changed) => {}
            other => panic!("no change seen: {other:?}"),
        }
        while rx.try_recv().is_ok() {}
        seat.board().unwrap();
        times.push(t.elapsed());
        // Let the rest of this write's events arrive before the next one.
        while rx.recv_timeout(Duration::from_millis(20)).is_ok() {}
    }
    row("someone's write → view told → board read", &mut times);

    grow_history(&team, LONG_HISTORY);
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        Board::read(&team, &[]).unwrap();
        times.push(t.elapsed());
    }
    row("read the board, 50,000 messages, whole", &mut times);
    let mut cache = HistoryCache::new();
    Board::read_cached(&team, None, &[], &mut cache).unwrap();
    let mut times = Vec::new();
    for i in 0..50 {
        team.send(
            "team-lead",
            OutgoingMessage::new("mate-001", format!("more {i}")),
        )
        .unwrap();
        team.take_unread("team-lead").unwrap();
        let t = Instant::now();
        let board = Board::read_cached(&team, None, &[], &mut cache).unwrap();
        times.push(t.elapsed());
        assert_eq!(board.feed[0].text, format!("more {i}"));
    }
    row("read it again after one new message (cached)", &mut times);
}

/// Messages in the lead's history for the long-history rows.
const LONG_HISTORY: usize = 50_000;

/// Appends idle notifications to the lead's history until it holds `n`
/// entries, written as the store writes them (JSON lines).
fn grow_history(team: &Team, n: usize) {
    use std::io::Write;
    let path = team.file_paths().unwrap().history("team-lead").unwrap();
    let have = team.history("team-lead").unwrap().len();
    let mut out = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .unwrap(),
    );
    for i in have..n {
        let idle =
            IdleNotification::new(format!("mate-{:03}", i % TEAMMATES), IdleReason::Available);
        let entry =
            OutgoingMessage::new(format!("mate-{:03}", i % TEAMMATES), idle.to_text()).into_entry();
        writeln!(out, "{}", serde_json::to_string(&entry).unwrap()).unwrap();
    }
}

fn build_team(dir: &Path) -> Team {
    let store = Store::new(Home::new(dir));
    let team = store.team("bench").unwrap();
    team.create(NewTeam::default()).unwrap();
    for i in 0..TEAMMATES {
        team.add_member(NewMember {
            name: format!("mate-{i:03}"),
            ..Default::default()
        })
        .unwrap();
    }
    for i in 0..TASKS {
        team.create_task(NewTask {
            subject: format!("task {i}"),
            ..Default::default()
        })
        .unwrap();
    }
    for i in 0..MESSAGES {
        team.send(
            "team-lead",
            OutgoingMessage::new(format!("mate-{:03}", i % TEAMMATES), format!("note {i}")),
        )
        .unwrap();
        if i % 500 == 499 {
            team.take_unread("team-lead").unwrap();
        }
    }
    for i in 0..PENDING {
        let r = PermissionRequest::new(
            format!("mate-{i:03}"),
            "Bash",
            "toolu_1",
            "run tests",
            serde_json::json!({"command": "cargo test"}),
        );
        team.send(
            "team-lead",
            OutgoingMessage::new(format!("mate-{i:03}"), r.to_text()),
        )
        .unwrap();
    }
    team
}

fn row(what: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "| {what} | {:.2} ms | {:.2} ms | {} |",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        times.len()
    );
}
