//! Small commands through the real binary: `teamhost shutdown` (the lead's
//! `shutdown_request`), and output to a reader that went away.

use std::process::Command;

use teamhost::home::Home;
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{NewMember, NewTeam, Store};

fn teamhost(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn shutdown_writes_the_leads_request_to_the_teammate_and_refuses_the_lead() {
    let tmp = tempfile::tempdir().unwrap();
    let team = Store::new(Home::new(tmp.path())).team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "alice".into(),
        ..Default::default()
    })
    .unwrap();

    let out = teamhost(
        tmp.path(),
        &[
            "shutdown", "--team", "t", "alice", "--reason", "all done", "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let inbox = team.read_inbox("alice").unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].from, "team-lead");
    match ProtocolMessage::parse(&inbox[0].text) {
        Parsed::Protocol(ProtocolMessage::ShutdownRequest(r)) => {
            assert_eq!(printed["requestId"], r.request_id.as_str());
            assert_eq!(r.reason.as_deref(), Some("all done"));
            assert_eq!(r.target(), Some("alice"));
        }
        other => panic!("{other:?}"),
    }

    let out = teamhost(tmp.path(), &["shutdown", "--team", "t", "team-lead"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is the team's lead"), "{err}");
    let out = teamhost(tmp.path(), &["shutdown", "--team", "t", "bob"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("alice"),
        "sending to a non-member lists the members: {err}"
    );
}

/// `teamhost inbox … | head -1`: a reader that goes away early is not an
/// error, and nothing panics.
#[test]
fn a_reader_that_goes_away_is_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let team = Store::new(Home::new(tmp.path())).team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "alice".into(),
        ..Default::default()
    })
    .unwrap();
    // More than a pipe holds (64 KiB), so the write must meet the closed end.
    let long = "x".repeat(1000);
    for _ in 0..100 {
        team.send(
            "team-lead",
            teamhost::store::OutgoingMessage::new("alice", long.clone()),
        )
        .unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(tmp.path())
        .args(["inbox", "--team", "t", "team-lead"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
}
