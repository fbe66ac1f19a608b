//! Helpers shared by the sandbox tests (`sandbox_hostile`, `sandbox_permissions`,
//! `sandbox_plan`): an [`Arena`] (a team with a sentinel tree outside every
//! capability directory and an `echo` bystander), spawning the `hostile`
//! guest, reading the result lines it sends the lead, and running the real
//! `teamhost` CLI in-process.
//!
//! Every wait re-checks its condition on host events (never on the clock);
//! [`common::LIMIT`](crate::common::LIMIT) is only a safety bound.
//!
//! `SANDBOX_TRACE=1 cargo test … -- --nocapture` prints every result line a
//! hostile guest reported, as [`wait_done`] collects them.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use clap::Parser;
use teamhost::embed::{Event, SpawnRequest, TeammateState};
use teamhost::sandbox::Limits;
use tokio::sync::broadcast;

use crate::common::{is_plain, next_event, Fixture};

/// Text in the sentinel's files that must never reach a guest.
pub const SECRET: &str = "TOPSECRET-4242";

/// A line of `/etc/passwd` every Linux has, which must never reach a guest.
pub const PASSWD_ROOT: &str = "root:x:0:0";

/// One result line of the hostile guest: `STEP\tOK|ERR|DONE\tDETAIL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// `attack/what`, or the attack for `DONE`.
    pub step: String,
    /// `OK`, `ERR` or `DONE`.
    pub status: String,
    /// What the call returned, or its error (`denied: …`, `io …`).
    pub detail: String,
}

impl Step {
    /// The call returned normally.
    pub fn ok(&self) -> bool {
        self.status == "OK"
    }

    /// Asserts a typed `denied` error from a teamhost call.
    pub fn assert_denied(&self) -> &Self {
        assert!(
            self.status == "ERR" && self.detail.starts_with("denied: "),
            "{} should have been denied: {self:?}",
            self.step
        );
        self
    }

    /// Asserts a typed `invalid` error from a teamhost call.
    pub fn assert_invalid(&self) -> &Self {
        assert!(
            self.status == "ERR" && self.detail.starts_with("invalid: "),
            "{} should have been invalid: {self:?}",
            self.step
        );
        self
    }

    /// Asserts that a `std::fs` call failed (WASI refused it).
    pub fn assert_io_error(&self) -> &Self {
        assert!(
            self.status == "ERR" && self.detail.starts_with("io "),
            "{} should have failed in WASI: {self:?}",
            self.step
        );
        self
    }

    /// Asserts that nothing secret is in what the guest saw.
    pub fn assert_no_leak(&self) -> &Self {
        for secret in [SECRET, PASSWD_ROOT] {
            assert!(
                !self.detail.contains(secret),
                "{} leaked {secret:?}: {self:?}",
                self.step
            );
        }
        self
    }

    /// Asserts a Glob or Grep that was refused, or that found nothing.
    pub fn assert_refused_or_empty(&self) -> &Self {
        self.assert_no_leak();
        if self.ok() {
            assert!(
                self.detail.starts_with("0 paths") || self.detail.starts_with("count=0 "),
                "{} should have found nothing: {self:?}",
                self.step
            );
        } else {
            assert!(
                self.detail.starts_with("denied: ")
                    || self.detail.starts_with("not-found: ")
                    || self.detail.starts_with("invalid: "),
                "{} failed with an unexpected error: {self:?}",
                self.step
            );
        }
        self
    }

    /// The exit code of a Bash step that ran (`exit=N …`).
    pub fn exit_code(&self) -> Option<i32> {
        let code = self.detail.strip_prefix("exit=")?.split(' ').next()?;
        code.parse().ok()
    }

    /// Asserts a Bash command that ran and failed, or was refused: it did
    /// not succeed.
    pub fn assert_bash_failed(&self) -> &Self {
        self.assert_no_leak();
        if self.ok() {
            assert_ne!(
                self.exit_code(),
                Some(0),
                "{} should not have succeeded: {self:?}",
                self.step
            );
        } else {
            self.assert_denied();
        }
        self
    }
}

/// Every result line `name` has sent the lead so far, oldest first.
pub fn steps(f: &Fixture, name: &str) -> Vec<Step> {
    f.lead_inbox()
        .iter()
        .filter(|m| m.from == name && is_plain(m))
        .filter_map(|m| {
            let mut parts = m.text.splitn(3, '\t');
            let step = parts.next()?.to_string();
            let status = parts.next()?.to_string();
            let detail = parts.next().unwrap_or_default().to_string();
            Some(Step {
                step,
                status,
                detail,
            })
        })
        .collect()
}

/// The last result of `step` among `steps`; panics listing them all if none.
pub fn step<'a>(steps: &'a [Step], step: &str) -> &'a Step {
    steps
        .iter()
        .rev()
        .find(|s| s.step == step && s.status != "DONE")
        .unwrap_or_else(|| panic!("no result for {step}; the guest reported {steps:#?}"))
}

/// Every result of `step` among `steps`, oldest first.
pub fn all<'a>(steps: &'a [Step], step: &str) -> Vec<&'a Step> {
    steps
        .iter()
        .filter(|s| s.step == step && s.status != "DONE")
        .collect()
}

/// How many times `name` has finished `attack` (its `DONE` lines).
pub fn done_count(f: &Fixture, name: &str, attack: &str) -> usize {
    steps(f, name)
        .iter()
        .filter(|s| s.step == attack && s.status == "DONE")
        .count()
}

/// Waits until `name` has finished `attack` `times` times in all, and returns
/// every result it has sent.
pub async fn wait_done(f: &Fixture, name: &str, attack: &str, times: usize) -> Vec<Step> {
    f.until(&format!("{name} to finish {attack} ({times}×)"), || {
        done_count(f, name, attack) >= times
    })
    .await;
    let all = steps(f, name);
    if std::env::var_os("SANDBOX_TRACE").is_some() {
        for s in &all {
            eprintln!("TRACE {name}: {}\t{}\t{}", s.step, s.status, s.detail);
        }
    }
    all
}

/// Limits small enough to keep the tests fast: 1 s of CPU per turn, and the
/// safety bound as the approval wait (tests where the timeout is the point
/// set `ask_timeout` themselves).
pub fn small_limits() -> Limits {
    Limits {
        cpu_per_turn: Duration::from_secs(1),
        ask_timeout: crate::common::LIMIT,
        ..Limits::default()
    }
}

/// A `hostile` spawn request: `mode`, no auto-claim, [`small_limits`].
pub fn hostile_request(name: &str, prompt: &str, dir: &Path, mode: &str) -> SpawnRequest {
    let mut req = SpawnRequest::new(name, teamhost_tests::HOSTILE, prompt, dir);
    req.settings.auto_claim = false;
    req.settings.mode = Some(mode.parse().unwrap());
    req.settings.limits = small_limits();
    req
}

/// One entry of a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `file`, `dir` or `symlink`.
    pub kind: &'static str,
    /// A file's content, or a symlink's target.
    pub content: Vec<u8>,
    /// Modification time.
    pub mtime: SystemTime,
    /// Permission bits.
    pub mode: u32,
}

/// Every path below a directory (itself included, as `""`), without
/// following symlinks.
pub type Snapshot = BTreeMap<PathBuf, Entry>;

/// A snapshot of `root`: paths, contents, symlink targets, mtimes, modes.
pub fn snapshot(root: &Path) -> Snapshot {
    use std::os::unix::fs::PermissionsExt;
    fn walk(root: &Path, rel: &Path, out: &mut Snapshot) {
        let path = root.join(rel);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let kind = if meta.file_type().is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "dir"
        } else {
            "file"
        };
        let content = match kind {
            "symlink" => std::fs::read_link(&path)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes(),
            "file" => std::fs::read(&path).unwrap(),
            _ => Vec::new(),
        };
        out.insert(
            rel.to_path_buf(),
            Entry {
                kind,
                content,
                mtime: meta.modified().unwrap(),
                mode: meta.permissions().mode(),
            },
        );
        if kind == "dir" {
            for entry in std::fs::read_dir(&path).unwrap() {
                walk(root, &rel.join(entry.unwrap().file_name()), out);
            }
        }
    }
    let mut out = Snapshot::new();
    walk(root, Path::new(""), &mut out);
    out
}

/// A team with a sentinel tree next to the capability directories and an
/// `echo` teammate that must keep answering whatever the hostile guests do.
pub struct Arena {
    /// The host and the team.
    pub f: Fixture,
    /// `dirs/sentinel`: `../sentinel` from every capability directory
    /// (`dirs/NAME`).
    pub sentinel: PathBuf,
    /// The sentinel tree as planted.
    pub planted: Snapshot,
    /// The bystander's member name.
    pub echo: String,
    pings: AtomicU32,
}

impl Arena {
    /// A team called `team` with the sentinel tree and `echo`.
    pub async fn new(team: &str) -> Arena {
        Arena::with_fixture(Fixture::new(team)).await
    }

    /// The same arena on a host built with `opts` (a model hub, …).
    pub async fn with_options(team: &str, opts: teamhost::embed::HostOptions) -> Arena {
        Arena::with_fixture(Fixture::with_options(team, opts)).await
    }

    async fn with_fixture(f: Fixture) -> Arena {
        let sentinel = f.tmp.path().join("dirs").join("sentinel");
        std::fs::create_dir_all(sentinel.join("sub")).unwrap();
        std::fs::write(
            sentinel.join("secret.txt"),
            format!("{SECRET} the sentinel's secret\n"),
        )
        .unwrap();
        std::fs::write(sentinel.join("notes.md"), "sentinel notes\n").unwrap();
        std::fs::write(
            sentinel.join("sub").join("deeper.txt"),
            format!("{SECRET} deeper\n"),
        )
        .unwrap();
        std::fs::write(sentinel.join("sub").join("empty"), "").unwrap();
        let planted = snapshot(&sentinel);
        assert_eq!(planted.len(), 6, "{planted:#?}");

        let dir = f.dir("echo");
        let mut req = SpawnRequest::new("echo", teamhost_tests::ECHO, "hello", &dir);
        req.settings.auto_claim = false;
        let echo = f.host.spawn(&f.name, req).await.unwrap().name;
        Arena {
            f,
            sentinel,
            planted,
            echo,
            pings: AtomicU32::new(0),
        }
    }

    /// A fresh capability directory `dirs/NAME`.
    pub fn dir(&self, name: &str) -> PathBuf {
        self.f.dir(name)
    }

    /// A capability directory `dirs/NAME` holding `link -> <sentinel>`.
    pub fn dir_with_link(&self, name: &str) -> PathBuf {
        let dir = self.dir(name);
        std::os::unix::fs::symlink(&self.sentinel, dir.join("link")).unwrap();
        dir
    }

    /// Spawns `hostile` as `name` in `dir`; returns its member name.
    pub async fn spawn(&self, req: SpawnRequest) -> String {
        self.f.host.spawn(&self.f.name, req).await.unwrap().name
    }

    /// A `bypassPermissions` accomplice in `dir` that first asks to be
    /// called `team-lead`: that spawn must be refused for the reserved name
    /// (nothing registered), and it joins as `accomplice` instead. Returns
    /// its member name.
    pub async fn spawn_as_accomplice(&self, dir: &Path) -> String {
        let posing = hostile_request("team-lead", "whoami", dir, "bypassPermissions");
        let refused = self.f.host.spawn(&self.f.name, posing).await;
        assert!(
            matches!(&refused, Err(teamhost::error::Error::InvalidName { name, .. }) if name == "team-lead"),
            "{refused:?}"
        );
        let name = self
            .spawn(hostile_request(
                "accomplice",
                "whoami",
                dir,
                "bypassPermissions",
            ))
            .await;
        assert_eq!(name, "accomplice");
        name
    }

    /// Spawns `hostile` as `name` with `prompt` in `mode`, in its own fresh
    /// directory, and waits until it has finished `attack`. Returns its
    /// results.
    pub async fn attack(&self, name: &str, mode: &str, prompt: &str) -> Vec<Step> {
        let dir = self.dir(name);
        let name = self.spawn(hostile_request(name, prompt, &dir, mode)).await;
        let attack = prompt.split_whitespace().next().unwrap();
        wait_done(&self.f, &name, attack, 1).await
    }

    /// Sends the echo teammate a fresh text and waits for it to come back:
    /// the host and the other teammates still work.
    pub async fn echo_answers(&self) {
        let n = self.pings.fetch_add(1, Ordering::SeqCst);
        let text = format!("still there? #{n}");
        self.f
            .host
            .send_as_lead(&self.f.name, &self.echo, &text, None)
            .unwrap();
        self.f
            .until(&format!("echo to answer {text:?}"), || {
                self.f
                    .lead_inbox()
                    .iter()
                    .any(|m| m.from == self.echo && m.text == text)
            })
            .await;
    }

    /// Asserts that the sentinel tree is exactly as planted (paths, contents,
    /// mtimes, modes) and that the echo teammate still answers.
    pub async fn assert_contained(&self) {
        let now = snapshot(&self.sentinel);
        assert_eq!(
            now, self.planted,
            "the sentinel tree outside the capability directories changed"
        );
        self.echo_answers().await;
        let echo = self
            .f
            .host
            .teammates(&self.f.name)
            .into_iter()
            .find(|t| t.name == self.echo)
            .unwrap();
        assert!(!echo.state.is_finished(), "{echo:?}");
    }

    /// Waits for `name` to stop and returns the reason it failed; panics if
    /// it stopped any other way.
    pub async fn failure(&self, events: &mut broadcast::Receiver<Event>, name: &str) -> String {
        let ended = next_event(events, &format!("{name} to stop"), |e| {
            matches!(e, Event::StateChanged { name: n, state, .. } if n == name && state.is_finished())
        })
        .await;
        match ended {
            Event::StateChanged {
                state: TeammateState::Failed(reason),
                ..
            } => reason,
            other => panic!("{name} should have failed: {other:?}"),
        }
    }

    /// The notices the host (`teamhost`) sent the lead.
    pub fn host_notices(&self) -> Vec<String> {
        self.f
            .lead_inbox()
            .into_iter()
            .filter(|m| m.from == teamhost::runner::HOST_SENDER)
            .map(|m| m.text)
            .collect()
    }
}

/// Runs the real `teamhost` command line in-process (its own `Store`, as a
/// separate process would have: no wake-ups for this host) with `--home
/// HOME` added, on a blocking thread.
pub async fn cli(home: &Path, args: &[&str]) -> anyhow::Result<()> {
    let mut argv: Vec<String> = vec!["teamhost".into()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv.push("--home".into());
    argv.push(home.display().to_string());
    let parsed = teamhost::cli::Cli::try_parse_from(&argv)?;
    tokio::task::spawn_blocking(move || teamhost::cli::run(parsed)).await?
}

/// The raw JSON of every `permission_request` `from` sent the lead.
pub fn permission_requests(f: &Fixture, from: &str) -> Vec<serde_json::Value> {
    raw_protocol(f, from, "permission_request")
}

/// The raw JSON of every protocol message of `kind` `from` sent the lead.
pub fn raw_protocol(f: &Fixture, from: &str, kind: &str) -> Vec<serde_json::Value> {
    f.lead_inbox()
        .iter()
        .filter(|m| m.from == from)
        .filter_map(|m| serde_json::from_str::<serde_json::Value>(&m.text).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

/// Waits for the `n`th `permission_request` from `from` in the lead's inbox
/// (woken by `InboxChanged { agent: "team-lead" }` among other events) and
/// returns it.
pub async fn wait_permission_request(f: &Fixture, from: &str, n: usize) -> serde_json::Value {
    f.until(&format!("permission request #{n} from {from}"), || {
        permission_requests(f, from).len() >= n
    })
    .await;
    permission_requests(f, from).swap_remove(n - 1)
}
