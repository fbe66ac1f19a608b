//! Before a run: each teammate's component against its sources. A component
//! that is missing or older than the newest of its sources is built with
//! the teammate's `build` command from the manifest (`sh -c`, in its
//! `workdir`, its output on stderr); without a `build` command, a component
//! older than its sources is only warned about.
//!
//! | teammate has | sources | component missing | component older |
//! |---|---|---|---|
//! | `build` | `watch` globs under `workdir`, default every file under it | build | build |
//! | no `build` | the files a build reads ([`is_source`]: a crate's, a Python or JavaScript project's, the WIT) under the manifest's directory, when the component lies below it | (refused by the manifest check) | warning |
//!
//! Without a `build`, only what a build would read counts: a log, a
//! teammate's output or a note beside the manifest is not a source, and
//! changing one says nothing of the component's age.
//!
//! Never sources: build output and tool directories ([`SKIPPED`]), every
//! directory a teammate can write ([`Manifest::teammate_reachable`] and the
//! home, compared by real path: a teammate's files must not decide what is
//! built), components and the manifest. The walk starts at the workdir's
//! real path and follows no link, so every directory it enters is named by
//! its real path. A walk stops after [`MAX_FILES`] files (then the
//! component is taken as up to date).
//!
//! The command is the person's own, from the manifest. Nothing a teammate
//! wrote is run or read by it:
//!
//! 1. its workdir and the path-like words of its command may not lie in a
//!    directory a teammate can write, by real path: checked with the
//!    manifest, and again here with the home, just before it runs;
//! 2. it runs in the workdir's real path (no link left for a teammate to
//!    turn);
//! 3. where the host may make a mount namespace (root, as on CI), it runs
//!    in one of its own in which each of those directories is covered by an
//!    empty read-only tmpfs, so even a command that reaches one by a route
//!    no check spells out (`cd work; cd mallory; sh build.sh`) finds
//!    nothing there. Elsewhere 1 and 2 hold alone, and the build's line
//!    says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

use anyhow::Context;

use super::build_jail::hider;
use crate::manifest::reachable::real_path;
use crate::manifest::{Manifest, Reachable, TeammateSpec};

/// Directories never taken as sources, at any depth.
const SKIPPED: &[&str] = &[
    "target",
    ".git",
    "node_modules",
    "__pycache__",
    "bindings",
    "types",
];

/// How many files one source walk looks at, at most.
const MAX_FILES: usize = 20_000;

/// Builds what is stale, warns about what is stale without a build (one
/// line each on stderr), for every distinct component of `m`, the manifest
/// at `file`; nothing under `home` is a source. Fails when a build fails or
/// leaves no component.
pub(super) fn build_stale(file: &Path, m: &Manifest, home: &Path) -> anyhow::Result<()> {
    // Compared with the manifest's paths, which are absolute.
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (file, home) = (&absolute(file), &absolute(home));
    let mut reachable = m.teammate_reachable();
    reachable.add(home);
    let mut done: Vec<&Path> = Vec::new();
    for t in &m.teammates {
        if done.contains(&t.component.as_path()) {
            continue;
        }
        done.push(&t.component);
        match (&t.build, staleness(file, m, t, &reachable)) {
            (_, Stale::No) => {}
            (Some(b), why) => {
                let who = format!("teammate {:?}", t.name);
                let problems = b.reach_problems(&who, &reachable);
                if !problems.is_empty() {
                    anyhow::bail!(
                        "refusing to build {}: {}",
                        t.component.display(),
                        problems.join("; ")
                    );
                }
                run_build(t, &b.0.command, &b.0.workdir, &why, &reachable)?
            }
            (None, Stale::Older(source)) => eprintln!(
                "warning: {} is older than its source {} (changed after the build): rebuild it, or give teammate {:?} a build command in the manifest (build = \"cargo build --release\") so that `teamhost run` rebuilds it",
                t.component.display(),
                source.display(),
                t.name
            ),
            (None, Stale::Missing) => {}
        }
    }
    Ok(())
}

/// Why a component needs building.
#[derive(Debug, PartialEq)]
enum Stale {
    No,
    Missing,
    /// The newest source, changed after the component.
    Older(PathBuf),
}

fn staleness(file: &Path, m: &Manifest, t: &TeammateSpec, reachable: &Reachable) -> Stale {
    let Ok(built) = std::fs::metadata(&t.component).and_then(|meta| meta.modified()) else {
        return Stale::Missing;
    };
    let base = file.parent().unwrap_or(Path::new("."));
    let (root, build) = match &t.build {
        Some(b) => (b.0.workdir.clone(), Some(b)),
        // Without a build, the project is the manifest's directory, when
        // the component is one of its files.
        None if lies_below(&t.component, base) => (base.to_path_buf(), None),
        None => return Stale::No,
    };
    // The walk names every path by its real path (it starts at the real
    // root and follows no link), so the exclusions are real paths too.
    let root = real_path(&root);
    if reachable.holds_real(&root) {
        return Stale::No;
    }
    let mut excluded: Vec<PathBuf> = m
        .teammates
        .iter()
        .map(|o| real_path(&o.component))
        .collect();
    excluded.push(real_path(file));
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    let mut budget = MAX_FILES;
    walk(
        &root,
        &root,
        &|path| reachable.holds_real(path) || excluded.iter().any(|e| path == e),
        &mut budget,
        &mut |rel, path, modified| {
            let counts = match build {
                Some(b) => b.watches(rel),
                None => is_source(path),
            };
            if counts && newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                newest = Some((modified, path.to_path_buf()));
            }
        },
    );
    match newest {
        Some((source, path)) if source > built && budget > 0 => Stale::Older(path),
        _ => Stale::No,
    }
}

/// Whether `path` is a file a component's build reads, without a `build`
/// command to say so: a Rust crate's (`*.rs`, `Cargo.toml`, `Cargo.lock`,
/// `.cargo/config.toml`), a Python project's (`*.py`, `pyproject.toml`,
/// `requirements.txt`), a JavaScript one's (`*.js`, `*.mjs`, `*.cjs`,
/// `*.ts`, `package.json`, `package-lock.json`, `tsconfig.json`), the WIT
/// contract (`*.wit`), or a `build` script.
fn is_source(path: &Path) -> bool {
    const NAMES: &[&str] = &[
        "Cargo.toml",
        "Cargo.lock",
        "pyproject.toml",
        "requirements.txt",
        "package.json",
        "package-lock.json",
        "tsconfig.json",
        "build",
    ];
    const EXTENSIONS: &[&str] = &["rs", "py", "js", "mjs", "cjs", "ts", "wit"];
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_cargo_dir = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|p| p == ".cargo");
    NAMES.contains(&name)
        || (name == "config.toml" && in_cargo_dir)
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e))
}

/// Whether `file` is under `dir`, their real paths compared: a lexical
/// `starts_with` takes `proj/../target/x.wasm` for a file of `proj`.
fn lies_below(file: &Path, dir: &Path) -> bool {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    match (std::fs::canonicalize(file), std::fs::canonicalize(dir)) {
        (Ok(file), Ok(dir)) => file.starts_with(dir),
        _ => false,
    }
}

/// Calls `seen(relative path, path, modified)` for every file under `dir`
/// but the excluded and skipped ones, while `budget` lasts.
fn walk(
    root: &Path,
    dir: &Path,
    excluded: &dyn Fn(&Path) -> bool,
    budget: &mut usize,
    seen: &mut dyn FnMut(&str, &Path, SystemTime),
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        let path = entry.path();
        if excluded(&path) {
            continue;
        }
        // Not followed: a link could lead anywhere, a loop forever.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !SKIPPED.iter().any(|s| entry.file_name() == *s) {
                walk(root, &path, excluded, budget, seen);
            }
        } else if kind.is_file() {
            *budget -= 1;
            if let (Ok(meta), Ok(rel)) = (entry.metadata(), path.strip_prefix(root)) {
                if let Ok(modified) = meta.modified() {
                    seen(&rel.to_string_lossy(), &path, modified);
                }
            }
        }
    }
}

/// Runs teammate `t`'s build `command` in `workdir`, its output on stderr,
/// saying why and how long it took; fails when it fails or leaves no
/// component.
fn run_build(
    t: &TeammateSpec,
    command: &str,
    workdir: &Path,
    why: &Stale,
    reachable: &Reachable,
) -> anyhow::Result<()> {
    // Its real path: no link left in it for a teammate to turn.
    let workdir = &real_path(workdir);
    let reason = match why {
        Stale::Older(source) => format!(
            "older than {}",
            source.strip_prefix(workdir).unwrap_or(source).display()
        ),
        _ => "not built yet".to_string(),
    };
    let file = t
        .component
        .file_name()
        .unwrap_or_default()
        .to_string_lossy();
    let hider = hider(reachable.real_dirs());
    eprintln!(
        "building {file} for {} ({reason}): {command}   (in {}; {})",
        t.name,
        workdir.display(),
        hider.describe()
    );
    let started = Instant::now();
    // Both streams to stderr: stdout stays the run's own (its --json).
    let stdout = {
        use std::os::fd::AsFd;
        std::io::stderr().as_fd().try_clone_to_owned()
    }
    .context("cannot pass stderr to the build")?;
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(command)
        .current_dir(workdir)
        .stdin(Stdio::null())
        .stdout(stdout);
    hider.apply(&mut sh);
    let status = sh
        .status()
        .with_context(|| format!("cannot start the build of {file} (sh -c {command:?})"))?;
    if !status.success() {
        anyhow::bail!(
            "the build of {file} for teammate {:?} failed ({command:?} in {} ended with {status}); nothing was started: fix the build (its output is above), then run again",
            t.name,
            workdir.display()
        );
    }
    if !t.component.is_file() {
        anyhow::bail!(
            "the build of {file} for teammate {:?} succeeded but left no {}: make `component` name the file the build writes",
            t.name,
            t.component.display()
        );
    }
    eprintln!("built {file} in {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}
