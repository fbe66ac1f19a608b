//! Mailbox behaviour on real files: append, read, take, history, bad input.

use teamhost::home::Home;
use teamhost::store::{NewMember, NewTeam, OutgoingMessage, Store, Team};
use teamhost::Error;

fn team() -> (tempfile::TempDir, Team) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in ["alice", "bob"] {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })
        .unwrap();
    }
    (tmp, team)
}

#[test]
fn appended_messages_carry_the_current_envelope_and_stay_unread() {
    let (_t, team) = team();
    let sent = team
        .send(
            "alice",
            OutgoingMessage::new("team-lead", "hi").summary("greeting"),
        )
        .unwrap();
    assert_eq!(sent.msg_v, Some(1));
    assert_eq!(sent.kind.as_deref(), Some("message"));
    assert_eq!(sent.msg_id.as_ref().map(|s| s.len()), Some(36));
    assert!(sent.timestamp.ends_with('Z'));
    let raw: serde_json::Value = serde_json::from_slice(
        &std::fs::read(team.file_paths().unwrap().inbox("alice").unwrap()).unwrap(),
    )
    .unwrap();
    let keys: Vec<&str> = raw[0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "from",
            "text",
            "summary",
            "timestamp",
            "msgV",
            "msg_id",
            "type",
            "read"
        ]
    );
    assert_eq!(raw[0]["read"], false);
    assert_eq!(team.unread("alice").unwrap(), vec![sent]);
}

#[test]
fn take_removes_unread_and_legacy_read_entries_and_keeps_them_in_history() {
    let (_t, team) = team();
    let path = team.file_paths().unwrap().inbox("bob").unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // A legacy reader left one entry flagged read; an older writer omitted msgV.
    std::fs::write(
        &path,
        r#"[{"from":"team-lead","text":"old","timestamp":"2026-02-13T10:05:44.590Z","read":true},
            {"from":"alice","text":"new","timestamp":"2026-02-13T10:05:45.000Z","read":false,"color":"blue"}]"#,
    )
    .unwrap();
    team.send("bob", OutgoingMessage::new("team-lead", "newer"))
        .unwrap();
    let unread = team.unread("bob").unwrap();
    assert_eq!(unread.len(), 2);
    let taken = team.take_unread("bob").unwrap();
    assert_eq!(
        taken.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["new", "newer"]
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap().trim(), "[]");
    let history = team.history("bob").unwrap();
    assert_eq!(
        history.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["old", "new", "newer"]
    );
    assert!(history[0].extra.contains_key("consumedAt"));
    assert!(team.take_unread("bob").unwrap().is_empty());
}

#[test]
fn take_where_consumes_only_the_chosen_entries_in_order() {
    let (_t, team) = team();
    for text in ["a", "shutdown", "b"] {
        team.send("alice", OutgoingMessage::new("bob", text))
            .unwrap();
    }
    let taken = team.take_where("alice", |m| m.text == "shutdown").unwrap();
    assert_eq!(taken.len(), 1);
    let left: Vec<_> = team
        .unread("alice")
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(left, ["a", "b"]);
}

#[test]
fn sending_to_a_non_member_is_refused_with_the_member_list() {
    let (_t, team) = team();
    let err = team
        .send("carol", OutgoingMessage::new("team-lead", "hi"))
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::MemberNotFound { .. }));
    assert!(msg.contains("carol") && msg.contains("alice, bob"), "{msg}");
    assert!(!team.file_paths().unwrap().inbox("carol").unwrap().exists());
}

#[test]
fn broadcast_reaches_everyone_but_the_sender() {
    let (_t, team) = team();
    let to = team
        .broadcast(OutgoingMessage::new("alice", "all"))
        .unwrap();
    assert_eq!(to, ["team-lead", "bob"]);
    assert_eq!(team.unread("bob").unwrap().len(), 1);
    assert_eq!(team.unread("team-lead").unwrap().len(), 1);
    assert!(team.unread("alice").unwrap().is_empty());
}

#[test]
fn a_corrupt_inbox_is_moved_aside_and_the_new_message_is_still_delivered() {
    let (_t, team) = team();
    let path = team.file_paths().unwrap().inbox("alice").unwrap();
    std::fs::write(&path, b"[{\"from\": \"x\", \"te").unwrap();
    // Readers report it without touching it.
    let err = team.unread("alice").unwrap_err().to_string();
    assert!(err.contains("alice.json"), "{err}");
    // A writer moves it aside, keeps its bytes, and delivers onto a fresh inbox.
    team.send("alice", OutgoingMessage::new("bob", "after"))
        .unwrap();
    let aside: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("alice.json.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read(&aside[0]).unwrap(),
        b"[{\"from\": \"x\", \"te"
    );
    let unread = team.unread("alice").unwrap();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0].text, "after");
}

#[test]
fn unknown_entry_fields_survive_a_take_of_other_entries() {
    let (_t, team) = team();
    let path = team.file_paths().unwrap().inbox("alice").unwrap();
    std::fs::write(
        &path,
        r#"[{"from":"bob","text":"keep","timestamp":"t","read":false,"futureField":{"a":1}},
            {"from":"team-lead","text":"take","timestamp":"t","read":false}]"#,
    )
    .unwrap();
    team.take_where("alice", |m| m.text == "take").unwrap();
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(raw[0]["futureField"], serde_json::json!({"a": 1}));
}

#[test]
fn a_take_cut_between_its_history_and_its_inbox_rewrite_hands_nothing_out_twice() {
    let (_t, team) = team();
    let inbox = team.file_paths().unwrap().inbox("alice").unwrap();
    for text in ["one", "two"] {
        team.send("alice", OutgoingMessage::new("team-lead", text))
            .unwrap();
    }
    // What a take that died after its (synced) history append and before
    // the inbox's rewrite leaves: both entries in the history and still in
    // the inbox.
    let before = std::fs::read(&inbox).unwrap();
    let taken = team.take_unread("alice").unwrap();
    assert_eq!(taken.len(), 2);
    std::fs::write(&inbox, &before).unwrap();
    team.send("alice", OutgoingMessage::new("team-lead", "three"))
        .unwrap();

    let again: Vec<String> = team
        .take_unread("alice")
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(again, vec!["three"], "only the message never taken");
    assert!(team.unread("alice").unwrap().is_empty());
    let texts: Vec<String> = team
        .history("alice")
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, vec!["one", "two", "three"], "each consumed once");
}

#[test]
fn a_cut_take_larger_than_the_first_look_at_the_history_is_not_handed_out_twice() {
    // 40 entries of 1 KiB: the batch is longer than the 16 KiB the take
    // first reads of the history's end.
    let (_t, team) = team();
    let inbox = team.file_paths().unwrap().inbox("alice").unwrap();
    for i in 0..40 {
        team.send(
            "alice",
            OutgoingMessage::new("team-lead", format!("{i} {}", "x".repeat(1024))),
        )
        .unwrap();
    }
    let before = std::fs::read(&inbox).unwrap();
    assert_eq!(team.take_unread("alice").unwrap().len(), 40);
    std::fs::write(&inbox, &before).unwrap();
    assert!(team.take_unread("alice").unwrap().is_empty());
    assert_eq!(
        team.history("alice").unwrap().len(),
        40,
        "each consumed once"
    );
}
