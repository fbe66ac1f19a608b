//! A teammate's network end to end, without wasm: real Bash (`curl`, the
//! shell's own `/dev/tcp`), the teammate's real namespace and proxy, a real
//! HTTP server on 127.0.0.2, and the lead's answers written into the
//! in-memory store as a lead writes them. Skipped (with a line on stderr)
//! where Bash cannot have namespaces.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::network::NetworkSettings;
use crate::protocol::{Parsed, PermissionResponse, ProtocolMessage, WireMessage};
use crate::runtime::bindings::model::ToolUse;
use crate::runtime::bindings::toolbox::Host as _;
use crate::runtime::bindings::tools::{BashOutput, Host as _};
use crate::runtime::state::AgentCtx;
use crate::sandbox::{PermissionMode, ToolRules};
use crate::store::{
    MemoryStore, NewMember, NewTeam, OutgoingMessage, Store, StoreEvent, StoreObserver, Team,
};

/// A server on 127.0.0.2 answering `hello PATH` to every request; the
/// paths it was asked for.
async fn server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
                        _ => return,
                    }
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                let path = line.split(' ').nth(1).unwrap_or("").to_string();
                log.lock().unwrap().push(path.clone());
                let (kind, body) = match path.as_str() {
                    "/page" => (
                        "text/html",
                        "<html><body><h1>Title</h1><p>hello page</p></body></html>".to_string(),
                    ),
                    "/huge" => ("text/html", "<p>x</p>".repeat(2 << 17)),
                    "/away" => ("", String::new()),
                    _ => ("text/plain", format!("hello {path}")),
                };
                let reply = match path.as_str() {
                    "/away" => "HTTP/1.1 302 Found\r\nLocation: http://evil.test/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
                    _ => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                };
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    (addr, seen)
}

struct ToChannel(tokio::sync::mpsc::UnboundedSender<StoreEvent>);

impl StoreObserver for ToChannel {
    fn changed(&self, event: &StoreEvent) {
        let _ = self.0.send(event.clone());
    }
}

/// How the lead answers every `Network` question.
#[derive(Clone, Copy)]
enum Lead {
    Once,
    Remember,
    Deny,
}

/// The lead: answers each `Network` request in its inbox as `how` says,
/// from the lead; returns the hosts asked about, in order.
fn lead(team: Team, how: Lead) -> Arc<Mutex<Vec<String>>> {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    tokio::spawn(async move {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let _feed = team.watch(Arc::new(ToChannel(tx))).unwrap();
        let mut answered = BTreeSet::new();
        loop {
            for m in team.unread("team-lead").unwrap() {
                let Parsed::Protocol(ProtocolMessage::PermissionRequest(r)) =
                    ProtocolMessage::parse(&m.text)
                else {
                    continue;
                };
                if r.tool_name != "Network" || !answered.insert(r.request_id.clone()) {
                    continue;
                }
                let host = r.input["host"].as_str().unwrap_or_default().to_string();
                log.lock().unwrap().push(host.clone());
                let remember = json!({
                    "type": "addRules",
                    "rules": [{"toolName": "Network", "ruleContent": format!("domain:{host}")}],
                    "behavior": "allow",
                    "destination": "session",
                });
                let answer = match how {
                    Lead::Once => PermissionResponse::allow(&r.request_id, r.input.clone(), vec![]),
                    Lead::Remember => {
                        PermissionResponse::allow(&r.request_id, r.input.clone(), vec![remember])
                    }
                    Lead::Deny => PermissionResponse::deny(&r.request_id, "not this host"),
                };
                team.deliver(&m.from, OutgoingMessage::new("team-lead", answer.to_text()))
                    .unwrap();
            }
            if rx.recv().await.is_none() {
                return;
            }
        }
    });
    asked
}

/// Team `t` in memory with members `a` and `b`, Bash allowed.
fn new_team() -> (tempfile::TempDir, tempfile::TempDir, Team) {
    let store = Store::with_backend(Arc::new(MemoryStore::new()));
    let team = store.team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in ["a", "b"] {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })
        .unwrap();
    }
    (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        team,
    )
}

fn with_network(
    team: &Team,
    name: &str,
    dir: &tempfile::TempDir,
    net: NetworkSettings,
) -> AgentCtx {
    AgentCtx::builder(team.clone(), name, dir.path())
        .mode(PermissionMode::Default)
        .rules(ToolRules::new(["Bash"], [] as [&str; 0]).unwrap())
        .network(net)
        .build()
        .unwrap()
}

fn settings(allowed: &[&str], port: u16) -> NetworkSettings {
    NetworkSettings {
        allowed_domains: allowed.iter().map(|s| s.to_string()).collect(),
        denied_domains: vec!["evil.test".into()],
        allowed_ports: Some(vec![port]),
        resolve: [
            ("pkg.test".to_string(), vec!["127.0.0.2".parse().unwrap()]),
            ("new.test".to_string(), vec!["127.0.0.2".parse().unwrap()]),
            ("evil.test".to_string(), vec!["127.0.0.2".parse().unwrap()]),
        ]
        .into(),
        ..NetworkSettings::default()
    }
}

async fn bash(a: &mut AgentCtx, command: String) -> BashOutput {
    a.tool_glue()
        .bash(command, Some(20_000))
        .await
        .unwrap_or_else(|e| panic!("bash failed: {:?}", e.into_wit()))
}

fn can_run() -> bool {
    let ok = crate::tools::confine::namespaces() && std::path::Path::new("/usr/bin/curl").exists();
    if !ok {
        eprintln!("skipped: Bash gets no namespaces here, or there is no curl");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_reaches_an_allowed_host_through_the_proxy_and_no_other_way() {
    if !can_run() {
        return;
    }
    let (addr, seen) = server().await;
    let port = addr.port();
    let (dir, _other, team) = new_team();
    let asked = lead(team.clone(), Lead::Deny);
    let mut a = with_network(&team, "a", &dir, settings(&["pkg.test", "127.0.0.2"], port));

    let got = bash(
        &mut a,
        format!("curl -sS --max-time 10 http://pkg.test:{port}/one"),
    )
    .await;
    assert_eq!(got.stdout, "hello /one", "{got:?}");

    // Without the proxy variables there is no route: the host's 127.0.0.2
    // is not in the namespace, and Landlock refuses any port but the proxy's.
    let direct = bash(
        &mut a,
        format!(
            "env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY \
             curl -sS --max-time 5 http://127.0.0.2:{port}/direct; echo rc=$?"
        ),
    )
    .await;
    assert!(!direct.stdout.contains("rc=0"), "{direct:?}");
    // The shell's own TCP, to the host's address: refused too.
    let raw = bash(
        &mut a,
        format!("bash -c 'echo GET /raw > /dev/tcp/127.0.0.2/{port}'; echo rc=$?"),
    )
    .await;
    assert!(!raw.stdout.contains("rc=0"), "{raw:?}");
    // No resolver inside, and no UDP: a DNS query goes nowhere.
    let dns = bash(
        &mut a,
        "curl -sS --noproxy '*' --max-time 5 http://pkg.test/; echo rc=$?; \
         bash -c 'echo x > /dev/udp/127.0.0.53/53'; echo udp=$?"
            .into(),
    )
    .await;
    assert!(dns.stdout.contains("rc=6"), "could not resolve: {dns:?}");
    assert!(dns.stdout.contains("udp=1"), "{dns:?}");
    // A denied host is refused by the proxy, whatever it resolves to.
    let denied = bash(
        &mut a,
        format!("curl -s -o /dev/null -w '%{{http_code}}' http://evil.test:{port}/evil"),
    )
    .await;
    assert_eq!(denied.stdout, "403", "{denied:?}");
    // An allowed host on a port not allowed: refused.
    let port_refused = bash(
        &mut a,
        "curl -s -o /dev/null -w '%{http_code}' http://pkg.test:8/".into(),
    )
    .await;
    assert_eq!(port_refused.stdout, "403", "{port_refused:?}");

    assert_eq!(
        *seen.lock().unwrap(),
        ["/one"],
        "only the proxied request arrived"
    );
    assert!(asked.lock().unwrap().is_empty(), "nothing was asked");
    let usage = a.tools.network.as_ref().unwrap().usage();
    assert_eq!(usage.reached.get(&format!("pkg.test:{port}")), Some(&1));
    assert!(
        usage.refused.keys().any(|k| k.starts_with("evil.test")),
        "{usage:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unnamed_host_is_asked_of_the_lead_and_a_remembered_answer_holds_for_the_run() {
    if !can_run() {
        return;
    }
    let (addr, seen) = server().await;
    let port = addr.port();
    let (dir, _other, team) = new_team();
    let asked = lead(team.clone(), Lead::Remember);
    let mut a = with_network(&team, "a", &dir, settings(&["127.0.0.2"], port));
    for path in ["/first", "/second"] {
        let got = bash(
            &mut a,
            format!("curl -sS --max-time 15 http://new.test:{port}{path}"),
        )
        .await;
        assert_eq!(got.stdout, format!("hello {path}"), "{got:?}");
    }
    assert_eq!(
        *asked.lock().unwrap(),
        ["new.test"],
        "asked once, remembered"
    );
    assert_eq!(*seen.lock().unwrap(), ["/first", "/second"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_once_asks_again_and_a_denial_reaches_the_program() {
    if !can_run() {
        return;
    }
    let (addr, seen) = server().await;
    let port = addr.port();
    let (dir, _other, team) = new_team();
    let asked = lead(team.clone(), Lead::Once);
    let mut a = with_network(&team, "a", &dir, settings(&["127.0.0.2"], port));
    for path in ["/x", "/y"] {
        let got = bash(
            &mut a,
            format!("curl -sS --max-time 15 http://new.test:{port}{path}"),
        )
        .await;
        assert_eq!(got.stdout, format!("hello {path}"), "{got:?}");
    }
    assert_eq!(*asked.lock().unwrap(), ["new.test", "new.test"]);
    assert_eq!(*seen.lock().unwrap(), ["/x", "/y"]);

    let (dir_b, _, team_b) = new_team();
    let _lead_b = lead(team_b.clone(), Lead::Deny);
    let mut b = with_network(&team_b, "b", &dir_b, settings(&["127.0.0.2"], port));
    let got = bash(
        &mut b,
        format!("curl -s -w ' %{{http_code}}' http://new.test:{port}/no"),
    )
    .await;
    assert!(
        got.stdout.ends_with(" 403") && got.stdout.contains("not this host"),
        "{got:?}"
    );
    assert_eq!(*seen.lock().unwrap(), ["/x", "/y"]);
}

/// Two teammates, two namespaces: `b` may reach the server, `a` may not;
/// `a`'s connection to the proxy's address reaches its own proxy, never
/// `b`'s, and there is no path that names either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_cannot_reach_another_teammates_proxy() {
    if !can_run() {
        return;
    }
    let (addr, seen) = server().await;
    let port = addr.port();
    let (dir_a, dir_b, team) = new_team();
    let _lead = lead(team.clone(), Lead::Deny);
    let mut b = with_network(
        &team,
        "b",
        &dir_b,
        settings(&["pkg.test", "127.0.0.2"], port),
    );
    let mut a = with_network(&team, "a", &dir_a, settings(&[], port));
    let got = bash(&mut b, format!("curl -sS http://pkg.test:{port}/b")).await;
    assert_eq!(got.stdout, "hello /b");
    let got = bash(
        &mut a,
        format!("curl -s -o /dev/null -w '%{{http_code}}' http://pkg.test:{port}/a"),
    )
    .await;
    assert_eq!(
        got.stdout, "403",
        "a's own proxy answered, by a's rules: {got:?}"
    );
    assert_eq!(*seen.lock().unwrap(), ["/b"]);
}

async fn web_fetch(a: &mut AgentCtx, url: &str) -> (String, bool) {
    let r = a
        .tool_glue()
        .invoke(ToolUse {
            id: "toolu_1".into(),
            name: "WebFetch".into(),
            input: json!({"url": url, "prompt": "what does it say?"}).to_string(),
        })
        .await
        .unwrap();
    (r.content, r.is_error)
}

/// WebFetch is offered only to a teammate with a network, whose Bash is
/// then told about the proxy; it fetches through the same gate (rules,
/// questions, redirects judged again) and returns HTML as Markdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_goes_through_the_teammates_network_and_only_there() {
    let (addr, seen) = server().await;
    let port = addr.port();
    let (dir, dir_b, team) = new_team();
    let asked = lead(team.clone(), Lead::Deny);
    let mut a = with_network(&team, "a", &dir, settings(&["pkg.test", "127.0.0.2"], port));
    let mut plain = AgentCtx::builder(team.clone(), "b", dir_b.path())
        .build()
        .unwrap();

    let offered = |defs: Vec<crate::runtime::bindings::model::ToolDefinition>| {
        let bash = defs
            .iter()
            .find(|d| d.name == "Bash")
            .unwrap()
            .description
            .clone();
        (defs.iter().any(|d| d.name == "WebFetch"), bash)
    };
    let (fetch, bash) = offered(a.tool_glue().definitions().await.unwrap());
    assert!(fetch && bash.contains("through the host's proxy"), "{bash}");
    let (fetch, bash) = offered(plain.tool_glue().definitions().await.unwrap());
    assert!(!fetch && bash.contains("There is no network."), "{bash}");
    let (text, error) = web_fetch(&mut plain, &format!("http://pkg.test:{port}/page")).await;
    assert!(error && text.contains("has no network"), "{text}");

    let (text, error) = web_fetch(&mut a, &format!("http://pkg.test:{port}/page")).await;
    assert!(!error, "{text}");
    assert!(
        text.contains("# Title") && text.contains("hello page"),
        "{text}"
    );
    assert!(text.contains("You asked: what does it say?"), "{text}");
    // A redirect to a denied host is refused at that hop.
    let (text, error) = web_fetch(&mut a, &format!("http://pkg.test:{port}/away")).await;
    assert!(
        error && text.contains("permission denied") && text.contains("evil.test"),
        "{text}"
    );
    // A host no rule names is asked, and the lead's no holds.
    let (text, error) = web_fetch(&mut a, &format!("http://new.test:{port}/page")).await;
    assert!(error && text.contains("not this host"), "{text}");
    assert_eq!(*asked.lock().unwrap(), ["new.test"]);
    assert_eq!(*seen.lock().unwrap(), ["/page", "/away"]);
}

/// WebFetch spends the teammate's network budgets and shows in its
/// record; a spent budget refuses it before anything is sent; and no more
/// than `MAX_HTML` of a page is parsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_spends_the_network_budget_and_parses_a_bounded_page() {
    let (addr, seen) = server().await;
    let port = addr.port();
    let (dir, _other, team) = new_team();
    let _lead = lead(team.clone(), Lead::Deny);
    let net = NetworkSettings {
        max_connections: Some(2),
        ..settings(&["pkg.test", "127.0.0.2"], port)
    };
    let mut a = with_network(&team, "a", &dir, net);
    let seat = a.tools.network.clone().unwrap();
    let huge = seat
        .fetch(&format!("http://pkg.test:{port}/huge"))
        .await
        .unwrap();
    assert!(
        huge.truncated,
        "2 MiB of HTML is cut at MAX_HTML: {} {} {:?}",
        huge.bytes,
        huge.text.len(),
        huge.content_type
    );
    assert!(huge.bytes >= 2 << 20, "{}", huge.bytes);
    assert!(
        huge.text.len() < crate::network::MAX_HTML,
        "{}",
        huge.text.len()
    );
    let (text, error) = web_fetch(&mut a, &format!("http://pkg.test:{port}/page")).await;
    assert!(!error, "{text}");
    let usage = seat.usage();
    assert_eq!(usage.reached.get(&format!("pkg.test:{port}")), Some(&2));
    assert_eq!(usage.connections, 2);
    assert!(usage.bytes_in >= 2 << 20, "{usage:?}");
    // The two connections are spent: the third fetch is refused unsent.
    let (text, error) = web_fetch(&mut a, &format!("http://pkg.test:{port}/page")).await;
    assert!(error && text.contains("made its 2 connections"), "{text}");
    assert_eq!(*seen.lock().unwrap(), ["/huge", "/page"]);
}
