//! The queue of messages a person types to an in-process teammate
//! ([`Host::inject`](crate::embed::Host::inject)): the host pushes, the
//! runner takes one per turn, ahead of its inbox.
//!
//! A queue of its own rather than a channel: an idle teammate holds it for
//! its whole life, and a tokio channel allocates a block of 32 slots up
//! front (about 0.8 KiB) where an empty `VecDeque` allocates nothing — at
//! 10,000 teammates the difference is 8 MiB. The runner wakes through its
//! [`Notify`](tokio::sync::Notify) as for any write, so the queue needs no
//! waker of its own.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

struct Shared {
    /// The messages not taken yet; `None` once the runner has stopped.
    queue: Mutex<Option<VecDeque<String>>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Option<VecDeque<String>>> {
        // A panic while holding the lock leaves a queue still whole.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The host's end: pushes messages for the runner.
#[derive(Clone)]
pub(crate) struct InjectSender(Arc<Shared>);

/// The runner's end: takes them. Dropping it (the runner stopped) makes
/// every later [`InjectSender::send`] fail and drops what was not taken.
pub(crate) struct InjectReceiver(Arc<Shared>);

/// A queue for one runner.
pub(crate) fn queue() -> (InjectSender, InjectReceiver) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Some(VecDeque::new())),
    });
    (InjectSender(shared.clone()), InjectReceiver(shared))
}

impl InjectSender {
    /// Queues `text`; gives it back when the runner has stopped.
    pub(crate) fn send(&self, text: String) -> Result<(), String> {
        match self.0.lock().as_mut() {
            Some(queue) => {
                queue.push_back(text);
                Ok(())
            }
            None => Err(text),
        }
    }

    /// Messages queued and not yet taken by the runner.
    pub(crate) fn pending(&self) -> usize {
        self.0.lock().as_ref().map_or(0, VecDeque::len)
    }
}

impl InjectReceiver {
    /// The oldest message not taken yet, if any.
    pub(crate) fn try_recv(&self) -> Option<String> {
        let mut queue = self.0.lock();
        let taken = queue.as_mut()?.pop_front();
        // A drained queue gives its buffer back: an idle teammate holds none.
        if queue.as_ref().is_some_and(VecDeque::is_empty) {
            *queue = Some(VecDeque::new());
        }
        taken
    }
}

impl Drop for InjectReceiver {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_out_in_order_and_count_until_taken() {
        let (tx, rx) = queue();
        assert_eq!(rx.try_recv(), None);
        tx.send("one".into()).unwrap();
        tx.send("two".into()).unwrap();
        assert_eq!(tx.pending(), 2);
        assert_eq!(rx.try_recv().as_deref(), Some("one"));
        assert_eq!(tx.pending(), 1);
        assert_eq!(rx.try_recv().as_deref(), Some("two"));
        assert_eq!(rx.try_recv(), None);
        assert_eq!(tx.pending(), 0);
    }

    #[test]
    fn a_stopped_runner_refuses_new_messages_and_drops_the_rest() {
        let (tx, rx) = queue();
        tx.send("left".into()).unwrap();
        drop(rx);
        assert_eq!(tx.pending(), 0);
        assert_eq!(tx.send("late".into()), Err("late".to_string()));
    }
}
