//! Where a team lives on disk, in the reference's layout, under the
//! directory the file store was given (the host's home, [`crate::home`],
//! for `teamhost`; any directory for an embedder or a test):
//!
//! ```text
//! {root}/teams/{team}/config.json
//! {root}/teams/{team}/inboxes/{agent}.json
//! {root}/teams/{team}/history/{agent}.jsonl     (teamhost only: consumed messages)
//! {root}/tasks/{team}/{id}.json, .lock, .highwatermark
//! ```
//!
//! Every name is checked by [`crate::store::names`] before it becomes a path,
//! so a hostile name never becomes a surprising path. Only the file store
//! (this module's parent) builds these paths; everything else asks the store.
//! What the host keeps beside the teams (kept turns, records, logs, the
//! cache, worktrees) is the home's ([`crate::home`]), not the store's.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::store::names::{agent_file_stem, parse_task_id, sanitize_team_name};

/// `{root}/teams`.
pub fn teams_dir(root: &Path) -> PathBuf {
    root.join("teams")
}

/// `{root}/tasks`.
pub fn tasks_root(root: &Path) -> PathBuf {
    root.join("tasks")
}

/// Every path of one team. Built by [`TeamPaths::new`]; the name is already
/// sanitised and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamPaths {
    name: String,
    team_dir: PathBuf,
    tasks_dir: PathBuf,
}

impl TeamPaths {
    /// Paths of the team called `name` (sanitised) under `root`. Refuses
    /// unusable names.
    pub fn new(root: &Path, name: &str) -> Result<TeamPaths> {
        let team = sanitize_team_name(name)?;
        Ok(TeamPaths {
            team_dir: teams_dir(root).join(&team),
            tasks_dir: tasks_root(root).join(&team),
            name: team,
        })
    }

    /// The same team with its tasks in `{root}/tasks/{list}` (`list`
    /// already sanitised).
    pub fn with_task_list(mut self, root: &Path, list: &str) -> TeamPaths {
        self.tasks_dir = tasks_root(root).join(list);
        self
    }

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
        let team = TeamPaths::new(Path::new("/h"), "T").unwrap();
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
}
