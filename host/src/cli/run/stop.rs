//! Stopping a run, promptly, and forcing it.
//!
//! A run stops on the first Ctrl-C (SIGINT), SIGTERM (`kill PID`), `q` in
//! the live view (which gives the terminal back, so the next Ctrl-C is a
//! signal again) or `--timeout`. It says so ("stopping N teammate(s)
//! (Ctrl-C again to force)…") and shuts the team down
//! ([`Host::shutdown_team`]): a teammate waiting for the lead's answer to a
//! permission request is denied at once ("the host is stopping"), its turn
//! ends and it takes its shutdown request; one that does not stop within
//! the shutdown timeout (30 s: a long tool call) is killed. Then the
//! summary, and the team is deleted unless `--keep`. (A teammate in its own
//! process — `--teammate-mode process` or `tmux` — is out of this host's
//! reach while it waits: it waits until the shutdown timeout, when its
//! SIGTERM ends the wait at once. A second Ctrl-C sends that SIGTERM now.)
//!
//! A second Ctrl-C or SIGTERM while the team shuts down forces the stop
//! ([`force`]): every teammate of this host is stopped where it is (an
//! in-process turn is abandoned and a Bash call in flight has its process
//! group killed; a teammate process gets SIGTERM and leaves the team on its
//! own), nothing more is written, and the process exits with 128 + the
//! signal's number. The team's files are left as they are, as after a
//! crash, and stay consistent: every store write replaces its file whole
//! (written beside it, then renamed), the cross-process locks are `flock`s
//! the kernel drops with the process (a lock directory left behind is known
//! to be a dead teamhost's and removed by the next writer), and a message a
//! turn was handling is noted for a resume. `teamhost run --resume` brings
//! the team back; `teamhost team delete T --force` removes it.

use std::path::Path;
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};

use super::display::Display;
use crate::embed::Host;
use crate::store::Team;

/// SIGINT and SIGTERM, caught from the start of the run (until then a
/// signal ends the process at once, as for any program).
pub(super) struct Signals {
    int: Signal,
    term: Signal,
}

/// One signal that stops the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Interrupt,
    Terminate,
}

impl Stop {
    /// How it is named to the person.
    pub(super) fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "Ctrl-C",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit status of a forced stop: 128 + the signal's number.
    pub(super) fn exit_code(self) -> i32 {
        128 + match self {
            Stop::Interrupt => libc::SIGINT,
            Stop::Terminate => libc::SIGTERM,
        }
    }
}

impl Signals {
    /// Catches SIGINT and SIGTERM from now on.
    pub(super) fn install() -> anyhow::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next SIGINT or SIGTERM (one that came before this call counts).
    pub(super) async fn next(&mut self) -> Stop {
        tokio::select! {
            _ = self.int.recv() => Stop::Interrupt,
            _ = self.term.recv() => Stop::Terminate,
        }
    }
}

/// A run ended by a second signal: [`super::run`] exits with `code` once
/// the async runtime is put away, without waiting for anything in it.
#[derive(Debug)]
pub(super) struct Forced {
    pub(super) code: i32,
}

impl std::fmt::Display for Forced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "forced stop")
    }
}

impl std::error::Error for Forced {}

/// The second signal: stops every teammate of this host where it is, gives
/// the terminal back, says what is left and how to go on, and answers the
/// [`Forced`] error that ends the process.
pub(super) async fn force(
    host: &Host,
    team: &Team,
    manifest: &Path,
    reporter: Display,
    sig: Stop,
) -> anyhow::Error {
    let stopped = host.abort_all();
    reporter.line(
        "run",
        format!(
            "{} again: forced stop; {stopped} teammate(s) stopped where they were",
            sig.name()
        ),
    );
    // The live view gives the terminal back; the lines are flushed. Both
    // are quick: a stuck display does not hold the exit.
    let _ = tokio::time::timeout(Duration::from_secs(1), reporter.stop()).await;
    eprintln!(
        "teamhost run: forced stop: team {} is left as it is at {}; continue it with `teamhost run --resume {}`, or remove it with `teamhost team delete {} --force`",
        team.name(),
        team.location().display(),
        manifest.display(),
        team.name()
    );
    anyhow::Error::new(Forced {
        code: sig.exit_code(),
    })
}
