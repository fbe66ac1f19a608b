//! A teammate's network seat (issue 46): its proxy, held to its
//! [`NetworkSettings`], and the network namespace its Bash calls run in.
//!
//! The namespace and the proxy's task are made at the teammate's first
//! Bash call ([`NetworkSeat::ready`]) — most teammates never run Bash — and
//! live until the seat is dropped with the teammate: the task is aborted,
//! the listener closed, and the kernel frees the namespace once the last
//! process in it is gone. The proxy asks about unnamed hosts through the
//! teammate's line to its lead (`interfaces/network_ask.rs`).
//!
//! The same proxy serves the component's own `wasi:http` requests when
//! its settings grant `allowed_outbound_hosts` ([`NetworkSeat::outbound`];
//! `runtime/wasi_http/`): through an in-process stream, no namespace.
//! The toolbox's WebFetch ([`NetworkSeat::fetch`]) goes through the
//! proxy's gate, and is counted on the proxy's budgets and in its record.
//!
//! What the proxy carried is kept beside the teammate's log, as
//! `{name}.network.json` ([`NetworkSeat::keep_record`]: after every Bash
//! call, `wasi:http` request and WebFetch, and when the seat is dropped), where
//! `teamhost run`'s summary reads it. It only shows something: written
//! without `fdatasync`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::network::{
    Asker, FetchError, FetchLimits, FetchTape, Fetched, Fetcher, Gate, NetworkSettings,
    OutboundHosts, Proxy, Usage,
};
use crate::tools::netns::Netns;
use crate::tools::ToolBox;

/// One teammate's network (see the module docs).
pub struct NetworkSeat {
    proxy: Arc<Proxy>,
    /// WebFetch's fetcher, on the proxy's gate: a host allowed for the run
    /// through one is allowed through the other.
    fetcher: Fetcher,
    /// Where its usage is kept, if anywhere.
    record: Option<std::path::PathBuf>,
    /// The proxy's task once started, or why it could not be.
    started: Mutex<Option<Result<tokio::task::AbortHandle, String>>>,
    /// Where its component may send `wasi:http` requests.
    outbound: OutboundHosts,
    /// Whether a `wasi:http` request or a WebFetch went out (its usage is
    /// then kept, as after a Bash call).
    used_beside_bash: AtomicBool,
}

impl NetworkSeat {
    /// A seat held to `settings`, asking `asker`. Fails when the settings
    /// do not parse (the error names each bad rule).
    /// `log`: the teammate's log file; the usage is kept beside it
    /// (`None`: not kept).
    /// `tape`: where WebFetch's fetches are recorded or replayed from (a
    /// run with cassettes), if anywhere.
    pub fn new(
        settings: &NetworkSettings,
        asker: Arc<dyn Asker>,
        log: Option<&std::path::Path>,
        tape: Option<Arc<FetchTape>>,
    ) -> Result<NetworkSeat, String> {
        settings.check()?;
        let limits = settings.limits();
        let gate = Gate::new(
            settings.rules()?,
            asker,
            settings.resolver(),
            limits.connect_timeout,
        );
        let proxy = Proxy::with_gate(gate.clone(), limits);
        let mut fetcher = Fetcher::new(gate, FetchLimits::default());
        if let Some(tape) = tape {
            fetcher = fetcher.with_tape(tape);
        }
        Ok(NetworkSeat {
            proxy,
            fetcher,
            record: log.map(crate::network::usage_record_path),
            started: Mutex::new(None),
            outbound: settings.outbound_hosts()?,
            used_beside_bash: AtomicBool::new(false),
        })
    }

    /// Where its component may send `wasi:http` requests (empty: it may
    /// not import `wasi:http`).
    pub fn outbound(&self) -> &OutboundHosts {
        &self.outbound
    }

    /// The proxy, for a `wasi:http` request ([`NetworkSeat::note_http`]
    /// once it is sent there).
    pub(crate) fn proxy(&self) -> Arc<Proxy> {
        self.proxy.clone()
    }

    /// A `wasi:http` request went to the proxy: its usage is kept from now
    /// on.
    pub(crate) fn note_http(&self) {
        self.used_beside_bash.store(true, Ordering::SeqCst);
    }

    /// Makes the namespace, attaches it to `tools` and starts the proxy on
    /// its listener, the first time; after that answers what the first
    /// time gave. Must be called within a tokio runtime.
    pub fn ready(&self, tools: &ToolBox) -> Result<(), String> {
        let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        let outcome = started.get_or_insert_with(|| self.start(tools));
        outcome.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    fn start(&self, tools: &ToolBox) -> Result<tokio::task::AbortHandle, String> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| "the teammate's network needs the host's runtime".to_string())?;
        let (ns, listener) = Netns::create().map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let listener = {
            let _inside = handle.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?
        };
        tools.attach_network(ns).map_err(|e| e.to_string())?;
        let task = handle.spawn(self.proxy.clone().serve_tcp(listener));
        Ok(task.abort_handle())
    }

    /// WebFetch: `url` through the gate (see [`Fetcher::fetch`]), on the
    /// same byte and connection budgets as the proxy and in the same
    /// record: refused once they are spent (a fetch that starts within
    /// them may pass them by one fetch's bytes, at most 10 MiB).
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        if let Err(why) = self.proxy.room() {
            return Err(FetchError::Refused {
                url: url.to_string(),
                from: None,
                why,
            });
        }
        let before = self.fetcher.usage().reached;
        let outcome = self.fetcher.fetch(url).await;
        // What this fetch reached: the hops counted since `before`.
        let after = self.fetcher.usage().reached;
        let mut hops = Vec::new();
        for (target, n) in &after {
            let new = n - before.get(target).copied().unwrap_or(0);
            hops.extend(std::iter::repeat_n(target.clone(), new as usize));
        }
        let bytes = outcome.as_ref().map_or(0, |f| f.bytes);
        self.proxy.account(&hops, bytes);
        self.used_beside_bash.store(true, Ordering::SeqCst);
        // A small relaxed write, as after a Bash call.
        self.keep_record();
        outcome
    }

    /// What the proxy carried and refused so far.
    pub fn usage(&self) -> Usage {
        self.proxy.usage()
    }

    /// Writes the usage beside the log, if the proxy ever started for
    /// Bash or served a `wasi:http` request. A failure is logged: the
    /// record only shows something.
    pub fn keep_record(&self) {
        let started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        if !matches!(*started, Some(Ok(_))) && !self.used_beside_bash.load(Ordering::SeqCst) {
            return;
        }
        drop(started);
        if let Some(path) = &self.record {
            if let Err(e) = crate::durable::write_json_relaxed(path, &self.usage()) {
                tracing::warn!(path = %path.display(), error = %e, "could not keep the teammate's network record");
            }
        }
    }
}

impl Drop for NetworkSeat {
    fn drop(&mut self) {
        self.keep_record();
        let started = self.started.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(Ok(task)) = started.take() {
            task.abort();
        }
    }
}
