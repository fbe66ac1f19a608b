//! `isolation = worktree`: each teammate works in its own git worktree; on team
//! delete, clean worktrees go and ones with changes stay.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use teamhost::embed::{Host, Isolation, SpawnRequest, TeammateSettings};
use teamhost::home::Home;
use teamhost::store::NewTeam;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktrees_with_changes_are_kept_and_clean_ones_removed_on_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    git(&repo, &["config", "user.name", "t"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "init"]);

    let home = tmp.path().join("home");
    let host = Host::new(Home::new(&home)).unwrap();
    host.create_team("wt", NewTeam::default()).unwrap();
    let spawn = |name: &str, component: &str, mode: &str| SpawnRequest {
        settings: TeammateSettings {
            mode: Some(mode.parse().unwrap()),
            auto_claim: false,
            ..Default::default()
        },
        isolation: Isolation::Worktree,
        ..SpawnRequest::new(name, component, "hello", &repo)
    };
    // probe appends to turns.log in its directory (a change); echo writes nothing.
    host.spawn("wt", spawn("probe", teamhost_tests::PROBE, "acceptEdits"))
        .await
        .unwrap();
    host.spawn("wt", spawn("echo", teamhost_tests::ECHO, "default"))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), host.wait_idle("wt"))
        .await
        .unwrap()
        .unwrap();

    let probe_wt = home.join("worktrees/wt/probe");
    let echo_wt = home.join("worktrees/wt/echo");
    let config = host.team("wt").unwrap().config().unwrap();
    let member = config.member("probe").unwrap();
    assert_eq!(
        member.worktree_path.as_deref(),
        Some(probe_wt.to_str().unwrap())
    );
    assert!(
        probe_wt.join("README").is_file(),
        "a checkout of the repository"
    );
    assert!(
        probe_wt.join("turns.log").is_file(),
        "the probe worked in its worktree"
    );
    assert!(
        !repo.join("turns.log").exists(),
        "not in the repository itself"
    );
    assert!(git(&repo, &["branch", "--list", "teamhost/wt/*"]).contains("teamhost/wt/probe"));

    host.shutdown_team("wt", "done", Duration::from_secs(10))
        .await
        .unwrap();
    let cleanup = host.delete_team("wt").await.unwrap();
    assert_eq!(cleanup.kept, vec![probe_wt.clone()]);
    assert_eq!(cleanup.removed, vec![echo_wt.clone()]);
    assert!(
        probe_wt.join("turns.log").is_file(),
        "work is never thrown away"
    );
    assert!(!echo_wt.exists());
    let branches = git(&repo, &["branch", "--list", "teamhost/wt/*"]);
    assert!(!branches.contains("teamhost/wt/echo"), "{branches}");
    assert!(
        git(&repo, &["status", "--porcelain"]).trim().is_empty(),
        "the repository is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktree_isolation_outside_a_repository_is_refused_and_registers_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let host = Host::new(Home::new(tmp.path().join("home"))).unwrap();
    host.create_team("wt", NewTeam::default()).unwrap();
    let req = SpawnRequest {
        isolation: Isolation::Worktree,
        settings: TeammateSettings {
            auto_claim: false,
            ..Default::default()
        },
        ..SpawnRequest::new("echo", teamhost_tests::ECHO, "hi", tmp.path())
    };
    let err = host.spawn("wt", req).await.unwrap_err().to_string();
    assert!(err.contains("git repository"), "{err}");
    assert_eq!(
        host.team("wt").unwrap().config().unwrap().member_names(),
        ["team-lead"]
    );
}
