//! Fencing (issue 32) on a real NATS server with the real `echo`
//! component: a host whose lease another host took over stops its copy of
//! the teammate and writes nothing more, and says who took over; a holder
//! cut off from the server for longer than half a lease refuses writes
//! until a renewal succeeds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use teamhost::embed::lease::{HostIdentity, TeamLease};
use teamhost::embed::{Event, Host, HostOptions, SpawnRequest, TeammateState};
use teamhost::home::Home;
use teamhost::store::nats::NatsOptions;
use teamhost::store::{
    FencedStore, LeaseState, NatsStore, NatsUrl, NewMember, NewTask, NewTeam, OutgoingMessage,
    Store, TeamStore,
};
use teamhost::Error;
use teamhost_tests::nats_server::NatsServer;

fn connect(url: &str) -> NatsStore {
    NatsStore::connect(&NatsUrl::parse(url).unwrap()).unwrap()
}

/// Reads until `ok` holds or `within` passes; whether it held.
fn holds_within(within: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_host_whose_lease_is_taken_over_stops_its_teammate_and_writes_nothing_more() {
    let Some(server) = NatsServer::start_or_skip("fencing") else {
        return;
    };
    let url = server.url("fence");
    let dir = tempfile::tempdir().unwrap();
    let here = Store::with_backend(Arc::new(connect(&url)));
    let team = here.team("f").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "outsider".into(),
        ..Default::default()
    })
    .unwrap();
    let me = HostIdentity::new("host-a", 1);
    let opts = HostOptions {
        lease: Some(Duration::from_secs(1)),
        identity: Some(me.clone()),
        poll_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let host = Host::with_store(Home::new(dir.path().join("home")), here, opts).unwrap();
    assert_eq!(host.host_identity(), &me);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut events = host.events();
    rt.block_on(async {
        let req = SpawnRequest::new("echo", teamhost_tests::ECHO, "hello", &work);
        host.spawn("f", req).await.unwrap();
    });
    let lease = host.team_lease("f").expect("taken at the first spawn");
    assert_eq!(lease.length(), Duration::from_secs(1));

    // Host B, on its own connection: echo answers it while A holds the lease.
    let other = connect(&url);
    let theirs = Store::with_backend(Arc::new(other.clone()))
        .team("f")
        .unwrap();
    let answered = |text: &str| {
        theirs
            .read_inbox("outsider")
            .unwrap()
            .iter()
            .any(|m| m.from == "echo" && m.text == text)
    };
    theirs
        .send("echo", OutgoingMessage::new("outsider", "ping 0"))
        .unwrap();
    assert!(holds_within(Duration::from_secs(60), || answered("ping 0")));

    // B takes A's lease over at the revision it read (a renewal in between
    // moves it on: read again, as an adopter would).
    let failover = other.failover().unwrap();
    let taken_at = loop {
        let (mut l, rev) = failover
            .read_leases("f")
            .unwrap()
            .into_iter()
            .find(|(l, _)| l.host == me.id)
            .expect("A's lease is in the store");
        assert_eq!(l.state, LeaseState::Held);
        l.state = LeaseState::TakenOver {
            by: "host-b".into(),
            at: 0,
        };
        if let Some(rev) = failover.write_lease("f", &l, Some(rev)).unwrap() {
            break rev;
        }
    };

    // (c) A says who took over: the event, then every wait.
    let (by, stopped) = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Ok(Event::LeaseLost { team, by, stopped }) = events.recv().await {
                    assert_eq!(team, "f");
                    return (by, stopped);
                }
            }
        })
        .await
        .expect("A hears of the takeover within 10 s (renewals every 333 ms)")
    });
    assert_eq!((by.as_str(), stopped), ("host-b", vec!["echo".to_string()]));
    let waited = rt.block_on(host.wait_idle("f"));
    assert!(
        matches!(&waited, Err(Error::LeaseLost { by, .. }) if by == "host-b"),
        "{waited:?}"
    );
    assert!(waited.unwrap_err().to_string().contains("host-b"));
    // Then (after the event that says why) the copy stops.
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Ok(Event::StateChanged { name, state, .. }) = events.recv().await {
                    if name == "echo" && state == TeammateState::Killed {
                        return;
                    }
                }
            }
        })
        .await
        .expect("echo is stopped after the LeaseLost event")
    });
    assert_eq!(host.teammates("f")[0].state, TeammateState::Killed);
    assert!(host.team_lease("f").is_none());

    // (a) The lease and A's (fenced) store refuse every write.
    let lost = |r: teamhost::Result<()>| {
        assert!(
            matches!(&r, Err(Error::LeaseLost { by, .. }) if by == "host-b"),
            "{r:?}"
        )
    };
    lost(lease.check());
    let mine = host.store().team("f").unwrap();
    let lead_mail = theirs.read_inbox("team-lead").unwrap().len();
    lost(
        mine.send("outsider", OutgoingMessage::new("echo", "late"))
            .map(|_| ()),
    );
    lost(
        mine.create_task(NewTask {
            subject: "late".into(),
            ..Default::default()
        })
        .map(|_| ()),
    );
    lost(
        host.store()
            .backend()
            .failover()
            .unwrap()
            .remove_run("f", "echo", 1)
            .map(|_| ()),
    );

    // (b) A's copy is stopped: B's next message to echo stays unread (it
    // would be answered within one 100 ms poll, or at once by the feed), and
    // nothing of A's lands after the takeover.
    theirs
        .send("echo", OutgoingMessage::new("outsider", "ping 1"))
        .unwrap();
    assert!(
        !holds_within(Duration::from_secs(3), || answered("ping 1")),
        "a stopped copy answered"
    );
    let unread = theirs.read_inbox("echo").unwrap();
    assert!(
        unread.iter().any(|m| m.text == "ping 1" && !m.read),
        "ping 1 still waits for the adopter: {unread:?}"
    );
    assert_eq!(theirs.read_inbox("team-lead").unwrap().len(), lead_mail);
    assert!(!theirs
        .read_inbox("outsider")
        .unwrap()
        .iter()
        .any(|m| m.text == "late"));
    assert!(theirs.list_tasks().unwrap().is_empty());
    // A never renewed again: the lease record is B's write, unchanged.
    let record = failover.read_leases("f").unwrap();
    assert_eq!(record.len(), 1);
    assert_eq!(record[0].1, taken_at);
}

#[test]
fn a_holder_cut_off_past_half_a_lease_refuses_writes_until_a_renewal_succeeds() {
    let Some(mut server) = NatsServer::start_or_skip("paused holder") else {
        return;
    };
    let url = NatsUrl::parse(&server.url("paused")).unwrap();
    let quick = NatsOptions {
        retry_for: Duration::from_millis(500),
        request_timeout: Duration::from_millis(250),
        connect_timeout: Duration::from_secs(5),
        ..NatsOptions::default()
    };
    let plain = NatsStore::connect_with(&url, quick).unwrap();
    let plain: Arc<dyn TeamStore> = Arc::new(plain);
    Store::with_backend(plain.clone())
        .team("p")
        .unwrap()
        .create(NewTeam::default())
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let me = HostIdentity::new("host-a", 1);
    let lease = rt
        .block_on(TeamLease::take(
            plain.clone(),
            "p",
            &me,
            Duration::from_secs(1),
        ))
        .unwrap();
    let fenced = Store::with_backend(Arc::new(FencedStore::new(plain.clone(), lease.clone())));
    let team = fenced.team("p").unwrap();
    team.send("team-lead", OutgoingMessage::new("a", "before"))
        .unwrap();

    server.stop();
    // Past half a lease without a renewal, a write renews first, cannot,
    // and is refused; nothing says another host took over, so the error is
    // the store's, and the lease is not lost.
    let refused = holds_within(Duration::from_secs(10), || lease.check().is_err());
    assert!(
        refused,
        "a check past half a lease fails while the server is down"
    );
    let err = team
        .send("team-lead", OutgoingMessage::new("a", "cut off"))
        .unwrap_err();
    assert!(matches!(err, Error::StoreUnavailable { .. }), "{err:?}");
    assert_eq!(*lease.lost().borrow(), None);

    server.restart();
    // The next renewal (the renewer's or a check's) succeeds: writes again.
    let mut last = None;
    let renewed = holds_within(Duration::from_secs(30), || match lease.check() {
        Ok(()) => true,
        Err(e) => {
            last = Some(e);
            false
        }
    });
    assert!(
        renewed,
        "a renewal succeeds once the server is back: {last:?}"
    );
    team.send("team-lead", OutgoingMessage::new("a", "after"))
        .unwrap();
    let texts: Vec<String> = Store::with_backend(plain)
        .team("p")
        .unwrap()
        .read_inbox("team-lead")
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["before", "after"]);
    lease.release().unwrap();
}

/// `teamhost run --join` with a 1 s lease: once another host takes its
/// lease over, the run stops its teammate, ends with an error naming the
/// adopting host, and writes nothing more (the lease record stays the
/// adopter's write; nothing reaches the lead). Out-of-range leases are
/// refused before anything runs.
#[test]
fn a_joined_run_whose_lease_is_taken_over_ends_naming_the_adopting_host() {
    let bin = env!("CARGO_BIN_EXE_teamhost");
    for bad in ["0", "301"] {
        let out = std::process::Command::new(bin)
            .args(["run", "--lease", bad, "none.toml"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("--lease"), "{err}");
    }
    let Some(server) = NatsServer::start_or_skip("run --join fenced") else {
        return;
    };
    let url = server.url("clifence");
    let dir = tempfile::tempdir().unwrap();
    let store = connect(&url);
    let team = Store::with_backend(Arc::new(store.clone()))
        .team("cf")
        .unwrap();
    team.create(NewTeam::default()).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let manifest = dir.path().join("join.toml");
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = \"cf\"\nstore = {url:?}\n[[teammate]]\nname = \"echo\"\ncomponent = {:?}\nprompt = \"hi\"\ncwd = {:?}\n",
            teamhost_tests::ECHO,
            work
        ),
    )
    .unwrap();
    let child = std::process::Command::new(bin)
        .arg("--home")
        .arg(dir.path().join("home"))
        .args([
            "--json",
            "run",
            "--join",
            "--lease",
            "1",
            "--timeout",
            "120",
        ])
        .arg(&manifest)
        .env_remove("TEAMHOST_STORE")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    // Running: echo answered its prompt and went idle (its idle
    // notification is the last thing its turn writes: counted before it,
    // the lead's mail could still legitimately grow within the lease), and
    // the run's lease is held.
    let failover = store.failover().unwrap();
    let up = holds_within(Duration::from_secs(120), || {
        team.read_inbox("team-lead")
            .unwrap()
            .iter()
            .any(|m| m.from == "echo" && m.text.contains("idle_notification"))
            && failover
                .read_leases("cf")
                .unwrap()
                .iter()
                .any(|(l, _)| l.state == LeaseState::Held)
    });
    assert!(up, "the joined run starts echo and holds a lease");
    let lead_mail = team.read_inbox("team-lead").unwrap().len();
    let taken_at = loop {
        let (mut l, rev) = failover.read_leases("cf").unwrap().remove(0);
        l.state = LeaseState::TakenOver {
            by: "host-b".into(),
            at: 0,
        };
        if let Some(rev) = failover.write_lease("cf", &l, Some(rev)).unwrap() {
            break rev;
        }
    };
    let out = done
        .recv_timeout(Duration::from_secs(60))
        .expect("the run ends within 60 s of the takeover")
        .unwrap();
    let shown = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains("taken over by host host-b"),
        "the run names the adopting host:\n{shown}"
    );
    assert!(
        shown.contains("this host's lease was taken over by host host-b: echo stopped here"),
        "the run's log says what stopped:\n{shown}"
    );
    let leases = failover.read_leases("cf").unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].1, taken_at, "the run wrote its lease no more");
    assert_eq!(team.read_inbox("team-lead").unwrap().len(), lead_mail);
}
