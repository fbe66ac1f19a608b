//! Claude Code reads inboxes, `config.json` and task files without a lock,
//! and does not read again when what it read does not parse. A separate
//! python3 process stands in for it here: `json.load` of the opened file in
//! a tight loop, while threads write the file through teamhost's store
//! (real files, real locks; appends and takes that empty the inbox, config
//! changes, task updates). It must see valid JSON on every read: teamhost
//! never writes into a file a reader may hold (`host/src/durable.rs`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use serde_json::Value;
use teamhost::home::Home;
use teamhost::store::{NewMember, NewTask, NewTeam, OutgoingMessage, Store, TaskUpdate, Team};

/// Reads `path` until it has read it `want` times, seen `versions` different
/// contents (writes happened throughout, however slow the disk) and `stop`
/// exists. Prints `started`, then `enough` once it has read and seen
/// enough, then its counts as JSON. A missing file is not caught: the path
/// must always name a file.
const READER: &str = r#"
import json, os, sys
path, stop, want, want_versions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
reads = bad = versions = 0
announced = False
last = first_bad = None
print("started", flush=True)
while True:
    stopping = os.path.exists(stop)
    with open(path) as f:
        text = f.read()
    try:
        json.loads(text)  # what json.load(f) does
    except ValueError:
        bad += 1
        if first_bad is None:
            first_bad = text[:300]
    if text != last:
        versions += 1
        last = text
    reads += 1
    if not announced and reads >= want and versions >= want_versions:
        print("enough", flush=True)
        announced = True
    if stopping and announced:
        break
print(json.dumps({"reads": reads, "bad": bad, "versions": versions, "first_bad": first_bad}), flush=True)
"#;

const READS: u64 = 10_000;
const VERSIONS: u64 = 50;
const WRITERS: usize = 4;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Inbox,
    Config,
    Task,
}

/// One writer's step `i`: writer `w` of `WRITERS`, each on its own
/// `Store` (its own combiners, as another process would have).
fn write(kind: Kind, team: &Team, w: usize, i: u64) {
    // Sizes vary, so a torn read would show.
    let filler = "x".repeat((i as usize * 37 + w * 101) % 3000);
    match kind {
        // Three appenders and one taker that empties the inbox.
        Kind::Inbox if w == 0 => {
            team.take_unread("sink").unwrap();
        }
        Kind::Inbox => {
            team.send(
                "sink",
                OutgoingMessage::new("team-lead", format!("w{w} m{i} {filler}")),
            )
            .unwrap();
        }
        Kind::Config => {
            team.update_member(&format!("m{w}"), |m| m.prompt = Some(filler.clone()))
                .unwrap();
        }
        Kind::Task => {
            team.update_task(
                "1",
                TaskUpdate {
                    description: Some(format!("w{w} {i} {filler}")),
                    ..Default::default()
                },
                "team-lead",
            )
            .unwrap();
        }
    }
}

fn setup(kind: Kind) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let team = Store::new(Home::new(tmp.path())).team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in ["sink", "m0", "m1", "m2", "m3"] {
        team.add_member(NewMember {
            name: name.into(),
            prompt: Some("p".repeat(500)),
            ..Default::default()
        })
        .unwrap();
    }
    let paths = team.file_paths().unwrap();
    let path = match kind {
        Kind::Inbox => {
            team.send("sink", OutgoingMessage::new("team-lead", "first"))
                .unwrap();
            paths.inbox("sink").unwrap()
        }
        Kind::Config => paths.config(),
        Kind::Task => {
            let task = team
                .create_task(NewTask {
                    subject: "s".into(),
                    description: "d".into(),
                    ..Default::default()
                })
                .unwrap();
            assert_eq!(task.id, "1");
            paths.task("1").unwrap()
        }
    };
    (tmp, path)
}

fn a_foreign_reader_never_sees_a_torn_file(kind: Kind) {
    let (tmp, path) = setup(kind);
    let home = tmp.path().to_path_buf();
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let (first_tx, first_rx) = mpsc::channel();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (home, stop, writes, first) =
                (home.clone(), stop.clone(), writes.clone(), first_tx.clone());
            thread::spawn(move || {
                let team = Store::new(Home::new(&home)).team("t").unwrap();
                let mut i = 0;
                loop {
                    write(kind, &team, w, i);
                    writes.fetch_add(1, Ordering::Relaxed);
                    if i == 0 {
                        first.send(()).unwrap();
                    }
                    i += 1;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
            })
        })
        .collect();
    drop(first_tx);
    // Every writer is writing before the reader starts.
    for _ in 0..WRITERS {
        first_rx.recv().unwrap();
    }
    let script = home.join("reader.py");
    std::fs::write(&script, READER).unwrap();
    let stop_file = home.join("stop");
    let mut reader = Command::new("python3")
        .arg(&script)
        .arg(&path)
        .arg(&stop_file)
        .arg(READS.to_string())
        .arg(VERSIONS.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut out = BufReader::new(reader.stdout.take().unwrap());
    let mut line = String::new();
    let mut next = |line: &mut String| {
        line.clear();
        out.read_line(line).unwrap();
        line.trim().to_string()
    };
    let started = next(&mut line);
    let at_start = writes.load(Ordering::Relaxed);
    // The reader's reads all ran while the writers wrote: they stop only
    // once it has said it read enough.
    let enough = next(&mut line);
    let during = writes.load(Ordering::Relaxed) - at_start;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    std::fs::write(&stop_file, b"").unwrap();
    let counts = next(&mut line);
    assert!(reader.wait().unwrap().success(), "the reader failed");
    assert_eq!(started, "started");
    assert_eq!(enough, "enough", "{kind:?}: the reader ended early");
    let counts: Value = serde_json::from_str(&counts).unwrap();
    eprintln!("{kind:?}: {counts} with {during} writes while it read");
    assert!(counts["reads"].as_u64().unwrap() >= READS, "{counts}");
    assert_eq!(
        counts["bad"], 0,
        "{kind:?}: an unlocked reader saw a file that is not JSON: {counts}"
    );
    assert!(counts["versions"].as_u64().unwrap() >= VERSIONS, "{counts}");
    no_swap_files(&home);
}

/// No `.swap` sibling is left anywhere: every write makes a new file.
fn no_swap_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            no_swap_files(&p);
        } else {
            assert!(!p.to_string_lossy().ends_with(".swap"), "{}", p.display());
        }
    }
}

#[test]
fn a_foreign_reader_of_an_inbox_never_sees_a_torn_or_empty_file() {
    a_foreign_reader_never_sees_a_torn_file(Kind::Inbox);
}

#[test]
fn a_foreign_reader_of_the_config_never_sees_a_torn_file() {
    a_foreign_reader_never_sees_a_torn_file(Kind::Config);
}

#[test]
fn a_foreign_reader_of_a_task_file_never_sees_a_torn_file() {
    a_foreign_reader_never_sees_a_torn_file(Kind::Task);
}
