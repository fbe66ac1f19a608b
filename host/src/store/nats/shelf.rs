//! The component shelf of a NATS store: components kept by SHA-256 so that
//! a host can run, by hash, a teammate another host spawned (host failover). One
//! stream per prefix, not per team (a component serves every team).
//!
//! | what | where |
//! |---|---|
//! | the stream | `P_shelf`, subjects `P._shelf.>` (`_shelf`: no team is called that, team names have no `_`, so it never overlaps a team's `P.TEAM.…`) |
//! | chunk `i` of a component | `P._shelf.SHA.i`, 256 KiB each (the server's default max payload is 1 MiB) |
//! | its manifest, written last | `P._shelf.SHA.manifest`: `{"size":…,"chunks":…,"chunkSize":…}` |
//!
//! **Written once per hash.** A component whose manifest is there is not
//! written again (a look, not a copy). Each message is published expecting
//! its subject empty, so two hosts storing one component at once store each
//! chunk once; a host that died half-way left chunks whose bytes are the
//! same for the next writer (the chunking is fixed), which keeps them.
//!
//! **Checked on the way out.** `get` joins the chunks and refuses bytes
//! whose size or SHA-256 is not the manifest's and the key's:
//! `Error::Corrupt`, never bytes. A chunk changed on the server (anyone with
//! the store's credentials can publish) therefore costs that component, not
//! a host running other code; an operator purges `P._shelf.SHA.>` and the
//! next spawn stores it anew.

use async_nats::HeaderMap;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::answers::Fail;
use super::NatsStore;
use crate::error::{Error, Result};
use crate::store::failover::content_hash;

/// Bytes per chunk.
pub(super) const CHUNK: usize = 256 * 1024;

/// The largest component the shelf hands out (a manifest claiming more is
/// refused as corrupt).
const MAX_COMPONENT: u64 = 1 << 30;

/// Dedup window of the shelf, nanoseconds (as the team streams').
const DUPLICATE_WINDOW_NS: u64 = 120_000_000_000;

/// What a component's manifest says.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    size: u64,
    chunks: u64,
    chunk_size: u64,
}

/// The shelf's names under one prefix.
pub(super) struct ShelfNames {
    pub stream: String,
    base: String,
}

impl ShelfNames {
    pub fn new(prefix: &str) -> ShelfNames {
        ShelfNames {
            stream: format!("{prefix}_shelf"),
            base: format!("{prefix}._shelf"),
        }
    }

    pub fn chunk(&self, sha: &str, i: u64) -> String {
        format!("{}.{sha}.{i}", self.base)
    }

    fn manifest(&self, sha: &str) -> String {
        format!("{}.{sha}.manifest", self.base)
    }
}

/// A SHA-256 as the shelf keys it: 64 lower-case hex digits (and so a safe
/// subject token), else a clear error.
fn checked(sha256: &str) -> Result<&str> {
    if sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        Ok(sha256)
    } else {
        Err(Error::StoreRule(format!(
            "{sha256:?} is not a SHA-256 as the component shelf keys it (64 lower-case hex digits)"
        )))
    }
}

/// Makes the shelf's stream, once per store.
fn ensure(store: &NatsStore, n: &ShelfNames) -> Result<()> {
    let conn = store.conn();
    if store
        .inner
        .shelf_ready
        .load(std::sync::atomic::Ordering::Acquire)
    {
        return Ok(());
    }
    let config = json!({
        "name": n.stream,
        "subjects": [format!("{}.>", n.base)],
        "retention": "limits",
        "max_consumers": -1,
        "max_msgs": -1,
        "max_bytes": -1,
        "max_age": 0,
        "max_msgs_per_subject": -1,
        "max_msg_size": -1,
        "storage": "file",
        "discard": "new",
        // As many copies as the team streams: a lost node must not take
        // the only copy of a component another host may need to adopt.
        "num_replicas": conn.replicas(),
        "duplicate_window": DUPLICATE_WINDOW_NS,
        "deny_delete": true,
        "deny_purge": false,
        "allow_direct": conn.replicas() == 1,
    });
    let what = "make the component shelf";
    match conn.api(&format!("STREAM.CREATE.{}", n.stream), config) {
        Ok(_) => {}
        Err(Fail::Refused(_))
            if conn
                .stream_exists(&n.stream)
                .map_err(|f| conn.error(what, f))? => {}
        Err(f) => return Err(conn.error(what, f)),
    }
    store
        .inner
        .shelf_ready
        .store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

/// Publishes `payload` on `subject` unless something is there already.
fn put_once(store: &NatsStore, n: &ShelfNames, subject: &str, payload: Bytes) -> Result<()> {
    let conn = store.conn();
    let mut h = HeaderMap::new();
    h.insert("Nats-Msg-Id", subject);
    match conn.publish(&n.stream, subject, h, payload, Some(0)) {
        Ok(_) | Err(Fail::Conflict) => Ok(()),
        Err(f) => Err(conn.error("store a component on the shelf", f)),
    }
}

/// Keeps `bytes` under their SHA-256; see the module docs.
pub(super) fn put(store: &NatsStore, bytes: &[u8]) -> Result<String> {
    let sha = content_hash(bytes);
    let n = ShelfNames::new(store.prefix());
    ensure(store, &n)?;
    let conn = store.conn();
    let there = conn
        .last(&n.stream, &n.manifest(&sha))
        .map_err(|f| conn.error("look for a component on the shelf", f))?;
    if there.is_some() {
        return Ok(sha);
    }
    let mut chunks = 0u64;
    for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
        put_once(
            store,
            &n,
            &n.chunk(&sha, i as u64),
            Bytes::copy_from_slice(chunk),
        )?;
        chunks += 1;
    }
    let manifest = Manifest {
        size: bytes.len() as u64,
        chunks,
        chunk_size: CHUNK as u64,
    };
    let body = serde_json::to_vec(&manifest)
        .map_err(|e| Error::Encode(format!("cannot serialise a shelf manifest: {e}")))?;
    put_once(store, &n, &n.manifest(&sha), Bytes::from(body))?;
    Ok(sha)
}

/// The bytes kept under `sha256`, checked; see the module docs.
pub(super) fn get(store: &NatsStore, sha256: &str) -> Result<Option<Vec<u8>>> {
    let sha = checked(sha256)?;
    let n = ShelfNames::new(store.prefix());
    let conn = store.conn();
    let what = "read a component from the shelf";
    let location = store
        .url()
        .display()
        .to_string()
        .trim_end_matches('/')
        .to_string()
        + &format!("/shelf/{sha}");
    let corrupt = |why: String| Error::Corrupt {
        path: location.clone().into(),
        moved_to: None,
        source: serde::de::Error::custom(why),
    };
    let raw = match conn.last(&n.stream, &n.manifest(sha)) {
        Ok(Some(m)) => m.payload,
        Ok(None) | Err(Fail::NoStream) => return Ok(None),
        Err(f) => return Err(conn.error(what, f)),
    };
    let manifest: Manifest = serde_json::from_slice(&raw).map_err(|source| Error::Corrupt {
        path: location.clone().into(),
        moved_to: None,
        source,
    })?;
    // A manifest is believed only as far as it is consistent and sane (a
    // changed one must not make this host fetch or allocate without end).
    let expected_chunks = manifest.size.div_ceil(CHUNK as u64);
    if manifest.size > MAX_COMPONENT
        || manifest.chunk_size != CHUNK as u64
        || manifest.chunks != expected_chunks
    {
        return Err(corrupt(format!(
            "its manifest is not one this host writes ({} bytes in {} chunks of {}; at most {MAX_COMPONENT} bytes in chunks of {CHUNK})",
            manifest.size, manifest.chunks, manifest.chunk_size
        )));
    }
    let subjects: Vec<String> = (0..manifest.chunks).map(|i| n.chunk(sha, i)).collect();
    let got = conn
        .last_of_each(&n.stream, &subjects)
        .map_err(|f| conn.error(what, f))?;
    let mut bytes = Vec::with_capacity(manifest.size as usize);
    for (i, chunk) in got.into_iter().enumerate() {
        match chunk {
            Some(c) => bytes.extend_from_slice(&c.payload),
            None => {
                return Err(corrupt(format!(
                    "chunk {i} of {} is missing",
                    manifest.chunks
                )))
            }
        }
    }
    let actual = content_hash(&bytes);
    if bytes.len() as u64 != manifest.size || actual != sha {
        return Err(corrupt(format!(
            "its {} bytes hash to {actual}, not {sha} (the manifest says {} bytes): a chunk was changed on the server; purge the subjects {}.> of stream {} and spawn the component again",
            bytes.len(),
            manifest.size,
            n.chunk(sha, 0).trim_end_matches(".0"),
            n.stream
        )));
    }
    Ok(Some(bytes))
}
