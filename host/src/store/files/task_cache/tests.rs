//! The cache against changes made behind its back, the way another process
//! or Claude Code makes them: created, rewritten in place (same size too),
//! replaced by rename, removed, set aside, and the directory replaced — in
//! inotify mode and in stat mode.

use super::*;
use serde_json::json;

fn task_json(id: u64, subject: &str) -> Vec<u8> {
    serde_json::to_vec_pretty(&json!({
        "id": id.to_string(),
        "subject": subject,
        "description": "",
        "status": "pending",
        "blocks": [],
        "blockedBy": []
    }))
    .unwrap()
}

fn subjects(caches: &TaskCaches, dir: &Path) -> Vec<String> {
    caches
        .list(dir)
        .unwrap()
        .into_iter()
        .map(|t| format!("{}:{}", t.id, t.subject))
        .collect()
}

fn each_mode(test: impl Fn(&TaskCaches, &Path)) {
    for caches in [TaskCaches::default(), TaskCaches::stat_only()] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tasks");
        std::fs::create_dir_all(&dir).unwrap();
        test(&caches, &dir);
    }
}

#[test]
fn a_listing_sees_every_kind_of_change_made_by_others() {
    each_mode(|caches, dir| {
        assert!(subjects(caches, dir).is_empty());
        std::fs::write(dir.join("1.json"), task_json(1, "one")).unwrap();
        std::fs::write(dir.join("2.json"), task_json(2, "two")).unwrap();
        assert_eq!(subjects(caches, dir), ["1:one", "2:two"]);

        // Rewritten in place with the same size (Claude Code's way), at once.
        std::fs::write(dir.join("1.json"), task_json(1, "uno")).unwrap();
        assert_eq!(subjects(caches, dir), ["1:uno", "2:two"]);

        // Replaced by a rename (teamhost's way).
        std::fs::write(dir.join("2.json.tmp.x"), task_json(2, "dos")).unwrap();
        std::fs::rename(dir.join("2.json.tmp.x"), dir.join("2.json")).unwrap();
        assert_eq!(subjects(caches, dir), ["1:uno", "2:dos"]);

        // Removed.
        std::fs::remove_file(dir.join("1.json")).unwrap();
        assert_eq!(subjects(caches, dir), ["2:dos"]);
        assert_eq!(caches.max_id(dir).unwrap(), 2);
    });
}

#[test]
fn files_that_do_not_parse_are_skipped_but_their_ids_stay_used() {
    each_mode(|caches, dir| {
        std::fs::write(dir.join("3.json"), b"{ half").unwrap();
        std::fs::write(dir.join("1.json"), task_json(1, "one")).unwrap();
        assert_eq!(subjects(caches, dir), ["1:one"]);
        assert_eq!(caches.max_id(dir).unwrap(), 3);
        // Set aside, as a writer does with a corrupt file.
        std::fs::rename(
            dir.join("3.json"),
            dir.join("3.json.corrupt-20260101T000000Z"),
        )
        .unwrap();
        assert_eq!(
            caches.max_id(dir).unwrap(),
            3,
            "a quarantined id is never reused"
        );
        // Fixed in place: read again.
        std::fs::write(dir.join("1.json"), b"not json").unwrap();
        assert!(subjects(caches, dir).is_empty());
        std::fs::write(dir.join("1.json"), task_json(1, "fixed")).unwrap();
        assert_eq!(subjects(caches, dir), ["1:fixed"]);
    });
}

#[test]
fn a_replaced_directory_is_read_again_from_scratch() {
    each_mode(|caches, dir| {
        std::fs::write(dir.join("1.json"), task_json(1, "old team")).unwrap();
        assert_eq!(subjects(caches, dir), ["1:old team"]);
        std::fs::remove_dir_all(dir).unwrap();
        assert!(subjects(caches, dir).is_empty());
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("1.json"), task_json(1, "new team")).unwrap();
        std::fs::write(dir.join("7.json"), task_json(7, "seven")).unwrap();
        assert_eq!(subjects(caches, dir), ["1:new team", "7:seven"]);
        assert_eq!(caches.max_id(dir).unwrap(), 7);
    });
}

#[test]
fn only_changed_files_are_read_again() {
    // In inotify mode, after a full listing only files named by events are
    // marked for reading again.
    let caches = TaskCaches::default();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 1..=50 {
        std::fs::write(dir.join(format!("{i}.json")), task_json(i, "t")).unwrap();
    }
    assert_eq!(caches.list(&dir).unwrap().len(), 50);
    let teams = caches.teams.lock().unwrap();
    let team = teams.get(&dir).unwrap();
    assert!(team.watch.is_some(), "this machine has inotify");
    assert!(team.complete && team.dirty.is_empty());
    drop(teams);
    std::fs::write(dir.join("7.json"), task_json(7, "changed")).unwrap();
    let mut teams = caches.teams.lock().unwrap();
    let team = teams.get_mut(&dir).unwrap();
    let mut named = BTreeSet::new();
    team.watch
        .as_ref()
        .unwrap()
        .drain(|_, name| named.extend(task_file_id(name)));
    assert_eq!(named, BTreeSet::from([7]), "one file changed, one named");
    team.dirty.extend(named);
    drop(teams);
    let got = caches.list(&dir).unwrap();
    assert_eq!(got[6].subject, "changed");
    assert_eq!(got.len(), 50);
}
