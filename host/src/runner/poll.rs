//! Choosing the next turn, in the reference's priority order:
//!
//! 1. messages injected by the host (a person typing to the teammate);
//! 2. a `shutdown_request` from the lead, even behind other unread messages;
//! 3. the oldest unread message from the lead;
//! 4. the oldest unread message from anyone;
//! 5. the lowest-id claimable task, claimed on the spot (auto-claim), with the
//!    reference's prompt "Complete all open tasks. Start with task #N: …";
//!    for a resumed teammate, first its own unfinished task, handed back
//!    ([`handed_back_turn`]).
//!
//! One message per turn, as the reference does. Picking a message consumes it
//! (it moves from the inbox to the history): the runner starts that take
//! beside the turn ([`crate::runtime::PendingTake`]), so it is off the
//! wake-up's path. A new teammate's first message is taken in the poll that
//! found it ([`crate::runtime::PendingTake::now`]): its turn waits for the
//! spawn, not for a wake-up.

use crate::protocol::{Parsed, ProtocolMessage};
use crate::runtime::bindings::handler::{Turn, TurnKind};
use crate::runtime::bindings::protocol as wp;
use crate::store::{InboxMessage, Task, Team};

/// What [`next_turn`] found.
pub(crate) struct Found {
    /// The turn to run.
    pub turn: Turn,
    /// Request id of a shutdown request the guest must now answer.
    pub shutdown_request: Option<String>,
    /// The inbox entry the turn handles, still to be consumed.
    pub take: Option<InboxMessage>,
    /// `take`'s consumption when the poll made it already (a new
    /// teammate's first turn); else the turn starts it.
    pub taken: Option<crate::runtime::PendingTake>,
}

/// Looks for work for `me` and consumes what it picks. `first_turn` makes a
/// message from the lead an `initial` turn (the spawn prompt).
pub(crate) fn next_turn(
    team: &Team,
    me: &str,
    lead: &str,
    injected: Option<String>,
    first_turn: bool,
    auto_claim: bool,
    claims: Option<&crate::home::kept::ClaimLedger>,
) -> crate::Result<Option<Found>> {
    if let Some(text) = injected {
        let entry = crate::store::OutgoingMessage::new("user", text.clone()).into_entry();
        return Ok(Some(message_turn(TurnKind::Message, entry, text)));
    }
    let unread = team.unread(me)?;
    // Only the lead asks a teammate to shut down: the same frame from
    // anyone else is a message like any other.
    let shutdown = unread
        .iter()
        .filter(|m| crate::protocol::lead_sig::claims_lead(&m.from, lead))
        .find_map(|m| match ProtocolMessage::parse(&m.text) {
            Parsed::Protocol(ProtocolMessage::ShutdownRequest(r)) => Some((m.clone(), r)),
            _ => None,
        });
    let chosen = match &shutdown {
        Some((m, _)) => Some(m.clone()),
        None => unread
            .iter()
            .find(|m| m.from == lead)
            .or_else(|| unread.first())
            .cloned(),
    };
    if let Some(entry) = chosen {
        if let Some((_, request)) = shutdown {
            let kind = TurnKind::ShutdownRequest(wp::ShutdownRequest {
                request_id: request.request_id.clone(),
                from: request.from.clone(),
                reason: request.reason.clone(),
            });
            let prompt = request.reason.clone().unwrap_or_default();
            let mut found = message_turn(kind, entry.clone(), prompt);
            found.shutdown_request = Some(request.request_id);
            found.take = Some(entry);
            return Ok(Some(found));
        }
        let kind = if first_turn && entry.from == lead {
            TurnKind::Initial
        } else {
            TurnKind::Message
        };
        let prompt = entry.text.clone();
        let mut found = message_turn(kind, entry.clone(), prompt);
        found.take = Some(entry);
        return Ok(Some(found));
    }
    // The unlocked look first: most polls (every idle teammate, on every
    // change to the list) find nothing and take no lock.
    if auto_claim && team.find_claimable()?.is_some() {
        // The claim goes into the host's ledger before the task file shows
        // it: a resume hands back only what the ledger lists.
        let mut note = |id: &str| match claims {
            Some(c) => c.claimed(id),
            None => Ok(()),
        };
        if let Some(task) = team.claim_next_noting(me, &mut note)? {
            return Ok(Some(Found {
                turn: Turn {
                    prompt: claim_prompt(&task),
                    from: me.to_string(),
                    messages: Vec::new(),
                    kind: TurnKind::TaskClaimed(crate::runtime::to_wit_task(task)),
                },
                shutdown_request: None,
                take: None,
                taken: None,
            }));
        }
    }
    Ok(None)
}

/// The turn of a task handed back to a resumed teammate: its own task
/// `id`, still in progress and still its own (`None` otherwise: completed,
/// deleted or reassigned while the host was down). The reference's claim
/// prompt, after a line that says why the task comes back.
pub(crate) fn handed_back_turn(team: &Team, me: &str, id: &str) -> crate::Result<Option<Found>> {
    let task = match team.task(id) {
        Ok(t) => t,
        Err(crate::Error::TaskNotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    if task.owner.as_deref() != Some(me) || task.status != crate::store::TaskStatus::InProgress {
        return Ok(None);
    }
    let prompt = format!(
        "The host restarted while you worked on this task; it is still yours and in progress. Check what is already done before you redo anything.\n\n{}",
        claim_prompt(&task)
    );
    Ok(Some(Found {
        turn: Turn {
            prompt,
            from: me.to_string(),
            messages: Vec::new(),
            kind: TurnKind::TaskClaimed(crate::runtime::to_wit_task(task)),
        },
        shutdown_request: None,
        take: None,
        taken: None,
    }))
}

/// The turn a `TeammateIdle` hook asks for: its stderr, as a message from
/// the host.
pub(crate) fn hook_turn(feedback: String) -> Found {
    let entry =
        crate::store::OutgoingMessage::new(super::HOST_SENDER, feedback.clone()).into_entry();
    message_turn(TurnKind::Message, entry, feedback)
}

/// The reference's auto-claim prompt.
pub(crate) fn claim_prompt(task: &Task) -> String {
    let mut prompt = format!(
        "Complete all open tasks. Start with task #{}:\n\n {}",
        task.id, task.subject
    );
    if !task.description.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&task.description);
    }
    prompt
}

fn message_turn(kind: TurnKind, entry: InboxMessage, prompt: String) -> Found {
    Found {
        turn: Turn {
            kind,
            prompt,
            from: entry.from.clone(),
            messages: vec![crate::runtime::to_wit_message(&entry)],
        },
        shutdown_request: None,
        take: None,
        taken: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TaskStatus;

    #[test]
    fn claim_prompt_matches_the_reference() {
        let task = Task {
            id: "3".into(),
            subject: "Run wasm tests".into(),
            description: "Run the test-suite".into(),
            active_form: None,
            owner: None,
            status: TaskStatus::Pending,
            blocks: vec![],
            blocked_by: vec![],
            metadata: None,
            extra: Default::default(),
        };
        assert_eq!(
            claim_prompt(&task),
            "Complete all open tasks. Start with task #3:\n\n Run wasm tests\n\nRun the test-suite"
        );
    }
}
