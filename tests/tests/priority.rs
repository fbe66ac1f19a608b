//! The runner's poll order with real components: host-injected messages, then a
//! `shutdown_request` (even queued behind other messages), then the lead's
//! messages, then anyone's.

use crate::common;

use std::time::Duration;

use common::{line, turns, Fixture};
use teamhost::embed::{HostOptions, TeammateState};
use teamhost::home::Home;
use teamhost::protocol::{ProtocolMessage, ShutdownRequest, WireMessage};
use teamhost::store::{NewMember, OutgoingMessage, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_request_queued_last_is_handled_first_then_the_leads_message_then_the_peers() {
    let f = Fixture::new("prio");
    let dir = f.probe("probe", "reject-shutdown").await;
    // A member without a runner: only its messages matter here.
    f.team
        .add_member(NewMember {
            name: "peer".into(),
            ..Default::default()
        })
        .unwrap();
    f.settle().await;

    // Three messages in one locked append, so the runner wakes once and sees
    // them all: the peer's first, the lead's second, the shutdown request last.
    let request = ShutdownRequest::new("probe", "team-lead", Some("time to stop".into()));
    let entries = [
        OutgoingMessage::new("peer", "from the peer").into_entry(),
        OutgoingMessage::new("team-lead", "from the lead").into_entry(),
        OutgoingMessage::new("team-lead", request.to_text()).into_entry(),
    ];
    f.team.append_entries("probe", &entries).unwrap();
    f.settle().await;

    assert_eq!(
        turns(&dir),
        [
            line("initial", "team-lead", "reject-shutdown"),
            line("shutdown-request", "team-lead", "time to stop"),
            line("message", "team-lead", "from the lead"),
            line("message", "peer", "from the peer"),
        ]
    );
    // The probe rejected, so it is still running and still a member.
    let rejected: Vec<_> = f
        .lead_protocol()
        .into_iter()
        .filter_map(|m| match m {
            ProtocolMessage::ShutdownRejected(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0].request_id, request.request_id);
    assert_eq!(rejected[0].from, "probe");
    assert_eq!(rejected[0].reason, "probe was told to reject");
    let probe = &f.host.teammates("prio")[0];
    assert_eq!(probe.state, TeammateState::Idle);
    assert_eq!(probe.turns, 4);
    assert_eq!(f.members(), ["team-lead", "probe", "peer"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_injected_by_the_host_is_handled_before_unread_inbox_messages() {
    // No fallback poll during the test: the runner wakes only on this host's
    // own writes and injections.
    let f = Fixture::with_options(
        "inject",
        HostOptions {
            poll_interval: Duration::from_secs(3600),
            // Nor file notifications: "another process" below is a store
            // without the host's observer, and must not wake anyone.
            watch_files: false,
            ..Default::default()
        },
    );
    let dir = f.probe("probe", "listen").await;
    f.settle().await;

    // A message lands in the inbox the way another process of the lead's
    // would write it (`teamhost send`: a store without this host's observer,
    // signing with the team's key from the home's keyring), so the idle
    // runner is not woken...
    let ring = std::sync::Arc::new(teamhost::home::lead_keys::HomeKeyring::new(Home::new(
        &f.home,
    )));
    let outside = Store::new(Home::new(&f.home))
        .with_lead_guard(std::sync::Arc::new(
            teamhost::store::LeadGuard::from_keyring(ring),
        ))
        .team("inject")
        .unwrap();
    outside
        .deliver(
            "probe",
            OutgoingMessage::new("team-lead", "queued in the inbox"),
        )
        .unwrap();
    // ...and is still waiting when the injection wakes it.
    f.host
        .inject("inject", "probe", "typed by a person")
        .unwrap();
    f.settle().await;

    assert_eq!(
        turns(&dir),
        [
            line("initial", "team-lead", "listen"),
            line("message", "user", "typed by a person"),
            line("message", "team-lead", "queued in the inbox"),
        ]
    );
    assert!(f.team.unread("probe").unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injecting_into_a_teammate_this_host_does_not_run_is_refused() {
    let f = Fixture::new("inject-unknown");
    let err = f
        .host
        .inject("inject-unknown", "nobody", "hello")
        .unwrap_err();
    assert!(
        err.to_string().contains("nobody is not running"),
        "unexpected error: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_idle_waits_for_an_injected_message_to_be_handled() {
    let f = Fixture::new("inject-idle");
    let dir = f.probe("probe", "listen").await;
    f.settle().await;
    // A race, so try it several times: each time `wait_idle` must return only
    // once the injected message has had its turn.
    for i in 1..=10 {
        let text = format!("typed by a person, take {i}");
        f.host.inject("inject-idle", "probe", &text).unwrap();
        f.settle().await;
        let log = turns(&dir);
        assert_eq!(
            log.last(),
            Some(&line("message", "user", &text)),
            "wait_idle returned before injected message {i} was handled: {log:?}"
        );
    }
}
