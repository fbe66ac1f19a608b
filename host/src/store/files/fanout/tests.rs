use std::path::Path;
use std::time::{Duration, Instant};

use super::super::inotify::Inotify;
use super::super::lock::hold_flock_elsewhere;
use super::*;
use crate::store::backend::TeamStore;
use crate::store::{NewTeam, OutgoingMessage, Store};

fn entry(text: &str) -> InboxMessage {
    OutgoingMessage::new("team-lead", text).into_entry()
}

fn texts(store: &FileStore, agent: &str) -> Vec<String> {
    store
        .read_inbox("t", agent)
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect()
}

fn team(dir: &Path) -> FileStore {
    Store::new(dir)
        .team("t")
        .unwrap()
        .create(NewTeam::default())
        .unwrap();
    let store = FileStore::new(dir);
    std::fs::create_dir_all(store.paths("t").unwrap().inboxes_dir()).unwrap();
    store
}

#[test]
fn each_inbox_gets_its_entries_in_one_write_in_order_even_when_named_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = team(dir.path());
    store.append_inbox("t", "b", &[entry("before")]).unwrap();
    let batch = vec![
        ("b".to_string(), vec![entry("b1")]),
        ("a".to_string(), vec![entry("a1"), entry("a2")]),
        ("b".to_string(), vec![entry("b2")]),
    ];
    store.append_inboxes("t", &batch).unwrap();
    assert_eq!(texts(&store, "a"), ["a1", "a2"]);
    assert_eq!(texts(&store, "b"), ["before", "b1", "b2"]);
    let inboxes = store.paths("t").unwrap().inboxes_dir();
    let strays: Vec<String> = std::fs::read_dir(&inboxes)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp.") || n.ends_with(".lock"))
        .collect();
    assert!(strays.is_empty(), "no new version or lock left: {strays:?}");
}

#[test]
fn an_inbox_whose_lock_is_held_elsewhere_does_not_hold_up_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let store = team(dir.path());
    let inboxes = store.paths("t").unwrap().inboxes_dir();
    let busy = store.paths("t").unwrap().inbox("busy").unwrap();
    // Another process's hold on `busy`: a descriptor of its own.
    let held = hold_flock_elsewhere(&busy);
    let watch = Inotify::watch(&inboxes, libc::IN_MOVED_TO).unwrap();
    let names = ["a", "busy", "c"];
    let broadcast = {
        let store = store.clone();
        std::thread::spawn(move || {
            let batch: Vec<_> = names
                .iter()
                .map(|n| (n.to_string(), vec![entry(&format!("to {n}"))]))
                .collect();
            store.append_inboxes("t", &batch)
        })
    };
    // `a` and `c` are written while `busy` is still held.
    let until = Instant::now() + Duration::from_secs(30);
    while !(texts(&store, "a").len() == 1 && texts(&store, "c").len() == 1) {
        assert!(watch.wait(until), "a and c were not written within 30 s");
        watch.drain(|_, _| {});
    }
    assert!(texts(&store, "busy").is_empty(), "busy waits for its lock");
    assert!(
        !broadcast.is_finished(),
        "the broadcast waits for busy's lock"
    );
    drop(held);
    broadcast.join().unwrap().unwrap();
    assert_eq!(texts(&store, "busy"), ["to busy"]);
    assert_eq!(texts(&store, "a"), ["to a"], "written once");
}

#[test]
fn drops_waiting_for_an_inbox_ride_in_the_broadcast_s_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = team(dir.path());
    let a = store.paths("t").unwrap().inbox("a").unwrap();
    drops::Parcel::leave(&a, &[entry("waiting")]).unwrap();
    let batch = vec![
        ("a".to_string(), vec![entry("broadcast")]),
        ("b".to_string(), vec![entry("broadcast")]),
    ];
    store.append_inboxes("t", &batch).unwrap();
    assert_eq!(texts(&store, "a"), ["broadcast", "waiting"]);
    assert_eq!(std::fs::read_dir(drops::drops_dir(&a)).unwrap().count(), 0);
}

#[test]
fn a_broadcast_wider_than_one_group_reaches_every_inbox_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = team(dir.path());
    let names: Vec<String> = (0..GROUP * 2 + 3).map(|i| format!("m{i}")).collect();
    let batch: Vec<_> = names
        .iter()
        .map(|n| (n.clone(), vec![entry(&format!("to {n}"))]))
        .collect();
    store.append_inboxes("t", &batch).unwrap();
    for n in &names {
        assert_eq!(texts(&store, n), [format!("to {n}")]);
    }
}
