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
use std::path::PathBuf;

/// One agent definition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// Its component (`None`: the parent's own).
    pub component: Option<PathBuf>,
}

/// The definitions a host knows, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definitions {
    by_name: BTreeMap<String, Definition>,
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
