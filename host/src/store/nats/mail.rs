//! Inboxes and histories on a team's mail stream.
//!
//! Two subjects per agent:
//!
//! - `…mail.in.AGENT`: deliveries. One message per [`TeamStore::append_inbox`]
//!   call (a JSON array of entries, so a multi-entry append is atomic), with
//!   `Nats-Msg-Id` set from the entry's `msg_id`: a delivery retried after a
//!   lost answer is stored once.
//! - `…mail.out.AGENT`: consumption records, which *are* the history. Each
//!   record holds the entries it consumed (stamped with `consumedAt`), any
//!   delivery that could not be read (kept raw, never dropped), and the
//!   inbox's whole consumed state after it: a floor (every delivery at or
//!   below that stream sequence is consumed) and the few consumed positions
//!   above it (entries taken out of order, such as a shutdown request picked
//!   ahead of older mail).
//!
//! **Taking is one compare-and-swap.** A take reads the last record (its
//! sequence `L` and the consumed state), reads the deliveries above the
//! floor, asks `pick`, and publishes one new record with
//! `Nats-Expected-Last-Subject-Sequence: L`. That single stored message both
//! consumes the entries and appends them to the history, so no crash can
//! consume without recording or record without consuming; and of two
//! takers that read the same `L`, one wins and the other reads again and
//! asks `pick` again (the trait allows it). The server acknowledges the
//! record before the entries are handed out: consumption is acknowledged,
//! and the entries left stay in the stream, in order, unread. A taker hands
//! entries out only when the record stored right after `L` is its own
//! (read from the stream, `Conn::swap`): an answer lost after the record
//! was stored, or a read behind it, can neither hand the entries out twice
//! nor consume them without handing them out. JetStream's
//! own consumer acks were not used: a pull consumer hides a fetched message
//! from other readers until its ack wait expires (so a snapshot of the
//! inbox, which `status` and `watch` need, is not possible), and its ack is
//! not atomic with a history append.
//!
//! **History cursors** are stream sequences: `epoch` identifies the stream
//! (a hash of its creation time, so a deleted and re-made team restarts
//! readers), `offset` is the sequence of the last record read.
//!
//! [`TeamStore::append_inbox`]: crate::store::TeamStore::append_inbox

use async_nats::HeaderMap;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::answers::{Fail, Stored};
use super::naming::{token, untoken, TeamNames};
use super::setup::{self, Which};
use super::NatsStore;
use crate::error::{Error, Result};
use crate::store::backend::{HistoryChunk, HistoryCursor, Pick};
use crate::store::mailbox::consumed_now;
use crate::store::names::agent_file_stem;
use crate::store::InboxMessage;

/// Which deliveries an inbox has consumed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Consumed {
    /// Every delivery at or below this stream sequence is consumed.
    floor: u64,
    /// Consumed `(sequence, index in the delivery)` above the floor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    above: Vec<(u64, u32)>,
}

impl Consumed {
    fn has(&self, seq: u64, idx: u32) -> bool {
        seq <= self.floor || self.above.contains(&(seq, idx))
    }
}

/// A delivery that could not be read, kept as it was.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Unreadable {
    seq: u64,
    idx: Option<u32>,
    raw: String,
    error: String,
}

/// One message on `…mail.out.AGENT`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// History entries, oldest first.
    #[serde(default)]
    entries: Vec<Value>,
    /// The inbox's consumed state after this record.
    consumed: Consumed,
    /// Deliveries set aside because they could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unreadable: Vec<Unreadable>,
}

/// One entry of the inbox as read.
struct Item {
    seq: u64,
    idx: u32,
    entry: std::result::Result<InboxMessage, (String, String)>,
}

impl NatsStore {
    pub(super) fn mail_append(
        &self,
        team: &str,
        agent: &str,
        entries: &[InboxMessage],
    ) -> Result<()> {
        let stem = agent_file_stem(agent)?;
        let n = self.names(team);
        let conn = self.conn();
        let payload = Bytes::from(
            serde_json::to_vec(entries)
                .map_err(|e| Error::Encode(format!("cannot serialise: {e}")))?,
        );
        let mut h = HeaderMap::new();
        if let [InboxMessage {
            msg_id: Some(id), ..
        }] = entries
        {
            h.insert("Nats-Msg-Id", format!("in.{}.{id}", token(&stem)).as_str());
        } else {
            h.insert("Nats-Msg-Id", uuid::Uuid::new_v4().to_string().as_str());
        }
        let subject = n.inbox(&stem);
        loop {
            match conn.publish(&n.mail_stream, &subject, h.clone(), payload.clone(), None) {
                Ok(_) => return Ok(()),
                // A team deleted meanwhile gets its mail stream back, as the
                // file store makes the inbox directory again.
                Err(Fail::NoStream) => self.ensure_fresh(&n, Which::Mail)?,
                Err(f) => return Err(conn.error("deliver a message", f)),
            }
        }
    }

    pub(super) fn mail_read(&self, team: &str, agent: &str) -> Result<Vec<InboxMessage>> {
        let stem = agent_file_stem(agent)?;
        let n = self.names(team);
        let what = "read an inbox";
        let (_, consumed) = self.last_record(team, &n, &stem, what)?;
        let items = self.scan(&n, &stem, &consumed, what)?;
        Ok(items
            .into_iter()
            .filter_map(|i| match i.entry {
                Ok(m) => Some(m),
                Err((_, e)) => {
                    tracing::warn!(team, agent, seq = i.seq, error = %e, "skipping an unreadable inbox entry");
                    None
                }
            })
            .collect())
    }

    pub(super) fn mail_take(
        &self,
        team: &str,
        agent: &str,
        pick: Pick<'_>,
    ) -> Result<Vec<InboxMessage>> {
        let stem = agent_file_stem(agent)?;
        let n = self.names(team);
        let conn = self.conn();
        let what = "take from an inbox";
        loop {
            let (last, old) = self.last_record(team, &n, &stem, what)?;
            let items = self.scan(&n, &stem, &old, what)?;
            let (mut gone, mut taken, mut unreadable) = (Vec::new(), Vec::new(), Vec::new());
            let mut consumed = old.above.clone();
            let mut first_kept = None;
            let mut last_seen = old.floor;
            for i in items {
                last_seen = last_seen.max(i.seq);
                let took = match i.entry {
                    Ok(m) if m.read => {
                        gone.push(m);
                        true
                    }
                    Ok(m) => {
                        let yes = pick(&m);
                        if yes {
                            taken.push(m);
                        }
                        yes
                    }
                    Err((raw, error)) => {
                        unreadable.push(Unreadable {
                            seq: i.seq,
                            idx: Some(i.idx),
                            raw,
                            error,
                        });
                        true
                    }
                };
                if took {
                    consumed.push((i.seq, i.idx));
                } else if first_kept.is_none() {
                    first_kept = Some(i.seq);
                }
            }
            if gone.is_empty() && taken.is_empty() && unreadable.is_empty() {
                return Ok(Vec::new());
            }
            let floor = first_kept.map_or(last_seen, |s| s - 1);
            consumed.retain(|&(s, _)| s > floor);
            consumed.sort_unstable();
            consumed.dedup();
            gone.extend(taken.iter().cloned());
            let record = Record {
                entries: values(&consumed_now(&gone))?,
                consumed: Consumed {
                    floor,
                    above: consumed,
                },
                unreadable,
            };
            if !record.unreadable.is_empty() {
                tracing::warn!(
                    team,
                    agent,
                    count = record.unreadable.len(),
                    "unreadable deliveries were set aside in the history record"
                );
            }
            match self.put_record(&n, &stem, &record, last) {
                Ok(()) => return Ok(taken),
                Err(Fail::Conflict) => continue,
                Err(Fail::NoStream) => return Ok(Vec::new()),
                Err(f) => return Err(conn.error(what, f)),
            }
        }
    }

    pub(super) fn mail_record(&self, team: &str, agent: &str, entry: &InboxMessage) -> Result<()> {
        let entries = values(&consumed_now(std::slice::from_ref(entry)))?;
        self.append_record(team, agent, entries, "record in a history")
    }

    /// Appends already-stamped history entries (an import).
    pub(super) fn import_history(
        &self,
        team: &str,
        agent: &str,
        entries: &[InboxMessage],
    ) -> Result<()> {
        self.append_record(team, agent, values(entries)?, "import a history")
    }

    /// A record of `entries` that consumes nothing more.
    fn append_record(
        &self,
        team: &str,
        agent: &str,
        entries: Vec<Value>,
        what: &str,
    ) -> Result<()> {
        let stem = agent_file_stem(agent)?;
        let n = self.names(team);
        let conn = self.conn();
        loop {
            let (last, consumed) = self.last_record(team, &n, &stem, what)?;
            let record = Record {
                entries: entries.clone(),
                consumed,
                unreadable: Vec::new(),
            };
            match self.put_record(&n, &stem, &record, last) {
                Ok(()) => return Ok(()),
                Err(Fail::Conflict) => continue,
                Err(Fail::NoStream) => self.ensure_fresh(&n, Which::Mail)?,
                Err(f) => return Err(conn.error(what, f)),
            }
        }
    }

    pub(super) fn mail_history(
        &self,
        team: &str,
        agent: &str,
        cursor: HistoryCursor,
    ) -> Result<HistoryChunk> {
        let stem = agent_file_stem(agent)?;
        let n = self.names(team);
        let conn = self.conn();
        let what = "read a history";
        let Some(created) =
            setup::created(conn, &n.mail_stream).map_err(|f| conn.error(what, f))?
        else {
            return Ok(HistoryChunk {
                restarted: cursor != HistoryCursor::default(),
                entries: Vec::new(),
                cursor: HistoryCursor::default(),
            });
        };
        let epoch = fnv(&created);
        let restarted = cursor.epoch != epoch;
        let mut at = if restarted { 0 } else { cursor.offset };
        let mut entries = Vec::new();
        let subject = n.outbox(&stem);
        loop {
            let next = match conn.next(&n.mail_stream, &subject, at + 1) {
                Ok(Some(s)) => s,
                Ok(None) | Err(Fail::NoStream) => break,
                Err(f) => return Err(conn.error(what, f)),
            };
            at = next.seq;
            match serde_json::from_slice::<Record>(&next.payload) {
                Ok(r) => entries.extend(r.entries.into_iter().filter_map(|v| {
                    serde_json::from_value::<InboxMessage>(v)
                        .map_err(|e| tracing::warn!(team, agent, seq = next.seq, error = %e, "skipping a bad history entry"))
                        .ok()
                })),
                Err(e) => tracing::warn!(team, agent, seq = next.seq, error = %e, "skipping a bad history record"),
            }
        }
        Ok(HistoryChunk {
            restarted: restarted && cursor != HistoryCursor::default(),
            entries,
            cursor: HistoryCursor { epoch, offset: at },
        })
    }

    pub(super) fn mail_agents(&self, team: &str) -> Result<Vec<String>> {
        let n = self.names(team);
        let conn = self.conn();
        let subjects = setup::subjects(conn, &n.mail_stream, &n.mail_subjects())
            .map_err(|f| conn.error("list the inboxes", f))?;
        let mut all: Vec<String> = subjects
            .iter()
            .filter_map(|s| untoken(s.rsplit('.').next()?))
            .collect();
        all.sort();
        all.dedup();
        Ok(all)
    }

    /// The last record's sequence (`0`: none) and the consumed state it
    /// leaves. A last record that cannot be read is an error: taking on a
    /// guessed state could hand out consumed mail again or skip unread mail.
    fn last_record(
        &self,
        team: &str,
        n: &TeamNames,
        stem: &str,
        what: &str,
    ) -> Result<(u64, Consumed)> {
        let conn = self.conn();
        let last = match conn.last(&n.mail_stream, &n.outbox(stem)) {
            Ok(l) => l,
            Err(Fail::NoStream) => None,
            Err(f) => return Err(conn.error(what, f)),
        };
        let Some(Stored { seq, payload, .. }) = last else {
            return Ok((0, Consumed::default()));
        };
        let record: Record = serde_json::from_slice(&payload).map_err(|source| Error::Corrupt {
            path: self.location(team, &format!("history/{stem}#{seq}")),
            moved_to: None,
            source,
        })?;
        Ok((seq, record.consumed))
    }

    /// Every delivery entry above the floor not consumed, oldest first.
    fn scan(
        &self,
        n: &TeamNames,
        stem: &str,
        consumed: &Consumed,
        what: &str,
    ) -> Result<Vec<Item>> {
        let conn = self.conn();
        let subject = n.inbox(stem);
        let mut out = Vec::new();
        let mut at = consumed.floor;
        loop {
            let next = match conn.next(&n.mail_stream, &subject, at + 1) {
                Ok(Some(s)) => s,
                Ok(None) | Err(Fail::NoStream) => break,
                Err(f) => return Err(conn.error(what, f)),
            };
            at = next.seq;
            let raw = String::from_utf8_lossy(&next.payload).into_owned();
            match serde_json::from_slice::<Vec<Value>>(&next.payload) {
                Ok(values) => {
                    for (idx, v) in values.into_iter().enumerate() {
                        let idx = idx as u32;
                        if consumed.has(next.seq, idx) {
                            continue;
                        }
                        let entry = serde_json::from_value::<InboxMessage>(v.clone())
                            .map_err(|e| (v.to_string(), e.to_string()));
                        out.push(Item {
                            seq: next.seq,
                            idx,
                            entry,
                        });
                    }
                }
                Err(e) if !consumed.has(next.seq, 0) => out.push(Item {
                    seq: next.seq,
                    idx: 0,
                    entry: Err((raw, e.to_string())),
                }),
                Err(_) => {}
            }
        }
        Ok(out)
    }

    fn put_record(
        &self,
        n: &TeamNames,
        stem: &str,
        record: &Record,
        last: u64,
    ) -> Result<(), Fail> {
        let payload = serde_json::to_vec(record)
            .map_err(|e| Fail::Refused(format!("cannot serialise a history record: {e}")))?;
        self.conn()
            .swap(
                &n.mail_stream,
                &n.outbox(stem),
                HeaderMap::new(),
                Bytes::from(payload),
                last,
            )
            .map(|_| ())
    }
}

fn values(entries: &[InboxMessage]) -> Result<Vec<Value>> {
    entries
        .iter()
        .map(|e| {
            serde_json::to_value(e).map_err(|e| Error::Encode(format!("cannot serialise: {e}")))
        })
        .collect()
}

/// FNV-1a, 64 bits: a stable epoch from the stream's creation time.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumed_state_counts_the_floor_and_the_positions_above_it() {
        let c = Consumed {
            floor: 5,
            above: vec![(9, 0), (9, 2)],
        };
        assert!(c.has(3, 7));
        assert!(c.has(9, 2));
        assert!(!c.has(9, 1));
        assert!(!c.has(6, 0));
    }
}
