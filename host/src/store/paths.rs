//! Where a team lives on disk, and which names may become paths.
//!
//! ```text
//! {home}/teams/{team}/config.json
//! {home}/teams/{team}/inboxes/{agent}.json
//! {home}/teams/{team}/history/{agent}.jsonl     (teamhost only: consumed messages)
//! {home}/tasks/{team}/{id}.json, .lock, .highwatermark
//! ```
//!
//! Team names are sanitised as the reference does (every non-alphanumeric
//! character becomes `-`, then lower case). Names that are empty, too long, or
//! could leave the home (`..`, `/`, `\`, NUL, control characters) are refused
//! before sanitising, so a hostile name never becomes a surprising path.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Longest team or agent name accepted, in bytes. Leaves room under the usual
/// 255-byte file-name limit for suffixes such as `.json.lock` and `.corrupt-<ts>`.
pub const MAX_NAME_LEN: usize = 128;

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
            None => Err(Error::Invalid(
                "cannot find a home directory: pass --home DIR or set TEAMHOST_HOME".into(),
            )),
        }
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

/// Sanitises a team name as the reference does (non-alphanumerics → `-`, lower
/// case) after refusing names that are empty, too long or path-like.
pub fn sanitize_team_name(name: &str) -> Result<String> {
    check_name("team", name)?;
    Ok(name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect())
}

/// Validates an agent name and returns the file stem used for its inbox
/// (`@` → `-`, so `alice@team` and `alice-team` share a file as in the reference).
pub fn agent_file_stem(name: &str) -> Result<String> {
    check_name("agent", name)?;
    if name.starts_with('.') {
        return Err(invalid("agent", name, "must not start with '.'"));
    }
    Ok(name.replace('@', "-"))
}

/// Builds the agent id `name@team`.
pub fn agent_id(name: &str, team: &str) -> String {
    format!("{name}@{team}")
}

/// Checks that `id` is a task id: a positive decimal without sign or leading zeros.
pub fn parse_task_id(id: &str) -> Result<u64> {
    let bad = || Error::Invalid(format!("task id {id:?} is not a positive decimal number"));
    if id.is_empty() || id.len() > 19 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    if id.starts_with('0') {
        return Err(bad());
    }
    id.parse::<u64>().map_err(|_| bad())
}

fn check_name(kind: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(invalid(kind, name, "must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(
            kind,
            name,
            &format!("is {} bytes, the limit is {MAX_NAME_LEN}", name.len()),
        ));
    }
    if name.contains('\0') {
        return Err(invalid(kind, name, "contains a NUL byte"));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid(kind, name, "contains a control character"));
    }
    if name.contains('/') || name.contains('\\') {
        return Err(invalid(kind, name, "contains a path separator"));
    }
    if name.contains("..") {
        return Err(invalid(kind, name, "contains '..'"));
    }
    Ok(())
}

fn invalid(kind: &'static str, name: &str, reason: &str) -> Error {
    Error::InvalidName {
        kind,
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_names_are_sanitised_like_the_reference() {
        assert_eq!(sanitize_team_name("My Team_1").unwrap(), "my-team-1");
        assert_eq!(
            sanitize_team_name("session-76c4e2e6").unwrap(),
            "session-76c4e2e6"
        );
        assert_eq!(sanitize_team_name("Ünïcode!").unwrap(), "-n-code-");
    }

    #[test]
    fn names_that_would_leave_the_home_are_refused_with_the_reason() {
        for (name, why) in [
            ("", "empty"),
            ("   ", "empty"),
            ("..", "'..'"),
            ("../etc", "separator"),
            ("a/b", "separator"),
            ("a\\b", "separator"),
            ("a\0b", "NUL"),
            ("a\nb", "control"),
        ] {
            let err = sanitize_team_name(name).unwrap_err().to_string();
            assert!(err.contains(why), "{name:?}: {err}");
            assert!(err.contains("team name"), "{err}");
            let err = agent_file_stem(name).unwrap_err().to_string();
            assert!(err.contains(why) && err.contains("agent name"), "{err}");
        }
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert!(sanitize_team_name(&long)
            .unwrap_err()
            .to_string()
            .contains("limit"));
        assert!(agent_file_stem(".hidden").is_err());
    }

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
    fn task_ids_must_be_plain_positive_decimals() {
        assert_eq!(parse_task_id("42").unwrap(), 42);
        for bad in [
            "",
            "0",
            "01",
            "-1",
            "1.0",
            "../1",
            "a",
            "99999999999999999999",
        ] {
            assert!(parse_task_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn home_flag_wins_over_environment() {
        let h = Home::resolve(Some(Path::new("/x"))).unwrap();
        assert_eq!(h.root(), Path::new("/x"));
    }
}
