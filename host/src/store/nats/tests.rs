//! NATS-only behaviour, on a server of the test's own: what the contract
//! tests cannot say about other backends (bad values set aside, errors
//! naming the server, concurrent claims on separate connections).

use std::sync::Arc;

use super::*;
use crate::store::{NewTeam, Store};
use teamhost_tests::nats_server::NatsServer;

fn store_on(server: &NatsServer, prefix: &str) -> NatsStore {
    NatsStore::connect(&NatsUrl::parse(&server.url(prefix)).unwrap()).unwrap()
}

#[test]
fn debug_deleted_team_reads_fast() {
    let Some(server) = NatsServer::start_or_skip("debug") else {
        return;
    };
    let s = store_on(&server, "d");
    let store = Store::with_backend(Arc::new(s.clone()));
    let team = store.team("x").unwrap();
    team.create(NewTeam::default()).unwrap();
    let t = std::time::Instant::now();
    team.delete(true).unwrap();
    eprintln!("delete {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let r = s.read_config("x");
    eprintln!("read {:?} {:?}", t.elapsed(), r.map(|c| c.is_some()));
}
