//! Hooks in Claude Code's settings format, so the hooks a Claude Code user
//! already configured apply to WebAssembly teammates too, and so teamhost
//! can hand its own hooks to a teammate in another process.
//!
//! ```json
//! { "hooks": {
//!     "TaskCompleted": [ { "matcher": "", "hooks": [
//!         { "type": "command", "command": "./check.sh", "timeout": 30 } ] } ],
//!     "TeammateIdle":  [ … ],
//!     "SubagentStart": [ … ],
//!     "SubagentStop":  [ … ] } }
//! ```
//!
//! | settings event | teamhost hook |
//! |---|---|
//! | `TeammateIdle` | [`Hooks::teammate_idle`] |
//! | `TaskCompleted` | [`Hooks::task_completed`] |
//! | `SubagentStart` | [`Hooks::teammate_start`] |
//! | `SubagentStop` | [`Hooks::teammate_stop`] |
//!
//! Other events (`PreToolUse`, `Stop`, …) are for Claude Code's own agents
//! and are left alone; so are hooks whose `type` is not `command`. Matchers
//! are not applied: a teammate event has no tool name to match. teamhost has
//! one timeout for all hooks: the longest `timeout` given (seconds), else
//! the default 60 s.
//!
//! Where `teamhost teammate` reads them ([`settings_files`]): the user's
//! `{home}/settings.json`, then the project's `.claude/settings.json` and
//! `.claude/settings.local.json`, commands of each file added after the
//! previous ones'. `--settings` replaces them all, and teamhost's own process
//! and tmux backends always pass it, with the host's hooks, so a teammate
//! runs exactly the hooks its host has.
//!
//! Hooks run on the host, outside the sandbox, so no settings file is read
//! from a place the teammate can write: [`trusted_files`] drops every file
//! that lies inside the teammate's directory (compared canonically, so a
//! symlink to such a file counts as inside). That is always true of the
//! project's two files when the project is the teammate's directory, as it is
//! when Claude Code starts it; hooks then come from `--settings FILE` kept
//! where the teammate cannot write, or from `~/.claude/settings.json`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::Hooks;

/// The settings events teamhost runs, with the hook list each fills.
const EVENTS: [&str; 4] = [
    "TeammateIdle",
    "TaskCompleted",
    "SubagentStart",
    "SubagentStop",
];

impl Hooks {
    /// Reads the hooks of a settings document (see the module docs). A
    /// document without `hooks` gives no hooks; a `hooks` of the wrong shape
    /// is an error naming the key.
    pub fn from_settings(settings: &Value) -> Result<Hooks, String> {
        let mut hooks = Hooks::default();
        let Some(all) = settings.get("hooks") else {
            return Ok(hooks);
        };
        let all = all
            .as_object()
            .ok_or("`hooks` must be an object of event names")?;
        let mut longest: Option<u64> = None;
        for event in EVENTS {
            let Some(groups) = all.get(event) else {
                continue;
            };
            let groups = groups
                .as_array()
                .ok_or_else(|| format!("`hooks.{event}` must be an array of matcher groups"))?;
            for (i, group) in groups.iter().enumerate() {
                let list = group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .ok_or_else(|| format!("`hooks.{event}[{i}].hooks` must be an array"))?;
                for (j, hook) in list.iter().enumerate() {
                    if hook.get("type").and_then(Value::as_str) != Some("command") {
                        continue;
                    }
                    let command = hook.get("command").and_then(Value::as_str).ok_or_else(|| {
                        format!("`hooks.{event}[{i}].hooks[{j}].command` must be a string")
                    })?;
                    if let Some(t) = hook.get("timeout") {
                        let t = t.as_u64().filter(|t| *t > 0).ok_or_else(|| {
                            format!(
                                "`hooks.{event}[{i}].hooks[{j}].timeout` must be a positive number of seconds"
                            )
                        })?;
                        longest = Some(longest.map_or(t, |l| l.max(t)));
                    }
                    hooks.list_mut(event).push(command.to_string());
                }
            }
        }
        if let Some(t) = longest {
            hooks.timeout = Duration::from_secs(t);
        }
        Ok(hooks)
    }

    /// These hooks as a settings document that [`Hooks::from_settings`]
    /// reads back unchanged.
    pub fn to_settings(&self) -> Value {
        let mut all = Map::new();
        for event in EVENTS {
            let commands = self.list(event);
            if commands.is_empty() {
                continue;
            }
            let list: Vec<Value> = commands
                .iter()
                .map(|c| json!({"type": "command", "command": c, "timeout": self.timeout.as_secs().max(1)}))
                .collect();
            all.insert(event.into(), json!([{ "matcher": "", "hooks": list }]));
        }
        json!({ "hooks": all })
    }

    /// Adds `other`'s commands after these; the longer timeout wins.
    pub fn extend(&mut self, other: Hooks) {
        self.teammate_idle.extend(other.teammate_idle);
        self.task_completed.extend(other.task_completed);
        self.teammate_start.extend(other.teammate_start);
        self.teammate_stop.extend(other.teammate_stop);
        self.timeout = self.timeout.max(other.timeout);
    }

    fn list(&self, event: &str) -> &Vec<String> {
        match event {
            "TeammateIdle" => &self.teammate_idle,
            "TaskCompleted" => &self.task_completed,
            "SubagentStart" => &self.teammate_start,
            _ => &self.teammate_stop,
        }
    }

    fn list_mut(&mut self, event: &str) -> &mut Vec<String> {
        match event {
            "TeammateIdle" => &mut self.teammate_idle,
            "TaskCompleted" => &mut self.task_completed,
            "SubagentStart" => &mut self.teammate_start,
            _ => &mut self.teammate_stop,
        }
    }
}

/// The settings files `teamhost teammate` reads hooks from when not given
/// `--settings`, in order: the user's (`user`, the home's
/// `settings.json`), then `{dir}/.claude/settings.json` and
/// `{dir}/.claude/settings.local.json`.
pub fn settings_files(user: &Path, dir: &Path) -> Vec<PathBuf> {
    vec![
        user.to_path_buf(),
        dir.join(".claude").join("settings.json"),
        dir.join(".claude").join("settings.local.json"),
    ]
}

/// A settings file left out because the teammate could have written it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub file: PathBuf,
    /// The teammate's directory it lies in.
    pub dir: PathBuf,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not reading hooks from {}: it lies inside the teammate's directory {}, which the teammate can write, and hooks run outside the sandbox; give hooks with --settings FILE from a place the teammate cannot write, or in ~/.claude/settings.json",
            self.file.display(),
            self.dir.display()
        )
    }
}

/// Splits `files` into those outside the teammate's directory `dir`, kept in
/// order, and those inside it (see the module docs), each with the reason.
/// Whether a file exists does not matter: one inside could be written later.
pub fn trusted_files(files: Vec<PathBuf>, dir: &Path) -> (Vec<PathBuf>, Vec<Skipped>) {
    let inside = crate::layout::canonical(dir);
    let (mut kept, mut skipped) = (Vec::new(), Vec::new());
    for file in files {
        // By where the file is found (a link the teammate planted there,
        // whatever it points at, was still chosen by the teammate) and by
        // what it resolves to (a link from outside into the directory).
        let found_in = file
            .parent()
            .is_some_and(|p| crate::layout::canonical(p).starts_with(&inside));
        if found_in || crate::layout::canonical(&file).starts_with(&inside) {
            skipped.push(Skipped {
                file,
                dir: dir.to_path_buf(),
            });
        } else {
            kept.push(file);
        }
    }
    (kept, skipped)
}

/// Reads and merges the hooks of those of `files` that exist. A file that
/// exists but cannot be read or parsed is an error naming it.
pub fn load_files(files: &[PathBuf]) -> Result<Hooks, String> {
    let mut hooks = Hooks::default();
    let mut any = false;
    for f in files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", f.display())),
        };
        let value: Value =
            serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", f.display()))?;
        let found = Hooks::from_settings(&value).map_err(|e| format!("{}: {e}", f.display()))?;
        if any {
            hooks.extend(found);
        } else {
            hooks = found;
            any = true;
        }
    }
    Ok(hooks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_settings_map_to_teamhost_hooks() {
        let settings = json!({
            "permissions": {"allow": ["Bash(npm test:*)"]},
            "hooks": {
                "TaskCompleted": [{"matcher": "", "hooks": [
                    {"type": "command", "command": "./check.sh", "timeout": 30},
                    {"type": "prompt", "prompt": "ignored: not a command"}
                ]}],
                "TeammateIdle": [{"hooks": [{"type": "command", "command": "./idle.sh"}]}],
                "SubagentStop": [{"matcher": "reviewer", "hooks": [
                    {"type": "command", "command": "./stop.sh", "timeout": 90}
                ]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "./not-for-teammates.sh"}
                ]}]
            }
        });
        let h = Hooks::from_settings(&settings).unwrap();
        assert_eq!(h.task_completed, ["./check.sh"]);
        assert_eq!(h.teammate_idle, ["./idle.sh"]);
        assert_eq!(h.teammate_stop, ["./stop.sh"]);
        assert!(h.teammate_start.is_empty());
        assert_eq!(h.timeout, Duration::from_secs(90));
        assert_eq!(Hooks::from_settings(&h.to_settings()).unwrap(), h);
        assert_eq!(Hooks::from_settings(&json!({})).unwrap(), Hooks::default());
    }

    #[test]
    fn a_malformed_hooks_section_names_the_key() {
        let e = Hooks::from_settings(&json!({"hooks": {"TaskCompleted": {"x": 1}}})).unwrap_err();
        assert!(e.contains("hooks.TaskCompleted"), "{e}");
        let e = Hooks::from_settings(&json!({"hooks": {"TeammateIdle": [{"hooks": [
            {"type": "command", "command": "x", "timeout": -1}
        ]}]}}))
        .unwrap_err();
        assert!(e.contains("timeout"), "{e}");
    }

    #[test]
    fn files_merge_in_order_and_a_broken_one_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let (user, project) = (
            tmp.path().join("user.json"),
            tmp.path().join("project.json"),
        );
        std::fs::write(
            &user,
            r#"{"hooks":{"TaskCompleted":[{"hooks":[{"type":"command","command":"a"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(
            &project,
            r#"{"hooks":{"TaskCompleted":[{"hooks":[{"type":"command","command":"b"}]}]}}"#,
        )
        .unwrap();
        let missing = tmp.path().join("missing.json");
        let h = load_files(&[user, missing.clone(), project.clone()]).unwrap();
        assert_eq!(h.task_completed, ["a", "b"]);
        assert_eq!(load_files(&[missing]).unwrap(), Hooks::default());
        std::fs::write(&project, "{not json").unwrap();
        let e = load_files(std::slice::from_ref(&project)).unwrap_err();
        assert!(e.contains(&project.display().to_string()), "{e}");
    }

    #[test]
    fn settings_in_the_teammate_directory_are_skipped_whichever_way_a_link_points() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, dir) = (tmp.path().join("home"), tmp.path().join("project"));
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let outside = tmp.path().join("elsewhere.json");
        std::fs::write(&outside, "{}").unwrap();
        // A link inside the directory pointing out, and the user's file a
        // link pointing in.
        std::os::unix::fs::symlink(&outside, dir.join(".claude/settings.json")).unwrap();
        std::fs::write(dir.join("planted.json"), "{}").unwrap();
        std::os::unix::fs::symlink(dir.join("planted.json"), home.join("settings.json")).unwrap();
        let (kept, skipped) =
            trusted_files(settings_files(&home.join("settings.json"), &dir), &dir);
        assert!(kept.is_empty(), "{kept:?}");
        assert_eq!(skipped.len(), 3);
        let line = skipped[0].to_string();
        assert!(
            line.contains("settings.json") && line.contains("--settings"),
            "{line}"
        );
        // A plain user file outside stays.
        std::fs::remove_file(home.join("settings.json")).unwrap();
        std::fs::write(home.join("settings.json"), "{}").unwrap();
        let (kept, _) = trusted_files(settings_files(&home.join("settings.json"), &dir), &dir);
        assert_eq!(kept, [home.join("settings.json")]);
    }
}
