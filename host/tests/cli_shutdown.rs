//! `teamhost shutdown`: the lead's `shutdown_request`, written through the
//! real binary.

use std::process::Command;

use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{Home, NewMember, NewTeam, Store};

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
