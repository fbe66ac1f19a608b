//! The main job's stored baseline: per-task cost of `teamhost run` at each
//! grid size, for one machine class (its core count) and one build profile,
//! kept in `host/benches/baseline/scale.json`. `grid` compares what it
//! measured with it and prints a `REGRESSION` line for every size whose
//! per-task cost grew by more than [`ALLOWED`]; the bench then exits with
//! status 1, so `cargo bench` fails loudly.
//!
//! The figure compared is the best of the size's runs (`TEAMHOST_SCALE_REPEAT`
//! runs each): the disk of this machine class varies by about 2× from run to
//! run, and the best run is the one least disturbed. A baseline is written
//! from a run with `TEAMHOST_SCALE_BASELINE=save` (on a quiet machine), and
//! only for this build's own binary (not with `TEAMHOST_SCALE_EXES`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};

/// How much a size's per-task cost may grow before it is a regression.
pub const ALLOWED: f64 = 0.20;

/// Where the baselines are kept.
fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/baseline/scale.json")
}

/// The machine class: its core count.
fn class() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpus} cores")
}

/// The build profile of the binary measured (the bench's own).
fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "dev"
    } else {
        "release"
    }
}

/// Compares `best` (size `"10x100"` → best per-task ms of this run) with the
/// stored baseline, prints a line per size, and saves `best` as the baseline
/// when asked. `true` when some size regressed.
pub fn check(best: &BTreeMap<String, f64>) -> bool {
    if best.is_empty() {
        return false;
    }
    let file = path();
    let mut all: Value = std::fs::read_to_string(&file)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_else(|| json!({}));
    let (class, profile) = (class(), profile());
    println!();
    println!(
        "baseline ({}, {class}, {profile} build): best per-task cost against the stored one, \
         {:.0} % allowed",
        file.display(),
        ALLOWED * 100.0
    );
    let mut regressed = false;
    for (size, now) in best {
        match all[&class][profile][size]["per_task_ms"].as_f64() {
            Some(then) => {
                let growth = now / then - 1.0;
                let verdict = if growth > ALLOWED {
                    regressed = true;
                    "REGRESSION"
                } else {
                    "ok"
                };
                println!(
                    "{verdict}: {size}: {now:.2} ms per task against {then:.2} ms stored ({:+.0} %)",
                    growth * 100.0
                );
            }
            None => println!("{size}: {now:.2} ms per task, no baseline stored for it"),
        }
    }
    if std::env::var("TEAMHOST_SCALE_BASELINE").as_deref() == Ok("save") {
        for (size, now) in best {
            all[&class][profile][size] = json!({ "per_task_ms": (now * 100.0).round() / 100.0 });
        }
        let text = serde_json::to_string_pretty(&all).expect("a baseline serializes");
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("the baseline directory");
        std::fs::write(&file, text + "\n").expect("the baseline is written");
        println!("saved as the baseline");
    }
    regressed
}
