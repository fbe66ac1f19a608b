//! The `reviewer` example: asks a peer by direct message, ends its turn, and
//! relays the answer to whoever asked when the peer's reply wakes it.

use std::time::Duration;

use teamhost::embed::{Event, Host, SpawnRequest, TeammateSettings};
use teamhost::home::Home;
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::NewTeam;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reviewer_asks_a_peer_and_relays_its_answer_to_the_lead() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let host = Host::new(Home::new(tmp.path().join("home"))).unwrap();
    host.create_team("rev", NewTeam::default()).unwrap();
    let team = host.team("rev").unwrap();
    let mut events = host.events();
    let quiet = |name: &str, component: &str, prompt: &str| SpawnRequest {
        settings: TeammateSettings {
            auto_claim: false,
            ..Default::default()
        },
        ..SpawnRequest::new(name, component, prompt, &work)
    };
    host.spawn("rev", quiet("echo", teamhost_tests::ECHO, "you echo"))
        .await
        .unwrap();
    host.wait_idle("rev").await.unwrap();
    host.spawn(
        "rev",
        quiet(
            "reviewer",
            teamhost_tests::REVIEWER,
            "@echo is the parser right?",
        ),
    )
    .await
    .unwrap();

    let relayed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(Event::InboxChanged { agent, .. }) = events.recv().await {
                if agent != "team-lead" {
                    continue;
                }
                let hit = team
                    .unread("team-lead")
                    .unwrap()
                    .into_iter()
                    .find(|m| m.from == "reviewer" && m.text.starts_with("Review from echo"));
                if let Some(m) = hit {
                    return m;
                }
            }
        }
    })
    .await
    .expect("the reviewer relays the answer");
    assert!(
        relayed.text.contains("is the parser right?"),
        "{}",
        relayed.text
    );

    // The exchange went through the peers' inboxes: echo consumed the question,
    // the reviewer consumed echo's answer. A message is consumed beside the
    // turn that handles it and settled before that turn ends, so the relay
    // (sent during the turn) can be seen before the answer is in the
    // reviewer's history: wait for the turn to end.
    host.wait_idle("rev").await.unwrap();
    let echo_history = team.history("echo").unwrap();
    assert!(echo_history
        .iter()
        .any(|m| m.from == "reviewer" && m.text.contains("Please review")));
    let reviewer_history = team.history("reviewer").unwrap();
    assert!(reviewer_history.iter().any(|m| m.from == "echo"));
    // The reviewer's DM to echo shows in the lead's idle notifications as a peer summary.
    let dm_summary = team.unread("team-lead").unwrap().into_iter().any(|m| {
        matches!(ProtocolMessage::parse(&m.text),
            Parsed::Protocol(ProtocolMessage::IdleNotification(n))
                if n.from == "reviewer" && n.summary.as_deref().is_some_and(|s| s.starts_with("[to echo]")))
    });
    assert!(
        dm_summary,
        "an idle notification carries the peer DM summary"
    );

    let report = host
        .shutdown_team("rev", "done", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(report.stopped, ["echo", "reviewer"]);
}
