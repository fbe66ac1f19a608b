//! What a led run reads of its team just before its lead deletes it: a lead
//! component ends its run with `delete-team`, which takes the tasks, the
//! mail and the model usage with it, so the run's summary would show none of
//! them. [`watch`] registers a last look with the host
//! ([`Host::before_delete`]); [`Run::finish`](super::Run::finish) uses it
//! when the team is gone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::messages::{count_messages, MessageCounts};
use super::turn_failures::TurnFailures;
use crate::embed::{Host, TeammateInfo};
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

/// Where the last look is kept until the run finishes.
pub(super) type Slot = Arc<Mutex<Option<LastSeen>>>;

/// Registers the last look at `team` (led by `lead`; failed turns counted
/// from `began_ms`), kept in the returned slot.
pub(super) fn watch(host: &Host, team: &Team, lead: &str, began_ms: u64) -> Slot {
    let slot = Slot::default();
    let (kept, lead) = (slot.clone(), lead.to_string());
    host.before_delete(team.name(), move |team, teammates| {
        let seen = LastSeen {
            tasks: team.list_tasks().unwrap_or_default(),
            messages: count_messages(team, &lead).unwrap_or_default(),
            turn_failures: TurnFailures::read(team, &lead, began_ms).unwrap_or_default(),
            usage: team.model_usage().unwrap_or_default(),
            teammates,
        };
        *kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(seen);
    });
    slot
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
