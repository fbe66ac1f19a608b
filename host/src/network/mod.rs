//! The network by allowlist (issue 46): the rules a teammate's connections
//! are held to, and the host's proxy and fetcher that hold them.
//!
//! | file | what it owns |
//! |---|---|
//! | `target.rs` | [`Target`]: a host and a port, the host read as browsers and HTTP stacks read it (every IPv4 spelling is the address it means) |
//! | `address.rs` | [`refused_class`]: the addresses refused unless named (this machine, private networks, link-local, the metadata service) |
//! | `rules.rs` | [`NetworkRules`]: allowed and denied hosts (`*.example.com`), ports, the verdict before resolution and the check of each resolved address |
//! | `gate.rs` | [`Gate`]: one teammate's admission of a target (verdict, the question about an unnamed host, resolution, every address checked), shared by the proxy and the fetcher; [`Asker`], [`Resolver`] |
//! | `fetch.rs`, `fetch/` | [`Fetcher`]: WebFetch's fetch of one URL through the gate (every redirect hop admitted again, size and time bounds, text types only, HTML as Markdown), recorded to and replayed from a [`FetchTape`] |
//! | `outbound.rs` | [`OutboundHosts`]: the `allowed_outbound_hosts` a component's `wasi:http` requests are held to (scheme, host, port), before the proxy judges them |
//! | `settings.rs` | [`NetworkSettings`]: the keys an operator writes, and the rules, bounds and resolver built from them |
//! | `proxy.rs`, `proxy/` | [`Proxy`]: HTTP `CONNECT`, absolute `http://` and SOCKS5, on a Unix socket, the TCP listener in a teammate's namespace or an in-process stream; asks about unnamed hosts through the gate, connects only to checked addresses, counts bytes and connections |
//!
//! **Where it stands.** All three ways out of issue 46 are built and pass
//! through one teammate's gate: Bash from its namespace
//! (`runtime/network_seat.rs`, `tools/netns.rs`), the toolbox's `WebFetch`
//! (`fetch.rs`) and a component's `wasi:http` requests through an
//! in-process stream to the proxy (`runtime/wasi_http/`). Tested against
//! local servers: `host/tests/network_proxy.rs`, `network_fetch.rs`,
//! `wasi_http.rs` and `runtime/interfaces/network_tests.rs`.
//!
//! Nothing here trusts what a teammate sends: every request is parsed
//! strictly before a rule is read, and a name is resolved by the host and
//! connected to by the address that was checked.

mod address;
mod fetch;
mod gate;
mod outbound;
mod proxy;
mod rules;
mod settings;
mod target;

pub use address::refused_class;
pub use fetch::{
    is_text, FetchError, FetchLimits, FetchTape, FetchUsage, Fetched, Fetcher, TapeMode, MAX_HTML,
};
pub use gate::{Answer, Asker, BoxFuture, Gate, MapResolver, Resolver, SystemResolver};
pub use outbound::OutboundHosts;
pub use proxy::{usage_record_path, Client, Proxy, ProxyLimits, Usage, MAX_HEAD};
pub use rules::{HostPattern, NetworkRules, Verdict, DEFAULT_PORTS};
pub use settings::NetworkSettings;
pub use target::{Host, Target};
