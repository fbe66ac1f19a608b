//! [`Host::adopt`]: take over the teammates of another host whose lease on
//! the team expired (host failover), on a store shared by several
//! hosts ([`crate::store::failover`]).
//!
//! **Expiry, on this host's clock.** [`LeaseWatch`] notes, for every host's
//! lease, the revision it shows and when this host first saw it (its own
//! monotonic clock). A `Held` lease of another host that has shown one
//! revision for a whole `lease_ms` has expired: its holder stopped writing
//! half a lease ago at the latest (`embed::lease`). The caller looks every
//! [`LEASE_POLL`], so a death is acted on within the lease plus 250 ms. A
//! `Released` lease (a clean end) and this host's own are never taken.
//!
//! **Takeover, in this order** (one expired lease of host A):
//!
//! | step | what | a lost race means |
//! |---|---|---|
//! | 1 | A's lease compare-and-swapped, at the revision seen unchanged, to `TakenOver { by: this host }` | A renewed (or another host took over): nothing taken, watch again |
//! | 2 | per run record of A: the component found by the record's hash — a path the caller names (the manifest's components) whose bytes hash to it, else the store's shelf ([`Failover::get_component`]) | — |
//! | 3 | the record compare-and-swapped to `host: this host, generation + 1, adopted_from: A` | another host rewrote it: left to that host |
//! | 4 | the teammate spawned here, in-process, under its member entry ([`Host::attach`] with a [`Resumed`]): its task in progress handed back, its waiting plan and permission requests still answerable | — |
//! | 5 | A's lead component, when A ran one ([`Host::adopt_with_lead`], `embed/lead/shared.rs`): its run record swapped to this host, the lead started here with the seat the record kept and its goal given again | another host rewrote it: left to that host |
//! | 6 | the lead told, in one message from `teamhost`, what moved from where to where | — |
//!
//! A component whose hash matches nothing here is refused before its record
//! is rewritten (step 2 before 3, a lookup that writes nothing): the record
//! still names A, whose lease is taken over, so nobody claims to run the
//! teammate; the error names both hashes, its tasks stay as they are and the
//! lead is told.
//!
//! **The task list is the evidence** of what an adopted teammate was
//! working on: the claim ledger ([`crate::home::kept::ClaimLedger`]) that a
//! resume on the same machine trusts lives in the dead host's home, out of
//! reach. So a task `in_progress` owned by the teammate is handed back to it
//! (its first turn that is not a message), whoever set it so. What its dead
//! host kept locally (conversation, saved state, turn journal) is lost with
//! that machine; a message its cut turn had consumed is not delivered again.
//!
//! Teammates that ran in a child process or a tmux pane on A died with A;
//! they come back here in-process like the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::embed::attach::ClaimEvidence;
use crate::embed::{Attach, Host, LeadSpec};
use crate::error::{Error, Result};
use crate::protocol::HOST_SENDER;
use crate::store::config::LEAD_NAME;
use crate::store::{
    blocking, Failover, HostLease, LeaseState, OutgoingMessage, Revision, RunRecord, Team,
    TeamStore,
};
use crate::teammate::{Isolation, SpawnRequest, TeammateSettings};

/// How often an adopting host reads a team's leases.
pub const LEASE_POLL: Duration = Duration::from_millis(250);

/// On this host's monotonic clock: the revision each host's lease showed
/// and since when. Never compares another machine's clock.
#[derive(Debug, Default)]
pub struct LeaseWatch {
    seen: BTreeMap<String, (Revision, Instant)>,
}

impl LeaseWatch {
    /// A watch that has seen nothing yet: every lease's clock starts at its
    /// first look.
    pub fn new() -> LeaseWatch {
        LeaseWatch::default()
    }

    /// Notes `leases` as read at `now`; returns the `Held` leases of hosts
    /// other than `me` that have shown one revision for their whole
    /// `lease_ms`, with that revision and how long it was seen.
    pub fn expired(
        &mut self,
        leases: &[(HostLease, Revision)],
        me: &str,
        now: Instant,
    ) -> Vec<(HostLease, Revision, Duration)> {
        self.seen
            .retain(|host, _| leases.iter().any(|(l, _)| &l.host == host));
        let mut out = Vec::new();
        for (lease, rev) in leases {
            let since = match self.seen.get(&lease.host) {
                Some((seen, since)) if seen == rev => *since,
                _ => {
                    self.seen.insert(lease.host.clone(), (*rev, now));
                    now
                }
            };
            let unchanged = now.saturating_duration_since(since);
            if lease.host != me
                && lease.state == LeaseState::Held
                && unchanged >= Duration::from_millis(lease.lease_ms)
            {
                out.push((lease.clone(), *rev, unchanged));
            }
        }
        out
    }
}

/// What one takeover of a host's teammates did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdoptReport {
    /// The team.
    pub team: String,
    /// The host taken over (its id) and its machine.
    pub from: String,
    /// The machine `from` ran on.
    pub from_hostname: String,
    /// This host's id.
    pub to: String,
    /// Teammates now running here.
    pub adopted: Vec<String>,
    /// Tasks handed back to their teammate, as `(task id, teammate)`.
    pub handed_back: Vec<(String, String)>,
    /// Teammates not adopted, and why (a component that matches no hash
    /// here, a record another host rewrote, a spawn that failed).
    pub refused: Vec<(String, String)>,
    /// Run records of teammates no longer in the team, removed.
    pub gone: Vec<String>,
    /// How long this host saw the lease unchanged before taking it.
    pub waited: Duration,
    /// How long the takeover took, from the lease's compare-and-swap to
    /// the last teammate running.
    pub took: Duration,
    /// The team's lead component ran on `from` and now runs here
    /// ([`Host::adopt_with_lead`]); it is also in `adopted`.
    pub lead: bool,
}

impl AdoptReport {
    /// One paragraph for the lead and the log.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "teamhost host {} took over team {}'s teammates from host {} (on {}), whose lease expired (no renewal seen for {:.1}s)",
            self.to,
            self.team,
            self.from,
            self.from_hostname,
            self.waited.as_secs_f64()
        )];
        if self.adopted.is_empty() {
            parts.push("no teammate moved".into());
        } else {
            parts.push(format!(
                "{} now run(s) on host {} (moved from {})",
                self.adopted.join(", "),
                self.to,
                self.from
            ));
        }
        if self.lead {
            parts.push(format!(
                "the lead ({LEAD_NAME}) now leads from host {}: its seat (formed, spawned, given) goes on from the store; its conversation and saved state were on host {} and are lost, so its goal was given to it again",
                self.to, self.from
            ));
        }
        for (task, name) in &self.handed_back {
            parts.push(format!("task #{task} handed back to {name}"));
        }
        for (name, why) in &self.refused {
            parts.push(format!("{name} NOT taken over: {why}"));
        }
        if !self.gone.is_empty() {
            parts.push(format!(
                "{} had left the team: their records removed",
                self.gone.join(", ")
            ));
        }
        parts.join("; ") + "."
    }
}

impl Host {
    /// Takes this host's lease on `team` now, before any teammate runs here
    /// (a standby host: `teamhost run --adopt`), when leases are on
    /// ([`HostOptions::lease`](crate::embed::HostOptions::lease)) and the store has
    /// failover; nothing otherwise. [`Host::adopt`] takes it too.
    pub async fn hold_team_lease(&self, team: &str) -> Result<()> {
        self.ensure_lease(team).await
    }

    /// One look at `team`'s leases (call it every [`LEASE_POLL`] with the
    /// same `watch`): takes over the teammates of every other host whose
    /// `Held` lease has expired on this host's clock (see the module docs).
    /// `components` are the paths this host may run a teammate's component
    /// from (the manifest's), checked by hash; the store's shelf is the
    /// fallback. One report per host taken over; the lead gets each as a
    /// message. Fails when the store has no failover or is unreachable.
    ///
    /// A dead host's lead component is refused here (this host is given no
    /// lead to run it with): see [`Host::adopt_with_lead`].
    pub async fn adopt(
        &self,
        team: &str,
        components: &[PathBuf],
        watch: &mut LeaseWatch,
    ) -> Result<Vec<AdoptReport>> {
        self.adopt_with_lead(team, components, None, watch).await
    }

    /// [`Host::adopt`], and a dead host's lead component too, run here
    /// with `lead` (the led team's `[lead]` and `[[catalogue]]`; its goal
    /// may be empty): only a component whose SHA-256 is the one that led
    /// the team, with the seat its run record kept (formed, spawned,
    /// given, its spawns and refusals over its life) and the goal given
    /// again, since its conversation died with its host. The lead is
    /// adopted after the teammates, so it wakes to a whole team.
    pub async fn adopt_with_lead(
        &self,
        team: &str,
        components: &[PathBuf],
        lead: Option<&LeadSpec>,
        watch: &mut LeaseWatch,
    ) -> Result<Vec<AdoptReport>> {
        let team = self.team(team)?;
        // Its teammates start as spawns do: not while the team is being
        // stopped, and a stop waits for them (`starting.rs`).
        let _start = self.inner.starts.begin(team.name())?;
        // Held before anything is taken: the takeover's writes and the
        // adopted teammates' are fenced by it, and a host adopting from this
        // one later finds its lease.
        self.ensure_lease(team.name()).await?;
        let backend = self.inner.store.backend().clone();
        let t = team.name().to_string();
        let leases = blocking("reading the leases", move || {
            failover_of(&*backend, &t)?.read_leases(&t)
        })
        .await?;
        let me = self.host_identity().id.clone();
        let mut reports = Vec::new();
        for (lease, rev, waited) in watch.expired(&leases, &me, Instant::now()) {
            if let Some(report) = self
                .take_over(&team, &lease, rev, waited, components, lead)
                .await?
            {
                reports.push(report);
            }
        }
        Ok(reports)
    }

    /// Takes `lease`'s teammates over (it was seen unchanged at `rev` for
    /// `waited`); `None` when the lease moved on first.
    async fn take_over(
        &self,
        team: &Team,
        lease: &HostLease,
        rev: Revision,
        waited: Duration,
        components: &[PathBuf],
        lead: Option<&LeadSpec>,
    ) -> Result<Option<AdoptReport>> {
        let started = Instant::now();
        let me = self.host_identity().clone();
        let backend = self.inner.store.backend().clone();
        let (t, mut taken) = (team.name().to_string(), lease.clone());
        taken.state = LeaseState::TakenOver {
            by: me.id.clone(),
            at: crate::protocol::time::now_ms(),
        };
        let (b, tt) = (backend.clone(), t.clone());
        let won = blocking("taking the lease over", move || {
            failover_of(&*b, &tt)?.write_lease(&tt, &taken, Some(rev))
        })
        .await?;
        if won.is_none() {
            tracing::info!(team = %t, host = %lease.host, "its lease moved on before the takeover: watching again");
            return Ok(None);
        }
        tracing::info!(team = %t, from = %lease.host, "lease taken over");
        let mut report = AdoptReport {
            team: t.clone(),
            from: lease.host.clone(),
            from_hostname: lease.hostname.clone(),
            to: me.id.clone(),
            waited,
            ..Default::default()
        };
        let (b, tt, tm) = (backend.clone(), t.clone(), team.clone());
        let (runs, config) = blocking("reading the run records", move || {
            Ok((failover_of(&*b, &tt)?.read_runs(&tt)?, tm.config()?))
        })
        .await?;
        let mut lead_run = None;
        for (run, run_rev) in runs.into_iter().filter(|(r, _)| r.host == lease.host) {
            let name = run.name.clone();
            if name == LEAD_NAME && run.lead.is_some() {
                lead_run = Some((run, run_rev));
                continue;
            }
            if config.member(&name).is_none() {
                let (b, tt, n) = (backend.clone(), t.clone(), name.clone());
                blocking("removing a stale run record", move || {
                    failover_of(&*b, &tt)?.remove_run(&tt, &n, run_rev)
                })
                .await?;
                report.gone.push(name);
                continue;
            }
            match self.adopt_one(team, run, run_rev, components).await {
                Ok(Some(task)) => {
                    report.handed_back.push((task, name.clone()));
                    report.adopted.push(name);
                }
                Ok(None) => report.adopted.push(name),
                Err(why) => report.refused.push((name, why)),
            }
        }
        if let Some((run, run_rev)) = lead_run {
            match self.adopt_lead(team, run, run_rev, lead).await {
                Ok(()) => {
                    report.lead = true;
                    report.adopted.push(LEAD_NAME.to_string());
                }
                Err(why) => report.refused.push((LEAD_NAME.to_string(), why)),
            }
        }
        report.took = started.elapsed();
        let text = report.describe();
        let (tm, lead) = (team.clone(), config.lead_name().to_string());
        blocking("telling the lead", move || {
            tm.deliver(&lead, OutgoingMessage::new(HOST_SENDER, text))
        })
        .await?;
        Ok(Some(report))
    }

    /// Adopts one teammate: its component found by hash, its record
    /// rewritten naming this host, the teammate spawned here. The task
    /// handed back, if any; `Err` says why it was not adopted.
    async fn adopt_one(
        &self,
        team: &Team,
        run: RunRecord,
        run_rev: Revision,
        components: &[PathBuf],
    ) -> std::result::Result<Option<String>, String> {
        let settings: TeammateSettings = serde_json::from_value(run.settings.clone())
            .map_err(|e| format!("its run record's settings do not parse ({e}): refused"))?;
        let component = self
            .component_for(&run, components)
            .await
            .map_err(|e| e.to_string())?;
        let me = self.host_identity().id.clone();
        let mut ours = run.clone();
        ours.adopted_from = Some(run.host.clone());
        ours.host = me;
        ours.generation = run.generation + 1;
        ours.started_at = crate::protocol::time::now_ms();
        let backend = self.inner.store.backend().clone();
        let (b, tt, o) = (backend.clone(), team.name().to_string(), ours.clone());
        let written = blocking("rewriting the run record", move || {
            failover_of(&*b, &tt)?.write_run(&tt, &o, Some(run_rev))
        })
        .await
        .map_err(|e| e.to_string())?;
        let Some(new_rev) = written else {
            return Err("another host rewrote its run record first: it runs it".into());
        };
        let spawned = self.spawn_adopted(team, &run, settings, &component).await;
        match spawned {
            Ok(task) => {
                self.forget_run_when_done(team, &run.name, new_rev);
                Ok(task)
            }
            Err(e) => Err(format!("could not start it here: {e}")),
        }
    }

    /// Spawns `run`'s teammate here from `component`, under its member
    /// entry, with its work in progress handed back (the task list as the
    /// evidence). The task handed back.
    async fn spawn_adopted(
        &self,
        team: &Team,
        run: &RunRecord,
        settings: TeammateSettings,
        component: &Path,
    ) -> Result<Option<String>> {
        let kind = crate::backends::BackendKind::InProcess;
        let mode = settings.mode.map(|m| m.as_str().to_string());
        let (t, name) = (team.clone(), run.name.clone());
        let member = blocking("updating the member", move || {
            t.update_member(&name, |m| {
                m.mode = mode.clone();
                m.backend_type = Some(kind.as_str().into());
                m.tmux_pane_id = Some(kind.as_str().into());
                m.is_active = Some(false);
                m.clone()
            })
        })
        .await?;
        let mut req = SpawnRequest::new(&run.name, component, "", &run.cwd);
        req.settings = settings;
        req.isolation = Isolation::None;
        if run.worktree {
            if let Some(wt) = member.worktree_path.clone() {
                req.cwd = wt.into();
            }
        }
        let gathered = self
            .gather_resumed(team, &run.name, ClaimEvidence::TaskList)
            .await?;
        let task = gathered.task.clone();
        let log = self
            .inner
            .opts
            .log_dir
            .clone()
            .unwrap_or_else(|| self.inner.home.logs())
            .join(team.name())
            .join(format!("{}.log", run.name));
        let how = Attach {
            backend_type: kind.as_str().into(),
            pane_id: kind.as_str().into(),
            guest_log: Some(log),
            resumed: true,
        };
        self.attach_with(team.name(), req, how, Some(gathered))
            .await?;
        Ok(task)
    }

    /// A component file whose bytes hash to `run`'s: one of `components`,
    /// else the shelf's copy written under the component cache. An error
    /// naming both hashes when nothing matches.
    async fn component_for(&self, run: &RunRecord, components: &[PathBuf]) -> Result<PathBuf> {
        // It names a file below: a SHA-256 in hex and nothing else.
        let sha = &run.component_sha256;
        if sha.len() != 64 || !sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(Error::Spawn(format!(
                "{}'s run record names the component hash {sha:?}, which is no SHA-256 (64 lower-case hex digits): refused",
                run.name
            )));
        }
        let runtime = self.inner.runtime.clone();
        let mut seen = Vec::new();
        for path in components {
            let (rt, p) = (runtime.clone(), path.clone());
            let hashed = crate::blocking::run("hashing a component", move || {
                rt.cache().load(&p).map(|(h, _)| h)
            })
            .await?;
            match hashed {
                Ok(hash) if hash == run.component_sha256 => return Ok(path.clone()),
                Ok(hash) => seen.push((path.clone(), hash)),
                Err(e) => {
                    tracing::warn!(component = %path.display(), error = %format!("{e:#}"), "not a candidate")
                }
            }
        }
        let backend = self.inner.store.backend().clone();
        let sha = run.component_sha256.clone();
        let shelf = self
            .inner
            .opts
            .cache_dir
            .clone()
            .unwrap_or_else(|| self.inner.home.component_cache())
            .join("shelf");
        let from_shelf = blocking("reading the component shelf", move || {
            let Some(failover) = backend.failover() else {
                return Ok(None);
            };
            let Some(bytes) = failover.get_component(&sha)? else {
                return Ok(None);
            };
            std::fs::create_dir_all(&shelf).map_err(|e| Error::io("create", &shelf, e))?;
            let path = shelf.join(format!("{sha}.wasm"));
            // Whole or not at all: written aside, then renamed.
            let aside = shelf.join(format!("{sha}.wasm.{}", std::process::id()));
            std::fs::write(&aside, &bytes).map_err(|e| Error::io("write", &aside, e))?;
            std::fs::rename(&aside, &path).map_err(|e| Error::io("rename", &path, e))?;
            Ok(Some(path))
        })
        .await?;
        if let Some(path) = from_shelf {
            return Ok(path);
        }
        let same_name: Vec<String> = seen
            .iter()
            .filter(|(p, _)| {
                p.file_name()
                    .is_some_and(|f| f.to_string_lossy() == run.component_name)
            })
            .map(|(p, h)| format!("{} has SHA-256 {h}", p.display()))
            .collect();
        let here = if same_name.is_empty() {
            seen.iter()
                .map(|(p, h)| format!("{} has SHA-256 {h}", p.display()))
                .collect::<Vec<_>>()
        } else {
            same_name
        };
        Err(Error::Spawn(format!(
            "{}'s component {} has SHA-256 {} on host {}, and no component here matches it ({}) nor does the store's shelf hold it: teamhost runs only the component a teammate was spawned with; name that component's file in this host's manifest",
            run.name,
            run.component_name,
            run.component_sha256,
            run.host,
            if here.is_empty() {
                "this host names none".to_string()
            } else {
                here.join("; ")
            }
        )))
    }
}

/// The store's failover records, or an error saying a shared store is
/// needed.
fn failover_of<'a>(store: &'a dyn TeamStore, team: &str) -> Result<&'a dyn Failover> {
    store.failover().ok_or_else(|| {
        Error::Spawn(format!(
            "team {team}'s store keeps no leases (the file store lives on one machine): adopting another host's teammates needs a shared store (--store nats://…)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(host: &str, ms: u64, state: LeaseState) -> HostLease {
        HostLease {
            host: host.into(),
            hostname: "m".into(),
            pid: 1,
            lease_ms: ms,
            renewed_at: 0,
            state,
        }
    }

    #[test]
    fn a_lease_expires_only_after_one_revision_is_seen_for_a_whole_lease() {
        let mut w = LeaseWatch::new();
        let t0 = Instant::now();
        let a = lease("a", 1000, LeaseState::Held);
        assert!(w.expired(&[(a.clone(), 1)], "b", t0).is_empty());
        let t1 = t0 + Duration::from_millis(900);
        assert!(w.expired(&[(a.clone(), 1)], "b", t1).is_empty());
        // A renewal restarts the clock.
        assert!(w.expired(&[(a.clone(), 2)], "b", t1).is_empty());
        let t2 = t0 + Duration::from_millis(1500);
        assert!(w.expired(&[(a.clone(), 2)], "b", t2).is_empty());
        let t3 = t1 + Duration::from_millis(1000);
        let expired = w.expired(&[(a.clone(), 2)], "b", t3);
        assert_eq!(expired.len(), 1);
        assert_eq!(
            (expired[0].1, expired[0].2),
            (2, Duration::from_millis(1000))
        );
    }

    #[test]
    fn released_leases_and_our_own_never_expire() {
        let mut w = LeaseWatch::new();
        let t0 = Instant::now();
        let leases = [
            (lease("a", 10, LeaseState::Released), 1),
            (lease("me", 10, LeaseState::Held), 2),
            (
                lease(
                    "c",
                    10,
                    LeaseState::TakenOver {
                        by: "me".into(),
                        at: 0,
                    },
                ),
                3,
            ),
        ];
        w.expired(&leases, "me", t0);
        assert!(w
            .expired(&leases, "me", t0 + Duration::from_secs(60))
            .is_empty());
    }
}
