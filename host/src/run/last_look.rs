//! What a led run reads of its team just before its lead deletes it: a lead
//! component ends its run with `delete-team`, which takes the tasks, the
//! mail and the model usage with it, so the run's summary would show none of
//! them. [`watch`] registers a last look with the host
//! ([`Host::before_delete`]); [`Run::finish`](super::Run::finish) uses it
//! when the team is gone.
//!
//! The lead is in a turn when it deletes its team, and its usage record is
//! written off its calls' path (at most every 100 ms): read then, it can
//! miss the lead's last calls and show it still waiting on the model, and
//! it never shows the calls the lead makes after the delete (its record
//! cannot be written once the team is gone). The look, and the run again
//! when it reads the look, bring each record up to date with the latest
//! model event the host sent for that teammate (its figures are the
//! meter's totals).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::messages::{count_messages, MessageCounts};
use super::turn_failures::TurnFailures;
use crate::embed::{Host, TeammateInfo};
use crate::model::ModelCallEvent;
use crate::store::{ModelUsage, Task, Team};

/// The team as it was just before it was deleted.
#[derive(Debug, Default)]
pub(super) struct LastSeen {
    pub tasks: Vec<Task>,
    pub messages: MessageCounts,
    pub turn_failures: TurnFailures,
    pub usage: BTreeMap<String, ModelUsage>,
    pub teammates: Vec<TeammateInfo>,
}

/// Where the last look is kept until the run finishes, with the host's
/// events since the run began (each teammate's latest model event brings
/// its usage up to date: at the look, and again when the run reads it, for
/// the calls the lead made after its delete).
pub(super) struct Slot {
    seen: Arc<Mutex<Option<LastSeen>>>,
    latest: Latest,
}

impl Slot {
    /// The last look, once taken, its usage brought up to date with the
    /// model events sent since.
    pub(super) fn take(&self) -> Option<LastSeen> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        self.latest.bring_up_to_date(&mut seen.usage);
        Some(seen)
    }
}

/// The latest model event of each teammate of one team, read from the
/// host's events when asked (a lag loses only older events).
#[derive(Clone)]
struct Latest {
    team: String,
    events: Arc<Mutex<tokio::sync::broadcast::Receiver<crate::teammate::Event>>>,
    calls: Arc<Mutex<HashMap<String, ModelCallEvent>>>,
}

impl Latest {
    /// Reads the events sent so far, keeping each teammate's latest model
    /// event, then folds each into `usage` (by file stem).
    fn bring_up_to_date(&self, usage: &mut BTreeMap<String, ModelUsage>) {
        use tokio::sync::broadcast::error::TryRecvError;
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match events.try_recv() {
                Ok(crate::teammate::Event::Model { team, name, call }) if team == self.team => {
                    calls.insert(name, call);
                }
                Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        for (name, call) in calls.iter() {
            if let Ok(stem) = crate::store::names::agent_file_stem(name) {
                crate::backends::model_seat::record_call(usage.entry(stem).or_default(), call);
            }
        }
    }
}

/// Registers the last look at `team` (led by `lead`; failed turns counted
/// from `began_ms`), kept in the returned slot.
pub(super) fn watch(host: &Host, team: &Team, lead: &str, began_ms: u64) -> Slot {
    let seen: Arc<Mutex<Option<LastSeen>>> = Arc::default();
    let latest = Latest {
        team: team.name().to_string(),
        events: Arc::new(Mutex::new(host.events())),
        calls: Arc::default(),
    };
    let (kept, lead, at_look) = (seen.clone(), lead.to_string(), latest.clone());
    host.before_delete(team.name(), move |team, teammates| {
        let mut usage = team.model_usage().unwrap_or_default();
        at_look.bring_up_to_date(&mut usage);
        let seen = LastSeen {
            tasks: team.list_tasks().unwrap_or_default(),
            messages: count_messages(team, &lead).unwrap_or_default(),
            turn_failures: TurnFailures::read(team, &lead, began_ms).unwrap_or_default(),
            usage,
            teammates,
        };
        *kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(seen);
    });
    Slot { seen, latest }
}

/// `seen`'s teammates, each replaced by how `now` shows it when it does
/// (the lead, which deleted the team in its turn, ended after the look),
/// then those of `now` the look did not see.
pub(super) fn merge(seen: Vec<TeammateInfo>, now: Vec<TeammateInfo>) -> Vec<TeammateInfo> {
    let mut all: Vec<TeammateInfo> = seen
        .into_iter()
        .map(|old| match now.iter().find(|n| n.name == old.name) {
            Some(fresh) => fresh.clone(),
            None => old,
        })
        .collect();
    for fresh in now {
        if !all.iter().any(|t| t.name == fresh.name) {
            all.push(fresh);
        }
    }
    all
}
