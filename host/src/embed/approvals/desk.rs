//! The policy desk: a task of the host that answers, as they arrive in the
//! lead's inbox, the requests the team's routes give to the policy, through
//! the one approval path ([`crate::embed::approvals::decide`]); what no policy rule names is
//! recorded as escalated and waits for the person. Started by
//! [`Host::serve_approvals`] (`teamhost run` starts it); it stops when its
//! [`ApprovalDesk`] is stopped or dropped, or the team is deleted.
//!
//! It wakes on the store's change feed (writes by other processes) and on
//! the host's own events (writes by its teammates), never on a timer, and
//! only for what can bring a request it has not seen: a write to the lead's
//! inbox, or the config (members and the lead's name). Task writes and
//! other inboxes, most of a busy team's traffic, pass it by ([`Wakes`]). A
//! failed pass is logged and the desk goes on: it never takes the host
//! down. Routes that give the policy nothing (no route and no default name
//! it) start no desk at all.

use std::sync::Arc;

use tokio::sync::{oneshot, Notify};

use crate::approvals::{
    self, Answer, Decider, Decision, PermitAnswer, PlanAnswer, PolicyVerdict, Request, Routes,
};
use crate::embed::approvals::decide::{decide, requester, Answerer, DecideError};
use crate::embed::{Event, Host};
use crate::error::Result;
use crate::home::{decisions, Home};
use crate::store::{HistoryCache, StoreEvent, StoreObserver, Team};

/// A running policy desk; dropping it stops it.
#[derive(Debug)]
pub struct ApprovalDesk {
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ApprovalDesk {
    /// Stops the desk and waits for its task to end.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ApprovalDesk {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Which changes wake the desk: the lead's inbox (by its name or its file
/// stem, as a feed hears it) and the config. The lead's name is the one
/// the last pass read.
struct Wakes {
    lead: std::sync::Mutex<(String, String)>,
}

impl Wakes {
    fn new(lead: &str) -> Wakes {
        let wakes = Wakes {
            lead: std::sync::Mutex::new(Default::default()),
        };
        wakes.set_lead(lead);
        wakes
    }

    fn set_lead(&self, lead: &str) {
        let stem = crate::store::names::agent_file_stem(lead).unwrap_or_else(|_| lead.to_string());
        *self.lead.lock().unwrap_or_else(|p| p.into_inner()) = (lead.to_string(), stem);
    }

    fn is_lead(&self, agent: &str) -> bool {
        let lead = self.lead.lock().unwrap_or_else(|p| p.into_inner());
        agent == lead.0 || agent == lead.1
    }

    fn store_event(&self, e: &StoreEvent) -> bool {
        match e {
            StoreEvent::InboxAppended { agent, .. } => self.is_lead(agent),
            StoreEvent::TasksChanged { .. } => false,
            _ => true,
        }
    }
}

struct Poke(Arc<Notify>, Arc<Wakes>);

impl StoreObserver for Poke {
    fn changed(&self, e: &StoreEvent) {
        if self.1.store_event(e) {
            self.0.notify_one();
        }
    }
}

impl Host {
    /// Keeps `routes` as `team`'s approval routes (in the home, where every
    /// process answering the team's requests reads them) and starts the
    /// policy desk (a desk that does nothing when no route and no default
    /// gives the policy a request). Needs a tokio runtime.
    pub fn serve_approvals(&self, team: &str, routes: Routes) -> Result<ApprovalDesk> {
        let team = self.team(team)?;
        decisions::write_routes(self.home(), team.name(), &routes)?;
        if !routes.reaches_policy() {
            // Every request goes to the person or the lead: nothing for the
            // desk to answer, so it watches nothing.
            return Ok(ApprovalDesk {
                stop: None,
                task: None,
            });
        }
        let wake = Arc::new(Notify::new());
        let wakes = Arc::new(Wakes::new(team.config()?.lead_name()));
        let feed = team.watch(Arc::new(Poke(wake.clone(), wakes.clone())))?;
        let mut events = self.events();
        let (stop_tx, mut stop_rx) = oneshot::channel();
        let home = self.home().clone();
        let routes = Arc::new(routes);
        let task = tokio::spawn(async move {
            let _feed = feed;
            // Kept across passes: a pass reads only what the histories
            // gained since the last (a long run's lead history is read
            // once, not once per message), and the cache holds only the
            // requests and answers among them.
            let fresh = || HistoryCache::keeping(approvals::approval_traffic);
            let mut cache = fresh();
            loop {
                let (h, t, r) = (home.clone(), team.clone(), routes.clone());
                // A pass that panics loses the cache: the next starts afresh.
                let mut kept = std::mem::replace(&mut cache, fresh());
                let w = wakes.clone();
                let done = crate::blocking::run("the policy desk's pass", move || {
                    let passed = pass(&h, &t, &r, &mut kept, &w);
                    (passed, kept)
                })
                .await;
                let passed = done.and_then(|(passed, kept)| {
                    cache = kept;
                    passed
                });
                if let Err(e) = passed {
                    tracing::warn!(cause = %e, "team {}: the policy desk's pass failed", team.name());
                }
                if !team.exists() {
                    return;
                }
                loop {
                    tokio::select! {
                        _ = &mut stop_rx => return,
                        _ = wake.notified() => break,
                        event = events.recv() => match event {
                            Ok(Event::InboxChanged { team: t, agent })
                                if t == team.name() && wakes.is_lead(&agent) => break,
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                                // The host is gone: the feed still wakes us.
                                let _ = wake.notified().await;
                                break;
                            }
                            Ok(_) => {}
                        },
                    }
                }
            }
        });
        Ok(ApprovalDesk {
            stop: Some(stop_tx),
            task: Some(task),
        })
    }
}

/// One look at the waiting requests: answers the policy's, escalates what
/// it cannot answer (once per request). Histories are read through `cache`.
fn pass(
    home: &Home,
    team: &Team,
    routes: &Routes,
    cache: &mut HistoryCache,
    wakes: &Wakes,
) -> Result<()> {
    if !team.exists() {
        return Ok(());
    }
    let lead = team.config()?.lead_name().to_string();
    wakes.set_lead(&lead);
    for request in approvals::pending_cached(team, cache)? {
        let who = requester(team, request.from());
        let cwd = &who.cwd;
        if routes.decider_for(&request, &lead, &who) != Decider::Policy {
            continue;
        }
        let answer = match routes.policy_verdict(&request, cwd) {
            PolicyVerdict::Allow(_) => allow(&request),
            PolicyVerdict::Deny(reason) => Answer::Permit(PermitAnswer::Deny { reason }),
            PolicyVerdict::Escalate(why) => {
                if decisions::escalation(home, team.name(), request.id())?.is_none() {
                    let e = Decision::escalated(&request, Decider::Policy, &why);
                    decisions::escalate(home, team.name(), &e)?;
                }
                continue;
            }
        };
        match decide(home, team, &Answerer::Policy, request.id(), answer) {
            Ok(_) | Err(DecideError::AlreadyAnswered { .. }) => {}
            Err(e) => {
                tracing::warn!(cause = %e, "team {}: the policy could not answer {}", team.name(), request.id())
            }
        }
    }
    Ok(())
}

fn allow(request: &Request) -> Answer {
    match request {
        Request::Permission(_) => Answer::Permit(PermitAnswer::Allow {
            updated_input: None,
            permission_updates: Vec::new(),
        }),
        Request::Plan(_) => Answer::Plan(PlanAnswer::Approve { mode: None }),
    }
}
