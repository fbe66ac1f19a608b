//! Group commit: the changes many threads of this process make to one file
//! at the same time go into one locked read-modify-write and one synced
//! write, instead of one each.
//!
//! The first thread to arrive becomes the *leader*: it takes the file's
//! cross-process lock, loads the document and opens a *batch*. Threads that
//! arrive while the leader loads wait and then join the batch; threads that
//! arrive while it is open join at once. Each joiner applies its own change,
//! on its own thread, under the batch's mutex. When every thread that was
//! waiting has joined, the leader closes the batch, writes the document once
//! (skipped when nothing changed) and releases the lock; everyone in the
//! batch then learns the write's outcome together with its own. Threads that
//! arrive during the write wait for the next batch, led by one of them.
//!
//! A change that fails is undone (whatever it changed before failing) and
//! its caller gets the error; the others' changes in the batch are still
//! written.
//!
//! Under no concurrency this is one lock and one write per change, as
//! before; with a hundred teammates going idle at once it is one write for
//! all their `isActive` flips or idle notifications.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};

/// A change to a document of type `D`.
pub(super) type Change<'a, D> = &'a mut dyn FnMut(&mut D) -> Result<()>;

/// One combiner per file path.
#[derive(Debug)]
pub(super) struct Combiners<D> {
    by_path: Mutex<HashMap<PathBuf, Arc<Combiner<D>>>>,
}

impl<D> Default for Combiners<D> {
    fn default() -> Self {
        Combiners {
            by_path: Mutex::new(HashMap::new()),
        }
    }
}

#[derive(Debug)]
struct Combiner<D> {
    state: Mutex<State<D>>,
    /// Waiters for a batch to open (or for the lead to be free).
    opened: Condvar,
    /// The leader, waiting for the last waiter to join.
    joined: Condvar,
    /// Members waiting for their batch's write.
    written_cv: Condvar,
}

/// How a batch treats its members' changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Changes {
    /// Changes may fail (each is undone when it does, so the document is
    /// copied before it) and may change nothing (the document is compared
    /// with what was loaded, and not written when equal).
    Checked,
    /// Changes cannot fail and always change the document (appends): no
    /// copy, no comparison — a batch of a hundred appends to a long inbox
    /// copies nothing.
    Appends,
}

#[derive(Debug)]
struct State<D> {
    /// The open batch's document (a leader loaded it and accepts changes).
    doc: Option<D>,
    /// Whether anyone leads (loading, accepting or writing).
    leading: bool,
    /// Threads waiting to join the next batch.
    waiting: usize,
    /// The id of the open batch, or of the next one.
    batch: u64,
    /// Whether a change of the open batch succeeded (else nothing to write).
    dirty: bool,
    /// Outcomes of written batches, until every member has read its own.
    written: HashMap<u64, Written>,
    /// Members of the open batch (besides its leader).
    members: usize,
}

#[derive(Debug)]
struct Written {
    /// The write's error, as text (shared by every member).
    error: Option<(std::io::ErrorKind, String)>,
    /// Members yet to read it.
    unread: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<D: Clone + PartialEq> Combiners<D> {
    /// Applies `change` to the document at `path` in a batch with whatever
    /// other threads change there at the same time. When this thread leads,
    /// `lead` runs the batch: it must take the file's lock, load the
    /// document, call the given function with it (which applies every
    /// member's change and returns the document and whether it changed) and
    /// store it when it did, then release the lock.
    pub(super) fn update(
        &self,
        path: &Path,
        changes: Changes,
        change: Change<'_, D>,
        lead: impl FnOnce(&mut dyn FnMut(D) -> Result<(D, bool)>) -> Result<()>,
    ) -> Result<()> {
        let combiner = lock(&self.by_path)
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                Arc::new(Combiner {
                    state: Mutex::new(State {
                        doc: None,
                        leading: false,
                        waiting: 0,
                        batch: 0,
                        dirty: false,
                        written: HashMap::new(),
                        members: 0,
                    }),
                    opened: Condvar::new(),
                    joined: Condvar::new(),
                    written_cv: Condvar::new(),
                })
            })
            .clone();
        let result = combiner.update(path, changes, change, lead);
        self.forget_if_unused(path, combiner);
        result
    }

    /// Threads waiting for a batch at `path` (for tests).
    #[cfg(test)]
    pub(super) fn waiting(&self, path: &Path) -> usize {
        lock(&self.by_path)
            .get(path)
            .map_or(0, |c| lock(&c.state).waiting)
    }

    /// Drops this thread's handle on `combiner`, and the table's too when
    /// nobody else holds one and nothing is pending. The handle is dropped
    /// under the table's lock: the last thread to get here then sees every
    /// other thread's handle gone (threads still inside `update` hold theirs,
    /// so the count says whether anyone is), and forgets the combiner.
    fn forget_if_unused(&self, path: &Path, combiner: Arc<Combiner<D>>) {
        let mut by_path = lock(&self.by_path);
        let idle = {
            let s = lock(&combiner.state);
            !s.leading && s.waiting == 0 && s.written.is_empty()
        };
        // New users clone the combiner under the table's lock, held here.
        if idle && Arc::strong_count(&combiner) == 2 {
            by_path.remove(path);
        }
        drop(combiner);
        drop(by_path);
    }
}

impl<D: Clone + PartialEq> Combiner<D> {
    fn update(
        &self,
        path: &Path,
        changes: Changes,
        change: Change<'_, D>,
        lead: impl FnOnce(&mut dyn FnMut(D) -> Result<(D, bool)>) -> Result<()>,
    ) -> Result<()> {
        let mut s = lock(&self.state);
        let mut counted = false;
        loop {
            if s.doc.is_some() {
                if counted {
                    s.waiting -= 1;
                }
                return self.join(path, s, changes, change);
            }
            if !s.leading {
                if counted {
                    s.waiting -= 1;
                }
                s.leading = true;
                drop(s);
                return self.lead(changes, change, lead);
            }
            if !counted {
                s.waiting += 1;
                counted = true;
            }
            s = self.opened.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Applies `change` to the open batch and waits for its write.
    fn join(
        &self,
        path: &Path,
        mut s: MutexGuard<'_, State<D>>,
        changes: Changes,
        change: Change<'_, D>,
    ) -> Result<()> {
        let batch = s.batch;
        let doc = s.doc.as_mut().expect("the batch is open");
        let own = match changes {
            Changes::Checked => {
                let before = doc.clone();
                let own = change(doc);
                if own.is_err() {
                    *doc = before; // undone: the batch goes on without it
                }
                own
            }
            Changes::Appends => change(doc),
        };
        s.dirty |= own.is_ok();
        s.members += 1;
        if s.waiting == 0 {
            self.joined.notify_one(); // the leader waits for the last joiner
        }
        while !s.written.contains_key(&batch) {
            s = self.written_cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        let written = s.written.get_mut(&batch).expect("checked above");
        written.unread -= 1;
        let error = written.error.clone();
        if written.unread == 0 {
            s.written.remove(&batch);
        }
        drop(s);
        own?;
        match error {
            None => Ok(()),
            Some((kind, text)) => Err(Error::io("write", path, std::io::Error::new(kind, text))),
        }
    }

    /// Leads one batch through `lead`.
    fn lead(
        &self,
        changes: Changes,
        change: Change<'_, D>,
        lead: impl FnOnce(&mut dyn FnMut(D) -> Result<(D, bool)>) -> Result<()>,
    ) -> Result<()> {
        let mut own = None;
        let mut opened = None;
        // A panic while leading must not leave the others waiting for ever:
        // caught here, reported to the batch's members, then resumed.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lead(&mut |loaded: D| {
                let mut s = lock(&self.state);
                // A copy only when a failed change may have to be undone or
                // a change may have changed nothing (`Changes`).
                let kept = (changes == Changes::Checked).then(|| loaded.clone());
                s.doc = Some(loaded);
                s.dirty = false;
                s.members = 0;
                let batch = s.batch;
                opened = Some(batch);
                let first = change(s.doc.as_mut().expect("just opened"));
                if first.is_err() {
                    // Undone (an append cannot fail).
                    if let Some(kept) = &kept {
                        s.doc = Some(kept.clone());
                    }
                }
                s.dirty |= first.is_ok();
                own = Some(first);
                self.opened.notify_all();
                // Everyone who was waiting joins this batch; later arrivals join
                // too while it is open, but are not waited for.
                while s.waiting > 0 {
                    s = self.joined.wait(s).unwrap_or_else(|p| p.into_inner());
                }
                let doc = s.doc.take().expect("still open");
                s.batch += 1;
                let changed = s.dirty && kept.as_ref().is_none_or(|kept| doc != *kept);
                Ok((doc, changed))
            })
        }));
        let (result, panic) = match outcome {
            Ok(result) => (result, None),
            Err(panic) => (
                Err(Error::HostTask(
                    "the write of a batch of changes panicked".into(),
                )),
                Some(panic),
            ),
        };
        let mut s = lock(&self.state);
        if s.doc.take().is_some() {
            s.batch += 1; // the panic came while the batch was open
        }
        if let Some(batch) = opened {
            let members = s.members;
            if members > 0 {
                let error = result
                    .as_ref()
                    .err()
                    .map(|e| (error_kind(e), e.to_string()));
                s.written.insert(
                    batch,
                    Written {
                        error,
                        unread: members,
                    },
                );
            }
        }
        s.leading = false;
        self.written_cv.notify_all();
        // The lead is free: one waiter takes it, the others join its batch.
        self.opened.notify_all();
        drop(s);
        if let Some(panic) = panic {
            std::panic::resume_unwind(panic);
        }
        match own {
            Some(own) => own.and(result),
            // The batch never opened (the lead failed first): only this
            // thread's change is lost, and it gets the error.
            None => result,
        }
    }
}

fn error_kind(e: &Error) -> std::io::ErrorKind {
    match e {
        Error::Io { source, .. } => source.kind(),
        _ => std::io::ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests;
