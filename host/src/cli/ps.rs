//! `teamhost ps [-a]`: the teams this machine runs, like `docker ps`: one
//! line per teammate with its team's state, its host's pid and its own,
//! each alive or dead by pid and start time ([`super::team_state`]).
//! Without `-a`, only teams whose host or a teammate process is alive.
//! With `-a`, a team whose files are gone but whose records this machine
//! keeps (a lead deleted it, its kept conversation stays) is `deleted`,
//! never `idle`: `idle` means a team that exists.

use clap::Args;

use super::output::push_line;
use super::team_state::TeamState;
use super::Output;
use crate::home::Home;
use crate::store::Store;

/// Arguments of `teamhost ps`.
#[derive(Debug, Args)]
pub struct PsArgs {
    /// Also the teams whose host is gone (what a crash or a stop left),
    /// teams no teamhost host ran, and deleted teams this machine still
    /// keeps records of (state `deleted`: nothing of them runs).
    #[arg(short, long)]
    all: bool,
}

pub(super) fn ps(home: &Home, store: &Store, out: &Output, a: PsArgs) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for name in team_names(home, store)? {
        let Ok(team) = store.team(&name) else {
            continue;
        };
        let state = TeamState::of(home, &team)?;
        let alive = state.host.as_ref().is_some_and(|h| h.alive)
            || state.teammates.iter().any(|t| t.process.alive);
        if a.all || alive {
            rows.push(state);
        }
    }
    out.print(&rows, || {
        if rows.is_empty() {
            return if a.all {
                "no teams".to_string()
            } else {
                "no team runs on this machine (`teamhost ps -a` lists the stopped ones too)"
                    .to_string()
            };
        }
        let mut s = String::new();
        push_line(
            &mut s,
            format!(
                "{:<20} {:<8} {:<13} {:<20} {:<11} PID",
                "TEAM", "STATE", "HOST", "TEAMMATE", "BACKEND"
            ),
        );
        for r in &rows {
            let host = r.host.as_ref().map_or("-".into(), |h| h.describe());
            if r.teammates.is_empty() {
                push_line(
                    &mut s,
                    format!(
                        "{:<20} {:<8} {:<13} {:<20} {:<11} -",
                        r.team,
                        r.state.name(),
                        host,
                        "-",
                        "-"
                    ),
                );
            }
            for t in &r.teammates {
                push_line(
                    &mut s,
                    format!(
                        "{:<20} {:<8} {:<13} {:<20} {:<11} {}",
                        r.team,
                        r.state.name(),
                        host,
                        t.name,
                        t.backend,
                        t.process.describe()
                    ),
                );
            }
        }
        s
    })
}

/// The teams of the store and those the home keeps records of (a host may
/// have died after its team's files went).
fn team_names(home: &Home, store: &Store) -> anyhow::Result<Vec<String>> {
    let mut names = store.list_teams()?;
    // `{home}/kept/`, `{home}/started/`: one folder per team.
    let roots = [home.kept_dir("_"), home.started_dir("_")];
    for dir in roots.iter().filter_map(|d| d.parent()) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            if let Some(n) = e.file_name().to_str() {
                if e.path().is_dir() && !names.iter().any(|x| x == n) {
                    names.push(n.to_string());
                }
            }
        }
    }
    names.sort();
    Ok(names)
}
