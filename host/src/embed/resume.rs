//! [`Host::resume`]: bring back a team whose host died (killed, out of
//! memory, the machine rebooted). Every file of the team survives a crash;
//! what dies is the host's memory and the in-process teammates with it.
//! Resume rebuilds what died from what survived:
//!
//! | what | from | becomes |
//! |---|---|---|
//! | a teammate this machine's host spawned | its spawn record (`crate::home::spawn_record`: component, checked by SHA-256, directory, settings) | the same teammate, spawned again by this host, in the backend this host uses (in-process, or a `teamhost teammate --resumed` process or pane), under its member entry (name, id, colour kept); the record then names this host |
//! | a `teamhost teammate` process or tmux pane the dead host started, still running | its process record (`started/`: pid and start time) | adopted: this host watches, stops and cleans up after it |
//! | one that ended | the same record | its dead pane closed (only when it still runs the recorded process), the record dropped, the teammate spawned again |
//! | its task in progress | the task list and the host's claim ledger (`home::kept::ClaimLedger`) | handed back to it, its first turn that is not a message, only when the ledger says it claimed the task itself; one a peer (or anyone outside the host) put in progress under its name is left as it is and named to the lead |
//! | the completion its cut turn made, never reported | the task note (`home::kept::TaskNote`) and the task list | reported to the lead as the teammate's idle notification naming the task, unless the lead's mail already holds that report (exactly once) |
//! | the message its interrupted turn handled | the turn journal (`home::kept::TurnJournal`) | delivered again (at least once) |
//! | its plan or permission requests waiting for the lead | the lead's mail | still answerable: the answer, given before or after the resume, reaches the resumed teammate |
//! | its unread mail | its inbox | delivered as always, but for a shutdown request from the lead (the dead host's stop sent it): withdrawn, the resume goes on with the work |
//! | an LLM teammate's conversation, a teammate's saved state | `{home}/kept/{team}/` | `model.history`, `state.load` |
//! | the dead host's Bash calls | nothing: their processes died with it (`tools::confine`, "When the host dies") | their leftover control groups removed (`tools::cgroup::sweep_dead_hosts`), with any process still in one |
//!
//! On a store shared by several hosts (host failover), who runs each teammate is
//! settled in the store first (`resume_claim.rs`): the dead host's lease is
//! taken over, a teammate an adopting host already took over is left to it
//! ([`ResumeReport::adopted_elsewhere`]), and every teammate respawned here
//! has a run record naming this host before it starts.
//!
//! Members without a spawn record here (a Claude Code lead's own
//! teammates, teammates of another machine) are left as they are; a task in
//! progress whose owner is no longer a member is returned to `pending` with
//! a notice, as the reference does when a teammate leaves. Resume refuses a
//! team whose host still runs ([`crate::backends::live_host`]): two hosts
//! would run the same teammates.
//!
//! What does not survive, and why: grants and approved plans of the earlier
//! life (a resumed teammate runs with the mode and rules it was spawned with
//! and asks again: an answer the lead gave one life is not silently given to
//! the next), a guest's memory beyond its conversation and saved state, and
//! a tool call's effects half done when the host died (the teammate is told
//! its result is unknown and checks before redoing it).

use std::collections::BTreeMap;

use super::attach::ClaimEvidence;
use super::failover::resume_claim::Claim;
use super::{Attach, Host};
use crate::error::{Error, Result};
use crate::home::spawn_record::{self, SpawnRecord};
use crate::home::started::Started;
use crate::protocol::HOST_SENDER;
use crate::store::{OutgoingMessage, TaskStatus, Team};
use crate::teammate::Resumed;

/// What [`Host::resume`] did, teammate by teammate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeReport {
    /// Spawned again in this host.
    pub respawned: Vec<String>,
    /// Still running in a process the dead host started; now this host's.
    pub adopted: Vec<String>,
    /// Tasks handed back to their owner, as `(task id, owner)`.
    pub handed_back: Vec<(String, String)>,
    /// Tasks in progress under a resumed teammate's name that it never
    /// claimed through the host, as `(task id, owner)`: not handed back (the
    /// task list is written by every member; only the host's own record of
    /// a claim counts), left as they are.
    pub not_handed_back: Vec<(String, String)>,
    /// Tasks returned to `pending` without owner (their owner is gone).
    pub unassigned: Vec<String>,
    /// Teammates whose interrupted turn's message was delivered again.
    pub redelivered: Vec<String>,
    /// Completions a cut turn made that the lead had not been told of,
    /// reported now, as `(task id, teammate)`.
    pub reported: Vec<(String, String)>,
    /// Teammates whose unread shutdown request from the lead was withdrawn:
    /// the stopped host had sent it as it stopped, and the resume goes on
    /// with the work instead.
    pub withdrawn_shutdowns: Vec<String>,
    /// Members this machine's teamhost did not spawn, left as they are.
    pub left_alone: Vec<String>,
    /// Teammates another host runs now (on a shared store: an adopting
    /// host took them over, or a live host runs them), as `(teammate,
    /// host id)`: not respawned here, their tasks and mail left alone
    /// (`embed/failover/resume_claim.rs`).
    pub adopted_elsewhere: Vec<(String, String)>,
    /// Hosts of this machine that died holding a lease on the team (on a
    /// shared store), whose leases this resume took over before
    /// respawning their teammates: no adopting host takes them any more.
    pub leases_taken: Vec<String>,
    /// Teammates that could not be brought back, and why (the rest of the
    /// team is resumed all the same; the lead is told).
    pub failed: Vec<(String, String)>,
}

impl ResumeReport {
    /// One paragraph for the lead and the log.
    pub fn describe(&self, team: &str) -> String {
        let list = |v: &[String]| v.join(", ");
        let mut parts = vec![format!(
            "teamhost resumed team {team} after its host stopped"
        )];
        for host in &self.leases_taken {
            parts.push(format!(
                "took over the lease of host {host} (this machine's host that died)"
            ));
        }
        if !self.respawned.is_empty() {
            parts.push(format!("respawned {}", list(&self.respawned)));
        }
        for (name, host) in &self.adopted_elsewhere {
            parts.push(format!(
                "left {name} to host {host}, which took it over (not respawned here)"
            ));
        }
        if !self.adopted.is_empty() {
            parts.push(format!(
                "took over the running process of {}",
                list(&self.adopted)
            ));
        }
        for (task, owner) in &self.handed_back {
            parts.push(format!("task #{task} handed back to {owner}"));
        }
        for (task, owner) in &self.not_handed_back {
            parts.push(format!(
                "task #{task} is in progress under {owner}'s name but {owner} never claimed it through teamhost: not handed back (assign it again if {owner} should do it)"
            ));
        }
        for (task, owner) in &self.reported {
            parts.push(format!(
                "task #{task} was completed by {owner} as its host died: reported now"
            ));
        }
        if !self.unassigned.is_empty() {
            parts.push(format!(
                "task(s) #{} returned to pending (their owner is gone)",
                self.unassigned.join(", #")
            ));
        }
        if !self.redelivered.is_empty() {
            parts.push(format!(
                "the message {} was handling delivered again",
                list(&self.redelivered)
            ));
        }
        if !self.withdrawn_shutdowns.is_empty() {
            parts.push(format!(
                "withdrew the shutdown request the stopped host had sent to {}",
                list(&self.withdrawn_shutdowns)
            ));
        }
        if !self.left_alone.is_empty() {
            parts.push(format!(
                "left {} as they are (not spawned by teamhost on this machine)",
                list(&self.left_alone)
            ));
        }
        for (name, why) in &self.failed {
            parts.push(format!("could not bring {name} back: {why}"));
        }
        parts.join("; ") + "."
    }
}

impl Host {
    /// Brings back `team` after its host died: see the module docs. Fails
    /// when the team does not exist, or when a live host still runs it
    /// ([`Error::TeamRunning`], see [`crate::backends::live_host`]: stop
    /// that host first, with Ctrl-C or `kill PID`). The lead gets the report
    /// as a message from `teamhost`.
    pub async fn resume(&self, team: &str) -> Result<ResumeReport> {
        let team = self.team(team)?;
        // Its teammates start as spawns do: not while the team is being
        // stopped, and a stop waits for them (`starting.rs`).
        let _start = self.inner.starts.begin(team.name())?;
        let (home, name) = (self.inner.home.clone(), team.name().to_string());
        let t = team.clone();
        let (config, records, processes) = crate::store::blocking("reading the team", move || {
            // What the dead host's Bash calls left, if a host of this process
            // has not removed it yet (a host removes it when it starts).
            crate::tools::cgroup::sweep_dead_hosts();
            Ok::<_, Error>((
                t.config()?,
                spawn_record::list(&home, &name)?,
                crate::home::started::list(&home, &name)?,
            ))
        })
        .await?;
        let (home, t) = (self.inner.home.clone(), team.clone());
        crate::store::blocking("looking for the team's host", move || {
            crate::backends::live_host::refuse_if_live(
                &home,
                &t,
                "resume brings back a team whose host died, and two hosts would run the same teammates",
            )
        }).await?;
        // Before anything is respawned or handed back: this host's lease
        // (host failover), when leases are on and the store is shared.
        self.ensure_lease(team.name()).await?;
        let records: BTreeMap<String, SpawnRecord> =
            records.into_iter().map(|r| (r.name.clone(), r)).collect();
        // On a shared store: who runs each teammate, settled before any
        // respawn (an adopting host may have taken some over).
        let claims = self.claim_dead_leases(team.name(), &records).await?;
        let processes: BTreeMap<String, Started> =
            processes.into_iter().map(|r| (r.name.clone(), r)).collect();
        let lead = config.lead_name().to_string();
        let running = self.running(team.name());
        let mut report = ResumeReport {
            leases_taken: claims.as_ref().map(|c| c.taken.clone()).unwrap_or_default(),
            ..Default::default()
        };
        for member in config.members.iter().filter(|m| m.name != lead) {
            let name = member.name.clone();
            if running.contains(&name) {
                continue;
            }
            let record = records.get(&name);
            let claim = match (&claims, record) {
                (Some(claims), Some(r)) => match self.claim_member(team.name(), claims, r).await {
                    Ok(Claim::Here(rev)) => Some(rev),
                    Ok(Claim::Elsewhere(host)) => {
                        // Its process, if the dead host left one running,
                        // is the other host's duplicate: closed.
                        if let Some(proc) = processes.get(&name) {
                            let (home, t, p) =
                                (self.inner.home.clone(), team.clone(), proc.clone());
                            let _ =
                                tokio::task::spawn_blocking(move || clean_up_after(&home, &t, &p))
                                    .await;
                        }
                        report.adopted_elsewhere.push((name, host));
                        continue;
                    }
                    Err(e) => {
                        report.failed.push((name, e.to_string()));
                        continue;
                    }
                },
                _ => None,
            };
            if let Some(proc) = processes.get(&name) {
                if self.adopt_process(&team, member, record, proc)? {
                    if let Some(rev) = claim {
                        self.forget_run_when_done(&team, &name, rev);
                    }
                    report.adopted.push(name);
                    continue;
                }
                let (home, t, p) = (self.inner.home.clone(), team.clone(), proc.clone());
                // tmux and the record's file: off the executor.
                let _ = tokio::task::spawn_blocking(move || clean_up_after(&home, &t, &p)).await;
            }
            let Some(record) = record else {
                report.left_alone.push(name);
                continue;
            };
            match self.withdraw_shutdowns(&team, &name, &lead).await {
                Ok(true) => report.withdrawn_shutdowns.push(name.clone()),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(teammate = %name, error = %e, "an old shutdown request was not withdrawn")
                }
            }
            match self.respawn(&team, record).await {
                Ok(outcome) => {
                    if let Some(task) = outcome.task {
                        report.handed_back.push((task, name.clone()));
                    }
                    for task in outcome.unclaimed {
                        report.not_handed_back.push((task, name.clone()));
                    }
                    if outcome.redelivered {
                        report.redelivered.push(name.clone());
                    }
                    if let Some(task) = outcome.reported {
                        report.reported.push((task, name.clone()));
                    }
                    if let Some(rev) = claim {
                        self.forget_run_when_done(&team, &name, rev);
                    }
                    report.respawned.push(name);
                }
                Err(e) => {
                    if let Some(rev) = claim {
                        self.unclaim_member(team.name(), &name, rev).await;
                    }
                    report.failed.push((name, e.to_string()));
                }
            }
        }
        // Records of teammates that left the team meanwhile are stale.
        for stale in records.keys().filter(|n| config.member(n).is_none()) {
            if let Err(e) = crate::home::kept::forget(&self.inner.home, team.name(), stale) {
                tracing::warn!(teammate = %stale, error = %e, "stale resume files not removed");
            }
        }
        report.unassigned = self.unassign_orphans(&team).await?;
        let text = report.describe(team.name());
        let t = team.clone();
        crate::store::blocking("telling the lead", move || {
            t.deliver(&lead, OutgoingMessage::new(HOST_SENDER, text))
        })
        .await?;
        Ok(report)
    }

    /// Adopts `member`'s recorded process if it still runs.
    fn adopt_process(
        &self,
        team: &Team,
        member: &crate::store::Member,
        record: Option<&SpawnRecord>,
        proc: &Started,
    ) -> Result<bool> {
        let req = match record {
            Some(r) => {
                let mut req = crate::teammate::SpawnRequest::new(&r.name, &r.component, "", &r.cwd);
                req.settings = r.settings.clone();
                req
            }
            None => crate::teammate::SpawnRequest::new(&member.name, "", "", "."),
        };
        let env = self.spawn_env(team)?;
        let Some(spawned) = crate::backends::monitor::adopt(&env, team, member.clone(), &req, proc)
        else {
            return Ok(false);
        };
        self.keep(team, spawned);
        if let Some(r) = record {
            let mut ours = r.clone();
            ours.host_pid = std::process::id();
            ours.host_start_time = crate::home::process::start_time(std::process::id());
            if let Err(e) = spawn_record::record(&self.inner.home, team.name(), &ours) {
                tracing::warn!(teammate = %r.name, error = %e, "could not record the adoption");
            }
        }
        Ok(true)
    }

    /// Spawns `record`'s teammate again, in this host, under its member
    /// entry.
    async fn respawn(&self, team: &Team, record: &SpawnRecord) -> Result<Respawned> {
        let mut req = record.request()?;
        req.settings
            .notifications
            .get_or_insert(self.inner.opts.notifications);
        // Where this host runs teammates (a non-interactive one: in-process).
        let b = &self.inner.opts.backends;
        let kind = crate::backends::detect(
            b.mode,
            b.interactive,
            crate::backends::detect::inside_tmux(),
        );
        let (t, name) = (team.clone(), record.name.clone());
        // The recorded mode wins over one granted in the earlier life, and
        // the teammate now runs here.
        let mode = req.settings.mode.map(|m| m.as_str().to_string());
        let member = crate::store::blocking("updating the member", move || {
            t.update_member(&name, |m| {
                m.mode = mode.clone();
                m.backend_type = Some(kind.as_str().into());
                m.tmux_pane_id = Some(kind.as_str().into());
                m.is_active = Some(false);
                m.clone()
            })
        })
        .await?;
        // The worktree is the one it had: run in it as it is.
        if record.worktree {
            if let Some(wt) = member.worktree_path.clone() {
                req.cwd = wt.into();
                req.isolation = crate::teammate::Isolation::None;
            }
        }
        let redelivered = self.redeliver_interrupted(team, &record.name).await?;
        let reported = self.report_cut_completion(team, &member).await?;
        let gathered = self
            .gather_resumed(team, &record.name, ClaimEvidence::Ledger)
            .await?;
        if kind == crate::backends::BackendKind::InProcess {
            let log = self
                .inner
                .opts
                .log_dir
                .clone()
                .unwrap_or_else(|| self.inner.home.logs())
                .join(team.name())
                .join(format!("{}.log", record.name));
            let how = Attach {
                backend_type: kind.as_str().into(),
                pane_id: kind.as_str().into(),
                guest_log: Some(log),
                resumed: true,
            };
            self.attach(team.name(), req, how).await?;
        } else {
            // In its own process again, started with `--resumed`: it takes
            // over what was in flight itself.
            self.check_layout(team.name(), &req)?;
            let env = self.spawn_env(team)?;
            let backend = crate::backends::backend(kind);
            let start = backend
                .rejoin(env, team, member, req)
                .expect("process and tmux backends rejoin");
            let spawned = start.await?;
            self.keep(team, spawned);
        }
        // This host runs it now: a later resume must see this host alive.
        let mut ours = record.clone();
        ours.host_pid = std::process::id();
        ours.host_start_time = crate::home::process::start_time(std::process::id());
        ours.backend = kind.as_str().into();
        let (home, tn) = (self.inner.home.clone(), team.name().to_string());
        crate::store::blocking("recording the spawn", move || {
            spawn_record::record(&home, &tn, &ours)
        })
        .await?;
        Ok(Respawned {
            task: gathered.task,
            unclaimed: gathered.unclaimed,
            redelivered,
            reported,
        })
    }

    /// Consumes the shutdown requests from the lead still unread in
    /// `name`'s inbox: a host stopping its team sends them first (its
    /// `shutdown_team`), and one that died or was forced to stop before its
    /// teammates took them leaves them behind. Resuming is the decision to go
    /// on; taken as they are, they would shut the teammate down again at
    /// once. They move to its history, read.
    async fn withdraw_shutdowns(&self, team: &Team, name: &str, lead: &str) -> Result<bool> {
        let (t, who, lead) = (team.clone(), name.to_string(), lead.to_string());
        crate::blocking::try_run("withdrawing shutdown requests", move || {
            let taken = t.take_where(&who, |m| {
                m.from == lead
                    && matches!(
                        crate::protocol::ProtocolMessage::parse(&m.text),
                        crate::protocol::Parsed::Protocol(
                            crate::protocol::ProtocolMessage::ShutdownRequest(_)
                        )
                    )
            })?;
            Ok(!taken.is_empty())
        })
        .await
    }

    /// Delivers again the message `name`'s interrupted turn was handling,
    /// unless it is still unread (the host died before it was consumed).
    pub(super) async fn redeliver_interrupted(&self, team: &Team, name: &str) -> Result<bool> {
        let journal = crate::home::kept::TurnJournal::of(&self.inner.home, team.name(), name)?;
        let (t, who) = (team.clone(), name.to_string());
        crate::blocking::try_run("redelivering a message", move || {
            let Some(msg) = journal.take_interrupted()? else {
                return Ok(false);
            };
            let unread = t.unread(&who)?;
            if unread
                .iter()
                .any(|m| m.from == msg.from && m.text == msg.text && m.timestamp == msg.timestamp)
            {
                return Ok(false);
            }
            let mut again = OutgoingMessage::new(msg.from, msg.text);
            again.summary = msg.summary;
            again.color = msg.color;
            t.deliver(&who, again)?;
            Ok(true)
        })
        .await
    }

    /// Reports to the lead the completion of the task `member`'s cut turn
    /// worked on (its [`TaskNote`](crate::home::kept::TaskNote)), when the
    /// guest completed it before the host died and the lead's mail (inbox
    /// and history) holds no report of it from `member`: the idle
    /// notification the turn would have ended with, sent as the teammate's
    /// runner sends it. A task still in progress is handed back instead (its
    /// next turn reports it); the note goes either way. The id reported.
    pub(super) async fn report_cut_completion(
        &self,
        team: &Team,
        member: &crate::store::Member,
    ) -> Result<Option<String>> {
        let note = crate::home::kept::TaskNote::of(&self.inner.home, team.name(), &member.name)?;
        let (t, who, color) = (team.clone(), member.name.clone(), member.color.clone());
        crate::blocking::try_run("reporting a completion", move || {
            use crate::protocol::{CompletedStatus, IdleNotification, IdleReason, WireMessage};
            let Some(id) = note.take_interrupted()? else {
                return Ok(None);
            };
            let done = t.list_tasks()?.into_iter().any(|task| {
                task.id == id
                    && task.status == TaskStatus::Completed
                    && task.owner.as_deref() == Some(who.as_str())
            });
            if !done {
                return Ok(None);
            }
            let lead = t.config()?.lead_name().to_string();
            let mut mail = t.history(&lead)?;
            mail.extend(t.read_inbox(&lead)?);
            let told = mail.iter().filter(|m| m.from == who).any(|m| {
                matches!(
                    crate::protocol::ProtocolMessage::parse(&m.text),
                    crate::protocol::Parsed::Protocol(crate::protocol::ProtocolMessage::IdleNotification(n))
                        if n.completed_task_id.as_deref() == Some(id.as_str())
                )
            });
            if told {
                return Ok(None);
            }
            let idle = IdleNotification::new(&who, IdleReason::Available)
                .with_completed_task(id.clone(), CompletedStatus::Resolved);
            t.deliver(&lead, OutgoingMessage::new(&who, idle.to_text()).color(color))?;
            Ok(Some(id))
        })
        .await
    }

    /// What `name`'s earlier life left in flight in `team`: its task in
    /// progress (when its claim ledger says it claimed it; others in
    /// progress under its name go to [`Resumed::unclaimed`]), its plan and
    /// permission requests still waiting for the lead.
    pub(super) async fn gather_resumed(
        &self,
        team: &Team,
        name: &str,
        evidence: ClaimEvidence,
    ) -> Result<Resumed> {
        let (t, me) = (team.clone(), name.to_string());
        let ledger = crate::home::kept::ClaimLedger::of(&self.inner.home, team.name(), name)?;
        let claims = move |id: &str| match evidence {
            ClaimEvidence::Ledger => ledger.holds(id),
            ClaimEvidence::TaskList => Ok(true),
        };
        crate::blocking::try_run("reading what was in flight", move || {
            let mut resumed = Resumed::default();
            for task in t.list_tasks()? {
                if task.owner.as_deref() != Some(me.as_str())
                    || task.status != TaskStatus::InProgress
                {
                    continue;
                }
                if resumed.task.is_none() && claims(&task.id)? {
                    resumed.task = Some(task.id);
                } else if !claims(&task.id)? {
                    resumed.unclaimed.push(task.id);
                }
            }
            for request in crate::approvals::pending(&t)? {
                if request.from() != me {
                    continue;
                }
                match request {
                    crate::approvals::Request::Plan(p) => resumed.pending_plan = Some(p.request_id),
                    crate::approvals::Request::Permission(p) => resumed.open_requests.push(p),
                }
            }
            Ok(resumed)
        })
        .await
    }

    /// Returns to `pending` every unfinished task whose owner is no longer a
    /// member; the ids.
    async fn unassign_orphans(&self, team: &Team) -> Result<Vec<String>> {
        let t = team.clone();
        crate::blocking::try_run("returning tasks", move || {
            let config = t.config()?;
            let mut owners: Vec<String> = t
                .list_tasks()?
                .into_iter()
                .filter(|task| task.status != TaskStatus::Completed)
                .filter_map(|task| task.owner)
                .filter(|o| {
                    config.member(o).is_none() && !config.members.iter().any(|m| &m.agent_id == o)
                })
                .collect();
            owners.sort();
            owners.dedup();
            let mut ids = Vec::new();
            for owner in owners {
                let u = t.unassign_agent(&owner, &owner, true)?;
                ids.extend(u.tasks.into_iter().map(|(id, _)| id));
            }
            Ok(ids)
        })
        .await
    }
}

/// What one respawn brought back.
struct Respawned {
    task: Option<String>,
    unclaimed: Vec<String>,
    redelivered: bool,
    reported: Option<String>,
}

/// Drops the record of a process that ended, closing its pane when the pane
/// still runs the recorded process (tmux keeps a dead pane open).
fn clean_up_after(home: &crate::home::Home, team: &Team, proc: &Started) {
    if let Some(pane) = &proc.pane_id {
        crate::backends::panes::kill_pane_if_ours(proc.tmux_socket.as_deref(), pane, proc.pid);
    }
    if let Err(e) = crate::home::started::remove(home, team.name(), &proc.name) {
        tracing::warn!(teammate = %proc.name, error = %e, "could not remove a process record");
    }
}
