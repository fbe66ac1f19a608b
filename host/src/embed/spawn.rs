//! [`Host::spawn`](super::Host::spawn): a teammate into a team, after the
//! layout check every spawn and attach passes first ([`crate::layout`]).

use std::sync::{Arc, Mutex};

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
        self.check_layout_with(team, req, &self.layout_checker())
    }

    /// What the host protects from every teammate's directory (all of
    /// [`Host::check_layout`]'s paths but the component), resolved once: a
    /// batch of spawns checks each directory against it.
    pub(super) fn layout_checker(&self) -> crate::layout::Checker {
        use crate::layout::{Kind, Protected};
        let inner = &self.inner;
        let mut protected = inner.home.protected_paths(inner.opts.cache_dir.as_deref());
        protected.extend(inner.opts.models.protected().iter().cloned());
        // A teammate could read a seed or replace the CA it trusts.
        let files = inner.store.backend().settings_files().into_iter();
        protected.extend(files.map(|f| Protected::new(Kind::StoreSettings, f)));
        crate::layout::Checker::new(&protected)
    }

    /// [`Host::check_layout`] with the host's paths resolved already
    /// ([`Host::layout_checker`]).
    pub(super) fn check_layout_with(
        &self,
        team: &str,
        req: &SpawnRequest,
        host_paths: &crate::layout::Checker,
    ) -> crate::error::Result<()> {
        use crate::layout::{check, Kind, Protected};
        let invalid = crate::error::Error::Spawn;
        let inner = &self.inner;
        if req.isolation == Isolation::None {
            let component = [Protected::new(Kind::Component, &req.component)];
            host_paths
                .check_also(&req.name, &req.cwd, &component)
                .map_err(invalid)?;
        }
        // Running teammates' directories are recorded canonical (the
        // backends canonicalise `cwd` at spawn), so the component is
        // resolved once and only its ancestors are looked up in the
        // running teammates' index of directories (`running.rs`): a spawn
        // costs the same however many teammates run.
        let component = crate::layout::canonical(&req.component);
        let teammates = inner.teammates.lock().expect("teammates lock");
        for (name, dir) in teammates.holding(team, &component, &req.name) {
            let protected = [Protected::new(Kind::Component, &req.component)];
            check(name, std::path::Path::new(dir), &protected).map_err(invalid)?;
        }
        Ok(())
    }
}

impl Host {
    /// Spawns a component teammate and starts its runner, in the backend
    /// [`BackendOptions`](crate::backends::BackendOptions) select (in-process by default). Returns once it is
    /// registered, its prompt is in its inbox and it is starting. A request
    /// without a notification level gets [`HostOptions::notifications`](super::HostOptions::notifications).
    /// A teammate [`Host::compile`] compiled for leaves [`Host::joining`]
    /// here, spawned or not. A name that looks like the lead, the person,
    /// the host, a flag or another member is refused
    /// ([`crate::store::names::check_new_member_name`]). While
    /// [`Host::shutdown_team`] stops the team, a spawn is refused
    /// ([`Error::Spawn`], "shutting down"); one already under way when the
    /// stop began is waited for (within the stop's timeout), and its
    /// teammate asked to stop too.
    pub async fn spawn(&self, team: &str, req: SpawnRequest) -> Result<TeammateInfo> {
        let team = self.team(team)?;
        let name = req.name.clone();
        let spawned = self.spawn_into(&team, req).await;
        self.joined(team.name(), &name);
        spawned
    }

    pub(super) async fn spawn_into(
        &self,
        team: &Team,
        mut req: SpawnRequest,
    ) -> Result<TeammateInfo> {
        // Until the teammate is in the index, where a stop finds it.
        let _start = self.inner.starts.begin(team.name())?;
        self.admit(team, &mut req)?;
        self.ensure_lease(team.name()).await?;
        let backend = self.chosen_backend();
        tracing::debug!(teammate = %req.name, backend = %backend.kind(), "spawning");
        let recording = Recording::new(self, team, &req, backend.kind());
        let mut env = self.spawn_env(team)?;
        env.before_start = Some(recording.hook());
        let spawned = backend.spawn(env, team, req).await;
        recording.finish(self, team, spawned)
    }

    /// The checks a request passes before anything is compiled or
    /// recorded (the store's `add_member` checks the name again, with the
    /// members it holds), and its notification level when it has none.
    pub(super) fn admit(&self, team: &Team, req: &mut SpawnRequest) -> Result<()> {
        self.admit_with(team, req, &self.layout_checker())
    }

    /// [`Host::admit`] with the host's paths resolved already.
    pub(super) fn admit_with(
        &self,
        team: &Team,
        req: &mut SpawnRequest,
        host_paths: &crate::layout::Checker,
    ) -> Result<()> {
        crate::store::names::check_new_member_name(&req.name)?;
        self.check_layout_with(team.name(), req, host_paths)?;
        req.settings
            .notifications
            .get_or_insert(self.inner.opts.notifications);
        Ok(())
    }

    /// The backend this host spawns teammates in ([`BackendOptions`](crate::backends::BackendOptions)).
    pub(super) fn chosen_backend(&self) -> Box<dyn backends::Backend> {
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
        backends::backend(kind)
    }
}

/// What a resume needs to spawn a teammate again, under the member's final
/// name, written by the backend once the member is registered and before
/// it can run ([`SpawnEnv::before_start`](crate::backends::SpawnEnv)): a
/// host killed at any moment after the teammate's first step leaves a
/// record (`status` then shows it dead, and resume brings it back). The
/// component's hash is that of what runs: the one the in-process backend
/// loaded when it checked the request, or, for a teammate process, the
/// cache's for its file (no second read). A record that cannot be written
/// costs only that, so the spawn stands.
pub(super) struct Recording {
    hook: crate::backends::BeforeStart,
    /// The member's name once its spawn record is written.
    recorded: Arc<Mutex<Option<String>>>,
    /// When this host holds a lease on the team, the run record goes to
    /// the store beside it (`run_record.rs`): its revision, to remove it
    /// when the teammate ends.
    run_written: Arc<Mutex<Option<crate::store::Revision>>>,
}

impl Recording {
    pub(super) fn new(host: &Host, team: &Team, req: &SpawnRequest, kind: BackendKind) -> Self {
        let recorded = Arc::new(Mutex::new(None::<String>));
        let run_written = Arc::new(Mutex::new(None::<crate::store::Revision>));
        let runtime = host.inner.runtime.clone();
        // Owned, so that a backend may run it on a blocking thread (its
        // writes are synced, and a run record may go over the network).
        let (host, team, request) = (host.clone(), team.clone(), req.clone());
        let (recorded_by, run_written_by) = (recorded.clone(), run_written.clone());
        let hook = move |member: &crate::store::Member, known: Option<&str>| {
            let (req, team, home) = (&request, &team, &host.inner.home);
            let hash = match known {
                Some(hash) => Ok(hash.to_string()),
                None => runtime.cache().load(&req.component).map(|(hash, _)| hash),
            };
            let written = hash
                .map_err(|e| Error::Component {
                    path: req.component.clone(),
                    message: format!("{e:#}"),
                })
                .and_then(|hash| {
                    let mut record =
                        crate::home::spawn_record::SpawnRecord::new(req, kind.as_str(), hash)?;
                    record.name = member.name.clone();
                    crate::home::spawn_record::record(home, team.name(), &record)?;
                    Ok(record)
                });
            match written {
                Ok(record) => {
                    *recorded_by.lock().expect("record lock") = Some(member.name.clone());
                    match host.record_run(team, &record) {
                        Ok(rev) => *run_written_by.lock().expect("record lock") = rev,
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
        Recording {
            hook: Arc::new(hook),
            recorded,
            run_written,
        }
    }

    /// The hook the backend runs before the teammate can run.
    pub(super) fn hook(&self) -> crate::backends::BeforeStart {
        self.hook.clone()
    }

    /// Keeps the spawned teammate in the host's index, or, for a start
    /// that failed after its record was written, removes that record (no
    /// member is left to resume).
    pub(super) fn finish(
        self,
        host: &Host,
        team: &Team,
        spawned: Result<crate::backends::Spawned>,
    ) -> Result<TeammateInfo> {
        let spawned = match spawned {
            Ok(s) => s,
            Err(e) => {
                let name = self.recorded.lock().expect("record lock").take();
                if let Some(name) = name {
                    let _ = crate::home::spawn_record::remove(&host.inner.home, team.name(), &name);
                }
                return Err(e);
            }
        };
        let info = host.keep(team, spawned);
        if let Some(rev) = self.run_written.lock().expect("record lock").take() {
            host.forget_run_when_done(team, &info.name, rev);
        }
        Ok(info)
    }
}
