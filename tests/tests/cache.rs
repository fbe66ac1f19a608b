//! The component cache: a component is compiled once per content hash, its
//! precompiled artifact is kept under `{home}/cache/components`, and a later
//! host (a fresh process) loads that artifact instead of compiling again.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::Fixture;
use teamhost::embed::Host;
use teamhost::home::Home;

fn artifacts(home: &Path) -> Vec<PathBuf> {
    let dir = home.join("cache").join("components");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no cache directory {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .filter(|p| !p.to_string_lossy().ends_with(".sha256"))
        .collect();
    found.sort();
    found
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

/// Backdates `path`, so that any rewrite of it shows in its mtime whatever the
/// file system's timestamp resolution.
fn backdate(path: &Path) -> SystemTime {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(mtime(path), old);
    old
}

fn sha256_prefix(path: &Path) -> String {
    // The artifact is named `{sha256 of the component}-{engine hash}.cwasm`.
    path.file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .split('-')
        .next()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_spawned_twice_is_compiled_once_and_a_new_host_reuses_the_artifact() {
    let f = Fixture::new("cache");
    f.probe("one", "first").await;
    let found = artifacts(&f.home);
    assert_eq!(found.len(), 1, "{found:?}");
    let artifact = found[0].clone();
    assert_eq!(sha256_prefix(&artifact).len(), 64, "{artifact:?}");
    let old = backdate(&artifact);

    // The same component again in this host: no second artifact, no rewrite.
    f.probe("two", "second").await;
    assert_eq!(artifacts(&f.home), std::slice::from_ref(&artifact));
    assert_eq!(mtime(&artifact), old);

    // Another component gets its own artifact.
    let echo_dir = f.dir("echo");
    let mut echo =
        teamhost::embed::SpawnRequest::new("echo", teamhost_tests::ECHO, "hi", &echo_dir);
    echo.settings.auto_claim = false;
    f.host.spawn("cache", echo).await.unwrap();
    assert_eq!(artifacts(&f.home).len(), 2);
    f.settle().await;

    // A second host over the same home starts with an empty in-memory cache:
    // it loads the artifact from disk and does not compile (compiling would
    // replace the file).
    let fresh = Host::new(Home::new(&f.home)).unwrap();
    fresh
        .runtime()
        .cache()
        .load(Path::new(teamhost_tests::PROBE))
        .unwrap();
    assert_eq!(mtime(&artifact), old, "the artifact was rewritten");
    assert_eq!(artifacts(&f.home).len(), 2);
    // And it runs teammates from it.
    let dir = f.dir("three");
    fresh
        .spawn("cache", common::probe_request("three", "third", &dir))
        .await
        .unwrap();
    bounded_idle(&fresh, "cache").await;
    assert_eq!(common::turns(&dir).len(), 1);
    assert_eq!(mtime(&artifact), old);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_artifact_is_compiled_again_and_replaced() {
    let f = Fixture::new("cache-bad");
    f.probe("one", "first").await;
    let artifact = artifacts(&f.home).remove(0);
    std::fs::write(&artifact, b"not a precompiled component").unwrap();
    let old = backdate(&artifact);

    let fresh = Host::new(Home::new(&f.home)).unwrap();
    let dir = f.dir("two");
    fresh
        .spawn("cache-bad", common::probe_request("two", "second", &dir))
        .await
        .unwrap();
    bounded_idle(&fresh, "cache-bad").await;
    assert_eq!(common::turns(&dir).len(), 1);
    assert_eq!(artifacts(&f.home), std::slice::from_ref(&artifact));
    assert_ne!(
        mtime(&artifact),
        old,
        "the damaged artifact was not replaced"
    );
    assert!(std::fs::metadata(&artifact).unwrap().len() > 1024);
}

/// An artifact swapped for another valid one (the echo component's, which
/// wasmtime would load without complaint) is not what its digest says: it
/// is compiled again from the component the host was asked to run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_artifact_is_refused_by_its_digest_and_the_real_component_runs() {
    let f = Fixture::new("cache-swap");
    f.probe("one", "first").await;
    let probe_artifact = artifacts(&f.home).remove(0);
    let echo_dir = f.dir("echo");
    let mut echo =
        teamhost::embed::SpawnRequest::new("echo", teamhost_tests::ECHO, "hi", &echo_dir);
    echo.settings.auto_claim = false;
    f.host.spawn("cache-swap", echo).await.unwrap();
    f.settle().await;
    let echo_artifact = artifacts(&f.home)
        .into_iter()
        .find(|a| *a != probe_artifact)
        .unwrap();
    // Both files are well-formed artifacts of this engine: only the digest
    // tells them apart.
    std::fs::copy(&echo_artifact, &probe_artifact).unwrap();
    let digest = |p: &Path| std::fs::read_to_string(format!("{}.sha256", p.display())).unwrap();
    assert_eq!(digest(&probe_artifact).len(), 64);

    let fresh = Host::new(Home::new(&f.home)).unwrap();
    let dir = f.dir("two");
    fresh
        .spawn("cache-swap", common::probe_request("two", "second", &dir))
        .await
        .unwrap();
    bounded_idle(&fresh, "cache-swap").await;
    // The probe ran (echo writes no turn log), and the artifact is the
    // probe's again.
    assert_eq!(common::turns(&dir).len(), 1);
    assert_ne!(
        std::fs::read(&probe_artifact).unwrap(),
        std::fs::read(&echo_artifact).unwrap()
    );
}

/// One byte flipped in the middle of an artifact (native code wasmtime
/// would map without noticing) no longer matches its digest: the artifact is
/// never loaded, the component is compiled again and runs correctly, and the
/// artifact on disk is the original again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_with_one_byte_flipped_is_never_loaded_and_is_compiled_again() {
    let f = Fixture::new("cache-flip");
    f.probe("one", "first").await;
    let artifact = artifacts(&f.home).remove(0);
    let original = std::fs::read(&artifact).unwrap();
    let mut flipped = original.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    std::fs::write(&artifact, &flipped).unwrap();

    let fresh = Host::new(Home::new(&f.home)).unwrap();
    let dir = f.dir("two");
    fresh
        .spawn("cache-flip", common::probe_request("two", "second", &dir))
        .await
        .unwrap();
    bounded_idle(&fresh, "cache-flip").await;
    assert_eq!(common::turns(&dir).len(), 1);
    assert_eq!(std::fs::read(&artifact).unwrap(), original);
}

async fn bounded_idle(host: &Host, team: &str) {
    common::bounded("the fresh host to settle", host.wait_idle(team))
        .await
        .unwrap();
}
