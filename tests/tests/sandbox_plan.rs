//! Plan approval round trips: a teammate in `plan` mode cannot write; it
//! submits a plan (`messaging.request-plan-approval`), the lead rejects it
//! with feedback, the teammate revises it, and only the lead's approval of
//! the pending plan switches its mode, after which its writes go through
//! `tools.write` (its preopen stays read-only).

use crate::sandbox_support;

use sandbox_support::{cli, hostile_request, raw_protocol, step, wait_done, Arena};
use teamhost::approvals::PlanAnswer;
use teamhost::embed::TeammateState;

/// The request id in a `plan/request` result (`vN plan_approval-…`).
fn plan_id(detail: &str, version: u32) -> String {
    let id = detail
        .strip_prefix(&format!("v{version} "))
        .unwrap_or_else(|| panic!("not plan v{version}: {detail}"));
    assert!(id.starts_with("plan_approval-"), "{id}");
    id.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_plan_gets_feedback_and_only_the_approved_pending_plan_unlocks_writes() {
    let a = Arena::new("plan-trip").await;
    let dir = a.dir("planner");
    let name = a
        .spawn(hostile_request("planner", "plan", &dir, "plan"))
        .await;
    let got = wait_done(&a.f, &name, "plan", 1).await;
    // Before approval the write is denied; the plan goes to the lead.
    step(&got, "plan/write-before").assert_denied();
    let request = step(&got, "plan/request");
    assert!(request.ok(), "{request:?}");
    let v1 = plan_id(&request.detail, 1);
    let sent = raw_protocol(&a.f, &name, "plan_approval_request");
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["requestId"], v1.as_str());
    assert_eq!(sent[0]["planContent"], "# plan v1");
    let plan_file = std::path::PathBuf::from(sent[0]["planFilePath"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(plan_file).unwrap(), "# plan v1");
    a.f.until("the planner to await approval", || {
        a.f.host
            .teammates(&a.f.name)
            .iter()
            .any(|t| t.name == name && t.state == TeammateState::AwaitingPlanApproval)
    })
    .await;

    // Rejected with feedback: the guest gets it in its next turn, stays in
    // plan mode and submits v2.
    a.f.host
        .answer_plan(
            &a.f.name,
            &v1,
            PlanAnswer::Reject {
                feedback: "add tests first".into(),
            },
        )
        .unwrap();
    let got = wait_done(&a.f, &name, "plan-answer", 1).await;
    let answer = step(&got, "plan-answer");
    assert_eq!(
        answer.detail,
        format!("from=team-lead id={v1} rejected feedback=add tests first now=plan")
    );
    let v2 = plan_id(&step(&got, "plan/request").detail, 2);
    let sent = raw_protocol(&a.f, &name, "plan_approval_request");
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[1]["requestId"], v2.as_str());
    assert_eq!(sent[1]["planContent"], "# plan v2");
    assert!(!dir.join("done.txt").exists());

    // A late approval of the rejected v1 is not an answer to the pending v2:
    // the mode does not change and the write is still denied.
    a.f.host
        .answer_plan(
            &a.f.name,
            &v1,
            PlanAnswer::Approve {
                mode: Some(teamhost::sandbox::PermissionMode::BypassPermissions),
            },
        )
        .unwrap();
    let got = wait_done(&a.f, &name, "plan-answer", 2).await;
    let stale = step(&got, "plan-answer");
    assert!(stale
        .detail
        .starts_with(&format!("from=team-lead id={v1} approved")));
    assert!(stale.detail.ends_with(" now=plan"), "{stale:?}");
    step(&got, "plan/write-after").assert_denied();
    assert!(!dir.join("done.txt").exists());

    // The lead approves v2 with the real CLI: acceptEdits, and the write runs.
    cli(
        &a.f.home,
        &[
            "plan",
            &v2,
            "--team",
            &a.f.name,
            "--approve",
            "--mode",
            "acceptEdits",
        ],
    )
    .await
    .unwrap();
    let got = wait_done(&a.f, &name, "plan-answer", 3).await;
    assert_eq!(
        step(&got, "plan-answer").detail,
        format!("from=team-lead id={v2} approved mode=acceptEdits now=acceptEdits")
    );
    assert!(step(&got, "plan/write-after").ok(), "{got:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("done.txt")).unwrap(),
        "done"
    );
    let member = a.f.team.config().unwrap().member(&name).cloned().unwrap();
    assert_eq!(member.mode.as_deref(), Some("acceptEdits"));

    // The approval switched the mode, not the preopen: the guest's own WASI
    // writes still fail, its tool writes now run without asking.
    a.f.host
        .send_as_lead(&a.f.name, &name, "fs-write direct.txt hi", None)
        .unwrap();
    let got = wait_done(&a.f, &name, "fs-write", 1).await;
    step(&got, "fs-write").assert_io_error();
    assert!(!dir.join("direct.txt").exists());
    a.f.host
        .send_as_lead(&a.f.name, &name, "write-file via-tool.txt hi", None)
        .unwrap();
    let got = wait_done(&a.f, &name, "write-file", 1).await;
    assert!(step(&got, "write-file").ok(), "{got:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("via-tool.txt")).unwrap(),
        "hi"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_outside_plan_mode_cannot_submit_a_plan() {
    let a = Arena::new("plan-outside").await;
    let got = a.attack("doer", "dontAsk", "plan").await;
    step(&got, "plan/write-before").assert_denied();
    step(&got, "plan/request").assert_invalid();
    assert!(raw_protocol(&a.f, "doer", "plan_approval_request").is_empty());
    a.assert_contained().await;
}
