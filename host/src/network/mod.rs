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
//! | `settings.rs` | [`NetworkSettings`]: the keys an operator writes, and the rules, bounds and resolver built from them |
//! | `proxy.rs`, `proxy/` | [`Proxy`]: HTTP `CONNECT`, absolute `http://` and SOCKS5 on a Unix socket; asks about unnamed hosts, connects only to checked addresses, counts bytes and connections |
//!
//! **Where it stands.** The rules and the proxy are built and tested
//! against local servers (`host/tests/network_proxy.rs`). Not yet: Bash's
//! namespace bridged to a teammate's proxy socket (its commands have no
//! network today: Landlock refuses TCP, the seccomp filter UDP and Unix
//! sockets), the manifest keys, routing a question through `[approvals]`,
//! the `WebFetch` tool's wiring into the toolbox (the fetcher is built and
//! tested in `host/tests/network_fetch.rs`) and `wasi:http`.
//!
//! Nothing here trusts what a teammate sends: every request is parsed
//! strictly before a rule is read, and a name is resolved by the host and
//! connected to by the address that was checked.

mod address;
mod fetch;
mod gate;
mod proxy;
mod rules;
mod settings;
mod target;

pub use address::refused_class;
pub use fetch::{
    is_text, FetchError, FetchLimits, FetchTape, FetchUsage, Fetched, Fetcher, TapeMode,
};
pub use gate::{Answer, Asker, BoxFuture, Gate, MapResolver, Resolver, SystemResolver};
pub use proxy::{usage_record_path, Client, Proxy, ProxyLimits, Usage, MAX_HEAD};
pub use rules::{HostPattern, NetworkRules, Verdict, DEFAULT_PORTS};
pub use settings::NetworkSettings;
pub use target::{Host, Target};
