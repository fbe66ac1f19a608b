//! Helpers shared by the backend tests: a host whose teammates run as
//! `teamhost teammate` processes, probe spawn requests, and waiting on host
//! events (writes by the teammates' processes arrive through inotify) with a
//! timeout only as a safety bound.

#![allow(dead_code)]

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use teamhost::backends::{BackendOptions, TeammateMode};
use teamhost::embed::{Event, HostOptions, SpawnRequest};
use tokio::sync::broadcast::error::RecvError;

/// Safety bound of every wait.
pub const LIMIT: Duration = Duration::from_secs(60);

pub use teamhost_tests::fixture::{turns, TeamFixture as Fixture};

/// A temporary home with one team called `name`, run by a host in `mode`
/// whose teammate processes are this build's `teamhost`; `tweak` changes
/// the backend options. Waits are bounded by [`LIMIT`].
pub fn fixture(name: &str, mode: TeammateMode, tweak: impl FnOnce(&mut BackendOptions)) -> Fixture {
    fixture_with_hooks(name, mode, tweak, Default::default())
}

/// [`fixture`] with the lead's `hooks`.
pub fn fixture_with_hooks(
    name: &str,
    mode: TeammateMode,
    tweak: impl FnOnce(&mut BackendOptions),
    hooks: teamhost::hooks::Hooks,
) -> Fixture {
    let mut backends = BackendOptions {
        mode,
        interactive: true,
        teamhost_exe: Some(env!("CARGO_BIN_EXE_teamhost").into()),
        stop_timeout: Duration::from_secs(5),
        ..Default::default()
    };
    tweak(&mut backends);
    let opts = HostOptions {
        backends,
        hooks: std::sync::Arc::new(hooks),
        ..Default::default()
    };
    Fixture::with_options(name, opts).with_limit(LIMIT)
}

/// A probe request (acceptEdits so it can write its turn log).
pub fn probe(name: &str, prompt: &str, dir: &Path, auto_claim: bool) -> SpawnRequest {
    let mut req = teamhost_tests::fixture::probe_request(name, prompt, dir);
    req.settings.auto_claim = auto_claim;
    req
}

/// Runs `fut` bounded by [`LIMIT`].
pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    teamhost_tests::fixture::bounded_by(LIMIT, what, fut).await
}

/// Waits for a state change of `name` matching `pred`.
pub async fn state_of(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    name: &str,
    pred: impl Fn(&teamhost::embed::TeammateState) -> bool,
) -> teamhost::embed::TeammateState {
    bounded(&format!("a state change of {name}"), async {
        loop {
            match events.recv().await {
                Ok(Event::StateChanged { name: n, state, .. }) if n == name && pred(&state) => {
                    return state
                }
                Ok(_) => {}
                Err(RecvError::Lagged(k)) => panic!("lost {k} events"),
                Err(RecvError::Closed) => panic!("events closed"),
            }
        }
    })
    .await
}

/// Whether process `pid` still exists (a zombie counts as existing).
pub fn exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}
