//! `teamhost check [TEAM.toml]`: everything `teamhost run` would refuse,
//! found before anything is created, like `cargo check` or `spin build`'s
//! checks: the manifest's format and keys ([`Manifest::load`], whose errors
//! name the file and the key), the layout of the teammates' directories
//! ([`crate::layout`]), and every component it names compiled against the
//! teamhost world (one that imports `wasi:http` refused when a teammate
//! without `allowed_outbound_hosts` runs it), which leaves the compiled component in the home's cache
//! (`{home}/cache/components`): the next `run` starts without compiling.
//!
//! No team, member, directory or store is created or opened. Exits
//! non-zero with every problem found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use super::Output;
use crate::home::Home;
use crate::manifest::{IsolationSpec, Manifest};
use crate::runtime::WasiHttpGrant;

/// Arguments of `teamhost check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The team manifest (default: `team.toml` in the current directory).
    #[arg(value_name = "TEAM.toml", default_value = "team.toml")]
    manifest: PathBuf,
}

/// One component, as checked.
#[derive(Debug, Serialize)]
struct Component {
    path: PathBuf,
    /// The teammates and sub-agents that run it.
    used_by: Vec<String>,
    /// Seconds to load it (compile, or read from the cache).
    seconds: f64,
    /// Why it cannot run, if it cannot.
    error: Option<String>,
}

/// What `check` found.
#[derive(Debug, Serialize)]
struct Checked {
    manifest: PathBuf,
    team: String,
    teammates: usize,
    tasks: usize,
    components: Vec<Component>,
}

pub(super) fn check(home: &Home, out: &Output, a: CheckArgs) -> anyhow::Result<()> {
    if !a.manifest.exists() {
        anyhow::bail!(
            "no manifest at {}: give its path (`teamhost check path/to/team.toml`) or run this where team.toml is",
            a.manifest.display()
        );
    }
    let m = Manifest::load(&a.manifest)?;
    check_layout(home, &a.manifest, &m)?;
    let mut components: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    // Components a teammate without the wasi:http grant runs: one that
    // imports wasi:http is refused here as its spawn would refuse it.
    let mut ungranted = std::collections::BTreeSet::new();
    for t in &m.teammates {
        components
            .entry(t.component.clone())
            .or_default()
            .push(t.name.clone());
        if WasiHttpGrant::of(t.network.as_ref()) == WasiHttpGrant::NotGranted {
            ungranted.insert(t.component.clone());
        }
    }
    for agent in &m.agents {
        if let Some(c) = &agent.component {
            components
                .entry(c.clone())
                .or_default()
                .push(format!("agent {}", agent.name));
        }
    }
    let runtime = crate::runtime::Runtime::new(Some(home.component_cache()))
        .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))?;
    let loaded: Vec<Component> = std::thread::scope(|s| {
        let jobs: Vec<_> = components
            .into_iter()
            .map(|(path, used_by)| {
                let runtime = &runtime;
                let http = match ungranted.contains(&path) {
                    true => WasiHttpGrant::NotGranted,
                    false => WasiHttpGrant::Granted,
                };
                s.spawn(move || {
                    let (took, r) = timed(|| runtime.prepare(&path, http).map(|_| ()));
                    Component {
                        error: r.err().map(|e| format!("{e:#}")),
                        path,
                        used_by,
                        seconds: took.as_secs_f64(),
                    }
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("a component check panicked"))
            .collect()
    });
    let failed = loaded.iter().filter(|c| c.error.is_some()).count();
    let checked = Checked {
        manifest: a.manifest.clone(),
        team: m.team.name.clone(),
        teammates: m.teammates.len(),
        tasks: m.tasks.len(),
        components: loaded,
    };
    if failed > 0 {
        if out.is_json() {
            out.print(&checked, String::new)?;
        }
        let problems: Vec<String> = checked
            .components
            .iter()
            .filter_map(|c| {
                c.error.as_ref().map(|e| {
                    format!(
                        "  - component {} (teammate {}): {e}",
                        c.path.display(),
                        c.used_by.join(", ")
                    )
                })
            })
            .collect();
        anyhow::bail!(
            "manifest {}: {failed} component(s) cannot run:\n{}",
            a.manifest.display(),
            problems.join("\n")
        );
    }
    out.print(&checked, || {
        let mut s = format!(
            "{}: team {}, {} teammate(s), {} task(s): the manifest is valid\n",
            a.manifest.display(),
            checked.team,
            checked.teammates,
            checked.tasks
        );
        for c in &checked.components {
            s.push_str(&format!(
                "ok {} for {} ({:.2}s; compiled into {})\n",
                c.path.display(),
                c.used_by.join(", "),
                c.seconds,
                home.component_cache().display()
            ));
        }
        s
    })
}

/// What `run` refuses before it starts: a teammate's directory that holds
/// the manifest, a component, the home or the cache. A directory left out
/// (`work/{name}`, made by `run`) is not made here.
fn check_layout(home: &Home, file: &Path, m: &Manifest) -> anyhow::Result<()> {
    let mut protected = home.protected_paths(None);
    protected.extend(m.protected_paths(file));
    let checker = crate::layout::Checker::new(&protected);
    let mut problems = Vec::new();
    for t in &m.teammates {
        if t.isolation == IsolationSpec::None && !t.cwd_is_default {
            if let Err(e) = checker.check(&t.name, &t.cwd) {
                problems.push(format!("  - teammate {:?} cwd: {e}", t.name));
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "manifest {} has {} problem(s):\n{}",
        file.display(),
        problems.len(),
        problems.join("\n")
    )
}

fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let r = f();
    (start.elapsed(), r)
}
