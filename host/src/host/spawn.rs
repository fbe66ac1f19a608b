//! What it takes to spawn a teammate: the reference's spawn request plus the
//! component to run, and the layout check every spawn and attach passes
//! first ([`crate::layout`]).

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
    pub notifications: Option<crate::runner::NotificationLevel>,
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

impl super::Host {
    /// Refuses a layout in which `req`'s directory holds something the host
    /// trusts (see [`crate::layout`]): its component, the home or the
    /// component cache; or lies inside the home (but for `{home}/worktrees`);
    /// or in which its component lies in the directory of a teammate this
    /// host runs in `team`. A worktree teammate's directory is not checked:
    /// it is a fresh worktree the host makes under `{home}/worktrees`, and
    /// `req.cwd` is only the repository it comes from. The error
    /// ([`Error::Invalid`](crate::error::Error::Invalid)) names both paths
    /// and the fix.
    pub(super) fn check_layout(&self, team: &str, req: &SpawnRequest) -> crate::error::Result<()> {
        use crate::layout::{check, home_paths, Kind, Protected};
        let invalid = crate::error::Error::Invalid;
        let inner = &self.inner;
        let home = inner.store.home().root();
        if req.isolation == Isolation::None {
            let mut protected = home_paths(home, inner.opts.cache_dir.as_deref());
            protected.push(Protected::new(Kind::Component, &req.component));
            protected.extend(inner.opts.models.protected().iter().cloned());
            check(&req.name, &req.cwd, &protected).map_err(invalid)?;
        }
        // Running teammates' directories are recorded canonical (the
        // backends canonicalise `cwd` at spawn), so the component is
        // resolved once and compared in memory: a spawn costs the same
        // however many teammates run.
        let component = crate::layout::canonical(&req.component);
        let teammates = inner.teammates.lock().expect("teammates lock");
        for ((t, name), s) in teammates.iter() {
            let Some(dir) = s
                .member
                .cwd
                .as_deref()
                .filter(|_| t == team && *name != req.name)
            else {
                continue;
            };
            if component.starts_with(dir) {
                let protected = [Protected::new(Kind::Component, &req.component)];
                check(name, std::path::Path::new(dir), &protected).map_err(invalid)?;
            }
        }
        Ok(())
    }
}
