//! Sub-agent benchmark: starting a sub-agent from a warm component cache
//! (issue 15; target under 2 ms).
//!
//! Run with `cargo bench -p teamhost --bench subagents`. Prints a Markdown
//! table; the README quotes it with the machine it ran on.
//!
//! - **start (background)**: `Seat::start` with `background`, as the
//!   `Agent` tool's `run_in_background` does: the checks against the parent,
//!   the component from the warm cache (a `stat`), the tools opened on the
//!   directory, a fresh store and instance, the counts record written and
//!   the sub-agent's task spawned, and the tree's budgets (sub-agents
//!   started, the memory pool, the disk meter's directories) consulted. It
//!   returns before the sub-agent's turn.
//! - **run (synchronous, trivial turn)**: the same plus the probe's whole
//!   turn (`say hi`) and its result, as a synchronous `Agent` call.
//!
//! The probe component (`guests/probe`) is the parent's and the sub-agent's;
//! the cache is warmed by one start before measuring. Each seat is dropped
//! (killing its sub-agents) after a batch, so memory stays flat.

use std::sync::Arc;
use std::time::{Duration, Instant};

use teamhost::home::Home;
use teamhost::runtime::subagent_host::{Caller, StartRequest, Started, SubagentHost};
use teamhost::runtime::{Identity, Runtime, SharedParts};
use teamhost::sandbox::{Limits, PermissionMode, ToolRules};
use teamhost::store::{NewTeam, Store};
use teamhost::subagents::{Definitions, Seat, SeatConfig, SubagentLimits, Tree};

const BATCH: usize = 100;
const BATCHES: usize = 5;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

fn seat(runtime: &Runtime, dir: &std::path::Path, home: &Home) -> Arc<Seat> {
    let store = Store::in_memory();
    let team = store.team("bench").unwrap();
    if team.config().is_err() {
        team.create(NewTeam::default()).unwrap();
    }
    let limits_sub = SubagentLimits {
        max_depth: 2,
        max_running: BATCH + 1,
        max_total: BATCH + 1,
    };
    // The tree's budgets let a whole batch run at once (what is measured
    // is a start, checks against the budgets included).
    let limits = Limits {
        max_subagents_total: (BATCH + 1) as u32,
        memory_total_bytes: 4 << 30,
        ..Limits::default()
    };
    let tools = teamhost::tools::ToolBox::open(dir, Default::default()).unwrap();
    let budget = teamhost::runtime::TreeBudget::new(&limits, Arc::new(tools));
    Seat::new(SeatConfig {
        runtime: runtime.clone(),
        component: teamhost_tests::PROBE.into(),
        home: home.clone(),
        shared: SharedParts {
            limits,
            ..SharedParts::new(team, "team-lead")
        },
        identity: Identity {
            name: "parent".into(),
            agent_id: "parent@bench".into(),
            team: "bench".into(),
            color: String::new(),
            agent_type: "general-purpose".into(),
            model: String::new(),
            plan_mode_required: false,
            backend_type: "in-process".into(),
            pane_id: "in-process".into(),
        },
        dir: dir.to_path_buf(),
        client: teamhost::model::ModelClient::disabled(),
        depth: 0,
        limits_sub,
        definitions: Arc::new(Definitions::new()),
        tree: Tree::new(home, "bench", "parent", limits_sub),
        budget,
        forked: false,
    })
}

fn request(background: bool) -> StartRequest {
    StartRequest {
        description: "bench".into(),
        prompt: "say hi".into(),
        background,
        ..StartRequest::default()
    }
}

fn caller() -> Caller {
    Caller {
        mode: PermissionMode::AcceptEdits,
        rules: ToolRules::default(),
    }
}

async fn bench() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let home = Home::new(tmp.path().join("home"));
    let runtime = Runtime::new(Some(tmp.path().join("cache"))).unwrap();
    // Warm: compile once (and link).
    let warm = seat(&runtime, &dir, &home);
    warm.start(caller(), request(false)).await.unwrap();
    drop(warm);

    println!("| operation | median | p90 | p99 | samples |");
    println!("|---|---:|---:|---:|---:|");
    for background in [true, false] {
        let mut times = Vec::with_capacity(BATCH * BATCHES);
        for _ in 0..BATCHES {
            let s = seat(&runtime, &dir, &home);
            for _ in 0..BATCH {
                let t = Instant::now();
                let started = s.start(caller(), request(background)).await.unwrap();
                times.push(t.elapsed());
                match started {
                    Started::Launched(_) => assert!(background),
                    Started::Finished(i) => assert_eq!(i.output, "said: hi"),
                }
            }
        }
        let name = if background {
            "start (background), warm cache"
        } else {
            "run (synchronous, trivial turn), warm cache"
        };
        row(name, &mut times);
    }
}

fn row(name: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    println!(
        "| {name} | {} | {} | {} | {} |",
        ms(at(0.5)),
        ms(at(0.9)),
        ms(at(0.99)),
        times.len()
    );
}
