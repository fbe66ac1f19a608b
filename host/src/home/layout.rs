//! Every path under the home, spelled once. Nothing else in the crate joins
//! a name onto the home's root: it asks [`Home`] for the path.
//!
//! ```text
//! {home}/teams/, {home}/tasks/           the team store's (store/files/paths.rs)
//! {home}/kept/{team}/{stem}.{Kept}       what a teammate's life keeps (kept.rs, spawn records)
//! {home}/kept/{team}/host.json           the run's claim on the team (backends::live_host)
//! {home}/kept/{team}/.lead.json          a lead component's seat, to resume it (lead_record.rs)
//! {home}/started/{team}/{stem}.json      process records (backends::started)
//! {home}/lead-keys/{team}/{stem}.json    the lead's private key for a keyed teammate (lead_keys.rs; 0600)
//! {home}/subagents/{team}/{stem}.json    a teammate's sub-agent counts (subagents::tree)
//! {home}/worktrees/{team}/{name}         a teammate's git worktree (worktree)
//! {home}/cache/components/               precompiled components (runtime::cache)
//! {home}/components/                     components `teamhost teammate` finds by name
//! {home}/logs/{team}/{name}.log          a teammate's log
//! {home}/models.toml                     the host's model config
//! {home}/settings.json                   the user's hook settings
//! ```
//!
//! `{stem}` is the member's file stem ([`agent_file_stem`]: checked, `@`
//! → `-`), so a hostile name never becomes a surprising path.

use std::path::{Path, PathBuf};

use super::Home;
use crate::error::Result;
use crate::layout::{Kind, Protected};
use crate::store::names::agent_file_stem;

/// One file kept of a teammate in `{home}/kept/{team}/`: its name is
/// `{stem}.{suffix}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// `spawn.json`: how to spawn it again (`spawn_record`).
    Spawn,
    /// `conversation.json`: its model conversation.
    Conversation,
    /// `turn.json`: the message its turn handles.
    Turn,
    /// `task.json`: the task its turn works on.
    Task,
    /// `claims.json`: the tasks it claimed through the host.
    Claims,
    /// `spent.json`: what its tree spent of its life-long budgets.
    Spent,
    /// `state`: its own saved state.
    State,
}

impl Kept {
    /// The files of one life of a teammate: everything kept of it but its
    /// spawn record.
    pub const LIFE: [Kept; 6] = [
        Kept::Conversation,
        Kept::Turn,
        Kept::Task,
        Kept::Claims,
        Kept::Spent,
        Kept::State,
    ];

    /// What follows the stem in the file's name.
    pub fn suffix(self) -> &'static str {
        match self {
            Kept::Spawn => "spawn.json",
            Kept::Conversation => "conversation.json",
            Kept::Turn => "turn.json",
            Kept::Task => "task.json",
            Kept::Claims => "claims.json",
            Kept::Spent => "spent.json",
            Kept::State => "state",
        }
    }
}

impl Home {
    /// `{home}/kept/{team}`: what the team keeps to be resumed.
    pub fn kept_dir(&self, team: &str) -> PathBuf {
        self.root().join("kept").join(team)
    }

    /// `{home}/kept/{team}/{stem}.{suffix}`: file `which` kept of member
    /// `name` (name checked).
    pub fn kept(&self, team: &str, name: &str, which: Kept) -> Result<PathBuf> {
        let stem = agent_file_stem(name)?;
        Ok(self
            .kept_dir(team)
            .join(format!("{stem}.{}", which.suffix())))
    }

    /// `{home}/kept/{team}/host.json`: the `teamhost run` that claimed the
    /// team.
    pub fn run_claim(&self, team: &str) -> PathBuf {
        self.kept_dir(team).join("host.json")
    }

    /// `{home}/kept/{team}/.lead.json`: the seat of the team's lead
    /// component, kept to resume it (a member's file stem never starts
    /// with `.`).
    pub fn lead_record(&self, team: &str) -> PathBuf {
        self.kept_dir(team).join(".lead.json")
    }

    /// `{home}/started/{team}`: the team's process records.
    pub fn started_dir(&self, team: &str) -> PathBuf {
        self.root().join("started").join(team)
    }

    /// `{home}/started/{team}/{stem}.json`: member `name`'s process record.
    pub fn started(&self, team: &str, name: &str) -> Result<PathBuf> {
        let stem = agent_file_stem(name)?;
        Ok(self.started_dir(team).join(format!("{stem}.json")))
    }

    /// `{home}/lead-keys/{team}`: the lead's private keys for the team's
    /// keyed teammates (`home::lead_keys`; the directory is 0700).
    pub fn lead_keys_dir(&self, team: &str) -> PathBuf {
        self.root().join("lead-keys").join(team)
    }

    /// `{home}/lead-keys/{team}/{stem}.json`: the lead's private key for
    /// member `name` (name checked).
    pub fn lead_key(&self, team: &str, name: &str) -> Result<PathBuf> {
        let stem = agent_file_stem(name)?;
        Ok(self.lead_keys_dir(team).join(format!("{stem}.json")))
    }

    /// `{home}/lead-keys/{team}/.team.json`: the team's own lead key (a
    /// member's file stem never starts with `.`).
    pub fn team_lead_key(&self, team: &str) -> PathBuf {
        self.lead_keys_dir(team).join(".team.json")
    }

    /// `{home}/decisions/{team}`: who decided the team's permission
    /// requests and plans (`home::decisions`); kept after the team is
    /// deleted, as a record.
    pub fn decisions_dir(&self, team: &str) -> PathBuf {
        self.root().join("decisions").join(team)
    }

    /// `{home}/subagents/{team}`: the team's sub-agent counts.
    pub fn subagents_dir(&self, team: &str) -> PathBuf {
        self.root().join("subagents").join(team)
    }

    /// `{home}/subagents/{team}/{stem}.json`: member `name`'s sub-agent
    /// counts.
    pub fn subagent_counts(&self, team: &str, name: &str) -> Result<PathBuf> {
        let stem = agent_file_stem(name)?;
        Ok(self.subagents_dir(team).join(format!("{stem}.json")))
    }

    /// `{home}/worktrees`: every teammate's git worktree, by team.
    pub fn worktrees(&self) -> PathBuf {
        self.root().join("worktrees")
    }

    /// `{home}/worktrees/{team}`.
    pub fn team_worktrees(&self, team: &str) -> PathBuf {
        self.worktrees().join(team)
    }

    /// `{home}/worktrees/{team}/{name}`: `name`'s worktree.
    pub fn worktree(&self, team: &str, name: &str) -> PathBuf {
        self.team_worktrees(team).join(name)
    }

    /// `{home}/cache/components`: the component cache unless one is given.
    pub fn component_cache(&self) -> PathBuf {
        self.root().join("cache").join("components")
    }

    /// `{home}/components`: where `teamhost teammate` finds a component by
    /// name.
    pub fn components(&self) -> PathBuf {
        self.root().join("components")
    }

    /// What a teammate's directory must not contain nor lie in
    /// ([`crate::layout::check`]): the home, with its worktrees as the one
    /// place inside it a teammate may work, and the component cache
    /// (`cache`, else [`Home::component_cache`]).
    pub fn protected_paths(&self, cache: Option<&Path>) -> Vec<Protected> {
        let cache = cache.map_or_else(|| self.component_cache(), Path::to_path_buf);
        vec![
            Protected::home(self.root(), self.worktrees()),
            Protected::new(Kind::Cache, cache),
        ]
    }

    /// `{home}/models.toml`: the host's model config, read when no other
    /// is given.
    pub fn model_config(&self) -> PathBuf {
        self.root().join("models.toml")
    }

    /// `{home}/settings.json`: the user's settings `teamhost teammate`
    /// reads hooks from first (a Claude Code home's own file).
    pub fn settings(&self) -> PathBuf {
        self.root().join("settings.json")
    }

    /// `{home}/logs`: teammates' logs, by team.
    pub fn logs(&self) -> PathBuf {
        self.root().join("logs")
    }

    /// `{home}/logs/{team}`.
    pub fn team_logs(&self, team: &str) -> PathBuf {
        self.logs().join(team)
    }

    /// `{home}/logs/{team}/{name}.log`: `name`'s log.
    pub fn teammate_log(&self, team: &str, name: &str) -> PathBuf {
        self.team_logs(team).join(format!("{name}.log"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_files_use_the_checked_stem() {
        let home = Home::new("/h");
        assert_eq!(
            home.kept("t", "alice@t", Kept::Turn).unwrap(),
            Path::new("/h/kept/t/alice-t.turn.json")
        );
        assert_eq!(home.run_claim("t"), Path::new("/h/kept/t/host.json"));
        assert!(home.kept("t", "../x", Kept::State).is_err());
    }

    #[test]
    fn a_teammate_may_work_in_its_own_worktree_of_the_home_and_nowhere_else_in_it() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        let protected = home.protected_paths(None);
        assert!(crate::layout::check("w", &home.worktree("t", "w"), &protected).is_ok());
        for above in [
            home.worktrees(),
            home.team_worktrees("t"),
            home.kept_dir("t"),
        ] {
            let e = crate::layout::check("w", &above, &protected).unwrap_err();
            assert!(e.contains("inside the teamhost home"), "{e}");
        }
    }
}
