//! Helpers shared by the end-to-end tests: a team in a temporary home, probe
//! spawn requests, the probe's turn log, and waiting on host events (never on
//! the clock: every wait re-checks its condition on each event, with a
//! timeout only as a safety bound).

#![allow(dead_code)]

pub mod models;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use teamhost::embed::{Event, Host, HostOptions, SpawnRequest};
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{Home, InboxMessage, NewTeam, Team};
use tokio::sync::broadcast::{self, error::RecvError};

/// Safety bound of every wait: far above what any step takes on a loaded
/// 2-core machine.
pub const LIMIT: Duration = Duration::from_secs(30);

/// A temporary home holding one team run by one host.
pub struct Fixture {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub host: Host,
    pub team: Team,
    pub name: String,
}

impl Fixture {
    /// A host with default options and a team called `name`.
    pub fn new(name: &str) -> Fixture {
        Fixture::with_options(name, HostOptions::default())
    }

    /// A host with `opts` and a team called `name`.
    pub fn with_options(name: &str, opts: HostOptions) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let host = Host::with_options(Home::new(&home), opts).unwrap();
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

    /// A fresh working directory `dirs/{name}` (one per probe: each keeps its
    /// own `turns.log`).
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.tmp.path().join("dirs").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Spawns a probe called `name` in its own directory, without auto-claim.
    /// Returns its directory.
    pub async fn probe(&self, name: &str, prompt: &str) -> PathBuf {
        let dir = self.dir(name);
        self.host
            .spawn(&self.name, probe_request(name, prompt, &dir))
            .await
            .unwrap();
        dir
    }

    /// Waits until every teammate is idle with nothing left to do.
    pub async fn settle(&self) {
        bounded("the team to settle", self.host.wait_idle(&self.name))
            .await
            .unwrap();
    }

    /// Entries waiting in the lead's inbox.
    pub fn lead_inbox(&self) -> Vec<InboxMessage> {
        self.team.unread("team-lead").unwrap()
    }

    /// Protocol messages in the lead's inbox.
    pub fn lead_protocol(&self) -> Vec<ProtocolMessage> {
        protocol_of(&self.lead_inbox())
    }

    /// Current member names in `config.json`.
    pub fn members(&self) -> Vec<String> {
        self.team.config().unwrap().member_names()
    }

    /// Waits until `check` holds, re-checking after every host event.
    pub async fn until(&self, what: &str, check: impl FnMut() -> bool) {
        until(&self.host, what, check).await
    }
}

/// A probe spawn request with `auto_claim: false`.
pub fn probe_request(name: &str, prompt: &str, dir: &Path) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::PROBE, prompt, dir);
    req.settings.auto_claim = false;
    // The probe appends to turns.log with its own file calls, which only a
    // mode that edits without asking gets a writable directory for.
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req
}

/// Runs `fut` with the safety bound; panics naming `what` when it expires.
pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {LIMIT:?} waiting for {what}"),
    }
}

/// Waits until `check` holds, re-checking after every event of `host`.
pub async fn until(host: &Host, what: &str, mut check: impl FnMut() -> bool) {
    let mut events = host.events();
    bounded(what, async {
        loop {
            if check() {
                return;
            }
            match events.recv().await {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => panic!("host events closed while waiting for {what}"),
            }
        }
    })
    .await
}

/// Receives events until one matches `pred` and returns it.
pub async fn next_event(
    events: &mut broadcast::Receiver<Event>,
    what: &str,
    mut pred: impl FnMut(&Event) -> bool,
) -> Event {
    bounded(what, async {
        loop {
            match events.recv().await {
                Ok(e) if pred(&e) => return e,
                Ok(_) => {}
                Err(RecvError::Lagged(n)) => panic!("lost {n} events waiting for {what}"),
                Err(RecvError::Closed) => panic!("host events closed while waiting for {what}"),
            }
        }
    })
    .await
}

/// The protocol messages among `inbox`.
pub fn protocol_of(inbox: &[InboxMessage]) -> Vec<ProtocolMessage> {
    inbox
        .iter()
        .filter_map(|m| ProtocolMessage::parse(&m.text).protocol())
        .collect()
}

/// Whether `m` is a plain (non-protocol) message.
pub fn is_plain(m: &InboxMessage) -> bool {
    matches!(ProtocolMessage::parse(&m.text), Parsed::Plain)
}

/// One record of a probe's `turns.log`: (kind, from, text).
pub type TurnLine = (String, String, String);

/// The records of the probe's `turns.log` in `dir` (empty if none yet).
pub fn turns(dir: &Path) -> Vec<TurnLine> {
    let text = match std::fs::read_to_string(dir.join("turns.log")) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("cannot read {}: {e}", dir.join("turns.log").display()),
    };
    text.lines()
        .map(|line| {
            let mut f = line.splitn(3, '\t').map(str::to_string);
            let kind = f.next().unwrap_or_default();
            let from = f.next().unwrap_or_default();
            let text = f.next().unwrap_or_default();
            (kind, from, text)
        })
        .collect()
}

/// A turn-log record, for comparisons.
pub fn line(kind: &str, from: &str, text: &str) -> TurnLine {
    (kind.to_string(), from.to_string(), text.to_string())
}
