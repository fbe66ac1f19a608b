//! Direct messages between teammates: delivered to the peer, and announced to
//! the lead in the sender's `idle_notification` as `[to NAME] summary`.

use crate::common;

use common::{line, turns, Fixture};
use teamhost::protocol::ProtocolMessage;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_dm_reaches_the_peer_and_the_idle_notification_carries_its_summary() {
    let f = Fixture::new("dm");
    let other_dir = f.probe("other", "listen").await;
    let greeter_dir = f.probe("greeter", "dm:other").await;
    f.settle().await;

    // The peer handled it as a message from the greeter.
    assert_eq!(
        turns(&other_dir),
        [
            line("initial", "team-lead", "listen"),
            line("message", "greeter", "hello other"),
        ]
    );
    assert_eq!(
        turns(&greeter_dir),
        [line("initial", "team-lead", "dm:other")]
    );
    let consumed = f.team.history("other").unwrap();
    let dm = consumed
        .iter()
        .find(|m| m.from == "greeter")
        .expect("the DM in other's history");
    assert_eq!(dm.text, "hello other");
    assert_eq!(dm.summary.as_deref(), Some("greeting"));

    // The lead saw it in the greeter's idle notification, and only there.
    let idle: Vec<_> = f
        .lead_protocol()
        .into_iter()
        .filter_map(|m| match m {
            ProtocolMessage::IdleNotification(n) => Some((n.from, n.summary)),
            _ => None,
        })
        .collect();
    let greeter: Vec<_> = idle.iter().filter(|(from, _)| from == "greeter").collect();
    assert_eq!(greeter.len(), 1, "{idle:?}");
    assert_eq!(greeter[0].1.as_deref(), Some("[to other] greeting"));
    assert!(
        idle.iter()
            .filter(|(from, _)| from == "other")
            .all(|(_, summary)| summary.is_none()),
        "{idle:?}"
    );
    // The DM itself was not copied to the lead.
    assert!(
        !f.lead_inbox().iter().any(|m| m.text == "hello other"),
        "{:?}",
        f.lead_inbox()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_to_someone_who_is_not_a_member_is_not_delivered_and_not_announced() {
    let f = Fixture::new("dm-nobody");
    let dir = f.probe("greeter", "dm:nobody").await;
    f.settle().await;

    assert_eq!(turns(&dir), [line("initial", "team-lead", "dm:nobody")]);
    assert!(!f
        .team
        .file_paths()
        .unwrap()
        .inbox("nobody")
        .unwrap()
        .exists());
    let summaries: Vec<_> = f
        .lead_protocol()
        .into_iter()
        .filter_map(|m| match m {
            ProtocolMessage::IdleNotification(n) => Some(n.summary),
            _ => None,
        })
        .collect();
    assert_eq!(summaries, [None]);
}
