//! The network by allowlist (issue 46): the rules a teammate's connections
//! are held to, and the host's proxy that holds them.
//!
//! | file | what it owns |
//! |---|---|
//! | `target.rs` | [`Target`]: a host and a port, the host read as browsers and HTTP stacks read it (every IPv4 spelling is the address it means) |
//! | `address.rs` | [`refused_class`]: the addresses refused unless named (this machine, private networks, link-local, the metadata service) |
//! | `rules.rs` | [`NetworkRules`]: allowed and denied hosts (`*.example.com`), ports, the verdict before resolution and the check of each resolved address |
//! | `outbound.rs` | [`OutboundHosts`]: the `allowed_outbound_hosts` a component's `wasi:http` requests are held to (scheme, host, port), before the proxy judges them |
//! | `settings.rs` | [`NetworkSettings`]: the keys an operator writes, and the rules, bounds and resolver built from them |
//! | `proxy.rs`, `proxy/` | [`Proxy`]: HTTP `CONNECT`, absolute `http://` and SOCKS5 on a Unix socket; asks about unnamed hosts, connects only to checked addresses, counts bytes and connections |
//!
//! **Where it stands.** The rules and the proxy are tested against local
//! servers (`host/tests/network_proxy.rs`). Bash reaches the proxy from
//! its namespace (`runtime/network_seat.rs`), a component's `wasi:http`
//! requests through an in-process stream (`runtime/wasi_http/`). Not yet:
//! the `WebFetch` tool.
//!
//! Nothing here trusts what a teammate sends: every request is parsed
//! strictly before a rule is read, and a name is resolved by the host and
//! connected to by the address that was checked.

mod address;
mod outbound;
mod proxy;
mod rules;
mod settings;
mod target;

pub use address::refused_class;
pub use outbound::OutboundHosts;
pub use proxy::{
    Answer, Asker, BoxFuture, Client, MapResolver, Proxy, ProxyLimits, Resolver, SystemResolver,
    Usage, MAX_HEAD,
};
pub use rules::{HostPattern, NetworkRules, Verdict, DEFAULT_PORTS};
pub use settings::NetworkSettings;
pub use target::{Host, Target};
