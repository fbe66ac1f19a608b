//! At most a few compilations at once, first come first served
//! ([`CompileQueue`]). Cranelift already spreads one compilation over every
//! core (wasmtime's `parallel-compilation`), so running many at once only
//! makes each one slower: on 2 cores, three components compiled together
//! left a component that compiles in 0.2 s alone ready after 39 s. A
//! compilation waits here for a slot; a component already compiled (in
//! memory or as an artifact on disk) never does.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

/// A counting gate whose waiters go through in the order they came.
pub struct CompileQueue {
    state: Mutex<State>,
    turn: Condvar,
}

struct State {
    free: usize,
    waiting: VecDeque<u64>,
    next: u64,
}

/// A slot held until dropped.
pub struct Slot<'a>(&'a CompileQueue);

impl CompileQueue {
    /// A queue of `slots` slots (at least one).
    pub fn new(slots: usize) -> CompileQueue {
        CompileQueue {
            state: Mutex::new(State {
                free: slots.max(1),
                waiting: VecDeque::new(),
                next: 0,
            }),
            turn: Condvar::new(),
        }
    }

    /// A queue sized to this machine: half its cores, at least one (each
    /// compilation already uses all of them).
    pub fn for_this_machine() -> CompileQueue {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        CompileQueue::new(cores / 2)
    }

    /// Waits for a slot, behind everyone who asked before (blocking: call
    /// it on a blocking thread).
    pub fn wait(&self) -> Slot<'_> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = s.next;
        s.next += 1;
        s.waiting.push_back(ticket);
        while !(s.free > 0 && s.waiting.front() == Some(&ticket)) {
            s = self.turn.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.waiting.pop_front();
        s.free -= 1;
        // The next in line may have a slot too.
        self.turn.notify_all();
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock().unwrap_or_else(|p| p.into_inner());
        s.free += 1;
        self.0.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};

    #[test]
    fn no_more_than_its_slots_run_at_once_and_waiters_go_in_order() {
        let queue = Arc::new(CompileQueue::new(1));
        let running = Arc::new(AtomicUsize::new(0));
        let (order_tx, order_rx) = mpsc::channel();
        // The first holds the slot until the others are all queued.
        let held = queue.wait();
        let (queued_tx, queued_rx) = mpsc::channel();
        let mut threads = Vec::new();
        for i in 0..4 {
            let (q, running, order_tx) = (queue.clone(), running.clone(), order_tx.clone());
            let queued_tx = queued_tx.clone();
            threads.push(std::thread::spawn(move || {
                queued_tx.send(()).unwrap();
                let _slot = q.wait();
                assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0, "two at once");
                order_tx.send(i).unwrap();
                running.fetch_sub(1, Ordering::SeqCst);
            }));
            // Each thread is waiting before the next starts.
            queued_rx.recv().unwrap();
            while queue.state.lock().unwrap().waiting.len() < i + 1 {
                std::thread::yield_now();
            }
        }
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        let order: Vec<usize> = order_rx.try_iter().collect();
        assert_eq!(order, [0, 1, 2, 3]);
    }

    #[test]
    fn a_machine_gets_at_least_one_slot() {
        let q = CompileQueue::new(0);
        let _a = q.wait();
        assert_eq!(q.state.lock().unwrap().free, 0);
    }
}
