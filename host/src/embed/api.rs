//! [`Host`]: create teams, spawn component teammates, talk to them as the
//! lead, watch them, and shut them down.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::broadcast;

use super::{Event, SpawnRequest, TeammateInfo, TeammateState};
use crate::backends::{self, BackendKind, BackendOptions, Spawned};
use crate::error::{Error, Result};
use crate::home::Home;
use crate::protocol::{ShutdownRequest, WireMessage};
use crate::runner::wake::WakeHub;
use crate::runner::watch::TeamWatch;
use crate::runner::NotificationLevel;
use crate::runtime::Runtime;
use crate::store::{NewTeam, OutgoingMessage, Store, Team, TeamConfig};

/// Settings of a [`Host`]. `HostOptions::default()`: artifacts cached under
/// `{home}/cache/components`, guest logs under `{home}/logs/{team}/{name}.log`,
/// fallback poll every 500 ms (the reference's interval), events buffered 1,024
/// deep, teammates in-process ([`BackendOptions::default`]), writes by other
/// processes watched through the store's change feed, every idle notification
/// delivered to the lead ([`NotificationLevel::All`]).
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Where precompiled components are kept (`None`: `{home}/cache/components`).
    pub cache_dir: Option<PathBuf>,
    /// Where guest stdout/stderr go (`None`: `{home}/logs`).
    pub log_dir: Option<PathBuf>,
    /// Fallback poll for writes by other processes: how often an idle
    /// teammate looks for work unasked when `watch_files` is off (the
    /// reference's 500 ms); with it on, the change feed wakes teammates and
    /// they poll ten times less often, in case an event was lost.
    pub poll_interval: Duration,
    /// Capacity of the event channel.
    pub event_capacity: usize,
    /// Approve every submitted plan at once, as the reference does. Off by
    /// default: a plan waits for the lead.
    pub auto_approve_plans: bool,
    /// Where teammates run (in-process, child processes, tmux panes).
    pub backends: BackendOptions,
    /// Wake teammates on writes by other processes through the store's
    /// change feed (inotify on the file store, the server's notices on a
    /// NATS store) instead of only the fallback poll. Default on.
    pub watch_files: bool,
    /// The lead's hook commands (none by default).
    pub hooks: std::sync::Arc<crate::hooks::Hooks>,
    /// Which of the teammates' `idle_notification`s reach the lead's inbox:
    /// `all` (the default, the reference's behaviour), `state-changes` (the
    /// first after start, completed tasks and failures) or `none`. The others
    /// are appended to the lead's history only; every other message is always
    /// delivered. See [`crate::runner::notify`]. [`Host::spawn`] gives it to
    /// each teammate whose [`SpawnRequest::notifications`] is `None`; the
    /// process and tmux backends pass it on as `teamhost teammate
    /// --notifications`.
    pub notifications: NotificationLevel,
    /// The model broker teammates' `model.complete` calls go through
    /// (providers, credentials, aliases, record/replay). Default: none
    /// configured, so every call is `denied`.
    pub models: super::ModelAccess,
    /// Host leases (host failover): `Some(length)` makes this host take a lease
    /// on each team it spawns into on a store with failover (NATS), renewed
    /// every `length / 3`, and fences its store with it (see
    /// `embed/failover/host_lease.rs`). `None` (the default): no lease, no fence.
    /// `teamhost run` sets `Some(--lease)` on a store with failover.
    pub lease: Option<Duration>,
    /// Who this host is in leases and run records. `None` (the default):
    /// [`HostIdentity::this_process`](super::lease::HostIdentity::this_process).
    /// Set it only to play several hosts in one process (tests).
    pub identity: Option<super::lease::HostIdentity>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            cache_dir: None,
            log_dir: None,
            poll_interval: Duration::from_millis(500),
            event_capacity: 1024,
            auto_approve_plans: false,
            backends: BackendOptions::default(),
            watch_files: true,
            hooks: Default::default(),
            notifications: NotificationLevel::All,
            models: super::ModelAccess::default(),
            lease: None,
            identity: None,
        }
    }
}

/// Shutdown requests written at once: enough to overlap their syncs, few
/// enough not to queue hundreds of threads on one directory's lock.
const SHUTDOWN_REQUESTS_AT_ONCE: usize = 32;

/// What [`Host::shutdown_team`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Teammates that approved and stopped (or had already stopped).
    pub stopped: Vec<String>,
    /// Teammates that did not stop in time and were killed.
    pub killed: Vec<String>,
}

/// Runs teams of WebAssembly teammates inside the caller's tokio runtime.
/// Cheap to clone; all clones drive the same teammates. Spawning needs a
/// multi-threaded tokio runtime.
#[derive(Clone)]
pub struct Host {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) store: Store,
    /// The machine-local home: component cache, logs, worktrees, process
    /// records. Apart from the store, which may live elsewhere.
    pub(super) home: Home,
    pub(super) runtime: Runtime,
    pub(super) hub: Arc<WakeHub>,
    pub(super) events: broadcast::Sender<Event>,
    pub(super) opts: HostOptions,
    pub(super) teammates: Mutex<BTreeMap<(String, String), Spawned>>,
    /// The teammates [`Host::compile`] works for, by `(team, name)`, until
    /// they are spawned: `Compiling`, then `Starting`.
    pub(super) joining: Mutex<BTreeMap<(String, String), TeammateState>>,
    /// File watches of the teams this host runs teammates of.
    pub(super) watches: Mutex<HashMap<String, TeamWatch>>,
    /// The leases this host holds, and the fence of its store.
    pub(super) leases: Arc<super::lease::table::HostLeases>,
}

impl Host {
    /// A host over `home` with default options.
    pub fn new(home: Home) -> Result<Host> {
        Host::with_options(home, HostOptions::default())
    }

    /// A host over `home` with `opts`: teams in the file store under
    /// `home`, machine-local files under `home` too.
    pub fn with_options(home: Home, opts: HostOptions) -> Result<Host> {
        Host::with_store(home.clone(), Store::new(home), opts)
    }

    /// A host whose teams live in `store` (any backend) and whose
    /// machine-local files (component cache, logs, worktrees, process
    /// records) live under `home`. The store's observer is replaced by the
    /// host's own, which wakes its teammates.
    ///
    /// The first host of a process also removes what killed hosts left of
    /// their Bash calls ([`crate::tools::cgroup::sweep_dead_hosts`]).
    pub fn with_store(home: Home, store: Store, opts: HostOptions) -> Result<Host> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| {
            crate::tools::cgroup::sweep_dead_hosts();
        });
        let cache = opts
            .cache_dir
            .clone()
            .unwrap_or_else(|| home.component_cache());
        let runtime = Runtime::new(Some(cache)).map_err(|e| Error::Component {
            path: PathBuf::new(),
            message: format!("cannot start the WebAssembly engine: {e:#}"),
        })?;
        let (events, _) = broadcast::channel(opts.event_capacity);
        let hub = Arc::new(WakeHub::new(events.clone()));
        let me = opts
            .identity
            .clone()
            .unwrap_or_else(|| super::lease::HostIdentity::this_process().clone());
        let (leases, store) = super::lease::table::HostLeases::new(me, opts.lease, store);
        let store = store.with_observer(hub.clone());
        // The keys of `sign_lead_entries` live in this host's memory and
        // in the home's keyring (0600), for the lead's commands.
        let store = match store.lead_guard() {
            None if opts.backends.sign_lead_entries => {
                let ring = Arc::new(crate::home::lead_keys::HomeKeyring::new(home.clone()));
                store.with_lead_guard(Arc::new(crate::store::LeadGuard::from_keyring(ring)))
            }
            _ => store,
        };
        Ok(Host {
            inner: Arc::new(Inner {
                store,
                home,
                runtime,
                hub,
                events,
                opts,
                teammates: Mutex::new(BTreeMap::new()),
                joining: Mutex::new(BTreeMap::new()),
                watches: Mutex::new(HashMap::new()),
                leases,
            }),
        })
    }

    /// The store (its writes wake this host's teammates).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The machine-local home (component cache, logs, worktrees, process
    /// records).
    pub fn home(&self) -> &Home {
        &self.inner.home
    }

    /// Which models this host's teammates may call, and through what
    /// ([`HostOptions::models`]).
    pub fn model_access(&self) -> &super::ModelAccess {
        &self.inner.opts.models
    }

    /// The shared WebAssembly runtime (engine and component cache).
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// The team called `name`.
    pub fn team(&self, name: &str) -> Result<Team> {
        self.inner.store.team(name)
    }

    /// Creates a team with the caller as its lead (`team-lead`).
    pub fn create_team(&self, name: &str, new: NewTeam) -> Result<TeamConfig> {
        self.team(name)?.create(new)
    }

    /// Spawns a component teammate and starts its runner, in the backend
    /// [`BackendOptions`] select (in-process by default). Returns once it is
    /// registered, its prompt is in its inbox and it is starting. A request
    /// without a notification level gets [`HostOptions::notifications`].
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

    /// Sends `text` from the lead to a member's inbox.
    pub fn send_as_lead(
        &self,
        team: &str,
        to: &str,
        text: &str,
        summary: Option<&str>,
    ) -> Result<()> {
        let team = self.team(team)?;
        let lead = team.config()?.lead_name().to_string();
        let mut msg = OutgoingMessage::new(lead, text);
        msg.summary = summary.map(str::to_string);
        team.send(to, msg).map(|_| ())
    }

    /// Hands a message straight to a running teammate's next turn, ahead of
    /// its inbox (a person typing to it). It arrives `from: "user"`.
    pub fn inject(&self, team: &str, name: &str, text: &str) -> Result<()> {
        let team = self.team(team)?;
        let map = self.inner.teammates.lock().expect("teammates lock");
        let spawned = map
            .get(&(team.name().to_string(), name.to_string()))
            .filter(|s| !s.state.borrow().is_finished())
            .ok_or_else(|| Error::HostedTeammate(format!("{name} is not running in this host")))?;
        let Some(inject) = &spawned.inject else {
            return Err(Error::HostedTeammate(format!(
                "{name} runs in its own process ({} backend): send it a message instead",
                spawned.backend
            )));
        };
        spawned.pending_injections.fetch_add(1, Ordering::SeqCst);
        if inject.send(text.to_string()).is_err() {
            spawned.pending_injections.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::HostedTeammate(format!("{name} has stopped")));
        }
        self.inner.hub.register(team.name(), name).wake.notify_one();
        Ok(())
    }

    /// Permission and plan requests in the lead's mail, oldest first,
    /// answered ones included ([`Host::pending_requests`] leaves them out).
    pub fn requests(&self, team: &str) -> Result<Vec<crate::approvals::Request>> {
        crate::approvals::requests(&self.team(team)?)
    }

    /// The permission and plan requests still waiting for the lead, oldest
    /// first (see [`approvals::pending`](crate::approvals::pending)).
    pub fn pending_requests(&self, team: &str) -> Result<Vec<crate::approvals::Request>> {
        crate::approvals::pending(&self.team(team)?)
    }

    /// A receiver of every event from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// The teammates this host spawned into `team`, finished ones included.
    pub fn teammates(&self, team: &str) -> Vec<TeammateInfo> {
        let Ok(team) = self.team(team) else {
            return Vec::new();
        };
        self.inner
            .teammates
            .lock()
            .expect("teammates lock")
            .iter()
            .filter(|((t, _), _)| t == team.name())
            .map(|(_, s)| info(team.name(), s))
            .collect()
    }

    /// Names of the teammates of `team` this host runs that have not finished.
    pub(super) fn running(&self, team: &str) -> Vec<String> {
        self.teammates(team)
            .into_iter()
            .filter(|t| !t.state.is_finished())
            .map(|t| t.name)
            .collect()
    }

    /// Waits until every running teammate of `team` is idle with nothing left
    /// to do: no unread message, and no claimable task for one that claims.
    pub async fn wait_idle(&self, team: &str) -> Result<()> {
        let team = self.team(team)?;
        let mut events = self.events();
        loop {
            self.check_lease(team.name())?;
            if self.is_settled(&team)? {
                return Ok(());
            }
            // Re-check on any event, and at least every 50 ms: writes by other
            // processes produce no event here.
            let _ = tokio::time::timeout(Duration::from_millis(50), events.recv()).await;
        }
    }

    /// Settled: no running teammate has an unread message, none could claim a
    /// task, and every one is idle and not between a wake-up and its turn.
    /// The inbox and tasks are read before the states, so a message taken
    /// between the two reads is seen as the taker's `busy` flag.
    fn is_settled(&self, team: &Team) -> Result<bool> {
        // A teammate that is not idle settles nothing: answer from memory,
        // without reading a file, on most of the many events of a busy team.
        if !self.all_idle(team.name()) {
            return Ok(false);
        }
        let running = self.running(team.name());
        for name in &running {
            if !team.unread(name)?.is_empty() {
                return Ok(false);
            }
        }
        let claimers: Vec<String> = {
            let map = self.inner.teammates.lock().expect("teammates lock");
            running
                .iter()
                .filter(|n| {
                    map.get(&(team.name().to_string(), (*n).clone()))
                        .is_some_and(|s| s.auto_claim)
                })
                .cloned()
                .collect()
        };
        if !claimers.is_empty() {
            let tasks = team.list_tasks()?;
            if crate::store::tasks::claimable(&tasks).is_some() {
                // Someone will claim it unless every claimer is busy with an
                // unfinished task of its own (the busy check).
                let busy = |n: &String| {
                    tasks.iter().any(|t| {
                        t.owner.as_deref() == Some(n.as_str())
                            && t.status != crate::store::TaskStatus::Completed
                    })
                };
                if !claimers.iter().all(busy) {
                    return Ok(false);
                }
            }
        }
        Ok(self.all_idle(team.name()))
    }

    /// Whether every running teammate of `team` is idle (or waiting for its
    /// plan's approval), not between a wake-up and its turn, with no
    /// injected message waiting.
    fn all_idle(&self, team: &str) -> bool {
        let map = self.inner.teammates.lock().expect("teammates lock");
        map.iter()
            .filter(|((t, _), s)| t == team && !s.state.borrow().is_finished())
            .all(|(_, s)| {
                let idle = matches!(
                    *s.state.borrow(),
                    TeammateState::Idle | TeammateState::AwaitingPlanApproval
                );
                idle && !s.busy.load(Ordering::SeqCst)
                    && s.pending_injections.load(Ordering::SeqCst) == 0
            })
    }

    /// Asks every running teammate of `team` to shut down (a
    /// `shutdown_request` from the lead with `reason`), waits up to `timeout`
    /// for them to approve and stop, and kills the rest.
    ///
    /// The lead is going away, so a permission request it has not answered
    /// will not be: a teammate of this host waiting for the lead's answer is
    /// denied at once, "the host is stopping ({reason})"
    /// ([`crate::runtime::Stopping`]), and asks nothing more; its turn ends
    /// and it takes its shutdown request. (A teammate in its own process
    /// ends such a wait when it is killed, by SIGTERM.)
    pub async fn shutdown_team(
        &self,
        team: &str,
        reason: &str,
        timeout: Duration,
    ) -> Result<ShutdownReport> {
        let team = self.team(team)?;
        // Whoever still waits to join will not: the team is closing.
        self.forget_joining(team.name());
        let lead = team.config()?.lead_name().to_string();
        let running = self.running(team.name());
        // Every request at once: each is its own inbox's write, so they
        // proceed in parallel instead of one synced write after another.
        let mut sending = tokio::task::JoinSet::new();
        let at_once = Arc::new(tokio::sync::Semaphore::new(SHUTDOWN_REQUESTS_AT_ONCE));
        for name in &running {
            let (team, lead, name) = (team.clone(), lead.clone(), name.clone());
            let reason = reason.to_string();
            let slot = at_once.clone().acquire_owned().await;
            sending.spawn_blocking(move || {
                let _slot = slot;
                let request = ShutdownRequest::new(&name, &lead, Some(reason));
                team.send(&name, OutgoingMessage::new(&lead, request.to_text()))
            });
        }
        let started = std::time::Instant::now();
        while let Some(sent) = sending.join_next().await {
            sent.map_err(|e| {
                Error::HostTask(format!("sending a shutdown request panicked: {e}"))
            })??;
        }
        tracing::debug!(team = %team.name(), teammates = running.len(), took = ?started.elapsed(), "shutdown requests sent");
        // After the requests: a wait denied now ends a turn whose teammate
        // then finds its shutdown request waiting.
        for name in &running {
            self.stop_waits(team.name(), name, reason);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut report = ShutdownReport::default();
        for name in &running {
            let mut state = self.state_receiver(team.name(), name);
            let done = tokio::time::timeout_at(deadline, async {
                let Some(rx) = state.as_mut() else { return };
                let _ = rx.wait_for(|s| s.is_finished()).await;
            })
            .await;
            if done.is_ok() {
                report.stopped.push(name.clone());
            } else {
                self.kill(team.name(), name).await?;
                report.killed.push(name.clone());
            }
        }
        tracing::debug!(team = %team.name(), took = ?started.elapsed(), "every teammate stopped");
        self.release_lease_if_done(team.name()).await;
        Ok(report)
    }

    /// Stops a teammate at once (its current turn is abandoned), returns its
    /// tasks to `pending`, removes it from the team and tells the lead.
    pub async fn kill(&self, team: &str, name: &str) -> Result<()> {
        let team = self.team(team)?;
        let key = (team.name().to_string(), name.to_string());
        let (handle, grace, backend) = {
            let map = self.inner.teammates.lock().expect("teammates lock");
            let spawned = map.get(&key).ok_or_else(|| {
                Error::HostedTeammate(format!("{name} was not spawned by this host"))
            })?;
            // A wait for the lead ends now: the turn can end cleanly
            // within the grace below.
            spawned.stopping.stop("the teammate is being stopped");
            let _ = spawned.kill.send(true);
            (
                spawned.join.abort_handle(),
                spawned.stop_grace,
                spawned.backend,
            )
        };
        // A teammate stuck inside a turn does not see the kill flag: give it a
        // moment to stop cleanly, then abort its task and clean up here. (An
        // external teammate's monitor stops its process itself: SIGTERM, then
        // SIGKILL, then the same cleanup.)
        let mut state = self.state_receiver(team.name(), name);
        let stopped = tokio::time::timeout(grace, async {
            if let Some(rx) = state.as_mut() {
                let _ = rx.wait_for(|s| s.is_finished()).await;
            }
        })
        .await;
        if stopped.is_err() && backend != BackendKind::InProcess {
            return Err(Error::Backend(format!(
                "{name}'s process did not end within {grace:?} of SIGKILL"
            )));
        }
        if stopped.is_err() {
            handle.abort();
            let team2 = team.clone();
            let n = name.to_string();
            let cleanup = crate::blocking::try_run("cleanup after a kill", move || {
                let config = team2.config()?;
                let id = config
                    .member(&n)
                    .map(|m| m.agent_id.clone())
                    .unwrap_or_default();
                let u = team2.unassign_agent(&n, &id, true)?;
                let _ = team2.remove_member(&n);
                let lead = config.lead_name().to_string();
                team2.deliver(
                    &lead,
                    OutgoingMessage::new(crate::runner::HOST_SENDER, u.notification),
                )?;
                Ok(())
            })
            .await;
            if let Err(e) = cleanup {
                tracing::error!(teammate = %name, error = %e, "cleanup after kill failed");
            }
            self.inner.hub.unregister(team.name(), name);
            if let Some(s) = self
                .inner
                .teammates
                .lock()
                .expect("teammates lock")
                .get_mut(&key)
            {
                s.state = watch_of(TeammateState::Killed);
            }
            let _ = self.inner.events.send(Event::StateChanged {
                team: team.name().into(),
                name: name.into(),
                state: TeammateState::Killed,
            });
        }
        Ok(())
    }

    /// Kills every teammate of `team` still running, stops any process
    /// another teamhost process started for it (SIGTERM, then SIGKILL after
    /// [`BackendOptions::stop_timeout`]) and closes the tmux panes teamhost
    /// recorded for it, deletes the team's state from the store, and removes its teammates' clean worktrees; worktrees
    /// with changes are kept and listed in the report.
    ///
    /// Refused, before anything is stopped, while another live host on this
    /// machine runs the team ([`Error::TeamRunning`], see
    /// [`backends::live_host`]): this host deletes its own teams only.
    pub async fn delete_team(&self, team: &str) -> Result<crate::worktree::Cleanup> {
        let t = self.team(team)?;
        let (h, tt) = (self.inner.home.clone(), t.clone());
        crate::store::blocking("looking for the team's host", move || {
            backends::live_host::refuse_if_live(
                &h,
                &tt,
                "deleting the team now would delete the tasks, inboxes and requests it is using",
            )
        })
        .await?;
        // All at once: each leaves the team through the store, and leaving
        // together they share the config's writes (group commit).
        let mut killing = tokio::task::JoinSet::new();
        for info in self.teammates(t.name()) {
            if !info.state.is_finished() {
                let (host, team) = (self.clone(), t.name().to_string());
                killing.spawn(async move { host.kill(&team, &info.name).await });
            }
        }
        while let Some(killed) = killing.join_next().await {
            killed.map_err(|e| Error::HostTask(format!("stopping a teammate panicked: {e}")))??;
        }
        let (home, timeout) = (
            self.inner.home.clone(),
            self.inner.opts.backends.stop_timeout,
        );
        // Other processes' teammates first, while this host still watches
        // them leave; then the team's state, with nothing watching.
        let (h, name) = (home.clone(), t.name().to_string());
        crate::store::blocking("stopping the team's processes", move || {
            backends::started::stop_all(&h, &name, timeout)
        })
        .await?;
        self.inner
            .teammates
            .lock()
            .expect("teammates lock")
            .retain(|(tn, _), _| tn != t.name());
        self.inner
            .watches
            .lock()
            .expect("watches lock")
            .remove(t.name());
        let done = crate::store::blocking("deleting the team", move || {
            backends::teardown::delete_team(&home, &t, true, timeout)
        })
        .await?;
        self.release_lease_if_done(team).await;
        Ok(done.worktrees)
    }

    /// Stops every teammate of this host where it is, at once, waiting for
    /// nothing and writing nothing — for a host about to exit (`teamhost
    /// run`'s forced stop). An in-process teammate's runner is dropped (a
    /// turn in progress is abandoned; the Bash calls running in this
    /// process have their process groups killed); a teammate process this
    /// host started gets SIGTERM and leaves the team on its own. The teams'
    /// files stay as a crash would leave them: `Host::resume` brings them
    /// back. Returns how many teammates were running.
    pub fn abort_all(&self) -> usize {
        let me = std::process::id();
        let mut stopped = 0;
        let mut teams = std::collections::BTreeSet::new();
        for ((team, _), s) in self.inner.teammates.lock().expect("teammates lock").iter() {
            if s.state.borrow().is_finished() {
                continue;
            }
            stopped += 1;
            s.stopping.stop("the host is stopping at once");
            let _ = s.kill.send(true);
            if s.backend == BackendKind::InProcess {
                s.join.abort();
            } else {
                teams.insert(team.clone());
            }
        }
        crate::tools::bash::kill_in_flight();
        for team in teams {
            for rec in crate::home::started::list(&self.inner.home, &team).unwrap_or_default() {
                if rec.host_pid == me && rec.open_if_running().is_some() {
                    backends::started::signal(rec.pid, libc::SIGTERM);
                }
            }
        }
        stopped
    }

    /// Ends the waits for the lead of `name` (a teammate this host runs),
    /// and any later one, with `reason`: a permission request it waits on
    /// is denied at once, "the host is stopping ({reason})", and recorded
    /// as answered. A teammate this host did not spawn is left alone.
    /// `teamhost teammate` calls it when the host that started it says
    /// the team is stopping (SIGUSR1).
    pub fn stop_waits(&self, team: &str, name: &str, reason: &str) {
        let map = self.inner.teammates.lock().expect("teammates lock");
        if let Some(s) = map.get(&(team.to_string(), name.to_string())) {
            s.stopping.stop(reason);
        }
    }

    pub(super) fn state_receiver(
        &self,
        team: &str,
        name: &str,
    ) -> Option<tokio::sync::watch::Receiver<TeammateState>> {
        self.inner
            .teammates
            .lock()
            .expect("teammates lock")
            .get(&(team.to_string(), name.to_string()))
            .map(|s| s.state.clone())
    }
}

pub(super) fn info(team: &str, s: &Spawned) -> TeammateInfo {
    TeammateInfo {
        team: team.to_string(),
        name: s.member.name.clone(),
        agent_id: s.member.agent_id.clone(),
        color: s.member.color.clone().unwrap_or_default(),
        state: s.state.borrow().clone(),
        turns: s.turns.load(Ordering::Relaxed),
    }
}

fn watch_of(state: TeammateState) -> tokio::sync::watch::Receiver<TeammateState> {
    tokio::sync::watch::channel(state).1
}
