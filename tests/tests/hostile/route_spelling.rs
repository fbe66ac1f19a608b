//! Hostile tests (issue 40, item 2): a request routed to the person is not
//! handed to a laxer decider by its spelling. Real `hostile` teammates run
//! Bash in `default` mode (Bash asks there); the routes send `rm` and
//! `git push` to the person and everything else to the lead. A lead whose
//! own grant allows every command then tries to allow each spelling: each
//! is refused to it ("routes it to the person"), the files stay, and the
//! call waits for the person. A route naming a catalogue entry binds a
//! member spawned from it under another name.

use crate::sandbox_support::{
    done_count, hostile_request, wait_done, wait_permission_request, Arena,
};
use teamhost::approvals::{Answer, Decider, PermitAnswer, Policy, Route, Routes};
use teamhost::embed::{Answerer, DecideError};
use teamhost::runtime::lead_host::Caller;
use teamhost::sandbox::{PermissionMode, ToolRules};

fn route(teammate: &str, entry: Option<&str>, tool: &str) -> Route {
    Route {
        teammate: teammate.into(),
        entry: entry.map(str::to_string),
        tool: tool.into(),
        decider: Decider::Person,
    }
}

/// A lead whose own grant runs any command.
fn generous_lead() -> Answerer {
    Answerer::Lead(Caller {
        mode: PermissionMode::Default,
        rules: ToolRules::new(["Bash"], [] as [&str; 0]).unwrap(),
    })
}

fn allow() -> Answer {
    Answer::Permit(PermitAnswer::Allow {
        updated_input: None,
        permission_updates: Vec::new(),
    })
}

/// Spawns `name` running `command` (with `entry` as its catalogue entry),
/// waits for its request, has the generous lead try to allow it and
/// returns the refusal's text and the request id.
async fn lead_tries(a: &Arena, name: &str, entry: Option<&str>, command: &str) -> (String, String) {
    let dir = a.dir(name);
    std::fs::write(dir.join("precious.txt"), "keep me").unwrap();
    let mut req = hostile_request(name, &format!("bash-run {command}"), &dir, "default");
    req.settings.agent_type = entry.map(str::to_string);
    let name = a.spawn(req).await;
    let id = wait_permission_request(&a.f, &name, 1).await["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let refused =
        a.f.host
            .decide(&a.f.name, &generous_lead(), &id, allow())
            .expect_err(command);
    let DecideError::Escalated(why) = refused else {
        panic!("{command}: {refused:?}")
    };
    assert!(
        a.f.host
            .pending_requests(&a.f.name)
            .unwrap()
            .iter()
            .any(|r| r.id() == id),
        "{command}: the request waits for the person"
    );
    assert_eq!(done_count(&a.f, &name, "bash-run"), 0, "{command}");
    assert!(dir.join("precious.txt").exists(), "{command}");
    (why, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_to_the_person_is_not_dodged_by_a_compound_command_or_a_program_path() {
    let a = Arena::new("route-spelling").await;
    let routes = Routes::new(
        Decider::Lead,
        vec![
            route("*", None, "Bash(rm:*)"),
            route("*", None, "Bash(git push:*)"),
        ],
        Policy::default(),
    )
    .unwrap();
    let desk = a.f.host.serve_approvals(&a.f.name, routes).unwrap();
    for (name, command) in [
        ("plain", "rm -f precious.txt"),
        ("compound", "cd . && rm -f precious.txt"),
        ("by-path", "/bin/rm -f precious.txt"),
        ("pusher", "git status && git push"),
    ] {
        let (why, id) = lead_tries(&a, name, None, command).await;
        assert!(why.contains("routes it to the person"), "{command}: {why}");
        // The person says no; the teammate hears it and nothing was run.
        a.f.host
            .permit(
                &a.f.name,
                &id,
                PermitAnswer::Deny {
                    reason: "not by spelling".into(),
                },
            )
            .unwrap();
        let got = wait_done(&a.f, name, "bash-run", 1).await;
        crate::sandbox_support::step(&got, "bash-run").assert_denied();
        assert!(a.dir(name).join("precious.txt").exists(), "{command}");
    }
    desk.stop().await;
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_naming_a_catalogue_entry_binds_a_member_spawned_from_it_under_any_name() {
    let a = Arena::new("route-entry").await;
    let routes = Routes::new(
        Decider::Lead,
        vec![route("", Some("fixer"), "Bash(rm:*)")],
        Policy::default(),
    )
    .unwrap();
    let desk = a.f.host.serve_approvals(&a.f.name, routes).unwrap();
    let (why, _) = lead_tries(&a, "not-the-fixer", Some("fixer"), "rm -f precious.txt").await;
    assert!(why.contains("routes it to the person"), "{why}");
    desk.stop().await;
    a.assert_contained().await;
}
