//! An inbox's two writes: the append, which joins the appends other threads
//! make at the same time (`combine.rs`) and those other processes left in
//! the drop box (`drops.rs`), and the take, which moves entries to the
//! history. With an observer's key, each write is kept as told to that
//! observer (`own_writes.rs`), so its feed does not report it again: an
//! append always (the caller announces it, and the woken reader reads the
//! whole inbox), a take only when it took something and left nothing
//! unread.

use std::cell::{Cell, RefCell};

use super::lock::{with_lock, with_lock_unless, Locked};
use super::{combine, deleted, drops, history, FileStore};
use crate::durable::{read_array, read_array_for_update, write_json_locked};
use crate::error::Result;
use crate::store::backend::Pick;
use crate::store::mailbox::consumed_now;
use crate::store::InboxMessage;

impl FileStore {
    /// [`TeamStore::append_inbox`]; with `observer`, the write is kept as
    /// told to that observer (`own_writes.rs`), whose feed leaves its echo
    /// out.
    pub(super) fn append_to_inbox(
        &self,
        team: &str,
        agent: &str,
        entries: &[InboxMessage],
        observer: Option<usize>,
    ) -> Result<()> {
        let paths = self.paths(team)?;
        let path = paths.inbox(agent)?;
        deleted::subdir(&paths, &paths.inboxes_dir())?;
        // Set when this thread's entries went through the drop box and an
        // earlier holder wrote them (`drops.rs`).
        let written_by_another = Cell::new(false);
        let mut append = |inbox: &mut Vec<InboxMessage>| {
            if !written_by_another.get() {
                inbox.extend_from_slice(entries);
            }
            Ok(())
        };
        // With the appends other threads make at the same time: one synced
        // write for all of them (`combine.rs`); with those other processes
        // make, through the drop box (`drops.rs`).
        self.inboxes
            .update(&path, combine::Changes::Appends, &mut append, |batch| {
                let parcel = RefCell::new(None);
                let mut leave = || {
                    if drops::can_drop(entries) {
                        match drops::Parcel::leave(&path, entries) {
                            Ok(left) => *parcel.borrow_mut() = Some(left),
                            // Written by this thread under the lock instead.
                            Err(e) => tracing::debug!(error = %e, "no inbox drop left"),
                        }
                    }
                };
                // Its drop gone, a writer needs the flock only to know that
                // the holder who removed it is done: not the lock directory
                // nor a look at the inbox.
                let mut gone = || {
                    parcel
                        .borrow()
                        .as_ref()
                        .is_some_and(|left| !left.path().exists())
                };
                let locked = || {
                    let inbox: Vec<InboxMessage> = read_array_for_update(&path)?;
                    if let Some(left) = parcel.borrow().as_ref() {
                        written_by_another.set(left.committed()? || left.held_by(&inbox));
                    }
                    let loaded = inbox.len();
                    let (mut inbox, _) = batch(inbox)?;
                    // Only a holder that writes anyway folds the drops in:
                    // one whose own entries are written already leaves them
                    // to the next writer in line, whose write then carries
                    // all that waited meanwhile.
                    if inbox.len() > loaded {
                        let pending = drops::Pending::fold(&path, &mut inbox)?;
                        // Whatever else this write carries (other threads'
                        // entries, drops folded in) is in the inbox the
                        // announced reader reads when woken.
                        let told = observer.map(|key| self.own.writing(&path, key));
                        write_json_locked(&path, &inbox)?;
                        if let Some(told) = told {
                            told.done();
                        }
                        pending.settle();
                    }
                    Ok(())
                };
                let what = "an inbox append";
                let result = match with_lock_unless(
                    &path, &self.lock, what, &mut leave, &mut gone, locked,
                ) {
                    Ok(Locked::Ran(())) => Ok(()),
                    // The drop went with its team (deleted meanwhile).
                    Ok(Locked::Needless) if !paths.team_dir().exists() => {
                        Err(deleted::deleted(&paths))
                    }
                    // Written by the holder that removed the drop, or
                    // kept aside as unreadable (an error).
                    Ok(Locked::Needless) => match parcel.borrow().as_ref() {
                        Some(left) => left.committed().map(|_| ()),
                        None => Ok(()),
                    },
                    Err(e) => Err(e),
                };
                if result.is_err() {
                    // Not delivered: the drop must not be, later.
                    if let Some(left) = parcel.take() {
                        left.remove();
                    }
                }
                result.map_err(|e| deleted::or_deleted(&paths, e))
            })
    }

    /// [`TeamStore::append_inboxes`]; with `observer`, as
    /// [`FileStore::append_to_inbox`].
    pub(super) fn append_to_inboxes(
        &self,
        team: &str,
        batch: &[(String, Vec<InboxMessage>)],
        observer: Option<usize>,
    ) -> Result<()> {
        match batch {
            [] => Ok(()),
            [(agent, entries)] => self.append_to_inbox(team, agent, entries, observer),
            _ => self.append_to_many(team, batch, observer),
        }
    }

    /// [`TeamStore::take_from_inbox`]; with `observer`, a rewrite that
    /// took something and left nothing unread is kept as told to it.
    pub(super) fn take_from(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
        observer: Option<usize>,
    ) -> Result<Vec<InboxMessage>> {
        let paths = self.paths(team)?;
        let (path, history) = (paths.inbox(agent)?, paths.history(agent)?);
        // No inbox directory, nothing to take (and none is made: the team
        // may have been deleted).
        if !paths.inboxes_dir().is_dir() {
            return Ok(Vec::new());
        }
        // A look without the lock first: an empty inbox (what most
        // wake-ups of a busy team's lead find) costs a read, not the lock's
        // writes. The look is as good as a take made at its moment: every
        // write after it is heard on the feed and brings another take. One
        // that cannot read or parse the file leaves it to the locked take
        // (which moves a corrupt file aside). `pick` is not asked here: a
        // pick may count what it takes.
        if matches!(read_array::<InboxMessage>(&path), Ok(inbox) if inbox.is_empty()) {
            return Ok(Vec::new());
        }
        with_lock(&path, &self.lock, "taking from an inbox", || {
            if !path.exists() {
                return Ok(Vec::new());
            }
            let mut inbox: Vec<InboxMessage> = read_array_for_update(&path)?;
            // Appends that waited behind this take, first (`drops.rs`).
            let loaded = inbox.len();
            let pending = drops::Pending::fold(&path, &mut inbox)?;
            let folded = inbox.len() > loaded;
            // Entries the last take recorded but could not remove (its
            // process died between the history and the inbox): consumed
            // already, never handed out twice.
            let consumed = history::last_batch(&history)?;
            let (mut gone, mut keep, mut taken) = (Vec::new(), Vec::new(), Vec::new());
            let mut settled = 0usize;
            for m in inbox {
                if consumed.iter().any(|c| c.same_message(&m)) {
                    settled += 1;
                } else if m.read {
                    gone.push(m);
                } else if pick(&m) {
                    taken.push(m);
                } else {
                    keep.push(m);
                }
            }
            if gone.is_empty() && taken.is_empty() && settled == 0 && !folded {
                pending.settle(); // what it held was in the inbox already
                return Ok(taken);
            }
            if settled > 0 {
                tracing::warn!(inbox = %path.display(), settled,
                    "dropping entries an interrupted take had already recorded as consumed");
            }
            gone.extend(taken.iter().cloned());
            // The history first, synced: from here the entries are kept
            // whatever happens to the inbox's rewrite.
            if !gone.is_empty() {
                history::append(&history, &consumed_now(&gone))?;
            }
            // Told, the echo of this rewrite would only wake a reader to
            // find nothing. Not when it left entries unread: they may be
            // another process's, whose own event the feed may not have
            // reported yet and would then judge by this file.
            let told = observer
                .filter(|_| keep.is_empty() && !taken.is_empty())
                .map(|key| self.own.writing(&path, key));
            // Emptied, the inbox is `[]` in a new file like any rewrite:
            // Claude Code may be reading the old one (`crate::durable`).
            write_json_locked(&path, &keep)?;
            if let Some(told) = told {
                told.done();
            }
            pending.settle();
            Ok(taken)
        })
        .map_err(|e| deleted::or_deleted(&paths, e))
    }
}
