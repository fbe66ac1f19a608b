//! A teammate's network proxy ([`teamhost::network::Proxy`]) on a Unix
//! socket, for running the attack list of issue 46 against it by hand or
//! from `scripts/compare-network-srt` (curl reaches it through
//! `socat TCP-LISTEN:…,fork UNIX-CONNECT:<socket>`).
//!
//! ```text
//! cargo run -p teamhost --example network_proxy_probe -- <socket> <port>...
//! ```
//!
//! The rules: `pkgs.test`, `sneaky.test`, `mixed.test` and the address
//! `127.0.0.2` allowed,
//! `bad.pkgs.test` denied, only the `<port>`s given. Names come from a
//! fixed table, never the system's resolver: `pkgs.test`,
//! `pkgs.test.evil` and `evilpkgs.test` are 127.0.0.2, `sneaky.test` is
//! 127.0.0.1, `mixed.test` is both. A host no rule names is refused (the
//! asker says no). `PROBE_MAX_BYTES` and `PROBE_MAX_OPEN` lower the
//! limits; the defaults are [`ProxyLimits::default`]. On SIGINT or SIGTERM
//! it prints what the proxy reached and refused ([`Proxy::usage`]) to
//! stderr and exits.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use teamhost::network::{
    Answer, Asker, BoxFuture, MapResolver, NetworkRules, Proxy, ProxyLimits, Target,
};
use tokio::net::UnixListener;
use tokio::signal::unix::{signal, SignalKind};

/// Says no to every host no rule names.
struct Nobody;

impl Asker for Nobody {
    fn ask<'a>(&'a self, _target: &'a Target) -> BoxFuture<'a, Answer> {
        Box::pin(async { Answer::No("no rule names it and nobody was asked (probe)".into()) })
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let socket = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: network_proxy_probe <socket> <port>..."))?;
    let ports = args
        .map(|p| p.parse::<u16>())
        .collect::<Result<Vec<_>, _>>()?;
    let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let rules = NetworkRules::new(
        &s(&["pkgs.test", "sneaky.test", "mixed.test", "127.0.0.2"]),
        &s(&["bad.pkgs.test"]),
        (!ports.is_empty()).then_some(ports.as_slice()),
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let two: IpAddr = "127.0.0.2".parse()?;
    let one: IpAddr = "127.0.0.1".parse()?;
    let mut names = BTreeMap::new();
    for name in ["pkgs.test", "pkgs.test.evil", "evilpkgs.test"] {
        names.insert(name.to_string(), vec![two]);
    }
    names.insert("sneaky.test".to_string(), vec![one]);
    names.insert("mixed.test".to_string(), vec![two, one]);
    let mut limits = ProxyLimits::default();
    if let Some(n) = env_number("PROBE_MAX_BYTES") {
        limits.max_bytes = n;
    }
    if let Some(n) = env_number("PROBE_MAX_OPEN") {
        limits.max_open = usize::try_from(n)?;
    }
    let proxy = Proxy::new(
        rules,
        Arc::new(Nobody),
        Arc::new(MapResolver(names)),
        limits,
    );
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)?;
    eprintln!("network_proxy_probe: serving on {socket}, ports {ports:?}");
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = proxy.clone().serve(listener) => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    eprintln!("network_proxy_probe: {:#?}", proxy.usage());
    let _ = std::fs::remove_file(&socket);
    Ok(())
}
