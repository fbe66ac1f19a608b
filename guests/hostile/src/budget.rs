//! `budget …`: attacks on the budgets a teammate shares with everything it
//! starts (issue 27, item 3). One command word, `budget`, then a
//! sub-command:
//!
//! | sub-command | what it tries |
//! |---|---|
//! | `nest-alloc MIB DEPTH` | holds MIB MiB (touched), then, while holding it, runs a sub-agent `budget nest-alloc MIB DEPTH-1` and reports its status and output: a chain of instances that together pass the tree's memory |
//! | `spawn-many N` | runs N sub-agents `budget noop` one after the other; reports how many started and the first error |
//! | `spawn-tree N` | runs one sub-agent `budget spawn-many 2` (it starts two of its own), then `spawn-many N` itself: the tree's life-long count |
//! | `noop` | nothing (a sub-agent's whole work) |
//! | `big-send KIB` | one `messaging.send` of KIB KiB to the lead (turn after turn: the team-bytes budget) |
//! | `save-flood N` | N `state.save` calls of 16 bytes in one turn |
//! | `set-len PATH MIB` | `File::set_len` to MIB MiB through WASI (a sparse file: its length counts) |
//!
//! As a sub-agent (`subagents.whoami` is `some`) its result goes to
//! `subagents.report`, not to the lead.

use super::{fs, report, teamhost};
use teamhost::agent::subagents::{self, Start, Status};

/// Runs `budget ARGS…`.
pub fn run(args: &[&str]) {
    match args {
        ["nest-alloc", mib, depth] => {
            nest_alloc(mib.parse().unwrap_or(16), depth.parse().unwrap_or(0))
        }
        ["spawn-many", n] => {
            let (ok, error) = spawn_many(n.parse().unwrap_or(1));
            done("budget/spawn-many", format!("{ok} of {n} started {error}"));
        }
        ["spawn-tree", n] => {
            let r = subagents::run(&start("budget spawn-many 2"));
            let first = match r {
                Ok(i) => format!("{} {}", status(i.status), i.output),
                Err(e) => super::wit_error(&e),
            };
            report("budget/spawn-tree-child", true, first);
            let (ok, error) = spawn_many(n.parse().unwrap_or(1));
            report(
                "budget/spawn-tree",
                true,
                format!("{ok} of {n} started {error}"),
            );
        }
        ["noop"] => done("budget/noop", "nothing done".into()),
        ["big-send", kib] => {
            let kib: usize = kib.parse().unwrap_or(1000);
            let text = "m".repeat(kib << 10);
            let r = super::messaging::send(&super::lead(), &text, None);
            super::tool("budget/big-send", r, |_| format!("sent {kib} KiB"));
        }
        ["save-flood", n] => {
            let n: u32 = n.parse().unwrap_or(1_000);
            let mut ok = 0;
            for _ in 0..n {
                if teamhost::agent::state::save(&[9u8; 16]).is_ok() {
                    ok += 1;
                }
            }
            report("budget/save-flood", true, format!("{ok} of {n} saved"));
        }
        ["set-len", path, mib] => {
            let mib: u64 = mib.parse().unwrap_or(1);
            let r = std::fs::File::create(path).and_then(|f| f.set_len(mib << 20));
            fs("budget/set-len", r, |_| format!("{path} is {mib} MiB"));
        }
        _ => report("budget", false, format!("unknown budget command {args:?}")),
    }
}

fn start(prompt: &str) -> Start {
    Start {
        description: "hostile sub-agent".into(),
        prompt: prompt.into(),
        subagent_type: None,
        model: None,
        name: None,
        mode: None,
        worktree: false,
        tool_use_id: None,
    }
}

fn status(s: Status) -> &'static str {
    match s {
        Status::Running => "running",
        Status::Completed => "completed",
        Status::Failed => "failed",
        Status::Killed => "killed",
    }
}

/// A result: reported to the parent when this is a sub-agent, else to the
/// lead.
fn done(step: &str, text: String) {
    if subagents::whoami().is_some() {
        subagents::report(&text);
    } else {
        report(step, true, text);
    }
}

/// Runs `n` sub-agents, one after the other.
fn spawn_many(n: u32) -> (u32, String) {
    let mut ok = 0;
    for _ in 0..n {
        match subagents::run(&start("budget noop")) {
            Ok(_) => ok += 1,
            Err(e) => return (ok, super::wit_error(&e)),
        }
    }
    (ok, String::new())
}

fn nest_alloc(mib: usize, depth: u32) {
    let mut held: Vec<Vec<u8>> = Vec::new();
    for i in 0..mib {
        let mut chunk = vec![0u8; 1 << 20];
        for page in (0..chunk.len()).step_by(4096) {
            chunk[page] = (i as u8) | 1;
        }
        held.push(std::hint::black_box(chunk));
    }
    let text = if depth == 0 {
        format!("holding {mib} MiB at the bottom")
    } else {
        match subagents::run(&start(&format!("budget nest-alloc {mib} {}", depth - 1))) {
            Ok(i) => format!(
                "holding {mib} MiB; below: {} {}",
                status(i.status),
                i.output
            ),
            Err(e) => format!("holding {mib} MiB; below: {}", super::wit_error(&e)),
        }
    };
    std::hint::black_box(&held);
    done("budget/nest-alloc", text);
}
