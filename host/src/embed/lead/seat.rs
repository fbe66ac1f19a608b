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
//! | `spawn` | [`Host::spawn`](crate::embed::Host::spawn) with the entry's component, granted by [`lead_grant`](crate::embed::grant::lead_grant) from the budget the broker keeps for the lead | `conflict` before `create_team` or for a taken name; `not-found` outside the catalogue; `denied` wider than the entry or the lead, past `max_teammates` at once or `max_spawns_total` over its life |
//! | `answer_*` | [`answer_through_host`] | `not-found` for an id not in this team; `denied` for the lead's own request (the person answers it) or a plan mode wider than the lead's; `conflict` once answered |
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

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::approvals::{self, Answer, Decider, Decision, PermitAnswer, PlanAnswer, Request};
use crate::embed::api::Inner;
use crate::embed::approvals::{
    decide_recording, member_cwd, requester, routes_of, Answerer, DecideError,
};
use crate::embed::grant::LeadGrant;
use crate::embed::grant::{CatalogueEntry, LeadSpec};
use crate::embed::{Host, SpawnRequest, TeammateSettings};
use crate::error::Error;
use crate::home::decisions;
use crate::model::ModelPolicy;
use crate::protocol::{ShutdownRequest, WireMessage};
use crate::runtime::lead_host::{
    BoxFuture, Caller, CatalogueView, LeadError, LeadHost, LeadSpawn, PendingKind, PendingView,
    TeammateView,
};
use crate::runtime::TreeBudget;
use crate::store::{OutgoingMessage, Team};
use crate::teammate::TeammateState;

/// How long a TeamDelete waits for teammates the lead asked to shut down.
const STOPPING_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The most of a request's input or plan text [`LeadHost::pending`] shows.
const DETAIL_CHARS: usize = 2_000;

/// A lead component's seat in one team. Built by
/// [`Host::start_lead`](crate::embed::Host::start_lead).
pub struct LeadSeat {
    host: Weak<Inner>,
    team: Team,
    spec: LeadSpec,
    /// `create_team` was called (and `delete_team` not yet).
    formed: AtomicBool,
    /// `delete_team` succeeded: the lead's runner ends after this turn.
    ended: AtomicBool,
    /// What it spawned: member name → catalogue entry.
    spawned: Mutex<HashMap<String, String>>,
    /// Teammates this lead asked to shut down (a delete waits for those
    /// that approved).
    asked_to_stop: Mutex<std::collections::HashSet<String>>,
    /// The model budgets it gave, in microdollars (a teammate's budget
    /// stays given when it stops: a budget is for its whole life).
    given: Mutex<u64>,
    /// Teammates it spawned over its life, against `max_spawns_total`.
    spawns: AtomicUsize,
    /// Its answers refused so far, against the refusal limits.
    refusals: Mutex<RefusalCount>,
    /// The lead's own budgets and turn count, attached once its instance
    /// is built ([`LeadSeat::attach`]).
    meters: OnceLock<SeatMeters>,
}

/// What the seat counts in the lead's own instance.
struct SeatMeters {
    /// The lead's tree budget: what the seat writes is team bytes there.
    budget: Arc<TreeBudget>,
    /// The turns the lead's runner has started.
    turns: Arc<AtomicU64>,
}

/// A lead's refused answers, this turn and over its life.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct RefusalCount {
    /// The turn `this_turn` counts.
    turn: u64,
    this_turn: u32,
    total: u32,
}

impl RefusalCount {
    /// `Ok` while a refusal in `turn` may still be recorded; else which
    /// limit it passed, with the manifest key that raises it.
    fn quota(&self, turn: u64, per_turn: u32, total: u32) -> Result<(), String> {
        let this_turn = if self.turn == turn { self.this_turn } else { 0 };
        if self.total >= total {
            Err(format!(
                "the lead's answers were refused {} times in its life, its limit of recorded \
                 refusals ([lead] max_refused_answers_total = {total})",
                self.total
            ))
        } else if this_turn >= per_turn {
            Err(format!(
                "the lead's answers were refused {this_turn} times this turn, its limit of \
                 recorded refusals per turn ([lead] max_refused_answers_per_turn = {per_turn})"
            ))
        } else {
            Ok(())
        }
    }

    /// Counts one refusal in `turn`.
    fn count(&mut self, turn: u64) {
        if self.turn != turn {
            self.turn = turn;
            self.this_turn = 0;
        }
        self.this_turn = self.this_turn.saturating_add(1);
        self.total = self.total.saturating_add(1);
    }
}

impl LeadSeat {
    pub(in crate::embed) fn new(host: &Host, team: Team, spec: LeadSpec) -> LeadSeat {
        LeadSeat {
            host: Arc::downgrade(&host.inner),
            team,
            spec,
            formed: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            spawned: Mutex::new(HashMap::new()),
            asked_to_stop: Mutex::new(Default::default()),
            given: Mutex::new(0),
            spawns: AtomicUsize::new(0),
            refusals: Mutex::new(RefusalCount::default()),
            meters: OnceLock::new(),
        }
    }

    /// Gives the seat the lead's own tree budget and turn count (once,
    /// before the lead's first turn): what the seat writes for the lead is
    /// counted there, and its refusals per turn by those turns.
    pub(in crate::embed) fn attach(&self, budget: Arc<TreeBudget>, turns: Arc<AtomicU64>) {
        if self.meters.set(SeatMeters { budget, turns }).is_err() {
            tracing::warn!("a lead seat was attached twice; the first meters stay");
        }
    }

    /// The lead's turn now (0 before it is attached).
    fn turn(&self) -> u64 {
        self.meters
            .get()
            .map_or(0, |m| m.turns.load(Ordering::Relaxed))
    }

    /// Holds `text` of the lead's, which the seat is about to write into
    /// the team as `what`, to the lead's message limit; `invalid` naming
    /// the limit and its key when it is bigger. Nothing is counted.
    fn check_text(&self, what: &str, text: &str) -> Result<(), LeadError> {
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
    fn count_text(&self, what: &str, text: &str) -> Result<(), LeadError> {
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

    /// Whether a refusal now may still be recorded as an escalation.
    fn refusal_quota(&self) -> Result<(), String> {
        self.refusals.lock().expect("refusals lock").quota(
            self.turn(),
            self.spec.max_refused_answers_per_turn,
            self.spec.max_refused_answers_total,
        )
    }

    /// Counts a refused answer of `request`, recorded as an escalation
    /// while `quota` allows; past it, the refusal says which limit kept it
    /// off the record.
    fn refused(
        &self,
        request: &Request,
        refusal: LeadError,
        quota: &Result<(), String>,
    ) -> LeadError {
        self.refusals
            .lock()
            .expect("refusals lock")
            .count(self.turn());
        match quota {
            Ok(()) => {
                if let Ok(host) = self.host() {
                    record_escalation(&host, &self.team, request, &refusal.to_string());
                }
                refusal
            }
            Err(limit) => unrecorded(refusal, limit),
        }
    }

    /// Counts a refusal [`decide`](crate::embed::approvals::decide) made (and
    /// recorded, while `quota` allowed).
    fn decided_refusal(
        &self,
        result: Result<(), LeadError>,
        quota: &Result<(), String>,
    ) -> Result<(), LeadError> {
        match result {
            Err(refusal @ LeadError::Denied(_)) => {
                self.refusals
                    .lock()
                    .expect("refusals lock")
                    .count(self.turn());
                Err(match quota {
                    Ok(()) => refusal,
                    Err(limit) => unrecorded(refusal, limit),
                })
            }
            other => other,
        }
    }

    fn host(&self) -> Result<Host, LeadError> {
        self.host
            .upgrade()
            .map(|inner| Host { inner })
            .ok_or_else(|| LeadError::Unavailable("the host has stopped".into()))
    }

    fn lead_name(&self) -> &'static str {
        crate::store::config::LEAD_NAME
    }

    fn entry(&self, name: &str) -> Result<&CatalogueEntry, LeadError> {
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

    fn require_formed(&self) -> Result<(), LeadError> {
        if self.formed.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(LeadError::Conflict(
                "the team is not formed yet: create the team first with TeamCreate".into(),
            ))
        }
    }

    /// The lead's own grant now, `given` microdollars already given: its
    /// budget is the one its broker keeps (the default included).
    fn lead_grant(&self, caller: &Caller, host: &Host, given: u64) -> LeadGrant {
        let policy = self.spec.settings.model_policy.as_ref();
        let hub = host.inner.opts.models.hub();
        LeadGrant {
            mode: caller.mode,
            rules: caller.rules.clone(),
            models: policy.map(|p| p.allow.clone()).unwrap_or_default(),
            budget_left_microdollars: policy
                .and_then(|p| hub.budget_for(p))
                .map(|budget| budget.saturating_sub(given)),
        }
    }

    /// The teammates now: the config's members but the lead.
    fn members(&self) -> Result<Vec<crate::store::Member>, LeadError> {
        let config = self.team.config().map_err(unavailable)?;
        Ok(config
            .members
            .iter()
            .filter(|m| m.name != self.lead_name())
            .map(|m| (**m).clone())
            .collect())
    }

    /// Finds `id` among this team's requests; refuses the lead's own
    /// (recorded while `quota` allows) and answered ones.
    fn answerable(&self, id: &str, quota: &Result<(), String>) -> Result<Request, LeadError> {
        let all = approvals::requests(&self.team).map_err(unavailable)?;
        let Some(request) = all.into_iter().find(|r| r.id() == id) else {
            return Err(LeadError::NotFound(format!(
                "no permission or plan request {id:?} in the lead's team"
            )));
        };
        if crate::embed::grant::is_own_request(&request, self.lead_name()) {
            let why = format!(
                "{id} is the lead's own request: {}; escalated to the person",
                crate::embed::grant::OWN_REQUEST
            );
            return Err(self.refused(&request, LeadError::Denied(why), quota));
        }
        let waiting = approvals::pending(&self.team).map_err(unavailable)?;
        if !waiting.iter().any(|r| r.id() == id) {
            return Err(LeadError::Conflict(format!(
                "{id} was already answered (or its teammate left)"
            )));
        }
        Ok(request)
    }

    /// Whether `delete_team` ended the lead's run.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    async fn spawn_now(&self, caller: Caller, req: LeadSpawn) -> Result<String, LeadError> {
        self.require_formed()?;
        let entry = self.entry(&req.entry)?.clone();
        if req.name.trim().is_empty() || req.prompt.trim().is_empty() {
            return Err(LeadError::Invalid(
                "a teammate needs a name and a prompt".into(),
            ));
        }
        self.check_text("the spawn prompt", &req.prompt)?;
        // A name is a file stem in the team's directory and the teammate's
        // default directory, and what the team reads as who wrote: nothing
        // path-like, nothing that looks like the lead, the person, the host,
        // a flag or another member.
        crate::store::names::check_new_member_name(&req.name)
            .map_err(|e| LeadError::Invalid(format!("teammate name: {e}")))?;
        let members = self.members()?;
        if req.name == self.lead_name() || members.iter().any(|m| m.name == req.name) {
            return Err(LeadError::Conflict(format!(
                "{:?} is already a member of the team: choose another name",
                req.name
            )));
        }
        let names = members.iter().map(|m| m.name.as_str());
        crate::store::names::check_distinct(&req.name, names.chain([self.lead_name()]))
            .map_err(|e| LeadError::Conflict(format!("teammate name: {e}")))?;
        if members.len() >= self.spec.max_teammates {
            return Err(LeadError::Denied(format!(
                "the lead may have at most {} teammates at once; shut one down first \
                 (or raise [lead] max_teammates)",
                self.spec.max_teammates
            )));
        }
        let spawned = self.spawns.load(Ordering::SeqCst);
        if spawned >= self.spec.max_spawns_total {
            return Err(LeadError::Denied(format!(
                "the lead may spawn at most {} teammates over its life and has spawned {spawned} \
                 (shut-down teammates count too); raise [lead] max_spawns_total to allow more",
                self.spec.max_spawns_total
            )));
        }
        let host = self.host()?;
        // What the purse is charged is what the broker will hold the
        // teammate to: its budget, or the default its model gets.
        let hub = host.inner.opts.models.hub().clone();
        let unset_budget = |model: &str| hub.budget_for(&ModelPolicy::new(vec![model.to_string()]));
        let granted = {
            let mut given = self.given.lock().expect("given lock");
            let granted = self
                .lead_grant(&caller, &host, *given)
                .may_spawn(&entry, &req, &unset_budget)
                .map_err(LeadError::Denied)?;
            self.count_text("the spawn prompt", &req.prompt)?;
            *given = given.saturating_add(granted.budget_microdollars.unwrap_or(0));
            granted
        };
        // Counted before the spawn runs, whatever its end: every spawn
        // writes a member, a directory and an inbox.
        self.spawns.fetch_add(1, Ordering::SeqCst);
        let charged = granted.budget_microdollars.unwrap_or(0);
        let give_back = || {
            let mut given = self.given.lock().expect("given lock");
            *given = given.saturating_sub(charged);
        };
        let cwd = match &entry.cwd {
            Some(dir) => dir.clone(),
            None => {
                let dir = self.spec.work_dir.join(&req.name);
                if let Err(e) = std::fs::create_dir_all(&dir) {
                    give_back();
                    return Err(LeadError::Unavailable(format!(
                        "cannot make the teammate's directory: {e}"
                    )));
                }
                dir
            }
        };
        let model_policy = granted.model.as_ref().map(|m| {
            let mut p = ModelPolicy::new(vec![m.clone()]);
            p.budget_microdollars = granted.budget_microdollars;
            p
        });
        let settings = TeammateSettings {
            agent_type: Some(entry.name.clone()),
            model: granted.model.clone(),
            mode: Some(granted.mode),
            plan_mode_required: req.plan_mode_required,
            rules: granted.rules,
            auto_claim: entry.auto_claim,
            limits: entry.limits.clone(),
            model_policy,
            ..TeammateSettings::default()
        };
        let mut spawn = SpawnRequest::new(&req.name, &entry.component, &req.prompt, cwd);
        spawn.isolation = entry.isolation;
        spawn.settings = settings;
        match host.spawn(self.team.name(), spawn).await {
            Ok(info) => {
                self.spawned
                    .lock()
                    .expect("spawned lock")
                    .insert(info.name.clone(), entry.name.clone());
                Ok(info.agent_id)
            }
            Err(e) => {
                give_back();
                Err(unavailable(e))
            }
        }
    }

    /// The members left once those that approved their shutdown have gone:
    /// waits (on the host's events, at most [`STOPPING_WAIT`]) while every
    /// member left has approved a shutdown this lead asked for, so a
    /// TeamDelete right after the approvals is not refused for teammates on
    /// their way out (nothing would wake the lead to try again once they are
    /// gone). A member that has not approved yet (it may be waiting for an
    /// answer from this very lead) is refused at once.
    async fn members_once_stopped(&self) -> Result<Vec<crate::store::Member>, LeadError> {
        let mut events = self.host()?.events();
        let deadline = tokio::time::Instant::now() + STOPPING_WAIT;
        loop {
            let members = self.members()?;
            let all_stopping = {
                let asked = self.asked_to_stop.lock().expect("asked lock").clone();
                members.iter().all(|m| asked.contains(&m.name))
                    && self.approved_shutdown(&members)?
            };
            if members.is_empty() || !all_stopping {
                return Ok(members);
            }
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_elapsed) => return Ok(members),
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return Ok(members),
                // An event or a lag: look again.
                Ok(_) => {}
            }
        }
    }

    /// Whether every one of `members` has sent the lead a
    /// `shutdown_approved` (in its inbox or history).
    fn approved_shutdown(&self, members: &[crate::store::Member]) -> Result<bool, LeadError> {
        let lead = self.lead_name();
        let mut mail = self.team.history(lead).map_err(unavailable)?;
        mail.extend(self.team.read_inbox(lead).map_err(unavailable)?);
        Ok(members.iter().all(|m| {
            mail.iter().any(|msg| {
                msg.from == m.name
                    && msg.text.contains("shutdown_approved")
                    && matches!(
                        crate::protocol::ProtocolMessage::parse(&msg.text),
                        crate::protocol::Parsed::Protocol(
                            crate::protocol::ProtocolMessage::ShutdownApproved(_)
                        )
                    )
            })
        }))
    }

    async fn delete_now(&self) -> Result<(), LeadError> {
        self.require_formed()?;
        let members = self.members_once_stopped().await?;
        if !members.is_empty() {
            return Err(LeadError::Conflict(format!(
                "teammates are still members: [{}]; shut them down first",
                members
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let host = self.host()?;
        // The lead's own runner is inside this call: kept out of the
        // delete's kills, and ended by `ended` once its turn returns.
        let key = (self.team.name().to_string(), self.lead_name().to_string());
        let lead = host
            .inner
            .teammates
            .lock()
            .expect("teammates lock")
            .remove(&key);
        self.ended.store(true, Ordering::SeqCst);
        let deleted = host.delete_team(self.team.name()).await;
        if let Some(lead) = lead {
            host.inner
                .teammates
                .lock()
                .expect("teammates lock")
                .insert(key, lead);
        }
        match deleted {
            Ok(_) => {
                self.formed.store(false, Ordering::SeqCst);
                Ok(())
            }
            Err(e) => {
                self.ended.store(false, Ordering::SeqCst);
                Err(unavailable(e))
            }
        }
    }
}

/// The one place a lead's answer reaches the host:
/// [`decide`](crate::embed::approvals::decide) as
/// [`Answerer::Lead`] with the lead's grant at the moment of the call, the
/// same path the person's seat and the policy take (one
/// approval path). A refusal there is recorded as an escalation (when
/// `record_refusal`: the lead is within its limits of refused answers) and
/// the request stays waiting for the person.
pub(crate) fn answer_through_host(
    host: &Host,
    team: &Team,
    caller: Caller,
    request_id: &str,
    answer: SeatAnswer,
    record_refusal: bool,
) -> Result<(), LeadError> {
    let answer = match answer {
        SeatAnswer::Permission(a) => Answer::Permit(a),
        SeatAnswer::Plan(a) => Answer::Plan(a),
    };
    decide_recording(
        host.home(),
        team,
        &Answerer::Lead(caller),
        request_id,
        answer,
        record_refusal,
    )
    .map(|_| ())
    .map_err(|e| match e {
        DecideError::NotFound(m) => LeadError::NotFound(m),
        DecideError::AlreadyAnswered { message, .. } => LeadError::Conflict(message),
        DecideError::Escalated(m) => LeadError::Denied(m),
        DecideError::Invalid(m) => LeadError::Invalid(m),
        DecideError::Failed(e) => unavailable(e),
    })
}

/// Records that the lead was refused `request` before it reached
/// [`decide`](crate::embed::approvals::decide) (its own request, a plan mode wider
/// than its entry), so the person sees it escalated like every other
/// refusal.
fn record_escalation(host: &Host, team: &Team, request: &Request, why: &str) {
    let escalation = Decision::escalated(request, Decider::Lead, why);
    if let Err(e) = decisions::escalate(host.home(), team.name(), &escalation) {
        tracing::warn!("{}: escalation not recorded: {e}", request.id());
    }
}

/// `refusal`, with why it was not recorded as an escalation this time.
fn unrecorded(refusal: LeadError, limit: &str) -> LeadError {
    LeadError::Denied(format!(
        "{refusal} (not recorded again: {limit}; the request still waits for the person)"
    ))
}

/// The text of the lead's a permission answer writes to the teammate:
/// the denial reason or the replacement input.
fn permit_text(answer: &PermitAnswer) -> Option<(&'static str, String)> {
    match answer {
        PermitAnswer::Deny { reason } => Some(("the denial reason", reason.clone())),
        PermitAnswer::Allow {
            updated_input,
            permission_updates,
        } => {
            let text: String = updated_input
                .iter()
                .chain(permission_updates)
                .map(|v| v.to_string())
                .collect();
            (!text.is_empty()).then_some(("the replacement input", text))
        }
    }
}

/// An answer the seat passes on.
pub(crate) enum SeatAnswer {
    Permission(PermitAnswer),
    Plan(PlanAnswer),
}

fn unavailable(e: Error) -> LeadError {
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

fn bounded(text: String) -> String {
    if text.chars().count() <= DETAIL_CHARS {
        return text;
    }
    let mut out: String = text.chars().take(DETAIL_CHARS).collect();
    out.push('…');
    out
}

fn state_word(state: &TeammateState) -> &'static str {
    match state {
        TeammateState::Idle | TeammateState::AwaitingPlanApproval => "idle",
        TeammateState::Completed | TeammateState::Failed(_) | TeammateState::Killed => "stopped",
        TeammateState::Compiling
        | TeammateState::Starting
        | TeammateState::Active
        | TeammateState::ShutdownRequested => "active",
    }
}

impl LeadHost for LeadSeat {
    fn catalogue(&self) -> Vec<CatalogueView> {
        self.spec
            .catalogue
            .iter()
            .map(|e| CatalogueView {
                name: e.name.clone(),
                description: e.description.clone(),
                max_mode: e.max_mode,
                tools: e.rules.allowed_texts(),
                models: e.models.clone(),
                budget_usd: e.budget_usd,
            })
            .collect()
    }

    fn create_team(
        &self,
        name: String,
        description: Option<String>,
    ) -> BoxFuture<'_, Result<String, LeadError>> {
        Box::pin(async move {
            if let Some(text) = &description {
                self.check_text("the team description", text)?;
            }
            if self.formed.swap(true, Ordering::SeqCst) {
                return Err(LeadError::Conflict(format!(
                    "team {} is already formed: TeamDelete first",
                    self.team.name()
                )));
            }
            if let Some(text) = &description {
                if let Err(e) = self.count_text("the team description", text) {
                    self.formed.store(false, Ordering::SeqCst);
                    return Err(e);
                }
            }
            let team = self.team.clone();
            let written = crate::blocking::try_run("writing the team", move || {
                team.update_config(|c| {
                    c.description = description.clone();
                    Ok(())
                })
            })
            .await;
            if let Err(e) = written.map_err(unavailable) {
                self.formed.store(false, Ordering::SeqCst);
                return Err(e);
            }
            // The WIT contract: the team's real name, whatever `name` said
            // (the host names the lead's team; the toolbox tells a model).
            let _ = name;
            Ok(self.team.name().to_string())
        })
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
        Box::pin(async move {
            if let Some((what, text)) = permit_text(&answer) {
                self.check_text(what, &text)?;
            }
            let quota = self.refusal_quota();
            let request = self.answerable(&request_id, &quota)?;
            if !matches!(request, Request::Permission(_)) {
                return Err(LeadError::Invalid(format!(
                    "{request_id} is a plan: answer it with answer-plan"
                )));
            }
            let host = self.host()?;
            let within = Answer::Permit(answer.clone());
            if let Err(refusal) = self.check_within_entry(&caller, &request, &within) {
                return Err(self.refused(&request, refusal, &quota));
            }
            if let Some((what, text)) = permit_text(&answer) {
                self.count_text(what, &text)?;
            }
            let answered = answer_through_host(
                &host,
                &self.team,
                caller,
                &request_id,
                SeatAnswer::Permission(answer),
                quota.is_ok(),
            );
            self.decided_refusal(answered, &quota)
        })
    }

    fn answer_plan(
        &self,
        caller: Caller,
        request_id: String,
        answer: PlanAnswer,
    ) -> BoxFuture<'_, Result<(), LeadError>> {
        Box::pin(async move {
            if let PlanAnswer::Reject { feedback } = &answer {
                self.check_text("the plan feedback", feedback)?;
            }
            let quota = self.refusal_quota();
            let request = self.answerable(&request_id, &quota)?;
            let Request::Plan(_) = &request else {
                return Err(LeadError::Invalid(format!(
                    "{request_id} is a permission request: answer it with answer-permission"
                )));
            };
            let within = Answer::Plan(answer.clone());
            if let Err(refusal) = self.check_within_entry(&caller, &request, &within) {
                return Err(self.refused(&request, refusal, &quota));
            }
            if let PlanAnswer::Reject { feedback } = &answer {
                self.count_text("the plan feedback", feedback)?;
            }
            let host = self.host()?;
            let answered = answer_through_host(
                &host,
                &self.team,
                caller,
                &request_id,
                SeatAnswer::Plan(answer),
                quota.is_ok(),
            );
            self.decided_refusal(answered, &quota)
        })
    }

    fn shutdown(
        &self,
        name: String,
        reason: Option<String>,
    ) -> BoxFuture<'_, Result<String, LeadError>> {
        Box::pin(async move {
            if let Some(text) = &reason {
                self.check_text("the shutdown reason", text)?;
            }
            if name == self.lead_name() || !self.members()?.iter().any(|m| m.name == name) {
                return Err(LeadError::NotFound(format!(
                    "{name:?} is not a teammate in the lead's team"
                )));
            }
            if let Some(text) = &reason {
                self.count_text("the shutdown reason", text)?;
            }
            let request = ShutdownRequest::new(&name, self.lead_name(), reason);
            let id = request.request_id.clone();
            self.asked_to_stop
                .lock()
                .expect("asked lock")
                .insert(name.clone());
            let (team, lead) = (self.team.clone(), self.lead_name());
            crate::blocking::try_run("sending a shutdown request", move || {
                team.send(&name, OutgoingMessage::new(lead, request.to_text()))
            })
            .await
            .map_err(unavailable)?;
            Ok(id)
        })
    }

    fn pending(&self) -> Result<Vec<PendingView>, LeadError> {
        let waiting = approvals::pending(&self.team).map_err(unavailable)?;
        let host = self.host()?;
        let routes = routes_of(host.home(), self.team.name());
        Ok(waiting
            .into_iter()
            .map(|r| {
                let from = r.from().to_string();
                let decider =
                    routes.decider_for(&r, self.lead_name(), &requester(&self.team, &from));
                let (kind, detail) = match &r {
                    Request::Permission(p) => (
                        PendingKind::Permission(p.tool_name.clone()),
                        p.input.to_string(),
                    ),
                    Request::Plan(p) => (PendingKind::Plan, p.plan_content.clone()),
                };
                PendingView {
                    id: r.id().to_string(),
                    from,
                    kind,
                    detail: bounded(detail),
                    decider,
                }
            })
            .collect())
    }

    fn teammates(&self) -> Result<Vec<TeammateView>, LeadError> {
        self.require_formed()?;
        let members = self.members()?;
        let host = self.host()?;
        let running = host.teammates(self.team.name());
        let tasks = self.team.list_tasks().map_err(unavailable)?;
        let spawned = self.spawned.lock().expect("spawned lock").clone();
        Ok(members
            .into_iter()
            .map(|m| {
                let state = running
                    .iter()
                    .find(|t| t.name == m.name)
                    .map(|t| state_word(&t.state))
                    .unwrap_or(if m.is_active == Some(true) {
                        "active"
                    } else {
                        "idle"
                    });
                let task = tasks
                    .iter()
                    .find(|t| {
                        t.owner.as_deref() == Some(m.name.as_str())
                            && t.status == crate::store::TaskStatus::InProgress
                    })
                    .map(|t| t.id.clone());
                TeammateView {
                    entry: spawned.get(&m.name).cloned(),
                    state: state.to_string(),
                    mode: crate::teammate::member_mode(&m)
                        .ok()
                        .flatten()
                        .unwrap_or_default(),
                    task,
                    name: m.name,
                }
            })
            .collect())
    }

    fn ended(&self) -> bool {
        LeadSeat::ended(self)
    }
}

impl LeadSeat {
    /// The catalogue entry teammate `name` was spawned from by this lead
    /// (`None`: it was not).
    fn entry_of(&self, name: &str) -> Option<CatalogueEntry> {
        let entry = self
            .spawned
            .lock()
            .expect("spawned lock")
            .get(name)
            .cloned();
        entry.and_then(|e| self.entry(&e).ok().cloned())
    }

    /// An answer gives at most what the requester's catalogue entry allows
    /// ([`LeadGrant::within_entry`]); [`decide`] then holds it to the
    /// lead's own grant. A refusal is the person's to answer.
    fn check_within_entry(
        &self,
        caller: &Caller,
        request: &Request,
        answer: &Answer,
    ) -> Result<(), LeadError> {
        let entry = self.entry_of(request.from());
        let cwd = member_cwd(&self.team, request.from());
        LeadGrant::answering(caller)
            .within_entry(entry.as_ref(), request, answer, &cwd)
            .map_err(|why| {
                LeadError::Denied(format!("{}: {why}; escalated to the person", request.id()))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_recorded_up_to_the_turns_limit_and_again_next_turn() {
        let mut r = RefusalCount::default();
        for _ in 0..2 {
            assert!(r.quota(1, 2, 10).is_ok());
            r.count(1);
        }
        let e = r.quota(1, 2, 10).unwrap_err();
        assert!(e.contains("[lead] max_refused_answers_per_turn = 2"), "{e}");
        // A new turn starts a new count; the life's goes on.
        assert!(r.quota(2, 2, 10).is_ok());
        r.count(2);
        assert_eq!((r.this_turn, r.total), (1, 3));
    }

    #[test]
    fn refusals_past_the_life_limit_are_not_recorded_in_any_turn() {
        let mut r = RefusalCount::default();
        for turn in 0..3 {
            assert!(r.quota(turn, 10, 3).is_ok());
            r.count(turn);
        }
        for turn in [3, 4] {
            let e = r.quota(turn, 10, 3).unwrap_err();
            assert!(e.contains("[lead] max_refused_answers_total = 3"), "{e}");
        }
    }
}
