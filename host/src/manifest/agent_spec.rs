//! `[[agent]]`: sub-agent definitions in the manifest, and the project's
//! `.claude/agents/*.md` beside it — the two places a manifest run takes
//! agent definitions from (a teammate's `Agent` tool names them with
//! `subagent_type`).
//!
//! Both are the operator's: the manifest's directory is the project the
//! operator gave. A `.claude/agents` inside a teammate's directory would let
//! that teammate write its own sub-agents' definitions, so it is refused
//! (the manifest does not load), and a definition file can never name a
//! component: only `[[agent]] component` can.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::sandbox::ToolName;
use crate::teammate::{Definition, Definitions};

/// One `[[agent]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// `subagent_type` names it (required, unique).
    pub name: String,
    /// When to use it (required).
    pub description: String,
    /// Its system prompt. Default: the general-purpose one.
    #[serde(default)]
    pub prompt: String,
    /// The tools it may use (of its parent's). Default: all of them.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Its default model: one its parent may use. Default: the parent's.
    #[serde(default)]
    pub model: Option<String>,
    /// Its permission mode, at most its parent's. Default: the parent's.
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// Its component, relative to the manifest. Default: the parent's own.
    #[serde(default)]
    pub component: Option<PathBuf>,
    /// Always in the background. Default `false`.
    #[serde(default)]
    pub background: bool,
    /// `none` or `worktree`. Default `none`.
    #[serde(default)]
    pub isolation: Option<String>,
}

impl AgentSpec {
    fn to_definition(&self) -> Definition {
        Definition {
            name: self.name.clone(),
            description: self.description.clone(),
            prompt: self.prompt.clone(),
            tools: self.tools.clone(),
            model: self.model.clone(),
            permission_mode: self.permission_mode.clone(),
            component: self.component.clone(),
            background: self.background,
            worktree: self.isolation.as_deref() == Some("worktree"),
        }
    }

    /// Problems with this table, one line each.
    pub(crate) fn check(&self, i: usize, problems: &mut Vec<String>) {
        let at = format!("[[agent]] #{} ({:?})", i + 1, self.name);
        if self.name.trim().is_empty() || self.name.contains(['/', '\\', ' ']) {
            problems.push(format!(
                "{at}: name must be a non-empty word (what subagent_type names)"
            ));
        }
        if self.description.trim().is_empty() {
            problems.push(format!(
                "{at}: description is empty; say when to use this agent"
            ));
        }
        if let Some(m) = &self.permission_mode {
            if m.parse::<crate::sandbox::PermissionMode>().is_err() {
                problems.push(format!(
                    "{at}: permission_mode {m:?} is not a permission mode"
                ));
            }
        }
        for t in self.tools.iter().flatten() {
            if t != "*" && ToolName::from_reference(t).is_none() {
                problems.push(format!("{at}: tools: there is no tool {t:?}"));
            }
        }
        match self.isolation.as_deref() {
            None | Some("none") | Some("worktree") => {}
            Some(other) => problems.push(format!(
                "{at}: isolation {other:?} must be \"none\" or \"worktree\""
            )),
        }
        if let Some(c) = &self.component {
            if !c.is_file() {
                problems.push(format!("{at}: component {} does not exist", c.display()));
            }
        }
    }
}

/// The project's definition directory beside a manifest in `base`.
pub fn project_agents_dir(base: &Path) -> PathBuf {
    base.join(".claude").join("agents")
}

/// The definitions of a manifest in `base`: the project's `.claude/agents`
/// files, then the `[[agent]]` tables (a table wins over a file of the same
/// name). `cwds` are the teammates' directories: a `.claude/agents` inside
/// one is refused. `None` when there are none.
pub fn load(
    base: &Path,
    agents: &[AgentSpec],
    cwds: &[&Path],
) -> Result<Option<Arc<Definitions>>, Vec<String>> {
    let dir = project_agents_dir(base);
    let mut defs = Definitions::new();
    if dir.is_dir() {
        let inside: Vec<String> = cwds
            .iter()
            .filter(|c| dir.starts_with(c))
            .map(|c| c.display().to_string())
            .collect();
        if !inside.is_empty() {
            return Err(vec![format!(
                "{} lies in the directory of a teammate ({}), which could write its own \
                 sub-agents' definitions there; give the teammate another cwd, or move the \
                 definitions into [[agent]] tables",
                dir.display(),
                inside.join(", ")
            )]);
        }
        defs.load_dir(&dir).map_err(|e| vec![e])?;
    }
    for a in agents {
        defs.insert(a.to_definition());
    }
    Ok((!defs.is_empty()).then(|| Arc::new(defs)))
}

#[cfg(test)]
mod tests {
    use crate::manifest::{Manifest, ManifestError};

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.wasm"), b"").unwrap();
        std::fs::create_dir_all(dir.path().join(".claude/agents")).unwrap();
        std::fs::write(
            dir.path().join(".claude/agents/reviewer.md"),
            "---\nname: reviewer\ndescription: from the file\ntools: Read\n---\nReview.\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".claude/agents/tester.md"),
            "---\nname: tester\ndescription: tests\n---\nTest.\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn teammates_get_the_projects_and_the_manifests_definitions() {
        let dir = project();
        let text = r#"
[team]
name = "t"
[[teammate]]
name = "a"
component = "x.wasm"
prompt = "p"
[[agent]]
name = "reviewer"
description = "from the table"
permission_mode = "plan"
"#;
        let m = Manifest::parse(text, &dir.path().join("TEAM.toml")).unwrap();
        let defs = m.teammates[0].settings().agents.expect("definitions");
        assert_eq!(defs.names(), ["reviewer", "tester"]);
        let r = defs.get("reviewer").unwrap();
        assert_eq!(r.description, "from the table", "a table wins over a file");
        assert_eq!(r.permission_mode.as_deref(), Some("plan"));
        assert_eq!(defs.get("tester").unwrap().prompt, "Test.");
    }

    #[test]
    fn fork_subagents_makes_every_teammate_and_the_lead_fork_and_is_off_by_default() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.wasm"), b"").unwrap();
        let text = |fork: &str| {
            format!(
                "[team]\nname = \"t\"\n{fork}\n[[teammate]]\nname = \"a\"\ncomponent = \"x.wasm\"\nprompt = \"p\"\n"
            )
        };
        let file = dir.path().join("team.toml");
        let off = Manifest::parse(&text(""), &file).unwrap();
        assert!(off.teammates[0].settings().agents.is_none());
        assert!(off.agent_definitions.is_none());
        let on = Manifest::parse(&text("fork_subagents = true"), &file).unwrap();
        assert!(on.teammates[0]
            .settings()
            .agents
            .expect("definitions")
            .forks());
        // The lead's (and so its spawns') definitions are these.
        assert!(on.agent_definitions.expect("definitions").forks());
    }

    #[test]
    fn definitions_inside_a_teammates_directory_are_refused() {
        let dir = project();
        let text = r#"
[team]
name = "t"
[[teammate]]
name = "a"
component = "x.wasm"
prompt = "p"
cwd = "."
"#;
        let Err(ManifestError::Invalid { problems, .. }) =
            Manifest::parse(text, &dir.path().join("TEAM.toml"))
        else {
            panic!("accepted definitions the teammate can write")
        };
        assert!(problems[0].contains("could write its own"), "{problems:?}");
    }

    #[test]
    fn a_bad_agent_table_names_the_problem() {
        let dir = project();
        let text = r#"
[team]
name = "t"
[[teammate]]
name = "a"
component = "x.wasm"
prompt = "p"
[[agent]]
name = "x"
description = ""
permission_mode = "root"
tools = ["Teleport"]
"#;
        let Err(ManifestError::Invalid { problems, .. }) =
            Manifest::parse(text, &dir.path().join("TEAM.toml"))
        else {
            panic!("accepted a bad [[agent]]")
        };
        let all = problems.join("\n");
        assert!(
            all.contains("description is empty")
                && all.contains("root")
                && all.contains("Teleport"),
            "{all}"
        );
    }
}
