//! The lead benchmark (issue 29): the LLM lead (`guests/lead`, the real
//! component) on a scripted model ([`teamhost_tests::lead_model`]) forms a
//! team, creates the tasks, spawns the teammates from a catalogue entry
//! whose component is the `worker` guest (auto-claim: each claims, counts
//! the words of `a.txt`, completes the task and reports to the lead),
//! checks the task list on every wake until all are completed, shuts the
//! teammates down and deletes the team, in one run. It prints the run's
//! figures as Markdown: wall time, lead decisions and turns, the time each
//! decision took outside the model (p50/p95 per kind), tasks per second and
//! the machine.
//!
//! Run with `cargo bench --profile dev -p teamhost-tests --bench lead`
//! (`-- TASKS TEAMMATES` for another size; 200 and 20 by default).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use teamhost::embed::{CatalogueEntry, Host, HostOptions, LeadSpec, ModelAccess, TeammateState};
use teamhost::home::Home;
use teamhost::model::config::{ModelConfig, ModelEntry, ProviderSpec};
use teamhost::model::{CassetteMode, ModelHub, ModelPolicy};
use teamhost::sandbox::PermissionMode;
use teamhost_tests::lead_model::{Decision, LeadModel, BATCH, ENTRY};
use teamhost_tests::measure::fmt;

/// The most the run may take before it is reported as stuck.
const LIMIT: Duration = Duration::from_secs(240);

/// A config whose only model, `fake`, is played by the provider `lead`
/// (put in place by the bench), with a window no conversation here fills.
fn config() -> ModelConfig {
    let mut config = ModelConfig::from_env();
    config.providers.clear();
    config.providers.insert(
        "lead".into(),
        ProviderSpec::Scripted {
            script: "/unused".into(),
        },
    );
    config.models.clear();
    config.models.insert(
        "fake".into(),
        ModelEntry {
            provider: "lead".into(),
            id: "fake-1".into(),
            context_window: 100_000_000,
            max_output_tokens: 8_000,
            price: None,
            prompt_caching: false,
        },
    );
    config
}

/// The `percentile` (0–100) of sorted `v`, nearest rank.
fn percentile(v: &[Duration], percentile: usize) -> Duration {
    v[(v.len() * percentile).div_ceil(100).saturating_sub(1)]
}

/// `key` of a `/proc` file's `key: value` lines.
fn proc_field(file: &str, key: &str) -> String {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let ram_kib: f64 = proc_field("/proc/meminfo", "MemTotal")
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap_or(0.0);
    format!(
        "{cores} cores, {}, {:.1} GiB RAM",
        proc_field("/proc/cpuinfo", "model name"),
        ram_kib / 1024.0 / 1024.0
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let tasks = args.first().copied().unwrap_or(200);
    let teammates = args.get(1).copied().unwrap_or(20);
    let team = "bench-led";

    let tmp = tempfile::tempdir().unwrap();
    let model = LeadModel::new(team, tasks, teammates);
    let hub = ModelHub::new(config(), CassetteMode::Live, None).unwrap();
    hub.set_provider("lead", model.clone());
    let host = Host::with_options(
        Home::new(tmp.path().join("home")),
        HostOptions {
            models: ModelAccess::new(hub),
            ..HostOptions::default()
        },
    )
    .unwrap();
    let work = tmp.path().join("work");
    let shared = work.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("a.txt"), "one two three four five").unwrap();
    let mut spec = LeadSpec::new(
        teamhost_tests::LEAD,
        format!("Count the words of a.txt, {tasks} times, with {teammates} workers."),
        work.join("team-lead"),
        work.clone(),
    );
    let mut policy = ModelPolicy::new(vec!["fake".into()]);
    policy.requests_per_minute = None;
    spec.settings.model_policy = Some(policy);
    spec.max_teammates = teammates;
    // The lead creates every task in its first turn: more than the
    // default 100 per turn (a manifest's `[lead] limits` raises it alike).
    spec.settings.limits.max_tasks_per_turn =
        spec.settings.limits.max_tasks_per_turn.max(tasks as u32);
    spec.catalogue = vec![CatalogueEntry {
        description: "counts the words of the files a task names".into(),
        cwd: Some(shared.clone()),
        max_mode: PermissionMode::AcceptEdits,
        ..CatalogueEntry::new(ENTRY, teamhost_tests::WORKER)
    }];

    let start = Instant::now();
    host.start_lead(team, spec).await.unwrap();
    let end = tokio::time::timeout(LIMIT, host.wait_lead(team)).await;
    let wall = start.elapsed();
    let calls = model.calls();
    let reports = std::fs::read_dir(shared.join("reports")).map_or(0, |d| d.count());
    match end {
        Ok(Some(TeammateState::Completed)) => {}
        other => panic!(
            "the lead's run did not complete ({other:?}) after {}: {} model calls, last decisions {:?}, {reports} reports",
            fmt(wall),
            calls.len(),
            calls.iter().rev().take(5).map(|c| c.decision).collect::<Vec<_>>()
        ),
    }
    assert_eq!(reports, tasks, "every task was done once");
    assert!(
        !host.team(team).unwrap().try_exists().unwrap(),
        "the team was deleted"
    );

    // A decision's time outside the model: from its answer leaving the
    // model to the lead's next request, divided by the answer's tool calls
    // (the last answer, the TeamDelete that ended the run, has no next
    // request and is left out).
    let mut by_kind: BTreeMap<Decision, (usize, Vec<Duration>)> = BTreeMap::new();
    for pair in calls.windows(2) {
        if pair[0].decision != Decision::EndTurn {
            let kind = by_kind.entry(pair[0].decision).or_default();
            kind.0 += pair[0].tools;
            kind.1
                .push((pair[1].asked - pair[0].answered) / pair[0].tools as u32);
        }
    }
    let model_time: Duration = calls.iter().map(|c| c.answered - c.asked).sum();
    let turns = calls.iter().filter(|c| c.turn_start).count();
    let mut all: Vec<Duration> = by_kind.values().flat_map(|k| &k.1).copied().collect();
    all.sort();
    let decisions: usize = calls.iter().map(|c| c.tools).sum();
    let answers = calls.iter().filter(|c| c.tools > 0).count();

    println!("lead benchmark: the LLM lead (guests/lead) on a scripted model, {teammates} worker teammates, {tasks} tasks, one run\n");
    println!("machine: {}\n", machine());
    println!("| figure | value |");
    println!("|---|---:|");
    println!(
        "| wall time (start_lead to the lead's end) | {} |",
        fmt(wall)
    );
    println!(
        "| tasks per second | {:.1} |",
        tasks as f64 / wall.as_secs_f64()
    );
    println!("| worker reports written (tasks done) | {reports} |");
    println!("| lead decisions (tool calls) | {decisions} |");
    println!("| lead answers calling tools (at most {BATCH} calls each) | {answers} |");
    println!("| lead turns | {turns} |");
    println!("| lead model calls | {} |", calls.len());
    println!(
        "| time in the model (scripted, in-process) | {} |",
        fmt(model_time)
    );
    println!(
        "| time outside the model per decision (an answer's time / its calls): mean / p50 / p95 | {} / {} / {} |",
        fmt(all.iter().sum::<Duration>() / all.len().max(1) as u32),
        fmt(percentile(&all, 50)),
        fmt(percentile(&all, 95))
    );
    println!("\n| decision | calls | answers | p50 per call | p95 per call | max per call |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (kind, (count, mut times)) in by_kind {
        times.sort();
        println!(
            "| {} | {count} | {} | {} | {} | {} |",
            kind.label(),
            times.len(),
            fmt(percentile(&times, 50)),
            fmt(percentile(&times, 95)),
            fmt(*times.last().unwrap())
        );
    }
    println!("\n(time outside the model: the lead guest reading the answer, the host running each tool through the toolbox and the seat, the guest sending its next request through the host's model capability; the model is in-process and its own time is the line above)");
}
