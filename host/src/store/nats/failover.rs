//! [`Failover`] on a NATS store: host leases and run records as keys of the
//! team's bucket, compare-and-swapped on their revisions; components on the
//! prefix's shelf (`shelf.rs`).
//!
//! | record | key in bucket `P_TEAM` |
//! |---|---|
//! | [`HostLease`] | `lease.TOKEN(host id)` |
//! | [`RunRecord`] | `run.TOKEN(member name)` |
//!
//! A create (`expect: None`) reads the key first: a live value loses the
//! race at once; an absent key is written expecting revision 0, a deleted
//! one expecting its deletion's revision (a deleted key keeps a revision,
//! and the server compares against it). Either way the writer holds the
//! record only if its write is the one stored right after the revision it
//! expected, read back from the bucket (`kv::put`): a lost answer or a read
//! behind the leader cannot give one lease to two hosts. The change feed maps neither kind
//! of key to an event (`feed.rs`), so a renewal every few seconds wakes no
//! teammate. The records go with the bucket when the team is deleted.
//!
//! A team that does not exist (no bucket) has no records: reads are empty
//! and writes are refused with `TeamNotFound` — a lease never makes a
//! bucket.

use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::answers::Fail;
use super::kv::{self, Slot};
use super::naming::{token, untoken};
use super::setup;
use super::team::to_json;
use super::NatsStore;
use crate::error::{Error, Result};
use crate::store::failover::{Failover, HostLease, Revision, RunRecord};

const LEASE: &str = "lease";
const RUN: &str = "run";

impl NatsStore {
    /// Every live record under `kind.*`, parsed, with its revision, in
    /// name order.
    fn records<T: DeserializeOwned>(&self, team: &str, kind: &str) -> Result<Vec<(T, Revision)>> {
        let n = self.names(team);
        let conn = self.conn();
        let what = format!("read the team's {kind} records");
        let subjects = setup::subjects(conn, &n.kv_stream, &n.key(&format!("{kind}.*")))
            .map_err(|f| conn.error(&what, f))?;
        let mut names: Vec<String> = subjects
            .iter()
            .filter_map(|s| untoken(s.rsplit('.').next()?))
            .collect();
        names.sort();
        let keys: Vec<String> = names
            .iter()
            .map(|name| format!("{kind}.{}", token(name)))
            .collect();
        let slots = kv::get_many(conn, &n, &keys).map_err(|f| conn.error(&what, f))?;
        let mut out = Vec::new();
        for (name, slot) in names.iter().zip(slots) {
            let Some(raw) = slot.value else { continue };
            let record = serde_json::from_slice(&raw).map_err(|source| Error::Corrupt {
                path: self.location(team, &format!("{kind}/{name}.json")),
                moved_to: None,
                source,
            })?;
            out.push((record, slot.rev));
        }
        Ok(out)
    }

    /// Writes `value` at `kind.TOKEN(name)` if the key is where `expect`
    /// says (see the module docs); `None` when the race was lost.
    fn write_record(
        &self,
        team: &str,
        kind: &str,
        name: &str,
        value: Bytes,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>> {
        let n = self.names(team);
        let conn = self.conn();
        let key = format!("{kind}.{}", token(name));
        let what = format!("write the {kind} record of {name}");
        let expect = match expect {
            Some(rev) => rev,
            None => match kv::get(conn, &n, &key) {
                Ok(Slot { value: Some(_), .. }) => return Ok(None),
                Ok(Slot { rev, .. }) => rev,
                Err(f) => return Err(conn.error(&what, f)),
            },
        };
        match kv::put(conn, &n, &key, value, Some(expect)) {
            Ok(rev) => Ok(Some(rev)),
            Err(Fail::Conflict) => Ok(None),
            Err(Fail::NoStream) => Err(Error::TeamNotFound {
                team: team.to_string(),
                path: self.location(team, "config"),
            }),
            Err(f) => Err(conn.error(&what, f)),
        }
    }
}

impl Failover for NatsStore {
    fn read_leases(&self, team: &str) -> Result<Vec<(HostLease, Revision)>> {
        self.records(team, LEASE)
    }

    fn write_lease(
        &self,
        team: &str,
        lease: &HostLease,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>> {
        self.write_record(team, LEASE, &lease.host, to_json(lease)?, expect)
    }

    fn read_runs(&self, team: &str) -> Result<Vec<(RunRecord, Revision)>> {
        self.records(team, RUN)
    }

    fn write_run(
        &self,
        team: &str,
        run: &RunRecord,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>> {
        self.write_record(team, RUN, &run.name, to_json(run)?, expect)
    }

    fn remove_run(&self, team: &str, name: &str, expect: Revision) -> Result<bool> {
        let n = self.names(team);
        let conn = self.conn();
        let key = format!("{RUN}.{}", token(name));
        // Only a live value is removed: a deletion's revision is no record's.
        match kv::get(conn, &n, &key) {
            Ok(Slot {
                value: Some(_),
                rev,
            }) if rev == expect => {}
            Ok(_) => return Ok(false),
            Err(f) => return Err(conn.error("remove a run record", f)),
        }
        match kv::delete(conn, &n, &key, Some(expect)) {
            Ok(_) => Ok(true),
            Err(Fail::Conflict | Fail::NoStream) => Ok(false),
            Err(f) => Err(conn.error("remove a run record", f)),
        }
    }

    fn put_component(&self, bytes: &[u8]) -> Result<String> {
        super::shelf::put(self, bytes)
    }

    fn get_component(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        super::shelf::get(self, sha256)
    }
}
