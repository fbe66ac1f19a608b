//! [`Host::spawn`](super::Host::spawn): a teammate into a team, after the
//! layout check every spawn and attach passes first ([`crate::layout`]).

use crate::teammate::Isolation;

use super::{Host, SpawnRequest, TeammateInfo};
use crate::backends::{self, BackendKind};
use crate::error::{Error, Result};
use crate::store::Team;

impl Host {
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

impl Host {
    /// Spawns a component teammate and starts its runner, in the backend
    /// [`BackendOptions`](crate::backends::BackendOptions) select (in-process by default). Returns once it is
    /// registered, its prompt is in its inbox and it is starting. A request
    /// without a notification level gets [`HostOptions::notifications`](super::HostOptions::notifications).
    /// A teammate [`Host::compile`] compiled for leaves [`Host::joining`]
    /// here, spawned or not. A name that looks like the lead, the person,
    /// the host, a flag or another member is refused
    /// ([`crate::store::names::check_new_member_name`]).
    pub async fn spawn(&self, team: &str, req: SpawnRequest) -> Result<TeammateInfo> {
        let team = self.team(team)?;
        let name = req.name.clone();
        let spawned = self.spawn_into(&team, req).await;
        self.joined(team.name(), &name);
        spawned
    }

    async fn spawn_into(&self, team: &Team, mut req: SpawnRequest) -> Result<TeammateInfo> {
        // Before anything is compiled or recorded; the store's add_member
        // checks again, with the members it holds.
        crate::store::names::check_new_member_name(&req.name)?;
        self.check_layout(team.name(), &req)?;
        self.ensure_lease(team.name()).await?;
        req.settings
            .notifications
            .get_or_insert(self.inner.opts.notifications);
        let b = &self.inner.opts.backends;
        let kind = backends::detect(b.mode, b.interactive, backends::detect::inside_tmux());
        if kind == BackendKind::InProcess
            && !matches!(
                b.mode,
                backends::TeammateMode::Auto | backends::TeammateMode::InProcess
            )
        {
            tracing::warn!(mode = %b.mode, "this session is not interactive: teammates run in-process, as the reference does");
        }
        let backend = backends::backend(kind);
        tracing::debug!(teammate = %req.name, backend = %backend.kind(), "spawning");
        let kind = backend.kind();
        // What a resume needs to spawn it again, under the member's final
        // name, written by the backend once the member is registered and
        // before it can run: a host killed at any moment after the
        // teammate's first step leaves a record (`status` then shows it
        // dead, and resume brings it back). The component's hash comes from
        // the cache that just loaded it (no second read). A record that
        // cannot be written costs only that, so the spawn stands.
        let recorded = std::sync::Mutex::new(None::<String>);
        // When this host holds a lease on the team, the run record goes to
        // the store beside it (`run_record.rs`): its revision, to remove it
        // when the teammate ends.
        let run_written = std::sync::Mutex::new(None::<crate::store::Revision>);
        let (home, runtime) = (self.inner.home.clone(), self.inner.runtime.clone());
        let record_it = |member: &crate::store::Member| {
            let written = runtime
                .cache()
                .load(&req.component)
                .map_err(|e| Error::Component {
                    path: req.component.clone(),
                    message: format!("{e:#}"),
                })
                .and_then(|(hash, _)| {
                    let mut record =
                        crate::home::spawn_record::SpawnRecord::new(&req, kind.as_str(), hash)?;
                    record.name = member.name.clone();
                    crate::home::spawn_record::record(&home, team.name(), &record)?;
                    Ok(record)
                });
            match written {
                Ok(record) => {
                    *recorded.lock().expect("record lock") = Some(member.name.clone());
                    match self.record_run(team, &record) {
                        Ok(rev) => *run_written.lock().expect("record lock") = rev,
                        Err(error) => {
                            tracing::warn!(teammate = %member.name, %error, "no run record written: another host will not take this teammate over")
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(teammate = %member.name, %error, "no spawn record written: a resume will not bring this teammate back")
                }
            }
        };
        let mut env = self.spawn_env(team)?;
        env.before_start = Some(&record_it);
        let spawned = backend.spawn(env, team, req.clone()).await;
        let spawned = match spawned {
            Ok(s) => s,
            Err(e) => {
                // A start that failed after the record: no member to resume.
                let name = recorded.lock().expect("record lock").take();
                if let Some(name) = name {
                    let _ = crate::home::spawn_record::remove(&home, team.name(), &name);
                }
                return Err(e);
            }
        };
        let info = self.keep(team, spawned);
        if let Some(rev) = run_written.lock().expect("record lock").take() {
            self.forget_run_when_done(team, &info.name, rev);
        }
        Ok(info)
    }
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
