//! The layout check every spawn and attach passes first
//! ([`crate::layout`]).

use crate::teammate::{Isolation, SpawnRequest};

impl super::Host {
    /// Refuses a layout in which `req`'s directory holds something the host
    /// trusts (see [`crate::layout`]): its component, the home, the
    /// component cache or a NATS store's TLS or credentials file; or lies inside the home (but for `{home}/worktrees`);
    /// or in which its component lies in the directory of a teammate this
    /// host runs in `team`. A worktree teammate's directory is not checked:
    /// it is a fresh worktree the host makes under `{home}/worktrees`, and
    /// `req.cwd` is only the repository it comes from. The error
    /// ([`Error::Spawn`](crate::error::Error::Spawn)) names both paths
    /// and the fix.
    pub(super) fn check_layout(&self, team: &str, req: &SpawnRequest) -> crate::error::Result<()> {
        use crate::layout::{check, Kind, Protected};
        let invalid = crate::error::Error::Spawn;
        let inner = &self.inner;
        if req.isolation == Isolation::None {
            let mut protected = inner.home.protected_paths(inner.opts.cache_dir.as_deref());
            protected.push(Protected::new(Kind::Component, &req.component));
            protected.extend(inner.opts.models.protected().iter().cloned());
            let nats = inner
                .store
                .backend()
                .as_any()
                .downcast_ref::<crate::store::NatsStore>();
            if let Some(nats) = nats {
                // A teammate could read a seed or replace the CA it trusts.
                let files = nats.security().files().into_iter();
                protected.extend(files.map(|f| Protected::new(Kind::StoreSettings, f)));
            }
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
