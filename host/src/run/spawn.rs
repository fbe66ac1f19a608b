//! Starting a run's teammates: every distinct component compiled once, all
//! at once ([`compile_all`]), then the teammates spawned as one batch
//! ([`start_all`]); after a resume, the manifest's teammates that never
//! joined ([`join_missing`]).

use std::path::Path;

use anyhow::Context;

use super::narrator::Narrator;
use crate::embed::Host;
use crate::manifest::Manifest;
use crate::store::Team;

/// Compiles every distinct component of the manifest at once (each once, in
/// parallel, before any teammate starts: a large component does not hold the
/// others back; meanwhile the live view shows its teammates `compiling`),
/// then starts the teammates ([`start_all`]), each in the
/// colour of its place in the manifest.
pub(super) async fn spawn_all(
    host: &Host,
    team: &Team,
    m: &Manifest,
    narrator: &dyn Narrator,
) -> anyhow::Result<()> {
    compile_all(host, team, m, narrator).await?;
    start_all(host, team, m, narrator, true).await
}

/// After a resume: spawns the manifest's teammates that never joined (the
/// host died before it got to them). A teammate that could not come back
/// fails the run.
pub(super) async fn join_missing(
    host: &Host,
    team: &Team,
    m: &Manifest,
    config: &crate::store::TeamConfig,
    report: &crate::embed::ResumeReport,
    narrator: &dyn Narrator,
) -> anyhow::Result<()> {
    let mut missing = m.clone();
    missing
        .teammates
        .retain(|t| config.member(&t.name).is_none());
    if !missing.teammates.is_empty() {
        compile_all(host, team, &missing, narrator).await?;
        start_all(host, team, &missing, narrator, false).await?;
    }
    if let Some((name, why)) = report.failed.first() {
        anyhow::bail!("{name} could not be brought back: {why}");
    }
    Ok(())
}

/// Starts the manifest's teammates with [`Host::spawn_many`] (their
/// registrations share the config's writes; their components are loaded
/// already), each in the colour of its place in the manifest when
/// `place_colours`, else in the first colour no member has. Every
/// teammate is tried; the error is the first failure in the manifest's
/// order.
pub async fn start_all(
    host: &Host,
    team: &Team,
    m: &Manifest,
    narrator: &dyn Narrator,
    place_colours: bool,
) -> anyhow::Result<()> {
    let colours = crate::store::config::COLORS;
    let mut requests = Vec::with_capacity(m.teammates.len());
    for (i, t) in m.teammates.iter().enumerate() {
        let file = t
            .component
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        narrator.line(
            &t.name,
            format!(
                "joins: {file}, mode {}, in {}",
                t.mode,
                shown(&t.cwd).display()
            ),
        );
        let mut req = t.spawn_request();
        if place_colours {
            req.color = Some(colours[i % colours.len()].to_string());
        }
        requests.push(req);
    }
    let names: Vec<String> = requests.iter().map(|r| r.name.clone()).collect();
    let started = host.spawn_many(team.name(), requests).await?;
    // The first failure, in the manifest's order; whoever started is shut
    // down with the team.
    for (name, result) in names.iter().zip(started) {
        result.with_context(|| format!("cannot spawn teammate {name:?}"))?;
    }
    Ok(())
}

/// Loads (compiling when not cached) every distinct component of `m`
/// through [`Host::compile`] (which shows the teammates waiting for each as
/// `compiling`), smallest file first, and says once per component that it
/// compiles, once (after 10 s) that a slow one still does, and once how
/// long it took. The compilations themselves take
/// turns in the runtime's queue, sized to the cores (each uses all of
/// them): a small component is not held behind a large one, and none is
/// slowed by the others.
pub async fn compile_all(
    host: &Host,
    team: &Team,
    m: &Manifest,
    narrator: &dyn Narrator,
) -> anyhow::Result<()> {
    let mut components: std::collections::BTreeMap<&Path, Vec<String>> = Default::default();
    for t in &m.teammates {
        components
            .entry(t.component.as_path())
            .or_default()
            .push(t.name.clone());
    }
    let mut components: Vec<(&Path, Vec<String>)> = components.into_iter().collect();
    components.sort_by_key(|(path, _)| std::fs::metadata(path).map_or(u64::MAX, |m| m.len()));
    let mut loading = tokio::task::JoinSet::new();
    let mut pending: Vec<String> = Vec::new();
    for (path, names) in components {
        let file = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        narrator.line(
            "run",
            format!(
                "compiling {file} for {} (cached after the first time)…",
                some_names(&names)
            ),
        );
        pending.push(file.clone());
        let (host, team, path) = (host.clone(), team.name().to_string(), path.to_path_buf());
        loading.spawn(async move {
            let r = host.compile(&team, &path, &names).await;
            (file, path, r)
        });
    }
    // A slow compile (a Python or JS component: tens of seconds the first
    // time) is said to go on once, so a quiet minute does not look stuck.
    let still = tokio::time::sleep(STILL_AFTER);
    tokio::pin!(still);
    let mut told = false;
    loop {
        tokio::select! {
            done = loading.join_next() => {
                let Some(done) = done else { break };
                let (file, path, r) = done.map_err(|e| anyhow::anyhow!("compiling panicked: {e}"))?;
                let took = r.with_context(|| format!("cannot load component {}", path.display()))?;
                pending.retain(|f| *f != file);
                narrator.line("run", format!("{file} ready in {:.2}s", took.as_secs_f64()));
            }
            () = &mut still, if !told => {
                told = true;
                for file in &pending {
                    narrator.line(
                        "run",
                        format!("still compiling {file} ({} s so far; one at a time per two cores)", STILL_AFTER.as_secs()),
                    );
                }
            }
        }
    }
    Ok(())
}

/// How long a compile runs before `run` says, once, that it goes on.
const STILL_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// `a, b and c`; past three names, `a, b, c and N more`.
fn some_names(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [most @ .., last] if names.len() <= 3 => format!("{} and {last}", most.join(", ")),
        [first @ .., _] => format!("{} and {} more", first[..3].join(", "), names.len() - 3),
    }
}

/// `path` relative to the current directory when it is below it.
fn shown(path: &Path) -> &Path {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::some_names;

    #[test]
    fn a_compile_line_names_up_to_three_teammates() {
        let names = |n: usize| -> Vec<String> { (1..=n).map(|i| format!("t{i}")).collect() };
        assert_eq!(some_names(&names(1)), "t1");
        assert_eq!(some_names(&names(2)), "t1 and t2");
        assert_eq!(some_names(&names(3)), "t1, t2 and t3");
        assert_eq!(some_names(&names(1000)), "t1, t2, t3 and 997 more");
    }
}
