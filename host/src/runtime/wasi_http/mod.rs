//! `wasi:http/outgoing-handler` for a teammate whose `[teammate.network]`
//! grants `allowed_outbound_hosts`, every request sent through that
//! teammate's own proxy.
//!
//! | file | what it owns |
//! |---|---|
//! | `mod.rs` | the grant at load time ([`WasiHttpGrant`], [`refuse_ungranted`]: a component that imports `wasi:http` without it does not load, the error naming the key) and the store's view ([`HttpSeat`]) |
//! | `refusal.rs` | a refusal as the guest sees it: `internal-error` with the reason |
//! | `hooks.rs` | [`OutboundHttp`]: wasmtime-wasi-http's send hook; the request's scheme, host and port held to `allowed_outbound_hosts`, then sent through the proxy |
//! | `tunnel.rs` | a `CONNECT host:port` through the teammate's proxy on an in-process stream; a refusal comes back with the proxy's reason |
//! | `send.rs` | TLS over the tunnel for `https`, one HTTP/1.1 exchange (hyper), the request's timeouts |
//!
//! wasmtime-wasi-http's own sender (`default_send_request`, which connects
//! by itself) is not built: a request reaches the network only as a
//! `CONNECT` to the proxy, which judges the host (allowed, denied, or a
//! question for the lead), resolves it, checks every address, connects
//! only to a checked one, counts bytes and connections and records what
//! was reached, as it does for Bash. A refusal is the guest's
//! `error-code.internal-error` with the reason (`HTTP-request-denied`
//! carries no text in wasi:http 0.2).

mod hooks;
mod refusal;
mod send;
mod tunnel;

use std::sync::Arc;

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::Engine;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub use hooks::OutboundHttp;

use super::NetworkSeat;

/// The manifest key that grants `wasi:http`, as errors name it.
pub const GRANT_KEY: &str = "[teammate.network] allowed_outbound_hosts";

/// Whether the teammate a component is loaded for may import `wasi:http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WasiHttpGrant {
    /// Its settings grant `allowed_outbound_hosts`: `wasi:http` is linked.
    Granted,
    /// They do not: a component that imports `wasi:http` does not load.
    NotGranted,
}

impl WasiHttpGrant {
    /// The grant `network` gives: a non-empty `allowed_outbound_hosts`.
    pub fn of(network: Option<&crate::network::NetworkSettings>) -> WasiHttpGrant {
        match network.is_some_and(|n| !n.allowed_outbound_hosts.is_empty()) {
            true => WasiHttpGrant::Granted,
            false => WasiHttpGrant::NotGranted,
        }
    }
}

/// The first `wasi:http` interface `component` imports, if any.
pub fn imported(component: &Component, engine: &Engine) -> Option<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name)
        .find(|name| name.starts_with("wasi:http/"))
        .map(str::to_string)
}

/// `Err` naming [`GRANT_KEY`] when `component` imports `wasi:http` and
/// `grant` does not allow it; checked before linking, so the error is this
/// one and not the linker's "unknown import".
pub fn refuse_ungranted(
    component: &Component,
    engine: &Engine,
    grant: WasiHttpGrant,
) -> anyhow::Result<()> {
    match (grant, imported(component, engine)) {
        (WasiHttpGrant::NotGranted, Some(name)) => anyhow::bail!(
            "it imports {name}, which a teammate gets only when its {GRANT_KEY} lists where it may send requests"
        ),
        _ => Ok(()),
    }
}

/// Adds `wasi:http/outgoing-handler` and `wasi:http/types` to `linker`
/// (the teammate's store data gives its view through [`HttpSeat::view`]).
pub fn add_to_linker<T: WasiHttpView + 'static>(linker: &mut Linker<T>) -> anyhow::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    Ok(())
}

/// What a teammate's store holds for `wasi:http`: the context and the
/// send hook. Without a granted network the hook refuses every request
/// (such a component never links `wasi:http`; this is the backstop).
pub struct HttpSeat {
    ctx: WasiHttpCtx,
    hooks: OutboundHttp,
}

impl HttpSeat {
    /// The seat of a teammate with `network` (`None`: none).
    pub fn new(network: Option<Arc<NetworkSeat>>) -> HttpSeat {
        HttpSeat {
            ctx: WasiHttpCtx::new(),
            hooks: OutboundHttp::new(network),
        }
    }

    /// wasmtime-wasi-http's view: this seat with the store's resource
    /// `table`.
    pub fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView {
            ctx: &mut self.ctx,
            table,
            hooks: &mut self.hooks,
        }
    }
}
