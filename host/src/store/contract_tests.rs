//! The contract every [`TeamStore`] keeps, run against each backend: the
//! file store (on a temporary home), the memory store and the NATS store (on
//! a `nats-server` of its own; skipped with a message when none is
//! installed, unless `$CI` is set). A backend that passes here can stand
//! behind [`Store`] without the rules above noticing.

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use super::backend::HistoryCursor;
use super::*;
use crate::error::Error;

/// Runs `check` on a fresh store of each backend. Two handles on the same
/// backend stand for two processes: `other` has no observer.
fn each_backend(check: impl Fn(&str, Store, Store)) {
    let tmp = tempfile::tempdir().unwrap();
    let files = Arc::new(FileStore::new(tmp.path()));
    check(
        "files",
        Store::with_backend(files.clone()),
        Store::with_backend(files),
    );
    let memory = Arc::new(MemoryStore::new());
    check(
        "memory",
        Store::with_backend(memory.clone()),
        Store::with_backend(memory),
    );
    if let Some(server) = teamhost_tests::nats_server::NatsServer::start_or_skip("store contract") {
        // Two connections: two processes.
        let url = NatsUrl::parse(&server.url("contract")).unwrap();
        let one = Arc::new(NatsStore::connect(&url).unwrap());
        let two = Arc::new(NatsStore::connect(&url).unwrap());
        check("nats", Store::with_backend(one), Store::with_backend(two));
    }
}

fn team_of(store: &Store) -> Team {
    let team = store.team("T one").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "a".into(),
        ..Default::default()
    })
    .unwrap();
    team
}

#[test]
fn a_team_is_created_once_listed_and_deleted_with_everything_in_it() {
    each_backend(|kind, store, _| {
        let team = team_of(&store);
        assert_eq!(team.name(), "t-one", "{kind}");
        assert!(matches!(
            team.create(NewTeam::default()),
            Err(Error::TeamExists { .. })
        ));
        assert_eq!(store.list_teams().unwrap(), ["t-one"], "{kind}");
        team.deliver("a", OutgoingMessage::new("team-lead", "hi"))
            .unwrap();
        team.create_task(NewTask {
            subject: "s".into(),
            ..Default::default()
        })
        .unwrap();
        team.delete(true).unwrap();
        assert!(!team.exists(), "{kind}");
        assert!(store.list_teams().unwrap().is_empty(), "{kind}");
        assert!(team.read_inbox("a").unwrap().is_empty(), "{kind}");
        assert!(team.list_tasks().unwrap().is_empty(), "{kind}");
        assert!(matches!(team.config(), Err(Error::TeamNotFound { .. })));
    });
}

#[test]
fn a_failed_config_change_writes_nothing() {
    each_backend(|kind, store, _| {
        let team = team_of(&store);
        let before = team.config().unwrap();
        let r: Result<()> = team.update_config(|c| {
            c.description = Some("half done".into());
            Err(Error::StoreRule("refused".into()))
        });
        assert!(r.is_err());
        assert_eq!(team.config().unwrap(), before, "{kind}");
    });
}

#[test]
fn task_ids_are_never_reused_and_dependencies_follow_deletions() {
    each_backend(|kind, store, _| {
        let team = team_of(&store);
        let new = |s: &str, by: &[&str]| NewTask {
            subject: s.into(),
            blocked_by: by.iter().map(|b| b.to_string()).collect(),
            ..Default::default()
        };
        team.create_task(new("one", &[])).unwrap();
        team.create_task(new("two", &["1"])).unwrap();
        team.create_task(new("three", &[])).unwrap();
        assert!(team.create_task(new("bad", &["9"])).is_err(), "{kind}");
        assert_eq!(
            team.list_tasks().unwrap().len(),
            3,
            "{kind}: nothing half made"
        );
        assert_eq!(team.task("1").unwrap().blocks, ["2"], "{kind}");
        assert!(team.add_dependency("2", "1").is_err(), "{kind}: a cycle");

        team.delete_task("3").unwrap();
        team.delete_task("1").unwrap();
        assert!(team.task("2").unwrap().blocked_by.is_empty(), "{kind}");
        let four = team.create_task(new("four", &[])).unwrap();
        assert_eq!(four.id, "4", "{kind}: 3 is not reused");
    });
}

#[test]
fn claims_follow_the_rules_whoever_holds_the_store() {
    each_backend(|kind, store, other| {
        let team = team_of(&store);
        let there = other.team("t-one").unwrap();
        team.create_task(NewTask {
            subject: "x".into(),
            ..Default::default()
        })
        .unwrap();
        assert!(matches!(
            team.claim_task("1", "a", true).unwrap(),
            ClaimOutcome::Claimed(_)
        ));
        match there.claim_task("1", "b", true).unwrap() {
            ClaimOutcome::Refused { reason, .. } => {
                assert_eq!(reason, ClaimRefusal::AlreadyClaimed, "{kind}")
            }
            other => panic!("{kind}: {other:?}"),
        }
        match there.claim_task("7", "b", true).unwrap() {
            ClaimOutcome::Refused { reason, .. } => {
                assert_eq!(reason, ClaimRefusal::TaskNotFound, "{kind}")
            }
            other => panic!("{kind}: {other:?}"),
        }
        let gone = there.unassign_agent("a", "a@t-one", false).unwrap();
        assert_eq!(gone.tasks, [("1".to_string(), "x".to_string())], "{kind}");
        assert_eq!(team.task("1").unwrap().status, TaskStatus::Pending);
    });
}

#[test]
fn claim_next_takes_the_lowest_claimable_task_once_and_never_for_a_busy_claimer() {
    each_backend(|kind, store, other| {
        let team = team_of(&store);
        let there = other.team("t-one").unwrap();
        for subject in ["first", "after first", "third"] {
            team.create_task(NewTask {
                subject: subject.into(),
                ..Default::default()
            })
            .unwrap();
        }
        team.add_dependency("1", "2").unwrap();
        let hint = there.find_claimable().unwrap().map(|t| t.id);
        assert_eq!(hint.as_deref(), Some("1"), "{kind}");
        let got = team.claim_next("a").unwrap().map(|t| t.id);
        assert_eq!(got.as_deref(), Some("1"), "{kind}");
        assert_eq!(team.claim_next("a").unwrap(), None, "{kind}: a is busy");
        // #2 waits for #1, so b gets #3, and then nothing is left for c.
        let got = there.claim_next("b").unwrap().map(|t| t.id);
        assert_eq!(got.as_deref(), Some("3"), "{kind}");
        assert_eq!(there.claim_next("c").unwrap(), None, "{kind}");
        assert_eq!(team.find_claimable().unwrap(), None, "{kind}");
        let done = TaskUpdate {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        };
        there.update_task("1", done, "a").unwrap();
        let hint = team.find_claimable().unwrap().map(|t| t.id);
        assert_eq!(hint.as_deref(), Some("2"), "{kind}");
        let got = there.claim_next("c").unwrap().unwrap();
        assert_eq!(
            (got.id.as_str(), got.owner.as_deref(), got.status),
            ("2", Some("c"), TaskStatus::InProgress),
            "{kind}"
        );

        // Eight claimers on two handles race for five tasks: five win one
        // task each, three get none.
        let ids: Vec<String> = (0..5)
            .map(|i| {
                team.create_task(NewTask {
                    subject: format!("race {i}"),
                    ..Default::default()
                })
                .unwrap()
                .id
            })
            .collect();
        let won: Vec<(String, Option<Task>)> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..8)
                .map(|i| {
                    let (team, there) = (&team, &there);
                    s.spawn(move || {
                        let me = format!("r{i}");
                        let side = if i % 2 == 0 { team } else { there };
                        let got = side.claim_next(&me).unwrap();
                        (me, got)
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let mut claimed: Vec<String> = Vec::new();
        for (me, got) in &won {
            if let Some(t) = got {
                assert_eq!(t.owner.as_deref(), Some(me.as_str()), "{kind}");
                assert_eq!(
                    team.task(&t.id).unwrap().owner.as_deref(),
                    Some(me.as_str())
                );
                claimed.push(t.id.clone());
            }
        }
        claimed.sort_by_key(|id| id.parse::<u64>().unwrap());
        assert_eq!(claimed, ids, "{kind}: each task won once: {won:?}");
    });
}

#[test]
fn taking_moves_messages_to_the_history_and_a_cursor_reads_only_the_new_ones() {
    each_backend(|kind, store, other| {
        let team = team_of(&store);
        let there = other.team("t-one").unwrap();
        for text in ["one", "two", "three"] {
            there
                .deliver("a", OutgoingMessage::new("team-lead", text))
                .unwrap();
        }
        let taken = team.take_where("a", |m| m.text != "two").unwrap();
        let texts: Vec<&str> = taken.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["one", "three"], "{kind}");
        assert_eq!(team.unread("a").unwrap()[0].text, "two", "{kind}");

        let backend = store.backend();
        let first = backend
            .history_since("t-one", "a", HistoryCursor::default())
            .unwrap();
        assert_eq!(first.entries.len(), 2, "{kind}");
        assert!(first.entries[0].extra.contains_key("consumedAt"), "{kind}");
        team.take_unread("a").unwrap();
        let next = backend.history_since("t-one", "a", first.cursor).unwrap();
        assert!(!next.restarted, "{kind}");
        let texts: Vec<&str> = next.entries.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["two"], "{kind}");
        assert_eq!(team.agents_with_mail().unwrap(), ["a"], "{kind}");
    });
}

#[test]
fn a_broadcast_gives_every_other_member_one_entry_of_its_own_and_batched_sends_keep_order() {
    each_backend(|kind, store, _other| {
        let team = team_of(&store);
        for name in ["b", "c"] {
            team.add_member(NewMember {
                name: name.into(),
                ..Default::default()
            })
            .unwrap();
        }
        let to = team.broadcast(OutgoingMessage::new("a", "to all")).unwrap();
        let mut to_sorted = to.clone();
        to_sorted.sort();
        assert_eq!(to_sorted, ["b", "c", "team-lead"], "{kind}: not the sender");
        let mut ids = std::collections::BTreeSet::new();
        for name in &to {
            let got = team.unread(name).unwrap();
            assert_eq!(got.len(), 1, "{kind}: {name}");
            assert_eq!(got[0].text, "to all", "{kind}");
            ids.insert(got[0].msg_id.clone().expect("stamped"));
        }
        assert_eq!(ids.len(), to.len(), "{kind}: one msg_id each");
        assert!(team.unread("a").unwrap().is_empty(), "{kind}");
        let sent = team
            .send_all(
                "b",
                ["x", "y", "z"]
                    .map(|t| OutgoingMessage::new("team-lead", t))
                    .to_vec(),
            )
            .unwrap();
        assert_eq!(sent.len(), 3, "{kind}");
        let texts: Vec<String> = team
            .unread("b")
            .unwrap()
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(texts, ["to all", "x", "y", "z"], "{kind}");
        let refused = team.send_all("nobody", vec![OutgoingMessage::new("team-lead", "?")]);
        assert!(
            matches!(refused, Err(Error::MemberNotFound { .. })),
            "{kind}"
        );
    });
}

/// Records what a feed hears.
struct Heard(Mutex<mpsc::Sender<StoreEvent>>);

impl StoreObserver for Heard {
    fn changed(&self, event: &StoreEvent) {
        let _ = self.0.lock().unwrap().send(event.clone());
    }
}

#[test]
fn the_feed_hears_writes_made_through_another_handle() {
    each_backend(|kind, store, other| {
        let team = team_of(&store);
        let (tx, rx) = mpsc::channel();
        let _feed = team.watch(Arc::new(Heard(Mutex::new(tx)))).unwrap();
        let there = other.team("t-one").unwrap();
        there
            .deliver("a", OutgoingMessage::new("team-lead", "wake"))
            .unwrap();
        let want = StoreEvent::InboxAppended {
            team: "t-one".into(),
            agent: "a".into(),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(e) if e == want => break,
                Ok(_) => continue,
                Err(e) => panic!("{kind}: the append was not heard: {e}"),
            }
        }
    });
}

#[test]
fn members_added_in_one_write_are_those_added_one_by_one() {
    each_backend(|kind, store, _| {
        let wanted = [
            "w",
            "w",
            "team-lead",
            "x",
            "w",
            "y",
            "z",
            "v",
            "u",
            "t",
            "s",
            "r",
        ];
        let new = |name: &str| NewMember {
            name: name.into(),
            // A colour chosen that a member has already: colours need not
            // differ, and the cycle still goes on in join order.
            color: (name == "y").then(|| "blue".to_string()),
            ..Default::default()
        };
        let one_by_one = store.team("one by one").unwrap();
        one_by_one.create(NewTeam::default()).unwrap();
        let singly: Vec<String> = wanted
            .iter()
            .map(|n| match one_by_one.add_member(new(n)) {
                Ok(m) => format!("{} {:?}", m.name, m.color),
                Err(e) => format!("refused: {e}"),
            })
            .collect();
        let (tx, rx) = mpsc::channel();
        let heard = store.clone().with_observer(Arc::new(Heard(Mutex::new(tx))));
        let batch = heard.team("batch").unwrap();
        batch.create(NewTeam::default()).unwrap();
        while rx.try_recv().is_ok() {}
        let added = batch.add_members(wanted.iter().map(|n| new(n)).collect());
        let together: Vec<String> = added
            .unwrap()
            .into_iter()
            .map(|r| match r {
                Ok(m) => format!("{} {:?}", m.name, m.color),
                Err(e) => format!("refused: {e}"),
            })
            .collect();
        assert_eq!(together, singly, "{kind}");
        assert!(together[2].starts_with("refused"), "{kind}: {together:?}");
        // The colour rule, written out: the first colour of the cycle
        // no member has (the lead has none), then by member count once all
        // eight are taken (`s` finds 10 members: (10 - 1) mod 8 = 1).
        let expected = [
            ("w", "blue"),
            ("w-2", "green"),
            ("x", "yellow"),
            ("w-3", "purple"),
            ("y", "blue"),
            ("z", "orange"),
            ("v", "pink"),
            ("u", "cyan"),
            ("t", "red"),
            ("s", "green"),
            ("r", "yellow"),
        ]
        .map(|(n, c)| format!("{n} Some({c:?})"));
        let given: Vec<&String> = together
            .iter()
            .filter(|t| !t.starts_with("refused"))
            .collect();
        assert_eq!(given, expected.iter().collect::<Vec<_>>(), "{kind}");
        let written: Vec<StoreEvent> = rx.try_iter().collect();
        assert_eq!(
            written.len(),
            1,
            "{kind}: one write for the batch: {written:?}"
        );
        let names = |team: &Team| -> Vec<String> {
            let config = team.config().unwrap();
            config.members.iter().map(|m| m.name.clone()).collect()
        };
        assert_eq!(names(&batch), names(&one_by_one), "{kind}");
    });
}
