//! The host's network proxy (issue 46) against real servers on this
//! machine: a client on its Unix socket, TCP servers on 127.0.0.2, names
//! from a resolver table (never the system's). The attack list of the
//! issue that the proxy itself answers: IP literals in every spelling, a
//! name that resolves to loopback, answers that mix an allowed and a
//! refused address, suffix tricks, a refused port, a header injection in
//! the CONNECT line, SOCKS5 UDP and BIND, a response of many megabytes
//! past the byte budget, a connection flood.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use teamhost::network::{
    Answer, Asker, BoxFuture, MapResolver, NetworkRules, Proxy, ProxyLimits, Target,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener, UnixStream};

/// Answers every question the same way, counting them.
struct Fixed {
    answer: Answer,
    asked: AtomicUsize,
    last: std::sync::Mutex<Option<String>>,
}

impl Asker for Fixed {
    fn ask<'a>(&'a self, target: &'a Target) -> BoxFuture<'a, Answer> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        *self.last.lock().unwrap() = Some(target.to_string());
        let a = self.answer.clone();
        Box::pin(async move { a })
    }
}

/// A server on 127.0.0.2 that answers each connection with what `serve`
/// makes of its first read.
async fn server(serve: fn(Vec<u8>) -> Vec<u8>) -> u16 {
    let l = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let reply = serve(buf[..n].to_vec());
                let _ = s.write_all(&reply).await;
                let _ = s.shutdown().await;
            });
        }
    });
    port
}

struct Setup {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    proxy: Arc<Proxy>,
    asker: Arc<Fixed>,
    port: u16,
}

impl Setup {
    /// A proxy allowing `pkgs.test` and the address 127.0.0.2 on the
    /// echo server's port, asking `answer` about the rest.
    async fn new(answer: Answer, limits: ProxyLimits) -> Setup {
        let port = server(|got| [b"echo:".as_slice(), &got].concat()).await;
        Setup::with(answer, limits, port).await
    }

    async fn with(answer: Answer, limits: ProxyLimits, port: u16) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("proxy.sock");
        let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let rules = NetworkRules::new(
            &s(&["pkgs.test", "sneaky.test", "mixed.test", "127.0.0.2"]),
            &s(&["bad.pkgs.test"]),
            Some(&[port]),
        )
        .unwrap();
        let two: IpAddr = "127.0.0.2".parse().unwrap();
        let one: IpAddr = "127.0.0.1".parse().unwrap();
        let mut names = BTreeMap::new();
        for name in ["pkgs.test", "new.test", "pkgs.test.evil", "evilpkgs.test"] {
            names.insert(name.to_string(), vec![two]);
        }
        names.insert("sneaky.test".into(), vec![one]);
        names.insert("mixed.test".into(), vec![two, one]);
        names.insert(
            "metadata.test".into(),
            vec!["169.254.169.254".parse().unwrap()],
        );
        let asker = Arc::new(Fixed {
            answer,
            asked: AtomicUsize::new(0),
            last: Default::default(),
        });
        let proxy = Proxy::new(rules, asker.clone(), Arc::new(MapResolver(names)), limits);
        let listener = UnixListener::bind(&socket).unwrap();
        tokio::spawn(proxy.clone().serve(listener));
        Setup {
            _dir: dir,
            socket,
            proxy,
            asker,
            port,
        }
    }

    async fn client(&self) -> UnixStream {
        UnixStream::connect(&self.socket).await.unwrap()
    }

    /// Sends `head` and reads the whole answer.
    async fn http(&self, head: &str) -> String {
        let mut c = self.client().await;
        c.write_all(head.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        c.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A CONNECT to `authority` that, when tunnelled, sends `ping`.
    async fn connect(&self, authority: &str) -> String {
        self.http(&format!(
            "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\nping"
        ))
        .await
    }
}

fn tunnelled(reply: &str) -> bool {
    reply.starts_with("HTTP/1.1 200 ") && reply.ends_with("echo:ping")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_name_is_tunnelled_and_counted() {
    let s = Setup::new(Answer::No("not asked".into()), ProxyLimits::default()).await;
    let reply = s.connect(&format!("pkgs.test:{}", s.port)).await;
    assert!(tunnelled(&reply), "{reply}");
    let u = s.proxy.usage();
    assert_eq!(u.reached.get(&format!("pkgs.test:{}", s.port)), Some(&1));
    assert_eq!(u.bytes_out, 4);
    assert_eq!(u.bytes_in, 9);
    assert_eq!(s.asker.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_in_every_spelling_and_names_that_resolve_to_it_are_refused() {
    let s = Setup::new(Answer::ForTheRun, ProxyLimits::default()).await;
    let p = s.port;
    for authority in [
        format!("127.0.0.1:{p}"),
        format!("127.1:{p}"),
        format!("2130706433:{p}"),
        format!("0x7f000001:{p}"),
        format!("0177.0.0.1:{p}"),
        format!("[::ffff:127.0.0.1]:{p}"),
        format!("[::1]:{p}"),
        format!("sneaky.test:{p}"),
        format!("mixed.test:{p}"),
        format!("metadata.test:{p}"),
        format!("169.254.169.254:{p}"),
        format!("localhost:{p}"),
        format!("api.localhost:{p}"),
    ] {
        let reply = s.connect(&authority).await;
        assert!(reply.starts_with("HTTP/1.1 403 "), "{authority}: {reply}");
        assert!(!reply.contains("echo:"), "{authority}: {reply}");
    }
    // The addresses and `localhost` are refused whatever the answer, so
    // nobody was asked about them. One question: `metadata.test`, a name
    // no rule names (a name is asked about before it is resolved, so no
    // query goes out for a host the person may refuse).
    assert_eq!(s.asker.asked.load(Ordering::SeqCst), 1);
    // The address the rules name, in another spelling, is that address.
    let reply = s.connect(&format!("0x7f000002:{p}")).await;
    assert!(tunnelled(&reply), "{reply}");
    let refused = s.proxy.usage().refused;
    assert!(
        refused[&format!("mixed.test:{p}")].contains("127.0.0.1"),
        "{refused:?}"
    );
    assert!(
        refused[&format!("metadata.test:{p}")].contains("metadata"),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_hosts_are_asked_and_suffix_tricks_are_unnamed() {
    let s = Setup::new(
        Answer::No("the lead said no".into()),
        ProxyLimits::default(),
    )
    .await;
    let p = s.port;
    for authority in [
        format!("new.test:{p}"),
        format!("pkgs.test.evil:{p}"),
        format!("evilpkgs.test:{p}"),
    ] {
        let reply = s.connect(&authority).await;
        assert!(reply.starts_with("HTTP/1.1 403 "), "{authority}: {reply}");
        assert!(reply.contains("the lead said no"), "{reply}");
    }
    assert_eq!(s.asker.asked.load(Ordering::SeqCst), 3);
    // Deny wins over the allowed name's pattern, without a question; a
    // port not listed is refused too.
    let reply = s.connect(&format!("bad.pkgs.test:{p}")).await;
    assert!(reply.starts_with("HTTP/1.1 403 "), "{reply}");
    let reply = s.connect("pkgs.test:22").await;
    assert!(reply.contains("port 22 is not an allowed port"), "{reply}");
    assert_eq!(s.asker.asked.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_for_the_run_is_asked_once() {
    let s = Setup::new(Answer::ForTheRun, ProxyLimits::default()).await;
    for _ in 0..3 {
        let reply = s.connect(&format!("new.test:{}", s.port)).await;
        assert!(tunnelled(&reply), "{reply}");
    }
    assert_eq!(s.asker.asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        s.asker.last.lock().unwrap().as_deref(),
        Some(format!("new.test:{}", s.port).as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_request_is_a_400_before_any_rule() {
    let s = Setup::new(Answer::ForTheRun, ProxyLimits::default()).await;
    let p = s.port;
    for head in [
        format!("CONNECT pkgs.test:{p}\r\nX-Injected: 1 HTTP/1.1\r\n\r\n"),
        format!("CONNECT pkgs.test:{p} HTTP/1.1\nHost: x\r\n\r\n"),
        format!("CONNECT pkgs.test:{p}\r\n\r\n"),
        format!("CONNECT user@pkgs.test:{p} HTTP/1.1\r\n\r\n"),
        "GET https://pkgs.test/ HTTP/1.1\r\n\r\n".to_string(),
        format!("GET http://pkgs.test:{p}/\u{7f} HTTP/1.1\r\n\r\n"),
    ] {
        let reply = s.http(&head).await;
        assert!(reply.starts_with("HTTP/1.1 400 "), "{head:?}: {reply}");
    }
    let big = format!(
        "GET http://pkgs.test:{p}/ HTTP/1.1\r\nX: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    assert!(s.http(&big).await.starts_with("HTTP/1.1 400 "));
    assert_eq!(s.asker.asked.load(Ordering::SeqCst), 0);
    assert!(s.proxy.usage().reached.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_request_goes_in_origin_form_without_proxy_headers() {
    let s = Setup::new(Answer::No("-".into()), ProxyLimits::default()).await;
    let reply = s
        .http(&format!(
            "GET http://pkgs.test:{}/simple/pkg/?x=1 HTTP/1.1\r\nHost: pkgs.test\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive\r\n\r\n",
            s.port
        ))
        .await;
    assert!(
        reply.starts_with(
            "echo:GET /simple/pkg/?x=1 HTTP/1.1\r\nHost: pkgs.test\r\nConnection: close\r\n\r\n"
        ),
        "{reply:?}"
    );
    assert!(!reply.contains("Proxy-Authorization"), "{reply}");
}

/// A SOCKS5 exchange: greeting, then a request with `cmd`, address type
/// `kind` and `addr`; the reply code.
async fn socks(s: &Setup, cmd: u8, kind: u8, addr: &[u8], port: u16) -> (u8, UnixStream) {
    let mut c = s.client().await;
    c.write_all(&[5, 1, 0]).await.unwrap();
    let mut hello = [0u8; 2];
    c.read_exact(&mut hello).await.unwrap();
    assert_eq!(hello, [5, 0]);
    let mut req = vec![5, cmd, 0, kind];
    req.extend_from_slice(addr);
    req.extend_from_slice(&port.to_be_bytes());
    c.write_all(&req).await.unwrap();
    let mut reply = [0u8; 10];
    c.read_exact(&mut reply).await.unwrap();
    (reply[1], c)
}

fn name(n: &str) -> Vec<u8> {
    [&[n.len() as u8][..], n.as_bytes()].concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks5_connects_by_name_and_address_and_refuses_udp_bind_and_loopback() {
    let s = Setup::new(Answer::No("no".into()), ProxyLimits::default()).await;
    let p = s.port;
    let (code, mut c) = socks(&s, 1, 3, &name("pkgs.test"), p).await;
    assert_eq!(code, 0);
    c.write_all(b"ping").await.unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).await.unwrap();
    assert_eq!(out, b"echo:ping");
    assert_eq!(socks(&s, 1, 1, &[127, 0, 0, 2], p).await.0, 0);
    // UDP ASSOCIATE (3) and BIND (2): not served.
    assert_eq!(socks(&s, 3, 1, &[127, 0, 0, 2], p).await.0, 7);
    assert_eq!(socks(&s, 2, 1, &[127, 0, 0, 2], p).await.0, 7);
    // Loopback as an address, as a name spelled as one, and by resolution.
    assert_eq!(socks(&s, 1, 1, &[127, 0, 0, 1], p).await.0, 2);
    assert_eq!(socks(&s, 1, 3, &name("127.1"), p).await.0, 2);
    assert_eq!(socks(&s, 1, 3, &name("sneaky.test"), p).await.0, 2);
    let v6 = "::ffff:127.0.0.1"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    assert_eq!(socks(&s, 1, 4, &v6, p).await.0, 2);
    // A name that is no host.
    assert_eq!(socks(&s, 1, 3, &name("a b"), p).await.0, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_past_the_byte_budget_is_cut() {
    let port = server(|_| vec![b'x'; 8 << 20]).await;
    let limits = ProxyLimits {
        max_bytes: 1 << 20,
        ..ProxyLimits::default()
    };
    let s = Setup::with(Answer::No("-".into()), limits, port).await;
    let reply = s.connect(&format!("pkgs.test:{port}")).await;
    assert!(reply.starts_with("HTTP/1.1 200 "));
    assert!(
        reply.len() < (1 << 20) + 64 * 1024,
        "{} bytes came through",
        reply.len()
    );
    let u = s.proxy.usage();
    assert!(u.bytes_in <= 1 << 20, "{u:?}");
    assert!(u.refused.contains_key("(bytes)"), "{u:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_flood_is_refused_not_queued() {
    // A server that holds every connection open.
    let l = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (c, _) = l.accept().await.unwrap();
            held.push(c);
        }
    });
    let limits = ProxyLimits {
        max_open: 4,
        ..ProxyLimits::default()
    };
    let s = Setup::with(Answer::No("-".into()), limits, port).await;
    let mut open = Vec::new();
    for _ in 0..4 {
        let mut c = s.client().await;
        c.write_all(format!("CONNECT pkgs.test:{port} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut head = [0u8; 39];
        c.read_exact(&mut head).await.unwrap();
        assert!(head.starts_with(b"HTTP/1.1 200 "));
        open.push(c);
    }
    let reply = s.connect(&format!("pkgs.test:{port}")).await;
    assert!(reply.starts_with("HTTP/1.1 503 "), "{reply}");
    drop(open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_nothing_or_half_a_head_is_closed_and_frees_its_slot() {
    let limits = ProxyLimits {
        max_open: 1,
        request_timeout: std::time::Duration::from_millis(200),
        ..ProxyLimits::default()
    };
    let s = Setup::new(Answer::No("-".into()), limits).await;
    // Nothing sent: closed without a word.
    let mut idle = s.client().await;
    let mut out = Vec::new();
    idle.read_to_end(&mut out).await.unwrap();
    assert!(out.is_empty(), "{out:?}");
    // Half a head: a 408, then closed.
    let mut slow = s.client().await;
    slow.write_all(b"CONNECT pkgs.test:1 HT").await.unwrap();
    let mut out = Vec::new();
    slow.read_to_end(&mut out).await.unwrap();
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with("HTTP/1.1 408 "), "{out}");
    // The one slot is free again.
    let reply = s.connect(&format!("pkgs.test:{}", s.port)).await;
    assert!(tunnelled(&reply), "{reply}");
}
