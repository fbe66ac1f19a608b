//! The failover seam: what a store shared by several hosts keeps so that one
//! host can take over another's teammates when it dies (host failover).
//!
//! Three kinds of record, each compare-and-swapped on a [`Revision`]:
//!
//! | record | key | written by |
//! |---|---|---|
//! | [`HostLease`] | one per host serving the team | the host, renewed while it lives; an adopting host marks it [`LeaseState::TakenOver`] |
//! | [`RunRecord`] | one per teammate a host runs | the host at spawn (between registration and the runner's start), removed when the teammate ends; an adopting host rewrites it naming itself, `generation + 1` |
//! | component | its SHA-256 | any host that spawns: the component's bytes, so another host can run it by hash |
//!
//! **Expiry is judged on the observer's clock, never by comparing wall
//! clocks of two machines.** A lease has expired for an observer when the
//! observer has seen the same revision of it for `lease_ms` on its own
//! monotonic clock. The holder, for its part, writes only within half a lease
//! of sending its last successful renewal (see `embed::lease`), so it has
//! stopped writing before anyone may take over. `renewed_at` is shown to
//! people; nothing decides on it.
//!
//! Who may write these: hosts, which hold the store's credentials. A
//! teammate never reaches the store (no sockets, no environment); a component
//! fetched by hash is checked against the hash before it runs.
//!
//! Only a store shared by several hosts has failover: [`crate::store::NatsStore`]
//! (and [`crate::store::MemoryStore`], for tests of the logic in one process).
//! The file store lives on one machine, where `teamhost run --resume` is the
//! way back; it answers `None` to [`super::TeamStore::failover`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// A record's revision: grows with every write of that record; a
/// compare-and-swap names the revision it read.
pub type Revision = u64;

/// A host's claim on the teammates it runs in one team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostLease {
    /// The host's id, unique per `teamhost` process: `{hostname}-{pid}-{random hex}`.
    pub host: String,
    /// The machine's name, for people.
    pub hostname: String,
    /// The host process, for people (it means nothing on another machine).
    pub pid: u32,
    /// How long an observer waits, having seen no new revision, before the
    /// lease counts as expired.
    pub lease_ms: u64,
    /// Unix milliseconds of the holder's last renewal, for people only.
    pub renewed_at: u64,
    /// Held, given up, or taken over.
    pub state: LeaseState,
}

/// Where a lease stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum LeaseState {
    /// The holder renews it.
    Held,
    /// The holder ended cleanly; its run records are gone or stopped.
    Released,
    /// Another host took the holder's teammates over. A holder that finds
    /// this stops its copies before they write again.
    #[serde(rename_all = "camelCase")]
    TakenOver {
        /// The adopting host's id.
        by: String,
        /// Unix milliseconds.
        at: u64,
    },
}

/// What a host runs for one teammate and how to start it again, kept in the
/// store (not the home) so another machine can.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// Member name.
    pub name: String,
    /// The id of the host running it ([`HostLease::host`]).
    pub host: String,
    /// 1 at spawn; each takeover writes `generation + 1`.
    pub generation: u64,
    /// SHA-256 of the component's bytes, hex: the adopting host runs only a
    /// component with this hash.
    pub component_sha256: String,
    /// The component's file name as spawned (a hint for people and for
    /// finding it in a manifest; the hash decides).
    pub component_name: String,
    /// The directory it works in. On another machine, the same path must
    /// name the same (shared) directory.
    pub cwd: PathBuf,
    /// Whether it works in its own git worktree.
    pub worktree: bool,
    /// How it runs, as spawned: the teammate's `TeammateSettings` as JSON.
    /// The store keeps it without reading it (the store is below the layer
    /// that defines them); the adopting host parses it, and refuses the
    /// teammate when it does not parse.
    pub settings: serde_json::Value,
    /// Unix milliseconds of the spawn (or the takeover that wrote this).
    pub started_at: u64,
    /// The host it was taken over from, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopted_from: Option<String>,
    /// For a lead component (`team-lead`): its seat as last kept, as JSON
    /// (the host's `LeadRecord`: formed, who it spawned, what it gave, its
    /// goal), rewritten after each change, so that a host adopting the lead
    /// goes on from it. Opaque here, as `settings` is; `None` for a
    /// teammate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<serde_json::Value>,
}

/// Leases, run records and components of the teams on a store shared by
/// several hosts. Every write is a compare-and-swap:
///
/// - `expect: None` creates the record, and loses when one exists;
/// - `expect: Some(r)` replaces revision `r`, and loses when the record has
///   moved on (or is gone).
///
/// A lost race is `Ok(None)`, never an error: the caller reads again and
/// decides. Errors are for an unreachable store or a record that does not
/// parse (`Error::Corrupt`, naming its key).
pub trait Failover: Send + Sync {
    /// Every host lease of `team` with its revision, in host order.
    fn read_leases(&self, team: &str) -> Result<Vec<(HostLease, Revision)>>;

    /// Writes `lease` (keyed by `lease.host`); the new revision, or `None`
    /// when the race was lost.
    fn write_lease(
        &self,
        team: &str,
        lease: &HostLease,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>>;

    /// Every run record of `team` with its revision, in name order.
    fn read_runs(&self, team: &str) -> Result<Vec<(RunRecord, Revision)>>;

    /// Writes `run` (keyed by `run.name`); the new revision, or `None` when
    /// the race was lost.
    fn write_run(
        &self,
        team: &str,
        run: &RunRecord,
        expect: Option<Revision>,
    ) -> Result<Option<Revision>>;

    /// Removes `name`'s run record at revision `expect`; `false` when it
    /// had moved on (someone else wrote it) or was gone.
    fn remove_run(&self, team: &str, name: &str, expect: Revision) -> Result<bool>;

    /// Keeps `bytes` under their SHA-256 (hex, returned). Storing bytes
    /// already kept costs a look, not a second copy. Not per team: one shelf
    /// per store (per prefix on NATS).
    fn put_component(&self, bytes: &[u8]) -> Result<String>;

    /// The bytes kept under `sha256`, checked against it (a mismatch is
    /// `Error::Corrupt`, never bytes); `None` when nothing is kept.
    fn get_component(&self, sha256: &str) -> Result<Option<Vec<u8>>>;
}

/// SHA-256 of `bytes`, lower-case hex (the key of [`Failover::put_component`]).
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
