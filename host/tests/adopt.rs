//! [`Host::adopt`] on the memory store, in one process: a dead host's
//! lease and run records are written as it would have left them (its
//! renewals stopped), and a real host takes its teammates over with the
//! real `probe` component: the lease taken, the record rewritten, the task
//! in progress handed back and completed once, its component fetched from
//! the store's shelf by hash, a component whose hash matches nothing
//! refused (naming both hashes), a released lease left
//! alone, the lead told once. The end-to-end failover with real processes
//! and a real server is in `failover.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use teamhost::embed::{Host, HostOptions, LeaseWatch, TeammateSettings, LEASE_POLL};
use teamhost::home::Home;
use teamhost::sandbox::PermissionMode;
use teamhost::store::failover::content_hash;
use teamhost::store::{
    Failover, HostLease, LeaseState, MemoryStore, NewMember, NewTask, NewTeam, RunRecord, Store,
    TaskStatus, TaskUpdate, TeamStore,
};

fn lease(host: &str, ms: u64, state: LeaseState) -> HostLease {
    HostLease {
        host: host.into(),
        hostname: "gone-machine".into(),
        pid: 4242,
        lease_ms: ms,
        renewed_at: 0,
        state,
    }
}

fn run(name: &str, host: &str, sha: &str, cwd: &std::path::Path) -> RunRecord {
    RunRecord {
        name: name.into(),
        host: host.into(),
        generation: 1,
        component_sha256: sha.into(),
        component_name: "probe.wasm".into(),
        cwd: cwd.to_path_buf(),
        worktree: false,
        settings: serde_json::to_value(TeammateSettings {
            mode: Some(PermissionMode::AcceptEdits),
            ..Default::default()
        })
        .unwrap(),
        started_at: 0,
        adopted_from: None,
        lead: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_takes_over_an_expired_lease_and_hands_the_task_back() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(MemoryStore::new());
    let store = Store::with_backend(memory.clone());
    let team = store.team("ft").unwrap();
    team.create(NewTeam::default()).unwrap();
    let probe = PathBuf::from(teamhost_tests::PROBE);
    let sha = content_hash(&std::fs::read(&probe).unwrap());
    let mut dirs = Vec::new();
    for name in ["p", "q", "r"] {
        let cwd = dir.path().join("work").join(name);
        std::fs::create_dir_all(&cwd).unwrap();
        team.add_member(NewMember {
            name: name.into(),
            cwd: Some(cwd.to_string_lossy().into()),
            ..Default::default()
        })
        .unwrap();
        dirs.push(cwd);
    }
    let task = team
        .create_task(NewTask {
            subject: "Step 1".into(),
            ..Default::default()
        })
        .unwrap();
    team.update_task(
        &task.id,
        TaskUpdate {
            status: Some(TaskStatus::InProgress),
            owner: Some(Some("p".into())),
            ..Default::default()
        },
        "p",
    )
    .unwrap();
    // Host A died holding p and q (q's component is one this host lacks);
    // host C ended cleanly with r.
    let f: &dyn Failover = memory.failover().unwrap();
    f.write_lease("ft", &lease("host-a", 400, LeaseState::Held), None)
        .unwrap()
        .unwrap();
    f.write_lease("ft", &lease("host-c", 400, LeaseState::Released), None)
        .unwrap()
        .unwrap();
    let other = "0".repeat(64);
    f.write_run("ft", &run("p", "host-a", &sha, &dirs[0]), None)
        .unwrap()
        .unwrap();
    f.write_run("ft", &run("q", "host-a", &other, &dirs[1]), None)
        .unwrap()
        .unwrap();
    f.write_run("ft", &run("r", "host-c", &sha, &dirs[2]), None)
        .unwrap()
        .unwrap();

    let host = Host::with_store(
        Home::new(dir.path().join("home-b")),
        store.clone(),
        HostOptions {
            lease: Some(Duration::from_secs(2)),
            ..Default::default()
        },
    )
    .unwrap();
    let mut watch = LeaseWatch::new();
    let began = Instant::now();
    // This host names only the worker's file: p's component comes from the
    // store's shelf (put there by its host at spawn), checked by hash.
    let worker = PathBuf::from(teamhost_tests::WORKER);
    let worker_sha = content_hash(&std::fs::read(&worker).unwrap());
    assert_eq!(
        f.put_component(&std::fs::read(&probe).unwrap()).unwrap(),
        sha
    );
    let reports = loop {
        let r = host
            .adopt("ft", std::slice::from_ref(&worker), &mut watch)
            .await
            .unwrap();
        if !r.is_empty() {
            break r;
        }
        assert!(began.elapsed() < Duration::from_secs(20), "never adopted");
        tokio::time::sleep(LEASE_POLL).await;
    };
    let waited = began.elapsed();
    assert!(
        waited >= Duration::from_millis(400),
        "taken before a whole lease passed: {waited:?}"
    );
    assert_eq!(reports.len(), 1, "{reports:?}");
    let report = &reports[0];
    assert_eq!(report.from, "host-a");
    assert_eq!(report.adopted, ["p"]);
    assert_eq!(report.handed_back, [(task.id.clone(), "p".to_string())]);
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert_eq!(report.refused[0].0, "q");
    let why = &report.refused[0].1;
    assert!(why.contains(&other) && why.contains(&worker_sha), "{why}");
    assert!(
        dir.path()
            .join(format!("home-b/cache/components/shelf/{sha}.wasm"))
            .is_file(),
        "p ran from the shelf's copy"
    );

    // The records: A's lease taken over by this host, p's record names
    // this host at generation 2, q's still names A, r's is C's.
    let me = host.host_identity().id.clone();
    let leases = f.read_leases("ft").unwrap();
    let a = leases.iter().find(|(l, _)| l.host == "host-a").unwrap();
    assert!(
        matches!(&a.0.state, LeaseState::TakenOver { by, .. } if *by == me),
        "{a:?}"
    );
    let b = leases.iter().find(|(l, _)| l.host == me).unwrap();
    assert_eq!(b.0.state, LeaseState::Held, "this host holds its own lease");
    let runs = f.read_runs("ft").unwrap();
    let p = runs.iter().find(|(r, _)| r.name == "p").unwrap();
    assert_eq!(
        (
            p.0.host.as_str(),
            p.0.generation,
            p.0.adopted_from.as_deref()
        ),
        (me.as_str(), 2, Some("host-a"))
    );
    let q = runs.iter().find(|(r, _)| r.name == "q").unwrap();
    assert_eq!(q.0.host, "host-a");
    let r = runs.iter().find(|(r, _)| r.name == "r").unwrap();
    assert_eq!(r.0.host, "host-c");

    // The task handed back is completed, once (the probe notes it in
    // completed.log after its update).
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let t = team.list_tasks().unwrap();
        let log = std::fs::read_to_string(dirs[0].join("completed.log")).unwrap_or_default();
        if t[0].status == TaskStatus::Completed && !log.is_empty() {
            break log;
        }
        assert!(
            Instant::now() < deadline,
            "not completed: {t:?}\nguest log:\n{}\nturns: {:?}",
            std::fs::read_to_string(dir.path().join("home-b/logs/ft/p.log")).unwrap_or_default(),
            std::fs::read_to_string(dirs[0].join("turns.log"))
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done.lines().collect::<Vec<_>>(), [task.id.as_str()]);
    let running: Vec<String> = host.teammates("ft").into_iter().map(|t| t.name).collect();
    assert_eq!(running, ["p"], "only p runs here");

    // The lead heard it once, from the host, naming who moved from where.
    let told: Vec<_> = team
        .read_inbox("team-lead")
        .unwrap()
        .into_iter()
        .filter(|m| m.from == "teamhost")
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    let text = &told[0].text;
    for needle in ["host-a", me.as_str(), "p now run", "q NOT taken over"] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }

    // Looking again takes nothing more: A's lease is taken, C's released.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let again = host.adopt("ft", &[worker], &mut watch).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
    host.shutdown_team("ft", "done", Duration::from_secs(10))
        .await
        .unwrap();
}
