//! The change feed of a NATS team: one subscription on the team's notice
//! subjects (`P.TEAM.ev.>`), to which the server republishes, headers only,
//! every message its two streams store.
//!
//! | notice | event |
//! |---|---|
//! | `ev.kv.config` | `ConfigChanged` (a deletion too: the team is gone) |
//! | `ev.kv.txn` | `TasksChanged` (a pass committed) |
//! | `ev.mail.in.AGENT`, `ev.mail.out.AGENT` | `InboxAppended { agent }` (a take is reported too) |
//! | anything else (`ev.kv.task.ID`, `ev.kv.lease.…`, `ev.kv.run.…`, usage, plans) | nothing: a lease renewal every few seconds wakes no teammate |
//!
//! A notice leaves only after the message is stored, so a reader woken by
//! it finds the write; nobody polls. This is JetStream's republish rather
//! than a KV watch: a watch is a consumer the server keeps per watcher and
//! replays history into, where one core subscription costs nothing and
//! covers the bucket and the mail stream at once.
//!
//! Core messages are not kept while the client is disconnected, so after
//! each reconnect the feed reports everything as changed (the config, the
//! tasks and every member's inbox): a reader then looks once and finds what
//! it missed. It does so only once a round trip has confirmed that the
//! server has the subscription again (the client announces the reconnect
//! before it resubscribes): a write in that gap is either heard or found by
//! the look.
//!
//! `watch()` likewise returns only after a round trip on the feed's
//! connection (a request the server answers itself), so a write made after
//! it, through any connection, is heard. The client's `flush()` would not
//! do: it only writes the socket, and a write from another connection could
//! be stored, and its notice sent, before the server had read the
//! subscription (a lost wake-up: the teammate slept until its poll).
//! Only members' inboxes are reported: mail to a name that is not a member
//! has no reader to wake.
//!
//! The observer is called on the feed's own thread, never on the store's
//! runtime, so an observer that calls the store cannot stall the client.

use std::sync::{mpsc, Arc};

use futures_util::StreamExt;

use super::answers::Fail;
use super::client::round_trip;
use super::naming::untoken;
use super::NatsStore;
use crate::error::Result;
use crate::store::backend::FeedGuard;
use crate::store::{StoreEvent, StoreObserver, TeamStore};

/// What the subscription task hands the feed's thread.
enum Heard {
    Event(StoreEvent),
    Reconnected,
}

/// Ends the feed when dropped: the task stops, then the thread.
struct Feed {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Starts the feed of `team`; see the module docs.
pub(super) fn start(
    store: &NatsStore,
    team: &str,
    observer: Arc<dyn StoreObserver>,
) -> Result<Box<dyn FeedGuard>> {
    let n = store.names(team);
    let conn = store.conn();
    let subject = n.notices();
    let sub = conn
        .call(move |c| {
            let subject = subject.clone();
            async move {
                let sub = c
                    .subscribe(subject)
                    .await
                    .map_err(|e| Fail::Transient(e.to_string()))?;
                // The server has the subscription before watch() returns:
                // a write made right after is heard. Not `flush()`, which
                // only writes the socket (see `round_trip`).
                round_trip(&c).await?;
                Ok(sub)
            }
        })
        .map_err(|f| conn.error("watch the team", f))?;
    let (tx, rx) = mpsc::channel::<Heard>();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let mut reconnects = conn.reconnects();
    let client = conn.client();
    let (base, team_name) = (n.base.clone(), team.to_string());
    conn.handle().spawn(async move {
        let mut sub = sub;
        reconnects.borrow_and_update();
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                m = sub.next() => {
                    let Some(m) = m else { break };
                    if let Some(e) = event(&base, &team_name, m.subject.as_str()) {
                        if tx.send(Heard::Event(e)).is_err() {
                            break;
                        }
                    }
                }
                r = reconnects.changed() => {
                    if r.is_err() {
                        break;
                    }
                    // The client says "connected" before it has sent the
                    // server this subscription again: a write made in
                    // between would be neither heard nor covered by the
                    // look below. A round trip's answer comes after the
                    // server has the subscription.
                    let confirmed = tokio::time::timeout(
                        std::time::Duration::from_secs(5),
                        round_trip(&client),
                    )
                    .await;
                    if !matches!(confirmed, Ok(Ok(()))) {
                        tracing::warn!(team = %team_name, "after a reconnect: the subscription was not confirmed; reporting every change anyway");
                    }
                    if tx.send(Heard::Reconnected).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = sub.unsubscribe().await;
    });
    let (store, team) = (store.clone(), team.to_string());
    std::thread::Builder::new()
        .name("teamhost-nats-feed".into())
        .spawn(move || {
            while let Ok(heard) = rx.recv() {
                match heard {
                    Heard::Event(e) => observer.changed(&e),
                    Heard::Reconnected => everything_changed(&store, &team, &*observer),
                }
            }
        })
        .map_err(|e| crate::error::Error::io("start", "the NATS feed thread", e))?;
    Ok(Box::new(Feed { stop: Some(stop) }))
}

/// The event a notice subject stands for.
fn event(base: &str, team: &str, subject: &str) -> Option<StoreEvent> {
    let rest = subject.strip_prefix(base)?.strip_prefix(".ev.")?;
    let team = team.to_string();
    match rest.split('.').collect::<Vec<_>>().as_slice() {
        ["kv", "config"] => Some(StoreEvent::ConfigChanged { team }),
        ["kv", "txn"] => Some(StoreEvent::TasksChanged {
            team,
            written: None,
        }),
        ["mail", "in" | "out", tok] => Some(StoreEvent::InboxAppended {
            team,
            agent: untoken(tok)?,
        }),
        _ => None,
    }
}

/// After a reconnect: every change that may have been missed.
fn everything_changed(store: &NatsStore, team: &str, observer: &dyn StoreObserver) {
    let t = team.to_string();
    observer.changed(&StoreEvent::ConfigChanged { team: t.clone() });
    observer.changed(&StoreEvent::TasksChanged {
        team: t.clone(),
        written: None,
    });
    match store.read_config(team) {
        Ok(Some(config)) => {
            for m in config.members.iter() {
                if let Ok(stem) = crate::store::names::agent_file_stem(&m.name) {
                    observer.changed(&StoreEvent::InboxAppended {
                        team: t.clone(),
                        agent: stem,
                    });
                }
            }
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(team, error = %e, "after a reconnect: cannot read the members to wake")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_map_to_the_events_they_stand_for() {
        let ev = |s| event("p.t", "t", s);
        assert_eq!(
            ev("p.t.ev.kv.config"),
            Some(StoreEvent::ConfigChanged { team: "t".into() })
        );
        assert_eq!(
            ev("p.t.ev.kv.txn"),
            Some(StoreEvent::TasksChanged {
                team: "t".into(),
                written: None
            })
        );
        assert_eq!(
            ev("p.t.ev.mail.in.a=2Eb"),
            Some(StoreEvent::InboxAppended {
                team: "t".into(),
                agent: "a.b".into()
            })
        );
        assert_eq!(ev("p.t.ev.kv.task.3"), None);
        // Lease renewals and run records wake nobody.
        assert_eq!(ev("p.t.ev.kv.lease.host-1-0a0b0c0d"), None);
        assert_eq!(ev("p.t.ev.kv.run.worker"), None);
        assert_eq!(ev("p.other.ev.kv.config"), None);
    }
}
