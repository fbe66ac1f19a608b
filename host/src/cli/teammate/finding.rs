//! Where `teamhost teammate` runs: its home (Claude Code's or teamhost's),
//! its component, its identity from the flags, and the task list a Claude
//! Code lead names.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::home::Home;

use super::TeammateArgs;

/// The home `teamhost teammate` works in, and whether it is Claude Code's
/// (then teamhost's own files, such as the component cache, stay in
/// teamhost's usual home). See the module docs.
pub fn teammate_home(flag: Option<&Path>) -> anyhow::Result<(Home, bool)> {
    if let Some(dir) = flag {
        return Ok((Home::new(dir), false));
    }
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        return Ok((Home::new(dir), true));
    }
    if std::env::var("CLAUDECODE").is_ok_and(|v| v == "1") {
        if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            return Ok((Home::new(PathBuf::from(h).join(".claude")), true));
        }
    }
    Ok((Home::resolve(None)?, false))
}

/// Finds the component: `wanted` (flag or `$TEAMHOST_COMPONENT`) as a path or
/// a name, else the agent's name, then its type, as names.
pub(super) fn resolve_component(
    wanted: Option<&str>,
    name: &str,
    agent_type: &str,
) -> anyhow::Result<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("TEAMHOST_COMPONENT_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    if let Ok(home) = Home::resolve(None) {
        dirs.push(home.components());
    }
    let find = |n: &str| {
        dirs.iter()
            .map(|d| d.join(format!("{n}.wasm")))
            .find(|p| p.is_file())
    };
    if let Some(w) = wanted.filter(|w| !w.is_empty()) {
        let as_path = Path::new(w);
        if w.contains('/') || w.ends_with(".wasm") || as_path.is_file() {
            if !as_path.is_file() {
                bail!("the component {w} does not exist (from --component or TEAMHOST_COMPONENT)");
            }
            return Ok(std::path::absolute(as_path)?);
        }
        return find(w).ok_or_else(|| {
            anyhow::anyhow!(
                "no component named {w:?}: looked for {w}.wasm in {}; pass a path instead",
                shown_dirs(&dirs)
            )
        });
    }
    if let Some(p) = find(name).or_else(|| find(agent_type)) {
        return Ok(p);
    }
    bail!(
        "no component for teammate {name}: pass --component PATH, or set TEAMHOST_COMPONENT=/path/to/teammate.wasm \
         (a Claude Code lead runs CLAUDE_CODE_TEAMMATE_COMMAND with its own flags, so use a wrapper script: \
         `#!/bin/sh` then `TEAMHOST_COMPONENT=/path/to/teammate.wasm exec teamhost teammate \"$@\"`), \
         or put {name}.wasm or {agent_type}.wasm in {}",
        shown_dirs(&dirs)
    )
}

pub(super) fn shown_dirs(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        "$TEAMHOST_COMPONENT_PATH (unset)".into()
    } else {
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The store with the task list a Claude Code 2.1.332 lead names in
/// `CLAUDE_CODE_TASK_LIST_ID` (its list id, when it differs from the team
/// name): the tasks are then in `tasks/{id}/`. Files only: a NATS team has
/// one list.
pub(super) fn task_list(
    store: crate::store::Store,
    team: &str,
) -> anyhow::Result<crate::store::Store> {
    let Some(list) = std::env::var("CLAUDE_CODE_TASK_LIST_ID")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        return Ok(store);
    };
    let Some(files) = store.file_store() else {
        tracing::warn!(%list, "CLAUDE_CODE_TASK_LIST_ID is ignored: the team is on a NATS store, with one task list");
        return Ok(store);
    };
    let files = files
        .clone()
        .with_task_list(team, &list)
        .with_context(|| format!("CLAUDE_CODE_TASK_LIST_ID={list:?} cannot name a task list"))?;
    Ok(crate::store::Store::with_backend(std::sync::Arc::new(
        files,
    )))
}

/// Name and team from the flags.
pub(super) fn identity(a: &TeammateArgs) -> anyhow::Result<(String, String)> {
    let (id_name, id_team) = match a.agent_id.as_deref().map(|id| id.split_once('@')) {
        Some(Some((n, t))) => (Some(n.to_string()), Some(t.to_string())),
        Some(None) => bail!(
            "--agent-id {:?} is not NAME@TEAM",
            a.agent_id.as_deref().unwrap_or_default()
        ),
        None => (None, None),
    };
    let pick =
        |flag: &Option<String>, from_id: Option<String>, what: &str| -> anyhow::Result<String> {
            match (flag, from_id) {
                (Some(f), Some(i))
                    if *f != i
                        && crate::store::names::sanitize_team_name(f).ok()
                            != crate::store::names::sanitize_team_name(&i).ok() =>
                {
                    bail!("--agent-id says {what} {i:?} but --{what}-name says {f:?}")
                }
                (Some(f), _) => Ok(f.clone()),
                (None, Some(i)) => Ok(i),
                (None, None) => bail!(
                    "which teammate? pass --agent-id NAME@TEAM (or --agent-name and --team-name)"
                ),
            }
        };
    let name = pick(&a.agent_name, id_name, "agent")?;
    let team = pick(&a.team_name, id_team, "team")?;
    Ok((name, team))
}
