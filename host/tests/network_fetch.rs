//! WebFetch's fetcher (issue 46) against real HTTP servers on this machine:
//! TCP servers on 127.0.0.2, names from a resolver table (never the
//! system's). The attack list the fetcher answers: a redirect from an
//! allowed host to a refused one, a redirect loop, IP literals in every
//! spelling, a name that resolves to loopback, an endless response, a
//! binary type, a server that never finishes; and a recorded fetch
//! replayed with the server gone.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use teamhost::network::{
    Answer, Asker, BoxFuture, FetchError, FetchLimits, FetchTape, Fetcher, Gate, MapResolver,
    NetworkRules, Proxy, ProxyLimits, TapeMode, Target,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc;

/// Answers every question the same way, keeping the questions.
struct Recorder {
    answer: Answer,
    asked: Mutex<Vec<String>>,
}

impl Recorder {
    fn new(answer: Answer) -> Arc<Recorder> {
        Arc::new(Recorder {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl Asker for Recorder {
    fn ask<'a>(&'a self, target: &'a Target) -> BoxFuture<'a, Answer> {
        self.asked.lock().unwrap().push(target.to_string());
        let a = self.answer.clone();
        Box::pin(async move { a })
    }
}

/// What a server's event channel reports.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    /// An endless body ended after this many bytes were written.
    SentThenCut(u64),
    /// A client that was never answered went away.
    ClientGone,
}

/// The test server: routes by path, counts requests per path, reports
/// events on a channel.
struct Server {
    port: u16,
    hits: Arc<Mutex<BTreeMap<String, u64>>>,
    events: mpsc::UnboundedReceiver<Event>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start() -> Server {
        let l = TcpListener::bind("127.0.0.2:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let hits: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let (tx, events) = mpsc::unbounded_channel();
        let counted = hits.clone();
        let task = tokio::spawn(async move {
            loop {
                let (s, _) = l.accept().await.unwrap();
                let (hits, tx) = (counted.clone(), tx.clone());
                tokio::spawn(async move { serve(s, hits, tx).await });
            }
        });
        Server {
            port,
            hits,
            events,
            task,
        }
    }

    fn hits(&self, path: &str) -> u64 {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    fn total_hits(&self) -> u64 {
        self.hits.lock().unwrap().values().sum()
    }
}

const PAGE: &str = "<!doctype html><html><head><title>T</title><script>steal()</script></head>\
    <body><h1>Packages</h1><p>Hello <b>world</b>, see <a href=\"/docs\">the docs</a>.</p></body></html>";

fn reply(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    [out.as_bytes(), body].concat()
}

async fn serve(
    mut s: TcpStream,
    hits: Arc<Mutex<BTreeMap<String, u64>>>,
    tx: mpsc::UnboundedSender<Event>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("").to_string();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    let out = match path.as_str() {
        "/page" => reply(
            "200 OK",
            &[("Content-Type", "text/html; charset=utf-8")],
            PAGE.as_bytes(),
        ),
        "/plain" => reply("200 OK", &[("Content-Type", "text/plain")], b"just text"),
        "/json" => reply(
            "200 OK",
            &[("Content-Type", "application/json")],
            b"{\"a\":1}",
        ),
        "/missing" => reply(
            "404 Not Found",
            &[("Content-Type", "text/plain")],
            b"no such page",
        ),
        "/old" => reply("301 Moved Permanently", &[("Location", "/page")], b""),
        "/loop" => reply("302 Found", &[("Location", "/loop")], b""),
        "/image" => reply(
            "200 OK",
            &[("Content-Type", "image/png")],
            b"\x89PNG\r\n\x1a\n\0\0",
        ),
        "/file" => reply("302 Found", &[("Location", "file:///etc/passwd")], b""),
        p if p.starts_with("/to/") => {
            let target = format!("http://{}", &p["/to/".len()..]);
            reply("307 Temporary Redirect", &[("Location", &target)], b"")
        }
        "/endless" => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
            if s.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let chunk = vec![b'a'; 64 * 1024];
            let mut sent = 0u64;
            while s.write_all(&chunk).await.is_ok() {
                sent += chunk.len() as u64;
            }
            let _ = tx.send(Event::SentThenCut(sent));
            return;
        }
        "/trickle" => {
            // A head and part of the body, then nothing until the client
            // goes away.
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nten bytes.";
            if s.write_all(head.as_bytes()).await.is_ok() {
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            }
            let _ = tx.send(Event::ClientGone);
            return;
        }
        "/slow" => {
            // Never answers; reports when the client goes away.
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
            let _ = tx.send(Event::ClientGone);
            return;
        }
        _ => reply(
            "404 Not Found",
            &[("Content-Type", "text/plain")],
            b"unknown",
        ),
    };
    let _ = s.write_all(&out).await;
    let _ = s.shutdown().await;
}

/// The names the resolver knows: all on 127.0.0.2 (which the rules list)
/// but `sneaky.test`, on 127.0.0.1 (which they do not).
fn names() -> MapResolver {
    let two: IpAddr = "127.0.0.2".parse().unwrap();
    let mut names = BTreeMap::new();
    for name in ["pkgs.test", "bad.pkgs.test", "new.test"] {
        names.insert(name.to_string(), vec![two]);
    }
    names.insert("sneaky.test".into(), vec!["127.0.0.1".parse().unwrap()]);
    MapResolver(names)
}

/// A gate allowing `pkgs.test`, `sneaky.test` and the address 127.0.0.2
/// on `port`, denying `bad.pkgs.test`, asking `asker` about the rest.
fn gate(port: u16, asker: Arc<Recorder>) -> Arc<Gate> {
    let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let rules = NetworkRules::new(
        &s(&["pkgs.test", "sneaky.test", "127.0.0.2"]),
        &s(&["bad.pkgs.test"]),
        Some(&[port]),
    )
    .unwrap();
    Gate::new(rules, asker, Arc::new(names()), Duration::from_secs(5))
}

fn fetcher(port: u16, answer: Answer, limits: FetchLimits) -> (Fetcher, Arc<Recorder>, Arc<Gate>) {
    let asker = Recorder::new(answer);
    let gate = gate(port, asker.clone());
    (Fetcher::new(gate.clone(), limits), asker, gate)
}

fn not_asked() -> Answer {
    Answer::No("the test did not expect a question".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_html_page_comes_back_as_markdown() {
    let server = Server::start().await;
    let (f, asker, _) = fetcher(server.port, not_asked(), FetchLimits::default());
    let url = format!("http://pkgs.test:{}/page", server.port);
    let page = f.fetch(&url).await.unwrap();
    assert_eq!(page.url, url);
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type, "text/html");
    assert!(page.text.contains("# Packages"), "{}", page.text);
    assert!(page.text.contains("**world**"), "{}", page.text);
    assert!(page.text.contains("[the docs](/docs)"), "{}", page.text);
    assert!(!page.text.contains("steal"), "{}", page.text);
    assert!(!page.truncated);
    assert_eq!(page.bytes, PAGE.len() as u64);
    assert!(page.redirects.is_empty());
    // Other text types come back as they are; a 404 page is text too.
    let json = f
        .fetch(&format!("http://pkgs.test:{}/json", server.port))
        .await
        .unwrap();
    assert_eq!(
        (json.content_type.as_str(), json.text.as_str()),
        ("application/json", "{\"a\":1}")
    );
    let missing = f
        .fetch(&format!("http://pkgs.test:{}/missing", server.port))
        .await
        .unwrap();
    assert_eq!(
        (missing.status, missing.text.as_str()),
        (404, "no such page")
    );
    assert!(asker.asked().is_empty());
    let u = f.usage();
    assert_eq!(u.fetches, 3);
    assert_eq!(u.bytes, (PAGE.len() + 7 + 12) as u64);
    assert_eq!(
        u.reached.get(&format!("pkgs.test:{}", server.port)),
        Some(&3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_host_and_a_port_not_listed_are_refused_without_a_request() {
    let server = Server::start().await;
    let (f, asker, _) = fetcher(server.port, Answer::ForTheRun, FetchLimits::default());
    let err = f
        .fetch(&format!("http://bad.pkgs.test:{}/plain", server.port))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, FetchError::Refused { why, .. } if why.contains("denied")),
        "{err}"
    );
    let err = f.fetch("http://pkgs.test/plain").await.unwrap_err();
    assert!(
        err.to_string().contains("port 80 is not an allowed port"),
        "{err}"
    );
    let err = f.fetch("file:///etc/passwd").await.unwrap_err();
    assert!(matches!(err, FetchError::BadUrl(_)), "{err}");
    assert_eq!(server.total_hits(), 0);
    assert!(asker.asked().is_empty());
    assert_eq!(f.usage().refused.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unnamed_host_is_asked_each_time_when_allowed_once() {
    let server = Server::start().await;
    let (f, asker, gate) = fetcher(server.port, Answer::Once, FetchLimits::default());
    let url = format!("http://new.test:{}/plain", server.port);
    for _ in 0..2 {
        assert_eq!(f.fetch(&url).await.unwrap().text, "just text");
    }
    let target = format!("new.test:{}", server.port);
    assert_eq!(asker.asked(), vec![target.clone(), target]);
    assert!(gate.allowed_for_the_run().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_refuses_the_fetch_with_the_reason() {
    let server = Server::start().await;
    let (f, asker, _) = fetcher(
        server.port,
        Answer::No("the lead said no".into()),
        FetchLimits::default(),
    );
    let err = f
        .fetch(&format!("http://new.test:{}/plain", server.port))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("the lead said no"), "{err}");
    assert_eq!(asker.asked().len(), 1);
    assert_eq!(server.total_hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_for_the_run_is_asked_once_and_shared_with_the_proxy() {
    let server = Server::start().await;
    let (f, asker, gate) = fetcher(server.port, Answer::ForTheRun, FetchLimits::default());
    let url = format!("http://new.test:{}/plain", server.port);
    for _ in 0..2 {
        assert_eq!(f.fetch(&url).await.unwrap().text, "just text");
    }
    assert_eq!(asker.asked(), vec![format!("new.test:{}", server.port)]);
    assert_eq!(gate.allowed_for_the_run(), vec!["new.test".to_string()]);
    // The proxy on the same gate tunnels to it without asking again.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("proxy.sock");
    let proxy = Proxy::with_gate(gate.clone(), ProxyLimits::default());
    tokio::spawn(proxy.clone().serve(UnixListener::bind(&socket).unwrap()));
    let mut c = UnixStream::connect(&socket).await.unwrap();
    let authority = format!("new.test:{}", server.port);
    c.write_all(
        format!(
            "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\nGET /plain HTTP/1.1\r\nHost: new.test\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).await.unwrap();
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with("HTTP/1.1 200 "), "{out}");
    assert!(out.ends_with("just text"), "{out}");
    assert_eq!(asker.asked().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_followed_and_each_hop_is_admitted_again() {
    let server = Server::start().await;
    let p = server.port;
    let (f, asker, _) = fetcher(p, not_asked(), FetchLimits::default());
    // A relative redirect on an allowed host is followed.
    let page = f.fetch(&format!("http://pkgs.test:{p}/old")).await.unwrap();
    assert_eq!(page.url, format!("http://pkgs.test:{p}/page"));
    assert_eq!(page.redirects, vec![format!("http://pkgs.test:{p}/old")]);
    assert!(page.text.contains("# Packages"));
    // To a denied host: refused, that hop named, never requested.
    let from = format!("http://pkgs.test:{p}/to/bad.pkgs.test:{p}/page");
    let err = f.fetch(&from).await.unwrap_err();
    match &err {
        FetchError::Refused {
            url,
            from: via,
            why,
        } => {
            assert_eq!(url, &format!("http://bad.pkgs.test:{p}/page"));
            assert_eq!(via.as_deref(), Some(from.as_str()));
            assert!(why.contains("denied"), "{why}");
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("bad.pkgs.test"), "{err}");
    // To an allowed name that resolves to this machine, and to loopback
    // written as an address: refused.
    for hop in [format!("sneaky.test:{p}/page"), format!("127.1:{p}/page")] {
        let err = f
            .fetch(&format!("http://pkgs.test:{p}/to/{hop}"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, FetchError::Refused { why, .. } if why.contains("127.0.0.1")),
            "{hop}: {err}"
        );
    }
    // To another scheme: refused.
    let err = f
        .fetch(&format!("http://pkgs.test:{p}/file"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("file:"), "{err}");
    assert_eq!(
        server.hits("/page"),
        1,
        "only the allowed hop reached /page"
    );
    // The 127.1 hop is a host no rule names, but an address refused
    // whatever the answer: refused before anyone is asked.
    assert!(asker.asked().is_empty(), "{:?}", asker.asked());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_stops_at_max_redirects() {
    let server = Server::start().await;
    let limits = FetchLimits {
        max_redirects: 3,
        ..FetchLimits::default()
    };
    let (f, _, _) = fetcher(server.port, not_asked(), limits);
    let err = f
        .fetch(&format!("http://pkgs.test:{}/loop", server.port))
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::TooManyRedirects { max: 3, .. }),
        "{err}"
    );
    assert_eq!(server.hits("/loop"), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_literals_in_every_spelling_are_refused_unless_the_address_is_listed() {
    let server = Server::start().await;
    let p = server.port;
    let (f, asker, _) = fetcher(p, Answer::ForTheRun, FetchLimits::default());
    for host in [
        "127.0.0.1",
        "127.1",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "[::ffff:127.0.0.1]",
        "[::1]",
        "sneaky.test",
        "169.254.169.254",
    ] {
        let err = f
            .fetch(&format!("http://{host}:{p}/plain"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, FetchError::Refused { why, .. } if why.contains("refused unless a rule allows that address")),
            "{host}: {err}"
        );
    }
    assert_eq!(server.total_hits(), 0);
    // 127.0.0.2 is listed: reached in any spelling, without a question.
    let asked = asker.asked().len();
    for host in ["127.0.0.2", "0x7f000002", "2130706434", "127.0.2"] {
        let page = f.fetch(&format!("http://{host}:{p}/plain")).await.unwrap();
        assert_eq!(page.text, "just text", "{host}");
    }
    assert_eq!(asker.asked().len(), asked);
    assert_eq!(server.hits("/plain"), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_response_is_cut_at_max_bytes() {
    let mut server = Server::start().await;
    let limits = FetchLimits {
        max_bytes: 1 << 20,
        ..FetchLimits::default()
    };
    let (f, _, _) = fetcher(server.port, not_asked(), limits);
    let page = f
        .fetch(&format!("http://pkgs.test:{}/endless", server.port))
        .await
        .unwrap();
    assert!(page.truncated);
    assert_eq!(page.bytes, 1 << 20);
    assert_eq!(page.text.len(), 1 << 20);
    assert_eq!(f.usage().bytes, 1 << 20);
    // The server stops at a write error once the fetcher has let go: what
    // it managed to send is the limit and the sockets' buffers, not more.
    let sent = match server.events.recv().await {
        Some(Event::SentThenCut(n)) => n,
        other => panic!("{other:?}"),
    };
    eprintln!("the endless server sent {sent} bytes");
    assert!(sent >= 1 << 20, "{sent}");
    assert!(sent < 64 << 20, "the server sent {sent} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_type_is_refused_and_named() {
    let server = Server::start().await;
    let (f, _, _) = fetcher(server.port, not_asked(), FetchLimits::default());
    let err = f
        .fetch(&format!("http://pkgs.test:{}/image", server.port))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, FetchError::NotText { content_type, .. } if content_type == "image/png"),
        "{err}"
    );
    assert!(err.to_string().contains("image/png"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_or_stops_halfway_hits_the_timeout() {
    let mut server = Server::start().await;
    let limits = FetchLimits {
        timeout: Duration::from_millis(300),
        ..FetchLimits::default()
    };
    let (f, _, _) = fetcher(server.port, not_asked(), limits);
    let started = Instant::now();
    let err = f
        .fetch(&format!("http://pkgs.test:{}/slow", server.port))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            FetchError::Timeout {
                timeout_ms: 300,
                ..
            }
        ),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The fetcher let the connection go.
    assert_eq!(server.events.recv().await, Some(Event::ClientGone));
    // A body that stops halfway is bounded by the same time.
    let err = f
        .fetch(&format!("http://pkgs.test:{}/trickle", server.port))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Timeout { .. }), "{err}");
    assert_eq!(server.events.recv().await, Some(Event::ClientGone));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_fetch_replays_with_the_server_gone() {
    let server = Server::start().await;
    let p = server.port;
    let dir = tempfile::tempdir().unwrap();
    let path = FetchTape::path_for(dir.path(), "team", "worker").unwrap();
    let page_url = format!("http://pkgs.test:{p}/old");
    let bad_url = format!("http://bad.pkgs.test:{p}/plain");
    let (recorded, refused) = {
        let tape = Arc::new(FetchTape::open(path.clone(), TapeMode::Record).unwrap());
        let (f, _, _) = fetcher(p, not_asked(), FetchLimits::default());
        let f = f.with_tape(tape);
        (
            f.fetch(&page_url).await.unwrap(),
            f.fetch(&bad_url).await.unwrap_err(),
        )
    };
    server.task.abort();
    let _ = server.task.await;
    // The server is gone: a live fetch fails.
    let (live, _, _) = fetcher(p, not_asked(), FetchLimits::default());
    assert!(matches!(
        live.fetch(&page_url).await,
        Err(FetchError::Failed { .. })
    ));
    // Replayed: the same answers, with no network, rule or question (a
    // gate that would refuse everything, a resolver that knows nothing).
    let asker = Recorder::new(not_asked());
    let nothing = NetworkRules::new(&[], &[], Some(&[1])).unwrap();
    let gate = Gate::new(
        nothing,
        asker.clone(),
        Arc::new(MapResolver::default()),
        Duration::from_secs(1),
    );
    let tape = Arc::new(FetchTape::open(path, TapeMode::Replay).unwrap());
    let replay = Fetcher::new(gate, FetchLimits::default()).with_tape(tape);
    assert_eq!(replay.fetch(&page_url).await.unwrap(), recorded);
    assert_eq!(replay.fetch(&bad_url).await.unwrap_err(), refused);
    let err = replay
        .fetch(&format!("http://pkgs.test:{p}/never"))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::NotRecorded(_)), "{err}");
    assert!(asker.asked().is_empty());
    let u = replay.usage();
    assert_eq!((u.fetches, u.replayed), (0, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_or_record_fetches_only_what_the_tape_lacks() {
    let server = Server::start().await;
    let p = server.port;
    let dir = tempfile::tempdir().unwrap();
    let path = FetchTape::path_for(dir.path(), "team", "worker").unwrap();
    let url = format!("http://pkgs.test:{p}/plain");
    for _ in 0..2 {
        let tape = Arc::new(FetchTape::open(path.clone(), TapeMode::ReplayOrRecord).unwrap());
        let (f, _, _) = fetcher(p, not_asked(), FetchLimits::default());
        let f = f.with_tape(tape);
        assert_eq!(f.fetch(&url).await.unwrap().text, "just text");
    }
    assert_eq!(server.hits("/plain"), 1);
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    assert_eq!(lines, 2, "a header and one fetch");
}
