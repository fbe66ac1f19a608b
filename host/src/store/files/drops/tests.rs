use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use super::super::inotify::Inotify;
use super::super::FileStore;
use super::*;
use crate::store::backend::TeamStore;
use crate::store::OutgoingMessage;

fn entry(text: &str) -> InboxMessage {
    OutgoingMessage::new("team-lead", text).into_entry()
}

fn texts(inbox: &[InboxMessage]) -> Vec<&str> {
    inbox.iter().map(|m| m.text.as_str()).collect()
}

/// A team `t` with member inbox `sink`, and that inbox's path.
fn team(dir: &Path) -> (FileStore, PathBuf) {
    crate::store::Store::new(dir)
        .team("t")
        .unwrap()
        .create(crate::store::NewTeam::default())
        .unwrap();
    let store = FileStore::new(dir);
    let path = store.paths("t").unwrap().inbox("sink").unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    (store, path)
}

#[test]
fn a_holder_folds_drops_in_the_order_they_were_left_and_skips_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = dir.path().join("sink.json");
    let (a, b, c) = (entry("a"), entry("b"), entry("c"));
    Parcel::leave(&inbox, std::slice::from_ref(&a)).unwrap();
    Parcel::leave(&inbox, &[b.clone(), c.clone()]).unwrap();
    // Half-written drops are never read.
    std::fs::write(drops_dir(&inbox).join("0-1-2.part"), b"[{").unwrap();
    // `b` is in the inbox already: its holder died before removing its drop.
    let mut doc = vec![b.clone()];
    let pending = Pending::fold(&inbox, &mut doc).unwrap();
    assert_eq!(texts(&doc), ["b", "a", "c"]);
    pending.settle();
    let left: Vec<_> = std::fs::read_dir(drops_dir(&inbox))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        left,
        ["0-1-2.part"],
        "folded drops are removed, the rest kept"
    );
}

#[test]
fn a_drop_that_does_not_parse_is_kept_aside_and_its_writer_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = dir.path().join("sink.json");
    let parcel = Parcel::leave(&inbox, &[entry("a")]).unwrap();
    std::fs::write(&parcel.path, b"not json").unwrap();
    let mut doc = Vec::new();
    Pending::fold(&inbox, &mut doc).unwrap().settle();
    assert!(doc.is_empty());
    assert_eq!(
        std::fs::read(bad_path(&parcel.path)).unwrap(),
        b"not json",
        "kept, not deleted"
    );
    let err = parcel.committed().unwrap_err().to_string();
    assert!(err.contains("could not be read back"), "{err}");
}

#[test]
fn only_stamped_entries_go_through_the_drop_box() {
    let mut unstamped = entry("x");
    unstamped.msg_id = None;
    assert!(can_drop(&[entry("a"), entry("b")]));
    assert!(!can_drop(&[entry("a"), unstamped]));
    assert!(!can_drop(&[]));
}

/// Holds `inbox`'s flock as another process would (a descriptor of its
/// own), until dropped.
struct ForeignHolder {
    _held: std::fs::File,
}

impl ForeignHolder {
    fn take(inbox: &Path) -> ForeignHolder {
        ForeignHolder {
            _held: super::super::lock::hold_flock_elsewhere(inbox),
        }
    }
}

/// Waits (on inotify, not by polling) until a drop lands in `watch`'s
/// directory.
fn wait_for_a_drop(watch: &Inotify, dir: &Path) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let landed = std::fs::read_dir(dir)
            .unwrap()
            .any(|e| e.unwrap().path().extension().is_some_and(|x| x == "json"));
        if landed {
            return;
        }
        assert!(watch.wait(until), "no drop was left within 30 s");
        watch.drain(|_, _| {});
    }
}

/// Starts an append of `sent` to `sink` on a thread while another
/// "process" holds the inbox's flock, and returns once its drop is there.
fn append_behind_a_holder(
    store: &FileStore,
    inbox: &Path,
    sent: &InboxMessage,
) -> (ForeignHolder, std::thread::JoinHandle<Result<()>>) {
    std::fs::create_dir_all(drops_dir(inbox)).unwrap();
    let watch = Inotify::watch(&drops_dir(inbox), libc::IN_MOVED_TO).unwrap();
    let holder = ForeignHolder::take(inbox);
    let writer = {
        let (store, sent) = (store.clone(), sent.clone());
        std::thread::spawn(move || store.append_inbox("t", "sink", &[sent]))
    };
    wait_for_a_drop(&watch, &drops_dir(inbox));
    (holder, writer)
}

#[test]
fn a_writer_that_waited_finds_its_entries_written_and_does_not_write_again() {
    let dir = tempfile::tempdir().unwrap();
    let (store, inbox) = team(dir.path());
    let sent = entry("through the drop box");
    let (holder, writer) = append_behind_a_holder(&store, &inbox, &sent);
    // The holder's turn: what another process's append or take does.
    let mut doc: Vec<InboxMessage> = crate::durable::read_array(&inbox).unwrap();
    let pending = Pending::fold(&inbox, &mut doc).unwrap();
    crate::durable::write_json(&inbox, &doc).unwrap();
    pending.settle();
    let written = std::fs::metadata(&inbox).unwrap().ino();
    drop(holder);
    writer.join().unwrap().unwrap();
    let now: Vec<InboxMessage> = crate::durable::read_array(&inbox).unwrap();
    assert_eq!(texts(&now), ["through the drop box"], "delivered once");
    assert_eq!(now[0].msg_id, sent.msg_id);
    assert_eq!(
        std::fs::metadata(&inbox).unwrap().ino(),
        written,
        "the writer did not write again"
    );
}

#[test]
fn a_writer_whose_drop_was_kept_aside_as_unreadable_gets_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (store, inbox) = team(dir.path());
    let (holder, writer) = append_behind_a_holder(&store, &inbox, &entry("lost?"));
    let left = std::fs::read_dir(drops_dir(&inbox))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    std::fs::write(&left, b"{torn").unwrap();
    let mut doc = Vec::new();
    Pending::fold(&inbox, &mut doc).unwrap().settle();
    drop(holder);
    let err = writer.join().unwrap().unwrap_err().to_string();
    assert!(err.contains("could not be read back"), "{err}");
    assert!(bad_path(&left).exists(), "the unreadable drop is kept");
}

#[test]
fn a_writer_that_gets_the_lock_first_writes_its_own_entries_and_the_drop_goes() {
    let dir = tempfile::tempdir().unwrap();
    let (store, inbox) = team(dir.path());
    let sent = entry("mine");
    let (holder, writer) = append_behind_a_holder(&store, &inbox, &sent);
    // The holder leaves without folding (a holder whose own entries were
    // written already does so).
    drop(holder);
    writer.join().unwrap().unwrap();
    let now: Vec<InboxMessage> = crate::durable::read_array(&inbox).unwrap();
    assert_eq!(texts(&now), ["mine"]);
    assert_eq!(std::fs::read_dir(drops_dir(&inbox)).unwrap().count(), 0);
}

#[test]
fn a_holder_that_died_before_removing_the_drops_does_not_deliver_them_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (store, inbox) = team(dir.path());
    let (a, b) = (entry("a"), entry("b"));
    Parcel::leave(&inbox, &[a.clone(), b.clone()]).unwrap();
    // A holder wrote the drop's entries and died before `settle`.
    let mut doc = Vec::new();
    let _never_settled = Pending::fold(&inbox, &mut doc).unwrap();
    crate::durable::write_json(&inbox, &doc).unwrap();
    // The next append, and the take after it.
    store.append_inbox("t", "sink", &[entry("c")]).unwrap();
    let taken = store.take_from_inbox("t", "sink", &mut |_| true).unwrap();
    assert_eq!(texts(&taken), ["a", "b", "c"]);
    assert_eq!(
        std::fs::read_dir(drops_dir(&inbox)).unwrap().count(),
        0,
        "the leftover drop is removed"
    );
    // A take that comes first does not hand them out twice either.
    Parcel::leave(&inbox, &[entry("e")]).unwrap();
    let mut doc = vec![];
    let _never_settled = Pending::fold(&inbox, &mut doc).unwrap();
    crate::durable::write_json(&inbox, &doc).unwrap();
    let taken = store.take_from_inbox("t", "sink", &mut |_| true).unwrap();
    assert_eq!(texts(&taken), ["e"]);
    store.append_inbox("t", "sink", &[entry("d")]).unwrap();
    let taken = store.take_from_inbox("t", "sink", &mut |_| true).unwrap();
    assert_eq!(texts(&taken), ["d"], "the drop of `e` was not folded again");
}

#[test]
fn a_take_delivers_appends_that_waited_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let (store, inbox) = team(dir.path());
    store.append_inbox("t", "sink", &[entry("first")]).unwrap();
    Parcel::leave(&inbox, &[entry("waiting")]).unwrap();
    let taken = store.take_from_inbox("t", "sink", &mut |_| true).unwrap();
    assert_eq!(texts(&taken), ["first", "waiting"]);
    assert!(crate::durable::read_array::<InboxMessage>(&inbox)
        .unwrap()
        .is_empty());
}

#[test]
fn a_writer_whose_drop_went_with_its_team_is_told_the_team_was_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (store, inbox) = team(dir.path());
    let (holder, writer) = append_behind_a_holder(&store, &inbox, &entry("too late"));
    // The team is deleted while the writer waits: its drop goes too.
    std::fs::remove_dir_all(store.paths("t").unwrap().team_dir()).unwrap();
    drop(holder);
    let err = writer.join().unwrap().unwrap_err();
    assert!(matches!(err, Error::TeamDeleted { .. }), "{err}");
}
