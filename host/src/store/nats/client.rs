//! [`Conn`]: the store's own connection to a NATS server, and the few
//! JetStream calls the store makes, each bounded in time.
//!
//! **Its own runtime.** [`TeamStore`](crate::store::TeamStore) is
//! synchronous, and its callers are the CLI (no runtime at all), blocking-pool
//! threads (`spawn_blocking`) and, now and then, code that forgets and calls
//! from an executor thread. A `Conn` therefore owns a small tokio runtime
//! (two worker threads) that drives the client; each call is spawned onto it
//! and waited for on a `std` channel ([`Conn::block`]). That works from any
//! thread, never panics the way `block_on` inside a runtime does, and cannot
//! deadlock: the runtime's threads never wait on the calling side, and
//! nothing user-supplied (update closures, observers) ever runs on them.
//! Dropping the `Conn` shuts the runtime down in the background, so it may
//! be dropped anywhere.
//!
//! **JetStream's JSON API, spoken directly.** Publishing is a request whose
//! answer is a JSON ack; reads are direct gets (`$JS.API.DIRECT.GET`) on a
//! stream kept by one server and the stream leader's gets
//! (`$JS.API.STREAM.MSG.GET`) on a replicated one (`reads.rs` says why);
//! streams are made with `STREAM.CREATE`. Only the fields the store needs are
//! read from answers, so a server that omits a field (2.9 and its account
//! info) cannot break a response type.
//!
//! **Bounded waits.** Every call is retried while the server does not
//! answer (down, restarting, JetStream still starting) for at most
//! [`NatsOptions::retry_for`] (30 s), then fails with
//! [`Error::StoreUnavailable`] naming the server (never its credentials).
//! The client itself reconnects without limit in the background, every
//! 50 ms to 1 s, so a call made after the server is back succeeds at once.
//!
//! **Ambiguous writes resolve exactly once.** Each write carries a
//! `Nats-Msg-Id` that stays the same across its retries. When an answer is
//! lost (the server stored the write and died), the retry is the same
//! message. A plain publish (a delivery) is then answered by the server's
//! de-duplication (two minutes, longer than any retry) with the first
//! store's sequence: stored once. A compare-and-swap retried and refused is
//! checked before it counts as lost: if the message stored right after the
//! revision it expected carries its id, it landed ([`Conn::landed`]; a
//! bucket keeps 64 revisions a key for this). nats-server 2.9 answers such a
//! retry as a duplicate; 2.15 checks the expected sequence first; both end
//! the same way. A retry that finds its first attempt still in flight
//! (error 10158) or a new leader still applying its log (10163) is retried.
//!
//! **A swap's winner is read from the stream, not from an answer.**
//! [`Conn::swap`] wins only when the message stored right after the
//! revision it expected carries its own id ([`Conn::first_after`]): the
//! stream's order has exactly one message there, so of any number of
//! writers expecting one revision at most one is told it won, whatever
//! answers were lost, retried or given by a server that should not have
//! given them. A read that does not reach a write known to be stored (a
//! replica behind, a deposed leader) is made again, never taken for the
//! answer.

use std::future::Future;
use std::time::{Duration, Instant};

use async_nats::{HeaderMap, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};

use super::answers::{Fail, Stored, TEMPORARILY_UNAVAILABLE};
use super::reads::{leader_answer, ReadVia};
use super::security::NatsSecurity;
use super::url::NatsUrl;
use crate::error::{Error, Result};

/// How a NATS store waits, and how it proves who it is.
/// `NatsOptions::default()`: 30 s of retries per call, 2 s per request, 5 s
/// to connect, no TLS files or credentials beyond the URL's.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// How long one store call keeps trying while the server does not answer.
    pub retry_for: Duration,
    /// How long one request waits for its answer.
    pub request_timeout: Duration,
    /// How long the first connection may take.
    pub connect_timeout: Duration,
    /// TLS files and credentials, from the host's flags and environment
    /// only (see [`NatsSecurity`]).
    pub security: NatsSecurity,
}

impl Default for NatsOptions {
    fn default() -> Self {
        NatsOptions {
            retry_for: Duration::from_secs(30),
            request_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(5),
            security: NatsSecurity::default(),
        }
    }
}

/// The store's connection: its runtime, the client, and the bounds.
pub(super) struct Conn {
    rt: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    client: async_nats::Client,
    url: NatsUrl,
    opts: NatsOptions,
    reconnects: tokio::sync::watch::Receiver<u64>,
    /// How many servers keep a copy of each stream this store makes
    /// (`setup.rs`).
    replicas: usize,
    /// Streams known to exist, and how each is read (see [`Conn::direct`]
    /// and `reads.rs`).
    seen: std::sync::Mutex<std::collections::HashMap<String, ReadVia>>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("url", &self.url).finish()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

const API: &str = "$JS.API";
/// How long a replicated stream seen before must stay "not found" before
/// the store believes it (see [`Conn::read_via`]).
const GONE_AFTER: Duration = Duration::from_secs(10);
/// JetStream's error code for a lost compare-and-swap.
const WRONG_LAST_SEQUENCE: u64 = 10071;
/// Newer servers' (2.9.21 on) code for a compare-and-swap refused because
/// another one on the same subject is still being replicated: lost too.
const WRONG_LAST_SEQUENCE_IN_FLIGHT: u64 = 10164;
/// JetStream's error code for a stream that does not exist.
const STREAM_NOT_FOUND: u64 = 10059;
/// A retried message id whose first attempt is still being stored
/// (clustered, 2.10+): asked again, it is answered as a duplicate.
const DUPLICATE_IN_PROCESS: u64 = 10158;
/// A new stream leader still applying its log refuses compare-and-swaps
/// for a moment (2.11+): asked again, it answers.
const EXPECTED_NOT_READY: u64 = 10163;

impl Conn {
    /// Connects to `url` and checks that the server has JetStream. An
    /// unreachable server is an error naming its address at once; unusable
    /// settings, a TLS failure or refused credentials are errors naming the
    /// setting to fix.
    pub fn connect(url: &NatsUrl, opts: NatsOptions) -> Result<Conn> {
        let loaded = opts.security.load(url.is_tls())?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("teamhost-nats")
            .enable_all()
            .build()
            .map_err(|e| unavailable(url, format!("cannot start its client's runtime: {e}")))?;
        let handle = rt.handle().clone();
        let (tx, reconnects) = tokio::sync::watch::channel(0u64);
        let shown = url.display();
        let connect = loaded
            .apply(async_nats::ConnectOptions::new())?
            .name("teamhost")
            .connection_timeout(opts.connect_timeout)
            .request_timeout(Some(opts.request_timeout))
            .max_reconnects(None)
            .reconnect_delay_callback(|n| {
                Duration::from_millis(50u64 << n.min(5)).min(Duration::from_secs(1))
            })
            .event_callback(move |event| {
                let (tx, shown) = (tx.clone(), shown.clone());
                async move {
                    match event {
                        async_nats::Event::Connected => {
                            tracing::info!(store = %shown, "connected to the NATS server");
                            tx.send_modify(|n| *n += 1);
                        }
                        async_nats::Event::Disconnected => {
                            tracing::warn!(store = %shown, "lost the NATS server; reconnecting");
                        }
                        async_nats::Event::ServerError(
                            async_nats::ServerError::AuthorizationViolation,
                        ) => {
                            // After the first connection (its refusal is an
                            // error of `connect`): credentials revoked or
                            // expired while running; calls then time out.
                            tracing::error!(store = %shown, "the NATS server refused this host's credentials on reconnecting (authorization violation); check --store-creds / --store-nkey (TEAMHOST_STORE_CREDS / TEAMHOST_STORE_NKEY) or the URL's user");
                        }
                        other => {
                            tracing::debug!(store = %shown, event = %other, "NATS client event")
                        }
                    }
                }
            })
            .connect(url.connect_addresses());
        let client = spawn_wait(&handle, connect)
            .ok_or_else(|| unavailable(url, "its client stopped while connecting".into()))?
            .map_err(|e| {
                let detail = scrub(&e.to_string(), url);
                let message = super::security::explain(
                    e.kind(),
                    &detail,
                    &opts.security,
                    url.has_credentials(),
                )
                .unwrap_or_else(|| format!(
                    "cannot reach {} ({detail}); start it with JetStream (`nats-server -js`) or point --store / TEAMHOST_STORE at a running one",
                    url.servers_phrase(),
                ));
                Error::StoreUnavailable {
                    store: url.display(),
                    message,
                }
            })?;
        let conn = Conn {
            rt: Some(rt),
            handle,
            client,
            url: url.clone(),
            opts,
            reconnects,
            replicas: 1,
            seen: Default::default(),
        };
        // Retried like any call while nobody answers: on a cluster, a node
        // lost with the JetStream meta leader leaves the API unanswered
        // until the others elect one (seconds), and a command run then
        // should wait for that, not fail.
        let info = conn
            .call(|c| async move { request(&c, format!("{API}.INFO"), None, Bytes::new()).await });
        match info {
            Ok(_) => {
                let server = conn.client.server_info();
                let mut conn = conn;
                conn.replicas = super::replicas::replicas(
                    url.replicas(),
                    server.cluster.is_some(),
                    &server.version,
                )
                .map_err(|why| unavailable(url, why))?;
                Ok(conn)
            }
            Err(Fail::NoStream) => Err(unavailable(
                url,
                format!(
                    "{} has no JetStream; start it with `-js` (and a store directory, `-sd DIR`)",
                    url.servers_phrase()
                ),
            )),
            Err(f) => Err(conn.error("check JetStream", f)),
        }
    }

    /// The URL this store connects to.
    pub fn url(&self) -> &NatsUrl {
        &self.url
    }

    /// The settings it connected with.
    pub fn security(&self) -> &NatsSecurity {
        &self.opts.security
    }

    /// How many servers keep a copy of each stream this store makes: the
    /// URL's `?replicas=N`, else 3 on a JetStream cluster and 1 on a lone
    /// server (`replicas.rs`).
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// The runtime's handle, for feeds' tasks.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// The client itself, for a feed's task (which must flush on it after a
    /// reconnect).
    pub fn client(&self) -> async_nats::Client {
        self.client.clone()
    }

    /// Ticks each time the client (re)connects.
    pub fn reconnects(&self) -> tokio::sync::watch::Receiver<u64> {
        self.reconnects.clone()
    }

    /// Runs `fut` on the store's runtime and waits for it on this thread.
    pub fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, Fail>> + Send + 'static,
    ) -> Result<T, Fail> {
        spawn_wait(&self.handle, fut)
            .unwrap_or_else(|| Err(Fail::Unavailable("the store's client stopped".into())))
    }

    /// Runs the call `make` builds, again while it fails for lack of an
    /// answer, for at most the retry bound.
    pub fn call<T, F>(&self, mut make: impl FnMut(async_nats::Client) -> F) -> Result<T, Fail>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Fail>> + Send + 'static,
    {
        let deadline = Instant::now() + self.opts.retry_for;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.block(make(self.client.clone())) {
                Err(Fail::Transient(why)) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(Fail::Unavailable(why));
                    }
                    tracing::debug!(store = %self.url.display(), %why, "retrying a store call");
                    std::thread::sleep(pause.min(deadline - now));
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    /// One JetStream API request (`$JS.API.{what}`) with a JSON body; its
    /// JSON answer. `NoStream` for "stream not found"; no answer at all (no
    /// JetStream yet, after a restart) is retried.
    pub fn api(&self, what: &str, body: Value) -> Result<Value, Fail> {
        let subject = format!("{API}.{what}");
        let payload = if body.is_null() {
            Bytes::new()
        } else {
            Bytes::from(body.to_string())
        };
        self.call(|c| {
            let (subject, payload) = (subject.clone(), payload.clone());
            async move { api_once(&c, subject, payload).await }
        })
    }

    /// Whether `stream` exists (asking the server, retrying while it does
    /// not answer).
    pub fn stream_exists(&self, stream: &str) -> Result<bool, Fail> {
        Ok(self.read_via(stream)?.is_some())
    }

    /// How `stream` is read (`reads.rs`), from its `STREAM.INFO`; `None`
    /// when it does not exist. Remembered once known.
    ///
    /// A replicated stream seen before that is suddenly "not found" is
    /// asked about again for up to [`GONE_AFTER`]: while a node is lost and
    /// its replicas elect a leader, the cluster may say so of a stream that
    /// is there (and a publish may find nobody listening).
    fn read_via(&self, stream: &str) -> Result<Option<ReadVia>, Fail> {
        let replicated = self.lock_seen().get(stream) == Some(&ReadVia::Leader);
        let deadline = Instant::now() + GONE_AFTER;
        loop {
            match self.api(&format!("STREAM.INFO.{stream}"), Value::Null) {
                Ok(info) => {
                    let via = ReadVia::of(&info);
                    self.lock_seen().insert(stream.to_string(), via);
                    return Ok(Some(via));
                }
                Err(Fail::NoStream) if replicated && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(Fail::NoStream) => {
                    self.lock_seen().remove(stream);
                    return Ok(None);
                }
                Err(f) => return Err(f),
            }
        }
    }

    /// A direct get on `stream` (`body` is the request: `last_by_subj`, or
    /// `seq` with `next_by_subj`); `None` when there is no such message.
    /// `NoStream` only when the stream is really gone.
    pub fn direct_get(&self, stream: &str, body: Value) -> Result<Option<Stored>, Fail> {
        let mut got = self.direct(stream, vec![Bytes::from(body.to_string())])?;
        Ok(got.pop().flatten())
    }

    /// The last message on `subject` of `stream`.
    pub fn last(&self, stream: &str, subject: &str) -> Result<Option<Stored>, Fail> {
        self.direct_get(stream, json!({ "last_by_subj": subject }))
    }

    /// The first message on `subject` of `stream` at or after `seq`.
    pub fn next(&self, stream: &str, subject: &str, seq: u64) -> Result<Option<Stored>, Fail> {
        self.direct_get(
            stream,
            json!({ "seq": seq.max(1), "next_by_subj": subject }),
        )
    }

    /// The last message of each subject of `stream`, asked all at once (at
    /// most 64 requests in flight); `None` where a subject has none.
    pub fn last_of_each(
        &self,
        stream: &str,
        subjects: &[String],
    ) -> Result<Vec<Option<Stored>>, Fail> {
        let bodies = subjects
            .iter()
            .map(|s| Bytes::from(json!({ "last_by_subj": s }).to_string()))
            .collect();
        self.direct(stream, bodies)
    }

    /// Gets, concurrently: direct gets on a stream kept by one server, the
    /// leader's gets on a replicated one (`reads.rs`). A server answers
    /// nothing at all to a direct get on a stream that does not exist (2.9
    /// lets it time out), so a stream is asked about first, once, and
    /// again after a timeout.
    fn direct(&self, stream: &str, bodies: Vec<Bytes>) -> Result<Vec<Option<Stored>>, Fail> {
        use futures_util::StreamExt;
        let known = self.lock_seen().get(stream).copied();
        let mut via = match known {
            Some(via) => via,
            None => self.read_via(stream)?.ok_or(Fail::NoStream)?,
        };
        let deadline = Instant::now() + self.opts.retry_for;
        loop {
            let subject = via.subject(stream);
            let (c, bodies2) = (self.client.clone(), bodies.clone());
            let got = self.block(async move {
                let answers: Vec<Result<Option<Stored>, Fail>> =
                    futures_util::stream::iter(bodies2.into_iter().map(|b| {
                        let (c, subject) = (c.clone(), subject.clone());
                        async move {
                            let m = request(&c, subject, None, b).await?;
                            if via == ReadVia::Leader {
                                return leader_answer(&m.payload);
                            }
                            match m.status {
                                Some(StatusCode::NOT_FOUND) => Ok(None),
                                Some(s) if s != StatusCode::OK => Err(Fail::Refused(format!(
                                    "direct get answered {s}: {}",
                                    m.description.unwrap_or_default()
                                ))),
                                _ => stored(m).map(Some),
                            }
                        }
                    }))
                    .buffered(64)
                    .collect()
                    .await;
                answers.into_iter().collect::<Result<Vec<_>, Fail>>()
            });
            match got {
                // No answer: the stream is gone (or was made again another
                // way), JetStream is still recovering it, its replicas are
                // electing a leader, or the server is away.
                Err(Fail::NoStream | Fail::Transient(_)) => match self.read_via(stream)? {
                    None => return Err(Fail::NoStream),
                    Some(now) if Instant::now() < deadline => {
                        via = now;
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Some(_) => {
                        return Err(Fail::Unavailable(match got {
                            Err(Fail::Transient(why)) => why,
                            _ => "nobody answered gets".into(),
                        }))
                    }
                },
                other => return other,
            }
        }
    }

    /// Forgets that `stream` exists (this store deleted it).
    pub fn forget_stream(&self, stream: &str) {
        self.lock_seen().remove(stream);
    }

    fn lock_seen(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, ReadVia>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes to `stream` and waits for its ack: the sequence stored.
    /// `expect` makes it a compare-and-swap on the subject's last sequence
    /// (`Some(0)`: the subject must be empty). Retries of one write carry
    /// one message id, so they store it once (module docs).
    pub fn publish(
        &self,
        stream: &str,
        subject: &str,
        mut headers: HeaderMap,
        payload: Bytes,
        expect: Option<u64>,
    ) -> Result<u64, Fail> {
        if headers.get("Nats-Msg-Id").is_none() {
            headers.insert("Nats-Msg-Id", uuid::Uuid::new_v4().to_string().as_str());
        }
        let id = headers
            .get("Nats-Msg-Id")
            .map(|v| v.as_str().to_string())
            .unwrap_or_default();
        if let Some(rev) = expect {
            headers.insert(
                "Nats-Expected-Last-Subject-Sequence",
                rev.to_string().as_str(),
            );
        }
        let subject = subject.to_string();
        let mut attempts = 0;
        let deadline = Instant::now() + self.opts.retry_for;
        let got = loop {
            let got = self.call(|c| {
                attempts += 1;
                let (subject, headers, payload) =
                    (subject.clone(), headers.clone(), payload.clone());
                async move { publish_once(&c, subject, headers, payload).await }
            });
            // Nobody listening: the stream is gone, or (a replicated one)
            // between leaders. `stream_exists` tells them apart.
            match got {
                Err(Fail::NoStream) if self.stream_exists(stream)? => {
                    if Instant::now() >= deadline {
                        break Err(Fail::Unavailable(format!(
                            "nobody stored writes to {stream}"
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                other => break other,
            }
        };
        match (got, expect) {
            // A retried swap lost: did an attempt whose answer was lost land?
            // (2.9 answers a retried message id as a duplicate; newer
            // servers check the expected sequence first and say conflict.)
            (Err(Fail::Conflict), Some(rev)) if attempts > 1 => {
                match self.landed(stream, &subject, rev, &id)? {
                    Some(seq) => Ok(seq),
                    None => Err(Fail::Conflict),
                }
            }
            (other, _) => other,
        }
    }

    /// The sequence of message `id` if it is the one stored on `subject`
    /// right after revision `rev` (the bucket keeps 64 revisions a key, the
    /// mail stream all). Asked after the server refused a swap expecting
    /// `rev`, so a message after `rev` is stored.
    pub fn landed(
        &self,
        stream: &str,
        subject: &str,
        rev: u64,
        id: &str,
    ) -> Result<Option<u64>, Fail> {
        Ok(Some(self.first_after(stream, subject, rev)?)
            .filter(|m| m.id.as_deref() == Some(id))
            .map(|m| m.seq))
    }

    /// The message stored on `subject` right after revision `rev`: the one
    /// whose swap expecting `rev` won. Only asked when a message after
    /// `rev` is known to be stored (a swap was acknowledged or refused), so
    /// a read that finds none is behind that write (a replica that has not
    /// applied it, a leader already deposed) and is made again, for at most
    /// the retry bound.
    pub fn first_after(&self, stream: &str, subject: &str, rev: u64) -> Result<Stored, Fail> {
        let deadline = Instant::now() + self.opts.retry_for;
        loop {
            if let Some(m) = self.next(stream, subject, rev + 1)? {
                return Ok(m);
            }
            if Instant::now() >= deadline {
                return Err(Fail::Unavailable(format!(
                    "reads of {subject} never reached the write after revision {rev}"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A compare-and-swap on `subject` expecting revision `expect` (`0`: a
    /// create) whose outcome is read from the stream: the new revision when
    /// the message stored right after `expect` is this write (its
    /// `Nats-Msg-Id`, `headers`' own or a fresh one), else
    /// [`Fail::Conflict`]. An acknowledged write whose revision the key's
    /// history no longer holds (64 later writes) is taken at the server's
    /// word.
    pub fn swap(
        &self,
        stream: &str,
        subject: &str,
        mut headers: HeaderMap,
        payload: Bytes,
        expect: u64,
    ) -> Result<u64, Fail> {
        if headers.get("Nats-Msg-Id").is_none() {
            headers.insert("Nats-Msg-Id", uuid::Uuid::new_v4().to_string().as_str());
        }
        let id = headers
            .get("Nats-Msg-Id")
            .map(|v| v.as_str().to_string())
            .unwrap_or_default();
        let acked = self.publish(stream, subject, headers, payload, Some(expect))?;
        let first = self.first_after(stream, subject, expect)?;
        if first.id.as_deref() == Some(id.as_str()) {
            Ok(first.seq)
        } else if first.seq > acked {
            Ok(acked)
        } else {
            Err(Fail::Conflict)
        }
    }

    /// A crate error for a failed call, naming the server (never its
    /// credentials) and what was being done.
    pub fn error(&self, what: &str, f: Fail) -> Error {
        let message = match f {
            Fail::Unavailable(why) => format!(
                "{what}: {} did not answer for {:?} ({why}); check that nats-server runs there with JetStream (-js), or point --store / TEAMHOST_STORE elsewhere",
                self.url.servers_phrase(),
                self.opts.retry_for
            ),
            Fail::Transient(why) => format!(
                "{what}: {} did not answer ({why}); check that nats-server runs there with JetStream (-js), or point --store / TEAMHOST_STORE elsewhere",
                self.url.servers_phrase(),
            ),
            Fail::Refused(why) => format!("{what}: the server refused: {why}"),
            Fail::NoStream => format!("{what}: the team's stream is gone (the team was deleted meanwhile)"),
            Fail::Conflict => format!("{what}: another writer kept winning; try again"),
        };
        Error::StoreUnavailable {
            store: self.url.display(),
            message: scrub(&message, &self.url),
        }
    }
}

fn unavailable(url: &NatsUrl, message: String) -> Error {
    Error::StoreUnavailable {
        store: url.display(),
        message,
    }
}

/// `text` without the URL's credentials, however they got there.
fn scrub(text: &str, url: &NatsUrl) -> String {
    match url.credentials() {
        Some(creds) => text.replace(creds, "***"),
        None => text.to_string(),
    }
}

/// Spawns `fut` on `handle` and waits for its output on this thread;
/// `None` when the runtime dropped it (shut down, or the future panicked).
fn spawn_wait<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    fut: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().ok()
}

/// A request, its failures sorted into what may be retried.
async fn request(
    c: &async_nats::Client,
    subject: String,
    headers: Option<HeaderMap>,
    payload: Bytes,
) -> Result<async_nats::Message, Fail> {
    use async_nats::RequestErrorKind as K;
    let r = match headers {
        Some(h) => c.request_with_headers(subject, h, payload).await,
        None => c.request(subject, payload).await,
    };
    r.map_err(|e| match e.kind() {
        K::NoResponders => Fail::NoStream,
        K::TimedOut => Fail::Transient("a request timed out".into()),
        _ => Fail::Transient(e.to_string()),
    })
}

/// Returns once the server has read everything this client sent before
/// it, subscriptions included: the answer to a request the server makes
/// itself (`$JS.API.INFO`; "no responders" is an answer too). The client's
/// `flush()` is not that: in async-nats 0.51 it only writes the socket and
/// does not wait for the server, so a subscription "flushed" may still be
/// unknown to it while another connection's write is stored and its notice
/// sent to nobody.
pub(super) async fn round_trip(c: &async_nats::Client) -> Result<(), Fail> {
    match request(c, format!("{API}.INFO"), None, Bytes::new()).await {
        Ok(_) | Err(Fail::NoStream) => Ok(()),
        Err(f) => Err(f),
    }
}

/// One JetStream API request, once. `NoStream` when the answer is "stream
/// not found"; no answer at all (no JetStream yet) is transient.
async fn api_once(c: &async_nats::Client, subject: String, payload: Bytes) -> Result<Value, Fail> {
    let answer = match request(c, subject, None, payload).await {
        Err(Fail::NoStream) => return Err(Fail::Transient("JetStream did not answer".into())),
        other => other?,
    };
    api_answer(&answer.payload)
}

/// What a JetStream API answer says: its JSON, `NoStream`, a transient
/// refusal (asked again) or a refusal.
fn api_answer(payload: &[u8]) -> Result<Value, Fail> {
    let v: Value = serde_json::from_slice(payload)
        .map_err(|e| Fail::Refused(format!("an unreadable answer: {e}")))?;
    match api_error(&v) {
        Some((STREAM_NOT_FOUND, _)) => Err(Fail::NoStream),
        Some((TEMPORARILY_UNAVAILABLE, d)) => Err(Fail::Transient(d)),
        Some((_, d)) => Err(Fail::Refused(d)),
        None => Ok(v),
    }
}

/// One publish, its ack or what went wrong.
async fn publish_once(
    c: &async_nats::Client,
    subject: String,
    headers: HeaderMap,
    payload: Bytes,
) -> Result<u64, Fail> {
    let answer = request(c, subject, Some(headers), payload).await?;
    publish_answer(&answer.payload)
}

/// What a publish's ack says: the stored sequence, a lost swap, a
/// transient refusal (the caller publishes again with the same message id,
/// and a swap that then loses asks whether an earlier attempt landed) or a
/// refusal.
fn publish_answer(payload: &[u8]) -> Result<u64, Fail> {
    let v: Value = serde_json::from_slice(payload)
        .map_err(|e| Fail::Refused(format!("an unreadable publish ack: {e}")))?;
    match api_error(&v) {
        Some((WRONG_LAST_SEQUENCE | WRONG_LAST_SEQUENCE_IN_FLIGHT, _)) => Err(Fail::Conflict),
        Some((DUPLICATE_IN_PROCESS | EXPECTED_NOT_READY | TEMPORARILY_UNAVAILABLE, d)) => {
            Err(Fail::Transient(d))
        }
        Some((_, d)) => Err(Fail::Refused(d)),
        None => v["seq"]
            .as_u64()
            .ok_or_else(|| Fail::Refused(format!("a publish ack without a sequence: {v}"))),
    }
}

/// `(err_code, description)` of a JetStream error answer.
fn api_error(v: &Value) -> Option<(u64, String)> {
    let e = v.get("error")?;
    let code = e["err_code"].as_u64().unwrap_or(0);
    let d = e["description"].as_str().unwrap_or("an error").to_string();
    Some((code, format!("{d} (JetStream error {code})")))
}

/// A direct get's answer as a [`Stored`].
fn stored(m: async_nats::Message) -> Result<Stored, Fail> {
    let h = m
        .headers
        .as_ref()
        .ok_or_else(|| Fail::Refused("a direct get answer without headers".into()))?;
    let get = |k: &str| h.get(k).map(|v| v.as_str().to_string());
    let seq = get("Nats-Sequence")
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Fail::Refused("a direct get answer without Nats-Sequence".into()))?;
    let deleted = matches!(get("KV-Operation").as_deref(), Some("DEL" | "PURGE"));
    Ok(Stored {
        seq,
        payload: m.payload,
        deleted,
        id: get("Nats-Msg-Id"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_scrubbed_from_any_text() {
        let url = NatsUrl::parse("nats://bob:pw@h:1,g:2").unwrap();
        let s = scrub("failed: nats://bob:pw@g:2 refused bob:pw", &url);
        assert!(!s.contains("pw"), "{s}");
        assert_eq!(s, "failed: nats://***@g:2 refused ***");
    }

    /// What nats-server answers while its cluster has no leader.
    const UNAVAILABLE: &[u8] = br#"{"type":"io.nats.jetstream.api.v1.stream_info_response","error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}"#;

    #[test]
    fn a_cluster_between_leaders_is_asked_again_by_api_requests_and_publishes() {
        assert!(matches!(api_answer(UNAVAILABLE), Err(Fail::Transient(d)) if d.contains("10008")));
        assert!(
            matches!(publish_answer(UNAVAILABLE), Err(Fail::Transient(d)) if d.contains("10008"))
        );
        // Other refusals stay refusals; a stream that is not there and a
        // lost swap keep their meaning.
        let error = |code: u64| {
            format!(r#"{{"error":{{"code":400,"err_code":{code},"description":"no"}}}}"#)
        };
        assert!(matches!(
            api_answer(error(10059).as_bytes()),
            Err(Fail::NoStream)
        ));
        assert!(matches!(
            api_answer(error(10005).as_bytes()),
            Err(Fail::Refused(_))
        ));
        assert!(matches!(
            publish_answer(error(10071).as_bytes()),
            Err(Fail::Conflict)
        ));
        assert!(matches!(
            publish_answer(error(10005).as_bytes()),
            Err(Fail::Refused(_))
        ));
        assert_eq!(publish_answer(br#"{"stream":"s","seq":7}"#).unwrap(), 7);
    }
}
