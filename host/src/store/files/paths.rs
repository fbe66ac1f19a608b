//! Where a team lives on disk, in the reference's layout.
//!
//! ```text
//! {home}/teams/{team}/config.json
//! {home}/teams/{team}/inboxes/{agent}.json
//! {home}/teams/{team}/history/{agent}.jsonl     (teamhost only: consumed messages)
//! {home}/tasks/{team}/{id}.json, .lock, .highwatermark
//! ```
//!
//! Every name is checked by [`crate::store::names`] before it becomes a path,
//! so a hostile name never becomes a surprising path. Only the file store
//! (this module's parent) builds these paths; everything else asks the store.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::store::names::{agent_file_stem, parse_task_id, sanitize_team_name};

/// The environment variable naming teamhost's home directory.
pub const HOME_ENV: &str = "TEAMHOST_HOME";

/// Root of a teamhost (or Claude Code) home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// Uses `root` as the home directory as is (it need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Home { root: root.into() }
    }

    /// Resolves the home: `flag` (from `--home`), else `$TEAMHOST_HOME`, else
    /// `~/.teamhost`. Fails only when none is set and `$HOME` is unknown.
    pub fn resolve(flag: Option<&Path>) -> Result<Self> {
        if let Some(dir) = flag {
            return Ok(Home::new(dir));
        }
        if let Some(dir) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
            return Ok(Home::new(dir));
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => Ok(Home::new(PathBuf::from(h).join(".teamhost"))),
            None => Err(Error::Home(
                "cannot find a home directory: pass --home DIR or set TEAMHOST_HOME".into(),
            )),
        }
    }

    /// Fails when the home cannot be a directory: a part of its path that
    /// exists is a file (`--home /tmp/somefile/home`). Naming that part, not
    /// whatever later read or write of a team would fail on. A home that
    /// does not exist yet is fine (it is made on the first write).
    pub fn check_usable(&self) -> Result<()> {
        for part in self.root.ancestors().filter(|p| !p.as_os_str().is_empty()) {
            match std::fs::metadata(part) {
                Ok(m) if m.is_dir() => return Ok(()),
                Ok(_) => {
                    return Err(Error::Home(format!(
                        "the home {} cannot be used: {} is a file, not a directory (every existing part of the home's path must be a directory; pass --home DIR or set {HOME_ENV})",
                        self.root.display(),
                        part.display()
                    )))
                }
                // Not there yet (or under a file, which a shorter part shows).
                Err(_) => continue,
            }
        }
        Ok(())
    }

    /// The home directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `{home}/teams`.
    pub fn teams_dir(&self) -> PathBuf {
        self.root.join("teams")
    }

    /// `{home}/tasks`.
    pub fn tasks_root(&self) -> PathBuf {
        self.root.join("tasks")
    }

    /// Paths of the team called `name` (sanitised). Refuses unusable names.
    pub fn team_paths(&self, name: &str) -> Result<TeamPaths> {
        let team = sanitize_team_name(name)?;
        Ok(TeamPaths {
            team_dir: self.teams_dir().join(&team),
            tasks_dir: self.tasks_root().join(&team),
            name: team,
        })
    }
}

/// Every path of one team. Built by [`Home::team_paths`]; the name is already
/// sanitised and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamPaths {
    name: String,
    team_dir: PathBuf,
    tasks_dir: PathBuf,
}

impl TeamPaths {
    /// The sanitised team name (the directory name).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `{home}/teams/{team}`.
    pub fn team_dir(&self) -> &Path {
        &self.team_dir
    }
    /// `{home}/teams/{team}/config.json`.
    pub fn config(&self) -> PathBuf {
        self.team_dir.join("config.json")
    }
    /// `{home}/teams/{team}/inboxes`.
    pub fn inboxes_dir(&self) -> PathBuf {
        self.team_dir.join("inboxes")
    }
    /// `{home}/teams/{team}/inboxes/{agent}.json` (agent name checked, `@` → `-`).
    pub fn inbox(&self, agent: &str) -> Result<PathBuf> {
        Ok(self
            .inboxes_dir()
            .join(format!("{}.json", agent_file_stem(agent)?)))
    }
    /// `{home}/teams/{team}/history`: consumed messages, one JSONL file per agent.
    pub fn history_dir(&self) -> PathBuf {
        self.team_dir.join("history")
    }
    /// `{home}/teams/{team}/history/{agent}.jsonl`.
    pub fn history(&self, agent: &str) -> Result<PathBuf> {
        Ok(self
            .history_dir()
            .join(format!("{}.jsonl", agent_file_stem(agent)?)))
    }
    /// `{home}/teams/{team}/usage`: one model-usage record per agent.
    pub fn usage_dir(&self) -> PathBuf {
        self.team_dir.join("usage")
    }
    /// `{home}/teams/{team}/usage/{agent}.json`.
    pub fn usage(&self, agent: &str) -> Result<PathBuf> {
        Ok(self
            .usage_dir()
            .join(format!("{}.json", agent_file_stem(agent)?)))
    }
    /// `{home}/teams/{team}/plans`: plans submitted for approval.
    pub fn plans_dir(&self) -> PathBuf {
        self.team_dir.join("plans")
    }
    /// `{home}/tasks/{team}`.
    pub fn tasks_dir(&self) -> &Path {
        &self.tasks_dir
    }
    /// `{home}/tasks/{team}/{id}.json` (id must be a decimal number).
    pub fn task(&self, id: &str) -> Result<PathBuf> {
        parse_task_id(id)?;
        Ok(self.tasks_dir.join(format!("{id}.json")))
    }
    /// `{home}/tasks/{team}/.lock`: the file whose lock guards the whole list.
    pub fn tasks_lock_target(&self) -> PathBuf {
        self.tasks_dir.join(".lock")
    }
    /// `{home}/tasks/{team}/.highwatermark`.
    pub fn highwatermark(&self) -> PathBuf {
        self.tasks_dir.join(".highwatermark")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::names::agent_id;

    #[test]
    fn agent_inbox_paths_replace_at_with_dash() {
        let home = Home::new("/h");
        let team = home.team_paths("T").unwrap();
        assert_eq!(
            team.inbox("alice@t").unwrap(),
            PathBuf::from("/h/teams/t/inboxes/alice-t.json")
        );
        assert_eq!(
            team.task("12").unwrap(),
            PathBuf::from("/h/tasks/t/12.json")
        );
        assert_eq!(agent_id("alice", "t"), "alice@t");
    }

    #[test]
    fn home_flag_wins_over_environment() {
        let h = Home::resolve(Some(Path::new("/x"))).unwrap();
        assert_eq!(h.root(), Path::new("/x"));
    }
}
