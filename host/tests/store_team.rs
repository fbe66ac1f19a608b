//! Team config behaviour through the public store API, on real files.

use serde_json::json;
use teamhost::home::Home;
use teamhost::store::config::session_team_name;
use teamhost::store::{NewMember, NewTeam, Store};
use teamhost::Error;

fn store() -> (tempfile::TempDir, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(Home::new(tmp.path()));
    (tmp, store)
}

fn member(name: &str) -> NewMember {
    NewMember {
        name: name.into(),
        prompt: Some(format!("you are {name}")),
        ..Default::default()
    }
}

#[test]
fn create_writes_the_lead_as_only_member_and_refuses_a_second_create() {
    let (_t, store) = store();
    let team = store.team("Alpha Team").unwrap();
    assert_eq!(team.name(), "alpha-team");
    let cfg = team
        .create(NewTeam {
            description: Some("d".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(cfg.lead_agent_id, "team-lead@alpha-team");
    assert_eq!(cfg.members.len(), 1);
    assert_eq!(cfg.members[0].tmux_pane_id.as_deref(), Some("leader"));
    assert!(team.file_paths().unwrap().inboxes_dir().is_dir());
    assert!(matches!(
        team.create(NewTeam::default()),
        Err(Error::TeamExists { .. })
    ));
    assert_eq!(store.list_teams().unwrap(), vec!["alpha-team"]);
}

#[test]
fn implicit_session_teams_take_the_first_eight_hex_digits() {
    assert_eq!(
        session_team_name("76c4e2e6-4b27-486a-bf79-cb64c5020986"),
        "session-76c4e2e6"
    );
}

#[test]
fn members_get_unique_names_and_colours_in_join_order() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    let names: Vec<_> = (0..3)
        .map(|_| team.add_member(member("worker")).unwrap())
        .map(|m| (m.name, m.color.unwrap()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("worker".to_string(), "blue".to_string()),
            ("worker-2".to_string(), "green".to_string()),
            ("worker-3".to_string(), "yellow".to_string()),
        ]
    );
    let m = team.config().unwrap();
    assert_eq!(m.members[2].agent_id, "worker-2@t");
    assert_eq!(m.members[2].backend_type.as_deref(), Some("in-process"));
}

#[test]
fn a_freed_name_is_used_again_first_and_lookalike_names_do_not_count() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for _ in 0..4 {
        team.add_member(member("w")).unwrap(); // w, w-2, w-3, w-4
    }
    team.add_member(member("w-02")).unwrap();
    team.add_member(member("w-x")).unwrap();
    // Numbers past the member count, one past any integer: never the
    // lowest free one.
    team.add_member(member("w-99")).unwrap();
    team.add_member(member("w-18446744073709551616")).unwrap();
    team.remove_member("w-3").unwrap();
    assert_eq!(team.add_member(member("w")).unwrap().name, "w-3");
    assert_eq!(team.add_member(member("w")).unwrap().name, "w-5");
}

#[test]
fn remove_by_id_or_name_and_unknown_names_list_the_members() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(member("a")).unwrap();
    team.add_member(member("b")).unwrap();
    assert_eq!(team.remove_member("a@t").unwrap().name, "a");
    assert_eq!(team.remove_member("b").unwrap().name, "b");
    let err = team.remove_member("zed").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("zed") && msg.contains("team-lead"), "{msg}");
}

#[test]
fn set_mode_and_set_active_change_only_that_member() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(member("a")).unwrap();
    team.add_member(member("b")).unwrap();
    team.set_mode("a", "plan").unwrap();
    team.set_active("a", false).unwrap();
    let cfg = team.config().unwrap();
    let a = cfg.member("a").unwrap();
    assert_eq!(
        (a.mode.as_deref(), a.is_active),
        (Some("plan"), Some(false))
    );
    let b = cfg.member("b").unwrap();
    assert_eq!((b.mode.as_deref(), b.is_active), (None, None));
}

#[test]
fn delete_is_refused_while_teammates_remain_unless_forced() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.create_task(teamhost::store::NewTask {
        subject: "s".into(),
        ..Default::default()
    })
    .unwrap();
    team.add_member(member("a")).unwrap();
    let err = team.delete(false).unwrap_err();
    assert!(matches!(err, Error::TeamNotEmpty { ref members, .. } if members == &["a"]));
    assert!(team.exists());
    team.delete(true).unwrap();
    assert!(!team.file_paths().unwrap().team_dir().exists());
    assert!(!team.file_paths().unwrap().tasks_dir().exists());
}

#[test]
fn unknown_fields_on_team_and_members_survive_every_update() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    // Another program adds fields of its own.
    let path = team.file_paths().unwrap().config();
    let mut raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    raw["futureTeamField"] = json!({"x": [1, 2]});
    raw["members"][0]["futureMemberField"] = json!("kept");
    std::fs::write(&path, serde_json::to_vec_pretty(&raw).unwrap()).unwrap();

    team.add_member(member("a")).unwrap();
    team.set_active("a", true).unwrap();
    team.remove_member("a").unwrap();

    let after: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(after["futureTeamField"], json!({"x": [1, 2]}));
    assert_eq!(after["members"][0]["futureMemberField"], json!("kept"));
}

#[test]
fn a_corrupt_config_is_moved_aside_and_reported_never_overwritten() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    let path = team.file_paths().unwrap().config();
    std::fs::write(&path, b"{\"name\": \"t\", \"members\": [").unwrap();
    let err = team.add_member(member("a")).unwrap_err();
    let Error::Corrupt {
        moved_to: Some(to), ..
    } = &err
    else {
        panic!("expected a corrupt error, got {err}");
    };
    let msg = err.to_string();
    assert!(
        msg.contains("config.json") && msg.contains(".corrupt-"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read(to).unwrap(),
        b"{\"name\": \"t\", \"members\": ["
    );
    assert!(!path.exists());
    // The next write starts fresh.
    team.create(NewTeam::default()).unwrap();
    assert_eq!(team.config().unwrap().members.len(), 1);
}

#[test]
fn invalid_agent_names_are_refused_before_any_write() {
    let (_t, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    let before = std::fs::read(team.file_paths().unwrap().config()).unwrap();
    for bad in ["", "../x", "a/b", ".hidden"] {
        assert!(matches!(
            team.add_member(member(bad)),
            Err(Error::InvalidName { .. })
        ));
    }
    assert_eq!(
        std::fs::read(team.file_paths().unwrap().config()).unwrap(),
        before
    );
}

#[test]
fn a_member_named_as_the_host_is_refused() {
    let (_tmp, store) = store();
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    let err = team.add_member(member("teamhost")).unwrap_err().to_string();
    assert!(err.contains("host's own notices"), "{err}");
    assert_eq!(team.config().unwrap().members.len(), 1, "only the lead");
}
