//! The consumption of the message a turn handles, made durable while the
//! turn runs instead of before it starts.
//!
//! Taking a message moves it from the inbox to the history: an append and a
//! rewrite, each synced (two `fdatasync`s and a lock). Doing that before the
//! turn put it on every wake-up's path; now the runner reads the message,
//! starts the turn at once and takes the message beside it. The take is
//! awaited — [`PendingTake::finish`] — before anything that depends on it:
//! a `mailbox` call of the guest, the end of the turn (the idle notification,
//! the next poll, the teammate stopping). So the guest, the lead and the
//! next poll never see the message as unread once its turn began.
//!
//! What a crash costs: the message is durable in the inbox from the moment
//! its sender's write returned. If the host dies after the turn started and
//! before the take was synced, the message is still in the inbox and is
//! delivered again (at least once); it is never lost.

use crate::store::{InboxMessage, Team};

/// A take in flight for the message a turn is handling.
#[derive(Debug)]
pub struct PendingTake {
    take: Take,
    who: String,
}

/// Where the take is.
#[derive(Debug)]
enum Take {
    /// On a blocking thread of its own.
    InFlight(tokio::task::JoinHandle<crate::Result<Vec<InboxMessage>>>),
    /// Made already, on the poll's blocking thread ([`PendingTake::now`]).
    Made(crate::Result<Vec<InboxMessage>>),
}

impl PendingTake {
    /// Starts consuming `entry` from `me`'s inbox off the executor, after
    /// noting it in `journal` (when given) so that a resume after a crash
    /// delivers it again.
    pub fn start(
        team: Team,
        me: String,
        entry: InboxMessage,
        journal: Option<crate::home::kept::TurnJournal>,
    ) -> PendingTake {
        let who = me.clone();
        let handle =
            tokio::task::spawn_blocking(move || take_noted(&team, &me, &entry, journal.as_ref()));
        PendingTake {
            take: Take::InFlight(handle),
            who,
        }
    }

    /// Blocking: the same take made here and now, for a caller already on
    /// a blocking thread (the runner's first poll: a new teammate's first
    /// turn waits for the batch that spawned it, not for a wake-up, so its
    /// take costs no hand-off of its own).
    pub fn now(
        team: &Team,
        me: &str,
        entry: &InboxMessage,
        journal: Option<&crate::home::kept::TurnJournal>,
    ) -> PendingTake {
        PendingTake {
            take: Take::Made(take_noted(team, me, entry, journal)),
            who: me.to_string(),
        }
    }

    /// Waits until the take is durable. A take that failed or found the
    /// message gone is logged: the turn has already begun, and the message
    /// (if still there) will be delivered again.
    pub async fn finish(self) {
        let taken = match self.take {
            Take::InFlight(handle) => handle.await,
            Take::Made(taken) => Ok(taken),
        };
        match taken {
            Ok(Ok(taken)) if taken.len() == 1 => {}
            Ok(Ok(_)) => tracing::warn!(
                teammate = %self.who,
                "the message this turn handles was consumed by someone else before its take"
            ),
            Ok(Err(e)) => tracing::error!(
                teammate = %self.who, error = %e,
                "could not consume the message this turn handles; it stays unread and will be delivered again"
            ),
            Err(e) => {
                tracing::error!(teammate = %self.who, error = %e, "the take of a message panicked")
            }
        }
    }
}

/// Notes `entry` in `journal` (when given), then consumes it from `me`'s
/// inbox.
fn take_noted(
    team: &Team,
    me: &str,
    entry: &InboxMessage,
    journal: Option<&crate::home::kept::TurnJournal>,
) -> crate::Result<Vec<InboxMessage>> {
    if let Some(Err(e)) = journal.map(|j| j.open(entry)) {
        tracing::warn!(teammate = %me, error = %e, "the turn's message is not noted for a resume");
    }
    let mut once = true;
    team.take_where(me, |m| {
        let hit = once && same_entry(m, entry);
        once &= !hit;
        hit
    })
}

/// The same inbox entry: by `msg_id` when both have one, else by content.
pub(crate) fn same_entry(a: &InboxMessage, b: &InboxMessage) -> bool {
    match (&a.msg_id, &b.msg_id) {
        (Some(x), Some(y)) => x == y,
        _ => a.from == b.from && a.timestamp == b.timestamp && a.text == b.text,
    }
}
