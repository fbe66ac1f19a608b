//! Helpers shared by the backend tests: a host whose teammates run as
//! `teamhost teammate` processes, probe spawn requests, and waiting on host
//! events (writes by the teammates' processes arrive through inotify) with a
//! timeout only as a safety bound.

#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use teamhost::backends::{BackendOptions, TeammateMode};
use teamhost::embed::{Event, Host, HostOptions, SpawnRequest};
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{Home, InboxMessage, NewTeam, Team};
use tokio::sync::broadcast::error::RecvError;

/// Safety bound of every wait.
pub const LIMIT: Duration = Duration::from_secs(60);

/// A temporary home with one team, run by a host in `mode`.
pub struct Fixture {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub host: Host,
    pub team: Team,
    pub name: String,
}

impl Fixture {
    pub fn new(name: &str, mode: TeammateMode, tweak: impl FnOnce(&mut BackendOptions)) -> Self {
        Fixture::with_hooks(name, mode, tweak, Default::default())
    }

    /// [`Fixture::new`] with the lead's `hooks`.
    pub fn with_hooks(
        name: &str,
        mode: TeammateMode,
        tweak: impl FnOnce(&mut BackendOptions),
        hooks: teamhost::hooks::Hooks,
    ) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let mut backends = BackendOptions {
            mode,
            interactive: true,
            teamhost_exe: Some(env!("CARGO_BIN_EXE_teamhost").into()),
            stop_timeout: Duration::from_secs(5),
            ..Default::default()
        };
        tweak(&mut backends);
        let host = Host::with_options(
            Home::new(&home),
            HostOptions {
                backends,
                hooks: std::sync::Arc::new(hooks),
                ..Default::default()
            },
        )
        .unwrap();
        host.create_team(name, NewTeam::default()).unwrap();
        let team = host.team(name).unwrap();
        Fixture {
            tmp,
            home,
            host,
            team,
            name: name.to_string(),
        }
    }

    /// A fresh directory `dirs/{name}`.
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.tmp.path().join("dirs").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The lead's unread messages.
    pub fn lead_inbox(&self) -> Vec<InboxMessage> {
        self.team.unread("team-lead").unwrap()
    }

    /// Waits until `check` holds, re-checking on every host event.
    pub async fn until(&self, what: &str, mut check: impl FnMut() -> bool) {
        let mut events = self.host.events();
        bounded(what, async {
            loop {
                if check() {
                    return;
                }
                match events.recv().await {
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => panic!("events closed waiting for {what}"),
                }
            }
        })
        .await
    }

    /// Waits for `n` idle notifications from `name` in the lead's inbox.
    pub async fn idle_from(&self, name: &str, n: usize) {
        self.until(&format!("{n} idle notification(s) from {name}"), || {
            idle_count(&self.lead_inbox(), name) >= n
        })
        .await
    }

    /// The log file of a teammate.
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(
            self.home
                .join("logs")
                .join(&self.name)
                .join(format!("{name}.log")),
        )
        .unwrap_or_default()
    }
}

/// A probe request (acceptEdits so it can write its turn log).
pub fn probe(name: &str, prompt: &str, dir: &Path, auto_claim: bool) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::PROBE, prompt, dir);
    req.settings.auto_claim = auto_claim;
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req
}

pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {LIMIT:?} waiting for {what}"),
    }
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

pub fn idle_count(inbox: &[InboxMessage], name: &str) -> usize {
    inbox
        .iter()
        .filter(|m| {
            matches!(ProtocolMessage::parse(&m.text),
                Parsed::Protocol(ProtocolMessage::IdleNotification(n)) if n.from == name)
        })
        .count()
}

/// Whether process `pid` still exists (a zombie counts as existing).
pub fn exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The probe's turn log in `dir`: (kind, from, text).
pub fn turns(dir: &Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(dir.join("turns.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, '\t').map(str::to_string);
            (
                f.next().unwrap_or_default(),
                f.next().unwrap_or_default(),
                f.next().unwrap_or_default(),
            )
        })
        .collect()
}
