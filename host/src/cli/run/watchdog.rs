//! The run's stop watchdog: once a stop is asked for, the process ends
//! within a bound, whatever the run is stuck on.
//!
//! The run stops itself (`stop.rs`), but only where its task gets to run. A
//! store call that does not return holds that task (a NATS server killed or
//! frozen: each call retries for 30 s, and a run makes many), and with it
//! the signal it would have seen and its `--timeout`. The watchdog depends
//! on neither the task nor the async runtime: its own threads hear SIGINT
//! and SIGTERM (through `signal-hook-registry`, beside tokio's handler,
//! which still gets them) and keep the run's deadline.
//!
//! | event | what the watchdog does |
//! |---|---|
//! | the first SIGINT or SIGTERM, the deadline ([`Watchdog::set_deadline`]) passing, [`Watchdog::asked`] (`q` in the live view) | the stop clock starts: the run has [`FIRST_WORD`] to end, or to find its store answering and say so ([`Watchdog::allow`]) |
//! | [`Watchdog::allow`]`(d, team)` | the bound becomes `d` from now (a graceful shutdown, the store answering: up to the shutdown timeout), for the stop under way or one whose signal the watchdog hears later; the store is asked again every [`STORE_PROBE_EVERY`] until the run is over |
//! | two questions in a row to the store not answered within [`STORE_PROBE_WAIT`] each after that (the store froze or died once the run found it answering) | the bound is now, for a stop under way or one that starts later: the stop does not wait on a store that stopped answering |
//! | a signal once the stop clock runs (a second Ctrl-C, or one after `--timeout`) | the run's own forced stop gets [`FORCE_GRACE`] |
//! | the bound passes | every teammate of the host is stopped where it is ([`Host::abort_all`]), one line on stderr says what happened and how to go on, and the process exits (128 + the signal's number; 1 after `--timeout` or `q`) without waiting for anything |
//!
//! Dropping the [`Watchdog`] disarms it (the run is over: what is left is
//! `EXIT_GRACE`'s).

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::embed::Host;
use crate::store::Team;

/// How long the run has, once a stop is asked for, to end or to show that
/// its store answers ([`Watchdog::allow`]). Its own check of the store
/// takes at most `STORE_CHECK` (3 s).
pub(super) const FIRST_WORD: Duration = Duration::from_secs(8);

/// How long the run's own forced stop (a second signal) gets before the
/// watchdog ends the process.
pub(super) const FORCE_GRACE: Duration = Duration::from_secs(3);

/// How often a graceful stop's store is asked whether it still answers.
pub(super) const STORE_PROBE_EVERY: Duration = Duration::from_secs(1);

/// How long one such question may go unanswered (the run's own check
/// waits as long: `STORE_CHECK`). Two in a row unanswered, and the store
/// counts as gone: one slow answer (a loaded machine, a NATS leader
/// election) does not cut a healthy stop short.
pub(super) const STORE_PROBE_WAIT: Duration = Duration::from_secs(3);

/// How many questions in a row must go unanswered.
const STORE_PROBE_MISSES: u32 = 2;

/// Why the run is stopping, as the watchdog knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Signal(libc::c_int),
    Timeout,
    Asked(&'static str),
}

impl How {
    fn describe(self) -> String {
        match self {
            How::Signal(libc::SIGINT) => "Ctrl-C (SIGINT)".into(),
            How::Signal(libc::SIGTERM) => "SIGTERM".into(),
            How::Signal(n) => format!("signal {n}"),
            How::Timeout => "--timeout".into(),
            How::Asked(how) => how.into(),
        }
    }

    fn exit_code(self) -> i32 {
        match self {
            How::Signal(n) => 128 + n,
            How::Timeout | How::Asked(_) => 1,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// `--timeout`: a stop when it passes.
    deadline: Option<Instant>,
    /// The stop under way: why, since when, and when the process ends
    /// unless the run ends first.
    stop: Option<(How, Instant, Instant)>,
    /// A second signal came: [`Watchdog::allow`] extends nothing more.
    forced: bool,
    /// The store stopped answering once the run found it answering: why,
    /// for the exit line. A stop under way, or one that starts later, ends
    /// at once.
    store_gone: Option<String>,
    /// Until when the graceful shutdown may go on ([`Watchdog::allow`]): a
    /// stop whose signal the watchdog's thread hears only after the run
    /// asked for this gets it too.
    allowed_until: Option<Instant>,
    /// The store is asked whether it answers ([`watch_store`]).
    watching_store: bool,
    /// The run is over: the watchdog ends.
    done: bool,
}

impl State {
    /// Starts the stop clock for `how`, unless it runs already: the run
    /// has [`FIRST_WORD`], or what [`Watchdog::allow`] gave it if that is
    /// longer, or nothing if its store stopped answering.
    fn begin(&mut self, how: How, now: Instant) {
        if self.stop.is_some() {
            return;
        }
        let mut at = now + FIRST_WORD;
        if let Some(until) = self.allowed_until {
            at = at.max(until);
        }
        if self.store_gone.is_some() {
            at = now;
        }
        self.stop = Some((how, now, at));
    }
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn allow(&self, d: Duration) {
        let mut st = self.lock();
        if st.forced {
            return;
        }
        let until = Instant::now() + d;
        st.allowed_until = Some(until);
        if st.store_gone.is_none() {
            if let Some((_, _, at)) = &mut st.stop {
                *at = until;
            }
        }
        self.changed.notify_all();
    }

    /// The store did not answer (`why`): a stop under way ends now, and
    /// one that starts later at once.
    fn store_gone(&self, why: String) {
        let mut st = self.lock();
        let now = Instant::now();
        st.store_gone.get_or_insert(why);
        if let Some((_, _, at)) = &mut st.stop {
            *at = (*at).min(now);
        }
        self.changed.notify_all();
    }

    /// Waits up to `d` or until the run is over; whether it is over.
    fn wait_done(&self, d: Duration) -> bool {
        let st = self.lock();
        let (st, _) = self
            .changed
            .wait_timeout_while(st, d, |st| !st.done)
            .unwrap_or_else(|e| e.into_inner());
        st.done
    }

    fn on_signal(&self, sig: libc::c_int) {
        let mut st = self.lock();
        let now = Instant::now();
        match &mut st.stop {
            None => st.begin(How::Signal(sig), now),
            Some((how, _, at)) => {
                // The run forces its stop on this signal; it gets a moment.
                *how = How::Signal(sig);
                *at = (*at).min(now + FORCE_GRACE);
                st.forced = true;
            }
        }
        self.changed.notify_all();
    }
}

/// The armed watchdog; see the module docs.
pub(super) struct Watchdog {
    shared: Arc<Shared>,
    ids: Vec<signal_hook_registry::SigId>,
    /// The write end the signal handlers write to, kept open while they may.
    _pipe: UnixStream,
}

impl Watchdog {
    /// Arms the watchdog of `host`'s run: from now on SIGINT and SIGTERM
    /// start (or force) the stop clock. `left` says, in the exit line, what
    /// is left and how to go on (the team's files, `--resume`).
    pub(super) fn start(host: Host, left: String) -> anyhow::Result<Watchdog> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let (tx, mut rx) = UnixStream::pair()?;
        tx.set_nonblocking(true)?;
        let fd = tx.as_raw_fd();
        let mut ids = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let byte = sig as u8;
            // SAFETY: the action only calls write(2), which is
            // async-signal-safe, on a descriptor that stays open while the
            // action is registered (`_pipe`, dropped after `unregister`);
            // a full pipe makes the write fail, never block.
            let id = unsafe {
                signal_hook_registry::register(sig, move || {
                    let _ = libc::write(fd, (&byte as *const u8).cast(), 1);
                })
            }?;
            ids.push(id);
        }
        let heard = shared.clone();
        std::thread::Builder::new()
            .name("teamhost-stop-signals".into())
            .spawn(move || {
                let mut byte = [0u8; 1];
                while let Ok(1) = rx.read(&mut byte) {
                    heard.on_signal(libc::c_int::from(byte[0]));
                }
            })?;
        let watching = shared.clone();
        std::thread::Builder::new()
            .name("teamhost-stop-watchdog".into())
            .spawn(move || watch(&watching, host, &left))?;
        Ok(Watchdog {
            shared,
            ids,
            _pipe: tx,
        })
    }

    /// The run stops when `at` passes (`--timeout`); `None`: no deadline
    /// (the work phase is over).
    ///
    /// A deadline that passed before this call starts the stop clock (if
    /// it does not run already), whether or not the watchdog's thread woke
    /// for it: the run's own timer may end the work phase first.
    pub(super) fn set_deadline(&self, at: Option<Instant>) {
        let mut st = self.shared.lock();
        let now = Instant::now();
        if st.deadline.is_some_and(|d| now >= d) {
            st.begin(How::Timeout, now);
        }
        st.deadline = at;
        drop(st);
        self.shared.changed.notify_all();
    }

    /// The run stops for a reason the watchdog cannot hear (a key in the
    /// live view): the stop clock starts, unless it runs already. Not for a
    /// signal: the watchdog hears that itself, and may hear it after the
    /// run, when this would make it a second one.
    pub(super) fn asked(&self, how: &'static str) {
        self.shared.lock().begin(How::Asked(how), Instant::now());
        self.shared.changed.notify_all();
    }

    /// The graceful shutdown may take `d` from now (`team`'s store
    /// answers), as long as the store goes on answering: it is asked every
    /// [`STORE_PROBE_EVERY`] on a thread of its own, and one question
    /// unanswered for [`STORE_PROBE_WAIT`] ends the stop. This holds for
    /// the stop under way and for one the watchdog's thread hears of only
    /// later (the run's own signal handler may hear a signal, check the
    /// store and call this before that thread has run). Nothing after a
    /// forced stop.
    pub(super) fn allow(&self, d: Duration, team: &Team) {
        self.shared.allow(d);
        {
            let mut st = self.shared.lock();
            if std::mem::replace(&mut st.watching_store, true) {
                return;
            }
        }
        let shared = self.shared.clone();
        let team = team.clone();
        // A thread that cannot be started leaves the bound `d`, as before.
        let _ = std::thread::Builder::new()
            .name("teamhost-stop-store".into())
            .spawn(move || watch_store(&shared, &team));
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook_registry::unregister(id);
        }
        self.shared.lock().done = true;
        self.shared.changed.notify_all();
    }
}

/// The watchdog thread: waits for the stop clock, and ends the process when
/// its bound passes.
fn watch(shared: &Shared, host: Host, left: &str) {
    let mut st = shared.lock();
    loop {
        if st.done {
            return;
        }
        let now = Instant::now();
        if st.deadline.is_some_and(|d| now >= d) {
            st.begin(How::Timeout, now);
        }
        let wake = match st.stop {
            Some((how, since, at)) if now >= at => {
                let store_gone = st.store_gone.take();
                drop(st);
                fire(host, how, since.elapsed(), left, store_gone.as_deref());
            }
            Some((_, _, at)) => Some(at),
            None => st.deadline,
        };
        st = match wake {
            Some(at) => {
                shared
                    .changed
                    .wait_timeout(st, at.saturating_duration_since(now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => shared.changed.wait(st).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

/// Asks `team`'s store, again and again until the run is over, whether it
/// answers; [`STORE_PROBE_MISSES`] questions in a row unanswered within
/// [`STORE_PROBE_WAIT`] each end the stop's wait ([`Shared::store_gone`]).
/// Each question runs on a thread of its own, abandoned if it does not
/// return (at most that many are).
fn watch_store(shared: &Arc<Shared>, team: &Team) {
    let mut missed = 0;
    while !shared.wait_done(STORE_PROBE_EVERY) {
        let (tx, rx) = std::sync::mpsc::channel();
        let asked = team.clone();
        if std::thread::Builder::new()
            .name("teamhost-stop-store-ask".into())
            .spawn(move || {
                let _ = tx.send(asked.try_exists().map(|_| ()));
            })
            .is_err()
        {
            return;
        }
        // An answer, even an error, is a store that answers.
        if rx.recv_timeout(STORE_PROBE_WAIT).is_ok() {
            missed = 0;
            continue;
        }
        missed += 1;
        if missed >= STORE_PROBE_MISSES {
            shared.store_gone(format!(
                "the store stopped answering ({missed} questions in a row unanswered for {}s each)",
                STORE_PROBE_WAIT.as_secs()
            ));
            return;
        }
    }
}

/// Stops the host's teammates where they are, says so, and exits.
fn fire(host: Host, how: How, waited: Duration, left: &str, store_gone: Option<&str>) -> ! {
    // Stopping the teammates touches only this machine (the kill flags,
    // SIGTERM to its teammate processes); it still gets a bound.
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("teamhost-stop-abort".into())
        .spawn(move || {
            let _ = tx.send(host.abort_all());
        });
    let stopped = rx.recv_timeout(Duration::from_secs(2)).ok();
    let teammates = match stopped {
        Some(n) => format!("{n} teammate(s) of this host stopped where they were"),
        None => "its teammates could not all be stopped (see `teamhost ps`)".into(),
    };
    let stuck = store_gone.unwrap_or(
        "a step of it does not return (most often a call to a store that does not answer)",
    );
    eprintln!(
        "teamhost run: the stop ({}) did not finish within {:.0}s: {stuck}; exiting without waiting for it; {teammates}; {left}",
        how.describe(),
        waited.as_secs_f64()
    );
    std::process::exit(how.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_extends_the_bound_and_a_second_signal_shortens_it_for_good() {
        let shared = Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        };
        shared.on_signal(libc::SIGTERM);
        let (how, _, first) = shared.lock().stop.unwrap();
        assert_eq!(how, How::Signal(libc::SIGTERM));
        assert!(first > Instant::now() + FIRST_WORD - Duration::from_secs(1));
        // The store answered: the graceful shutdown may take long.
        shared.allow(Duration::from_secs(100));
        let (_, _, allowed) = shared.lock().stop.unwrap();
        assert!(allowed > Instant::now() + Duration::from_secs(90));
        shared.on_signal(libc::SIGINT);
        let (how, _, forced_at) = shared.lock().stop.unwrap();
        assert_eq!(how.exit_code(), 128 + libc::SIGINT);
        assert!(forced_at <= Instant::now() + FORCE_GRACE, "shortened");
        assert!(shared.lock().forced);
        shared.allow(Duration::from_secs(100));
        let (_, _, after) = shared.lock().stop.unwrap();
        assert_eq!(after, forced_at, "a forced stop is not extended");
    }

    #[test]
    fn a_store_gone_during_a_stop_ends_its_wait_now_and_says_why() {
        let shared = Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        };
        shared.on_signal(libc::SIGINT);
        shared.allow(Duration::from_secs(60));
        shared.store_gone("no answer within 3s".into());
        let st = shared.lock();
        let (_, _, at) = st.stop.unwrap();
        assert!(at <= Instant::now(), "the bound is now");
        assert_eq!(st.store_gone.as_deref(), Some("no answer within 3s"));
        drop(st);
        // The prober ends with the run.
        assert!(!shared.wait_done(Duration::from_millis(1)));
        shared.lock().done = true;
        assert!(shared.wait_done(Duration::from_secs(60)));
    }

    #[test]
    fn a_signal_heard_after_the_run_allowed_its_shutdown_gets_the_allowance_or_none_if_the_store_went(
    ) {
        let shared = Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        };
        // The run heard the signal first, found its store answering and
        // allowed the graceful shutdown; the watchdog's thread hears the
        // same signal only now: a first signal, with the allowance.
        shared.allow(Duration::from_secs(60));
        shared.on_signal(libc::SIGINT);
        let st = shared.lock();
        let (how, _, at) = st.stop.unwrap();
        assert_eq!(how, How::Signal(libc::SIGINT));
        assert!(at > Instant::now() + Duration::from_secs(50), "allowed");
        assert!(!st.forced, "not a second signal");
        drop(st);

        // The store went before the watchdog heard the signal: at once.
        let gone = Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        };
        gone.allow(Duration::from_secs(60));
        gone.store_gone("no answer within 3s".into());
        assert!(gone.lock().stop.is_none(), "no stop asked yet");
        gone.on_signal(libc::SIGTERM);
        let (_, _, at) = gone.lock().stop.unwrap();
        assert!(at <= Instant::now());
    }
}
