//! `probe`: a scriptable teammate for teamhost's end-to-end tests. It records
//! every turn in a file and does what directives in its spawn prompt tell it.
//!
//! # The turn log
//!
//! Each turn, before anything else, it appends one line to `turns.log` in its
//! directory: `KIND\tFROM\tTEXT`, where KIND is `initial`, `message`,
//! `shutdown-request` or `task-claimed`, FROM is `turn.from`, and TEXT is
//!
//! | turn kind          | TEXT                                                 |
//! |--------------------|------------------------------------------------------|
//! | `initial`          | the spawn prompt                                     |
//! | `message`          | the texts of all the turn's messages, joined by ` \| ` |
//! | `shutdown-request` | the request's reason, or empty                       |
//! | `task-claimed`     | the task id                                          |
//!
//! Newlines, carriage returns and tabs in FROM and TEXT become spaces, so a
//! record is always one line of three fields.
//!
//! # Directives
//!
//! Words of the spawn prompt (the `initial` turn's prompt), remembered for
//! later turns:
//!
//! | directive         | effect                                                      |
//! |-------------------|-------------------------------------------------------------|
//! | `reject-shutdown` | rejects shutdown requests ("probe was told to reject") instead of approving |
//! | `trap-on-task`    | traps on a `task-claimed` turn (instead of completing the task) |
//! | `panic-on-task`   | panics on a `task-claimed` turn: `cannot do task #ID: SUBJECT` |
//! | `trap-on-message` | traps on a `message` turn whose TEXT contains `trap`        |
//! | `spin-on-message` | loops for ever on a `message` turn whose TEXT contains `spin` |
//! | `complete-tasks`  | the default: on `task-claimed`, sets the task `completed` and reports it resolved |
//! | message `read-loop N` | calls `tools::read("bench.txt")` N times, then sends the sender `read-loop done OK/N` (sandbox benchmark) |
//! | message `write-loop N KIB` | appends KIB KiB to `bench.bin` N times with its own WASI writes (the file emptied every 64 MiB), then sends the sender `write-loop done OK/N` (sandbox benchmark) |
//! | message `open-loop N` | opens and reads `bench.txt` with `std::fs` (its own WASI open) N times, then sends the sender `open-loop done OK/N` (sandbox benchmark) |
//! | `dm:NAME`         | on the `initial` turn, sends NAME `hello NAME` (summary `greeting`); may repeat |
//! | `bash-on-task`    | on `task-claimed`, before completing the task, runs with `tools::bash`: `touch holding-ID`, then waits until a file `release` exists in its directory, then appends ID to `bash.log` (a tool call a test can hold open, and one that asks the lead unless Bash is allowed) |
//! | `hold-after-complete` | on `task-claimed`, after the task's update succeeded (and `completed.log` has its ID), runs the held call with ID `done-ID` before the turn ends: a turn a test can cut between a completion and its report |
//! | message `hold`    | runs the same held `tools::bash` call as `bash-on-task`, with ID `msg` (a message turn a test can hold open) |
//! | message `panic TEXT` | panics with the message TEXT (a crash whose last words the host must show) |
//!
//! The spawn prompt is saved with `state.save`, and a probe whose first turn
//! is not `initial` (one brought back by `teamhost run --resume`) loads its
//! directives from there. Each task it completes is appended to
//! `completed.log` (`ID` per line), after the task's update succeeded.
//!
//! Without directives it also answers a message whose text is exactly `reply`
//! with `ack` (summary `ack`) to its sender, and approves shutdown requests.
//!
//! Every turn returns `ok`, unless it traps or spins. Failing host calls are
//! logged to stderr; a task that cannot be completed is reported failed.
//!
//! Sub-agents (`sub …` messages, and what the probe does as a sub-agent):
//! see `sub.rs`.

wit_bindgen::generate!({
    path: "../../wit",
    world: "teamhost:agent/teammate",
    generate_all,
});

mod sub;

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::OnceLock;

use exports::teamhost::agent::handler::{Guest, TaskReport, Turn, TurnKind, TurnOutcome};
use teamhost::agent::protocol::{CompletedStatus, ShutdownResponse};
use teamhost::agent::tasks::{self, TaskStatus, TaskUpdate};
use teamhost::agent::{messaging, state, tools};

/// The turn log, relative to the probe's directory.
const LOG: &str = "turns.log";

/// What the spawn prompt asked for.
#[derive(Default)]
struct Directives {
    reject_shutdown: bool,
    trap_on_task: bool,
    panic_on_task: bool,
    trap_on_message: bool,
    spin_on_message: bool,
    bash_on_task: bool,
    hold_after_complete: bool,
    /// Members to greet on the initial turn.
    dm: Vec<String>,
}

impl Directives {
    fn parse(prompt: &str) -> Self {
        let mut d = Directives::default();
        for word in prompt.split_whitespace() {
            match word {
                "reject-shutdown" => d.reject_shutdown = true,
                "trap-on-task" => d.trap_on_task = true,
                "panic-on-task" => d.panic_on_task = true,
                "trap-on-message" => d.trap_on_message = true,
                "spin-on-message" => d.spin_on_message = true,
                "complete-tasks" => {} // the default
                "bash-on-task" => d.bash_on_task = true,
                "hold-after-complete" => d.hold_after_complete = true,
                _ => {
                    if let Some(name) = word.strip_prefix("dm:").filter(|n| !n.is_empty()) {
                        d.dm.push(name.to_string());
                    }
                }
            }
        }
        d
    }
}

/// Set by the initial turn; defaults if a turn comes before it.
static DIRECTIVES: OnceLock<Directives> = OnceLock::new();

struct Probe;

impl Guest for Probe {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        let (kind, text) = match &turn.kind {
            TurnKind::Initial => ("initial", turn.prompt.clone()),
            TurnKind::Message => {
                let texts: Vec<&str> = turn.messages.iter().map(|m| m.text.as_str()).collect();
                ("message", texts.join(" | "))
            }
            TurnKind::ShutdownRequest(r) => {
                ("shutdown-request", r.reason.clone().unwrap_or_default())
            }
            TurnKind::TaskClaimed(t) => ("task-claimed", t.id.clone()),
        };
        log(kind, &turn.from, &text);

        // A sub-agent of another probe: its own small language.
        if teamhost::agent::subagents::whoami().is_some() {
            let resumed = !matches!(turn.kind, TurnKind::Initial);
            sub::as_sub_agent(&text, resumed)?;
            return Ok(TurnOutcome { task: None });
        }

        let directives = match turn.kind {
            TurnKind::Initial => DIRECTIVES.get_or_init(|| {
                if let Err(e) = state::save(turn.prompt.as_bytes()) {
                    eprintln!("probe: cannot save its directives: {e:?}");
                }
                Directives::parse(&turn.prompt)
            }),
            // Brought back after a crash: the directives it saved.
            _ => DIRECTIVES.get_or_init(|| match state::load() {
                Ok(Some(saved)) => Directives::parse(&String::from_utf8_lossy(&saved)),
                _ => Directives::default(),
            }),
        };

        match turn.kind {
            TurnKind::Initial => {
                for name in &directives.dm {
                    send(name, &format!("hello {name}"), "greeting");
                }
                Ok(TurnOutcome { task: None })
            }
            TurnKind::Message => {
                if let Some(words) = turn
                    .messages
                    .iter()
                    .find_map(|m| m.text.strip_prefix("panic "))
                {
                    panic!("{words}");
                }
                if directives.trap_on_message && text.contains("trap") {
                    core::arch::wasm32::unreachable();
                }
                if directives.spin_on_message && text.contains("spin") {
                    loop {
                        std::hint::black_box(0);
                    }
                }
                for message in &turn.messages {
                    if let Some(answer) = sub::parent_directive(&message.text) {
                        send(&message.from, &answer, "sub");
                    }
                    if let Some(line) = sub::notification(&message.text) {
                        send("team-lead", &line, "notified");
                    }
                }
                if turn.messages.iter().any(|m| m.text == "hold") {
                    if let Err(e) = hold("msg") {
                        eprintln!("probe: {e}");
                    }
                }
                for message in turn.messages.iter().filter(|m| m.text == "reply") {
                    send(&message.from, "ack", "ack");
                }
                for message in &turn.messages {
                    if let Some(n) = message.text.strip_prefix("read-loop ") {
                        read_loop(&message.from, n);
                    }
                    if let Some(args) = message.text.strip_prefix("write-loop ") {
                        write_loop(&message.from, args);
                    }
                    if let Some(n) = message.text.strip_prefix("open-loop ") {
                        open_loop(&message.from, n);
                    }
                }
                Ok(TurnOutcome { task: None })
            }
            TurnKind::ShutdownRequest(request) => {
                let response = if directives.reject_shutdown {
                    ShutdownResponse::Reject("probe was told to reject".into())
                } else {
                    ShutdownResponse::Approve
                };
                if let Err(e) = messaging::respond_shutdown(&request.request_id, &response) {
                    eprintln!(
                        "probe: cannot answer shutdown {}: {e:?}",
                        request.request_id
                    );
                }
                Ok(TurnOutcome { task: None })
            }
            TurnKind::TaskClaimed(task) => {
                if directives.trap_on_task {
                    core::arch::wasm32::unreachable();
                }
                if directives.panic_on_task {
                    panic!("cannot do task #{}: {}", task.id, task.subject);
                }
                if directives.bash_on_task {
                    if let Err(reason) = hold(&task.id) {
                        return Ok(TurnOutcome {
                            task: Some(TaskReport {
                                task_id: task.id,
                                status: CompletedStatus::Failed,
                                reason: Some(reason),
                            }),
                        });
                    }
                }
                let changes = TaskUpdate {
                    subject: None,
                    description: None,
                    active_form: None,
                    status: Some(TaskStatus::Completed),
                    owner: None,
                    metadata: None,
                };
                let (status, reason) = match tasks::update(&task.id, &changes) {
                    Ok(_) => {
                        append("completed.log", &format!("{}\n", task.id));
                        if directives.hold_after_complete {
                            if let Err(e) = hold(&format!("done-{}", task.id)) {
                                eprintln!("probe: {e}");
                            }
                        }
                        (CompletedStatus::Resolved, None)
                    }
                    Err(e) => (
                        CompletedStatus::Failed,
                        Some(format!("cannot complete: {e:?}")),
                    ),
                };
                Ok(TurnOutcome {
                    task: Some(TaskReport {
                        task_id: task.id,
                        status,
                        reason,
                    }),
                })
            }
        }
    }
}

/// The held Bash call: `touch holding-ID`, wait for `release`, append ID to
/// `bash.log`.
fn hold(id: &str) -> Result<(), String> {
    let command = format!(
        "touch holding-{id}; while [ ! -e release ]; do sleep 0.02; done; echo {id} >> bash.log"
    );
    tools::bash(&command, Some(120_000))
        .map(|_| ())
        .map_err(|e| format!("bash refused: {e:?}"))
}

/// Append one record to the turn log. A failure is logged to stderr only.
fn log(kind: &str, from: &str, text: &str) {
    let clean = |s: &str| s.replace(['\n', '\r', '\t'], " ");
    let line = format!("{kind}\t{}\t{}\n", clean(from), clean(text));
    append(LOG, &line);
}

/// Appends `line` to `file` in its directory. A failure is logged to stderr
/// only.
fn append(file: &str, line: &str) {
    let written = OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)
        .and_then(|mut file| {
            file.write_all(line.as_bytes())?;
            file.flush()
        });
    if let Err(e) = written {
        eprintln!("probe: cannot append to {file}: {e}");
    }
}

/// Send a direct message; a failure is logged to stderr only.
fn send(to: &str, content: &str, summary: &str) {
    if let Err(e) = messaging::send(to, content, Some(summary)) {
        eprintln!("probe: cannot message {to}: {e:?}");
    }
}

export!(Probe);

/// `write-loop N KIB`: N writes of KIB KiB each to `bench.bin` through the
/// guest's own WASI file calls (the sandbox benchmark's cost of counting
/// them), then tells the sender how many succeeded.
fn write_loop(from: &str, args: &str) {
    use std::io::{Seek, Write};
    let mut words = args.split_whitespace();
    let n: u32 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    let kib: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or(4);
    let chunk = vec![b'w'; kib << 10];
    let mut ok = 0;
    if let Ok(mut f) = std::fs::File::create("bench.bin") {
        let mut held = 0usize;
        for _ in 0..n {
            if held + chunk.len() > 64 << 20 {
                let _ = f.set_len(0).and_then(|()| f.rewind());
                held = 0;
            }
            if f.write_all(&chunk).is_ok() {
                ok += 1;
                held += chunk.len();
            }
        }
    }
    let _ = std::fs::remove_file("bench.bin");
    send(from, &format!("write-loop done {ok}/{n}"), "bench");
}

/// `read-loop N`: calls the sandboxed Read tool on `bench.txt` N times (for
/// the sandbox benchmark), then tells the sender how many calls succeeded.
fn open_loop(from: &str, n: &str) {
    let n: u32 = n.trim().parse().unwrap_or(0);
    let ok = (0..n)
        .filter(|_| std::fs::read("bench.txt").is_ok())
        .count();
    send(from, &format!("open-loop done {ok}/{n}"), "bench");
}

fn read_loop(from: &str, n: &str) {
    let n: u32 = n.trim().parse().unwrap_or(0);
    let ok = (0..n)
        .filter(|_| teamhost::agent::tools::read("bench.txt", None, None).is_ok())
        .count();
    send(from, &format!("read-loop done {ok}/{n}"), "bench");
}
