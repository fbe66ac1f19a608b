//! [`TeamLease`]: a host's claim on the teammates it runs in one team, kept
//! in a store shared by several hosts ([`crate::store::failover`]), renewed
//! while the host lives, and the fence that keeps a host whose lease was
//! taken over from writing again.
//!
//! The signatures are the contract `embed::failover` and the CLI build on
//! (host failover); `Host` holds one lease per team (`failover/host_lease.rs`).
//!
//! **Timing.** The lease is renewed every `lease / 3`. The holder counts it
//! valid until half a lease after it *sent* its last successful renewal; a
//! write after that first renews synchronously, and is refused with
//! [`Error::LeaseLost`](crate::Error::LeaseLost) when the renewal finds the
//! lease taken over. An observer takes over only after it has seen one
//! revision of the lease unchanged for a whole lease on its own clock, so
//! the holder has stopped writing before anyone may take over. No two
//! machines' wall clocks are compared.
//!
//! **Renewals.** A task on the tokio runtime that took the lease renews it
//! by compare-and-swap on the revision it last wrote, serialised with the
//! synchronous renewals of [`TeamLease::check`] (one lock). A lost race is
//! read back: `TakenOver { by }` makes the lease lost for good (and fires
//! [`TeamLease::lost`]); the holder's own renewal whose answer was lost but
//! which landed (told apart by its `renewed_at`, strictly growing per
//! holder) is taken and renewed over; anything else (a record rewritten or
//! removed by someone) is counted as lost too, with a warning.
//!
//! **An unreachable store** fails renewals (logged); past its validity
//! `check` answers the store's own error (`StoreUnavailable` on NATS), not
//! `LeaseLost`: nothing says another host took over, and a renewal that
//! succeeds later makes writes possible again.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::store::failover::{HostLease, LeaseState, Revision};
use crate::store::TeamStore;

/// How long a host's lease lasts without renewal, by default.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// Who this host process is, in leases and run records. One per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIdentity {
    /// `{hostname}-{pid}-{8 random hex}`: unique per process, even when a
    /// pid is reused.
    pub id: String,
    /// The machine's name.
    pub hostname: String,
    /// This process.
    pub pid: u32,
}

impl HostIdentity {
    /// This process's identity (made once, the same on every call).
    pub fn this_process() -> &'static HostIdentity {
        static ME: OnceLock<HostIdentity> = OnceLock::new();
        ME.get_or_init(|| HostIdentity::new(&hostname(), std::process::id()))
    }

    /// An identity for `hostname` and `pid` with a fresh random suffix: for
    /// tests that play several hosts in one process. The id's hostname part
    /// keeps `A-Za-z0-9-` only.
    pub fn new(hostname: &str, pid: u32) -> HostIdentity {
        let clean: String = hostname
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        HostIdentity {
            id: format!("{clean}-{pid}-{:08x}", fastrand::u32(..)),
            hostname: hostname.to_string(),
            pid,
        }
    }
}

/// The machine's name (`localhost` when it cannot be read).
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, and
    // gethostname writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    match (rc, std::str::from_utf8(&buf[..end])) {
        (0, Ok(name)) if !name.is_empty() => name.to_string(),
        _ => "localhost".to_string(),
    }
}

/// Unix milliseconds now (for `renewed_at`, which people read).
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A held lease on one team. Renewed by a task on the current tokio runtime
/// until released, dropped with its last handle, or lost.
///
/// **A store that cannot be reached.** Renewals fail (each is logged) and
/// the lease stays valid until half a lease after the last successful one
/// was sent; after that [`TeamLease::check`] tries to renew and answers the
/// store's own error (`Error::StoreUnavailable` on NATS), not `LeaseLost`:
/// nothing says another host took over, and the write it guards would fail
/// on that store anyway. A renewal that later succeeds makes writes possible
/// again; one that finds the lease taken over makes them `LeaseLost` for good.
pub struct TeamLease {
    store: Arc<dyn TeamStore>,
    team: String,
    me: HostIdentity,
    length: Duration,
    /// Held across a renewal, so that the renewer and a `check` never race
    /// each other's compare-and-swap (one would see the other's revision and
    /// think the lease rewritten).
    renewing: Mutex<State>,
    lost: watch::Sender<Option<String>>,
    renewer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for TeamLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamLease")
            .field("team", &self.team)
            .field("host", &self.me.id)
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct State {
    /// The revision of the record this host wrote last.
    revision: Revision,
    /// Half a lease after sending the last successful renewal.
    valid_until: Instant,
    /// Released by this host: no more renewals; writes are not fenced.
    released: bool,
    /// The `renewed_at` of the last record written (strictly growing, so
    /// each write of this holder is told apart by it).
    last_stamp: u64,
    /// The `renewed_at` of renewals that failed without an answer: one may
    /// have landed all the same (the server stored it, the answer was lost),
    /// which the next renewal's lost race must not take for a rewrite.
    unanswered: Vec<u64>,
}

impl TeamLease {
    /// Creates this host's lease record in `team` (state `Held`) and starts
    /// renewing it. Fails when the store has no failover (the file store)
    /// with an error saying a shared store is needed.
    ///
    /// A record this host left `Released` in the team is taken again; one
    /// `TakenOver` is `Error::LeaseLost` (this process was adopted away from
    /// the team once and does not come back); one still `Held` is an error
    /// (this process holds it already: use that handle).
    ///
    /// `store` should be the host's plain store, not a fenced one (the
    /// lease's own writes are not fenced by itself).
    pub async fn take(
        store: Arc<dyn TeamStore>,
        team: &str,
        me: &HostIdentity,
        lease: Duration,
    ) -> Result<Arc<TeamLease>> {
        let team_owned = team.to_string();
        let me_owned = me.clone();
        let s = Arc::clone(&store);
        let (revision, sent) = crate::blocking::try_run("taking the lease", move || {
            create_record(&*s, &team_owned, &me_owned, lease)
        })
        .await?;
        let (lost, _) = watch::channel(None);
        let held = Arc::new(TeamLease {
            store,
            team: team.to_string(),
            me: me.clone(),
            length: lease,
            renewing: Mutex::new(State {
                revision,
                valid_until: sent + lease / 2,
                released: false,
                last_stamp: 0,
                unanswered: Vec::new(),
            }),
            lost,
            renewer: Mutex::new(None),
        });
        let task = tokio::spawn(renew_loop(Arc::downgrade(&held), sent));
        *lock(&held.renewer) = Some(task);
        Ok(held)
    }

    /// `Ok` while this host may write for the team; renews first when the
    /// last renewal is more than half a lease old. `Err(LeaseLost)` once the
    /// lease was taken over (for good). Synchronous: store calls run on
    /// blocking threads.
    ///
    /// After [`TeamLease::release`], `Ok`: a released lease is never taken
    /// over, so nothing is fenced.
    pub fn check(&self) -> Result<()> {
        if let Some(by) = self.lost.borrow().clone() {
            return Err(self.lost_error(by));
        }
        let mut state = lock(&self.renewing);
        if state.released || Instant::now() < state.valid_until {
            return Ok(());
        }
        self.renew_locked(&mut state)
    }

    /// `Some(adopting host id)` once the lease was taken over; watch it to
    /// stop this host's copies of the teammates.
    pub fn lost(&self) -> watch::Receiver<Option<String>> {
        self.lost.subscribe()
    }

    /// Marks the lease `Released` (this host ended cleanly) and stops
    /// renewing. Others then take nothing over. A record already gone (the
    /// team was deleted) is fine; one taken over is `Err(LeaseLost)`.
    pub fn release(&self) -> Result<()> {
        if let Some(task) = lock(&self.renewer).take() {
            task.abort();
        }
        if let Some(by) = self.lost.borrow().clone() {
            return Err(self.lost_error(by));
        }
        let mut state = lock(&self.renewing);
        if state.released {
            return Ok(());
        }
        let failover = self.failover()?;
        let record = self.record(LeaseState::Released);
        match failover.write_lease(&self.team, &record, Some(state.revision))? {
            Some(revision) => {
                state.revision = revision;
                state.released = true;
                Ok(())
            }
            None => match self.current()? {
                None => {
                    state.released = true;
                    Ok(())
                }
                Some(_) => {
                    let by = self.judge_lost_race(state.revision)?;
                    Err(self.lost_error(by))
                }
            },
        }
    }

    /// The lease's length.
    pub fn length(&self) -> Duration {
        self.length
    }

    /// The team it is on.
    pub fn team(&self) -> &str {
        &self.team
    }

    /// The host holding it.
    pub fn host(&self) -> &HostIdentity {
        &self.me
    }

    /// The error a write gets once the lease is lost.
    fn lost_error(&self, by: String) -> Error {
        Error::LeaseLost {
            team: self.team.clone(),
            by,
        }
    }

    fn failover(&self) -> Result<&dyn crate::store::Failover> {
        self.store.failover().ok_or_else(|| no_failover(&self.team))
    }

    fn record(&self, state: LeaseState) -> HostLease {
        HostLease {
            host: self.me.id.clone(),
            hostname: self.me.hostname.clone(),
            pid: self.me.pid,
            lease_ms: self.length.as_millis() as u64,
            renewed_at: unix_ms(),
            state,
        }
    }

    /// This host's record as the store has it now.
    fn current(&self) -> Result<Option<(HostLease, Revision)>> {
        Ok(self
            .failover()?
            .read_leases(&self.team)?
            .into_iter()
            .find(|(l, _)| l.host == self.me.id))
    }

    /// One renewal, with the renewal lock held: CAS on the revision held.
    /// A lost race means someone else wrote the record — lost for good —
    /// unless the record there is one of this holder's own unanswered
    /// renewals (it landed, its answer did not): then its revision is taken
    /// and the renewal tried once more.
    fn renew_locked(&self, state: &mut State) -> Result<()> {
        if state.released {
            return Ok(());
        }
        for _ in 0..2 {
            let sent = Instant::now();
            let mut record = self.record(LeaseState::Held);
            record.renewed_at = record.renewed_at.max(state.last_stamp + 1);
            state.last_stamp = record.renewed_at;
            let written = self
                .failover()?
                .write_lease(&self.team, &record, Some(state.revision));
            match written {
                Ok(Some(revision)) => {
                    state.revision = revision;
                    state.valid_until = state.valid_until.max(sent + self.length / 2);
                    state.unanswered.clear();
                    return Ok(());
                }
                Ok(None) => {
                    if let Some(revision) = self.own_unanswered(state)? {
                        state.revision = revision;
                        state.unanswered.clear();
                        continue;
                    }
                    break;
                }
                Err(e) => {
                    state.unanswered.push(record.renewed_at);
                    return Err(e);
                }
            }
        }
        let by = self.judge_lost_race(state.revision)?;
        self.lost.send_replace(Some(by.clone()));
        Err(self.lost_error(by))
    }

    /// The revision of the record in the store when it is one of this
    /// holder's unanswered renewals.
    fn own_unanswered(&self, state: &State) -> Result<Option<Revision>> {
        if state.unanswered.is_empty() {
            return Ok(None);
        }
        Ok(self.current()?.and_then(|(l, rev)| {
            let mine = l.state == LeaseState::Held
                && l.pid == self.me.pid
                && state.unanswered.contains(&l.renewed_at);
            mine.then_some(rev)
        }))
    }

    /// Who has the lease, after a renewal lost its compare-and-swap.
    fn judge_lost_race(&self, held: Revision) -> Result<String> {
        Ok(match self.current()? {
            Some((
                HostLease {
                    state: LeaseState::TakenOver { by, .. },
                    ..
                },
                _,
            )) => by,
            Some((other, revision)) => {
                tracing::warn!(team = %self.team, host = %self.me.id, held, revision, state = ?other.state,
                    "this host's lease record was rewritten by someone else; counting the lease as lost");
                format!("(unknown: the lease record was rewritten at revision {revision})")
            }
            None => {
                tracing::warn!(team = %self.team, host = %self.me.id,
                    "this host's lease record is gone (the team deleted?); counting the lease as lost");
                "(nobody: the lease record was removed)".to_string()
            }
        })
    }
}

/// One lease as the fence of a store: writes for its team are checked,
/// others pass (a host with several teams uses its table of leases).
impl crate::store::Fence for TeamLease {
    fn check(&self, team: &str) -> Result<()> {
        if team == self.team {
            TeamLease::check(self)
        } else {
            Ok(())
        }
    }
}

impl Drop for TeamLease {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.renewer).take() {
            task.abort();
        }
    }
}

/// Writes this host's record `Held`: created, or over its own `Released` one.
fn create_record(
    store: &dyn TeamStore,
    team: &str,
    me: &HostIdentity,
    lease: Duration,
) -> Result<(Revision, Instant)> {
    let failover = store.failover().ok_or_else(|| no_failover(team))?;
    let expect = match failover
        .read_leases(team)?
        .into_iter()
        .find(|(l, _)| l.host == me.id)
    {
        None => None,
        Some((l, r)) => match l.state {
            LeaseState::Released => Some(r),
            LeaseState::TakenOver { by, .. } => {
                return Err(Error::LeaseLost {
                    team: team.to_string(),
                    by,
                })
            }
            LeaseState::Held => {
                return Err(Error::StoreRule(format!(
                    "team {team}: host {} already holds a lease there (one TeamLease per team and host)",
                    me.id
                )))
            }
        },
    };
    let record = HostLease {
        host: me.id.clone(),
        hostname: me.hostname.clone(),
        pid: me.pid,
        lease_ms: lease.as_millis() as u64,
        renewed_at: unix_ms(),
        state: LeaseState::Held,
    };
    let sent = Instant::now();
    match failover.write_lease(team, &record, expect)? {
        Some(revision) => Ok((revision, sent)),
        None => Err(Error::StoreRule(format!(
            "team {team}: host {}'s lease record was written by someone else while it was being taken; try again",
            me.id
        ))),
    }
}

fn no_failover(team: &str) -> Error {
    Error::StoreRule(format!(
        "team {team}: a host lease needs a store shared by several hosts (--store nats://…); this store has no failover"
    ))
}

/// Renews every lease/3 (counted from the last renewal sent) until the
/// lease is released, dropped or lost. A failed renewal is logged and tried
/// again at the next tick.
async fn renew_loop(lease: Weak<TeamLease>, mut last_sent: Instant) {
    loop {
        let period = match lease.upgrade() {
            Some(l) => l.length / 3,
            None => return,
        };
        tokio::time::sleep_until((last_sent + period).into()).await;
        let Some(held) = lease.upgrade() else { return };
        let sent = Instant::now();
        let outcome = tokio::task::spawn_blocking(move || {
            let (r, released) = {
                let mut state = lock(&held.renewing);
                (held.renew_locked(&mut state), state.released)
            };
            (r, released, held)
        })
        .await;
        let Ok((result, released, held)) = outcome else {
            return;
        };
        match result {
            Ok(()) if released => return,
            Ok(()) => {}
            Err(Error::LeaseLost { by, .. }) => {
                tracing::warn!(team = %held.team, host = %held.me.id, by = %by, "this host's lease was taken over");
                return;
            }
            Err(e) => {
                tracing::warn!(team = %held.team, host = %held.me.id, error = %e, "lease renewal failed; trying again")
            }
        }
        last_sent = sent;
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    const LEASE: Duration = Duration::from_millis(300);

    fn store() -> Arc<dyn TeamStore> {
        Arc::new(MemoryStore::new())
    }

    fn mine(store: &dyn TeamStore, me: &HostIdentity) -> (HostLease, Revision) {
        let leases = store.failover().unwrap().read_leases("t").unwrap();
        leases.into_iter().find(|(l, _)| l.host == me.id).unwrap()
    }

    /// Reads until `ok` holds, for at most 10 s.
    async fn until(what: &str, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ok() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn this_process_is_one_identity_with_a_random_suffix() {
        let me = HostIdentity::this_process();
        assert!(std::ptr::eq(me, HostIdentity::this_process()));
        assert_eq!(me.pid, std::process::id());
        let suffix = me.id.rsplit('-').next().unwrap();
        assert_eq!(suffix.len(), 8, "{}", me.id);
        assert_ne!(HostIdentity::new("h", 1).id, HostIdentity::new("h", 1).id);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn renewals_keep_the_revision_moving() {
        let store = store();
        let me = HostIdentity::new("a", 1);
        let lease = TeamLease::take(Arc::clone(&store), "t", &me, LEASE)
            .await
            .unwrap();
        let (first, r0) = mine(&*store, &me);
        assert_eq!(first.state, LeaseState::Held);
        assert_eq!(first.lease_ms, 300);
        let mut seen = vec![r0];
        until("three renewals", || {
            let (l, r) = mine(&*store, &me);
            assert_eq!(l.state, LeaseState::Held);
            if r != *seen.last().unwrap() {
                seen.push(r);
            }
            seen.len() >= 4
        })
        .await;
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        lease.check().unwrap();
        assert_eq!(*lease.lost().borrow(), None);
        assert_eq!(lease.team(), "t");
        assert_eq!(lease.length(), LEASE);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_takeover_by_another_host_is_seen_by_check_and_lost() {
        let store = store();
        let me = HostIdentity::new("a", 1);
        let lease = TeamLease::take(Arc::clone(&store), "t", &me, LEASE)
            .await
            .unwrap();
        let mut lost = lease.lost();
        // Host b takes over at the revision it read (retrying when a renewal
        // moved it on, as an adopter would after watching it again).
        let failover = store.failover().unwrap();
        loop {
            let (mut l, r) = mine(&*store, &me);
            l.state = LeaseState::TakenOver {
                by: "b-2-00000000".into(),
                at: 0,
            };
            if failover.write_lease("t", &l, Some(r)).unwrap().is_some() {
                break;
            }
        }
        tokio::time::timeout(Duration::from_secs(10), lost.changed())
            .await
            .expect("lost() fired")
            .unwrap();
        assert_eq!(lost.borrow().as_deref(), Some("b-2-00000000"));
        match lease.check() {
            Err(Error::LeaseLost { team, by }) => {
                assert_eq!((team.as_str(), by.as_str()), ("t", "b-2-00000000"))
            }
            other => panic!("expected LeaseLost, got {other:?}"),
        }
        assert!(matches!(lease.release(), Err(Error::LeaseLost { .. })));
        // The record stays the adopter's.
        assert!(matches!(
            mine(&*store, &me).0.state,
            LeaseState::TakenOver { .. }
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_check_past_half_a_lease_renews_first_and_sees_a_takeover() {
        let store = store();
        let me = HostIdentity::new("a", 1);
        let lease = TeamLease::take(Arc::clone(&store), "t", &me, LEASE)
            .await
            .unwrap();
        // Stop the renewer, as a paused host's would be.
        lock(&lease.renewer).take().unwrap().abort();
        let (mut l, r) = mine(&*store, &me);
        let valid_until = lock(&lease.renewing).valid_until;
        until("half a lease", || Instant::now() >= valid_until).await;
        // Past half a lease, check renews (the revision moves) and passes.
        lease.check().unwrap();
        let (_, r2) = mine(&*store, &me);
        assert!(r2 > r);
        l.state = LeaseState::TakenOver {
            by: "b".into(),
            at: 0,
        };
        store
            .failover()
            .unwrap()
            .write_lease("t", &l, Some(r2))
            .unwrap()
            .unwrap();
        let valid_until = lock(&lease.renewing).valid_until;
        until("half a lease", || Instant::now() >= valid_until).await;
        assert!(matches!(lease.check(), Err(Error::LeaseLost { by, .. }) if by == "b"));
        assert_eq!(lease.lost().borrow().as_deref(), Some("b"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn release_marks_the_record_and_a_later_take_reuses_it() {
        let store = store();
        let me = HostIdentity::new("a", 1);
        let lease = TeamLease::take(Arc::clone(&store), "t", &me, LEASE)
            .await
            .unwrap();
        lease.release().unwrap();
        let (l, r) = mine(&*store, &me);
        assert_eq!(l.state, LeaseState::Released);
        lease.check().unwrap();
        lease.release().unwrap();
        assert_eq!(mine(&*store, &me).1, r, "a second release writes nothing");
        // Taken again over its own released record.
        let again = TeamLease::take(Arc::clone(&store), "t", &me, LEASE)
            .await
            .unwrap();
        assert_eq!(mine(&*store, &me).0.state, LeaseState::Held);
        // While held, a second take by the same host is refused.
        let twice = TeamLease::take(Arc::clone(&store), "t", &me, LEASE).await;
        assert!(matches!(twice, Err(Error::StoreRule(_))), "{twice:?}");
        drop(again);
    }

    #[tokio::test]
    async fn a_store_without_failover_is_refused_with_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("lease-files-{}", fastrand::u32(..)));
        let files: Arc<dyn TeamStore> = Arc::new(crate::store::FileStore::new(&dir));
        let err = TeamLease::take(files, "t", &HostIdentity::new("a", 1), LEASE)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("shared by several hosts"), "{err}");
    }
}
