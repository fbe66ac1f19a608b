//! Agent definitions: what a named sub-agent (`subagent_type`) is — its
//! prompt, tools, model, permission mode and, in teamhost, optionally its
//! own component.
//!
//! Definitions come only from places the operator chose: `.claude/agents`
//! under the host's home and under the project directory the operator gives,
//! and the manifest's `[[agent]]` tables. Never from a teammate's capability
//! directory: a teammate writes its own directory, and a definition it wrote
//! would choose its own sub-agents' powers (and, with `component`, run a
//! component it wrote).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One agent definition (serialised in the host's spawn records, so a
/// resumed teammate keeps its definitions).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Definition {
    /// `subagent_type` names it.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The system prompt (the file's body).
    pub prompt: String,
    /// The tools it may use (`None`: all the parent has).
    pub tools: Option<Vec<String>>,
    /// Its default model alias (`None` or `inherit`: the parent's default).
    pub model: Option<String>,
    /// Its permission mode (`None`: the parent's).
    pub permission_mode: Option<String>,
    /// Its component (`None`: the parent's own). Only the manifest can set
    /// one: a definition file cannot name code to run.
    pub component: Option<PathBuf>,
    /// Always run in the background (`background: true`).
    pub background: bool,
    /// Run in a git worktree unless the call says otherwise
    /// (`isolation: worktree`).
    pub worktree: bool,
}

/// The definitions a host knows, by name, and what an `Agent` call that
/// names none starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Definitions {
    by_name: BTreeMap<String, Definition>,
    /// An `Agent` call without `subagent_type` forks its caller (a
    /// sub-agent that goes on from the caller's conversation, with its
    /// model and tools) instead of starting a fresh `general-purpose` one:
    /// the reference's fork path, off by default as the reference's is
    /// (the manifest's `[team] fork_subagents`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    fork: bool,
}

impl Definitions {
    /// No definitions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `def`, replacing one of the same name (a later source wins).
    pub fn insert(&mut self, def: Definition) {
        self.by_name.insert(def.name.clone(), def);
    }

    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&Definition> {
        self.by_name.get(name)
    }

    /// Every name, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.by_name.keys().map(String::as_str).collect()
    }
}

/// Reads a definition file: YAML frontmatter between `---` lines with the
/// reference's keys (`name`, `description`, `tools`, `model`,
/// `permissionMode`, `background`, `isolation`; others are ignored, as the
/// reference ignores keys it does not use here) and the body as the
/// prompt. `tools` is a list (`- Read` lines or `[Read, Grep]`) or a
/// comma-separated string. Only the YAML this needs is read: `key: value`
/// lines and lists; an error names the line.
pub fn parse_markdown(text: &str) -> Result<Definition, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("it does not start with a `---` frontmatter line".into());
    }
    let mut fields: Vec<(String, Vec<String>, bool)> = Vec::new();
    let mut closed = false;
    let mut body = Vec::new();
    for (i, line) in lines.by_ref().enumerate() {
        let n = i + 2;
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(item) = line.trim_start().strip_prefix("- ") {
            match fields.last_mut() {
                Some((_, values, true)) => values.push(unquote(item)),
                _ => return Err(format!("line {n}: a list item with no `key:` above it")),
            }
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| format!("line {n}: expected `key: value`, found {line:?}"))?;
        let value = value.trim();
        if value.is_empty() {
            fields.push((key.trim().to_string(), Vec::new(), true));
        } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            let items = inner
                .split(',')
                .map(unquote)
                .filter(|s| !s.is_empty())
                .collect();
            fields.push((key.trim().to_string(), items, false));
        } else {
            fields.push((key.trim().to_string(), vec![unquote(value)], false));
        }
    }
    if !closed {
        return Err("its frontmatter has no closing `---` line".into());
    }
    body.extend(lines);
    let one = |key: &str| -> Option<String> {
        fields
            .iter()
            .rev()
            .find(|(k, _, _)| k == key)
            .and_then(|(_, v, _)| v.first().cloned())
    };
    let name = one("name")
        .filter(|n| !n.trim().is_empty())
        .ok_or("it has no `name`")?;
    let description = one("description")
        .filter(|d| !d.trim().is_empty())
        .ok_or("it has no `description`")?;
    let tools = fields
        .iter()
        .rev()
        .find(|(k, _, _)| k == "tools")
        .map(|(_, v, list)| {
            if *list || v.len() != 1 {
                v.clone()
            } else {
                v[0].split(',')
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect()
            }
        });
    Ok(Definition {
        name,
        description,
        prompt: body.join("\n").trim().to_string(),
        tools,
        model: one("model"),
        permission_mode: one("permissionMode"),
        component: None,
        background: one("background").is_some_and(|b| b == "true"),
        worktree: one("isolation").is_some_and(|i| i == "worktree"),
    })
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(s)
        .to_string()
}

impl Definitions {
    /// Adds every `*.md` of `dir` (in name order), as the reference reads
    /// `.claude/agents`. A missing directory adds nothing; a file that does
    /// not parse is an error naming it. The caller chooses `dir`: only a
    /// place the operator controls (never a teammate's directory).
    pub fn load_dir(&mut self, dir: &Path) -> Result<(), String> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let def = parse_markdown(&text)
                .map_err(|e| format!("agent definition {}: {e}", file.display()))?;
            self.insert(def);
        }
        Ok(())
    }

    /// Whether there are none (and no call forks).
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty() && !self.fork
    }

    /// Whether an `Agent` call that names no `subagent_type` forks its
    /// caller.
    pub fn forks(&self) -> bool {
        self.fork
    }

    /// These definitions, an `Agent` call without `subagent_type` forking
    /// its caller when `fork`.
    pub fn with_fork(mut self, fork: bool) -> Self {
        self.fork = fork;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_references_frontmatter_and_body() {
        let d = parse_markdown(
            "---\nname: code-reviewer\ndescription: Review a change\ntools:\n- Read\n- Grep\nmodel: sonnet\npermissionMode: plan\nbackground: true\nmaxTurns: 8\n---\nYou are a focused code reviewer.\n",
        )
        .unwrap();
        assert_eq!(d.name, "code-reviewer");
        assert_eq!(d.tools, Some(vec!["Read".into(), "Grep".into()]));
        assert_eq!(d.model.as_deref(), Some("sonnet"));
        assert_eq!(d.permission_mode.as_deref(), Some("plan"));
        assert!(d.background && !d.worktree);
        assert_eq!(d.prompt, "You are a focused code reviewer.");
        assert_eq!(d.component, None, "a file never names a component");
    }

    #[test]
    fn tools_may_be_a_comma_separated_string_or_an_inline_list() {
        let a = parse_markdown("---\nname: a\ndescription: d\ntools: Read, Bash\n---\n").unwrap();
        let b =
            parse_markdown("---\nname: a\ndescription: d\ntools: [Read, \"Bash\"]\n---\n").unwrap();
        assert_eq!(a.tools, b.tools);
        assert_eq!(a.tools, Some(vec!["Read".into(), "Bash".into()]));
    }

    #[test]
    fn a_file_without_frontmatter_or_name_is_refused() {
        assert!(parse_markdown("no frontmatter").is_err());
        assert!(parse_markdown("---\ndescription: d\n---\n")
            .unwrap_err()
            .contains("name"));
        assert!(parse_markdown("---\nname: x\ndescription: d\n")
            .unwrap_err()
            .contains("closing"));
    }
}
