//! The documented Python and JavaScript example teammates do what their
//! guides say (docs/guides/teammate-python.md, teammate-js.md): `echo` and
//! `agent` of `guests/python` and of `guests/js` (both JS engines), end to
//! end, with the same assertions for each language.
//!
//! - **echo** answers the prompt and every plain message to its sender with
//!   the same text (summary `echo: …`), skips protocol messages, and
//!   approves a shutdown request.
//! - **agent**, against a scripted model (no network): takes the task the
//!   lead assigns, writes a file with the Write tool, completes the task and
//!   tells the lead; a Write its mode denies (plan) reaches the model as an
//!   error result and writes nothing; the shutdown is approved without a
//!   model call.
//!
//! The components come from `teamhost_tests::polyglot::component` (a
//! missing one fails the test unless `TEAMHOST_NO_POLYGLOT=1`), compiled
//! once into the cache the `polyglot` tests share.

use crate::common;
use crate::polyglot::{shared_cache, ShowGuestLogs};

use std::path::Path;
use std::time::Duration;

use common::{models, Fixture};
use teamhost::embed::{HostOptions, SpawnRequest};
use teamhost::model::CassetteMode;
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::TaskStatus;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_echo_answers_the_lead_and_approves_shutdown() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::ECHO_PY) {
        echo_answers_and_approves_shutdown("py", component).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_echo_answers_the_lead_and_approves_shutdown() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::ECHO_JS) {
        echo_answers_and_approves_shutdown("js", component).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_echo_on_quickjs_answers_the_lead_and_approves_shutdown() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::ECHO_QJS) {
        echo_answers_and_approves_shutdown("qjs", component).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncaught_python_exception_is_recorded_with_its_traceback() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::ECHO_PY) {
        crash_shows_its_last_words("py", component, "RuntimeError: crash: out of cheese").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncaught_javascript_error_is_recorded_with_the_engines_words() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::ECHO_JS) {
        // StarlingMonkey does not print the Error: its own words, and the
        // stack that names the handler, are what the guest said; the
        // reason says how to keep the message.
        let why = crash_shows_its_last_words(
            "js",
            component,
            "expected a string, received [object] | Stack: | ",
        )
        .await;
        assert!(why.contains("throw a string, or wrap the export"), "{why}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_agent_does_its_task_with_tools_and_is_denied_what_its_mode_forbids() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::AGENT_PY) {
        agent_does_its_task("py", component).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_agent_does_its_task_with_tools_and_is_denied_what_its_mode_forbids() {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::AGENT_JS) {
        agent_does_its_task("js", component).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_agent_on_quickjs_does_its_task_with_tools_and_is_denied_what_its_mode_forbids(
) {
    if let Some(component) = teamhost_tests::polyglot::component(teamhost_tests::AGENT_QJS) {
        agent_does_its_task("qjs", component).await;
    }
}

/// The echo guest's whole life for one foreign `component`: its spawn
/// prompt comes back, a task assignment (a protocol message) does not, a
/// plain message comes back with its summary, and it approves the shutdown.
async fn echo_answers_and_approves_shutdown(lang: &str, component: &str) {
    let f = Fixture::with_options(&format!("echo-{lang}"), shared_cache());
    let _logs = ShowGuestLogs(f.home.join("logs").join(&f.name));
    let echo = format!("{lang}-echo");
    let mut req = SpawnRequest::new(&echo, component, "hello", f.dir(&echo));
    req.settings.auto_claim = false;
    f.host.spawn(&f.name, req).await.unwrap();

    // The initial turn sends the prompt back to the lead, who wrote it.
    f.until("the echo of the prompt", || !said(&f, &echo).is_empty())
        .await;
    assert_eq!(said(&f, &echo), [plain("hello", "echo")]);

    // A task assignment is for the host and the lead: never echoed. A plain
    // message is, with its summary.
    assign(&f, "Not for echo", &echo);
    f.host
        .send_as_lead(&f.name, &echo, "ping", Some("a ping"))
        .unwrap();
    f.until("the echo of ping", || said(&f, &echo).len() >= 2)
        .await;
    f.settle().await;
    assert_eq!(
        said(&f, &echo),
        [plain("hello", "echo"), plain("ping", "echo: a ping")]
    );

    shuts_down_approving(&f, &[&echo]).await;
}

/// The echo guest crashes on a message `crash: out of cheese` (an
/// uncaught exception): its recorded failure reason carries `words` from
/// its stderr, labelled as the guest's, and names its log file. Answers
/// the reason.
async fn crash_shows_its_last_words(lang: &str, component: &str, words: &str) -> String {
    let f = Fixture::with_options(&format!("crash-{lang}"), shared_cache());
    let _logs = ShowGuestLogs(f.home.join("logs").join(&f.name));
    let echo = format!("{lang}-echo");
    let mut req = SpawnRequest::new(&echo, component, "hello", f.dir(&echo));
    req.settings.auto_claim = false;
    f.host.spawn(&f.name, req).await.unwrap();
    f.settle().await;
    let mut events = f.host.events();
    f.host
        .send_as_lead(&f.name, &echo, "crash: out of cheese", None)
        .unwrap();
    let why = loop {
        let event = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("the echo to crash")
            .expect("host events");
        if let teamhost::embed::Event::StateChanged { name, state, .. } = event {
            if name == echo && state.is_finished() {
                match state {
                    teamhost::embed::TeammateState::Failed(why) => break why,
                    other => panic!("{echo} ended {other:?}"),
                }
            }
        }
    };
    let log = f
        .home
        .join("logs")
        .join(&f.name)
        .join(format!("{echo}.log"));
    assert!(why.contains("its stderr said: «"), "{why}");
    assert!(why.contains(words), "{why}");
    assert!(why.contains(&format!("log: {}", log.display())), "{why}");
    why
}

/// The agent guest's whole life for one foreign `component`, with a scripted
/// model: `{lang}-agent` (acceptEdits) does the task the lead assigns with
/// the Write, TaskUpdate and SendMessage tools; `{lang}-planner` (plan mode)
/// tries to Write and is denied; both approve the shutdown without asking
/// the model.
async fn agent_does_its_task(lang: &str, component: &str) {
    let (agent, planner) = (format!("{lang}-agent"), format!("{lang}-planner"));
    // A fresh team's first task is #1: the script names it.
    let task = "1";
    let cassettes = tempfile::tempdir().unwrap();
    let (hub, stats) = models::hub(
        &agent_script(&agent, &planner, task),
        CassetteMode::Record,
        Some(cassettes.path().to_path_buf()),
    );
    let f = Fixture::with_options(
        &format!("agent-{lang}"),
        HostOptions {
            cache_dir: shared_cache().cache_dir,
            ..models::options(hub)
        },
    );
    let _logs = ShowGuestLogs(f.home.join("logs").join(&f.name));
    let agent_dir = f.dir(&agent);
    let planner_dir = f.dir(&planner);
    f.host
        .spawn(
            &f.name,
            agent_request(
                &agent,
                component,
                "Wait for your task.",
                &agent_dir,
                "acceptEdits",
            ),
        )
        .await
        .unwrap();
    f.host
        .spawn(
            &f.name,
            agent_request(&planner, component, "Write notes.md.", &planner_dir, "plan"),
        )
        .await
        .unwrap();
    f.settle().await;

    // Plan mode denies the Write: nothing is written, and the model reads
    // why in the tool result.
    assert!(!planner_dir.join("notes.md").exists());
    let (denied, is_error) = tool_result(cassettes.path(), &f.name, &planner, "w-notes");
    assert!(
        is_error && denied.contains("denied") && denied.contains("plan approval"),
        "{denied}"
    );

    // The lead assigns a task: the agent claims it, and the model writes the
    // file, completes the task and tells the lead.
    assert_eq!(assign(&f, "Write the result", &agent), task);
    let done = format!("Task #{task} done: result.md written");
    f.until("the agent's report", || {
        said(&f, &agent).contains(&plain(&done, "done"))
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(agent_dir.join("result.md")).unwrap(),
        format!("written by {agent}\n")
    );
    let resolved = || {
        f.lead_inbox().iter().any(|m| {
            matches!(ProtocolMessage::parse(&m.text).protocol(),
                Some(ProtocolMessage::IdleNotification(n))
                    if n.from == agent
                        && n.completed_task_id.as_deref() == Some(task)
                        && n.completed_status.as_deref() == Some("resolved"))
        })
    };
    f.until("the agent's idle notification for its task", resolved)
        .await;
    let t = f.team.task(task).unwrap();
    assert_eq!(
        (t.status, t.owner.as_deref()),
        (TaskStatus::Completed, Some(agent.as_str()))
    );

    // The shutdown turns make no model call: four answers for the agent,
    // two for the planner, and no more.
    shuts_down_approving(&f, &[&agent, &planner]).await;
    assert_eq!(stats.calls(), 6);
}

/// The script of both agents. Answers go by position in each conversation:
/// the agent's first ends its initial turn, the next three are its task
/// turn; the planner's initial turn tries a Write, then gives up.
fn agent_script(agent: &str, planner: &str, task: &str) -> String {
    format!(
        r#"{{"agents":[
  {{"name":"{agent}","match":["You are {agent},"],"turns":[
    {{"text":"ready"}},
    {{"tool_use":[{{"id":"w-result","name":"Write","input":{{"file_path":"result.md","content":"written by {agent}\n"}}}}]}},
    {{"tool_use":[
      {{"id":"u-done","name":"TaskUpdate","input":{{"taskId":"{task}","status":"completed"}}}},
      {{"id":"s-done","name":"SendMessage","input":{{"to":"team-lead","message":"Task #{task} done: result.md written","summary":"done"}}}}]}},
    {{"text":"done"}}]}},
  {{"name":"{planner}","match":["You are {planner},"],"turns":[
    {{"tool_use":[{{"id":"w-notes","name":"Write","input":{{"file_path":"notes.md","content":"x"}}}}]}},
    {{"text":"I may not write."}}]}}]}}"#
    )
}

fn agent_request(
    name: &str,
    component: &str,
    prompt: &str,
    dir: &Path,
    mode: &str,
) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, component, prompt, dir);
    req.settings.auto_claim = false;
    req.settings.mode = Some(mode.parse().unwrap());
    req.settings.model_policy = Some(models::policy());
    req
}

/// `(content, is-error)` of the result of tool call `id` that `teammate`
/// sent its model, from the cassette the hub recorded.
fn tool_result(cassettes: &Path, team: &str, teammate: &str, id: &str) -> (String, bool) {
    let path = cassettes.join(team).join(format!("{teammate}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .skip(1) // the header
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .flat_map(|call| {
            call["request"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find_map(|block| {
            let r = &block["tool-result"];
            (r["tool-use-id"] == id).then(|| {
                (
                    r["content"].as_str().unwrap_or_default().to_string(),
                    r["is-error"] == true,
                )
            })
        })
        .unwrap_or_else(|| panic!("no result of {id} in {}:\n{text}", path.display()))
}

/// Creates a task and makes `owner` its owner, which sends `owner` a
/// task_assignment. Returns its id.
fn assign(f: &Fixture, subject: &str, owner: &str) -> String {
    f.assign(subject, &format!("{subject}.\n"), owner)
}

/// Shuts the team down and checks that exactly `names` approved and stopped.
async fn shuts_down_approving(f: &Fixture, names: &[&str]) {
    let report = f
        .host
        .shutdown_team(&f.name, "done", Duration::from_secs(30))
        .await
        .unwrap();
    let mut stopped = report.stopped.clone();
    stopped.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(stopped, want, "{report:?}");
    assert!(report.killed.is_empty(), "{report:?}");
    let mut approved: Vec<String> = f
        .lead_inbox()
        .iter()
        .filter_map(|m| match ProtocolMessage::parse(&m.text).protocol() {
            Some(ProtocolMessage::ShutdownApproved(a)) => Some(a.from),
            _ => None,
        })
        .collect();
    approved.sort();
    assert_eq!(approved, want);
}

/// `(text, summary)` of every plain message `from` sent the lead.
fn said(f: &Fixture, from: &str) -> Vec<(String, Option<String>)> {
    f.lead_inbox()
        .into_iter()
        .filter(|m| m.from == from && matches!(ProtocolMessage::parse(&m.text), Parsed::Plain))
        .map(|m| (m.text, m.summary))
        .collect()
}

fn plain(text: &str, summary: &str) -> (String, Option<String>) {
    (text.to_string(), Some(summary.to_string()))
}
