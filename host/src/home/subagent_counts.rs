//! A teammate's sub-agent counts, as `teamhost status` and the live view
//! read them: `{home}/subagents/{team}/{stem}.json`, written by the
//! teammate's tree of sub-agents (`subagents::tree`) whenever one starts,
//! finishes or is resumed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Home;

/// What `teamhost status` and the view show about a teammate's sub-agents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeRecord {
    /// Running now, at any depth.
    pub running: usize,
    /// Started over the teammate's life, at any depth.
    pub started: usize,
    /// The deepest one started (1: the teammate's own).
    pub deepest: u32,
    /// The depth limit.
    pub max_depth: u32,
    /// The limit of running sub-agents per agent.
    pub max_running: usize,
    /// Sub-agents whose task still exists: running, or ended and waiting
    /// to be resumed (0 once everything a teammate started is gone,
    /// worktrees cleaned up included).
    #[serde(default)]
    pub alive: usize,
}

impl TreeRecord {
    /// For a narrow column: `subs 2/5 d2/2` (running / started, deepest /
    /// depth limit).
    pub fn short(&self) -> String {
        format!(
            "subs {}/{} d{}/{}",
            self.running, self.started, self.deepest, self.max_depth
        )
    }

    /// In a few words: `2 running, 5 started, depth 2/2`.
    pub fn describe(&self) -> String {
        format!(
            "sub-agents: {} running, {} started, depth {}/{}",
            self.running, self.started, self.deepest, self.max_depth
        )
    }
}

/// Where `name`'s record is.
pub fn path(home: &Home, team: &str, name: &str) -> Option<PathBuf> {
    home.subagent_counts(team, name).ok()
}

/// `name`'s record, if it ever started a sub-agent on this machine.
pub fn read(home: &Home, team: &str, name: &str) -> Option<TreeRecord> {
    let text = std::fs::read_to_string(path(home, team, name)?).ok()?;
    serde_json::from_str(&text).ok()
}
