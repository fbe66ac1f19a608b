//! NATS-only behaviour, on a server of the test's own: what the contract
//! tests cannot say about other backends (bad values set aside, retried
//! writes stored once, racing writers on separate connections).

use std::sync::Arc;

use async_nats::HeaderMap;
use bytes::Bytes;

use super::answers::Fail;
use super::*;
use crate::error::Error;
use crate::store::{NewMember, NewTask, NewTeam, OutgoingMessage, Store};
use teamhost_tests::nats_server::NatsServer;

fn store_on(server: &NatsServer, prefix: &str) -> NatsStore {
    NatsStore::connect(&NatsUrl::parse(&server.url(prefix)).unwrap()).unwrap()
}

fn team_on(s: &NatsStore, name: &str) -> crate::store::Team {
    let team = Store::with_backend(Arc::new(s.clone())).team(name).unwrap();
    team.create(NewTeam::default()).unwrap();
    team
}

#[test]
fn a_retried_write_is_stored_once_and_a_landed_swap_is_found_after_a_lost_answer() {
    let Some(server) = NatsServer::start_or_skip("retried write") else {
        return;
    };
    let s = store_on(&server, "dedupe");
    team_on(&s, "t");
    let n = s.names("t");
    let conn = s.conn();
    // A delivery sent twice with one message id, as a retry after a lost
    // answer sends it: stored once, the same sequence both times.
    let mut h = HeaderMap::new();
    h.insert("Nats-Msg-Id", "delivery-1");
    let subject = n.inbox("w");
    let first = conn
        .publish(
            &n.mail_stream,
            &subject,
            h.clone(),
            Bytes::from_static(b"[]"),
            None,
        )
        .unwrap();
    let again = conn
        .publish(&n.mail_stream, &subject, h, Bytes::from_static(b"[]"), None)
        .unwrap();
    assert_eq!(first, again);
    // A swap that landed (its answer lost), then superseded by another
    // writer: the message right after the revision it expected is found
    // as its own, and nobody else's is.
    let mut mine = HeaderMap::new();
    mine.insert("Nats-Msg-Id", "swap-1");
    let key = n.key("k");
    let landed = conn
        .publish(&n.kv_stream, &key, mine, Bytes::from_static(b"1"), Some(0))
        .unwrap();
    let lost = conn.publish(
        &n.kv_stream,
        &key,
        HeaderMap::new(),
        Bytes::from_static(b"2"),
        Some(0),
    );
    assert!(matches!(lost, Err(Fail::Conflict)), "{lost:?}");
    conn.publish(
        &n.kv_stream,
        &key,
        HeaderMap::new(),
        Bytes::from_static(b"3"),
        Some(landed),
    )
    .unwrap();
    assert_eq!(
        conn.landed(&n.kv_stream, &key, 0, "swap-1").unwrap(),
        Some(landed)
    );
    assert_eq!(conn.landed(&n.kv_stream, &key, 0, "another").unwrap(), None);
}

#[test]
fn racing_config_updates_on_two_connections_lose_nothing() {
    let Some(server) = NatsServer::start_or_skip("racing config") else {
        return;
    };
    let (one, two) = (store_on(&server, "race"), store_on(&server, "race"));
    team_on(&one, "t");
    let threads: Vec<_> = [one, two]
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            std::thread::spawn(move || {
                let team = Store::with_backend(Arc::new(s)).team("t").unwrap();
                for k in 0..25 {
                    team.add_member(NewMember {
                        name: format!("m{i}-{k}"),
                        ..Default::default()
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = store_on(&server, "race");
    let config = s.read_config("t").unwrap().unwrap();
    assert_eq!(config.members.len(), 51, "the lead and 50 members");
}

#[test]
fn two_creators_of_one_team_cannot_both_win() {
    let Some(server) = NatsServer::start_or_skip("two creators") else {
        return;
    };
    let wins: Vec<bool> = (0..4)
        .map(|_| store_on(&server, "create"))
        .map(|s| std::thread::spawn(move || team_on_result(&s)))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(wins.iter().filter(|w| **w).count(), 1, "{wins:?}");
}

fn team_on_result(s: &NatsStore) -> bool {
    let team = Store::with_backend(Arc::new(s.clone())).team("t").unwrap();
    match team.create(NewTeam::default()) {
        Ok(_) => true,
        Err(Error::TeamExists { .. }) => false,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_config_that_does_not_parse_is_set_aside_and_named_never_overwritten() {
    let Some(server) = NatsServer::start_or_skip("corrupt config") else {
        return;
    };
    let s = store_on(&server, "bad");
    let team = team_on(&s, "t");
    let n = s.names("t");
    kv::put(
        s.conn(),
        &n,
        "config",
        Bytes::from_static(b"{not json"),
        None,
    )
    .unwrap();
    // Reading reports it and changes nothing.
    let read = team.config().unwrap_err().to_string();
    assert!(
        read.contains("teams/t/config") && read.contains("not valid JSON"),
        "{read}"
    );
    assert!(kv::get(s.conn(), &n, "config").unwrap().value.is_some());
    // Writing sets it aside, names both places, and writes nothing over it.
    let err = team.set_mode("team-lead", "plan").unwrap_err();
    let Error::Corrupt {
        moved_to: Some(aside),
        ..
    } = &err
    else {
        panic!("{err}")
    };
    let aside_key = aside.display().to_string();
    let key = aside_key.split("/teams/t/").nth(1).unwrap();
    let kept = kv::get(s.conn(), &n, key).unwrap().value.unwrap();
    assert_eq!(&kept[..], b"{not json");
    assert!(matches!(team.config(), Err(Error::TeamNotFound { .. })));
}

#[test]
fn a_task_that_does_not_parse_is_set_aside_and_its_id_stays_used() {
    let Some(server) = NatsServer::start_or_skip("corrupt task") else {
        return;
    };
    let s = store_on(&server, "badtask");
    let team = team_on(&s, "t");
    for subject in ["one", "two"] {
        team.create_task(NewTask {
            subject: subject.into(),
            ..Default::default()
        })
        .unwrap();
    }
    let n = s.names("t");
    kv::put(s.conn(), &n, "task.2", Bytes::from_static(b"[broken"), None).unwrap();
    // Listing skips it; reading names it.
    assert_eq!(team.list_tasks().unwrap().len(), 1);
    assert!(matches!(team.task("2"), Err(Error::Corrupt { .. })));
    // Changing it sets it aside.
    let err = team.claim_task("2", "w", false).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Corrupt {
                moved_to: Some(_),
                ..
            }
        ),
        "{err}"
    );
    assert!(team.task("2").is_err(), "gone after it was set aside");
    let three = team
        .create_task(NewTask {
            subject: "three".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(three.id, "3", "2 is not reused");
}

#[test]
fn an_unreadable_delivery_is_consumed_into_the_history_raw_and_the_rest_still_arrives() {
    let Some(server) = NatsServer::start_or_skip("corrupt delivery") else {
        return;
    };
    let s = store_on(&server, "badmail");
    let team = team_on(&s, "t");
    team.deliver("w", OutgoingMessage::new("team-lead", "before"))
        .unwrap();
    let n = s.names("t");
    s.conn()
        .publish(
            &n.mail_stream,
            &n.inbox("w"),
            HeaderMap::new(),
            Bytes::from_static(b"garbage"),
            None,
        )
        .unwrap();
    team.deliver("w", OutgoingMessage::new("team-lead", "after"))
        .unwrap();
    let texts: Vec<String> = team
        .take_unread("w")
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["before", "after"]);
    assert!(team.unread("w").unwrap().is_empty(), "nothing stuck");
    let last = s
        .conn()
        .last(&n.mail_stream, &n.outbox("w"))
        .unwrap()
        .unwrap();
    let record: serde_json::Value = serde_json::from_slice(&last.payload).unwrap();
    assert_eq!(record["unreadable"][0]["raw"], "garbage", "{record}");
}

#[test]
fn a_store_dropped_on_an_executor_thread_does_not_panic() {
    let Some(server) = NatsServer::start_or_skip("drop in runtime") else {
        return;
    };
    let url = NatsUrl::parse(&server.url("drop")).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        // Called (wrongly) on an executor thread: it blocks, it works.
        let s = NatsStore::connect(&url).unwrap();
        assert!(s.list_teams().unwrap().is_empty());
        drop(s);
    });
}

/// A TCP relay to the server on `upstream` that holds every chunk the
/// client sends for `delay` before passing it on (the server's side passes
/// at once): a server slow to read one connection, made certain. Returns
/// the relay's port; its threads end with its connections.
fn slow_relay(upstream: u16, delay: std::time::Duration) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
            let (mut from_server, mut to_client) =
                (server.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
                let _ = to_client.shutdown(Shutdown::Both);
            });
            let (tx, rx) = std::sync::mpsc::channel::<(std::time::Instant, Vec<u8>)>();
            let mut from_client = client;
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(k @ 1..) = from_client.read(&mut buf) {
                    if tx
                        .send((std::time::Instant::now() + delay, buf[..k].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            });
            let mut to_server = server;
            std::thread::spawn(move || {
                for (due, bytes) in rx {
                    std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
                    if to_server.write_all(&bytes).is_err() {
                        break;
                    }
                }
                let _ = to_server.shutdown(Shutdown::Both);
            });
        }
    });
    port
}

/// `watch` returns only once the server has the feed's subscription, even
/// when the server reads the feed's connection late: a write made right
/// after, through another connection, is heard. (A feed that only flushed
/// its socket missed it, and the teammate slept until its poll.)
#[test]
fn the_feed_hears_a_write_made_right_after_watch_when_the_server_reads_the_feed_late() {
    use crate::store::{StoreEvent, StoreObserver};
    use std::sync::{mpsc, Mutex};
    use std::time::Duration;
    let Some(server) = NatsServer::start_or_skip("feed on a slow connection") else {
        return;
    };
    let writer = store_on(&server, "slow");
    let team = team_on(&writer, "t");
    team.add_member(NewMember {
        name: "a".into(),
        ..Default::default()
    })
    .unwrap();
    let relay = slow_relay(server.port(), Duration::from_millis(300));
    let url = NatsUrl::parse(&format!("nats://127.0.0.1:{relay}/slow")).unwrap();
    let watcher = NatsStore::connect(&url).unwrap();

    struct Tell(Mutex<mpsc::Sender<StoreEvent>>);
    impl StoreObserver for Tell {
        fn changed(&self, e: &StoreEvent) {
            let _ = self.0.lock().unwrap().send(e.clone());
        }
    }
    let (tx, rx) = mpsc::channel();
    let _feed = Store::with_backend(Arc::new(watcher))
        .team("t")
        .unwrap()
        .watch(Arc::new(Tell(Mutex::new(tx))))
        .unwrap();
    team.deliver("a", OutgoingMessage::new("team-lead", "wake"))
        .unwrap();
    let want = StoreEvent::InboxAppended {
        team: "t".into(),
        agent: "a".into(),
    };
    loop {
        // Lost, it never comes; heard, it comes within the relay's delay.
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(e) if e == want => break,
            Ok(_) => continue,
            Err(e) => panic!("the delivery made right after watch() was not heard: {e}"),
        }
    }
}
