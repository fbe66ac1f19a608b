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
//!
//! **Replicas.** Both streams are made with `num_replicas` = R ([`replicas`]):
//! the store URL's `?replicas=N` (1 to 5) when given; else 3 when the server
//! the store connected to is part of a cluster (its INFO names one:
//! `cluster` is set on nats-server 2.9.10 as on newer ones), so a team
//! survives losing one of three nodes; else 1 (a lone server). Except on
//! servers older than 2.9.21: their replicated streams check a
//! compare-and-swap only against what the leader has applied, so two writes
//! in flight expecting one revision are both stored (nats-io/nats-server#4320;
//! our 8-writer test on a 2.9.10 cluster took 14 to 26 messages twice of
//! 320, with no node killed). The whole store rests on those swaps, so
//! there R is 1 by default (with a warning) and `?replicas=2..5` is refused
//! with a message saying to upgrade. A cluster
//! with fewer JetStream servers up than R cannot place the stream; the
//! server's refusal ("no suitable peers for placement", error 10005) is
//! turned into a message that says to start more servers or lower
//! `?replicas=`. A replicated stream is made without `allow_direct` and read
//! through its leader (`reads.rs`). A stream that exists already keeps the
//! replicas it was made with: this host's R applies to streams it makes.

use serde_json::{json, Value};

use super::answers::Fail;
use super::client::Conn;
use super::naming::TeamNames;

/// De-duplication window of both streams, nanoseconds: longer than any
/// retry of one write ([`super::client::NatsOptions::retry_for`]).
const DUPLICATE_WINDOW_NS: u64 = 120_000_000_000;

/// Revisions kept per key: enough to tell, after a lost answer, whether a
/// write landed (its message is the one right after the revision it
/// expected) even when others wrote the key since.
const KV_HISTORY: i64 = 64;

/// JetStream's error code for a stream it cannot place on enough servers.
const NO_SUITABLE_PEERS: u64 = 10005;
/// JetStream's error code for "insufficient resources".
const INSUFFICIENT_RESOURCES: u64 = 10023;

/// The bucket's stream config, with `replicas` replicas.
fn kv_config(n: &TeamNames, replicas: usize) -> Value {
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
        "num_replicas": replicas,
        "duplicate_window": DUPLICATE_WINDOW_NS,
        "allow_rollup_hdrs": true,
        "deny_delete": true,
        "deny_purge": false,
        "allow_direct": replicas == 1,
        "republish": { "src": n.kv_subjects(), "dest": n.kv_notices(), "headers_only": true },
    })
}

/// The mail stream's config: everything kept (the history is the stream).
fn mail_config(n: &TeamNames, replicas: usize) -> Value {
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
        "num_replicas": replicas,
        "duplicate_window": DUPLICATE_WINDOW_NS,
        "deny_delete": true,
        "deny_purge": false,
        "allow_direct": replicas == 1,
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
    let r = conn.replicas();
    let (name, config) = match which {
        Which::Kv => (&n.kv_stream, kv_config(n, r)),
        Which::Mail => (&n.mail_stream, mail_config(n, r)),
    };
    match conn.api(&format!("STREAM.CREATE.{name}"), config) {
        Ok(_) => Ok(()),
        Err(Fail::Refused(why)) if conn.stream_exists(name)? => {
            tracing::debug!(stream = %name, %why, "the stream exists already");
            Ok(())
        }
        Err(Fail::Refused(why))
            if [NO_SUITABLE_PEERS, INSUFFICIENT_RESOURCES]
                .iter()
                .any(|c| why.ends_with(&format!("(JetStream error {c})"))) =>
        {
            Err(Fail::Refused(format!(
                "cannot make stream {name} with {r} replicas: {why}; a stream with R replicas needs R JetStream servers of the cluster up: start more, or give fewer in the store URL (?replicas=N, 1 to 5; without it R is 3 on a cluster and 1 on a lone server)"
            )))
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

/// `STREAM.INFO` of `stream`; `None` when it is not there.
pub(super) fn info(conn: &Conn, stream: &str) -> Result<Option<Value>, Fail> {
    match conn.api(&format!("STREAM.INFO.{stream}"), Value::Null) {
        Ok(info) => Ok(Some(info)),
        Err(Fail::NoStream) => Ok(None),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replicated_stream_is_made_without_direct_gets() {
        let n = TeamNames::new("p", "t");
        for config in [kv_config(&n, 3), mail_config(&n, 3)] {
            assert_eq!(config["num_replicas"], 3);
            assert_eq!(config["allow_direct"], false);
        }
        for config in [kv_config(&n, 1), mail_config(&n, 1)] {
            assert_eq!(config["num_replicas"], 1);
            assert_eq!(config["allow_direct"], true);
        }
    }
}
