//! [`Team::deliver_many`]: one message to each of many inboxes nobody reads
//! yet, written together, each with its own result.
//!
//! `Host::spawn_many` gives each teammate of a chunk its prompt this way:
//! one group commit (`store/files/fanout.rs`) and one blocking hand-off
//! for the chunk, where one by one each prompt was a synced write and a
//! hand-off of its own. A spawn must know whether its prompt is in (a
//! teammate whose prompt failed is removed again), but a group commit that
//! fails says only that some inboxes may not have been written. So a
//! failed batch is settled inbox by inbox: each is read back, an entry
//! found there (by its `msg_id`) was written, and one not found is written
//! again alone, with that write's own result. An inbox that cannot even be
//! read back counts as not written, though the batch may have put its
//! entry in place: its spawn is undone, and the entry stays in the inbox
//! of a member no longer there.

use super::mailbox::{InboxMessage, OutgoingMessage};
use super::Team;
use crate::error::Result;

impl Team {
    /// Delivers each `(recipient, message)` of `msgs` as [`Team::deliver`]
    /// would (no membership check; signed where a lead guard holds a key),
    /// all in one batch. Returns the entry written, or why not, for each
    /// message in order.
    ///
    /// For inboxes nobody takes from while this runs (the prompts of
    /// teammates not started yet): when the batch fails part-way, an entry
    /// already taken from its inbox would be written a second time.
    pub(crate) fn deliver_many(
        &self,
        msgs: Vec<(String, OutgoingMessage)>,
    ) -> Vec<Result<InboxMessage>> {
        let guard = self.store().lead_guard();
        let mut results: Vec<Result<InboxMessage>> = Vec::with_capacity(msgs.len());
        // The batch, and for each of its inboxes the place of its result.
        let mut batch: Vec<(String, Vec<InboxMessage>)> = Vec::with_capacity(msgs.len());
        let mut places: Vec<usize> = Vec::with_capacity(msgs.len());
        for (to, msg) in msgs {
            if let Err(e) = super::names::agent_file_stem(&to) {
                results.push(Err(e));
                continue;
            }
            let mut entry = msg.into_entry();
            if let Some(guard) = guard {
                guard.sign(self.name(), &to, &mut entry);
            }
            places.push(results.len());
            results.push(Ok(entry.clone()));
            batch.push((to, vec![entry]));
        }
        if batch.is_empty() || self.append_batch(&batch).is_ok() {
            return results;
        }
        for ((to, entries), place) in batch.iter().zip(places) {
            let entry = &entries[0];
            if let Err(e) = self.settle_one(to, entry) {
                results[place] = Err(e);
            }
        }
        results
    }

    /// After a failed batch: whether `entry` is in `to`'s inbox, and if
    /// not, `entry` written there alone.
    fn settle_one(&self, to: &str, entry: &InboxMessage) -> Result<()> {
        let there = self.backend().read_inbox(self.name(), to)?;
        if there.iter().any(|e| e.msg_id == entry.msg_id) {
            return Ok(());
        }
        self.append_as_is(to, std::slice::from_ref(entry))
    }
}

#[cfg(test)]
mod tests;
