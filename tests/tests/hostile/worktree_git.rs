//! Hostile tests: a teammate isolated in a git worktree owns every file of
//! it, `.git` included. It points `.git` at a git directory of its own whose
//! config would run a command as the host's user (`core.fsmonitor`) the
//! moment the host ran `git status` there the ordinary way. The host's git
//! (cleanup, the clean check) is pinned to the git directory it recorded, so
//! the command never runs.

use std::path::Path;
use std::process::Command;

use teamhost::embed::Isolation;

use crate::sandbox_support::{hostile_request, step, wait_done, Arena};

/// `git -C dir ARGS`, as a user (not the host) would run it.
pub(super) fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
}

/// A repository `{root}/repo` with one commit.
pub(super) fn repo(root: &Path) -> std::path::PathBuf {
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for args in [
        &["init", "-q"][..],
        &["config", "user.email", "t@example.com"],
        &["config", "user.name", "t"],
    ] {
        assert!(git(&repo, args).status.success());
    }
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    assert!(git(&repo, &["add", "README"]).status.success());
    assert!(git(&repo, &["commit", "-q", "-m", "init"]).status.success());
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_git_never_runs_what_a_teammate_planted_in_its_worktree() {
    let a = Arena::new("worktree-git").await;
    let repo = repo(a.f.tmp.path());
    let markers = a.f.tmp.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let marker = markers.join("fsmonitor-ran");

    // One teammate plants a git directory with an fsmonitor command and
    // points `.git` at it; another only breaks `.git` and changes nothing
    // else (so its worktree is clean and gets removed).
    let plant = format!(
        "bash-run git init -q --bare fake && git --git-dir=fake config core.bare false && \
         git --git-dir=fake config core.fsmonitor 'touch {m} #' && \
         git --git-dir=fake config core.hooksPath hooks && echo 'gitdir: fake' > .git && echo planted",
        m = marker.display()
    );
    let mut req = hostile_request("planter", &plant, &repo, "bypassPermissions");
    req.isolation = Isolation::Worktree;
    let planter = a.spawn(req).await;
    let mut req = hostile_request(
        "breaker",
        "bash-run echo 'gitdir: /nonexistent' > .git && echo broken",
        &repo,
        "bypassPermissions",
    );
    req.isolation = Isolation::Worktree;
    let breaker = a.spawn(req).await;
    let got = wait_done(&a.f, &planter, "bash-run", 1).await;
    assert!(
        step(&got, "bash-run").detail.contains("planted"),
        "{got:#?}"
    );
    let got = wait_done(&a.f, &breaker, "bash-run", 1).await;
    assert!(step(&got, "bash-run").detail.contains("broken"), "{got:#?}");

    let planted_wt =
        teamhost::worktree::path(&teamhost::home::Home::new(&a.f.home), &a.f.name, &planter);
    let broken_wt =
        teamhost::worktree::path(&teamhost::home::Home::new(&a.f.home), &a.f.name, &breaker);
    // The attack is real: git run the ordinary way in that worktree obeys
    // the planted config.
    git(&planted_wt, &["status", "--porcelain"]);
    assert!(
        marker.exists(),
        "the control run did not fire the planted command"
    );
    std::fs::remove_file(&marker).unwrap();

    // The breaker's only change is the guest's own results file: take it
    // away, so its worktree is clean but for the broken `.git`.
    std::fs::remove_file(broken_wt.join("results.log")).unwrap();
    let home = teamhost::home::Home::new(&a.f.home);
    let team = a.f.name.clone();
    let report = tokio::task::spawn_blocking(move || teamhost::worktree::cleanup(&home, &team))
        .await
        .unwrap()
        .unwrap();
    assert!(
        !marker.exists(),
        "the host's git ran the teammate's fsmonitor"
    );
    assert!(
        std::fs::read_dir(&markers).unwrap().next().is_none(),
        "the planted command left files"
    );
    // The planted worktree has changes (its `fake/`): kept. The broken one
    // is clean by the host's own reading: removed, with its branch, though
    // git no longer recognised it.
    assert_eq!(report.kept, vec![planted_wt.clone()], "{report:?}");
    assert_eq!(report.removed, vec![broken_wt.clone()], "{report:?}");
    assert!(!broken_wt.exists());
    let branches = String::from_utf8(git(&repo, &["branch", "--list"]).stdout).unwrap();
    assert!(
        !branches.contains(&format!("teamhost/{}/{breaker}", a.f.name)),
        "{branches}"
    );
    assert!(
        branches.contains(&format!("teamhost/{}/{planter}", a.f.name)),
        "{branches}"
    );
    a.assert_contained().await;
}
