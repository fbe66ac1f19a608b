//! `wasi:http` for components (issue 46): the `fetcher` guest, spawned in a
//! real team, sends its requests through its own proxy to a server on
//! 127.0.0.2, names pinned to that address (never the system's resolver,
//! never another address). A request outside `allowed_outbound_hosts` or
//! to a denied host never reaches the server; a component that imports
//! `wasi:http` without the grant does not load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use teamhost::approvals::PermitAnswer;
use teamhost::embed::SpawnRequest;
use teamhost::network::{NetworkSettings, Usage};
use teamhost::protocol::ProtocolMessage;
use teamhost_tests::fixture::{is_plain, TeamFixture};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server on 127.0.0.2 that answers each request `hello PATH` (`/big`:
/// two MiB), counting the requests it got.
async fn server() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let count = count.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                count.fetch_add(1, Ordering::SeqCst);
                let text = String::from_utf8_lossy(&head).to_string();
                let path = text.split(' ').nth(1).unwrap_or("?").to_string();
                let body = match path.as_str() {
                    // Two MiB, past a budget of one.
                    "/big" => "x".repeat(2 << 20),
                    _ => format!("hello {path}"),
                };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (port, served)
}

/// A network that allows `pkgs.test` and the address 127.0.0.2 on `port`,
/// denies `bad.pkgs.test`, names neither `new.test` (all three pinned to
/// 127.0.0.2), and grants `wasi:http` to `outbound`.
fn network(port: u16, outbound: &[String]) -> NetworkSettings {
    let here = vec!["127.0.0.2".parse().unwrap()];
    NetworkSettings {
        allowed_domains: vec!["pkgs.test".into(), "127.0.0.2".into()],
        denied_domains: vec!["bad.pkgs.test".into()],
        allowed_ports: Some(vec![port]),
        resolve: [
            ("pkgs.test".to_string(), here.clone()),
            ("bad.pkgs.test".to_string(), here.clone()),
            ("new.test".to_string(), here),
        ]
        .into(),
        allowed_outbound_hosts: outbound.to_vec(),
        ..NetworkSettings::default()
    }
}

/// Spawns the fetcher with `network`.
async fn spawn(
    fx: &TeamFixture,
    network: Option<NetworkSettings>,
) -> teamhost::Result<teamhost::embed::TeammateInfo> {
    let dir = fx.dir("fetcher");
    let mut req = SpawnRequest::new("fetcher", teamhost_tests::FETCHER, "ready", &dir);
    req.settings.auto_claim = false;
    req.settings.network = network;
    let spawned = fx.host.spawn(&fx.name, req).await?;
    // Its first turn (the prompt, which it does not answer) is over.
    fx.idle_from("fetcher", 1).await;
    Ok(spawned)
}

/// Asks the fetcher for `url` as the lead and waits for its answer.
async fn fetch(fx: &TeamFixture, url: &str) -> String {
    let before = answers(fx).len();
    ask(fx, url);
    answer_after(fx, url, before).await
}

/// Asks the fetcher for `url` as the lead.
fn ask(fx: &TeamFixture, url: &str) {
    fx.host
        .send_as_lead(&fx.name, "fetcher", &format!("get {url}"), None)
        .unwrap();
}

/// Waits for the fetcher's answer after its first `before` ones.
async fn answer_after(fx: &TeamFixture, url: &str, before: usize) -> String {
    fx.until(&format!("the fetcher's answer for {url}"), || {
        answers(fx).len() > before
    })
    .await;
    answers(fx).pop().unwrap()
}

/// Waits for the fetcher's `n`th `Network` permission request to the lead
/// and returns it.
async fn network_question(fx: &TeamFixture, n: usize) -> teamhost::protocol::PermissionRequest {
    let asked = || -> Vec<_> {
        fx.lead_protocol()
            .into_iter()
            .filter_map(|m| match m {
                ProtocolMessage::PermissionRequest(r) if r.tool_name == "Network" => Some(r),
                _ => None,
            })
            .collect()
    };
    fx.until(&format!("{n} Network question(s)"), || asked().len() >= n)
        .await;
    asked().swap_remove(n - 1)
}

/// The fetcher's plain messages to the lead, oldest first.
fn answers(fx: &TeamFixture) -> Vec<String> {
    fx.lead_inbox()
        .into_iter()
        .filter(|m| m.from == "fetcher" && is_plain(m))
        .map(|m| m.text)
        .collect()
}

/// What the fetcher's proxy recorded beside its log.
fn usage(fx: &TeamFixture) -> Usage {
    let path = fx
        .home
        .join("logs")
        .join(&fx.name)
        .join("fetcher.network.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no usage record at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_teammate_fetches_a_listed_host_through_its_proxy() {
    let (port, served) = server().await;
    let fx = TeamFixture::new("http-granted");
    spawn(
        &fx,
        Some(network(port, &[format!("http://pkgs.test:{port}")])),
    )
    .await
    .unwrap();
    let answer = fetch(&fx, &format!("http://pkgs.test:{port}/hello?x=1")).await;
    assert_eq!(
        answer,
        "status 200 hello /hello?x=1",
        "{}",
        fx.log("fetcher")
    );
    assert_eq!(served.load(Ordering::SeqCst), 1);
    // The proxy made the connection, and recorded it.
    let usage = usage(&fx);
    assert_eq!(
        usage.reached.get(&format!("pkgs.test:{port}")),
        Some(&1),
        "{usage:?}"
    );
    assert_eq!(usage.connections, 1, "{usage:?}");
    assert!(usage.bytes_in > 0 && usage.bytes_out > 0, "{usage:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_not_in_allowed_outbound_hosts_is_refused_naming_the_key() {
    let (port, served) = server().await;
    let fx = TeamFixture::new("http-unlisted");
    spawn(
        &fx,
        Some(network(port, &[format!("http://pkgs.test:{port}")])),
    )
    .await
    .unwrap();
    // The network rules allow 127.0.0.2 itself; the list does not name it.
    let answer = fetch(&fx, &format!("http://127.0.0.2:{port}/")).await;
    assert!(answer.starts_with("error "), "{answer}");
    assert!(answer.contains("allowed_outbound_hosts"), "{answer}");
    assert!(
        answer.contains(&format!("http://127.0.0.2:{port}")),
        "{answer}"
    );
    // Another scheme to a listed host and port is not on the list either.
    let answer = fetch(&fx, &format!("https://pkgs.test:{port}/")).await;
    assert!(answer.contains("allowed_outbound_hosts"), "{answer}");
    assert_eq!(served.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_host_the_rules_deny_is_refused_by_the_proxy_with_its_reason() {
    let (port, served) = server().await;
    let fx = TeamFixture::new("http-denied");
    spawn(
        &fx,
        Some(network(port, &[format!("http://*.pkgs.test:{port}")])),
    )
    .await
    .unwrap();
    let answer = fetch(&fx, &format!("http://bad.pkgs.test:{port}/")).await;
    assert!(answer.starts_with("error "), "{answer}");
    assert!(
        answer.contains("bad.pkgs.test is a denied host"),
        "{answer}"
    );
    assert_eq!(served.load(Ordering::SeqCst), 0);
    let usage = usage(&fx);
    assert!(usage.reached.is_empty(), "{usage:?}");
    assert!(
        usage.refused.contains_key(&format!("bad.pkgs.test:{port}")),
        "{usage:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_host_no_rule_names_is_asked_of_the_lead_and_its_answer_holds() {
    let (port, served) = server().await;
    let fx = TeamFixture::new("http-asked");
    spawn(
        &fx,
        Some(network(port, &[format!("http://new.test:{port}")])),
    )
    .await
    .unwrap();
    let url = format!("http://new.test:{port}/asked");
    // Refused: the guest sees the lead's reason, the server nothing.
    let before = answers(&fx).len();
    ask(&fx, &url);
    let question = network_question(&fx, 1).await;
    assert_eq!(question.input["host"], "new.test", "{question:?}");
    let no = PermitAnswer::Deny {
        reason: "not today".into(),
    };
    fx.host.permit(&fx.name, &question.request_id, no).unwrap();
    let answer = answer_after(&fx, &url, before).await;
    assert!(
        answer.starts_with("error ") && answer.contains("not today"),
        "{answer}"
    );
    assert_eq!(served.load(Ordering::SeqCst), 0);
    // Allowed this once: the request goes through.
    let before = answers(&fx).len();
    ask(&fx, &url);
    let question = network_question(&fx, 2).await;
    let yes = PermitAnswer::Allow {
        updated_input: None,
        permission_updates: Vec::new(),
    };
    fx.host.permit(&fx.name, &question.request_id, yes).unwrap();
    let answer = answer_after(&fx, &url, before).await;
    assert_eq!(answer, "status 200 hello /asked");
    assert_eq!(served.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_past_the_byte_budget_is_cut() {
    let (port, _) = server().await;
    let fx = TeamFixture::new("http-budget");
    let settings = NetworkSettings {
        max_mb: Some(1),
        ..network(port, &[format!("http://pkgs.test:{port}")])
    };
    spawn(&fx, Some(settings)).await.unwrap();
    let answer = fetch(&fx, &format!("http://pkgs.test:{port}/big")).await;
    assert!(
        answer.starts_with("error "),
        "{}",
        &answer[..answer.len().min(200)]
    );
    let usage = usage(&fx);
    assert!(usage.refused.contains_key("(bytes)"), "{usage:?}");
    assert!(usage.bytes_in <= 1 << 20, "{usage:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_importing_wasi_http_without_the_grant_does_not_load() {
    let (port, _) = server().await;
    for (what, settings) in [
        ("no network", None),
        ("a network without the key", Some(network(port, &[]))),
    ] {
        let fx = TeamFixture::new("http-ungranted");
        let why = spawn(&fx, settings)
            .await
            .map(|_| ())
            .expect_err(what)
            .to_string();
        assert!(
            why.contains("[teammate.network] allowed_outbound_hosts"),
            "{what}: {why}"
        );
        assert!(why.contains("wasi:http/"), "{what}: {why}");
        assert!(
            !fx.members().contains(&"fetcher".to_string()),
            "{what}: {:?}",
            fx.members()
        );
    }
}

#[test]
fn teamhost_check_refuses_the_import_for_a_teammate_without_the_grant() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let check = |network: &str| {
        let file = tmp.path().join("team.toml");
        std::fs::write(
            &file,
            format!(
                "[team]\nname = \"checked\"\n[[teammate]]\nname = \"f\"\ncomponent = {:?}\nprompt = \"p\"\n{network}\n",
                teamhost_tests::FETCHER
            ),
        )
        .unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .arg("--home")
            .arg(&home)
            .arg("check")
            .arg(&file)
            .output()
            .unwrap()
    };
    let out = check("");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("[teammate.network] allowed_outbound_hosts") && err.contains("teammate f"),
        "{err}"
    );
    let out = check("[teammate.network]\nallowed_outbound_hosts = [\"https://api.example.com\"]");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
