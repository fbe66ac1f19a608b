//! Permission round trips through real files: a teammate in `default` mode
//! calls a tool the sandbox answers "ask" for; the host writes a
//! `permission_request` (the reference's schema) to the lead's inbox and
//! suspends that call; the lead answers with the real `teamhost permit`
//! command line (run in-process, with its own store, as another process
//! would); the call runs, is denied, or times out. A path outside the
//! teammate's directory is the exception: it is denied at once, and the lead
//! is never asked.

use crate::sandbox_support;

use std::collections::BTreeSet;
use std::time::Duration;

use sandbox_support::{
    cli, hostile_request, permission_requests, step, steps, wait_done, wait_permission_request,
    Arena,
};
use teamhost::embed::TeammateState;

/// Spawns `hostile` as `name` in `default` mode with `prompt` (one command)
/// and returns its member name and directory.
async fn asker(a: &Arena, name: &str, prompt: &str) -> (String, std::path::PathBuf) {
    let dir = a.dir(name);
    let name = a
        .spawn(hostile_request(name, prompt, &dir, "default"))
        .await;
    (name, dir)
}

fn request_id(request: &serde_json::Value) -> String {
    request["request_id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_in_default_mode_asks_the_lead_and_runs_after_teamhost_permit_allow() {
    let a = Arena::new("permit-allow").await;
    let (name, dir) = asker(&a, "writer", "write-file x.txt hello from the writer").await;
    let request = wait_permission_request(&a.f, &name, 1).await;

    // The reference's permission_request, key for key.
    let keys: BTreeSet<&str> = request
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "type",
            "request_id",
            "agent_id",
            "tool_name",
            "tool_use_id",
            "description",
            "input",
            "permission_suggestions",
        ]),
        "{request:#}"
    );
    assert_eq!(request["type"], "permission_request");
    let id = request_id(&request);
    let (ms, suffix) = id
        .strip_prefix("perm-")
        .and_then(|rest| rest.split_once('-'))
        .unwrap_or_else(|| panic!("request_id {id:?} is not perm-<ms>-<7>"));
    assert!(
        ms.len() >= 13 && ms.bytes().all(|b| b.is_ascii_digit()),
        "{id}"
    );
    assert!(
        suffix.len() == 7
            && suffix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
        "{id}"
    );
    assert_eq!(request["agent_id"], name.as_str());
    assert_eq!(request["tool_name"], "Write");
    assert!(!request["tool_use_id"].as_str().unwrap().is_empty());
    assert!(!request["description"].as_str().unwrap().is_empty());
    let input = request["input"].as_object().unwrap();
    assert!(
        input["file_path"].as_str().unwrap().ends_with("x.txt"),
        "{request:#}"
    );
    assert_eq!(input["content"], "hello from the writer");
    assert!(request["permission_suggestions"].is_array());

    // Only that call waits: nothing is written, the teammate is still in its
    // turn, and the rest of the team works.
    assert!(!dir.join("x.txt").exists());
    a.echo_answers().await;
    let writer =
        a.f.host
            .teammates(&a.f.name)
            .into_iter()
            .find(|t| t.name == name)
            .unwrap();
    assert_eq!(writer.state, TeammateState::Active);
    assert_eq!(sandbox_support::done_count(&a.f, &name, "write-file"), 0);

    cli(&a.f.home, &["permit", &id, "--team", &a.f.name, "--allow"])
        .await
        .unwrap();
    let got = wait_done(&a.f, &name, "write-file", 1).await;
    let wrote = step(&got, "write-file");
    assert!(wrote.ok(), "{wrote:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("x.txt")).unwrap(),
        "hello from the writer"
    );
    // The answer came from the lead.
    let mut seen = a.f.team.history(&name).unwrap();
    seen.extend(a.f.team.read_inbox(&name).unwrap());
    assert!(seen
        .iter()
        .any(|m| m.from == "team-lead" && m.text.contains(&id)));
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teamhost_permit_deny_gives_the_guest_a_denial_with_the_reason_and_writes_nothing() {
    let a = Arena::new("permit-deny").await;
    let (name, dir) = asker(&a, "writer", "write-file x.txt hello").await;
    let id = request_id(&wait_permission_request(&a.f, &name, 1).await);
    cli(
        &a.f.home,
        &[
            "permit",
            &id,
            "--team",
            &a.f.name,
            "--deny",
            "--reason",
            "no writes today",
        ],
    )
    .await
    .unwrap();
    let got = wait_done(&a.f, &name, "write-file", 1).await;
    let denied = step(&got, "write-file");
    denied.assert_denied();
    assert!(denied.detail.contains("no writes today"), "{denied:?}");
    assert!(!dir.join("x.txt").exists());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_request_is_denied_at_the_ask_timeout_and_a_late_answer_runs_nothing() {
    let a = Arena::new("permit-timeout").await;
    let dir = a.dir("writer");
    let mut req = hostile_request("writer", "write-file x.txt hello", &dir, "default");
    req.settings.limits.ask_timeout = Duration::from_secs(1);
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "write-file", 1).await;
    step(&got, "write-file").assert_denied();
    assert!(!dir.join("x.txt").exists());
    let asked = permission_requests(&a.f, &name);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    // The timeout's denial is recorded as the answer: nothing waits any more.
    let pending = a.f.host.pending_requests(&a.f.name).unwrap();
    assert!(pending.is_empty(), "{pending:#?}");

    // The lead answers too late: the guest gets the answer as a message, and
    // the call it answered does not run.
    let id = request_id(&asked[0]);
    cli(&a.f.home, &["permit", &id, "--team", &a.f.name, "--allow"])
        .await
        .unwrap();
    a.f.until("the late answer to reach the guest", || {
        steps(&a.f, &name)
            .iter()
            .any(|s| s.step == "permission-answer")
    })
    .await;
    let late = step(&steps(&a.f, &name), "permission-answer").clone();
    assert!(
        late.detail
            .starts_with(&format!("from=team-lead id={id} allow")),
        "{late:?}"
    );
    assert!(!dir.join("x.txt").exists());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_edited_by_the_lead_is_the_one_that_runs() {
    let a = Arena::new("permit-edit").await;
    let (name, dir) = asker(&a, "writer", "write-file x.txt as the guest wrote it").await;
    let id = request_id(&wait_permission_request(&a.f, &name, 1).await);
    cli(
        &a.f.home,
        &[
            "permit",
            &id,
            "--team",
            &a.f.name,
            "--allow",
            "--input",
            r#"{"file_path":"y.txt","content":"as the lead edited it"}"#,
        ],
    )
    .await
    .unwrap();
    let got = wait_done(&a.f, &name, "write-file", 1).await;
    assert!(step(&got, "write-file").ok(), "{got:#?}");
    assert!(!dir.join("x.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("y.txt")).unwrap(),
        "as the lead edited it"
    );
    a.assert_contained().await;
}

/// Every message in the lead's inbox, read or not, and in its history: the
/// whole record of what reached the lead.
fn everything_the_lead_received(a: &Arena) -> Vec<teamhost::store::InboxMessage> {
    let mut all = a.f.team.history("team-lead").unwrap();
    all.extend(a.f.team.read_inbox("team-lead").unwrap());
    all
}

/// Waits until `name` has finished `attack` `times` times, or has asked the
/// lead anything: a call that should be decided at once must not wait for
/// an answer (the ask timeout is the test's safety bound), so an ask fails
/// the test right away instead.
async fn wait_done_without_asking(a: &Arena, name: &str, attack: &str, times: usize) {
    a.f.until(
        &format!("{name} to finish {attack} ({times}×) or ask"),
        || {
            sandbox_support::done_count(&a.f, name, attack) >= times
                || !permission_requests(&a.f, name).is_empty()
        },
    )
    .await;
    let asked = permission_requests(&a.f, name);
    assert!(asked.is_empty(), "{name} asked the lead: {asked:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_outside_the_directory_is_denied_at_once_and_the_lead_is_never_asked() {
    let a = Arena::new("permit-outside").await;
    let (name, dir) = asker(&a, "stray", "read-file /etc/passwd").await;

    // default denies a Read outside the directory without asking: no answer
    // of the lead could make the tools reach it, so the reason says so.
    wait_done_without_asking(&a, &name, "read-file", 1).await;
    let got = steps(&a.f, &name);
    let read = step(&got, "read-file");
    read.assert_denied().assert_no_leak();
    assert!(
        read.detail
            .contains("Read of `/etc/passwd` is outside the capability directory")
            && read.detail.contains("(/etc/passwd)")
            && read
                .detail
                .contains("no rule or answer of the lead can let it run"),
        "{read:?}"
    );

    // The same for a write into the sentinel tree, by absolute path.
    let target = a.sentinel.join("pwned.txt");
    a.f.host
        .send_as_lead(
            &a.f.name,
            &name,
            &format!("write-file {} pwned", target.display()),
            None,
        )
        .unwrap();
    wait_done_without_asking(&a, &name, "write-file", 1).await;
    let got = steps(&a.f, &name);
    let write = step(&got, "write-file");
    write.assert_denied();
    assert!(
        write.detail.contains(&format!(
            "Write to `{}` is outside the capability directory",
            target.display()
        )) && write.detail.contains(&format!("({})", target.display())),
        "{write:?}"
    );
    assert!(!target.exists());
    assert!(!dir.join("pwned.txt").exists());

    // No permission_request reached the lead, read or unread, answered or
    // not.
    let received = everything_the_lead_received(&a);
    assert!(
        !received
            .iter()
            .any(|m| m.from == name && m.text.contains("permission_request")),
        "{received:#?}"
    );
    assert!(a.f.host.requests(&a.f.name).unwrap().is_empty());

    // A Bash command is not a path the engine can place: it still asks, and
    // the one the lead approves runs under Landlock, which keeps it in.
    a.f.host
        .send_as_lead(
            &a.f.name,
            &name,
            "bash-run echo pwned > ../sentinel/pwned.txt",
            None,
        )
        .unwrap();
    let request = wait_permission_request(&a.f, &name, 1).await;
    assert_eq!(request["tool_name"], "Bash");
    assert_eq!(
        request["input"]["command"],
        "echo pwned > ../sentinel/pwned.txt"
    );
    cli(
        &a.f.home,
        &[
            "permit",
            &request_id(&request),
            "--team",
            &a.f.name,
            "--allow",
        ],
    )
    .await
    .unwrap();
    let got = wait_done(&a.f, &name, "bash-run", 1).await;
    step(&got, "bash-run").assert_bash_failed();
    assert!(!target.exists());
    a.assert_contained().await;
}
