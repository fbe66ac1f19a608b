//! `Failover` on a real NATS server: leases and run records raced over two
//! connections, revisions after a deletion, the component shelf's round
//! trip and its refusal of a changed chunk.

use std::sync::Arc;

use async_nats::HeaderMap;
use bytes::Bytes;

use super::*;
use crate::error::Error;
use crate::store::failover::{content_hash, Failover, HostLease, LeaseState, RunRecord};
use crate::store::{NewTeam, Store};
use teamhost_tests::nats_server::NatsServer;

fn store_on(server: &NatsServer, prefix: &str) -> NatsStore {
    NatsStore::connect(&NatsUrl::parse(&server.url(prefix)).unwrap()).unwrap()
}

fn lease(host: &str, state: LeaseState) -> HostLease {
    HostLease {
        host: host.into(),
        hostname: "here".into(),
        pid: 7,
        lease_ms: 1000,
        renewed_at: 1,
        state,
    }
}

fn run(name: &str, host: &str) -> RunRecord {
    RunRecord {
        name: name.into(),
        host: host.into(),
        generation: 1,
        component_sha256: content_hash(b"x"),
        component_name: "x.wasm".into(),
        cwd: "/tmp".into(),
        worktree: false,
        settings: serde_json::Value::Null,
        started_at: 1,
        adopted_from: None,
        lead: None,
    }
}

#[test]
fn leases_are_compare_and_swapped_across_two_connections() {
    let Some(server) = NatsServer::start_or_skip("failover leases") else {
        return;
    };
    let (a, b) = (store_on(&server, "fo"), store_on(&server, "fo"));
    Store::with_backend(Arc::new(a.clone()))
        .team("t")
        .unwrap()
        .create(NewTeam::default())
        .unwrap();
    // Two creators of one lease key: one wins.
    let held = lease("h-1.x", LeaseState::Held);
    let ra = a.write_lease("t", &held, None).unwrap();
    let rb = b.write_lease("t", &held, None).unwrap();
    assert!(ra.is_some() && rb.is_none(), "{ra:?} {rb:?}");
    let r1 = ra.unwrap();
    // A renewal by the holder and a takeover by another host, both at r1:
    // one wins, the other reads again.
    let renewed = a.write_lease("t", &held, Some(r1)).unwrap();
    let taken = lease(
        "h-1.x",
        LeaseState::TakenOver {
            by: "b".into(),
            at: 2,
        },
    );
    assert_eq!(b.write_lease("t", &taken, Some(r1)).unwrap(), None);
    let r2 = renewed.unwrap();
    assert!(r2 > r1);
    let r3 = b.write_lease("t", &taken, Some(r2)).unwrap().unwrap();
    assert_eq!(a.read_leases("t").unwrap(), vec![(taken, r3)]);
    // A second host's lease sits beside it, in host order.
    b.write_lease("t", &lease("a-2", LeaseState::Held), None)
        .unwrap()
        .unwrap();
    let hosts: Vec<String> = a
        .read_leases("t")
        .unwrap()
        .into_iter()
        .map(|(l, _)| l.host)
        .collect();
    assert_eq!(hosts, ["a-2", "h-1.x"]);
    // No team, no bucket: nothing to read, and a write makes none.
    assert!(a.read_leases("nope").unwrap().is_empty());
    let refused = a.write_lease("nope", &held, None);
    assert!(
        matches!(refused, Err(Error::TeamNotFound { .. })),
        "{refused:?}"
    );
    assert!(a.list_teams().unwrap() == ["t"]);
}

#[test]
fn a_removed_run_record_is_created_again_over_its_deletion() {
    let Some(server) = NatsServer::start_or_skip("failover runs") else {
        return;
    };
    let (a, b) = (store_on(&server, "fr"), store_on(&server, "fr"));
    let team = Store::with_backend(Arc::new(a.clone())).team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    let r1 = a.write_run("t", &run("w", "a"), None).unwrap().unwrap();
    // The adopter's rewrite at r1; the old holder's removal at r1 then loses.
    let mut adopted = run("w", "b");
    adopted.generation = 2;
    adopted.adopted_from = Some("a".into());
    let r2 = b.write_run("t", &adopted, Some(r1)).unwrap().unwrap();
    assert!(!a.remove_run("t", "w", r1).unwrap());
    assert_eq!(a.read_runs("t").unwrap(), vec![(adopted.clone(), r2)]);
    assert!(b.remove_run("t", "w", r2).unwrap());
    assert!(!b.remove_run("t", "w", r2).unwrap(), "removed once");
    assert!(a.read_runs("t").unwrap().is_empty());
    // The key keeps its deletion's revision: a create expects it, and a
    // replace naming the deletion's revision (no record's) loses.
    let r4 = a.write_run("t", &run("w", "a"), None).unwrap().unwrap();
    assert!(r4 > r2);
    assert_eq!(b.write_run("t", &run("w", "b"), None).unwrap(), None);
    // Deleting the team takes the records with its bucket.
    a.write_lease("t", &lease("a", LeaseState::Held), None)
        .unwrap()
        .unwrap();
    team.delete(true).unwrap();
    assert!(b.read_runs("t").unwrap().is_empty());
    assert!(b.read_leases("t").unwrap().is_empty());
}

#[test]
fn a_3_mib_component_round_trips_and_a_changed_chunk_is_refused() {
    let Some(server) = NatsServer::start_or_skip("component shelf") else {
        return;
    };
    let (a, b) = (store_on(&server, "fs"), store_on(&server, "fs"));
    let bytes: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|_| fastrand::u8(..))
        .collect();
    let sha = a.put_component(&bytes).unwrap();
    assert_eq!(sha, content_hash(&bytes));
    assert_eq!(b.get_component(&sha).unwrap().as_deref(), Some(&bytes[..]));
    // Stored once: a second put (from either connection) adds nothing.
    let n = shelf::ShelfNames::new("fs");
    let count = |s: &NatsStore| {
        s.conn()
            .api(
                &format!("STREAM.INFO.{}", n.stream),
                serde_json::Value::Null,
            )
            .unwrap()["state"]["messages"]
            .as_u64()
            .unwrap()
    };
    let before = count(&a);
    assert_eq!(before, 13 + 1, "13 chunks of 256 KiB and a manifest");
    assert_eq!(b.put_component(&bytes).unwrap(), sha);
    assert_eq!(count(&a), before);
    // Unknown and malformed hashes.
    assert_eq!(a.get_component(&content_hash(b"never")).unwrap(), None);
    let bad = a.get_component("../x");
    assert!(matches!(bad, Err(Error::StoreRule(_))), "{bad:?}");
    // Someone with the store's credentials changes one chunk of another
    // component: that one is refused, naming both hashes; the first is intact.
    let other: Vec<u8> = (0..600 * 1024).map(|i| (i % 251) as u8).collect();
    let other_sha = a.put_component(&other).unwrap();
    a.conn()
        .publish(
            &n.stream,
            &n.chunk(&other_sha, 1),
            HeaderMap::new(),
            Bytes::from(vec![0u8; 256 * 1024]),
            None,
        )
        .unwrap();
    match b.get_component(&other_sha) {
        Err(e @ Error::Corrupt { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(&other_sha) && text.contains("hash to"),
                "{text}"
            );
        }
        other => panic!(
            "expected Corrupt, got {:?}",
            other.map(|b| b.map(|b| b.len()))
        ),
    }
    assert_eq!(a.get_component(&sha).unwrap().as_deref(), Some(&bytes[..]));
}
