//! A host over the in-memory store: a real component teammate runs, talks
//! to the lead and finishes its turn with nothing written under the home's
//! team folders; the backends that need the reference's files refuse such a
//! store before anything is registered.

use crate::common::{bounded, probe_request, protocol_of, turns};

use teamhost::backends::{BackendOptions, TeammateMode};
use teamhost::embed::{Host, HostOptions};
use teamhost::home::Home;
use teamhost::protocol::ProtocolMessage;
use teamhost::store::{NewTeam, Store};

fn host(tmp: &tempfile::TempDir, opts: HostOptions) -> Host {
    let home = Home::new(tmp.path().join("home"));
    Host::with_store(home, Store::in_memory(), opts).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_teammate_runs_on_the_memory_store_and_writes_no_team_file() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host(&tmp, HostOptions::default());
    host.create_team("mem", NewTeam::default()).unwrap();
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    host.spawn("mem", probe_request("p", "first prompt", &dir))
        .await
        .unwrap();
    host.send_as_lead("mem", "p", "second", None).unwrap();
    bounded("the teammate to settle", host.wait_idle("mem"))
        .await
        .unwrap();

    let seen: Vec<String> = turns(&dir).into_iter().map(|(_, _, text)| text).collect();
    assert!(
        seen.iter().any(|t| t == "first prompt") && seen.iter().any(|t| t == "second"),
        "the probe's turns: {seen:?}"
    );
    let team = host.team("mem").unwrap();
    let idle = protocol_of(&team.unread("team-lead").unwrap())
        .into_iter()
        .filter(|m| matches!(m, ProtocolMessage::IdleNotification(_)))
        .count();
    assert!(idle >= 1, "the lead hears the teammate go idle");
    for folder in ["teams", "tasks"] {
        assert!(
            !tmp.path().join("home").join(folder).exists(),
            "{folder}/ was written under the home"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_backend_refuses_a_store_in_this_processs_memory_before_registering() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = HostOptions {
        backends: BackendOptions {
            mode: TeammateMode::Process,
            interactive: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let host = host(&tmp, opts);
    host.create_team("mem", NewTeam::default()).unwrap();
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let err = host
        .spawn("mem", probe_request("p", "hi", &dir))
        .await
        .expect_err("a child process cannot reach a team in this host's memory");
    let text = err.to_string();
    assert!(text.contains("lives in this process only"), "{text}");
    assert!(text.contains("in-process"), "says what to do: {text}");
    let members = host.team("mem").unwrap().config().unwrap().member_names();
    assert_eq!(members, ["team-lead"], "nothing registered");
}
