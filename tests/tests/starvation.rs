//! A guest stuck in an endless loop does not starve the others (epoch
//! interruption makes it yield), and the host can still kill it.

use crate::common;

use common::{line, next_event, turns, Fixture};
use teamhost::embed::{Event, SpawnRequest, TeammateState};

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_spinning_guest_does_not_starve_an_echo_teammate_and_can_be_killed() {
    let f = Fixture::new("spin");
    let echo_dir = f.dir("echo");
    let mut echo = SpawnRequest::new("echo", teamhost_tests::ECHO, "hello lead", &echo_dir);
    echo.settings.auto_claim = false;
    f.host.spawn("spin", echo).await.unwrap();
    let spinner_dir = f.probe("spinner", "spin-on-message").await;
    f.settle().await;

    // The spinner enters its endless turn.
    let mut events = f.host.events();
    f.host
        .send_as_lead("spin", "spinner", "spin forever", None)
        .unwrap();
    next_event(&mut events, "the spinner's turn to start", |e| {
        matches!(e, Event::TurnStarted { name, kind, .. } if name == "spinner" && kind == "message")
    })
    .await;

    // While it spins, the echo still answers the lead, though the runtime has
    // one worker thread: the spinner must yield for that to happen.
    f.host.send_as_lead("spin", "echo", "ping", None).unwrap();
    let echoed = || {
        f.lead_inbox()
            .iter()
            .any(|m| m.from == "echo" && m.text == "ping")
    };
    while !echoed() {
        next_event(
            &mut events,
            "the echo's answer",
            |e| matches!(e, Event::InboxChanged { agent, .. } if agent == "team-lead"),
        )
        .await;
    }
    let spinner = |f: &common::Fixture| {
        f.host
            .teammates("spin")
            .into_iter()
            .find(|t| t.name == "spinner")
            .unwrap()
    };
    assert_eq!(spinner(&f).state, TeammateState::Active, "still spinning");
    assert_eq!(
        turns(&spinner_dir).last(),
        Some(&line("message", "team-lead", "spin forever"))
    );

    // Killing it abandons the turn; it leaves the team and the lead is told.
    f.host.kill("spin", "spinner").await.unwrap();
    assert_eq!(spinner(&f).state, TeammateState::Killed);
    next_event(&mut events, "the spinner's Killed event", |e| {
        matches!(e, Event::StateChanged { name, state: TeammateState::Killed, .. } if name == "spinner")
    })
    .await;
    assert_eq!(f.members(), ["team-lead", "echo"]);
    assert!(
        f.lead_inbox()
            .iter()
            .any(|m| m.from == teamhost::runner::HOST_SENDER
                && m.text.starts_with("spinner was terminated")),
        "{:?}",
        f.lead_inbox()
    );
    assert!(f.host.inject("spin", "spinner", "still there?").is_err());

    // The echo is unaffected.
    f.host.send_as_lead("spin", "echo", "pong", None).unwrap();
    f.until("the echo's second answer", || {
        f.lead_inbox()
            .iter()
            .any(|m| m.from == "echo" && m.text == "pong")
    })
    .await;
    f.settle().await;
}
