//! [`LeadSeat`]: a lead component's seat, the [`LeadHost`] the runtime's
//! `leading` glue (and the toolbox's lead tools) call.
//!
//! A seat acts on the one team it was started for
//! ([`Host::start_lead`](crate::embed::Host::start_lead)): it never takes a team
//! name from the guest. What it does, and what it refuses:
//!
//! | call | does | refuses |
//! |---|---|---|
//! | `create_team` | forms the team (its description) | `conflict` when formed; a different name is ignored and said so |
//! | `spawn` | [`Host::spawn`](crate::embed::Host::spawn) with the entry's component, granted by [`LeadGrant::may_spawn`](crate::embed::LeadGrant::may_spawn) from the budget the broker keeps for the lead | `conflict` before `create_team` or for a taken name; `not-found` outside the catalogue; `denied` wider than the entry or the lead, past `max_teammates` at once or `max_spawns_total` over its life |
//! | `answer_*` | the one approval path (`answers.rs`) | `not-found` for an id not in this team; `denied` for the lead's own request (the person answers it) or a plan mode wider than the lead's; `conflict` once answered |
//! | `shutdown` | a `shutdown_request` from the lead | `not-found` for a non-member |
//! | `delete_team` | [`Host::delete_team`](crate::embed::Host::delete_team), then ends the lead's run | `conflict` while a teammate is a member |
//!
//! **What the seat writes is bounded.** Every text of the lead's the seat
//! writes into the team (the description, a spawn prompt, a shutdown
//! reason, a denial reason, plan feedback, a replacement input) is held to
//! the lead's `max_message_bytes` (`invalid`) and counted against its
//! `max_team_bytes_total` with its own messages (`denied` past it). A
//! refused answer is recorded as an escalation at most
//! `max_refused_answers_per_turn` times a turn and
//! `max_refused_answers_total` times in the lead's life; later ones are
//! refused all the same, unrecorded (the request still waits for the
//! person). Each refusal names the manifest key that raises its limit.
//!
//! The guest's text reaches files and the person's screen only as data: a
//! description, a name or a reason is stored as JSON and the live view
//! escapes what it shows.
//!
//! This file holds the seat, what every act shares (its texts' bounds, its
//! team, its catalogue) and the [`LeadHost`] calls, each handed to the file
//! of its purpose (`lead/mod.rs` lists them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::record::RecordKeeper;
use super::refusals::RefusalCount;
use crate::approvals::PermitAnswer;
use crate::approvals::PlanAnswer;
use crate::embed::api::Inner;
use crate::embed::grant::{CatalogueEntry, LeadSpec};
use crate::embed::Host;
use crate::error::Error;
use crate::home::lead_record::LeadRecord;
use crate::model::ModelClient;
use crate::runtime::lead_host::{
    BoxFuture, Caller, CatalogueView, LeadError, LeadHost, LeadSpawn, PendingView, TeammateView,
};
use crate::runtime::TreeBudget;
use crate::store::Team;

/// A lead component's seat in one team. Built by
/// [`Host::start_lead`](crate::embed::Host::start_lead).
pub struct LeadSeat {
    pub(super) host: Weak<Inner>,
    pub(super) team: Team,
    pub(super) spec: LeadSpec,
    /// `create_team` was called (and `delete_team` not yet).
    pub(super) formed: AtomicBool,
    /// `delete_team` succeeded: the lead's runner ends after this turn.
    pub(super) ended: AtomicBool,
    /// What it spawned: member name → catalogue entry.
    pub(super) spawned: Mutex<HashMap<String, String>>,
    /// Teammates this lead asked to shut down (a delete waits for those
    /// that approved).
    pub(super) asked_to_stop: Mutex<std::collections::HashSet<String>>,
    /// The model budgets it gave, in microdollars (a teammate's budget
    /// stays given when it stops: a budget is for its whole life).
    pub(super) given: Mutex<u64>,
    /// Teammates it spawned over its life, against `max_spawns_total`.
    pub(super) spawns: AtomicUsize,
    /// Its answers refused so far, against the refusal limits.
    pub(super) refusals: Mutex<RefusalCount>,
    /// The lead's own budgets and turn count, attached once its instance
    /// is built ([`LeadSeat::attach`]).
    pub(super) meters: OnceLock<SeatMeters>,
    /// Keeps the seat on this machine after each change (`record.rs`).
    pub(super) keeper: RecordKeeper,
}

/// What the seat counts in the lead's own instance.
pub(super) struct SeatMeters {
    /// The lead's tree budget: what the seat writes is team bytes there.
    pub(super) budget: Arc<TreeBudget>,
    /// The turns the lead's runner has started.
    pub(super) turns: Arc<AtomicU64>,
    /// The lead's model client: its meter is the lead's purse, what it
    /// spends on its own calls and what it gives (`spawns.rs`).
    pub(super) model: ModelClient,
}

impl LeadSeat {
    /// The seat of a lead that starts, or of one resumed from `record`
    /// (the seat as it was kept: formed, its spawns, its purse, its
    /// refusals); kept on `host`'s home from here on.
    pub(in crate::embed) fn new(
        host: &Host,
        team: Team,
        spec: LeadSpec,
        record: LeadRecord,
    ) -> LeadSeat {
        let keeper = RecordKeeper::new(
            &host.inner.home,
            team.name(),
            LeadRecord {
                component: record.component.clone(),
                component_sha256: record.component_sha256.clone(),
                // A resumed lead's spec has no goal: the record's is kept.
                goal: match record.goal.is_empty() {
                    true => spec.goal.clone(),
                    false => record.goal.clone(),
                },
                ..LeadRecord::default()
            },
        );
        LeadSeat {
            host: Arc::downgrade(&host.inner),
            team,
            spec,
            formed: AtomicBool::new(record.formed),
            ended: AtomicBool::new(false),
            spawned: Mutex::new(record.spawned.into_iter().collect()),
            asked_to_stop: Mutex::new(record.asked_to_stop.into_iter().collect()),
            given: Mutex::new(record.given_microdollars),
            spawns: AtomicUsize::new(record.spawns),
            refusals: Mutex::new(RefusalCount::resumed(record.refused_total)),
            meters: OnceLock::new(),
            keeper,
        }
    }

    /// The seat now, as [`LeadRecord`] keeps it.
    pub(super) fn snapshot(&self) -> LeadRecord {
        LeadRecord {
            formed: self.formed.load(Ordering::SeqCst),
            spawned: self
                .spawned
                .lock()
                .expect("spawned lock")
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            asked_to_stop: self
                .asked_to_stop
                .lock()
                .expect("asked lock")
                .iter()
                .cloned()
                .collect(),
            given_microdollars: *self.given.lock().expect("given lock"),
            spawns: self.spawns.load(Ordering::SeqCst),
            refused_total: self.refusals.lock().expect("refusals lock").total(),
            ..self.keeper.base().clone()
        }
    }

    /// Keeps the seat as it is now on this machine, synced (`record.rs`).
    /// A write that fails is logged, not the act's failure: the act is
    /// done; a resume after it would go on from the seat kept before.
    /// Nothing once the lead deleted its team: the delete took the record
    /// with the team's kept files, and a write now would bring them back
    /// (and make a later team of the same name look led).
    pub(super) async fn keep(&self) {
        if self.ended() {
            return;
        }
        if let Err(e) = self.keeper.keep(|| self.snapshot()).await {
            tracing::error!(
                team = %self.team.name(),
                error = %e,
                "the lead's seat could not be kept; a resume would go on from the seat kept before"
            );
        }
    }

    /// Gives the seat the lead's own tree budget, turn count and model
    /// client (once, before the lead's first turn): what the seat writes for
    /// the lead is counted there, its refusals per turn by those turns, and
    /// what it gives comes out of the client's cost budget, which counts
    /// the gifts of an earlier life (a resumed seat's) from here on.
    pub(in crate::embed) fn attach(
        &self,
        budget: Arc<TreeBudget>,
        turns: Arc<AtomicU64>,
        model: ModelClient,
    ) {
        let given = *self.given.lock().expect("given lock");
        let meters = SeatMeters {
            budget,
            turns,
            model: model.clone(),
        };
        if self.meters.set(meters).is_err() {
            tracing::warn!("a lead seat was attached twice; the first meters stay");
            return;
        }
        model.carry_over_given(given);
    }

    /// The lead's turn now (0 before it is attached).
    pub(super) fn turn(&self) -> u64 {
        self.meters
            .get()
            .map_or(0, |m| m.turns.load(Ordering::Relaxed))
    }

    /// Holds `text` of the lead's, which the seat is about to write into
    /// the team as `what`, to the lead's message limit; `invalid` naming
    /// the limit and its key when it is bigger. Nothing is counted.
    pub(super) fn check_text(&self, what: &str, text: &str) -> Result<(), LeadError> {
        self.spec
            .settings
            .limits
            .check_message(what, text.len())
            .map_err(|e| {
                LeadError::Invalid(format!(
                    "{e}; nothing was written (raise it with [lead.limits] max_message_bytes)"
                ))
            })
    }

    /// [`check_text`](Self::check_text), then counts `text` against the
    /// lead's `max_team_bytes_total` with everything else it wrote to the
    /// team; `denied` naming the key past it.
    pub(super) fn count_text(&self, what: &str, text: &str) -> Result<(), LeadError> {
        self.check_text(what, text)?;
        let Some(meters) = self.meters.get() else {
            return Ok(());
        };
        meters
            .budget
            .count_team_bytes(what, text.len() as u64)
            .map_err(|_| {
                LeadError::Denied(format!(
                    "team-bytes limit: {what} ({} bytes) would bring what the lead wrote to the \
                     team past {} bytes ([lead.limits] team_total_mb); nothing was written",
                    text.len(),
                    meters.budget.limits().max_team_bytes_total
                ))
            })
    }

    pub(super) fn host(&self) -> Result<Host, LeadError> {
        self.host
            .upgrade()
            .map(|inner| Host { inner })
            .ok_or_else(|| LeadError::Unavailable("the host has stopped".into()))
    }

    pub(super) fn lead_name(&self) -> &'static str {
        crate::store::config::LEAD_NAME
    }

    pub(super) fn entry(&self, name: &str) -> Result<&CatalogueEntry, LeadError> {
        self.spec
            .catalogue
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                LeadError::NotFound(format!(
                    "no catalogue entry {name:?}: the lead may spawn only [{}]",
                    self.spec
                        .catalogue
                        .iter()
                        .map(|e| e.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    pub(super) fn require_formed(&self) -> Result<(), LeadError> {
        if self.formed.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(LeadError::Conflict(
                "the team is not formed yet: create the team first with TeamCreate".into(),
            ))
        }
    }

    /// The teammates now: the config's members but the lead.
    pub(super) fn members(&self) -> Result<Vec<crate::store::Member>, LeadError> {
        let config = self.team.config().map_err(unavailable)?;
        Ok(config
            .members
            .iter()
            .filter(|m| m.name != self.lead_name())
            .map(|m| (**m).clone())
            .collect())
    }

    /// Whether `delete_team` ended the lead's run.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
}

pub(super) fn unavailable(e: Error) -> LeadError {
    match e {
        Error::MemberNotFound { .. } | Error::TaskNotFound { .. } => {
            LeadError::NotFound(e.to_string())
        }
        Error::InvalidName { .. } => LeadError::Invalid(e.to_string()),
        Error::Approval(m) => LeadError::Invalid(m),
        Error::Spawn(m) => LeadError::Unavailable(m),
        other => {
            tracing::warn!(error = %other, "a lead's call failed in the host");
            LeadError::Unavailable(format!("the host could not do it: {other}"))
        }
    }
}

impl LeadHost for LeadSeat {
    fn catalogue(&self) -> Vec<CatalogueView> {
        self.catalogue_view()
    }

    fn create_team(
        &self,
        name: String,
        description: Option<String>,
    ) -> BoxFuture<'_, Result<String, LeadError>> {
        Box::pin(self.create_team_now(name, description))
    }

    fn delete_team(&self) -> BoxFuture<'_, Result<(), LeadError>> {
        Box::pin(self.delete_now())
    }

    fn spawn(&self, caller: Caller, req: LeadSpawn) -> BoxFuture<'_, Result<String, LeadError>> {
        Box::pin(self.spawn_now(caller, req))
    }

    fn answer_permission(
        &self,
        caller: Caller,
        request_id: String,
        answer: PermitAnswer,
    ) -> BoxFuture<'_, Result<(), LeadError>> {
        Box::pin(self.answer_permission_now(caller, request_id, answer))
    }

    fn answer_plan(
        &self,
        caller: Caller,
        request_id: String,
        answer: PlanAnswer,
    ) -> BoxFuture<'_, Result<(), LeadError>> {
        Box::pin(self.answer_plan_now(caller, request_id, answer))
    }

    fn shutdown(
        &self,
        name: String,
        reason: Option<String>,
    ) -> BoxFuture<'_, Result<String, LeadError>> {
        Box::pin(self.shutdown_now(name, reason))
    }

    fn pending(&self) -> Result<Vec<PendingView>, LeadError> {
        self.pending_view()
    }

    fn teammates(&self) -> Result<Vec<TeammateView>, LeadError> {
        self.teammates_view()
    }

    fn ended(&self) -> bool {
        LeadSeat::ended(self)
    }
}
