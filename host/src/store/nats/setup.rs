//! Making a team's two streams, by hand, the same way on every server.
//!
//! The bucket is a stream laid out by the KV conventions (`KV_<bucket>`,
//! subjects `$KV.<bucket>.>`, 64 revisions per key, rollups allowed,
//! deletes denied, direct gets allowed, discard new), so `nats kv` tools see
//! a normal bucket. It is created with `STREAM.CREATE` rather than a
//! client's "create key-value", which first asks for account info and fails
//! on nats-server 2.9 (its answer lacks fields newer clients require).
//!
//! Both streams republish what they store (headers only) to the team's
//! notice subjects (`P.TEAM.ev.…`), which is what a change feed subscribes
//! to: a notice is sent only after the message is stored, so a reader woken
//! by it always finds the write.

use serde_json::{json, Value};

use super::client::{Conn, Fail};
use super::naming::TeamNames;

/// De-duplication window of both streams, nanoseconds: longer than any
/// retry of one write ([`super::client::NatsOptions::retry_for`]).
const DUPLICATE_WINDOW_NS: u64 = 120_000_000_000;

/// Revisions kept per key: enough to tell, after a lost answer, whether a
/// write landed (its message is the one right after the revision it
/// expected) even when others wrote the key since.
const KV_HISTORY: i64 = 64;

/// The bucket's stream config.
fn kv_config(n: &TeamNames) -> Value {
    json!({
        "name": n.kv_stream,
        "subjects": [n.kv_subjects()],
        "retention": "limits",
        "max_consumers": -1,
        "max_msgs": -1,
        "max_bytes": -1,
        "max_age": 0,
        "max_msgs_per_subject": KV_HISTORY,
        "max_msg_size": -1,
        "storage": "file",
        "discard": "new",
        "num_replicas": 1,
        "duplicate_window": DUPLICATE_WINDOW_NS,
        "allow_rollup_hdrs": true,
        "deny_delete": true,
        "deny_purge": false,
        "allow_direct": true,
        "republish": { "src": n.kv_subjects(), "dest": n.kv_notices(), "headers_only": true },
    })
}

/// The mail stream's config: everything kept (the history is the stream).
fn mail_config(n: &TeamNames) -> Value {
    json!({
        "name": n.mail_stream,
        "subjects": [n.mail_subjects()],
        "retention": "limits",
        "max_consumers": -1,
        "max_msgs": -1,
        "max_bytes": -1,
        "max_age": 0,
        "max_msgs_per_subject": -1,
        "max_msg_size": -1,
        "storage": "file",
        "discard": "old",
        "num_replicas": 1,
        "duplicate_window": DUPLICATE_WINDOW_NS,
        "deny_delete": true,
        "deny_purge": false,
        "allow_direct": true,
        "republish": { "src": n.mail_subjects(), "dest": n.mail_notices(), "headers_only": true },
    })
}

/// Which of a team's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Which {
    /// The bucket (config, tasks, usage, plans).
    Kv,
    /// Inboxes and histories.
    Mail,
}

/// Creates `which` stream of the team when it is not there. Creating one
/// that exists is not an error (the config is the same, or someone made it
/// on purpose).
pub(super) fn ensure(conn: &Conn, n: &TeamNames, which: Which) -> Result<(), Fail> {
    let (name, config) = match which {
        Which::Kv => (&n.kv_stream, kv_config(n)),
        Which::Mail => (&n.mail_stream, mail_config(n)),
    };
    match conn.api(&format!("STREAM.CREATE.{name}"), config) {
        Ok(_) => Ok(()),
        Err(Fail::Refused(why)) if conn.stream_exists(name)? => {
            tracing::debug!(stream = %name, %why, "the stream exists already");
            Ok(())
        }
        Err(f) => Err(f),
    }
}

/// Deletes a stream; one that is not there is not an error.
pub(super) fn delete(conn: &Conn, name: &str) -> Result<(), Fail> {
    conn.forget_stream(name);
    match conn.api(&format!("STREAM.DELETE.{name}"), Value::Null) {
        Ok(_) | Err(Fail::NoStream) => Ok(()),
        Err(f) => Err(f),
    }
}

/// Names of every stream whose name starts with `prefix`, sorted.
pub(super) fn stream_names(conn: &Conn, prefix: &str) -> Result<Vec<String>, Fail> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    loop {
        let page = conn.api("STREAM.NAMES", json!({ "offset": offset }))?;
        let names: Vec<String> = page["streams"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let got = names.len() as u64;
        out.extend(names.into_iter().filter(|s| s.starts_with(prefix)));
        offset += got;
        let total = page["total"].as_u64().unwrap_or(0);
        if got == 0 || offset >= total {
            break;
        }
    }
    out.sort();
    Ok(out)
}

/// The subjects a stream holds messages on (with `filter`); empty when
/// the stream is not there.
pub(super) fn subjects(conn: &Conn, stream: &str, filter: &str) -> Result<Vec<String>, Fail> {
    match conn.api(
        &format!("STREAM.INFO.{stream}"),
        json!({ "subjects_filter": filter }),
    ) {
        Ok(info) => Ok(info["state"]["subjects"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()),
        Err(Fail::NoStream) => Ok(Vec::new()),
        Err(f) => Err(f),
    }
}

/// When the stream was created (its `created` time as given): a history
/// cursor's epoch, so a cursor on a deleted and re-made stream restarts.
pub(super) fn created(conn: &Conn, stream: &str) -> Result<Option<String>, Fail> {
    match conn.api(&format!("STREAM.INFO.{stream}"), Value::Null) {
        Ok(info) => Ok(info["created"].as_str().map(str::to_string)),
        Err(Fail::NoStream) => Ok(None),
        Err(f) => Err(f),
    }
}
