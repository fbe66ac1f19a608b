//! Notification levels with real components: which `idle_notification`s reach
//! the lead's inbox under `all`, `state-changes` and `none`, that the ones kept
//! out are in the lead's history (nothing is lost), that every other message
//! is still delivered, and that a suppressed notification does not touch the
//! lead's inbox at all (no inbox event, so nothing would wake a lead).

use crate::common;

use std::time::Duration;

use common::{bounded, is_plain, Fixture};
use teamhost::embed::{Event, HostOptions, SpawnRequest};
use teamhost::protocol::{IdleNotification, ProtocolMessage};
use teamhost::runner::NotificationLevel;
use teamhost::store::{InboxMessage, NewTask, TaskStatus};
use tokio::sync::broadcast::{error::TryRecvError, Receiver};

const LEAD: &str = "team-lead";
/// Message turns after the initial one.
const TURNS: usize = 3;

fn fixture(name: &str, level: NotificationLevel) -> Fixture {
    Fixture::with_options(
        name,
        HostOptions {
            notifications: level,
            ..Default::default()
        },
    )
}

/// The idle notification `m` carries, if it is one.
fn idle(m: &InboxMessage) -> Option<IdleNotification> {
    match ProtocolMessage::parse(&m.text).protocol()? {
        ProtocolMessage::IdleNotification(n) => Some(n),
        _ => None,
    }
}

fn idles(entries: &[InboxMessage]) -> Vec<IdleNotification> {
    entries.iter().filter_map(idle).collect()
}

/// One letter per inbox entry: `p` plain text, `i` idle notification, `o`
/// another protocol message.
fn shape(entries: &[InboxMessage]) -> String {
    entries
        .iter()
        .map(|m| match (is_plain(m), idle(m)) {
            (true, _) => 'p',
            (false, Some(_)) => 'i',
            (false, None) => 'o',
        })
        .collect()
}

/// Spawns an echo teammate (which answers every lead message to the lead) and
/// runs the initial turn plus [`TURNS`] message turns, one at a time.
async fn echo_turns(f: &Fixture) {
    let mut req = SpawnRequest::new("echo", teamhost_tests::ECHO, "hello", f.dir("echo"));
    req.settings.auto_claim = false;
    f.host.spawn(&f.name, req).await.unwrap();
    f.settle().await;
    for i in 0..TURNS {
        f.host
            .send_as_lead(&f.name, "echo", &format!("m{i}"), None)
            .unwrap();
        f.settle().await;
    }
}

/// `InboxChanged` events for the lead's inbox received so far.
fn lead_inbox_events(events: &mut Receiver<Event>) -> usize {
    let mut n = 0;
    loop {
        match events.try_recv() {
            Ok(Event::InboxChanged { agent, .. }) if agent == LEAD => n += 1,
            Ok(_) | Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty) | Err(TryRecvError::Closed) => return n,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_puts_every_idle_notification_in_the_lead_inbox() {
    let f = fixture("notify-all", NotificationLevel::All);
    echo_turns(&f).await;

    let inbox = f.lead_inbox();
    // Each turn: the echo, then the idle notification after it.
    assert_eq!(shape(&inbox), "pi".repeat(TURNS + 1), "{inbox:#?}");
    assert!(idles(&inbox).iter().all(|n| n.from == "echo"));
    assert!(
        idles(&f.team.history(LEAD).unwrap()).is_empty(),
        "nothing was consumed or kept out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changes_keeps_repeated_available_notifications_in_the_history_only() {
    let f = fixture("notify-changes", NotificationLevel::StateChanges);
    echo_turns(&f).await;

    let inbox = f.lead_inbox();
    // Every echo is delivered; only the first turn's idle notification is.
    let mut want = "pi".to_string();
    want += &"p".repeat(TURNS);
    assert_eq!(shape(&inbox), want, "{inbox:#?}");
    let texts: Vec<&str> = inbox
        .iter()
        .filter(|m| is_plain(m))
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(texts, ["hello", "m0", "m1", "m2"]);

    let history = f.team.history(LEAD).unwrap();
    let kept_out = idles(&history);
    assert_eq!(kept_out.len(), TURNS, "{history:#?}");
    assert_eq!(
        history.len(),
        TURNS,
        "only idle notifications: {history:#?}"
    );
    assert!(history.iter().all(|m| m.read && m.from == "echo"));
    assert!(history.iter().all(|m| m.extra.contains_key("consumedAt")));
    assert!(kept_out
        .iter()
        .all(|n| n.idle_reason.as_deref() == Some("available") && n.completed_task_id.is_none()));
    // Inbox and history together hold one notification per turn.
    assert_eq!(idles(&inbox).len() + kept_out.len(), TURNS + 1);
    // The one delivered is the first: older than every one kept out.
    let first = &idles(&inbox)[0];
    assert!(kept_out.iter().all(|n| n.timestamp >= first.timestamp));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changes_delivers_a_completed_task_and_plain_messages_but_not_a_plain_idle() {
    let f = fixture("notify-task", NotificationLevel::StateChanges);
    let dir = f.dir("probe");
    let mut req = common::probe_request("probe", "hello", &dir);
    req.settings.auto_claim = true;
    f.host.spawn(&f.name, req).await.unwrap();
    f.settle().await;
    // A message turn: the probe answers `reply` with `ack` to the lead.
    f.host
        .send_as_lead(&f.name, "probe", "reply", None)
        .unwrap();
    f.settle().await;
    // A task turn: the probe claims the task and completes it.
    f.team
        .create_task(NewTask {
            subject: "do it".into(),
            ..Default::default()
        })
        .unwrap();
    f.settle().await;
    assert_eq!(f.team.task("1").unwrap().status, TaskStatus::Completed);

    let inbox = f.lead_inbox();
    // First idle, the ack, the completed task's idle.
    assert_eq!(shape(&inbox), "ipi", "{inbox:#?}");
    assert_eq!(inbox[1].text, "ack");
    let delivered = idles(&inbox);
    assert_eq!(delivered[0].completed_task_id, None, "the first");
    assert_eq!(delivered[1].completed_task_id.as_deref(), Some("1"));
    assert_eq!(delivered[1].completed_status.as_deref(), Some("resolved"));

    // The message turn's plain "available" went to the history only.
    let kept_out = idles(&f.team.history(LEAD).unwrap());
    assert_eq!(kept_out.len(), 1, "{kept_out:#?}");
    assert_eq!(kept_out[0].idle_reason.as_deref(), Some("available"));
    assert_eq!(kept_out[0].completed_task_id, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_keeps_every_idle_notification_out_of_the_inbox_and_in_the_history() {
    let f = fixture("notify-none", NotificationLevel::None);
    echo_turns(&f).await;

    let inbox = f.lead_inbox();
    assert_eq!(shape(&inbox), "p".repeat(TURNS + 1), "{inbox:#?}");
    let kept_out = idles(&f.team.history(LEAD).unwrap());
    assert_eq!(kept_out.len(), TURNS + 1);
    assert!(kept_out.iter().all(|n| n.from == "echo"));

    // Protocol messages other than idle notifications are still delivered:
    // the shutdown approval and the host's notice that echo left.
    let report = bounded(
        "the shutdown",
        f.host
            .shutdown_team(&f.name, "done", Duration::from_secs(20)),
    )
    .await
    .unwrap();
    assert_eq!(report.stopped, ["echo"]);
    let inbox = f.lead_inbox();
    let approved = inbox.iter().any(|m| {
        matches!(
            ProtocolMessage::parse(&m.text).protocol(),
            Some(ProtocolMessage::ShutdownApproved(_))
        )
    });
    assert!(approved, "{inbox:#?}");
    assert!(idles(&inbox).is_empty());
}

/// A teammate that never writes to the lead: under `none` the lead's inbox
/// sees no write at all (nothing would wake a lead); under `all` it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suppressed_notification_writes_nothing_to_the_lead_inbox() {
    for (level, name) in [
        (NotificationLevel::None, "quiet-none"),
        (NotificationLevel::All, "quiet-all"),
    ] {
        let f = fixture(name, level);
        let mut events = f.host.events();
        f.probe("probe", "hello").await;
        f.settle().await;
        for i in 0..TURNS {
            f.host
                .send_as_lead(&f.name, "probe", &format!("m{i}"), None)
                .unwrap();
            f.settle().await;
        }
        let history = idles(&f.team.history(LEAD).unwrap()).len();
        let inbox = idles(&f.lead_inbox()).len();
        let writes = lead_inbox_events(&mut events);
        match level {
            NotificationLevel::None => {
                assert_eq!((inbox, history), (0, TURNS + 1));
                assert_eq!(writes, 0, "no write to the lead's inbox");
                assert!(!f.team.file_paths().unwrap().inbox(LEAD).unwrap().exists());
            }
            _ => {
                assert_eq!((inbox, history), (TURNS + 1, 0));
                assert!(writes > TURNS, "{writes} inbox events");
            }
        }
    }
}

/// A plain turn's note (the message a resume would deliver again) is
/// cleared in the idle notification's blocking task: once the teammate is
/// idle, after its first turn and after each message turn, no note is
/// left, whether the notification went to the lead's inbox (`all`) or only
/// to its history (`none`).
#[tokio::test]
async fn a_plain_turn_leaves_no_note_once_its_idle_notification_is_stored() {
    for (level, name) in [
        (NotificationLevel::All, "note-all"),
        (NotificationLevel::None, "note-none"),
    ] {
        let f = fixture(name, level);
        echo_turns(&f).await;
        let note = teamhost::home::Home::new(&f.home)
            .kept(&f.name, "echo", teamhost::home::Kept::Turn)
            .unwrap();
        assert!(
            !note.exists(),
            "{name}: the turn's note {} is still there after the turn",
            note.display()
        );
        let history = f.team.history("team-lead").unwrap();
        let stored = idles(&history).len() + idles(&f.lead_inbox()).len();
        assert!(
            stored > TURNS,
            "{name}: the idle notifications of the {} turns were stored ({stored} found)",
            TURNS + 1
        );
    }
}
