//! A broadcast's group commit: entries for many inboxes of one team written
//! together, their syncs shared.
//!
//! One by one, a broadcast to a hundred teammates is a hundred locked,
//! synced rewrites, each waiting for its own journal commit. Here every
//! inbox whose lock is free is locked (in path order, up to [`GROUP`] at a
//! time), its new version
//! written beside it ([`crate::durable::Staged`]); then all are synced
//! (the first sync commits the journal for all of them), then put in place,
//! then unlocked. Each inbox is still replaced whole by a synced new file,
//! as every write of it is, so readers and crashes see what they always did.
//!
//! An inbox whose lock is held (by another process, or Claude Code) is not
//! waited for while the others are held: it is left out of the batch and
//! written after it, alone, waiting for its lock as any append does. So a
//! broadcast never holds one inbox's lock while it waits for another's, and
//! two broadcasts cannot wait for each other.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::lock::{with_lock, LockOptions};
use super::own_writes::OwnWrites;
use super::{deleted, drops, FileStore};
use crate::durable::{read_array_for_update, stage_json};
use crate::error::{Error, Result};
use crate::store::InboxMessage;

/// The most inboxes written in one group commit (and locked at once).
const GROUP: usize = 128;

/// One inbox of the batch.
struct Target {
    path: PathBuf,
    agent: String,
    entries: Vec<InboxMessage>,
}

impl FileStore {
    /// `TeamStore::append_inboxes` for two inboxes or more; with
    /// `observer`, each write is kept as told to that observer
    /// (`own_writes.rs`), as [`FileStore::append_to_inbox`] keeps one.
    pub(super) fn append_to_many(
        &self,
        team: &str,
        batch: &[(String, Vec<InboxMessage>)],
        observer: Option<usize>,
    ) -> Result<()> {
        let paths = self.paths(team)?;
        deleted::subdir(&paths, &paths.inboxes_dir())?;
        // In path order (the order every broadcast locks in), one target
        // per inbox even when an agent is named twice.
        let mut by_path: BTreeMap<PathBuf, Target> = BTreeMap::new();
        for (agent, entries) in batch {
            let path = paths.inbox(agent)?;
            by_path
                .entry(path.clone())
                .or_insert_with(|| Target {
                    path,
                    agent: agent.clone(),
                    entries: Vec::new(),
                })
                .entries
                .extend_from_slice(entries);
        }
        let targets: Vec<Target> = by_path.into_values().collect();
        // In groups of at most `GROUP` inboxes: a lock is held by a frame of
        // `lock_each` each, so a group bounds both the stack's depth and how
        // many inboxes one broadcast holds at once.
        for group in targets.chunks(GROUP) {
            let busy = RefCell::new(Vec::new());
            self.lock_each(group, 0, &mut Vec::new(), &busy, observer)
                .map_err(|e| deleted::or_deleted(&paths, e))?;
            for i in busy.into_inner() {
                let target = &group[i];
                self.append_to_inbox(team, &target.agent, &target.entries, observer)?;
            }
        }
        Ok(())
    }

    /// Locks `targets[next..]` whose locks are free, then writes every held
    /// one ([`write_held`]); the indices of busy ones go to `busy`.
    fn lock_each(
        &self,
        targets: &[Target],
        next: usize,
        held: &mut Vec<usize>,
        busy: &RefCell<Vec<usize>>,
        observer: Option<usize>,
    ) -> Result<()> {
        let Some(target) = targets.get(next) else {
            let told = observer.map(|key| (&*self.own, key));
            return write_held(targets, held, told);
        };
        let at_once = LockOptions {
            timeout: Duration::ZERO,
            ..self.lock
        };
        let mut locked = false;
        let result = with_lock(&target.path, &at_once, "a broadcast", || {
            locked = true;
            held.push(next);
            self.lock_each(targets, next + 1, held, busy, observer)
        });
        match result {
            Err(Error::LockTimeout { .. }) if !locked => {
                busy.borrow_mut().push(next);
                self.lock_each(targets, next + 1, held, busy, observer)
            }
            other => other,
        }
    }
}

/// Writes the held inboxes: each read, appended to (with the drops waiting
/// for it, `drops.rs`) and staged; then all synced; then all put in place,
/// each kept as told to `told`'s observer when given.
fn write_held(targets: &[Target], held: &[usize], told: Option<(&OwnWrites, usize)>) -> Result<()> {
    let mut staged = Vec::with_capacity(held.len());
    for &i in held {
        let target = &targets[i];
        let mut inbox: Vec<InboxMessage> = read_array_for_update(&target.path)?;
        inbox.extend_from_slice(&target.entries);
        let pending = drops::Pending::fold(&target.path, &mut inbox)?;
        staged.push((&target.path, stage_json(&target.path, &inbox)?, pending));
    }
    for (_, version, _) in &staged {
        version.sync()?;
    }
    for (path, version, pending) in staged {
        let writing = told.map(|(own, key)| own.writing(path, key));
        version.commit()?;
        if let Some(writing) = writing {
            writing.done();
        }
        pending.settle();
    }
    Ok(())
}

#[cfg(test)]
mod tests;
