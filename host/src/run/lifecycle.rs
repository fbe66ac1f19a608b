//! One run of a manifest's team, from the start to what is left of it:
//! [`Run::start`] ([`Run::prepare`]: the checks that can refuse it;
//! [`Prepared::begin`]: create and seed, or start the lead; approvals),
//! [`Run::until_done`] (spawn, then wait), [`Run::shut_down`] (the shutdown
//! protocol) and [`Run::finish`] (what the run did, read before the team's
//! files go; the team deleted unless kept).

use std::collections::BTreeMap;
use std::future::Future;

use anyhow::Context;
use std::time::{Duration, Instant};

use super::ended::{problems, Ended};
use super::existing::{claim, existing_team};
use super::messages::{count_messages, MessageCounts};
use super::narrator::Narrator;
use super::plan::{RunPlan, Start};
use super::turn_failures::TurnFailures;
use crate::approvals::Decision;
use crate::approvals::Routes;
use crate::embed::{ApprovalDesk, Host, LeadSpec, ShutdownReport, TeammateInfo};
use crate::layout::{Kind, Protected};
use crate::store::config::LEAD_NAME;
use crate::store::{ModelUsage, NewTeam, Task, TaskStatus, Team};

/// A run of a manifest's team on a [`Host`]: led by the person (or the
/// embedding program), by a lead component ([`super::Leader`]), or beside a
/// lead that runs elsewhere ([`Start::Join`], [`Start::Adopt`]). Its
/// phases, in order: [`Run::start`],
/// [`Run::until_done`], [`Run::shut_down`], [`Run::finish`]. A caller that
/// stops between two phases (a forced stop, a store that does not answer)
/// leaves the team as it is, to resume or delete.
pub struct Run {
    host: Host,
    team: Team,
    plan: RunPlan,
    lead: String,
    /// When the run began, in milliseconds since the epoch: failed turns
    /// and decisions stamped before it belong to earlier runs.
    began_ms: u64,
    spawn_took: Duration,
    /// Resumed teammates another host took over: `(name, host)`.
    elsewhere: Vec<(String, String)>,
    /// A standby's (`Adopt`) teammates, taken over from hosts that died.
    adopted: Vec<String>,
    /// `None` beside a lead elsewhere: its host decides.
    _desk: Option<ApprovalDesk>,
    /// A led run's last look at its team before its lead deletes it.
    last_look: Option<super::last_look::Slot>,
    /// Who owned each open task when the shutdown began (a teammate that
    /// stops gives its tasks back: the summary says whose they were).
    owners_before_shutdown: std::sync::Mutex<BTreeMap<String, String>>,
}

/// What a finished run did: everything [`Run::finish`] read before the
/// team's files went, and whether the run succeeded ([`Finished::error`]).
#[derive(Debug)]
pub struct Finished {
    /// How the work phase ended.
    pub ended: Ended,
    /// The tasks as the shutdown left them (a teammate stopped at shutdown
    /// gave its tasks back).
    pub tasks: Vec<Task>,
    /// The open tasks the shutdown took from their owner (a teammate that
    /// stops gives its tasks back): task id → who owned it when the work
    /// ended, as the run's reason for stopping names them.
    pub unassigned: BTreeMap<String, String>,
    /// This host's teammates and how each ended.
    pub teammates: Vec<TeammateInfo>,
    /// Who approved the shutdown and who was killed.
    pub shutdown: ShutdownReport,
    /// The messages exchanged.
    pub messages: MessageCounts,
    /// Failed turns and replay drifts.
    pub turn_failures: TurnFailures,
    /// Who decided which request, since the run began.
    pub decisions: Vec<Decision>,
    /// Each teammate's model spending, by its file stem.
    pub usage: BTreeMap<String, ModelUsage>,
    /// Whether the team's files were kept (always beside a lead
    /// elsewhere: the team is the lead's).
    pub kept: bool,
    /// A standby's (`Adopt`) teammates, taken over from hosts that died.
    pub adopted: Vec<String>,
    /// Why the run failed, one sentence each; empty when it succeeded.
    pub problems: Vec<String>,
}

impl Finished {
    /// Why the run failed, in one sentence; `None` when it succeeded: the
    /// work completed, every teammate stopped cleanly, no turn failed
    /// (unless the plan allowed it) and no replay drifted.
    pub fn error(&self) -> Option<String> {
        (!self.problems.is_empty()).then(|| self.problems.join("; "))
    }
}

/// A run whose checks passed ([`Run::prepare`]) and which has created
/// nothing yet.
pub struct Prepared {
    host: Host,
    team: Team,
    plan: RunPlan,
    lead_spec: Option<LeadSpec>,
    /// `None` beside a lead elsewhere: its host decides.
    routes: Option<Routes>,
    began_ms: u64,
}

impl Prepared {
    /// The run's team (not created yet).
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// Creates the team, seeds its tasks and records this process as its
    /// host (`Fresh`, `Replace`), or reads the one to resume (`Resume`), or
    /// starts the lead component, which forms the team itself (a led run),
    /// or brings a led team back, its teammates and its lead with its seat
    /// (a led `Resume`: [`Host::resume_led`]); then answers the policy's
    /// requests from here on. Nothing else is spawned yet.
    pub async fn begin(self, narrator: &dyn Narrator) -> anyhow::Result<Run> {
        let Prepared {
            host,
            team,
            plan,
            lead_spec,
            routes,
            began_ms,
        } = self;
        let m = &plan.manifest;
        let mut elsewhere = Vec::new();
        let lead = match lead_spec {
            // A standby: the lead is started only if its host dies
            // (`beside::work`).
            Some(_) if plan.start == Start::Adopt => String::new(),
            // Its teammates and its lead, back together; the lead is told.
            Some(spec) if plan.start == Start::Resume => {
                let (report, _) = host
                    .resume_led(team.name(), spec)
                    .await
                    .map_err(anyhow::Error::from)
                    .with_context(|| format!("cannot resume team {:?}", team.name()))?;
                claim(host.home(), &team);
                narrator.line("run", report.describe(team.name()));
                narrator.line(
                    "run",
                    "resumed the lead with its seat as it was kept".into(),
                );
                elsewhere = report.adopted_elsewhere;
                LEAD_NAME.to_string()
            }
            Some(spec) => {
                host.start_lead(team.name(), spec)
                    .await
                    .map_err(anyhow::Error::from)
                    .with_context(|| format!("cannot start the lead of team {:?}", team.name()))?;
                claim(host.home(), &team);
                LEAD_NAME.to_string()
            }
            // The lead's team, made and kept by its own host; its name is
            // read at the end, when the team may exist.
            None if plan.start.is_beside() => String::new(),
            None if plan.start == Start::Resume => team.config()?.lead_name().to_string(),
            None => {
                let config = host.create_team(
                    &m.team.name,
                    NewTeam {
                        description: m.team.description.clone(),
                        ..Default::default()
                    },
                )?;
                claim(host.home(), &team);
                let ids = super::seed::seed_tasks(&team, m)?;
                let store = host
                    .store()
                    .backend()
                    .remote_location()
                    .unwrap_or_else(|| host.home().root().display().to_string());
                narrator.line(
                    "run",
                    format!(
                        "created team {} with {} task(s) in {store}",
                        team.name(),
                        ids.len(),
                    ),
                );
                config.lead_name().to_string()
            }
        };
        let desk = match routes {
            Some(routes) => Some(host.serve_approvals(team.name(), routes)?),
            None => None,
        };
        let last_look = plan
            .is_led()
            .then(|| super::last_look::watch(&host, &team, &lead, began_ms));
        Ok(Run {
            host,
            lead,
            team,
            plan,
            began_ms,
            spawn_took: Duration::ZERO,
            elsewhere,
            adopted: Vec::new(),
            _desk: desk,
            last_look,
            owners_before_shutdown: Default::default(),
        })
    }
}

impl Run {
    /// Starts a run of `plan` on `host`: [`Run::prepare`], then
    /// [`Prepared::begin`].
    pub async fn start(host: &Host, plan: RunPlan, narrator: &dyn Narrator) -> anyhow::Result<Run> {
        Run::prepare(host, plan, narrator)
            .await?
            .begin(narrator)
            .await
    }

    /// Checks everything that can refuse a run before anything is created:
    /// a led plan's goal and catalogue, the layout (no teammate's directory
    /// may hold what the host trusts: [`super::layout_checker`]), an
    /// existing team against [`Start`] (`Replace` deletes one left by a
    /// dead host), and the manifest's `[approvals]`. The default
    /// directories are made.
    pub async fn prepare(
        host: &Host,
        plan: RunPlan,
        narrator: &dyn Narrator,
    ) -> anyhow::Result<Prepared> {
        let began_ms = now_ms();
        let m = &plan.manifest;
        let lead_spec = match plan.is_led() {
            true => Some(super::led::spec(&plan)?),
            false => None,
        };
        let mut protected = plan.protected.clone();
        let settings = host.store().backend().settings_files().into_iter();
        protected.extend(settings.map(|f| Protected::new(Kind::StoreSettings, f)));
        let checker = super::layout_checker(
            host.home().root(),
            &plan.manifest_file,
            m,
            host.model_access(),
            &protected,
        );
        super::check_teammates(&checker, m)?;
        super::check_lead_dirs(&checker, m)?;
        let team = host.team(&m.team.name)?;
        if plan.start.is_beside() {
            super::beside::check(host, &plan, &team)?;
        }
        // Who decides requests: the lead component by default in a led
        // run; else the person (or the embedder), requests routed to the
        // lead waiting for them. Beside a lead elsewhere, its host decides.
        let routes = match plan.start.is_beside() {
            true => None,
            false => Some(
                m.approvals
                    .routes(lead_spec.is_some())
                    .map_err(|problems| anyhow::anyhow!("[approvals]: {}", problems.join("; ")))?,
            ),
        };
        if !plan.start.is_beside() {
            existing_team(
                host.home(),
                &team,
                plan.start,
                &plan.manifest_file,
                narrator,
            )
            .await?;
        }
        if plan.start == Start::Resume {
            super::led::check_resume(host, &plan, &team)?;
        }
        // After the existing team's check: a run it refuses makes nothing.
        super::make_default_dirs(m)?;
        Ok(Prepared {
            host: host.clone(),
            team,
            plan,
            lead_spec,
            routes,
            began_ms,
        })
    }

    /// The run's team.
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// The lead's name in the team's config.
    pub fn lead(&self) -> &str {
        &self.lead
    }

    /// The plan this run follows.
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// How long spawning (or resuming) the teammates took.
    pub fn spawn_took(&self) -> Duration {
        self.spawn_took
    }

    /// Resumed teammates another host runs, `(name, host)`: the run waits
    /// for their work in the task list and asks them to stop at the end.
    pub fn elsewhere(&self) -> &[(String, String)] {
        &self.elsewhere
    }

    /// Spawns the manifest's teammates (after a resume: brings the team's
    /// back, then spawns those that never joined), then waits until every
    /// task is completed, the team can make no more progress, every
    /// teammate has stopped, the plan's timeout passes, or `stop` resolves
    /// (with the words [`Ended::Interrupted`] carries). A failed spawn is
    /// [`Ended::SpawnFailed`], not an error.
    ///
    /// An error means a resume that was refused (its host still runs) or
    /// failed: the team is left exactly as it is, with nothing to shut
    /// down.
    pub async fn until_done(
        &mut self,
        narrator: &dyn Narrator,
        stop: impl Future<Output = &'static str>,
    ) -> anyhow::Result<Ended> {
        if self.plan.start.is_beside() {
            let (ended, spawn, adopted) =
                super::beside::work(&self.host, &self.plan, &self.team, narrator, stop).await;
            self.spawn_took = spawn;
            self.adopted = adopted;
            return Ok(ended);
        }
        if self.plan.is_led() {
            narrator.work_started(Instant::now() + self.plan.timeout);
            return Ok(super::led::wait(&self.host, &self.team, self.plan.timeout, stop).await);
        }
        tokio::pin!(stop);
        let spawning = Instant::now();
        let (host, team, m) = (&self.host, &self.team, &self.plan.manifest);
        let spawned = if self.plan.start == Start::Resume {
            let report = host.resume(team.name()).await.map_err(|e| {
                anyhow::Error::new(e).context(format!("cannot resume team {:?}", team.name()))
            })?;
            claim(host.home(), team);
            narrator.line("run", report.describe(team.name()));
            self.elsewhere = report.adopted_elsewhere.clone();
            let config = team.config()?;
            tokio::select! {
                r = super::spawn::join_missing(host, team, m, &config, &report, narrator) => {
                    r.map_err(|e| Ended::SpawnFailed(format!("{e:#}")))
                }
                how = &mut stop => Err(Ended::Interrupted(how)),
            }
        } else {
            tokio::select! {
                r = super::spawn::spawn_all(host, team, m, narrator) => {
                    r.map_err(|e| Ended::SpawnFailed(format!("{e:#}")))
                }
                how = &mut stop => Err(Ended::Interrupted(how)),
            }
        };
        self.spawn_took = spawning.elapsed();
        if let Err(ended) = spawned {
            return Ok(ended);
        }
        narrator.work_started(Instant::now() + self.plan.timeout);
        let ended = super::wait::wait_for_work(
            host,
            team,
            !self.elsewhere.is_empty(),
            self.plan.timeout,
            stop,
        )
        .await
        .unwrap_or_else(|e| Ended::HostError(format!("{e:#}")));
        Ok(ended)
    }

    /// Shuts the team down after the work phase ended as `ended`: checks
    /// this host still holds the team's lease (an error, and nothing
    /// written, when another host took it), asks the teammates running
    /// elsewhere to stop, then runs the shutdown protocol with the plan's
    /// shutdown timeout (a teammate that does not approve is killed). A
    /// led run stops its lead first, if its team is still there. Beside a
    /// lead elsewhere, the teammates still running here are killed (the lead
    /// is told) and the lease given up once the lead shut them all down.
    ///
    /// Dropping the future stops waiting: the team is left as it is.
    pub async fn shut_down(
        &self,
        narrator: &dyn Narrator,
        ended: &Ended,
    ) -> anyhow::Result<ShutdownReport> {
        if self.plan.start.is_beside() {
            // Every teammate here approved the lead's shutdown: nothing to
            // take over, so the lease is given up rather than left to
            // expire; a standby ends with its lease still its own.
            let release = self.plan.start == Start::Adopt || *ended == Ended::ShutDown;
            return super::beside::shut_down(&self.host, &self.team, ended, narrator, release)
                .await;
        }
        self.host.check_lease(self.team.name())?;
        if self.plan.is_led() {
            let timeout = self.plan.shutdown_timeout;
            return super::led::shut_down(&self.host, &self.team, ended, timeout).await;
        }
        if let Ok(tasks) = self.team.list_tasks() {
            *self.owners_before_shutdown.lock().expect("owners lock") = tasks
                .into_iter()
                .filter(|t| t.status != TaskStatus::Completed)
                .filter_map(|t| Some((t.id, t.owner?)))
                .collect();
        }
        let reason = ended.reason();
        super::elsewhere::ask_to_stop(&self.team, &self.lead, &self.elsewhere, &reason, narrator)?;
        Ok(self
            .host
            .shutdown_team(self.team.name(), &reason, self.plan.shutdown_timeout)
            .await?)
    }

    /// Reads what the run did (tasks, teammates, messages, failed turns,
    /// decisions, model spending), then deletes the team unless the plan
    /// keeps it or teammates still run on another host.
    pub async fn finish(self, ended: Ended, shutdown: ShutdownReport) -> anyhow::Result<Finished> {
        if self.plan.start.is_beside() {
            return Ok(self.finish_beside(ended, shutdown));
        }
        let team = &self.team;
        // A led run's lead deletes its team when it is done: what is gone
        // reads as nothing.
        let led = self.plan.is_led();
        let seen = self.last_look.as_ref().and_then(|slot| slot.take());
        let mut teammates = self.host.teammates(team.name());
        let (tasks, messages, turn_failures, usage) = if let Some(seen) = seen {
            // The lead deleted its team: what the last look saw of it.
            teammates = super::last_look::merge(seen.teammates, teammates);
            (seen.tasks, seen.messages, seen.turn_failures, seen.usage)
        } else if led {
            // The lead may delete its team between any two reads.
            (
                team.list_tasks().unwrap_or_default(),
                count_messages(team, &self.lead).unwrap_or_default(),
                TurnFailures::read(team, &self.lead, self.began_ms).unwrap_or_default(),
                team.model_usage().unwrap_or_default(),
            )
        } else {
            (
                team.list_tasks()?,
                count_messages(team, &self.lead)?,
                TurnFailures::read(team, &self.lead, self.began_ms)?,
                team.model_usage().unwrap_or_default(),
            )
        };
        let decisions = self
            .host
            .decisions(team.name(), self.began_ms)
            .unwrap_or_default();
        let kept = self.plan.keep || !self.elsewhere.is_empty();
        let all = if led {
            ended.error().into_iter().collect()
        } else {
            let mut all = problems(
                &ended,
                &tasks,
                &teammates,
                &shutdown,
                self.plan.shutdown_timeout,
            );
            let failed: Vec<&str> = teammates
                .iter()
                .filter(|t| matches!(t.state, crate::embed::TeammateState::Failed(_)))
                .map(|t| t.name.as_str())
                .collect();
            all.extend(turn_failures.problems(self.plan.allow_failed_turns, &failed));
            all
        };
        if !kept && (!led || team.try_exists().unwrap_or(false)) {
            self.host.delete_team(team.name()).await?;
        }
        let owners = std::mem::take(&mut *self.owners_before_shutdown.lock().expect("owners lock"));
        let unassigned = tasks
            .iter()
            .filter(|t| t.owner.is_none())
            .filter_map(|t| Some((t.id.clone(), owners.get(&t.id)?.clone())))
            .collect();
        Ok(Finished {
            ended,
            tasks,
            unassigned,
            teammates,
            shutdown,
            messages,
            turn_failures,
            decisions,
            usage,
            kept,
            adopted: Vec::new(),
            problems: all,
        })
    }

    /// What a run beside the lead's did. The lead may have deleted the
    /// team by now: then there is nothing left to count, which is no error
    /// of this run. The team stays: it is the lead's.
    fn finish_beside(self, ended: Ended, shutdown: ShutdownReport) -> Finished {
        let team = &self.team;
        let tasks = team.list_tasks().unwrap_or_default();
        let lead = team
            .config()
            .map(|c| c.lead_name().to_string())
            .unwrap_or_default();
        let messages = count_messages(team, &lead).unwrap_or_default();
        let teammates = self.host.teammates(team.name());
        let all = problems(
            &ended,
            &tasks,
            &teammates,
            &shutdown,
            self.plan.shutdown_timeout,
        );
        Finished {
            ended,
            tasks,
            unassigned: BTreeMap::new(),
            teammates,
            shutdown,
            messages,
            turn_failures: TurnFailures::default(),
            decisions: Vec::new(),
            usage: team.model_usage().unwrap_or_default(),
            kept: true,
            adopted: self.adopted,
            problems: all,
        }
    }
}

/// Milliseconds since the epoch, now.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
