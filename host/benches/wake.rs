//! Cross-process wake-up benchmark: how long from a message landing in a
//! teammate's inbox (written by this process) to that teammate — a separate
//! `teamhost teammate` process — starting the turn for it. Measured with the
//! teammate woken by file-system notifications (inotify, the default) and
//! with only the reference's 500 ms poll (`--no-watch`).
//!
//! Run with `cargo bench -p teamhost --bench wake` (about a minute). Prints a
//! Markdown table.
//! Send time and turn start are both wall-clock microseconds on this machine
//! (the teammate stamps each `--json` event line as it happens).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use teamhost::store::{Home, NewMember, NewTeam, OutgoingMessage, Store, Team};

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

struct Teammate {
    child: Child,
    events: mpsc::Receiver<Value>,
}

impl Teammate {
    /// Registers `probe` as a lead would, then starts `teamhost teammate`.
    fn start(home: &Path, team: &Team, extra: &[&str]) -> Teammate {
        let dir = home.parent().unwrap().join("work");
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .arg("--home")
            .arg(home)
            .arg("--json")
            .args(["teammate", "--agent-id", &m.agent_id, "--no-auto-claim"])
            .args(["--permission-mode", "acceptEdits", "--component"])
            .arg(teamhost_tests::PROBE)
            .args(extra)
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        Teammate { child, events: rx }
    }

    /// The next event line matching `pred`.
    fn next(&self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let v = self
                .events
                .recv_timeout(Duration::from_secs(30))
                .expect("the teammate reports within 30 s");
            if pred(&v) {
                return v;
            }
        }
    }

    fn idle(&self) {
        self.next(|v| v["event"] == "state" && v["state"] == "idle");
    }
}

impl Drop for Teammate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Median, p90 and max of `samples` (µs), as text.
fn row(name: &str, samples: &mut [u64]) {
    samples.sort_unstable();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let ms = |us: u64| format!("{:.2} ms", us as f64 / 1000.0);
    println!(
        "| {name} | {} | {} | {} | {} |",
        ms(pick(0.5)),
        ms(pick(0.9)),
        ms(*samples.last().unwrap()),
        samples.len()
    );
}

fn measure(base: &Path, label: &str, extra: &[&str], rounds: usize) {
    let tmp = tempfile::tempdir_in(base).unwrap();
    let home = tmp.path().join("home");
    let store = Store::new(Home::new(&home));
    let team = store.team("bench").unwrap();
    team.create(NewTeam::default()).unwrap();
    let mate = Teammate::start(&home, &team, extra);
    mate.next(|v| v["event"] == "turn" && v["kind"] == "initial");
    mate.idle();
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        // Send at a random point of the 500 ms poll cycle (which restarts
        // when the teammate goes idle), as a real lead would.
        std::thread::sleep(Duration::from_millis(fastrand::u64(1..500)));
        let sent = now_us();
        team.send("probe", OutgoingMessage::new("team-lead", format!("m{i}")))
            .unwrap();
        let turn = mate.next(|v| v["event"] == "turn" && v["kind"] == "message");
        samples.push(turn["atUs"].as_u64().unwrap().saturating_sub(sent));
        mate.idle();
    }
    row(label, &mut samples);
}

fn main() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    println!("send → turn start, teammate in another process");
    println!();
    println!("| wake-up | median | p90 | max | samples |");
    println!("|---|---:|---:|---:|---:|");
    measure(base, "inotify (default)", &[], 100);
    measure(base, "500 ms poll only (--no-watch)", &["--no-watch"], 40);
}
