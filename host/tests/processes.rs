//! Real `teamhost` processes sharing one home: contention, a foreign writer
//! using the reference's lock convention, and a writer killed mid-stream.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;

use serde_json::Value;

const TEAM: &str = "crowd";

fn teamhost(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_teamhost"));
    c.arg("--home").arg(home).env_remove("TEAMHOST_TEAM");
    c
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("teamhost runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    ok(teamhost(&home).args(["team", "create", TEAM]));
    ok(teamhost(&home).args(["team", "add-member", TEAM, "sink"]));
    (tmp, home)
}

/// Starts `teamhost send --stdin` and feeds it `lines` from a thread; its
/// acknowledgements (one JSON line per message) are read and dropped by
/// another, so that a full pipe never holds it.
fn stdin_sender(home: &Path, lines: Vec<String>) -> (Child, thread::JoinHandle<()>) {
    let (mut child, feeder) = stdin_sender_acked(home, lines);
    let mut acks = child.stdout.take().unwrap();
    thread::spawn(move || std::io::copy(&mut acks, &mut std::io::sink()));
    (child, feeder)
}

/// [`stdin_sender`] whose acknowledgements the caller reads (its stdout).
fn stdin_sender_acked(home: &Path, lines: Vec<String>) -> (Child, thread::JoinHandle<()>) {
    let mut child = teamhost(home)
        .args(["send", "--team", TEAM, "sink", "--stdin", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = thread::spawn(move || {
        for l in lines {
            if writeln!(stdin, "{l}").is_err() {
                return; // the child died (crash test)
            }
        }
    });
    (child, feeder)
}

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn history_texts(home: &Path) -> Vec<String> {
    let path = home.join(format!("teams/{TEAM}/history/sink.jsonl"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn inbox_texts(home: &Path) -> Vec<String> {
    read_json(&home.join(format!("teams/{TEAM}/inboxes/sink.json")))
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

/// Every message delivered exactly once: consumed ones in history, the rest
/// still in the inbox.
fn assert_each_exactly_once(home: &Path, expected: &BTreeSet<String>) {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in history_texts(home).into_iter().chain(inbox_texts(home)) {
        *counts.entry(t).or_default() += 1;
    }
    let dupes: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(dupes.is_empty(), "duplicated: {dupes:?}");
    let seen: BTreeSet<String> = counts.into_keys().collect();
    let missing: Vec<_> = expected.difference(&seen).take(5).collect();
    assert!(
        missing.is_empty(),
        "{} lost, e.g. {missing:?}",
        expected.difference(&seen).count()
    );
    assert_eq!(seen.len(), expected.len());
}

#[test]
fn eight_processes_append_while_others_register_members_and_create_tasks() {
    let (_tmp, home) = setup();
    let mut expected = BTreeSet::new();
    let mut senders = Vec::new();
    for w in 0..8 {
        let lines: Vec<String> = (0..500).map(|i| format!("w{w}-{i}")).collect();
        expected.extend(lines.iter().cloned());
        senders.push(stdin_sender_acked(&home, lines));
    }
    let registrars: Vec<_> = ["m", "n"]
        .into_iter()
        .map(|name| {
            let home = home.clone();
            thread::spawn(move || {
                for _ in 0..20 {
                    ok(teamhost(&home).args(["team", "add-member", TEAM, name]));
                }
            })
        })
        .collect();
    let creators: Vec<_> = (0..2)
        .map(|k| {
            let home = home.clone();
            thread::spawn(move || {
                for i in 0..30 {
                    ok(teamhost(&home).args([
                        "task",
                        "create",
                        "--team",
                        TEAM,
                        &format!("c{k}-{i}"),
                    ]));
                }
            })
        })
        .collect();
    // A consumer takes while the writers write, as a teammate's runner would.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let consumer = {
        let home = home.clone();
        thread::spawn(move || {
            let mut takes = 0;
            while done_rx.try_recv().is_err() {
                ok(teamhost(&home).args(["inbox", "--team", TEAM, "sink", "--take", "--json"]));
                takes += 1;
            }
            takes
        })
    };
    for (child, feeder) in senders {
        feeder.join().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).lines().count(),
            500,
            "500 acks"
        );
    }
    for h in registrars.into_iter().chain(creators) {
        h.join().unwrap();
    }
    done_tx.send(()).unwrap();
    assert!(consumer.join().unwrap() > 0);

    assert_each_exactly_once(&home, &expected);

    let config = read_json(&home.join(format!("teams/{TEAM}/config.json")));
    let names: Vec<&str> = config["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(
        names.len(),
        2 + 40,
        "lead + sink + 40 registrations: {names:?}"
    );
    assert_eq!(unique.len(), names.len());

    let mut ids = Vec::new();
    for entry in std::fs::read_dir(home.join(format!("tasks/{TEAM}"))).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".json") {
            let task = read_json(&path);
            assert_eq!(task["id"], stem);
            ids.push(stem.parse::<u32>().unwrap());
        }
    }
    ids.sort();
    assert_eq!(ids, (1..=60).collect::<Vec<_>>());
}

/// The reference CLI's inbox write, in Python: mkdir lock directory (stale
/// after 10 s), read, append, temp file + rename, rmdir. Unlike the reference
/// it never gives up, so any loss would be teamhost's fault.
const FOREIGN_WRITER: &str = r#"
import json, os, random, sys, time, uuid
inbox, count, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lock = inbox + ".lock"
def acquire():
    delay = 0.005
    while True:
        try:
            os.mkdir(lock)
            return
        except FileExistsError:
            try:
                if time.time() - os.stat(lock).st_mtime > 10:
                    os.rmdir(lock)
                    continue
            except FileNotFoundError:
                continue
            time.sleep(delay * random.random())
            delay = min(delay * 2, 0.1)
for i in range(count):
    acquire()
    try:
        try:
            with open(inbox) as f:
                data = json.load(f)
        except FileNotFoundError:
            data = []
        data.append({"from": name, "text": f"{name}-{i}", "timestamp": "2026-11-21T22:24:52.591Z",
                     "msgV": 1, "msg_id": str(uuid.uuid4()), "type": "message", "read": False})
        tmp = f"{inbox}.tmp.{random.getrandbits(32):08x}"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2)
        os.rename(tmp, inbox)
    finally:
        os.rmdir(lock)
"#;

#[test]
fn a_foreign_writer_using_the_reference_lock_convention_loses_nothing_and_neither_do_we() {
    let (tmp, home) = setup();
    let script = tmp.path().join("foreign.py");
    std::fs::write(&script, FOREIGN_WRITER).unwrap();
    let inbox = home.join(format!("teams/{TEAM}/inboxes/sink.json"));
    let mut expected = BTreeSet::new();
    let foreign: Vec<Child> = (0..2)
        .map(|k| {
            let name = format!("py{k}");
            expected.extend((0..300).map(|i| format!("{name}-{i}")));
            Command::new("python3")
                .arg(&script)
                .arg(&inbox)
                .arg("300")
                .arg(&name)
                .spawn()
                .expect("python3 runs")
        })
        .collect();
    let mut ours = Vec::new();
    for w in 0..3 {
        let lines: Vec<String> = (0..300).map(|i| format!("th{w}-{i}")).collect();
        expected.extend(lines.iter().cloned());
        ours.push(stdin_sender(&home, lines));
    }
    // teamhost also consumes while both kinds of writer append.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let consumer = {
        let home = home.clone();
        thread::spawn(move || {
            while done_rx.try_recv().is_err() {
                ok(teamhost(&home).args(["inbox", "--team", TEAM, "sink", "--take"]));
            }
        })
    };
    for mut c in foreign {
        assert!(c.wait().unwrap().success(), "foreign writer failed");
    }
    for (mut child, feeder) in ours {
        feeder.join().unwrap();
        assert!(child.wait().unwrap().success());
    }
    done_tx.send(()).unwrap();
    consumer.join().unwrap();
    assert_each_exactly_once(&home, &expected);
    assert!(!PathBuf::from(format!("{}.lock", inbox.display())).exists());
}

#[test]
fn a_writer_killed_mid_stream_leaves_valid_files_and_every_acknowledged_message() {
    let (_tmp, home) = setup();
    let lines: Vec<String> = (0..100_000).map(|i| format!("crash-{i}")).collect();
    let (mut child, feeder) = stdin_sender_acked(&home, lines);
    let mut acked = BTreeSet::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let kill_after = 150 + fastrand_below(100);
    while acked.len() < kill_after {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "writer ended early"
        );
        let entry: Value = serde_json::from_str(&line).unwrap();
        acked.insert(entry["text"].as_str().unwrap().to_string());
    }
    // SIGKILL while it is still writing: no chance to clean up.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    drop(stdout);
    feeder.join().unwrap();

    let present: BTreeSet<String> = inbox_texts(&home).into_iter().collect();
    let lost: Vec<_> = acked.difference(&present).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    read_json(&home.join(format!("teams/{TEAM}/config.json")));
    // The killed writer's locks do not block the next writer.
    ok(teamhost(&home).args(["send", "--team", TEAM, "sink", "after the crash"]));
    assert!(inbox_texts(&home).contains(&"after the crash".to_string()));
}

#[test]
fn send_stdin_takes_waiting_lines_together_in_order_and_never_waits_on_a_partial_line() {
    let (_tmp, home) = setup();
    let mut child = teamhost(&home)
        .args(["send", "--team", TEAM, "sink", "--stdin", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, acks) = std::sync::mpsc::channel::<String>();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let reader = thread::spawn(move || {
        for line in stdout.lines() {
            let entry: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let _ = tx.send(entry["text"].as_str().unwrap().to_string());
        }
    });
    let ack = || {
        acks.recv_timeout(std::time::Duration::from_secs(60))
            .expect("an acknowledgement within 60 s")
    };
    // Two whole lines and the start of a third, in one write: the two are
    // acknowledged while the third is still unfinished (its writer may be
    // waiting for them, as this one is).
    stdin.write_all(b"one\ntwo\nthr").unwrap();
    stdin.flush().unwrap();
    assert_eq!([ack(), ack()], ["one", "two"]);
    assert_eq!(
        inbox_texts(&home),
        ["one", "two"],
        "on disk when acknowledged"
    );
    stdin.write_all(b"ee\r\nfour\nfive").unwrap();
    drop(stdin); // the last line has no newline: the end of the input ends it
    assert_eq!([ack(), ack(), ack()], ["three", "four", "five"]);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
    assert_eq!(inbox_texts(&home), ["one", "two", "three", "four", "five"]);
}

fn fastrand_below(n: usize) -> usize {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as usize)
        % n
}
