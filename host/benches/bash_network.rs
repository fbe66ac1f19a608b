//! The cost of Bash's network (issue 46), end to end: `curl` run by Bash in
//! the teammate's network namespace, through the listener there and the
//! host's proxy, against the same `curl` run as a plain process on the host
//! straight to the server; and what the namespace costs a Bash call
//! (`true` with and without a network) and to make (once per teammate).
//!
//! Run with `cargo bench -p teamhost --bench bash_network` (about a
//! minute; needs `CAP_SYS_ADMIN` and curl). `TEAMHOST_NET_ROUNDS` sets the
//! samples (default 15). The server runs in this process on 127.0.0.2.
//! Prints a Markdown table: medians, p90s and ratios.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use teamhost::network::{MapResolver, NetworkRules, Proxy, ProxyLimits};
use teamhost::sandbox::BashInput;
use teamhost::tools::netns::Netns;
use teamhost::tools::{Confinement, ToolBox, ToolLimits};

#[path = "support/net.rs"]
mod net;
use net::{server, Never, REQUESTS};

fn bash(tools: &ToolBox, command: &str) -> Duration {
    let input = BashInput {
        command: command.into(),
        timeout: Some(60_000),
    };
    let t = Instant::now();
    let out = tools.bash(&input, Confinement::Required).unwrap();
    let took = t.elapsed();
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    took
}

fn plain(command: &str) -> Duration {
    let t = Instant::now();
    let out = Command::new("/bin/sh")
        .args(["-c", command])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(out.status.success(), "{out:?}");
    took
}

fn urls(host: &str, port: u16, path: &str, n: usize) -> String {
    (0..n)
        .map(|_| format!("-o /dev/null http://{host}:{port}{path}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    if !teamhost::tools::confine::namespaces() {
        eprintln!("skipped: no CAP_SYS_ADMIN, so Bash gets no network here");
        return;
    }
    let rounds: usize = std::env::var("TEAMHOST_NET_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let port = rt.block_on(server(true));
    let rules =
        NetworkRules::new(&["pkg.test".into(), "127.0.0.2".into()], &[], Some(&[port])).unwrap();
    let names = BTreeMap::from([("pkg.test".to_string(), vec!["127.0.0.2".parse().unwrap()])]);
    let limits = ProxyLimits {
        max_bytes: u64::MAX,
        max_total: u64::MAX,
        ..ProxyLimits::default()
    };
    let proxy = Proxy::new(rules, Arc::new(Never), Arc::new(MapResolver(names)), limits);

    let dir_plain = tempfile::tempdir().unwrap();
    let dir_net = tempfile::tempdir().unwrap();
    let without = ToolBox::open(dir_plain.path(), ToolLimits::default()).unwrap();
    let with = ToolBox::open(dir_net.path(), ToolLimits::default()).unwrap();
    let mut made = Vec::new();
    let mut namespaces = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let (ns, listener) = Netns::create().unwrap();
        made.push(t.elapsed());
        namespaces.push((ns, listener));
    }
    let (ns, listener) = namespaces.pop().unwrap();
    drop(namespaces);
    listener.set_nonblocking(true).unwrap();
    let listener = {
        let _in = rt.enter();
        tokio::net::TcpListener::from_std(listener).unwrap()
    };
    rt.spawn(proxy.clone().serve_tcp(listener));
    with.attach_network(ns).unwrap();

    let big = |host: &str| urls(host, port, "/big", 1);
    let small = |host: &str| urls(host, port, "/small", REQUESTS);
    let mut rows: Vec<(String, Vec<Duration>, Vec<Duration>)> = Vec::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        // Alternated, so a slower moment of the machine falls on both.
        a.push(bash(&without, "true"));
        b.push(bash(&with, "true"));
    }
    rows.push(("Bash `true`: without a network / with one".into(), a, b));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(plain(&format!("curl -sS {}", big("127.0.0.2"))));
        b.push(bash(&with, &format!("curl -sS {}", big("pkg.test"))));
    }
    rows.push((
        "curl, a 10 MiB download: plain on the host / Bash through its proxy".into(),
        a,
        b,
    ));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(plain(&format!("curl -sS {}", small("127.0.0.2"))));
        b.push(bash(&with, &format!("curl -sS {}", small("pkg.test"))));
    }
    rows.push((
        format!(
            "curl, {REQUESTS} small requests (a connection each): plain / Bash through its proxy"
        ),
        a,
        b,
    ));

    println!("machine: {}", teamhost_tests::measure::machine());
    println!();
    println!("## Bash's network ({rounds} samples each, alternated)");
    println!();
    println!("| what | first, median (p90) | second, median (p90) | second ÷ first |");
    println!("|---|---:|---:|---:|");
    let q = |v: &mut Vec<Duration>, f: f64| {
        v.sort();
        v[((v.len() - 1) as f64 * f).round() as usize]
    };
    let ms = |x: Duration| format!("{:.2} ms", x.as_secs_f64() * 1e3);
    for (what, mut a, mut b) in rows {
        let (a50, a90, b50, b90) = (
            q(&mut a, 0.5),
            q(&mut a, 0.9),
            q(&mut b, 0.5),
            q(&mut b, 0.9),
        );
        println!(
            "| {what} | {} ({}) | {} ({}) | {:.2} |",
            ms(a50),
            ms(a90),
            ms(b50),
            ms(b90),
            b50.as_secs_f64() / a50.as_secs_f64()
        );
    }
    println!(
        "| making a teammate's namespace (once, at its first Bash call) | {} ({}) | | |",
        ms(q(&mut made, 0.5)),
        ms(q(&mut made, 0.9))
    );
    let u = proxy.usage();
    println!();
    println!(
        "The proxy counted {} connections, {} bytes in, {} out.",
        u.connections, u.bytes_in, u.bytes_out
    );
}
