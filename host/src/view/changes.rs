//! What makes the view redraw: the store's change feed for the team (its
//! config, inboxes and tasks, whoever writes them) and, inside `teamhost
//! run`, the host's own events. Both become [`Input::Changed`] on one
//! channel; the view reads the board again once per burst, never on a
//! timer.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use crate::embed::{Event, Host};
use crate::error::Result;
use crate::store::backend::FeedGuard;
use crate::store::{StoreEvent, StoreObserver, Team};

use super::Input;

/// A live feed of one team's changes; dropping it stops it. Watching a
/// Claude Code team writes nothing (see the file store's feed).
pub struct Changes {
    _feed: Box<dyn FeedGuard>,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").finish_non_exhaustive()
    }
}

/// Turns every change into one [`Input::Changed`].
struct ToView(Mutex<Sender<Input>>);

impl StoreObserver for ToView {
    fn changed(&self, _: &StoreEvent) {
        let _ = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Input::Changed);
    }
}

impl Changes {
    /// Starts the feed of `team` and sends [`Input::Changed`] to `tx` on
    /// every change.
    pub fn start(team: &Team, tx: Sender<Input>) -> Result<Changes> {
        let feed = team.watch(Arc::new(ToView(Mutex::new(tx))))?;
        Ok(Changes { _feed: feed })
    }
}

/// Forwards `host`'s events about `team` to `tx` until the channel closes.
/// Needs a tokio runtime.
pub fn forward_host_events(
    host: &Host,
    team: &str,
    tx: Sender<Input>,
) -> tokio::task::JoinHandle<()> {
    let mut events = host.events();
    let team = team.to_string();
    tokio::spawn(async move {
        loop {
            let ours = match events.recv().await {
                Ok(Event::StateChanged { team: t, .. })
                | Ok(Event::TurnStarted { team: t, .. })
                | Ok(Event::TasksChanged { team: t, .. })
                | Ok(Event::InboxChanged { team: t, .. })
                | Ok(Event::Model { team: t, .. })
                | Ok(Event::LeaseLost { team: t, .. }) => t == team,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if ours && tx.send(Input::Changed).is_err() {
                return;
            }
        }
    })
}
