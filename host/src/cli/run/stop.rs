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
//! process — `--teammate-mode process` or `tmux` — is told with SIGUSR1,
//! which ends its wait the same way: see `backends/monitor.rs`.)
//!
//! **A stop never waits on the store.** Before it shuts the team down, the
//! run asks its store one question, bounded by [`STORE_CHECK`]
//! ([`store_answers`]); a store that does not answer (a NATS server killed
//! or frozen) is not waited for: the teammates are stopped where they are,
//! as by a forced stop ([`stop_without_store`]), and the process exits
//! (128 + the signal's number, 1 after `--timeout`). Behind that, the
//! watchdog (`watchdog.rs`) ends the process on its own threads whatever
//! the run is stuck on: [`FIRST_WORD`](super::watchdog::FIRST_WORD) after the first signal,
//! the deadline or `q`, unless the store answered and the graceful shutdown
//! may take its timeout; even then only while the store goes on answering
//! (asked every second, given 3 s a question, two misses in a row: a store
//! that freezes or dies once the check passed ends the stop's wait too).
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
use super::watchdog::Watchdog;
use crate::embed::Host;
use crate::store::Team;

/// How long a stopping run waits for its store to answer before it stops
/// without it.
pub(super) const STORE_CHECK: Duration = Duration::from_secs(3);

/// How long after the shutdown timeout a graceful stop may still take
/// (sending the shutdown requests, the summary, deleting the team) before
/// the watchdog ends the process.
const AFTER_SHUTDOWN: Duration = Duration::from_secs(30);

/// SIGINT and SIGTERM, caught from the start of the run (until then a
/// signal ends the process at once, as for any program), and the watchdog
/// that hears them too.
pub(super) struct Signals {
    int: Signal,
    term: Signal,
    watchdog: Watchdog,
    /// What a stop without the store leaves, and how to go on.
    left: String,
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

    /// Whether `how` names a signal ([`Stop::name`]), not a key in the
    /// live view.
    pub(super) fn is_signal_name(how: &str) -> bool {
        [Stop::Interrupt, Stop::Terminate]
            .iter()
            .any(|s| s.name() == how)
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
    /// Catches SIGINT and SIGTERM from now on, and arms the watchdog of
    /// `host`'s run (`left`: what is left if it has to end the process,
    /// and how to go on).
    pub(super) fn install(host: &Host, left: String) -> anyhow::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            watchdog: Watchdog::start(host.clone(), left.clone())?,
            left,
        })
    }

    /// The run's watchdog.
    pub(super) fn watchdog(&self) -> &Watchdog {
        &self.watchdog
    }

    /// The next SIGINT or SIGTERM (one that came before this call counts).
    pub(super) async fn next(&mut self) -> Stop {
        next_of(&mut self.int, &mut self.term).await
    }

    /// The watchdog, and the next signal (as [`Signals::next`]) as a future
    /// that borrows only the signal streams: for a phase that arms the
    /// watchdog while it listens.
    pub(super) fn listen(&mut self) -> (&Watchdog, impl std::future::Future<Output = Stop> + '_) {
        (&self.watchdog, next_of(&mut self.int, &mut self.term))
    }
}

/// The first of SIGINT and SIGTERM.
async fn next_of(int: &mut Signal, term: &mut Signal) -> Stop {
    tokio::select! {
        _ = int.recv() => Stop::Interrupt,
        _ = term.recv() => Stop::Terminate,
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

/// Whether `team`'s store answers a read within [`STORE_CHECK`]: `Err`
/// says how it failed. The read runs on the blocking pool and is abandoned,
/// not awaited, when it does not return in time.
pub(super) async fn store_answers(team: &Team) -> Result<(), String> {
    let t = team.clone();
    let asked = crate::blocking::try_run("reading it", move || t.try_exists());
    match tokio::time::timeout(STORE_CHECK, asked).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {}s", STORE_CHECK.as_secs())),
    }
}

/// Before a stop touches the store: when it answers within
/// [`STORE_CHECK`], the watchdog lets the graceful shutdown take its
/// timeout (`shutdown`); when it does not, `Err` says how it failed, and
/// the stop goes on without it ([`stop_without_store`]).
pub(super) async fn check_store(
    signals: &Signals,
    team: &Team,
    shutdown: Duration,
) -> Result<(), String> {
    store_answers(team).await?;
    signals.watchdog().allow(shutdown + AFTER_SHUTDOWN, team);
    Ok(())
}

/// A stop whose store does not answer (`why`): every teammate of this host
/// is stopped where it is (as by a forced stop: nothing more is written),
/// the display ends (bounded), one line says what happened and how to go
/// on, and the [`Forced`] error ends the process with `code`.
pub(super) async fn stop_without_store(
    host: &Host,
    signals: &Signals,
    reporter: Display,
    why: &str,
    code: i32,
) -> anyhow::Error {
    let stopped = host.abort_all();
    reporter.line(
        "run",
        format!("the store does not answer ({why}): {stopped} teammate(s) stopped where they were"),
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), reporter.stop()).await;
    eprintln!(
        "teamhost run: stopped without the store, which did not answer ({why}); {stopped} teammate(s) of this host stopped where they were, nothing more written; {}",
        signals.left
    );
    anyhow::Error::new(Forced { code })
}

/// The run's work phase ([`crate::run::Run::until_done`]) between the
/// signals, the watchdog and the display: a signal, or quitting the live
/// view, stops it; the watchdog is armed when the work starts. Afterwards
/// the work's deadline is cleared, and a stop the watchdog could not hear (a
/// key in the live view) starts its clock.
pub(super) async fn until_done(
    run: &mut crate::run::Run,
    display: &Display,
    signals: &mut Signals,
) -> anyhow::Result<crate::run::Ended> {
    let ended = {
        let (watchdog, signal) = signals.listen();
        let narration = super::display::Narration { display, watchdog };
        let stop = async {
            tokio::select! {
                sig = signal => sig.name(),
                how = display.quit_requested() => how,
            }
        };
        run.until_done(&narration, stop).await?
    };
    signals.watchdog().set_deadline(None);
    if let crate::run::Ended::Interrupted(how) = &ended {
        if !Stop::is_signal_name(how) {
            signals.watchdog().asked(how);
        }
    }
    Ok(ended)
}
