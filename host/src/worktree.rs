//! Per-teammate git worktrees (`isolation = "worktree"`).
//!
//! A teammate isolated in a worktree gets, as its one capability directory, a
//! fresh checkout of the repository its `cwd` belongs to, at
//! `{home}/worktrees/{team}/{name}` on branch `teamhost/{team}/{name}`. When the
//! team is deleted, a worktree without changes (tracked or untracked) is
//! removed with its branch; one with changes is kept and reported, so work is
//! never thrown away.
//!
//! # The host's git never reads what the teammate wrote
//!
//! The teammate owns every file of its worktree, `.git` included: it can point
//! `.git` at a git directory of its own making, with a `core.fsmonitor`, hooks
//! or a pager that would run as the host's user the moment the host ran `git
//! status` there. So every git the host runs for a worktree is [`pinned`]:
//!
//! - the git directory and work tree are given explicitly, from a record the
//!   host wrote when it made the worktree (`{home}/worktrees/{team}/{name}.json`,
//!   beside the worktree, outside the teammate's directory): the worktree's
//!   own `.git` file is never read;
//! - the environment is cleared (no `GIT_*` variable of the host's), system
//!   and global config are off (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`),
//!   and `-c` options turn off every config key of the trusted repository
//!   that runs a program during `status`, `worktree` or `branch`: hooks,
//!   fsmonitor, pagers, `diff.external`, `core.sshCommand`, the untracked
//!   cache;
//! - the config git reads is the repository's own (`{repo}/.git/config`) and the
//!   worktree's `config.worktree` in the repository's `.git/worktrees/`, both
//!   outside the teammate's reach. A `.gitattributes` in the worktree can only
//!   select drivers that trusted config defines.
//!
//! A worktree without a record (made by an older teamhost, or whose record
//! is unreadable) is never touched: cleanup keeps it and reports it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::home::Home;

/// Where `name`'s worktree of `team` lives.
pub fn path(home: &Home, team: &str, name: &str) -> PathBuf {
    home.worktree(team, name)
}

/// The branch of `name`'s worktree.
pub fn branch(team: &str, name: &str) -> String {
    format!("teamhost/{team}/{name}")
}

/// What the host recorded about a worktree when it made it: the only source
/// of the paths its git runs with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    /// The repository's common git directory (`{repo}/.git`).
    common_dir: PathBuf,
    /// The worktree's own git directory (`{repo}/.git/worktrees/{id}`).
    git_dir: PathBuf,
    /// The worktree.
    work_tree: PathBuf,
    /// Its branch.
    branch: String,
}

fn record_path(wt: &Path) -> PathBuf {
    let mut name = wt.file_name().unwrap_or_default().to_os_string();
    name.push(".json");
    wt.with_file_name(name)
}

impl Record {
    fn load(wt: &Path) -> Option<Record> {
        let text = std::fs::read_to_string(record_path(wt)).ok()?;
        let record: Record = serde_json::from_str(&text).ok()?;
        (record.work_tree == wt).then_some(record)
    }

    fn save(&self) -> Result<()> {
        crate::durable::write_json(&record_path(&self.work_tree), self)
    }
}

/// Creates (or resets) `name`'s worktree of the repository containing `cwd`,
/// at `HEAD`, and returns its path.
pub fn create(home: &Home, team: &str, name: &str, cwd: &Path) -> Result<PathBuf> {
    let top = pinned(cwd, None, &["rev-parse", "--show-toplevel"]).map_err(|e| {
        Error::Worktree(format!(
            "isolation = \"worktree\" needs {} to be inside a git repository: {e}",
            cwd.display()
        ))
    })?;
    let top = PathBuf::from(top.trim());
    let common = pinned(
        &top,
        None,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .map_err(|e| {
        Error::Worktree(format!(
            "cannot find the git directory of {}: {e}",
            top.display()
        ))
    })?;
    let common = canonical(Path::new(common.trim()));
    add(home, team, name, &top, &common, "HEAD")
}

/// Makes `name`'s worktree of the repository whose top is `top` and whose
/// common git directory is `common` (both trusted: found from the lead's
/// directory, or from a record the host wrote), at `start`.
fn add(
    home: &Home,
    team: &str,
    name: &str,
    top: &Path,
    common: &Path,
    start: &str,
) -> Result<PathBuf> {
    let (top, common) = (top.to_path_buf(), common.to_path_buf());
    let wt = path(home, team, name);
    if wt.exists() {
        // A leftover of an earlier run with the same name: reuse it only if
        // the host made it and it is clean, never overwrite work.
        let Some(record) = Record::load(&wt) else {
            return Err(Error::Worktree(format!(
                "{} already exists and teamhost has no record of making it; move it away",
                wt.display()
            )));
        };
        if !is_clean(&record)? {
            return Err(Error::Worktree(format!(
                "{} already exists with changes; move it away or commit them first",
                wt.display()
            )));
        }
        let _ = pinned(
            &top,
            Some(&record.common_dir),
            &["worktree", "remove", "--force", &wt.to_string_lossy()],
        );
    }
    if let Some(parent) = wt.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    pinned(
        &top,
        Some(&common),
        &[
            "worktree",
            "add",
            "-B",
            &branch(team, name),
            &wt.to_string_lossy(),
            start,
        ],
    )
    .map_err(|e| Error::Worktree(format!("cannot create a worktree for {name}: {e}")))?;
    // The worktree's git directory, read from the `.git` file git just wrote,
    // before the teammate exists: from here on only this record is believed.
    let git_dir = std::fs::read_to_string(wt.join(".git"))
        .ok()
        .and_then(|t| {
            t.trim()
                .strip_prefix("gitdir:")
                .map(|p| canonical(&wt.join(p.trim())))
        })
        .filter(|p| p.starts_with(common.join("worktrees")))
        .ok_or_else(|| {
            Error::Worktree(format!(
                "git made {} without a git directory under {}",
                wt.display(),
                common.join("worktrees").display()
            ))
        })?;
    Record {
        common_dir: common,
        git_dir,
        work_tree: wt.clone(),
        branch: branch(team, name),
    }
    .save()?;
    Ok(wt)
}

/// Creates `name`'s worktree from the worktree `parent` that teamhost made
/// (a sub-agent's `isolation: worktree`), at `parent`'s branch: the same
/// repository, its committed state. Only the host's record of `parent` is
/// believed (its repository, git directory and branch); a directory without
/// one is refused, since its `.git` is its owner's to forge (pointing it at
/// another repository would check out files its owner cannot reach).
pub fn create_from(home: &Home, team: &str, name: &str, parent: &Path) -> Result<PathBuf> {
    let record = Record::load(parent).ok_or_else(|| {
        Error::Worktree(format!(
            "a sub-agent's worktree is made only from a worktree teamhost made for its parent \
             (spawn the teammate with isolation = \"worktree\"); {} has no such record, and \
             the .git of a teammate's own directory is not trusted",
            parent.display()
        ))
    })?;
    let top = record
        .common_dir
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::Worktree("the parent's worktree record has no repository".into()))?;
    add(home, team, name, &top, &record.common_dir, &record.branch)
}

/// `path` with links resolved where it exists, as given otherwise.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// What [`cleanup`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Worktrees without changes, removed with their branches.
    pub removed: Vec<PathBuf>,
    /// Worktrees with changes, or that teamhost has no record of making, left
    /// in place.
    pub kept: Vec<PathBuf>,
}

/// Removes the team's clean worktrees and reports the ones with changes.
pub fn cleanup(home: &Home, team: &str) -> Result<Cleanup> {
    let dir = home.team_worktrees(team);
    let mut report = Cleanup::default();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(Error::io("read", dir, e)),
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for wt in paths {
        // Not `is_dir`: a worktree replaced by a link is not followed.
        let is_dir = std::fs::symlink_metadata(&wt).is_ok_and(|m| m.is_dir());
        if !is_dir {
            continue;
        }
        if remove_if_clean(home, &wt)? {
            report.removed.push(wt);
        } else {
            report.kept.push(wt);
        }
    }
    let _ = std::fs::remove_dir(&dir); // only when empty
    Ok(report)
}

/// Removes the worktree at `wt` (one [`create`] made) with its branch when it
/// is clean, and returns `true`; returns `false`, touching nothing, when it
/// has changes or teamhost has no record of making it. A sub-agent's
/// worktree is removed this way when the sub-agent ends.
pub fn remove_if_clean(home: &Home, wt: &Path) -> Result<bool> {
    let wt = wt.to_path_buf();
    let Some(record) = Record::load(&wt) else {
        tracing::warn!(worktree = %wt.display(), "no record of making this worktree: kept, git not run in it");
        return Ok(false);
    };
    if !is_clean(&record)? {
        return Ok(false);
    }
    let removed = pinned(
        home.root(),
        Some(&record.common_dir),
        &["worktree", "remove", "--force", &wt.to_string_lossy()],
    );
    if let Err(e) = removed {
        // git refuses a worktree whose `.git` the teammate replaced: it
        // is clean by the host's own reading, so remove it by hand (std's
        // remove_dir_all follows no link) and let git forget it.
        tracing::info!(worktree = %wt.display(), error = %e, "removing a worktree git does not recognise");
        std::fs::remove_dir_all(&wt).map_err(|e| Error::io("remove", &wt, e))?;
        let _ = pinned(
            home.root(),
            Some(&record.common_dir),
            &["worktree", "prune"],
        );
    }
    // The branch holds no work of its own: drop it too (best effort).
    let _ = pinned(
        home.root(),
        Some(&record.common_dir),
        &["branch", "-D", &record.branch],
    );
    let _ = std::fs::remove_file(record_path(&wt));
    Ok(true)
}

/// `git status` of the worktree, through the recorded git directory.
fn is_clean(record: &Record) -> Result<bool> {
    let wt = &record.work_tree;
    let status = pinned_in(
        wt,
        &record.git_dir,
        Some(wt),
        &["status", "--porcelain", "--untracked-files=all"],
    )
    .map_err(|e| Error::Worktree(format!("cannot inspect {}: {e}", wt.display())))?;
    Ok(status.trim().is_empty())
}

/// Config that keeps every program out of the host's git: set on the command
/// line, it overrides the repository's own config.
const NO_PROGRAMS: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.pager=cat",
    "core.editor=false",
    "core.sshCommand=false",
    "diff.external=",
    "credential.helper=",
    "protocol.allow=never",
];

/// Runs git in `dir`, with `git_dir` as the git directory when given (else
/// git finds it from `dir`, which is only ever a directory the host trusts:
/// the lead's repository or the home). See [`pinned_in`].
fn pinned(
    dir: &Path,
    git_dir: Option<&Path>,
    args: &[&str],
) -> std::result::Result<String, String> {
    match git_dir {
        Some(g) => pinned_in(dir, g, None, args),
        None => run(git_command(dir), args),
    }
}

/// Runs git in `dir` with its git directory (and work tree) pinned, a
/// cleared environment and [`NO_PROGRAMS`]; the error carries git's stderr.
fn pinned_in(
    dir: &Path,
    git_dir: &Path,
    work_tree: Option<&Path>,
    args: &[&str],
) -> std::result::Result<String, String> {
    let mut cmd = git_command(dir);
    cmd.arg("--git-dir").arg(git_dir);
    if let Some(wt) = work_tree {
        cmd.arg("--work-tree").arg(wt);
    }
    run(cmd, args)
}

fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", "/nonexistent")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LANG", "C")
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    for c in NO_PROGRAMS {
        cmd.args(["-c", c]);
    }
    cmd
}

fn run(mut cmd: Command, args: &[&str]) -> std::result::Result<String, String> {
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}
