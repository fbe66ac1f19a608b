//! The writer process the `scale` and `contention` benches share
//! (`SCALE_ROLE=teamhost`): one protocol, so an old commit's `scale` bench
//! binary can stand in as an old library writer beside the new.

use std::sync::mpsc;
use std::time::{SystemTime, UNIX_EPOCH};

use teamhost::home::Home;
use teamhost::store::{OutgoingMessage, Store, StoreEvent, StoreObserver};

/// Sends `SCALE_COUNT` messages to `sink` of team `writers` under
/// `SCALE_HOME`, one after another, each text `{SCALE_ID}:{n}:{sent µs}`.
pub fn teamhost_writer() {
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"));
    let id = var("SCALE_ID");
    let count: usize = var("SCALE_COUNT").parse().unwrap();
    let team = Store::new(Home::new(var("SCALE_HOME")))
        .team("writers")
        .unwrap();
    for n in 0..count {
        team.send(
            "sink",
            OutgoingMessage::new("team-lead", format!("{id}:{n}:{}", now_us())),
        )
        .unwrap();
    }
}

/// Hears `sink`'s inbox change.
pub struct Wakeup(pub mpsc::Sender<()>);

impl StoreObserver for Wakeup {
    fn changed(&self, event: &StoreEvent) {
        if matches!(event, StoreEvent::InboxAppended { agent, .. } if agent == "sink") {
            let _ = self.0.send(());
        }
    }
}

/// Microseconds since the epoch, as the texts carry them.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}
