//! How the store reads one message of a stream so that it always sees the
//! last write acknowledged: a direct get on a stream kept by one server, a
//! leader's get on a replicated one.
//!
//! The store relies on reading what was just written: a compare-and-swap
//! loop converges because its next read sees the winner's write, a reader
//! woken by a feed notice finds the write the notice announced, a take reads
//! the last record. A direct get (`$JS.API.DIRECT.GET.<stream>`, allowed by
//! `allow_direct`) is answered by ANY replica of the stream, and a follower
//! may not have applied the last writes yet: on a three-node nats-server
//! 2.9.10 cluster, writing a key and direct-getting it at once, from a
//! connection to the leader's node or to a follower's, returned an older
//! revision 8 to 30 % of the time (70, 38 and 149 stale reads of 500). The
//! stream leader's own get (`$JS.API.STREAM.MSG.GET.<stream>`, a JSON answer
//! with the message base64-encoded) is answered by the leader alone, which
//! acknowledged the write: 0 stale of 500 on the same cluster. And a feed
//! notice is republished by the leader once it stored the message.
//!
//! So: a stream with one replica that allows direct gets is read with
//! direct gets (what a lone server always had, and the fastest); any other
//! (replicated, or made without `allow_direct`) with the leader's get.
//! `setup.rs` makes replicated streams without `allow_direct`, so no tool
//! reading them reads from a follower either. The choice is made per
//! stream from its `STREAM.INFO` (not from this host's settings), so hosts
//! with different settings on one team all read consistently. What it
//! costs is in docs/PERFORMANCE.md (the `nats` benchmark).

use base64::Engine;
use bytes::Bytes;
use serde_json::Value;

use super::answers::{Fail, Stored, TEMPORARILY_UNAVAILABLE};

/// How one stream is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadVia {
    /// `$JS.API.DIRECT.GET.<stream>`: any replica answers (one replica
    /// here, so it is the one that stored every write).
    Direct,
    /// `$JS.API.STREAM.MSG.GET.<stream>`: the stream leader answers.
    Leader,
}

impl ReadVia {
    /// The way to read a stream whose `STREAM.INFO` answer is `info`.
    pub fn of(info: &Value) -> ReadVia {
        let config = &info["config"];
        let replicas = config["num_replicas"].as_u64().unwrap_or(1);
        let direct = config["allow_direct"].as_bool().unwrap_or(false);
        if direct && replicas <= 1 {
            ReadVia::Direct
        } else {
            ReadVia::Leader
        }
    }

    /// The request subject for `stream`.
    pub fn subject(self, stream: &str) -> String {
        match self {
            ReadVia::Direct => format!("$JS.API.DIRECT.GET.{stream}"),
            ReadVia::Leader => format!("$JS.API.STREAM.MSG.GET.{stream}"),
        }
    }
}

/// JetStream's error code for "no message found".
const NO_MESSAGE: u64 = 10037;
/// JetStream's error code for a stream that does not exist.
const STREAM_NOT_FOUND: u64 = 10059;

/// A leader get's JSON answer: the message, `None` when there is none.
pub(super) fn leader_answer(payload: &[u8]) -> Result<Option<Stored>, Fail> {
    let v: Value = serde_json::from_slice(payload)
        .map_err(|e| Fail::Refused(format!("an unreadable message get answer: {e}")))?;
    if let Some(e) = v.get("error") {
        let code = e["err_code"].as_u64().unwrap_or(0);
        let what = e["description"].as_str().unwrap_or("an error");
        return match code {
            NO_MESSAGE => Ok(None),
            STREAM_NOT_FOUND => Err(Fail::NoStream),
            TEMPORARILY_UNAVAILABLE => Err(Fail::Transient(what.to_string())),
            _ => Err(Fail::Refused(format!(
                "message get answered {what} (JetStream error {code})"
            ))),
        };
    }
    let m = &v["message"];
    let seq = m["seq"]
        .as_u64()
        .ok_or_else(|| Fail::Refused("a message get answer without a sequence".into()))?;
    let b64 = |field: &str| -> Result<Vec<u8>, Fail> {
        match m[field].as_str() {
            None => Ok(Vec::new()),
            Some(s) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| Fail::Refused(format!("a message get answer's {field}: {e}"))),
        }
    };
    let headers = String::from_utf8_lossy(&b64("hdrs")?).into_owned();
    let header = |name: &str| {
        headers.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    Ok(Some(Stored {
        seq,
        deleted: matches!(header("KV-Operation").as_deref(), Some("DEL" | "PURGE")),
        id: header("Nats-Msg-Id"),
        payload: Bytes::from(b64("data")?),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_single_replica_stream_with_direct_gets_is_read_directly() {
        let info = |r: u64, d: bool| json!({"config": {"num_replicas": r, "allow_direct": d}});
        assert_eq!(ReadVia::of(&info(1, true)), ReadVia::Direct);
        assert_eq!(ReadVia::of(&info(3, true)), ReadVia::Leader);
        assert_eq!(ReadVia::of(&info(3, false)), ReadVia::Leader);
        assert_eq!(ReadVia::of(&info(1, false)), ReadVia::Leader);
    }

    #[test]
    fn a_leader_answer_gives_the_message_its_id_and_whether_it_is_a_delete() {
        // What nats-server 2.9.10 answered for a message with a Nats-Msg-Id.
        let answer = br#"{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"s.a","seq":3,"hdrs":"TkFUUy8xLjANCk5hdHMtTXNnLUlkOiBpZDINCg0K","data":"eDI=","time":"2026-11-27T16:29:11.506321999Z"}}"#;
        let m = leader_answer(answer).unwrap().unwrap();
        assert_eq!(
            (m.seq, &m.payload[..], m.id.as_deref(), m.deleted),
            (3, &b"x2"[..], Some("id2"), false)
        );
        let del = base64::engine::general_purpose::STANDARD
            .encode("NATS/1.0\r\nKV-Operation: DEL\r\n\r\n");
        let answer = json!({"message": {"seq": 9, "hdrs": del}}).to_string();
        let m = leader_answer(answer.as_bytes()).unwrap().unwrap();
        assert!(m.deleted && m.payload.is_empty() && m.id.is_none());
        let none = br#"{"error":{"code":404,"err_code":10037,"description":"no message found"}}"#;
        assert!(leader_answer(none).unwrap().is_none());
        let gone = br#"{"error":{"code":404,"err_code":10059,"description":"stream not found"}}"#;
        assert!(matches!(leader_answer(gone), Err(Fail::NoStream)));
    }
}
