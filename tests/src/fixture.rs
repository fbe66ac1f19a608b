//! The one fixture the integration tests build on (host/tests and
//! tests/tests alike): a team in a temporary home, alone ([`TempTeam`], for
//! the store's tests) or run by a host ([`TeamFixture`]); probe spawn
//! requests; and waits that re-check their condition on every host event,
//! with a time limit only as a safety bound (never a sleep).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use teamhost::embed::{Event, Host, HostOptions, SpawnRequest};
use teamhost::home::Home;
use teamhost::protocol::{Parsed, ProtocolMessage};
use teamhost::store::{InboxMessage, NewMember, NewTask, NewTeam, Store, TaskUpdate, Team};
use tokio::sync::broadcast::{self, error::RecvError};

/// The default safety bound of every wait: far above what any step takes
/// on a loaded 2-core machine. [`TeamFixture::with_limit`] changes it.
pub const LIMIT: Duration = Duration::from_secs(30);

/// The lead's name in every fixture team.
pub const LEAD: &str = "team-lead";

/// A team on real files in a temporary home, with no host: for the store's
/// own tests. Dropping it removes the home.
pub struct TempTeam {
    /// Holds the temporary directory; the home is `tmp` itself.
    pub tmp: tempfile::TempDir,
    /// The team.
    pub team: Team,
}

impl TempTeam {
    /// A team called `name` with `members` beside its lead.
    pub fn new(name: &str, members: &[&str]) -> TempTeam {
        let tmp = tempfile::tempdir().unwrap();
        let team = Store::new(Home::new(tmp.path())).team(name).unwrap();
        team.create(NewTeam::default()).unwrap();
        for member in members {
            team.add_member(NewMember {
                name: member.to_string(),
                ..Default::default()
            })
            .unwrap();
        }
        TempTeam { tmp, team }
    }
}

/// A temporary home holding one team run by one host.
pub struct TeamFixture {
    /// The host's home.
    pub home: PathBuf,
    /// The host running the team.
    pub host: Host,
    /// The team, read through the store.
    pub team: Team,
    /// The team's name.
    pub name: String,
    limit: Duration,
    /// Holds the temporary directory: `home/` and `dirs/` below it. Last,
    /// so that it is removed after the host is dropped (a host's threads
    /// still writing made directories again as it was removed, and left
    /// them behind).
    pub tmp: tempfile::TempDir,
}

impl TeamFixture {
    /// A host with default options and a team called `name`.
    pub fn new(name: &str) -> TeamFixture {
        TeamFixture::with_options(name, HostOptions::default())
    }

    /// A host with `opts` and a team called `name`.
    pub fn with_options(name: &str, opts: HostOptions) -> TeamFixture {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let host = Host::with_options(Home::new(&home), opts).unwrap();
        host.create_team(name, NewTeam::default()).unwrap();
        let team = host.team(name).unwrap();
        TeamFixture {
            tmp,
            home,
            host,
            team,
            name: name.to_string(),
            limit: LIMIT,
        }
    }

    /// The same fixture, its waits bounded by `limit` instead of [`LIMIT`].
    pub fn with_limit(mut self, limit: Duration) -> TeamFixture {
        self.limit = limit;
        self
    }

    /// The safety bound of this fixture's waits.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// A fresh directory `dirs/{name}` (one per teammate: a probe keeps its
    /// own `turns.log` there).
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.tmp.path().join("dirs").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Spawns a probe called `name` in its own directory, without
    /// auto-claim. Returns its directory.
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
        bounded_by(
            self.limit,
            "the team to settle",
            self.host.wait_idle(&self.name),
        )
        .await
        .unwrap();
    }

    /// Entries waiting in the lead's inbox.
    pub fn lead_inbox(&self) -> Vec<InboxMessage> {
        self.team.unread(LEAD).unwrap()
    }

    /// The texts `from` sent the lead that wait in its inbox, oldest first.
    pub fn said_by(&self, from: &str) -> Vec<String> {
        self.lead_inbox()
            .into_iter()
            .filter(|m| m.from == from)
            .map(|m| m.text)
            .collect()
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
        until_by(self.limit, &self.host, what, check).await
    }

    /// Waits for `n` idle notifications from `name` in the lead's inbox.
    pub async fn idle_from(&self, name: &str, n: usize) {
        self.until(&format!("{n} idle notification(s) from {name}"), || {
            idle_count(&self.lead_inbox(), name) >= n
        })
        .await
    }

    /// Creates a task with `subject` and `description` and, as the lead,
    /// makes `owner` its owner (which sends `owner` a task_assignment).
    /// Returns its id.
    pub fn assign(&self, subject: &str, description: &str, owner: &str) -> String {
        let id = self
            .team
            .create_task(NewTask {
                subject: subject.into(),
                description: description.into(),
                ..Default::default()
            })
            .unwrap()
            .id;
        self.team
            .update_task(
                &id,
                TaskUpdate {
                    owner: Some(Some(owner.into())),
                    ..Default::default()
                },
                LEAD,
            )
            .unwrap();
        id
    }

    /// The log file of teammate `name` (empty when there is none yet).
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

/// A probe spawn request: acceptEdits (the probe appends to `turns.log`
/// with its own file calls, which only a mode that edits without asking
/// gets a writable directory for), no auto-claim.
pub fn probe_request(name: &str, prompt: &str, dir: &Path) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, crate::PROBE, prompt, dir);
    req.settings.auto_claim = false;
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req
}

/// Runs `fut` with the default safety bound; panics naming `what` when it
/// expires.
pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    bounded_by(LIMIT, what, fut).await
}

/// [`bounded`] with the bound `limit`.
pub async fn bounded_by<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

/// Waits until `check` holds, re-checking after every event of `host`.
pub async fn until(host: &Host, what: &str, check: impl FnMut() -> bool) {
    until_by(LIMIT, host, what, check).await
}

/// [`until`] with the bound `limit`.
pub async fn until_by(limit: Duration, host: &Host, what: &str, mut check: impl FnMut() -> bool) {
    let mut events = host.events();
    bounded_by(limit, what, async {
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

/// How many idle notifications from `name` are in `inbox`.
pub fn idle_count(inbox: &[InboxMessage], name: &str) -> usize {
    inbox
        .iter()
        .filter(|m| {
            matches!(ProtocolMessage::parse(&m.text),
                Parsed::Protocol(ProtocolMessage::IdleNotification(n)) if n.from == name)
        })
        .count()
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
