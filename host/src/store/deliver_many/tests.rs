use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::store::files::lock::hold_flock_elsewhere;
use crate::store::{FileStore, LockOptions, NewTeam, OutgoingMessage, Store, Team};

fn team(dir: &std::path::Path, timeout: Duration) -> (Team, FileStore) {
    let files = FileStore::new(dir).with_lock_options(LockOptions {
        timeout,
        ..LockOptions::default()
    });
    let store = Store::with_backend(Arc::new(files.clone()));
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    (team, files)
}

fn texts(team: &Team, agent: &str) -> Vec<String> {
    team.read_inbox(agent)
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect()
}

fn prompts(names: &[&str]) -> Vec<(String, OutgoingMessage)> {
    names
        .iter()
        .map(|n| {
            (
                n.to_string(),
                OutgoingMessage::new("team-lead", format!("to {n}")),
            )
        })
        .collect()
}

#[test]
fn each_message_reaches_its_inbox_once_and_a_bad_name_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (team, _) = team(dir.path(), Duration::from_secs(30));
    let results = team.deliver_many(prompts(&["a", "../x", "b"]));
    assert_eq!(results[0].as_ref().unwrap().text, "to a");
    assert!(
        matches!(results[1], Err(Error::InvalidName { .. })),
        "{:?}",
        results[1]
    );
    assert_eq!(results[2].as_ref().unwrap().text, "to b");
    assert_eq!(texts(&team, "a"), ["to a"]);
    assert_eq!(texts(&team, "b"), ["to b"]);
}

/// A batch that fails after some inboxes were written: those keep their
/// one entry (read back, not written twice), and only the inbox that could
/// not be written has an error.
#[test]
fn a_batch_failing_part_way_gives_each_message_its_own_result_without_a_second_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (team, files) = team(dir.path(), Duration::from_millis(300));
    let busy = files.paths("t").unwrap().inbox("busy").unwrap();
    std::fs::create_dir_all(busy.parent().unwrap()).unwrap();
    // Another process's hold on `busy`, kept past the batch and its retry.
    let held = hold_flock_elsewhere(&busy);
    let results = team.deliver_many(prompts(&["a", "busy", "c"]));
    drop(held);
    assert_eq!(results[0].as_ref().unwrap().text, "to a");
    assert!(
        matches!(results[1], Err(Error::LockTimeout { .. })),
        "{:?}",
        results[1]
    );
    assert_eq!(results[2].as_ref().unwrap().text, "to c");
    assert_eq!(texts(&team, "a"), ["to a"], "written once");
    assert_eq!(texts(&team, "c"), ["to c"], "written once");
    assert!(texts(&team, "busy").is_empty());
}
