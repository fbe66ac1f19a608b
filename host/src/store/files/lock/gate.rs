//! This process's queue for one lock path: threads that want the same file
//! wait in arrival order, each asleep (`park`) until the holder hands the
//! lock to it on release. No thread polls, and none can overtake another, so
//! a waiter is served after at most the holders queued before it — a lock
//! wait under the host's own load ends when that queue drains, not at random.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::Instant;

/// The turn of one thread at one path; dropping it hands the lock on.
pub(super) struct Turn {
    /// Always `Some` until `drop` takes it (to let it go under the table's
    /// lock, see `forget_if_unused`).
    gate: Option<Arc<Gate>>,
    path: PathBuf,
}

struct Gate {
    state: Mutex<State>,
}

struct State {
    /// The ticket of the thread holding the lock.
    owner: Option<u64>,
    /// What the holder does, and since when (for a waiter's error).
    holder: &'static str,
    since: Instant,
    /// Waiting threads, first come first served.
    queue: VecDeque<(u64, Thread)>,
    next_ticket: u64,
}

fn gates() -> &'static Mutex<HashMap<PathBuf, Arc<Gate>>> {
    static G: OnceLock<Mutex<HashMap<PathBuf, Arc<Gate>>>> = OnceLock::new();
    G.get_or_init(Default::default)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these short critical sections leaves consistent
    // state (each step is one assignment); keep going.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waits for this thread's turn at `path` until `deadline`. On timeout,
/// `Err` says what holds it and for how long.
pub(super) fn enter(path: &Path, what: &'static str, deadline: Instant) -> Result<Turn, String> {
    let gate = lock(gates())
        .entry(path.to_path_buf())
        .or_insert_with(|| {
            Arc::new(Gate {
                state: Mutex::new(State {
                    owner: None,
                    holder: "",
                    since: Instant::now(),
                    queue: VecDeque::new(),
                    next_ticket: 0,
                }),
            })
        })
        .clone();
    let turn = |gate| Turn {
        gate: Some(gate),
        path: path.to_path_buf(),
    };
    let mut s = lock(&gate.state);
    let ticket = s.next_ticket;
    s.next_ticket += 1;
    if s.owner.is_none() && s.queue.is_empty() {
        s.owner = Some(ticket);
        s.holder = what;
        s.since = Instant::now();
        drop(s);
        return Ok(turn(gate));
    }
    s.queue.push_back((ticket, std::thread::current()));
    loop {
        drop(s);
        std::thread::park_timeout(deadline.saturating_duration_since(Instant::now()));
        s = lock(&gate.state);
        if s.owner == Some(ticket) {
            s.holder = what;
            s.since = Instant::now();
            drop(s);
            return Ok(turn(gate));
        }
        if Instant::now() >= deadline {
            s.queue.retain(|(t, _)| *t != ticket);
            let held = format!("{}, for {:.1?} so far", s.holder, s.since.elapsed());
            drop(s);
            // Never ours: nothing to hand on.
            forget_if_unused(gate, path);
            return Err(held);
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(gate) = self.gate.take() else {
            return;
        };
        let mut s = lock(&gate.state);
        match s.queue.pop_front() {
            Some((next, thread)) => {
                s.owner = Some(next);
                s.since = Instant::now();
                thread.unpark();
            }
            None => s.owner = None,
        }
        drop(s);
        forget_if_unused(gate, &self.path);
    }
}

/// Drops the caller's handle on `gate`, and the table's entry for `path`
/// when nobody holds, waits for or is about to use it (its only other
/// reference is the caller's). The handle goes under the table's lock, so
/// the last thread through here sees every other handle gone and forgets
/// the gate; letting it go after the lock could leave each of two threads
/// counting the other's handle, and the entry behind.
fn forget_if_unused(gate: Arc<Gate>, path: &Path) {
    let mut table = lock(gates());
    let free = {
        let s = lock(&gate.state);
        s.owner.is_none() && s.queue.is_empty()
    };
    // New users clone the gate under the table's lock, which is held here.
    if free && Arc::strong_count(&gate) == 2 {
        table.remove(path);
    }
    drop(gate);
    drop(table);
}

/// Whether `path` has a gate now (for tests: unused ones are forgotten).
#[cfg(test)]
pub(super) fn has_gate(path: &Path) -> bool {
    lock(gates()).contains_key(path)
}

/// How many threads wait at `path` (for tests that need a queue).
#[cfg(test)]
pub(super) fn waiting(path: &Path) -> usize {
    lock(gates())
        .get(path)
        .map_or(0, |g| lock(&g.state).queue.len())
}
