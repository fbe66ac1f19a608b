//! [`Host::attach`]: run a teammate whose member entry and spawn prompt its
//! lead has already written — what `teamhost teammate` does when a Claude Code
//! lead (or teamhost's process and tmux backends) starts it. Nothing is
//! registered: the entry is used as it is (its unknown fields survive every
//! later read-modify-write), and the prompt is taken from the inbox by the
//! runner's first poll.
//!
//! Also the pieces [`Host::spawn`] shares with it: the spawn environment, the
//! team's file watch ([`TeamWatch`]), and keeping the teammate's handle.

use std::path::PathBuf;

use tokio::sync::watch;

use super::api::info;
use super::{Host, SpawnRequest, TeammateInfo};
use crate::backends::assembly::{self, Placement};
use crate::backends::{SpawnEnv, Spawned};
use crate::error::{Error, Result};
use crate::runner::watch::TeamWatch;
use crate::store::Team;

/// How an attached teammate presents itself. `Attach::default()`: backend
/// and pane `in-process`, guest output discarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach {
    /// `backendType` it reports in `shutdown_approved` (`tmux` when a lead
    /// started it in a pane).
    pub backend_type: String,
    /// `paneId` it reports in `shutdown_approved` (`$TMUX_PANE` in a pane).
    pub pane_id: String,
    /// File receiving the guest's stdout and stderr; discarded when `None`.
    pub guest_log: Option<PathBuf>,
    /// Whether it is brought back after its host died (`teamhost teammate
    /// --resumed`): it then takes over its earlier life's unfinished task,
    /// waiting plan and permission requests, conversation and saved state
    /// (see [`Host::resume`]); otherwise what an earlier teammate of its
    /// name left on this machine is cleared.
    pub resumed: bool,
}

impl Default for Attach {
    fn default() -> Self {
        Attach {
            backend_type: "in-process".into(),
            pane_id: "in-process".into(),
            guest_log: None,
            resumed: false,
        }
    }
}

/// What counts as a teammate's own claim of a task in progress under its
/// name, when its earlier life's work is handed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClaimEvidence {
    /// The claim ledger this machine's host kept ([`Host::resume`](super::Host::resume)).
    Ledger,
    /// The task list alone: the earlier life ran on another machine, whose
    /// ledger is out of reach ([`Host::adopt`](super::Host::adopt)). Any member may write the
    /// task list, so a task a peer put in progress under the teammate's
    /// name is handed back too.
    TaskList,
}

impl Host {
    /// Runs `req.name`, a member its lead already registered in `team`, in
    /// this host: instantiates `req.component` in a sandbox holding only
    /// `req.cwd` and starts its runner, which takes the spawn prompt from the
    /// inbox. `req.prompt` is not used. Fails when the member is not in the
    /// team's config or already runs in this host.
    pub async fn attach(&self, team: &str, req: SpawnRequest, how: Attach) -> Result<TeammateInfo> {
        self.attach_with(team, req, how, None).await
    }

    /// [`Host::attach`], with what its earlier life left in flight already
    /// gathered when `gathered` is given (an adoption: `embed/failover/adopt.rs`).
    pub(super) async fn attach_with(
        &self,
        team: &str,
        mut req: SpawnRequest,
        how: Attach,
        gathered: Option<crate::teammate::Resumed>,
    ) -> Result<TeammateInfo> {
        req.settings
            .notifications
            .get_or_insert(self.inner.opts.notifications);
        let team = self.team(team)?;
        self.check_layout(team.name(), &req)?;
        let config = team.config()?;
        let Some(member) = config.member(&req.name).cloned() else {
            return Err(Error::HostedTeammate(format!(
                "{} is not a member of team {} (members: {}): its lead registers it in {} before starting it",
                req.name,
                team.name(),
                config.member_names().join(", "),
                team.location().display()
            )));
        };
        let key = (team.name().to_string(), member.name.clone());
        if let Some(s) = self
            .inner
            .teammates
            .lock()
            .expect("teammates lock")
            .get(&key)
        {
            if !s.state.borrow().is_finished() {
                return Err(Error::HostedTeammate(format!(
                    "{} already runs in this host",
                    member.name
                )));
            }
        }
        let env = self.spawn_env(&team)?;
        let prepared = assembly::prepare(env.runtime, &req).await?;
        let resumed = if gathered.is_some() {
            gathered
        } else if how.resumed {
            // A lead that restarts the teammate itself (`teamhost teammate
            // --resumed`): a completion its cut turn made reaches the lead
            // here (after `Host::resume` the note is already taken).
            if let Some(id) = self.report_cut_completion(&team, &member).await? {
                tracing::info!(teammate = %member.name, task = %id, "reported a completion its earlier life made as it was cut");
            }
            Some(
                self.gather_resumed(&team, &member.name, ClaimEvidence::Ledger)
                    .await?,
            )
        } else {
            None
        };
        let place = Placement {
            backend_type: how.backend_type,
            pane_id: how.pane_id,
            log: how.guest_log,
            resumed,
        };
        let ready = assembly::instantiate(&env, &team, member, &req, prepared, place).await?;
        let spawned = ready.run(&env);
        Ok(self.keep(&team, spawned))
    }

    /// What a backend needs from this host to start a teammate of `team`.
    /// With a team budget, the team's cost account is opened first (made,
    /// the first time), so a teammate in a process of its own finds it.
    pub(super) fn spawn_env(&self, team: &Team) -> Result<SpawnEnv<'_>> {
        let inner = &self.inner;
        let hub = inner.opts.models.hub();
        if hub.team_budget().is_some() {
            crate::backends::team_account::open(hub, team)?;
        }
        let log_dir = inner
            .opts
            .log_dir
            .clone()
            .unwrap_or_else(|| inner.home.logs());
        Ok(SpawnEnv {
            home: inner.home.clone(),
            runtime: &inner.runtime,
            hub: &inner.hub,
            events: &inner.events,
            poll_interval: inner.opts.poll_interval,
            log_dir,
            auto_approve_plans: inner.opts.auto_approve_plans,
            hooks: inner.opts.hooks.clone(),
            backends: &inner.opts.backends,
            config_changes: self.watch_team(team)?,
            watched: inner.opts.watch_files,
            models: &inner.opts.models,
            before_start: None,
            lead_seat: None,
        })
    }

    /// Starts watching `team`'s files (once per team) unless watching is off;
    /// returns its config-change ticks.
    fn watch_team(&self, team: &Team) -> Result<watch::Receiver<u64>> {
        if !self.inner.opts.watch_files {
            // Closed at once: external teammates' states then follow the
            // fallback poll only.
            let (_, rx) = watch::channel(0);
            return Ok(rx);
        }
        let mut watches = self.inner.watches.lock().expect("watches lock");
        if let Some(w) = watches.get(team.name()) {
            return Ok(w.config_changes());
        }
        let w = TeamWatch::start(team, self.inner.hub.clone())?;
        let rx = w.config_changes();
        watches.insert(team.name().to_string(), w);
        Ok(rx)
    }

    /// Keeps the handle of a started teammate and describes it.
    pub(super) fn keep(&self, team: &Team, spawned: Spawned) -> TeammateInfo {
        let info = info(team.name(), &spawned);
        self.inner
            .teammates
            .lock()
            .expect("teammates lock")
            .insert((team.name().to_string(), info.name.clone()), spawned);
        info
    }
}

/// A spawn environment that seats its member as the team's lead
/// ([`Host::start_lead`]).
pub(super) fn lead_env(
    mut env: SpawnEnv<'_>,
    seat: std::sync::Arc<dyn crate::runtime::lead_host::LeadHost>,
) -> SpawnEnv<'_> {
    env.lead_seat = Some(seat);
    env
}
