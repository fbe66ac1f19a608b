//! What one call to the server answers: a stored message ([`Stored`]), or
//! why it failed ([`Fail`]), and the JetStream error code the reads and
//! the writes both retry on. Below `client.rs`, `reads.rs` and `setup.rs`,
//! which all speak in these.

use bytes::Bytes;

/// Why one call failed.
#[derive(Debug, Clone)]
pub(super) enum Fail {
    /// No answer (server down or restarting, timeout): worth retrying.
    Transient(String),
    /// The stream is not there.
    NoStream,
    /// A compare-and-swap lost: the subject moved past the expected revision.
    Conflict,
    /// The server answered with an error.
    Refused(String),
    /// No answer within the retry bound.
    Unavailable(String),
}

/// One stored message, as a direct get returns it.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    /// Its stream sequence (a KV key's revision).
    pub seq: u64,
    /// Its body.
    pub payload: Bytes,
    /// A KV delete or purge marker.
    pub deleted: bool,
    /// Its `Nats-Msg-Id`, when it has one.
    pub id: Option<String>,
}

/// "JetStream system temporarily unavailable": a cluster between leaders
/// (its meta leader or a stream's) answers it to API requests, gets and
/// publishes alike; asked again once a leader is elected, it answers.
pub(super) const TEMPORARILY_UNAVAILABLE: u64 = 10008;
