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
            // A teammate could read a seed or replace the CA it trusts.
            let files = inner.store.backend().settings_files().into_iter();
            protected.extend(files.map(|f| Protected::new(Kind::StoreSettings, f)));
            check(&req.name, &req.cwd, &protected).map_err(invalid)?;
        }
        // Running teammates' directories are recorded canonical (the
        // backends canonicalise `cwd` at spawn), so the component is
        // resolved once and compared in memory: a spawn costs the same
        // however many teammates run.
        let component = crate::layout::canonical(&req.component);
        // Comparing by path components parses both paths; at 10,000
        // teammates every spawn did that for every directory. Only the
        // directories that may hold the component ([`may_hold`]) are.
        let component_str = component.to_str().unwrap_or_default();
        let component_plain = component.to_str().is_some_and(plain);
        let teammates = inner.teammates.lock().expect("teammates lock");
        for ((t, name), s) in teammates.iter() {
            let Some(dir) = s
                .member
                .cwd
                .as_deref()
                .filter(|dir| !component_plain || may_hold(component_str, dir))
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

/// Whether `path` is written as a canonical path is: no `//`, no `.`
/// component, no `/` at the end (but for `/` itself).
fn plain(path: &str) -> bool {
    !(path.contains("//")
        || path.contains("/./")
        || path.ends_with("/.")
        || path == "."
        || path.starts_with("./")
        || (path.len() > 1 && path.ends_with('/')))
}

/// Whether the directory `dir` may hold `component` (both as text, the
/// component [`plain`]): only if it is a byte prefix of the component, or
/// is not plain itself (`Path::starts_with` reads `a//b/.` as `a/b`). A
/// `true` is only a maybe: the caller compares by path components.
fn may_hold(component: &str, dir: &str) -> bool {
    component.starts_with(dir) || !plain(dir)
}

#[cfg(test)]
mod tests {
    use super::{may_hold, plain};
    use std::path::Path;

    /// The filter never drops a directory that holds the component.
    #[test]
    fn every_directory_that_holds_a_plain_component_passes_the_byte_filter() {
        let components = [
            "/w/a/c.wasm",
            "/w/.hidden/c.wasm",
            "/c.wasm",
            "/w/ab/c.wasm",
        ];
        let dirs = [
            "/",
            "/w",
            "/w/",
            "/w/a",
            "/w/a/",
            "/w//a",
            "/w/./a",
            "/w/a/.",
            "/w/.",
            "/w/.hidden",
            "/w/.hidden/",
            "/w/a/..",
            "/w/ab",
            "/x",
            ".",
            "./w",
            "w/a",
        ];
        for c in components {
            assert!(plain(c), "{c}");
            for d in dirs {
                if Path::new(c).starts_with(d) {
                    assert!(may_hold(c, d), "{d} holds {c} but was filtered out");
                }
            }
        }
        // And it does filter: a plain directory elsewhere is dropped.
        assert!(!may_hold("/w/a/c.wasm", "/x"));
        assert!(!may_hold("/w/a/c.wasm", "/w/.hidden"));
    }
}
