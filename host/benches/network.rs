//! The cost of the network proxy (issue 46): a 10 MiB download and 100
//! small requests, each over a new connection, through a teammate's proxy
//! (`CONNECT` on its Unix socket, the name resolved from a table and its
//! address checked) against the same straight to the server, in one run.
//!
//! Run with `cargo bench -p teamhost --bench network` (under a minute).
//! `TEAMHOST_NET_ROUNDS` sets the samples (default 15). The server runs
//! in the same process on 127.0.0.2 and shares the cores; both paths pay
//! for it alike. Prints a Markdown table: medians, p90s and the ratio.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use teamhost::network::{MapResolver, NetworkRules, Proxy, ProxyLimits};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

#[path = "support/net.rs"]
mod net;
use net::{server, Never, BIG, REQUESTS, SMALL};

/// One request on `c`: sends `path`'s GET, reads to the end; the bytes.
async fn fetch(mut c: impl AsyncRead + AsyncWrite + Unpin, path: &str) -> usize {
    c.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).await.unwrap();
    out.len()
}

async fn direct(port: u16, path: &str) -> usize {
    fetch(TcpStream::connect(("127.0.0.2", port)).await.unwrap(), path).await
}

async fn proxied(socket: &std::path::Path, port: u16, path: &str) -> usize {
    let mut c = UnixStream::connect(socket).await.unwrap();
    c.write_all(format!("CONNECT pkgs.test:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = [0u8; 39];
    c.read_exact(&mut head).await.unwrap();
    assert!(head.starts_with(b"HTTP/1.1 200 "));
    fetch(c, path).await
}

fn main() {
    let rounds: usize = std::env::var("TEAMHOST_NET_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let port = server(false).await;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("proxy.sock");
        let rules = NetworkRules::new(
            &["pkgs.test".into(), "127.0.0.2".into()],
            &[],
            Some(&[port]),
        )
        .unwrap();
        let names = BTreeMap::from([("pkgs.test".to_string(), vec!["127.0.0.2".parse().unwrap()])]);
        let limits = ProxyLimits {
            max_bytes: u64::MAX,
            max_total: u64::MAX,
            ..ProxyLimits::default()
        };
        let proxy = Proxy::new(rules, Arc::new(Never), Arc::new(MapResolver(names)), limits);
        tokio::spawn(proxy.clone().serve(UnixListener::bind(&socket).unwrap()));

        let mut rows: Vec<(String, Vec<Duration>, Vec<Duration>)> = Vec::new();
        let (mut d, mut p) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            // Alternated, so a slower moment of the machine falls on both.
            let t = Instant::now();
            assert_eq!(direct(port, "/big").await, BIG);
            d.push(t.elapsed());
            let t = Instant::now();
            assert_eq!(proxied(&socket, port, "/big").await, BIG);
            p.push(t.elapsed());
        }
        rows.push(("a 10 MiB download".into(), d, p));
        let (mut d, mut p) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t = Instant::now();
            for _ in 0..REQUESTS {
                assert_eq!(direct(port, "/small").await, SMALL);
            }
            d.push(t.elapsed());
            let t = Instant::now();
            for _ in 0..REQUESTS {
                assert_eq!(proxied(&socket, port, "/small").await, SMALL);
            }
            p.push(t.elapsed());
        }
        rows.push((
            format!("{REQUESTS} small requests, a connection each"),
            d,
            p,
        ));

        println!("machine: {}", teamhost_tests::measure::machine());
        println!();
        println!("## The network proxy against no proxy ({rounds} samples each, alternated)");
        println!();
        println!(
            "| what | direct, median (p90) | through the proxy, median (p90) | proxy ÷ direct |"
        );
        println!("|---|---:|---:|---:|");
        for (what, mut d, mut p) in rows {
            d.sort();
            p.sort();
            let q = |v: &[Duration], f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
            let ms = |x: Duration| format!("{:.2} ms", x.as_secs_f64() * 1e3);
            println!(
                "| {what} | {} ({}) | {} ({}) | {:.2} |",
                ms(q(&d, 0.5)),
                ms(q(&d, 0.9)),
                ms(q(&p, 0.5)),
                ms(q(&p, 0.9)),
                q(&p, 0.5).as_secs_f64() / q(&d, 0.5).as_secs_f64()
            );
        }
        let u = proxy.usage();
        println!();
        println!(
            "The proxy counted {} connections, {} bytes in, {} out.",
            u.connections, u.bytes_in, u.bytes_out
        );
    });
}
