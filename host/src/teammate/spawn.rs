//! What it takes to spawn a teammate: the reference's spawn request plus the
//! component to run.

use std::path::PathBuf;

/// A teammate to spawn. [`SpawnRequest::new`] fills the defaults: agent type
/// `general-purpose`, no model, mode `default`, no plan approval, no tool rules,
/// auto-claim on, [`Limits::default`](crate::sandbox::Limits), the host's
/// notification level.
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
    /// Role recorded in the config.
    pub agent_type: Option<String>,
    /// Model id recorded in the config.
    pub model: Option<String>,
    /// Permission mode (`default`, `acceptEdits`, `bypassPermissions`, `plan`,
    /// `dontAsk`, `delegate`). `plan` preopens the directory read-only.
    pub mode: Option<String>,
    /// Whether the teammate must get its plan approved first.
    pub plan_mode_required: bool,
    /// Tool rules allowed without asking (recorded; enforced by the sandbox).
    pub allowed_tools: Vec<String>,
    /// Tool rules always denied (recorded; enforced by the sandbox).
    pub disallowed_tools: Vec<String>,
    /// Whether the teammate claims open tasks by itself when idle (the
    /// reference's behaviour). Default `true`.
    pub auto_claim: bool,
    /// Memory, CPU and wall time per turn, sizes, approval wait.
    pub limits: crate::sandbox::Limits,
    /// Run in a git worktree of `cwd`'s repository instead of `cwd` itself.
    pub isolation: Isolation,
    /// Which of its `idle_notification`s reach the lead's inbox (the others
    /// go to the lead's history only; see [`crate::runner::notify`]).
    /// `None`: [`Host::spawn`](super::Host::spawn) and
    /// [`Host::attach`](super::Host::attach) use
    /// [`HostOptions::notifications`](super::HostOptions::notifications).
    pub notifications: Option<super::NotificationLevel>,
    /// What the teammate may do with models (`model.complete`): `None`, the
    /// default, gives it no model capability at all.
    pub model_policy: Option<crate::model::ModelPolicy>,
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
            agent_type: None,
            model: None,
            mode: None,
            plan_mode_required: false,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            auto_claim: true,
            limits: crate::sandbox::Limits::default(),
            isolation: Isolation::None,
            notifications: None,
            model_policy: None,
        }
    }
}
