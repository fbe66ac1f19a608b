//! The index against the scans it replaced, and against lists changed
//! behind its back; the registrations through two stores on one directory
//! (two processes).

use std::sync::Arc;

use super::*;
use crate::store::names::check_distinct;
use crate::store::{FileStore, NewMember, NewTeam, Store};

fn member(name: &str) -> Arc<Member> {
    let value = serde_json::json!({"agentId": format!("{name}@t"), "name": name});
    Arc::new(serde_json::from_value(value).unwrap())
}

/// The scan each registration made before the index: the lowest free
/// number, read off every member's name.
fn scanned_unique(members: &Members, wanted: &str) -> String {
    if !members.iter().any(|m| m.name == wanted) {
        return wanted.to_string();
    }
    (2..)
        .map(|n| format!("{wanted}-{n}"))
        .find(|name| !members.iter().any(|m| m.name == *name))
        .expect("a free number")
}

fn scanned_distinct(members: &Members, name: &str) -> std::result::Result<(), String> {
    check_distinct(name, members.iter().map(|m| m.name.as_str())).map_err(|e| e.to_string())
}

/// A small deterministic generator: the sequence is the same every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[test]
fn the_index_answers_as_the_scans_did_through_every_kind_of_change() {
    // Wanted names that collide, number and look alike (`bob` and `b\u{43e}b`,
    // `Bob`; `echo-3` taken by hand before `echo` gets there).
    let pool = [
        "echo",
        "echo",
        "echo",
        "echo-3",
        "bob",
        "Bob",
        "b\u{43e}b",
        "Zoë",
        "zoë",
        "alice",
        "echo-2",
        "reviewer",
    ];
    let mut rng = Lcg(7);
    let mut members: Arc<Members> = Arc::new(vec![member("team-lead")]);
    let (mut refused, mut carried, mut told_not) = (0, 0, 0);
    for step in 0..600 {
        match rng.below(10) {
            // A registration, as `add_member` makes it.
            0..=5 => {
                let wanted = pool[rng.below(pool.len())];
                let kept = MemberNames::take_kept(&members);
                carried += usize::from(kept.is_some());
                let mut names = kept.unwrap_or_else(|| MemberNames::of(&members));
                let name = names.unique(wanted);
                assert_eq!(name, scanned_unique(&members, wanted), "step {step}");
                let distinct = names.check_distinct(&name).map_err(|e| e.to_string());
                assert_eq!(distinct, scanned_distinct(&members, &name), "step {step}");
                if distinct.is_err() {
                    refused += 1;
                    names.keep(&members);
                    continue;
                }
                Arc::make_mut(&mut members).push(member(&name));
                names.insert(&name);
                names.keep(&members);
            }
            // A flip, told: the index goes over to the changed list.
            6 => {
                let names = MemberNames::take(&members);
                let at = rng.below(members.len());
                let m = Arc::make_mut(&mut Arc::make_mut(&mut members)[at]);
                m.is_active = Some(!m.is_active.unwrap_or(false));
                names.keep(&members);
            }
            // A removal nobody tells the index of (another process's).
            7 if members.len() > 1 => {
                let at = 1 + rng.below(members.len() - 1);
                Arc::make_mut(&mut members).remove(at);
                told_not += 1;
            }
            // A member added behind its back: its name must count.
            8 => {
                let name = format!("echo-{}", 2 + rng.below(12));
                if !members.iter().any(|m| m.name == name) {
                    Arc::make_mut(&mut members).push(member(&name));
                    told_not += 1;
                }
            }
            // A list read anew (a config another process wrote).
            _ => {
                members = Arc::new(members.iter().map(|m| member(&m.name)).collect());
            }
        }
        // Whatever happened, the index for the list now is the list's.
        let names = MemberNames::take(&members);
        assert_eq!(names.names.len(), members.len(), "step {step}");
        for m in members.iter() {
            assert!(
                names.names.contains(&m.name),
                "step {step}: {} missing",
                m.name
            );
        }
        names.keep(&members);
    }
    assert!(
        refused > 10 && carried > 100 && told_not > 50,
        "{refused} {carried} {told_not}"
    );
}

#[test]
fn a_list_changed_behind_the_index_gets_an_index_of_its_own() {
    let mut members: Arc<Members> = Arc::new(vec![member("team-lead"), member("echo")]);
    let mut names = MemberNames::take(&members);
    assert_eq!(names.unique("echo"), "echo-2");
    names.keep(&members);
    // `make_mut` moves the list while the index's weak reference exists:
    // the pushed name is not in the kept index, and is not lost.
    Arc::make_mut(&mut members).push(member("echo-2"));
    assert!(
        MemberNames::take_kept(&members).is_none(),
        "a moved list has no index"
    );
    let mut names = MemberNames::take(&members);
    assert_eq!(names.unique("echo"), "echo-3");
    names.keep(&members);
    // A list that has gone leaves nothing that answers for a new one, and
    // its entry goes at the next keep.
    let gone = Arc::as_ptr(&members) as usize;
    drop(members);
    let members: Arc<Members> = Arc::new(vec![member("team-lead")]);
    let mut names = MemberNames::take(&members);
    assert_eq!(names.unique("echo"), "echo");
    names.keep(&members);
    // (Another test's list may have taken the freed address since: only
    // a live list may be there.)
    let at_gone = kept().lists.get(&gone).map(|(list, _)| list.strong_count());
    assert!(
        at_gone.is_none_or(|live| live > 0),
        "a gone list's index is swept"
    );
}

#[test]
fn a_look_alike_is_refused_naming_the_member_it_looks_like() {
    let members: Arc<Members> = Arc::new(vec![member("team-lead"), member("bob"), member("Zoë")]);
    let names = MemberNames::take(&members);
    for name in ["Bob", "b\u{43e}b", "BOB", "zoë", "Zoe\u{308}"] {
        let err = names.check_distinct(name).unwrap_err().to_string();
        assert_eq!(
            err,
            scanned_distinct(&members, name).unwrap_err(),
            "{name:?}"
        );
        assert!(err.contains("looks like"), "{err}");
    }
    assert!(names.check_distinct("bob-2").is_ok());
    assert!(names.check_distinct("alice").is_ok());
}

/// Two stores on one directory stand for two processes: each has its own
/// cached config and its own index, and each sees the other's writes.
#[test]
fn registrations_see_what_another_process_wrote_to_the_config() {
    let tmp = tempfile::tempdir().unwrap();
    let one = Store::with_backend(Arc::new(FileStore::new(tmp.path())));
    let two = Store::with_backend(Arc::new(FileStore::new(tmp.path())));
    let (a, b) = (one.team("t").unwrap(), two.team("t").unwrap());
    a.create(NewTeam::default()).unwrap();
    let add = |team: &crate::store::Team, name: &str| {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })
        .map(|m| m.name)
    };
    for want in ["echo", "echo-2", "echo-3"] {
        assert_eq!(add(&a, "echo").unwrap(), want);
    }
    assert_eq!(add(&b, "echo").unwrap(), "echo-4");
    assert_eq!(add(&b, "bob").unwrap(), "bob");
    b.remove_member("echo-2").unwrap();
    // `a`'s index was made for the list it wrote; the config changed on
    // disk since, and the answers are the disk's.
    assert_eq!(add(&a, "echo").unwrap(), "echo-2");
    let err = add(&a, "Bob").unwrap_err().to_string();
    assert!(err.contains("looks like \"bob\""), "{err}");
    a.set_active("echo-3", true).unwrap();
    assert_eq!(add(&a, "echo").unwrap(), "echo-5");
    b.set_active("echo", true).unwrap();
    let err = add(&a, "b\u{43e}b").unwrap_err().to_string();
    assert!(err.contains("looks like \"bob\""), "{err}");
    let names: Vec<String> = a
        .config()
        .unwrap()
        .members
        .iter()
        .map(|m| m.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "team-lead",
            "echo",
            "echo-3",
            "echo-4",
            "bob",
            "echo-2",
            "echo-5"
        ]
    );
}

#[test]
fn a_list_that_holds_one_name_twice_is_indexed_and_kept() {
    // Another program may write a config with a name twice; the index
    // holds it once, and a registration goes on as before.
    let mut members: Arc<Members> =
        Arc::new(vec![member("team-lead"), member("echo"), member("echo")]);
    let mut names = MemberNames::take(&members);
    let name = names.unique("echo");
    assert_eq!(name, scanned_unique(&members, "echo"));
    assert!(names.check_distinct(&name).is_ok());
    Arc::make_mut(&mut members).push(member(&name));
    names.insert(&name);
    names.keep(&members);
    let mut names = MemberNames::take_kept(&members).expect("kept for the list");
    assert_eq!(names.unique("echo"), "echo-3");
}
