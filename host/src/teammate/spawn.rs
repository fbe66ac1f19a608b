//! What it takes to spawn a teammate: the reference's spawn request plus the
//! component to run; how it runs is its [`TeammateSettings`].

use std::path::PathBuf;

use super::TeammateSettings;

/// A teammate to spawn: who it is, what it runs, where, and how
/// ([`TeammateSettings`]). [`SpawnRequest::new`] fills the settings'
/// defaults: agent type `general-purpose`, no model, mode `default`, no plan
/// approval, no tool rules, auto-claim on,
/// [`Limits::default`](crate::sandbox::Limits), the host's notification
/// level, no model capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// Wanted name; made unique (`x`, `x-2`, …).
    pub name: String,
    /// The teammate component (`.wasm`, built for wasm32-wasip2).
    pub component: PathBuf,
    /// Initial prompt, delivered as the first message of its inbox.
    pub prompt: String,
    /// The one directory the teammate can see and work in.
    pub cwd: PathBuf,
    /// Run in a git worktree of `cwd`'s repository instead of `cwd` itself.
    pub isolation: Isolation,
    /// Its colour in the team (one of [`crate::store::config::COLORS`]);
    /// `None`, the default: the first colour no member has, else the next in
    /// the cycle by join order. `teamhost run` gives each teammate the colour
    /// of its place in the manifest, so colours do not depend on which of
    /// several teammates started at once registered first.
    pub color: Option<String>,
    /// How it runs: role, model, mode, rules, limits, notifications, model
    /// policy.
    pub settings: TeammateSettings,
}

/// Where a teammate works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// In `cwd` itself (the default).
    #[default]
    None,
    /// In its own git worktree (`{home}/worktrees/{team}/{name}`), removed on
    /// team delete when clean, kept and reported when it has changes.
    Worktree,
}

impl SpawnRequest {
    /// A request with the documented defaults.
    pub fn new(
        name: impl Into<String>,
        component: impl Into<PathBuf>,
        prompt: impl Into<String>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        SpawnRequest {
            name: name.into(),
            component: component.into(),
            prompt: prompt.into(),
            cwd: cwd.into(),
            isolation: Isolation::None,
            color: None,
            settings: TeammateSettings::default(),
        }
    }
}
