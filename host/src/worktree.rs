//! Per-teammate git worktrees (`isolation = "worktree"`).
//!
//! A teammate isolated in a worktree gets, as its one capability directory, a
//! fresh checkout of the repository its `cwd` belongs to, at
//! `{home}/worktrees/{team}/{name}` on branch `teamhost/{team}/{name}`. When the
//! team is deleted, a worktree without changes (tracked or untracked) is
//! removed with its branch; one with changes is kept and reported, so work is
//! never thrown away.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::store::Home;

/// Where `name`'s worktree of `team` lives.
pub fn path(home: &Home, team: &str, name: &str) -> PathBuf {
    home.root().join("worktrees").join(team).join(name)
}

/// The branch of `name`'s worktree.
pub fn branch(team: &str, name: &str) -> String {
    format!("teamhost/{team}/{name}")
}

/// Creates (or resets) `name`'s worktree of the repository containing `cwd`,
/// at `HEAD`, and returns its path.
pub fn create(home: &Home, team: &str, name: &str, cwd: &Path) -> Result<PathBuf> {
    let top = git(cwd, &["rev-parse", "--show-toplevel"]).map_err(|e| {
        Error::Invalid(format!(
            "isolation = \"worktree\" needs {} to be inside a git repository: {e}",
            cwd.display()
        ))
    })?;
    let top = PathBuf::from(top.trim());
    let wt = path(home, team, name);
    if wt.exists() {
        // A leftover of an earlier run with the same name: reuse it only if it
        // is clean, never overwrite work.
        if !is_clean(&wt)? {
            return Err(Error::Invalid(format!(
                "{} already exists with changes; move it away or commit them first",
                wt.display()
            )));
        }
        let _ = git(
            &top,
            &["worktree", "remove", "--force", &wt.to_string_lossy()],
        );
    }
    if let Some(parent) = wt.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    git(
        &top,
        &[
            "worktree",
            "add",
            "-B",
            &branch(team, name),
            &wt.to_string_lossy(),
            "HEAD",
        ],
    )
    .map_err(|e| Error::Invalid(format!("cannot create a worktree for {name}: {e}")))?;
    Ok(wt)
}

/// What [`cleanup`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Worktrees without changes, removed with their branches.
    pub removed: Vec<PathBuf>,
    /// Worktrees with changes, left in place.
    pub kept: Vec<PathBuf>,
}

/// Removes the team's clean worktrees and reports the ones with changes.
pub fn cleanup(home: &Home, team: &str) -> Result<Cleanup> {
    let dir = home.root().join("worktrees").join(team);
    let mut report = Cleanup::default();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(Error::io("read", dir, e)),
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for wt in paths {
        if !wt.is_dir() {
            continue;
        }
        if is_clean(&wt)? {
            let name = wt
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let common = git(
                &wt,
                &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            );
            git(&wt, &["worktree", "remove", &wt.to_string_lossy()])
                .map_err(|e| Error::Invalid(format!("cannot remove {}: {e}", wt.display())))?;
            // The branch holds no work of its own: drop it too (best effort).
            if let Ok(common) = common {
                let repo = PathBuf::from(common.trim());
                let _ = Command::new("git")
                    .arg("--git-dir")
                    .arg(&repo)
                    .args(["branch", "-D", &branch(team, &name)])
                    .output();
            }
            report.removed.push(wt);
        } else {
            report.kept.push(wt);
        }
    }
    let _ = std::fs::remove_dir(&dir); // only when empty
    Ok(report)
}

fn is_clean(wt: &Path) -> Result<bool> {
    let status = git(wt, &["status", "--porcelain", "--untracked-files=all"])
        .map_err(|e| Error::Invalid(format!("cannot inspect {}: {e}", wt.display())))?;
    Ok(status.trim().is_empty())
}

/// Runs git in `dir`; the error carries git's stderr.
fn git(dir: &Path, args: &[&str]) -> std::result::Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}
