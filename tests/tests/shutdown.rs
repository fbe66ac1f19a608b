//! The shutdown handshake when the teammate says no: the lead gets
//! `shutdown_rejected` with the reason, the teammate keeps working, and a
//! team shutdown with a deadline kills it.

use crate::common;

use std::time::Duration;

use common::{line, next_event, turns, Fixture};
use teamhost::embed::{Event, TeammateState};
use teamhost::protocol::{ProtocolMessage, ShutdownRequest, WireMessage};
use teamhost::store::OutgoingMessage;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_shutdown_keeps_the_teammate_working_until_shutdown_team_kills_it() {
    let f = Fixture::new("stubborn");
    let dir = f.probe("probe", "reject-shutdown").await;
    f.settle().await;

    // The lead asks it to stop; it says no, with its reason.
    let request = ShutdownRequest::new("probe", "team-lead", Some("wrap up".into()));
    f.team
        .send(
            "probe",
            OutgoingMessage::new("team-lead", request.to_text()),
        )
        .unwrap();
    let rejection = || {
        f.lead_protocol().into_iter().find_map(|m| match m {
            ProtocolMessage::ShutdownRejected(r) if r.request_id == request.request_id => Some(r),
            _ => None,
        })
    };
    f.until("shutdown_rejected", || rejection().is_some()).await;
    let rejected = rejection().unwrap();
    assert_eq!(rejected.from, "probe");
    assert_eq!(rejected.reason, "probe was told to reject");
    f.settle().await;
    assert_eq!(f.host.teammates("stubborn")[0].state, TeammateState::Idle);
    assert_eq!(f.members(), ["team-lead", "probe"]);

    // It still answers.
    f.host
        .send_as_lead("stubborn", "probe", "reply", None)
        .unwrap();
    f.until("the probe's ack", || {
        f.lead_inbox()
            .iter()
            .any(|m| m.from == "probe" && m.text == "ack" && m.summary.as_deref() == Some("ack"))
    })
    .await;

    // A team shutdown asks again, is refused again, and kills it at the deadline.
    let mut events = f.host.events();
    let report = f
        .host
        .shutdown_team("stubborn", "the end", Duration::from_millis(300))
        .await
        .unwrap();
    assert!(report.stopped.is_empty(), "{report:?}");
    assert_eq!(report.killed, ["probe"]);
    next_event(&mut events, "the probe to be killed", |e| {
        matches!(e, Event::StateChanged { name, state: TeammateState::Killed, .. } if name == "probe")
    })
    .await;
    assert_eq!(f.host.teammates("stubborn")[0].state, TeammateState::Killed);
    assert_eq!(f.members(), ["team-lead"]);
    // Under load the kill may come before it even read the second request;
    // when it did read it, it refused again.
    let log = turns(&dir);
    assert_eq!(
        log[..3],
        [
            line("initial", "team-lead", "reject-shutdown"),
            line("shutdown-request", "team-lead", "wrap up"),
            line("message", "team-lead", "reply"),
        ]
    );
    assert!(
        log[3..].is_empty() || log[3..] == [line("shutdown-request", "team-lead", "the end")],
        "{log:?}"
    );
    let rejections = f
        .lead_protocol()
        .into_iter()
        .filter(|m| matches!(m, ProtocolMessage::ShutdownRejected(_)))
        .count();
    assert_eq!(rejections, log.len() - 2, "{log:?}");
    assert!(
        f.lead_inbox()
            .iter()
            .any(|m| m.from == teamhost::runner::HOST_SENDER
                && m.text.starts_with("probe was terminated")),
        "{:?}",
        f.lead_inbox()
    );
}
