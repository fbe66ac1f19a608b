//! Talking to a team as its lead and watching it: messages and injected
//! turns, the requests waiting, events, the teammates' states, and waiting
//! until every teammate is idle with nothing left to do.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::broadcast;

use super::{Event, TeammateInfo, TeammateState};
use crate::error::{Error, Result};
use crate::store::{OutgoingMessage, Team};

use super::api::info;
use super::Host;

impl Host {
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
        if inject.send(text.to_string()).is_err() {
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
                    && s.inject.as_ref().map_or(0, |i| i.pending()) == 0
            })
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
