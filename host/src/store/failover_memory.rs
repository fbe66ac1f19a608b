//! [`MemoryFailover`]: the [`Failover`] records of a [`super::MemoryStore`],
//! in this process's memory, for tests of leases and takeovers without a
//! server. Same rules as on NATS: every write compares revisions, a lost
//! race is `Ok(None)`, components are kept by hash and checked on the way out.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::failover::{content_hash, Failover, HostLease, Revision, RunRecord};
use crate::error::Result;

/// Leases, run records and components held in memory. One mutex: each call
/// is one critical section.
#[derive(Debug, Default)]
pub struct MemoryFailover {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The one revision counter every record shares (as a KV bucket's does).
    last: Revision,
    leases: BTreeMap<(String, String), (HostLease, Revision)>,
    runs: BTreeMap<(String, String), (RunRecord, Revision)>,
    components: BTreeMap<String, Vec<u8>>,
}

impl MemoryFailover {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Writes `value` at `key` when `expect` matches what is there.
fn cas<T: Clone>(
    last: &mut Revision,
    map: &mut BTreeMap<(String, String), (T, Revision)>,
    key: (String, String),
    value: &T,
    expect: Option<Revision>,
) -> Option<Revision> {
    let now = map.get(&key).map(|(_, r)| *r);
    if now != expect {
        return None;
    }
    *last += 1;
    map.insert(key, (value.clone(), *last));
    Some(*last)
}

impl Failover for MemoryFailover {
    fn read_leases(&self, team: &str) -> Result<Vec<(HostLease, Revision)>> {
        Ok(self
            .lock()
            .leases
            .iter()
            .filter(|((t, _), _)| t == team)
            .map(|(_, v)| v.clone())
            .collect())
    }

    fn write_lease(
        &self,
        team: &str,
        lease: &HostLease,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>> {
        let s = &mut *self.lock();
        let key = (team.to_string(), lease.host.clone());
        Ok(cas(&mut s.last, &mut s.leases, key, lease, expect))
    }

    fn read_runs(&self, team: &str) -> Result<Vec<(RunRecord, Revision)>> {
        Ok(self
            .lock()
            .runs
            .iter()
            .filter(|((t, _), _)| t == team)
            .map(|(_, v)| v.clone())
            .collect())
    }

    fn write_run(
        &self,
        team: &str,
        run: &RunRecord,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>> {
        let s = &mut *self.lock();
        let key = (team.to_string(), run.name.clone());
        Ok(cas(&mut s.last, &mut s.runs, key, run, expect))
    }

    fn remove_run(&self, team: &str, name: &str, expect: Revision) -> Result<bool> {
        let s = &mut *self.lock();
        let key = (team.to_string(), name.to_string());
        match s.runs.get(&key) {
            Some((_, r)) if *r == expect => {
                s.runs.remove(&key);
                s.last += 1;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn put_component(&self, bytes: &[u8]) -> Result<String> {
        let hash = content_hash(bytes);
        self.lock()
            .components
            .entry(hash.clone())
            .or_insert_with(|| bytes.to_vec());
        Ok(hash)
    }

    fn get_component(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.lock().components.get(sha256).cloned())
    }
}

/// Forgets `team`'s leases and run records (the team was deleted).
impl MemoryFailover {
    pub(super) fn forget_team(&self, team: &str) {
        let s = &mut *self.lock();
        s.leases.retain(|(t, _), _| t != team);
        s.runs.retain(|(t, _), _| t != team);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::failover::LeaseState;

    fn lease(host: &str) -> HostLease {
        HostLease {
            host: host.into(),
            hostname: "here".into(),
            pid: 1,
            lease_ms: 1000,
            renewed_at: 0,
            state: LeaseState::Held,
        }
    }

    #[test]
    fn a_lease_is_created_once_and_replaced_only_at_the_revision_read() {
        let f = MemoryFailover::default();
        let r1 = f.write_lease("t", &lease("a"), None).unwrap().unwrap();
        assert_eq!(f.write_lease("t", &lease("a"), None).unwrap(), None);
        let r2 = f.write_lease("t", &lease("a"), Some(r1)).unwrap().unwrap();
        assert!(r2 > r1);
        assert_eq!(f.write_lease("t", &lease("a"), Some(r1)).unwrap(), None);
        assert_eq!(f.read_leases("t").unwrap(), vec![(lease("a"), r2)]);
        assert!(f.read_leases("other").unwrap().is_empty());
    }

    #[test]
    fn components_are_kept_by_their_hash() {
        let f = MemoryFailover::default();
        let h = f.put_component(b"wasm").unwrap();
        assert_eq!(h, content_hash(b"wasm"));
        assert_eq!(f.get_component(&h).unwrap().unwrap(), b"wasm");
        assert_eq!(f.get_component(&content_hash(b"x")).unwrap(), None);
    }
}
