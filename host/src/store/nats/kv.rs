//! A team's bucket as keys with revisions: read, compare-and-swap, delete,
//! and setting a bad value aside. The KV conventions on the bucket's stream
//! (a key is the subject `$KV.<bucket>.<key>`, its revision the stream
//! sequence of its last message, `KV-Operation: DEL` a deletion), spoken
//! through [`Conn`].
//!
//! Every write names the revision it read (`0`: the key was never
//! written), so of two writers that read the same revision exactly one
//! wins; the other gets [`Fail::Conflict`], reads again and retries. A first
//! write (`expect = 0`, or the revision of a deletion) is a create: two
//! first writes cannot both succeed. Who won is read from the bucket, not
//! taken from the server's answer: the write stored right after the
//! expected revision is the winner ([`Conn::swap`]).
//!
//! [`put_as`] and [`delete_as`] write with a message id the caller names
//! and report the server's answer only; a task pass applies its writes with
//! them and then reads who won itself (`tasks.rs`).

use async_nats::HeaderMap;
use bytes::Bytes;

use super::answers::{Fail, Stored};
use super::client::Conn;
use super::naming::TeamNames;

/// A key as read: its revision (`0` when never written; a deletion's
/// revision when deleted) and its value, if it has one.
#[derive(Debug, Clone, Default)]
pub(super) struct Slot {
    /// What a write must expect.
    pub rev: u64,
    /// The value; `None` when absent or deleted.
    pub value: Option<Bytes>,
}

impl Slot {
    /// The slot a stored message makes (`None`: never written).
    pub fn from(stored: Option<Stored>) -> Slot {
        match stored {
            Some(s) if s.deleted => Slot {
                rev: s.seq,
                value: None,
            },
            Some(s) => Slot {
                rev: s.seq,
                value: Some(s.payload),
            },
            None => Slot::default(),
        }
    }
}

/// Reads `key`. A bucket that is not there reads as empty.
pub(super) fn get(conn: &Conn, n: &TeamNames, key: &str) -> Result<Slot, Fail> {
    match conn.last(&n.kv_stream, &n.key(key)) {
        Ok(s) => Ok(Slot::from(s)),
        Err(Fail::NoStream) => Ok(Slot::default()),
        Err(f) => Err(f),
    }
}

/// Reads many keys at once, in order.
pub(super) fn get_many(conn: &Conn, n: &TeamNames, keys: &[String]) -> Result<Vec<Slot>, Fail> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let subjects: Vec<String> = keys.iter().map(|k| n.key(k)).collect();
    match conn.last_of_each(&n.kv_stream, &subjects) {
        Ok(v) => Ok(v.into_iter().map(Slot::from).collect()),
        Err(Fail::NoStream) => Ok(vec![Slot::default(); keys.len()]),
        Err(f) => Err(f),
    }
}

/// Writes `value` to `key` if its revision is still `expect` (`None`:
/// unconditionally); the new revision. With `expect`, `Ok` only when this
/// write is the one stored right after `expect`.
pub(super) fn put(
    conn: &Conn,
    n: &TeamNames,
    key: &str,
    value: Bytes,
    expect: Option<u64>,
) -> Result<u64, Fail> {
    match expect {
        Some(rev) => conn.swap(&n.kv_stream, &n.key(key), HeaderMap::new(), value, rev),
        None => conn.publish(&n.kv_stream, &n.key(key), HeaderMap::new(), value, None),
    }
}

/// Deletes `key` if its revision is still `expect`; `Ok` only when this
/// deletion is the one stored right after `expect`.
pub(super) fn delete(
    conn: &Conn,
    n: &TeamNames,
    key: &str,
    expect: Option<u64>,
) -> Result<u64, Fail> {
    let mut h = HeaderMap::new();
    h.insert("KV-Operation", "DEL");
    match expect {
        Some(rev) => conn.swap(&n.kv_stream, &n.key(key), h, Bytes::new(), rev),
        None => conn.publish(&n.kv_stream, &n.key(key), h, Bytes::new(), None),
    }
}

/// Writes `value` to `key` as message `id` if its revision is still
/// `expect`; the server's answer, unverified (the caller reads who won).
pub(super) fn put_as(
    conn: &Conn,
    n: &TeamNames,
    key: &str,
    value: Bytes,
    expect: u64,
    id: &str,
) -> Result<u64, Fail> {
    let mut h = HeaderMap::new();
    h.insert("Nats-Msg-Id", id);
    conn.publish(&n.kv_stream, &n.key(key), h, value, Some(expect))
}

/// Deletes `key` as message `id` if its revision is still `expect`; the
/// server's answer, unverified.
pub(super) fn delete_as(
    conn: &Conn,
    n: &TeamNames,
    key: &str,
    expect: u64,
    id: &str,
) -> Result<u64, Fail> {
    let mut h = HeaderMap::new();
    h.insert("KV-Operation", "DEL");
    h.insert("Nats-Msg-Id", id);
    conn.publish(&n.kv_stream, &n.key(key), h, Bytes::new(), Some(expect))
}

/// Keeps a value that does not parse under `aside.<key>.<UTC stamp>`
/// (created, so an earlier copy is never overwritten); the key it went to.
pub(super) fn set_aside(conn: &Conn, n: &TeamNames, key: &str, raw: Bytes) -> Result<String, Fail> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%3fZ").to_string();
    let base = format!("aside.{key}.{stamp}");
    let mut aside = base.clone();
    for i in 2.. {
        match put(conn, n, &aside, raw.clone(), Some(0)) {
            Ok(_) => break,
            Err(Fail::Conflict) => aside = format!("{base}-{i}"),
            Err(f) => return Err(f),
        }
    }
    Ok(aside)
}
