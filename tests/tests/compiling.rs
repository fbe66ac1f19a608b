//! `Host::compile`, which `teamhost run` calls for every component before it
//! spawns: while a component compiles, the teammates waiting for it are
//! listed as compiling (`Host::joining`) and the live view's board shows
//! them so; once it is ready they are starting, until their spawn; a
//! component that fails takes them off the list, failed.
//!
//! The component is a named pipe: reading it blocks until the test writes
//! the bytes, so the compile is caught in the middle on any machine.

use crate::common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use common::{bounded, next_event, Fixture};
use teamhost::embed::{Event, SpawnRequest, TeammateState};
use teamhost::view::{Board, MemberState};

/// A named pipe at `path`.
fn fifo(path: &Path) -> Releaser {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
    Releaser(path.to_path_buf())
}

/// Ends a read still blocked on the pipe when a test fails before writing
/// it (an empty write: the compile fails), so that no blocking thread keeps
/// the runtime from shutting down.
struct Releaser(PathBuf);

impl Drop for Releaser {
    fn drop(&mut self) {
        // Without a reader this fails at once (ENXIO): nothing to release.
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.0);
    }
}

/// The next `StateChanged` to `state` of each of `names`, in any order.
async fn states(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    names: &[&str],
    state: fn(&TeammateState) -> bool,
) {
    let mut seen = Vec::new();
    while seen.len() < names.len() {
        let e = next_event(
            events,
            "a state change",
            |e| matches!(e, Event::StateChanged { state: s, .. } if state(s)),
        )
        .await;
        if let Event::StateChanged { name, .. } = e {
            assert!(names.contains(&name.as_str()), "{name} was not asked for");
            seen.push(name);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teammates_show_as_compiling_then_starting_until_each_is_spawned() {
    let f = Fixture::new("compiling");
    let pipe = f.tmp.path().join("echo.wasm");
    let _release = fifo(&pipe);
    let mut events = f.host.events();
    let names = ["ann".to_string(), "bob".to_string()];
    let compile = tokio::spawn({
        let (host, team, pipe, names) =
            (f.host.clone(), f.name.clone(), pipe.clone(), names.clone());
        async move { host.compile(&team, &pipe, &names).await }
    });

    states(&mut events, &["ann", "bob"], |s| {
        *s == TeammateState::Compiling
    })
    .await;
    let compiling = f.host.joining(&f.name);
    let listed: Vec<_> = compiling
        .iter()
        .map(|t| (t.name.as_str(), &t.state, t.turns))
        .collect();
    assert_eq!(
        listed,
        [
            ("ann", &TeammateState::Compiling, 0),
            ("bob", &TeammateState::Compiling, 0)
        ]
    );
    assert!(f.host.teammates(&f.name).is_empty(), "not spawned yet");
    assert_eq!(f.members(), ["team-lead"], "not members yet");
    // What the live view of `teamhost run` draws.
    let board = Board::read(&f.team, &compiling).unwrap();
    let rows: Vec<_> = board
        .teammates
        .iter()
        .map(|t| (t.name.as_str(), &t.state))
        .collect();
    assert_eq!(
        rows,
        [
            ("ann", &MemberState::Compiling),
            ("bob", &MemberState::Compiling)
        ]
    );
    assert!(!compile.is_finished(), "the compile waits for the bytes");

    let bytes = std::fs::read(teamhost_tests::ECHO).unwrap();
    let write = pipe.clone();
    tokio::task::spawn_blocking(move || std::fs::write(write, bytes))
        .await
        .unwrap()
        .unwrap();
    let took = bounded("the compile", compile).await.unwrap().unwrap();
    assert!(!took.is_zero());
    states(&mut events, &["ann", "bob"], |s| {
        *s == TeammateState::Starting
    })
    .await;
    let joining: Vec<_> = f
        .host
        .joining(&f.name)
        .into_iter()
        .map(|t| (t.name, t.state))
        .collect();
    assert_eq!(
        joining,
        [
            ("ann".to_string(), TeammateState::Starting),
            ("bob".to_string(), TeammateState::Starting)
        ]
    );

    // A spawn takes its teammate off the list: it is a member now.
    let dir = f.dir("ann");
    let mut req = SpawnRequest::new("ann", teamhost_tests::ECHO, "hello", &dir);
    req.settings.auto_claim = false;
    f.host.spawn(&f.name, req).await.unwrap();
    let names: Vec<_> = f
        .host
        .joining(&f.name)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["bob"]);
    let board = Board::read(&f.team, &f.host.joining(&f.name)).unwrap();
    let rows: Vec<_> = board
        .teammates
        .iter()
        .map(|t| (t.name.as_str(), t.state.word()))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1], ("bob", "starting"));

    // One that is never spawned leaves the list when the team shuts down.
    f.host
        .shutdown_team(&f.name, "done", common::LIMIT)
        .await
        .unwrap();
    assert!(f.host.joining(&f.name).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_that_fails_to_compile_takes_its_teammates_off_the_list_as_failed() {
    let f = Fixture::new("compiling-bad");
    let path = f.tmp.path().join("bad.wasm");
    std::fs::write(&path, "not wasm").unwrap();
    let mut events = f.host.events();
    let err = f
        .host
        .compile(&f.name, &path, &["ann".to_string()])
        .await
        .expect_err("not a component");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    states(&mut events, &["ann"], |s| *s == TeammateState::Compiling).await;
    let failed = next_event(&mut events, "ann's failure", |e| {
        matches!(e, Event::StateChanged { .. })
    })
    .await;
    assert!(
        matches!(&failed, Event::StateChanged { name, state: TeammateState::Failed(why), .. }
            if name == "ann" && why.contains("not a WebAssembly file")),
        "{failed:?}"
    );
    assert!(f.host.joining(&f.name).is_empty());
}
