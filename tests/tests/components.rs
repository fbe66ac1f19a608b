//! A bad component is refused at spawn with an error that names the file and
//! says what is wrong and what to do, and leaves the team as it was: no member
//! half-registered, no inbox created, nothing running.

use crate::common;

use std::path::Path;

use common::Fixture;
use teamhost::embed::SpawnRequest;
use teamhost::Error;

/// Spawns `component` as `name` and returns the error text, after checking
/// that the team did not change at all.
async fn refused(f: &Fixture, name: &str, component: &Path) -> String {
    let config = f.team.file_paths().unwrap().config();
    let before = std::fs::read(&config).unwrap();
    let dir = f.dir("work");
    let mut req = SpawnRequest::new(name, component, "hello", &dir);
    req.settings.auto_claim = false;
    let err = f
        .host
        .spawn(&f.name, req)
        .await
        .expect_err("a bad component must be refused");
    assert!(
        matches!(&err, Error::Component { path, .. } if path == component),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&component.display().to_string()),
        "the error does not name the file: {text}"
    );
    assert_eq!(
        std::fs::read(&config).unwrap(),
        before,
        "config.json changed"
    );
    assert_eq!(f.members(), ["team-lead"]);
    assert!(!f.team.file_paths().unwrap().inbox(name).unwrap().exists());
    assert!(f.host.teammates(&f.name).is_empty());
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_webassembly_is_refused_and_the_team_is_unchanged() {
    let f = Fixture::new("bad-text");
    let path = f.tmp.path().join("agent.wasm");
    std::fs::write(&path, "#!/bin/sh\necho I am not wasm\n").unwrap();
    let text = refused(&f, "text", &path).await;
    assert!(text.contains("not a WebAssembly file"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_core_module_is_refused_with_how_to_make_it_a_component() {
    let f = Fixture::new("bad-core");
    let path = f.tmp.path().join("core.wasm");
    std::fs::write(&path, b"\0asm\x01\0\0\0").unwrap();
    let text = refused(&f, "core", &path).await;
    assert!(text.contains("core WebAssembly module"), "{text}");
    assert!(
        text.contains("wasm32-wasip2") && text.contains("wasm-tools component new"),
        "the error does not say what to do: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_that_does_not_export_the_turn_handler_is_refused() {
    let f = Fixture::new("bad-world");
    // The smallest valid component: no imports, no exports.
    let path = f.tmp.path().join("empty.wasm");
    std::fs::write(&path, b"\0asm\x0d\0\x01\0").unwrap();
    let text = refused(&f, "empty", &path).await;
    assert!(
        text.contains("teamhost:agent/teammate"),
        "the error does not say which world the component must fit: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_component_file_is_refused() {
    let f = Fixture::new("bad-missing");
    let path = f.tmp.path().join("nowhere.wasm");
    let text = refused(&f, "missing", &path).await;
    assert!(text.contains("cannot read component"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_component_still_spawns_after_refusals() {
    let f = Fixture::new("bad-then-good");
    let path = f.tmp.path().join("core.wasm");
    std::fs::write(&path, b"\0asm\x01\0\0\0").unwrap();
    refused(&f, "probe", &path).await;
    // The refused name was not taken.
    let dir = f.probe("probe", "fine").await;
    f.settle().await;
    assert_eq!(f.members(), ["team-lead", "probe"]);
    assert_eq!(common::turns(&dir).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawn_that_fails_to_instantiate_leaves_no_trace_for_the_next_spawn_of_that_name() {
    let f = Fixture::new("bad-start");
    let config = f.team.file_paths().unwrap().config();
    let before = std::fs::read(&config).unwrap();
    let dir = f.dir("probe");
    // Too little memory for the guest's own linear memory: it cannot start.
    let mut req = common::probe_request("probe", "the failed spawn's prompt", &dir);
    req.settings.limits.memory_bytes = 1;
    let err = f.host.spawn("bad-start", req).await.unwrap_err();
    assert!(err.to_string().contains("cannot start it"), "{err}");
    assert_eq!(std::fs::read(&config).unwrap(), before);
    assert!(
        f.team.unread("probe").unwrap().is_empty(),
        "the failed spawn left its prompt in the inbox: {:?}",
        f.team.unread("probe").unwrap()
    );

    // The next teammate of that name starts with its own prompt only.
    f.host
        .spawn("bad-start", common::probe_request("probe", "mine", &dir))
        .await
        .unwrap();
    f.settle().await;
    assert_eq!(
        common::turns(&dir),
        [common::line("initial", "team-lead", "mine")]
    );
}
