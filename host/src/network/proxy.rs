//! The host's network proxy for one teammate: HTTP (`CONNECT` tunnels and
//! absolute-form `http://` requests) and SOCKS5 (`CONNECT` only) on one
//! Unix socket, every target held to the teammate's [`NetworkRules`].
//!
//! | step | what | refused when |
//! |---|---|---|
//! | 1 | the request read: a head of at most [`MAX_HEAD`] bytes, a request line of three tokens, printable ASCII only, the host parsed as [`Target`] does | anything else: a header injection in the CONNECT line is a malformed line |
//! | 2 | the rules' verdict ([`NetworkRules::judge`]); a host no rule names is asked ([`Asker`]) unless this run already allowed it for the rest of the run | a denied host or port; a "no" |
//! | 3 | a name resolved ([`Resolver`]); **every** address checked ([`NetworkRules::check_address`]) | one address refused (this machine, a private network, the metadata service …): a name whose answers mix a public and a loopback address is refused whole |
//! | 4 | the connection made to an address that was checked, never a name resolved again (no DNS rebinding between the check and the connect) | none reachable within [`ProxyLimits::connect_timeout`] |
//! | 5 | bytes copied both ways, counted | past [`ProxyLimits::max_bytes`] in and out together: the connections are cut |
//!
//! At most [`ProxyLimits::max_open`] connections at once and
//! [`ProxyLimits::max_total`] over the proxy's life: a flood is refused at
//! once, not queued; a client that does not send its request within
//! [`ProxyLimits::request_timeout`] is closed, so idle connections hold no
//! slot and no descriptor for long. What was reached and refused is kept for the run's
//! summary ([`Proxy::usage`]).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::Semaphore;

use super::gate::{Asker, Gate, Resolver};
use super::rules::NetworkRules;
use super::target::Target;

/// The most bytes of an HTTP request's head.
pub const MAX_HEAD: usize = 16 * 1024;

/// A connection's place among [`ProxyLimits::max_open`]; freed (taken)
/// before a refused client can see its answer, so a client that reads a
/// refusal and connects again finds the place free.
type Slot = Option<tokio::sync::OwnedSemaphorePermit>;

/// A client connection: a Unix stream, or a TCP stream accepted in a
/// Bash call's network namespace.
pub trait Client: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Client for T {}

/// The proxy's bounds.
#[derive(Debug, Clone)]
pub struct ProxyLimits {
    /// Bytes in and out together over the proxy's life.
    pub max_bytes: u64,
    /// Connections open at once.
    pub max_open: usize,
    /// Connections over the proxy's life.
    pub max_total: u64,
    /// For resolving and connecting.
    pub connect_timeout: Duration,
    /// For a client to send its request (the HTTP head, or the SOCKS5
    /// greeting and request): a connection that sends nothing is closed,
    /// and holds no slot for longer.
    pub request_timeout: Duration,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_bytes: 1 << 30,
            max_open: 64,
            max_total: 10_000,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// What the proxy carried (kept beside the teammate's log as
/// `{name}.network.json`, read by `teamhost run`'s summary).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Bytes from the teammate out.
    pub bytes_out: u64,
    /// Bytes to the teammate.
    pub bytes_in: u64,
    /// Connections made.
    pub connections: u64,
    /// Targets reached (`host:port`) and how many times.
    pub reached: BTreeMap<String, u64>,
    /// Targets refused (`host:port`, or what the request named) and why,
    /// the latest reason each.
    pub refused: BTreeMap<String, String>,
}

/// Where a teammate's [`Usage`] is kept: `{name}.network.json` beside its
/// log `{name}.log`.
pub fn usage_record_path(log: &std::path::Path) -> std::path::PathBuf {
    log.with_extension("network.json")
}

impl Usage {
    /// One line: what was reached (and how often), what was refused and
    /// why (the latest reason), bytes and connections.
    pub fn describe(&self) -> String {
        let list = |items: Vec<String>| match items.len() {
            0 => "nothing".to_string(),
            n if n > 5 => format!("{} and {} more", items[..5].join(", "), n - 5),
            _ => items.join(", "),
        };
        let reached = list(
            self.reached
                .iter()
                .map(|(t, n)| match n {
                    1 => t.clone(),
                    n => format!("{t} ×{n}"),
                })
                .collect(),
        );
        let refused = list(
            self.refused
                .iter()
                .map(|(t, why)| format!("{t} ({why})"))
                .collect(),
        );
        format!(
            "reached {reached}; refused {refused}; {} connection(s), {} byte(s) in, {} out",
            self.connections, self.bytes_in, self.bytes_out
        )
    }
}

/// One teammate's proxy (see the module docs).
pub struct Proxy {
    gate: Arc<Gate>,
    limits: ProxyLimits,
    open: Arc<Semaphore>,
    total: AtomicU64,
    bytes: AtomicU64,
    bytes_out: AtomicU64,
    bytes_in: AtomicU64,
    usage: Mutex<Usage>,
}

impl Proxy {
    /// A proxy holding targets to `rules`, asking `asker` about the rest.
    pub fn new(
        rules: NetworkRules,
        asker: Arc<dyn Asker>,
        resolver: Arc<dyn Resolver>,
        limits: ProxyLimits,
    ) -> Arc<Proxy> {
        let gate = Gate::new(rules, asker, resolver, limits.connect_timeout);
        Proxy::with_gate(gate, limits)
    }

    /// A proxy admitting targets through `gate`, which it shares with the
    /// teammate's other ways out (a host allowed for the run through one is
    /// allowed through all).
    pub fn with_gate(gate: Arc<Gate>, limits: ProxyLimits) -> Arc<Proxy> {
        Arc::new(Proxy {
            open: Arc::new(Semaphore::new(limits.max_open)),
            gate,
            limits,
            total: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            usage: Mutex::new(Usage::default()),
        })
    }

    /// What it carried so far.
    pub fn usage(&self) -> Usage {
        let mut u = self.usage.lock().unwrap_or_else(|p| p.into_inner()).clone();
        u.connections = self.total.load(Ordering::SeqCst);
        u.bytes_out = self.bytes_out.load(Ordering::SeqCst);
        u.bytes_in = self.bytes_in.load(Ordering::SeqCst);
        u
    }

    /// Serves `listener` until the returned future is dropped; each
    /// connection on its own task. An accept that fails (the process out
    /// of descriptors) is retried after a pause, not in a busy loop.
    pub async fn serve(self: Arc<Self>, listener: UnixListener) {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => self.clone().spawn(stream),
                Err(e) => accept_failed(e).await,
            }
        }
    }

    /// [`serve`](Self::serve) on a TCP listener: the one a Bash call's
    /// network namespace holds (`tools::netns`), whose only peers are the
    /// call's processes.
    pub async fn serve_tcp(self: Arc<Self>, listener: TcpListener) {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    self.clone().spawn(stream)
                }
                Err(e) => accept_failed(e).await,
            }
        }
    }

    fn spawn(self: Arc<Self>, stream: impl Client + 'static) {
        tokio::spawn(async move { self.handle(stream).await });
    }

    /// One client connection: SOCKS5 when its first byte is 5, else HTTP.
    pub async fn handle(&self, mut client: impl Client) {
        let Ok(permit) = self.open.clone().try_acquire_owned() else {
            self.refuse_early(&mut client, "too many connections open at once")
                .await;
            return;
        };
        let mut slot = Some(permit);
        let mut first = [0u8; 1];
        let wait = self.limits.request_timeout;
        if !matches!(
            tokio::time::timeout(wait, client.read_exact(&mut first)).await,
            Ok(Ok(_))
        ) {
            // The slot is free before the client sees the close.
            drop(slot);
            return;
        }
        let result = match first[0] {
            5 => self.socks5(&mut client, &mut slot).await,
            b => self.http(&mut client, &mut slot, b).await,
        };
        drop(slot);
        if let Err(why) = result {
            tracing::debug!(%why, "a proxy connection ended");
        }
    }

    async fn refuse_early(&self, client: &mut impl Client, why: &str) {
        self.note_refused("(connection)", why);
        let mut first = [0u8; 1];
        let wait = Duration::from_millis(200);
        let read = tokio::time::timeout(wait, client.read(&mut first)).await;
        let is_socks = matches!(read, Ok(Ok(1)) if first[0] == 5);
        let reply: &[u8] = match is_socks {
            true => &[5, 0xff],
            false => b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        };
        let _ = client.write_all(reply).await;
        close_gently(client).await;
    }

    fn note_refused(&self, what: &str, why: &str) {
        let mut u = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        if u.refused.len() < 1000 || u.refused.contains_key(what) {
            u.refused.insert(what.to_string(), why.to_string());
        }
    }

    /// Steps 2–4 ([`Gate::admit`]): the addresses `target` may be reached
    /// at, checked, or why not.
    async fn admit(&self, target: &Target) -> Result<Vec<SocketAddr>, String> {
        self.gate.admit(target).await
    }

    /// The gate it admits targets through.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Connects to one of `addrs` (each checked by [`Proxy::admit`]).
    async fn connect(&self, target: &Target, addrs: &[SocketAddr]) -> Result<TcpStream, String> {
        if self.total.fetch_add(1, Ordering::SeqCst) >= self.limits.max_total {
            return Err(format!(
                "the teammate made its {} connections",
                self.limits.max_total
            ));
        }
        let mut last = String::from("no address");
        for a in addrs {
            match tokio::time::timeout(self.limits.connect_timeout, TcpStream::connect(a)).await {
                Ok(Ok(s)) => {
                    let mut u = self.usage.lock().unwrap_or_else(|p| p.into_inner());
                    *u.reached.entry(target.to_string()).or_default() += 1;
                    return Ok(s);
                }
                Ok(Err(e)) => last = format!("{a}: {e}"),
                Err(_) => last = format!("{a}: no answer in time"),
            }
        }
        Err(format!("{target} cannot be reached ({last})"))
    }

    /// Copies both ways until either side ends or the byte budget is spent.
    async fn relay(&self, client: &mut impl Client, mut server: TcpStream) -> Result<(), String> {
        let (mut cr, mut cw) = tokio::io::split(client);
        let (mut sr, mut sw) = server.split();
        let out = self.pump(&mut cr, &mut sw, true);
        let back = self.pump(&mut sr, &mut cw, false);
        // Each way ends on its own end of file (the other side is told by
        // a shutdown); a spent budget or an error ends both.
        tokio::try_join!(out, back).map(|_| ())
    }

    async fn pump(
        &self,
        from: &mut (impl AsyncRead + Unpin),
        to: &mut (impl AsyncWrite + Unpin),
        outward: bool,
    ) -> Result<(), String> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = from.read(&mut buf).await.map_err(|e| e.to_string())?;
            if n == 0 {
                let _ = to.shutdown().await;
                return Ok(());
            }
            self.spend(n, outward)?;
            to.write_all(&buf[..n]).await.map_err(|e| e.to_string())?;
        }
    }

    /// Whether the teammate's byte and connection budgets have room left
    /// (for a way out beside the proxy's own, WebFetch, before it starts);
    /// `Err` names the spent one.
    pub fn room(&self) -> Result<(), String> {
        if self.bytes.load(Ordering::SeqCst) >= self.limits.max_bytes {
            return Err(format!(
                "the teammate's {} bytes are spent",
                self.limits.max_bytes
            ));
        }
        if self.total.load(Ordering::SeqCst) >= self.limits.max_total {
            return Err(format!(
                "the teammate made its {} connections",
                self.limits.max_total
            ));
        }
        Ok(())
    }

    /// Counts what a way out beside the proxy's own carried (WebFetch):
    /// `connections` to `reached` (`host:port` each) and `bytes_in` bytes,
    /// against the same budgets and in the same usage record. The next
    /// [`Proxy::room`] says when they are spent.
    pub fn account(&self, reached: &[String], bytes_in: u64) {
        self.total.fetch_add(reached.len() as u64, Ordering::SeqCst);
        self.bytes.fetch_add(bytes_in, Ordering::SeqCst);
        self.bytes_in.fetch_add(bytes_in, Ordering::SeqCst);
        let mut u = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        for target in reached {
            *u.reached.entry(target.clone()).or_default() += 1;
        }
    }

    /// Counts `n` bytes one way against the budget; `Err` once it is spent.
    fn spend(&self, n: usize, outward: bool) -> Result<(), String> {
        let spent = self.bytes.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
        if spent > self.limits.max_bytes {
            let why = format!("the teammate's {} bytes are spent", self.limits.max_bytes);
            self.note_refused("(bytes)", &why);
            return Err(why);
        }
        match outward {
            true => &self.bytes_out,
            false => &self.bytes_in,
        }
        .fetch_add(n as u64, Ordering::SeqCst);
        Ok(())
    }
}

/// Ends a refused client's connection so that it reads the refusal: the
/// write side shut, then what it still sends read and dropped (at most
/// [`MAX_HEAD`] × 4 bytes, each read waiting 200 ms at most). A socket
/// closed with unread input resets, and the client would see the reset
/// instead of the answer.
async fn close_gently(client: &mut impl Client) {
    let _ = client.shutdown().await;
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drained < 4 * MAX_HEAD {
        match tokio::time::timeout(Duration::from_millis(200), client.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => return,
        }
    }
}

/// An accept that failed (the process out of descriptors): logged, and
/// the next one tried after a pause rather than in a busy loop.
async fn accept_failed(e: io::Error) {
    tracing::warn!(error = %e, "the network proxy could not accept a connection");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

mod http;
mod socks5;
