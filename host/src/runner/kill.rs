//! The switch the host trips to kill a teammate: the runner (or an
//! external teammate's monitor) looks at it between turns and waits on it
//! while idle.
//!
//! A switch of its own rather than a `watch` channel of `bool`: every
//! teammate holds one for its whole life, and a watch channel's shared part
//! (eight wakers for its receivers) is a third of a KiB where this is a
//! flag and one [`Notify`].

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

const SET: u8 = 0;
const TRIPPED: u8 = 1;
/// The host's end was dropped without tripping it: nobody can kill the
/// teammate any more.
const GONE: u8 = 2;

struct Shared {
    state: AtomicU8,
    changed: Notify,
}

/// The host's end.
pub(crate) struct KillSwitch(Arc<Shared>);

/// The teammate's end.
pub(crate) struct KillWatch(Arc<Shared>);

/// The host's end was dropped before it tripped the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SwitchGone;

/// A switch not tripped yet, and the end that watches it.
pub(crate) fn switch() -> (KillSwitch, KillWatch) {
    let shared = Arc::new(Shared {
        state: AtomicU8::new(SET),
        changed: Notify::new(),
    });
    (KillSwitch(shared.clone()), KillWatch(shared))
}

impl Shared {
    fn settle(&self, to: u8) {
        // Tripped stays tripped: a drop after the trip changes nothing.
        if self
            .state
            .compare_exchange(SET, to, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.changed.notify_waiters();
        }
    }
}

impl KillSwitch {
    /// Trips the switch: the teammate is to stop. Tripping it again does
    /// nothing.
    pub(crate) fn trip(&self) {
        self.0.settle(TRIPPED);
    }
}

impl Drop for KillSwitch {
    fn drop(&mut self) {
        self.0.settle(GONE);
    }
}

impl KillWatch {
    /// Whether the switch was tripped.
    pub(crate) fn is_tripped(&self) -> bool {
        self.0.state.load(Ordering::SeqCst) == TRIPPED
    }

    /// Waits until the switch is tripped (`Ok`) or the host's end is gone
    /// without tripping it (`Err`); at once when either already happened.
    pub(crate) async fn changed(&mut self) -> Result<(), SwitchGone> {
        loop {
            // Registered before the look: a trip between the look and the
            // wait still wakes it.
            let notified = self.0.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.0.state.load(Ordering::SeqCst) {
                TRIPPED => return Ok(()),
                GONE => return Err(SwitchGone),
                _ => notified.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_trip_wakes_the_waiter_and_stays() {
        let (switch, mut watch) = switch();
        assert!(!watch.is_tripped());
        let waiter = tokio::spawn(async move {
            let r = watch.changed().await;
            (r, watch)
        });
        switch.trip();
        let (r, watch) = waiter.await.unwrap();
        assert_eq!(r, Ok(()));
        assert!(watch.is_tripped());
        // Dropped after the trip: still tripped.
        drop(switch);
        assert!(watch.is_tripped());
    }

    #[tokio::test]
    async fn a_dropped_switch_ends_the_wait_without_a_trip() {
        let (switch, mut watch) = switch();
        let waiter = tokio::spawn(async move { (watch.changed().await, watch) });
        drop(switch);
        let (r, watch) = waiter.await.unwrap();
        assert_eq!(r, Err(SwitchGone));
        assert!(!watch.is_tripped());
    }

    #[tokio::test]
    async fn a_wait_after_the_trip_ends_at_once() {
        let (switch, mut watch) = switch();
        switch.trip();
        switch.trip();
        assert_eq!(watch.changed().await, Ok(()));
    }
}
