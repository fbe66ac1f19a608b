//! Approval routing (issue 29) with real components and files: a `hostile`
//! teammate in `default` mode runs a command the sandbox asks about, the
//! host writes its `permission_request` to the lead's inbox, and the
//! request is answered through the one approval path
//! (`teamhost::embed::decide`) by the policy desk, the lead's seat or the
//! person, as the routes say; every decision lands in the home's record.

use crate::sandbox_support;

use sandbox_support::{
    cli, done_count, hostile_request, step, wait_done, wait_permission_request, Arena,
};
use teamhost::approvals::{
    Answer, Decider, Outcome, PermitAnswer, PlanPolicy, Policy, Route, Routes,
};
use teamhost::embed::{Answerer, DecideError};
use teamhost::home::{decisions, Home};
use teamhost::runtime::lead_host::Caller;
use teamhost::sandbox::{PermissionMode, ToolRules};

/// Spawns `hostile` as `name` running `command` through Bash in `default`
/// mode (Bash asks there); returns its member name.
async fn asker(a: &Arena, name: &str, command: &str) -> String {
    let dir = a.dir(name);
    a.spawn(hostile_request(
        name,
        &format!("bash-run {command}"),
        &dir,
        "default",
    ))
    .await
}

async fn request_of(a: &Arena, name: &str) -> String {
    wait_permission_request(&a.f, name, 1).await["request_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn home(a: &Arena) -> Home {
    Home::new(&a.f.home)
}

fn waiting(a: &Arena, id: &str) -> bool {
    a.f.host
        .pending_requests(&a.f.name)
        .unwrap()
        .iter()
        .any(|r| r.id() == id)
}

fn allow() -> Answer {
    Answer::Permit(PermitAnswer::Allow {
        updated_input: None,
        permission_updates: Vec::new(),
    })
}

fn lead_with(allowed: &[&str]) -> Answerer {
    Answerer::Lead(Caller {
        mode: PermissionMode::Default,
        rules: ToolRules::new(allowed.iter().copied(), [] as [&str; 0]).unwrap(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_allows_denies_and_escalates_and_leaves_the_persons_requests_alone() {
    let a = Arena::new("route-policy").await;
    let routes = Routes::new(
        Decider::Policy,
        vec![Route {
            teammate: "mine".into(),
            entry: None,
            tool: "*".into(),
            decider: Decider::Person,
        }],
        Policy {
            allow: vec!["Bash(echo:*)".into()],
            deny: vec!["Bash(rm:*)".into()],
            plans: PlanPolicy::Person,
        },
    )
    .unwrap();
    let desk = a.f.host.serve_approvals(&a.f.name, routes).unwrap();

    let allowed = asker(&a, "allowed", "echo routed by policy").await;
    let got = wait_done(&a.f, &allowed, "bash-run", 1).await;
    let ran = step(&got, "bash-run");
    assert!(
        ran.ok() && ran.detail.contains("routed by policy"),
        "{ran:?}"
    );

    let denied = asker(&a, "denied", "rm -f nothing.txt").await;
    let got = wait_done(&a.f, &denied, "bash-run", 1).await;
    let refused = step(&got, "bash-run");
    refused.assert_denied();
    assert!(refused.detail.contains("Bash(rm:*)"), "{refused:?}");

    // Neither rule names `touch`: escalated, and it waits for the person.
    let unsure = asker(&a, "unsure", "touch made.txt").await;
    let unsure_id = request_of(&a, &unsure).await;
    // The desk writes the escalation to the home, which no host event
    // reports: each round trip with the echo teammate is one more look.
    teamhost_tests::fixture::bounded("the policy to escalate", async {
        while decisions::escalation(&home(&a), &a.f.name, &unsure_id)
            .unwrap()
            .is_none()
        {
            a.echo_answers().await;
        }
    })
    .await;
    assert!(waiting(&a, &unsure_id));
    assert_eq!(done_count(&a.f, &unsure, "bash-run"), 0);

    // Routed to the person: the desk neither answers nor escalates it.
    let mine = asker(&a, "mine", "echo for the person").await;
    let mine_id = request_of(&a, &mine).await;
    a.echo_answers().await;
    assert!(waiting(&a, &mine_id));
    assert!(decisions::escalation(&home(&a), &a.f.name, &mine_id)
        .unwrap()
        .is_none());

    // The person answers the escalated one with the real CLI.
    cli(
        &a.f.home,
        &["permit", &unsure_id, "--team", &a.f.name, "--allow"],
    )
    .await
    .unwrap();
    let got = wait_done(&a.f, &unsure, "bash-run", 1).await;
    assert!(step(&got, "bash-run").ok());
    assert!(a.dir("unsure").join("made.txt").exists());

    let lines: Vec<String> = decisions::list(&home(&a), &a.f.name, 0)
        .unwrap()
        .iter()
        .map(|d| d.line())
        .collect();
    for want in [
        "Bash from allowed: allowed by the policy",
        "Bash from denied: denied by the policy",
        "Bash from unsure: escalated to the person by the policy",
        "Bash from unsure: allowed by the person",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want} in {lines:#?}");
    }
    assert!(!lines.iter().any(|l| l.contains("from mine")), "{lines:#?}");
    desk.stop().await;
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_beyond_the_leads_grant_is_escalated_and_the_person_answers_it() {
    let a = Arena::new("route-escalate").await;
    let name = asker(&a, "pusher", "echo pushing").await;
    let id = request_of(&a, &name).await;
    // No routes kept: a lead seat decides what no route names, within its
    // grant; this lead may allow `cargo test` only.
    let refused =
        a.f.host
            .decide(&a.f.name, &lead_with(&["Bash(cargo test:*)"]), &id, allow())
            .unwrap_err();
    let DecideError::Escalated(why) = &refused else {
        panic!("{refused:?}")
    };
    assert!(
        why.contains("more than the lead's own grant") && why.contains("escalated to the person"),
        "{why}"
    );
    assert!(waiting(&a, &id), "the request still waits for the person");
    let escalation = decisions::escalation(&home(&a), &a.f.name, &id)
        .unwrap()
        .unwrap();
    assert_eq!(
        (escalation.decider, escalation.outcome),
        (Decider::Lead, Outcome::Escalated)
    );
    assert_eq!(done_count(&a.f, &name, "bash-run"), 0);

    // Within the grant, the lead's answer goes through.
    let second = asker(&a, "tester", "echo tested").await;
    let second_id = request_of(&a, &second).await;
    let decided =
        a.f.host
            .decide(
                &a.f.name,
                &lead_with(&["Bash(echo:*)"]),
                &second_id,
                allow(),
            )
            .unwrap();
    assert_eq!(decided.decider, Decider::Lead);
    assert!(step(&wait_done(&a.f, &second, "bash-run", 1).await, "bash-run").ok());

    a.f.host
        .permit(
            &a.f.name,
            &id,
            PermitAnswer::Deny {
                reason: "not today".into(),
            },
        )
        .unwrap();
    let got = wait_done(&a.f, &name, "bash-run", 1).await;
    let denied = step(&got, "bash-run");
    denied.assert_denied();
    assert!(denied.detail.contains("not today"), "{denied:?}");
    let kept = decisions::decided(&home(&a), &a.f.name, &id)
        .unwrap()
        .unwrap();
    assert_eq!(
        (kept.decider, kept.outcome),
        (Decider::Person, Outcome::Denied)
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_answers_first_and_the_leads_later_answer_is_a_conflict() {
    let a = Arena::new("route-conflict").await;
    let name = asker(&a, "runner", "echo first").await;
    let id = request_of(&a, &name).await;
    cli(&a.f.home, &["permit", &id, "--team", &a.f.name, "--allow"])
        .await
        .unwrap();
    assert!(step(&wait_done(&a.f, &name, "bash-run", 1).await, "bash-run").ok());
    let late =
        a.f.host
            .decide(&a.f.name, &lead_with(&["Bash"]), &id, allow())
            .unwrap_err();
    match late {
        DecideError::AlreadyAnswered { by, message } => {
            assert_eq!(by, Some(Decider::Person));
            assert!(message.contains("allowed by the person"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_routed_away_is_refused_and_a_teammates_forged_answer_is_still_ignored() {
    let a = Arena::new("route-forge").await;
    let routes = Routes::all_to(Decider::Person);
    let desk = a.f.host.serve_approvals(&a.f.name, routes).unwrap();
    let victim = asker(&a, "victim", "touch forged.txt").await;
    let id = request_of(&a, &victim).await;

    let refused =
        a.f.host
            .decide(&a.f.name, &lead_with(&["Bash"]), &id, allow())
            .unwrap_err();
    assert!(
        matches!(&refused, DecideError::Escalated(w) if w.contains("routes it to the person")),
        "{refused:?}"
    );

    // A teammate delivers the victim a forged allow: the runner takes
    // answers from the lead only, so the call still waits.
    let accomplice_dir = a.dir("accomplice");
    let accomplice = a
        .spawn(hostile_request(
            "accomplice",
            &format!("forge-permission-for {victim} {id}"),
            &accomplice_dir,
            "default",
        ))
        .await;
    wait_done(&a.f, &accomplice, "forge-permission-for", 1).await;
    a.echo_answers().await;
    assert!(waiting(&a, &id));
    assert_eq!(done_count(&a.f, &victim, "bash-run"), 0);
    assert!(!a.dir("victim").join("forged.txt").exists());

    a.f.host
        .permit(
            &a.f.name,
            &id,
            PermitAnswer::Deny {
                reason: "no".into(),
            },
        )
        .unwrap();
    step(&wait_done(&a.f, &victim, "bash-run", 1).await, "bash-run").assert_denied();
    assert!(!a.dir("victim").join("forged.txt").exists());
    desk.stop().await;
    a.assert_contained().await;
}
