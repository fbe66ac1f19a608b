//! The per-teammate loop, as the reference runs it but woken by events:
//! **handle** a turn → **idle** (config `isActive: false`, `idle_notification`
//! to the lead) → **poll** for the next turn in priority order (`poll.rs`) →
//! **wake** on a write to its inbox or the task list ([`wake`]; writes by
//! other processes through the store's change feed, [`watch`]), with a poll every
//! [`RunnerConfig::poll_interval`] as the fallback. With the feed on, that
//! fallback only covers a lost event, and the host's idle runners spread
//! it so that they make at most
//! [`RunnerConfig::fallback_polls_per_second`] polls a second between
//! them, each at least once a minute ([`FALLBACK_CEILING`]): at 10,000
//! teammates each polls every 30 to 90 s, not every 5 s.
//!
//! Which idle notifications reach the lead's inbox, and which only its
//! history, is [`RunnerConfig::notifications`] ([`notify`]).
//!
//! A trap or a limit breach ends this teammate only: it is marked failed, the
//! lead is told why, its unfinished tasks return to `pending`, and the loop
//! returns. It never takes the host down.

mod finish;
pub use crate::protocol::HOST_SENDER;
pub(crate) mod inject;
pub(crate) mod kill;
pub mod notify;
pub use notify::NotificationLevel;
pub(crate) mod poll;
pub mod wake;
pub mod watch;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, Notify};

use crate::hooks::HookEvent;
use crate::protocol::{IdleNotification, IdleReason, WireMessage};
use crate::runtime::bindings::handler::{TurnKind, TurnOutcome};
use crate::runtime::{Instance, PendingTake, TurnRecord};
use crate::store::{OutgoingMessage, Team};
use crate::teammate::{Event, TeammateState};

/// Turns in a row a `TeammateIdle` hook may keep a teammate from going idle.
pub const MAX_IDLE_BLOCKS: u32 = 5;

/// Settings of one runner.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Claim open tasks when idle.
    pub auto_claim: bool,
    /// Fallback poll for writes by other processes (reference: 500 ms).
    pub poll_interval: Duration,
    /// With a change feed, the most fallback polls a second the host's idle
    /// runners make between them: each waits `poll_interval`, or longer
    /// when the host holds so many runners that their polls would pass
    /// this, up to [`FALLBACK_CEILING`] ([`fallback_wait`]). `None` (no
    /// feed: polling is how writes are heard): `poll_interval` always.
    pub fallback_polls_per_second: Option<u32>,
    /// Which of its idle notifications go into the lead's inbox; the others
    /// go to the lead's history only ([`notify`]).
    pub notifications: NotificationLevel,
    /// How long a turn runs before `isActive: true` is written to the
    /// config (zero: at once). A shorter turn leaves the config alone, so a
    /// teammate busy with many short turns costs no config write per turn.
    /// Zero for a teammate in its own process, whose host follows its
    /// `isActive` (`true` and `false` around every turn); [`ACTIVE_AFTER`]
    /// in-process, where the host knows, and where `false` is written only
    /// once the runner finds no more work: turns that follow one another
    /// cost one `true` and one `false` together.
    pub active_after: Duration,
}

/// [`RunnerConfig::active_after`] for teammates in the host's process.
pub const ACTIVE_AFTER: Duration = Duration::from_millis(50);

/// The pending `isActive: true` write of a turn.
struct ActiveMark {
    cancel: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Option<Result<crate::Result<()>, tokio::task::JoinError>>>,
}

/// Channels connecting a runner to its host.
pub(crate) struct RunnerLinks {
    pub wake: Arc<Notify>,
    /// Set while the runner looks for a task to claim, so the hub wakes it
    /// for task changes only then ([`wake`]).
    pub listening: Arc<AtomicBool>,
    /// How many runners the host holds ([`wake::Registration::runners`]).
    pub runners: Arc<AtomicUsize>,
    pub injected: inject::InjectReceiver,
    pub kill: kill::KillWatch,
    pub state: tokio::sync::watch::Sender<TeammateState>,
    pub events: broadcast::Sender<Event>,
    pub turns: Arc<AtomicU64>,
    /// `true` from a wake-up until the runner is idle again: lets
    /// `Host::wait_idle` tell "idle" from "woken, about to take a message".
    pub busy: Arc<AtomicBool>,
}

/// One teammate's loop. Built by the backend at spawn, consumed by [`run_then`](Runner::run_then).
pub(crate) struct Runner {
    /// The teammate's instance, which holds who it is ([`Runner::name`] and
    /// the rest read it there: the runner keeps no copy).
    pub instance: Instance,
    pub config: RunnerConfig,
    pub links: RunnerLinks,
    /// What this runner last wrote to `isActive` (`None`: nothing yet).
    pub recorded_active: Option<bool>,
    /// An in-process turn ended with `isActive: true` recorded: `false` is
    /// written when the runner next finds no work, not at once.
    pub idle_mark_due: bool,
    /// A resumed teammate's unfinished task, handed back as its first turn
    /// that is not a message (see [`poll::handed_back_turn`]).
    pub handed_back: Option<String>,
    /// Whether this teammate was brought back after a crash: its first turn
    /// is then never `initial` (its spawn prompt was handled in its earlier
    /// life, or comes back as a message when that turn was interrupted).
    pub resumed: bool,
    /// Where the message a turn handles is noted until the turn ends, so a
    /// resume after a crash delivers it again (`None`: not noted).
    pub journal: Option<crate::home::kept::TurnJournal>,
    /// Where the task a turn works on is noted from its claim until the
    /// lead is told how the turn ended, so a resume reports a completion a
    /// cut turn made (`None`: not noted).
    pub task_note: Option<crate::home::kept::TaskNote>,
    /// Whether [`Runner::task_note`] holds a task not yet reported.
    pub note_open: bool,
    /// The host's record of the tasks this teammate claimed (`None`: not
    /// recorded); a resume hands back only those.
    pub claims: Option<crate::home::kept::ClaimLedger>,
    /// Store work due before the next poll, on the poll's blocking thread
    /// (one hand-off for both): the last turn's idle notification. Run on
    /// its own when the runner is killed before it polls again.
    pub before_poll: Option<BeforePoll>,
}

/// Work [`Runner::before_poll`] holds.
pub(crate) type BeforePoll = Box<dyn FnOnce() + Send>;

impl Runner {
    /// The team it belongs to.
    pub fn team(&self) -> &Team {
        &self.instance.ctx().team.store
    }

    /// Its member name.
    pub fn name(&self) -> &str {
        &self.instance.ctx().fixed.identity.name
    }

    /// Its agent id (`name@team`).
    pub fn agent_id(&self) -> &str {
        &self.instance.ctx().fixed.identity.agent_id
    }

    /// Its display colour.
    pub fn color(&self) -> &str {
        &self.instance.ctx().fixed.identity.color
    }

    /// The lead's member name.
    pub fn lead(&self) -> &str {
        &self.instance.ctx().fixed.lead
    }

    /// Whether this runner runs its team's lead component
    /// ([`Host::start_lead`](crate::embed::Host::start_lead)).
    pub fn is_lead(&self) -> bool {
        self.instance.ctx().lead_seat.is_some() && self.name() == self.lead()
    }

    /// Whether this lead deleted its team (its runner then ends).
    fn lead_ended(&self) -> bool {
        self.instance
            .ctx()
            .lead_seat
            .as_ref()
            .is_some_and(|seat| seat.ended())
    }

    /// Runs until the teammate approves a shutdown, fails, or is killed,
    /// then calls `then`, and returns its final state. This future is the
    /// runner's whole task: one wrapped in another future (to do something
    /// at its end) would be held twice in that future's frame, as the value
    /// moved in and as the value awaited.
    pub fn run_then(
        self,
        then: impl FnOnce() + Send + 'static,
    ) -> impl std::future::Future<Output = TeammateState> + Send {
        // The runner lives in a box of its own: an async fn would hold it
        // twice over in its future (argument and local), and this future is
        // what an idle teammate's task costs.
        let mut this = Box::new(self);
        async move {
            Box::pin(this.lifecycle_hooks(true)).await;
            let final_state = this.run_loop().await;
            let final_state = Box::pin(this.finish(final_state)).await;
            then();
            final_state
        }
    }

    /// The teammate's end: usage written, final state announced, the end's
    /// hooks run.
    async fn finish(&mut self, final_state: TeammateState) -> TeammateState {
        // Before the teammate counts as gone: whoever waits for its end
        // (shutdown, delete, `run`'s summary) finds its usage written.
        if let Some(at_end) = self.instance.agent().model.at_end.take() {
            at_end.run().await;
        }
        self.set_state(final_state.clone());
        self.lifecycle_hooks(false).await;
        final_state
    }

    /// The loop's own future stays small — what an idle teammate's task
    /// holds while it waits is this loop, a few words, and the boxed wait
    /// for its next turn — so the turn and everything after it run in a box
    /// of their own (`take_turn`), which exists only while they do.
    async fn run_loop(&mut self) -> TeammateState {
        let mut between = BetweenTurns {
            kept_working: None,
            idle_blocks: 0,
            first_idle: true,
        };
        // A wake-up stored before the first poll (the spawn prompt's
        // delivery) is redundant: that poll reads everything written before
        // it. Left stored, it would wake the teammate once more right after
        // its first turn, an idle teammate polling unasked. (`timeout` polls
        // the wait once before looking at the clock: a stored permit is
        // taken, none is waited for.)
        let _ = tokio::time::timeout(Duration::ZERO, self.links.wake.notified()).await;
        loop {
            let found = match between.kept_working.take() {
                Some(f) => f,
                None => match Box::pin(self.wait_for_turn()).await {
                    Some(f) => f,
                    None => return Box::pin(self.stop_killed()).await,
                },
            };
            if let Some(end) = Box::pin(self.take_turn(found, &mut between)).await {
                return end;
            }
        }
    }

    /// One turn and what follows it: the guest's turn, the consumed message
    /// settled, `isActive`, the idle hooks and the idle notification.
    /// Returns the teammate's final state when the turn ended it.
    async fn take_turn(
        &mut self,
        found: Box<poll::Found>,
        between: &mut BetweenTurns,
    ) -> Option<TeammateState> {
        let found = *found;
        let turn = found.turn;
        let forged_plan_answer = found.take.as_ref().and_then(forged_plan_answer);
        let journaled = found.take.is_some() && self.journal.is_some();
        if let Some(entry) = found.take {
            // Noted and consumed beside the turn (unless the poll did),
            // finished before it ends.
            let take = found.taken.unwrap_or_else(|| {
                PendingTake::start(
                    self.team().clone(),
                    self.name().to_string(),
                    entry,
                    self.journal.clone(),
                )
            });
            self.instance.agent().coordination.pending_take = Some(take);
        }
        // The turn is announced before anything it causes (its state, a plan
        // answer applied), so whoever prints events shows them in order.
        let _ = self.links.events.send(Event::TurnStarted {
            team: self.team().name().into(),
            name: self.name().to_string(),
            kind: kind_name(&turn.kind).into(),
        });
        if let Some(first) = turn.messages.first() {
            self.apply_plan_answer(first).await;
        }
        if let Some(id) = forged_plan_answer {
            self.refuse_forged_plan_answer(&id);
        }
        if let Some(id) = found.shutdown_request {
            self.instance
                .agent()
                .coordination
                .pending_shutdowns
                .push(id);
            self.set_state(TeammateState::ShutdownRequested);
        } else {
            self.set_state(TeammateState::Active);
        }
        // `isActive: true` is written while the turn runs, not before it
        // (nothing waits for it), and only once the turn has lasted
        // `active_after`: a short turn costs no config write at all.
        // Not for a lead component: its turn may delete the team, and a
        // write racing the deletion would leave the team's directory behind.
        // A teammate still marked active from the turn before (it went
        // from one turn straight to the next) is not marked again.
        let active_mark = (!self.is_lead() && self.recorded_active != Some(true))
            .then(|| self.start_active_mark());
        self.links.turns.fetch_add(1, Ordering::Relaxed);
        let result = Box::pin(self.instance.handle_turn(&turn)).await;
        // The message is consumed before anything follows the turn.
        self.instance.agent().coordination.settle_take().await;
        let record = std::mem::take(&mut self.instance.agent().coordination.turn);
        // The turn's note is cleared in the idle notification's blocking
        // task (the next poll's), just before the notification is stored
        // (one hand-off for the three), when nothing else comes between
        // the turn and the notification; otherwise here, on its own: the
        // turn failed, a shutdown was approved, idle hooks run (a program,
        // for as long as it takes), or the runner is a lead's (no
        // notification).
        let mut turn_note = self.journal.clone().filter(|_| journaled);
        let plain = result.is_ok()
            && !self.is_lead()
            && !matches!(
                record.shutdown,
                Some(crate::runtime::ShutdownDecision::Approved { .. })
            )
            && !self.wants_idle_hooks();
        if !plain {
            if let Some(note) = turn_note.take() {
                let closed =
                    crate::blocking::try_run("clearing the turn's note", move || note.close());
                if let Err(e) = closed.await {
                    tracing::warn!(teammate = %self.name(), error = %e, "the turn's note was not cleared; a resume may deliver its message again");
                }
            }
        }
        // A lead that deleted its team ends here: nothing of the team is
        // left to write to.
        if self.lead_ended() {
            return Some(TeammateState::Completed);
        }
        // The `true` write, if it began, must land before anything later
        // (`false`, or the member's removal) so the config ends right.
        let marked_active = match active_mark {
            Some(mark) => self.finish_active_mark(mark).await,
            None => false,
        };
        let outcome = match result {
            Err(trap) => return Some(Box::pin(self.stop_failed(format!("{trap:#}"))).await),
            Ok(outcome) => outcome,
        };
        if let Some(crate::runtime::ShutdownDecision::Approved { request_id }) = &record.shutdown {
            return Some(Box::pin(self.stop_approved(request_id.clone())).await);
        }
        if let Some(feedback) = self.idle_hooks(&mut between.idle_blocks).await {
            // Not a plain turn (its hooks wanted to run): its note was
            // cleared above, unless the hooks changed in between; then here.
            if let Some(note) = turn_note.take() {
                if let Err(e) =
                    crate::blocking::try_run("clearing the turn's note", move || note.close()).await
                {
                    tracing::warn!(teammate = %self.name(), error = %e, "the turn's note was not cleared; a resume may deliver its message again");
                }
            }
            between.kept_working = Some(Box::new(poll::hook_turn(feedback)));
            return None;
        }
        if marked_active || self.recorded_active != Some(false) {
            if self.config.active_after.is_zero() {
                self.mark_active(false).await;
            } else {
                // In-process: `false` waits until the runner finds no more
                // work (`wait_for_turn`), so a busy streak of turns costs
                // one `true` and one `false`, not a pair per turn.
                self.idle_mark_due = true;
            }
        }
        self.notify_idle(&record, outcome, between.first_idle, turn_note);
        between.first_idle = false;
        None
    }

    /// Polls for work; when there is none, waits for a wake-up, the fallback
    /// tick, or a kill. `None` means killed.
    async fn wait_for_turn(&mut self) -> Option<Box<poll::Found>> {
        loop {
            if self.links.kill.is_tripped() {
                if let Some(due) = self.before_poll.take() {
                    let stored = Box::pin(crate::blocking::run("the idle notification", due));
                    if let Err(e) = stored.await {
                        tracing::error!(teammate = %self.name(), error = %e, "the idle notification due before the poll was not stored");
                    }
                }
                return None;
            }
            self.links.busy.store(true, Ordering::SeqCst);
            // From before the poll: a task change from now on leaves a permit.
            self.links
                .listening
                .store(self.config.auto_claim, Ordering::SeqCst);
            // Waiting from before the poll: a wake-up stored before it (the
            // prompt written before the runner started, an inbox write
            // during the last turn) is spent here, since the poll reads
            // what it was for, and one that comes during or after the poll
            // is this future's. Before, a stale wake-up sent an idle
            // teammate straight into a second poll that found nothing.
            let wake = self.links.wake.clone();
            let woken = wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            // The poll runs in a box of its own: what it holds (the
            // blocking call's closure, its captures) is gone before the
            // wait below, which is what an idle teammate's task keeps.
            match Box::pin(self.poll_for_work()).await {
                Polled::Found(found) => return Some(found),
                Polled::Again => continue,
                Polled::Nothing => {}
            }
            // The busy streak is over: `isActive: false` lands before the
            // teammate is announced idle.
            if std::mem::take(&mut self.idle_mark_due) {
                Box::pin(self.mark_active(false)).await;
            }
            // Clear `busy` before announcing Idle, so a waiter woken by the
            // announcement already sees the teammate settled.
            self.links.busy.store(false, Ordering::SeqCst);
            // Waiting without a turn (a resumed teammate with nothing
            // unread): the stack it was made with goes back now.
            self.instance.rest();
            let waiting = if self.instance.agent().coordination.pending_plan.is_some() {
                TeammateState::AwaitingPlanApproval
            } else {
                TeammateState::Idle
            };
            self.set_state(waiting);
            let fallback = fallback_wait(
                self.config.poll_interval,
                self.config.fallback_polls_per_second,
                self.links.runners.load(Ordering::Relaxed),
                fastrand::f64(),
            );
            tokio::select! {
                _ = woken.as_mut() => {}
                _ = tokio::time::sleep(fallback) => {}
                changed = self.links.kill.changed() => {
                    if changed.is_err() {
                        return None; // the host is gone
                    }
                }
            }
        }
    }

    /// One poll for work on a blocking thread ([`poll::next_turn`], the
    /// task handed back, the first message's take, the task's note).
    async fn poll_for_work(&mut self) -> Polled {
        let injected = self.links.injected.try_recv();
        let (team, me, lead) = (
            self.team().clone(),
            self.name().to_string(),
            self.lead().to_string(),
        );
        let first = self.links.turns.load(Ordering::Relaxed) == 0 && !self.resumed;
        // A task handed back comes before any new claim.
        let auto_claim = self.config.auto_claim && self.handed_back.is_none();
        let handed_back = self.handed_back.clone();
        let note = self.task_note.clone();
        let claims = self.claims.clone();
        let journal = self.journal.clone().filter(|_| first);
        let due = self.before_poll.take();
        let polled = crate::blocking::try_run("polling for work", move || {
            if let Some(due) = due {
                // A panic there is a host bug; the poll goes on.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(due)).is_err() {
                    tracing::error!(teammate = %me, "the work due before the poll panicked");
                }
            }
            let found = match poll::next_turn(
                &team,
                &me,
                &lead,
                injected,
                first,
                auto_claim,
                claims.as_ref(),
            )? {
                None => match handed_back {
                    Some(id) => poll::handed_back_turn(&team, &me, &id)?,
                    None => None,
                },
                found => found,
            };
            // A new teammate's first message (its prompt, as a rule) is
            // taken here: its turn waits for the batch that spawned it,
            // not for a wake-up, and the take then costs no hand-off of
            // its own. Every later message is taken beside its turn,
            // off the wake-up's path (`PendingTake`).
            let mut found = found;
            if let Some(f) = found.as_mut().filter(|_| first) {
                if let Some(entry) = &f.take {
                    f.taken = Some(PendingTake::now(&team, &me, entry, journal.as_ref()));
                }
            }
            // Beside the claim, before the turn: from here until the
            // lead is told, a crash leaves the task noted.
            let mut noted = false;
            if let (Some(f), Some(note)) = (&found, note) {
                if let TurnKind::TaskClaimed(task) = &f.turn.kind {
                    match note.open(&task.id) {
                        Ok(()) => noted = true,
                        Err(e) => tracing::warn!(teammate = %me, error = %e,
                            "the task's note was not written; a resume after a crash may not report its completion"),
                    }
                }
            }
            Ok(found.map(|f| (f, noted)))
        })
        .await;
        match polled {
            Ok(Some((found, noted))) => {
                self.links.listening.store(false, Ordering::SeqCst);
                self.note_open |= noted;
                if matches!(found.turn.kind, TurnKind::TaskClaimed(_)) {
                    self.handed_back = None;
                }
                Polled::Found(Box::new(found))
            }
            Ok(None) => {
                // Nothing, not even the task handed back (finished or
                // taken from it meanwhile): claim as usual from now on.
                match self.handed_back.take() {
                    Some(_) => Polled::Again,
                    None => Polled::Nothing,
                }
            }
            Err(e) => {
                tracing::warn!(teammate = %self.name(), error = %e, "polling for work failed; will retry");
                Polled::Nothing
            }
        }
    }

    /// Applies the lead's answer to this teammate's pending plan: approval
    /// switches the permission mode to the one granted (recorded in the
    /// config); a rejection leaves it in plan mode. Answers from anyone but
    /// the lead, or to another request, change nothing (the guest still sees
    /// the message).
    async fn apply_plan_answer(&mut self, msg: &crate::runtime::bindings::mailbox::Message) {
        use crate::runtime::bindings::protocol::{PlanResponse, ProtocolMessage as P};
        let Some(P::PlanApprovalResponse(answer)) = &msg.protocol else {
            return;
        };
        let pending = self.instance.agent().coordination.pending_plan.clone();
        if msg.from != self.lead() || pending.as_deref() != Some(answer.request_id.as_str()) {
            tracing::warn!(teammate = %self.name(), from = %msg.from, request = %answer.request_id,
                "ignoring a plan answer: only the lead answers this teammate's pending plan");
            return;
        }
        self.instance.agent().coordination.pending_plan = None;
        let digest = self
            .instance
            .agent()
            .coordination
            .pending_plan_digest
            .take();
        if matches!(answer.response, PlanResponse::Approve(_)) && self.keyed() {
            // A keyed (2.1.332) teammate takes an approval only for the plan
            // it submitted: `planDigest` must be that plan's.
            let given = plan_digest_of(msg);
            if let Some(want) = digest.filter(|want| given.as_deref() != Some(want.as_str())) {
                tracing::warn!(teammate = %self.name(), request = %answer.request_id, %want,
                    given = given.as_deref().unwrap_or("none"),
                    "a plan approval without this plan's planDigest counts as a rejection");
                return;
            }
        }
        if let PlanResponse::Approve(mode) = answer.response {
            let mode = crate::runtime::mode_from_wit(mode);
            self.instance.agent().permissions.enter_approved_mode(mode);
            let (team, me) = (self.team().clone(), self.name().to_string());
            let r = crate::blocking::try_run("recording the mode", move || {
                team.set_mode(&me, mode.as_str())
            });
            if let Err(e) = r.await {
                tracing::warn!(teammate = %self.name(), error = %e, "could not record the new mode");
            }
        }
    }

    /// Whether this teammate was given its lead's key (`--lead-verify-key`).
    fn keyed(&self) -> bool {
        self.team()
            .store()
            .lead_guard()
            .is_some_and(|g| g.has_launch_key(self.team().name(), self.name()))
    }

    /// A forged plan answer (a lead entry that did not verify) settles the
    /// pending plan it names as a rejection, as the reference does: the
    /// teammate stays in plan mode and may submit again.
    fn refuse_forged_plan_answer(&mut self, request_id: &str) {
        let coordination = &mut self.instance.agent().coordination;
        if coordination.pending_plan.as_deref() == Some(request_id) {
            coordination.pending_plan = None;
            coordination.pending_plan_digest = None;
            tracing::warn!(teammate = %self.name(), request = %request_id,
                "a forged plan answer counts as a rejection: the plan stays unapproved");
        }
    }

    /// Runs the lead's `TeammateIdle` hooks before the teammate goes idle. A
    /// hook exiting 2 keeps it working: its stderr comes back as the next
    /// turn. At most [`MAX_IDLE_BLOCKS`] turns in a row are kept that way, so
    /// a hook that always refuses cannot hold a teammate forever.
    async fn idle_hooks(&mut self, blocks: &mut u32) -> Option<String> {
        let hooks = self.instance.ctx().team.hooks.clone();
        let event = self.idle_event();
        if !hooks.wants(&event) {
            return None;
        }
        let outcome = hooks.run(&event).await;
        let agent = self.instance.ctx();
        agent
            .team
            .report_hook_failures(&agent.fixed.lead, &outcome)
            .await;
        if outcome.is_blocked() && *blocks < MAX_IDLE_BLOCKS {
            *blocks += 1;
            return Some(outcome.message());
        }
        *blocks = 0;
        None
    }

    /// The hook event of this teammate going idle.
    fn idle_event(&self) -> HookEvent {
        HookEvent::TeammateIdle {
            teammate_name: self.name().to_string(),
            team_name: self.team().name().to_string(),
        }
    }

    /// Whether any `TeammateIdle` hook would run after a turn.
    fn wants_idle_hooks(&self) -> bool {
        self.instance.ctx().team.hooks.wants(&self.idle_event())
    }

    /// Runs the lead's `TeammateStart` / `TeammateStop` hooks (informational).
    async fn lifecycle_hooks(&mut self, started: bool) {
        let hooks = self.instance.ctx().team.hooks.clone();
        let event = HookEvent::Lifecycle {
            started,
            teammate_name: self.name().to_string(),
            team_name: self.team().name().to_string(),
            agent_id: self.agent_id().to_string(),
            agent_type: self.instance.agent().fixed.identity.agent_type.clone(),
        };
        if hooks.wants(&event) {
            let outcome = hooks.run(&event).await;
            let agent = self.instance.ctx();
            agent
                .team
                .report_hook_failures(&agent.fixed.lead, &outcome)
                .await;
        }
    }

    /// Makes the `idle_notification` for the turn that just ended (`first`:
    /// the teammate's first since it started) due before the next poll
    /// ([`Runner::before_poll`]): to the lead's inbox, or, when
    /// [`RunnerConfig::notifications`] keeps it out, to the lead's history
    /// only (no inbox write, so the lead is not woken). `turn_note`, the
    /// turn's note still to clear, is cleared first, on the same blocking
    /// thread.
    fn notify_idle(
        &mut self,
        record: &TurnRecord,
        outcome: Result<TurnOutcome, String>,
        first: bool,
        turn_note: Option<crate::home::kept::TurnJournal>,
    ) {
        // A lead component is the notifications' reader, not their writer
        // (its turn's note was cleared before: `take_turn`).
        if self.is_lead() {
            return;
        }
        let mut idle = match &outcome {
            Ok(_) => IdleNotification::new(self.name(), IdleReason::Available),
            Err(reason) => IdleNotification::new(self.name(), IdleReason::Failed)
                .with_failure_reason(reason.clone()),
        };
        if let Some((to, summary)) = record.peer_dms.last() {
            idle = idle.with_summary(IdleNotification::peer_dm_summary(
                to,
                summary.as_deref().unwrap_or(""),
            ));
        }
        if let Some(text) = &record.to_lead {
            idle = idle.with_result(text);
        }
        if let Ok(TurnOutcome { task: Some(report) }) = outcome {
            idle = idle.with_completed_task(
                report.task_id,
                crate::runtime::from_wit_status(report.status),
            );
            if let Some(reason) = report.reason {
                idle = idle.with_failure_reason(reason);
            }
        }
        let deliver = self.config.notifications.delivers(&idle, first);
        // A spent model budget is told to the lead once: by this
        // notification when the turn failed on it, its reason quotes the
        // host's own words and it reaches the inbox; by `teamhost`
        // otherwise (a teammate that went on, a level that keeps the
        // notification out, a reason that only says "budget": the guest
        // writes its reason, so it cannot keep the host's notice from the
        // lead without showing the lead the same words).
        let budget_notice = self
            .instance
            .agent()
            .model
            .client
            .take_budget_notice()
            .filter(|notice| {
                let words = notice.strip_prefix("model ").unwrap_or(notice);
                let told = deliver
                    && idle
                        .failure_reason
                        .as_deref()
                        .is_some_and(|r| r.contains(words));
                !told
            })
            .map(|text| {
                OutgoingMessage::new(
                    crate::protocol::HOST_SENDER,
                    format!("{}: {text}", self.name()),
                )
            });
        let msg =
            OutgoingMessage::new(self.name(), idle.to_text()).color(Some(self.color().to_string()));
        // The lead learns how the turn on a noted task ended with this
        // notification: the note is cleared once it is stored, in the same
        // blocking task (a crash between the two makes resume look for the
        // report in the lead's mail, and find it).
        let note = std::mem::take(&mut self.note_open)
            .then(|| self.task_note.clone())
            .flatten();
        let (team, lead, name) = (
            self.team().clone(),
            self.lead().to_string(),
            self.name().to_string(),
        );
        let level = self.config.notifications;
        // Stored on the next poll's blocking thread, before it reads the
        // inbox (`before_poll`): the poll comes right after this, and the
        // teammate is announced idle only after it.
        self.before_poll = Some(Box::new(move || {
            let stored = (|| -> crate::Result<()> {
                if let Some(note) = turn_note {
                    if let Err(e) = note.close() {
                        tracing::warn!(teammate = %name, error = %e, "the turn's note was not cleared; a resume may deliver its message again");
                    }
                }
                if let Some(notice) = budget_notice {
                    team.deliver(&lead, notice)?;
                }
                if deliver {
                    team.deliver(&lead, msg)?;
                } else {
                    team.record_in_history(&lead, msg)?;
                }
                if let Some(note) = note {
                    if let Err(e) = note.close() {
                        tracing::warn!(teammate = %name, error = %e, "the task's note was not cleared; a resume will look for its report in the lead's mail");
                    }
                }
                Ok(())
            })();
            match stored {
                Ok(()) if !deliver => {
                    tracing::debug!(teammate = %name, level = %level,
                        "idle notification recorded in the lead's history only")
                }
                Ok(()) => {}
                Err(e) => {
                    tracing::error!(teammate = %name, error = %e, "idle notification for the lead lost")
                }
            }
        }));
    }

    async fn mark_active(&mut self, active: bool) {
        let write = self.spawn_active_write(active);
        if self.finish_active_write(write).await {
            self.recorded_active = Some(active);
        }
    }

    /// Writes `isActive: true` once the turn has lasted
    /// [`RunnerConfig::active_after`], unless [`Self::finish_active_mark`]
    /// comes first.
    fn start_active_mark(&self) -> ActiveMark {
        let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
        let (team, me, after) = (
            self.team().clone(),
            self.name().to_string(),
            self.config.active_after,
        );
        let task = tokio::spawn(async move {
            if !after.is_zero() {
                tokio::select! {
                    _ = cancelled => return None,
                    _ = tokio::time::sleep(after) => {}
                }
            }
            Some(tokio::task::spawn_blocking(move || team.set_active(&me, true)).await)
        });
        ActiveMark { cancel, task }
    }

    /// Ends the turn's `isActive` mark: `true` when it was written (and has
    /// landed), `false` when the turn ended first.
    async fn finish_active_mark(&mut self, mark: ActiveMark) -> bool {
        let _ = mark.cancel.send(());
        let written = match mark.task.await {
            Ok(Some(write)) => self.log_active_write(write),
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(teammate = %self.name(), error = %e, "could not record isActive");
                false
            }
        };
        if written {
            self.recorded_active = Some(true);
        }
        written
    }

    fn spawn_active_write(&self, active: bool) -> tokio::task::JoinHandle<crate::Result<()>> {
        let (team, me) = (self.team().clone(), self.name().to_string());
        tokio::task::spawn_blocking(move || team.set_active(&me, active))
    }

    async fn finish_active_write(
        &mut self,
        write: tokio::task::JoinHandle<crate::Result<()>>,
    ) -> bool {
        let done = write.await;
        self.log_active_write(done)
    }

    /// Whether an `isActive` write succeeded; logs why not.
    fn log_active_write(&self, done: Result<crate::Result<()>, tokio::task::JoinError>) -> bool {
        match done {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::warn!(teammate = %self.name(), error = %e, "could not record isActive");
                false
            }
            Err(e) => {
                tracing::warn!(teammate = %self.name(), error = %e, "could not record isActive");
                false
            }
        }
    }

    /// Delivers to the lead's inbox; a failure is logged, never fatal.
    async fn tell_lead(&mut self, msg: OutgoingMessage) {
        let (team, lead) = (self.team().clone(), self.lead().to_string());
        let told =
            crate::blocking::try_run("a message to the lead", move || team.deliver(&lead, msg));
        if let Err(e) = told.await {
            tracing::error!(teammate = %self.name(), error = %e, "message to the lead lost");
        }
    }

    fn set_state(&self, state: TeammateState) {
        let changed = self.links.state.send_if_modified(|s| {
            if *s == state {
                false
            } else {
                *s = state.clone();
                true
            }
        });
        if changed {
            let _ = self.links.events.send(Event::StateChanged {
                team: self.team().name().into(),
                name: self.name().to_string(),
                state,
            });
        }
    }
}

/// What one poll for work found ([`Runner::poll_for_work`]).
enum Polled {
    /// A turn to take.
    Found(Box<poll::Found>),
    /// The task handed back was gone: poll again, claiming as usual.
    Again,
    /// Nothing (or the poll failed, and the wait's fallback retries it).
    Nothing,
}

/// What the run loop carries from one turn to the next.
struct BetweenTurns {
    /// A turn a `TeammateIdle` hook asked for, instead of going idle (boxed:
    /// the loop's future holds it while the teammate idles).
    kept_working: Option<Box<poll::Found>>,
    /// Idle hooks that blocked in a row.
    idle_blocks: u32,
    /// No idle notification sent yet (for `state-changes`).
    first_idle: bool,
}

/// How long an idle runner waits for a wake-up before it polls unasked.
/// Without a budget, `interval`. With one, `runners` idle runners each
/// polling every `interval` could pass `budget` polls a second between
/// them, so each waits `runners / budget` seconds when that is longer, up
/// to [`FALLBACK_CEILING`];
/// either way the wait is spread by `spread` (in `[0, 1)`) over half to
/// one and a half times it, so runners started together do not poll
/// together (on average the budget holds).
fn fallback_wait(interval: Duration, budget: Option<u32>, runners: usize, spread: f64) -> Duration {
    let Some(budget) = budget else {
        return interval;
    };
    let crowd = Duration::from_secs_f64(runners as f64 / f64::from(budget.max(1)));
    let period = interval.max(crowd.min(FALLBACK_CEILING));
    period.mul_f64(0.5 + spread.clamp(0.0, 1.0))
}

/// The longest [`fallback_wait`] stretches a runner's period for the crowd:
/// whatever a feed misses (a directory made after it started and before
/// any other write it heard, a bug) is found within a minute and a half.
/// Past 3,000 runners the host makes more than the budget's polls a
/// second, one a minute each.
pub const FALLBACK_CEILING: Duration = Duration::from_secs(60);

fn kind_name(kind: &TurnKind) -> &'static str {
    match kind {
        TurnKind::Initial => "initial",
        TurnKind::Message => "message",
        TurnKind::ShutdownRequest(_) => "shutdown-request",
        TurnKind::TaskClaimed(_) => "task-claimed",
    }
}

/// The request id of a plan answer inside an entry marked forged
/// ([`crate::store::lead_guard::forged_original`]).
fn forged_plan_answer(entry: &crate::store::InboxMessage) -> Option<String> {
    use crate::protocol::{Parsed, ProtocolMessage};
    match ProtocolMessage::parse(crate::store::lead_guard::forged_original(entry)?) {
        Parsed::Protocol(ProtocolMessage::PlanApprovalResponse(r)) => Some(r.request_id),
        _ => None,
    }
}

/// The `planDigest` of the plan answer in `msg`, read from its text.
fn plan_digest_of(msg: &crate::runtime::bindings::mailbox::Message) -> Option<String> {
    use crate::protocol::{Parsed, ProtocolMessage};
    match ProtocolMessage::parse(&msg.text) {
        Parsed::Protocol(ProtocolMessage::PlanApprovalResponse(r)) => {
            r.plan_digest().map(str::to_string)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{fallback_wait, Runner};
    use std::time::Duration;

    /// The size of what `f` returns, without calling it: a future's size is
    /// its type's, so no runner is needed to know it.
    fn output_size<A, R>(_f: impl FnOnce(A) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    #[test]
    fn what_an_idle_teammate_holds_while_it_waits_stays_small() {
        // An idle teammate's task is `run_then`'s future, which holds the
        // loop's own, plus the boxed wait for its next turn: together what
        // every one of 10,000 idle teammates keeps (PERFORMANCE.md, "what
        // the idle wait held"). An await added to the wait is as large as
        // what it awaits; the poll's blocking call once made the wait 1,392
        // bytes. With rustc 1.95 (the same in test and release builds: a
        // future's layout is its type's) the task is 304 bytes and the wait
        // 352: a new await that needs more belongs in a box of its own (see
        // `poll_for_work`). The task's `then` captures what the in-process
        // backend's does (`backends/assembly.rs`: the hub, two names).
        let (events, _) = tokio::sync::broadcast::channel(1);
        let hub = std::sync::Arc::new(super::wake::WakeHub::new(events));
        let (team, name) = (String::new(), String::new());
        let task = output_size(move |r: Runner| r.run_then(move || hub.unregister(&team, &name)));
        let wait = output_size::<&mut Runner, _>(Runner::wait_for_turn);
        assert!(task <= 352, "the runner's task future is {task} bytes");
        assert!(wait <= 416, "the idle wait's future is {wait} bytes");
    }

    const FIVE: Duration = Duration::from_secs(5);

    #[test]
    fn without_a_feed_the_fallback_is_the_interval_whatever_the_crowd() {
        let half = Duration::from_millis(500);
        assert_eq!(fallback_wait(half, None, 10_000, 0.9), half);
        assert_eq!(fallback_wait(half, None, 1, 0.0), half);
    }

    #[test]
    fn with_a_feed_the_host_wide_budget_stretches_the_wait_of_a_crowd() {
        // The middle of the spread is the period itself.
        assert_eq!(fallback_wait(FIVE, Some(50), 100, 0.5), FIVE);
        // 250 runners at 50 a second: exactly the interval.
        assert_eq!(fallback_wait(FIVE, Some(50), 250, 0.5), FIVE);
        // 2,000 runners: 40 s each, 50 polls a second between them.
        assert_eq!(
            fallback_wait(FIVE, Some(50), 2_000, 0.5),
            Duration::from_secs(40)
        );
        // 10,000 runners: a minute each, the ceiling (167 a second).
        assert_eq!(
            fallback_wait(FIVE, Some(50), 10_000, 0.5),
            super::FALLBACK_CEILING
        );
        // A longer interval the embedder chose is kept.
        let hour = Duration::from_secs(3600);
        assert_eq!(fallback_wait(hour, Some(50), 10_000, 0.5), hour);
        // A budget of zero is read as one, not as a division by zero.
        assert_eq!(
            fallback_wait(FIVE, Some(0), 10, 0.5),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn the_spread_covers_half_to_one_and_a_half_periods() {
        let p = Duration::from_secs(40);
        assert_eq!(fallback_wait(FIVE, Some(50), 2_000, 0.0), p / 2);
        let top = fallback_wait(FIVE, Some(50), 2_000, 0.999_999);
        assert!(top < p * 3 / 2 && top > p * 149 / 100, "{top:?}");
        // Out-of-range spreads are held to the range.
        assert_eq!(fallback_wait(FIVE, Some(50), 2_000, -3.0), p / 2);
        assert_eq!(fallback_wait(FIVE, Some(50), 2_000, 7.0), p * 3 / 2);
    }
}
