//! Hostile tests: the host never runs or reads what a teammate can write.
//! A teammate can write everything in its directory, so a layout in which
//! that directory holds the manifest, a component, the home or the component
//! cache is refused at start, by the library's `Host::spawn` (embedders) and
//! by `teamhost run`, with an error naming both paths; nothing of the team
//! starts. And a worktree teammate that swaps its `.git` file for a git
//! directory of its own (config with fsmonitor, pager, alias, hooks) gets
//! none of it run by the host's git when the team is deleted.

use std::path::Path;

use teamhost::embed::{HostOptions, Isolation};

use super::worktree_git::{git, repo};
use crate::common::Fixture;
use crate::sandbox_support::{cli, hostile_request, snapshot, step, wait_done, Arena};

/// Asserts `error` names `a` and `b` (as given) and says how to fix it.
fn names_both(error: &str, a: &Path, b: &Path) {
    assert!(error.contains(&a.display().to_string()), "{a:?}: {error}");
    assert!(error.contains(&b.display().to_string()), "{b:?}: {error}");
    assert!(
        error.contains("Move the") || error.contains("outside the home"),
        "no fix given: {error}"
    );
}

/// Spawns `hostile` in `dir` and returns the refusal; the team gained no
/// member.
async fn refused(f: &Fixture, req: teamhost::embed::SpawnRequest) -> String {
    let name = req.name.clone();
    let e = f
        .host
        .spawn(&f.name, req)
        .await
        .expect_err("the layout was accepted")
        .to_string();
    let config = f.team.config().unwrap();
    assert!(config.member(&name).is_none(), "{name} joined: {e}");
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_refuses_a_directory_holding_the_component_the_home_or_the_cache() {
    let f = Fixture::new("layout-spawn");

    // The component inside the teammate's directory: it could rewrite the
    // code the host runs next.
    let dir = f.dir("holds-component");
    let component = dir.join("hostile.wasm");
    std::fs::copy(teamhost_tests::HOSTILE, &component).unwrap();
    let mut req = hostile_request("a", "noop", &dir, "acceptEdits");
    req.component = component.clone();
    let e = refused(&f, req).await;
    names_both(&e, &dir, &component);

    // A directory above the home (the fixture's home is `{tmp}/home`), which
    // also holds the cache under it.
    let e = refused(
        &f,
        hostile_request("b", "noop", f.tmp.path(), "acceptEdits"),
    )
    .await;
    names_both(&e, f.tmp.path(), &f.home);

    // A directory inside the home: the team's config, inboxes and tasks.
    let inside = f.home.join("teams");
    let e = refused(&f, hostile_request("c", "noop", &inside, "acceptEdits")).await;
    assert!(e.contains("inside the teamhost home"), "{e}");

    // A symlink does not hide the home: the comparison is canonical.
    let linked = f.dir("linked");
    std::os::unix::fs::symlink(&f.home, linked.join("home")).unwrap();
    let e = refused(
        &f,
        hostile_request("d", "noop", &linked.join("home"), "acceptEdits"),
    )
    .await;
    assert!(e.contains("teamhost home"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_refuses_a_directory_holding_a_cache_kept_outside_the_home() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("work");
    let cache = dir.join("cache"); // not made yet: counted by its parent
    std::fs::create_dir_all(&dir).unwrap();
    let f = Fixture::with_options(
        "layout-cache",
        HostOptions {
            cache_dir: Some(cache.clone()),
            ..Default::default()
        },
    );
    let e = refused(&f, hostile_request("a", "noop", &dir, "acceptEdits")).await;
    names_both(&e, &dir, &cache);
    assert!(e.contains("component cache"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_refuses_a_directory_holding_the_model_cassettes_or_the_model_config() {
    // A teammate that can write cassettes or the model config (or a script
    // it names) decides what the model answers, for itself and for others.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let cassettes = dir.join("cassettes");
    let config = dir.join("models.toml");
    let hub = teamhost::model::ModelHub::new(
        teamhost::model::ModelConfig::from_env(),
        teamhost::model::CassetteMode::Replay,
        Some(cassettes.clone()),
    )
    .unwrap();
    for (kind, path, words) in [
        (
            teamhost::layout::Kind::Cassettes,
            &cassettes,
            "model cassette directory",
        ),
        (
            teamhost::layout::Kind::ModelConfig,
            &config,
            "model config file",
        ),
    ] {
        let f = Fixture::with_options(
            "layout-model",
            HostOptions {
                models: teamhost::embed::ModelAccess::new(hub.clone()).protecting(kind, path),
                ..Default::default()
            },
        );
        let e = refused(&f, hostile_request("a", "noop", &dir, "acceptEdits")).await;
        names_both(&e, &dir, path);
        assert!(e.contains(words), "{e}");
    }
}

/// A manifest at `{root}/team.toml` whose teammate has `cwd_line`.
fn manifest(root: &Path, cwd_line: &str, component: &Path) -> std::path::PathBuf {
    let file = root.join("team.toml");
    std::fs::write(
        &file,
        format!(
            "[team]\nname = \"layout-run\"\n\n[[teammate]]\nname = \"worker\"\ncomponent = \"{}\"\nprompt = \"noop\"\n{cwd_line}\n",
            component.display()
        ),
    )
    .unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teamhost_run_refuses_a_teammate_directory_holding_the_manifest_a_component_or_the_home() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, home) = (tmp.path().join("project"), tmp.path().join("home"));
    std::fs::create_dir_all(&root).unwrap();
    let outside = Path::new(teamhost_tests::HOSTILE);
    let run = |file: std::path::PathBuf, home: std::path::PathBuf| async move {
        let args = ["run", file.to_str().unwrap()];
        cli(&home, &args)
            .await
            .expect_err("the layout was accepted")
            .to_string()
    };

    // The old default: the manifest's own directory.
    let file = manifest(&root, "cwd = \".\"", outside);
    let e = run(file.clone(), home.clone()).await;
    names_both(&e, &root, &file);
    assert!(e.contains("manifest"), "{e}");

    // A component inside the teammate's directory.
    let data = root.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let component = data.join("hostile.wasm");
    std::fs::copy(outside, &component).unwrap();
    let file = manifest(&root, "cwd = \"data\"", &component);
    let e = run(file, home.clone()).await;
    names_both(&e, &data, &component);

    // The home inside the teammate's directory.
    let file = manifest(&root, "cwd = \"data\"", outside);
    let e = run(file, data.join("home")).await;
    names_both(&e, &data, &data.join("home"));

    // Nothing started: no team was created in either home.
    for h in [&home, &data.join("home")] {
        assert!(!h.join("teams").join("layout-run").exists(), "{h:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_team_runs_nothing_from_a_git_directory_the_teammate_put_in_its_worktree() {
    let a = Arena::new("trusted-git").await;
    let repo = repo(a.f.tmp.path());
    let markers = a.f.tmp.path().join("dirs").join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let m = |what: &str| markers.join(what).display().to_string();

    // The `.git` file becomes a whole git directory: every way its config
    // and hooks could run a program, each leaving its own marker.
    let hook = |name: &str| {
        format!(
            "printf '#!/bin/sh\\ntouch {}\\n' > .git/hooks/{name} && chmod +x .git/hooks/{name}",
            m(name)
        )
    };
    let plant = format!(
        "bash-run rm .git && git init -q . && mkdir -p .git/hooks && \
         git config core.fsmonitor 'touch {fs} #' && git config core.pager 'touch {pager} #' && \
         git config alias.st '!touch {alias}' && git config diff.external 'touch {diff} #' && \
         {h1} && {h2} && {h3} && echo planted",
        fs = m("fsmonitor"),
        pager = m("pager"),
        alias = m("alias"),
        diff = m("diff"),
        h1 = hook("reference-transaction"),
        h2 = hook("post-checkout"),
        h3 = hook("pre-commit"),
    );
    let mut req = hostile_request("planter", &plant, &repo, "bypassPermissions");
    req.isolation = Isolation::Worktree;
    let planter = a.spawn(req).await;
    let got = wait_done(&a.f, &planter, "bash-run", 1).await;
    assert!(
        step(&got, "bash-run").detail.contains("planted"),
        "{got:#?}"
    );
    let wt = teamhost::worktree::path(&teamhost::home::Home::new(&a.f.home), &a.f.name, &planter);
    assert!(wt.join(".git").is_dir());

    // The attack is real: git run the ordinary way there obeys it.
    git(&wt, &["status"]);
    git(
        &wt,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "control",
        ],
    );
    for control in ["fsmonitor", "reference-transaction", "pre-commit"] {
        assert!(
            std::path::Path::new(&m(control)).exists(),
            "control run: {control} did not fire"
        );
    }
    for entry in std::fs::read_dir(&markers).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }

    let report = a.f.host.delete_team(&a.f.name).await.unwrap();
    let left: Vec<_> = std::fs::read_dir(&markers)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "the host's git ran the teammate's {left:?}"
    );
    // Its planted files are changes of its own: the worktree is kept, and
    // the sentinel tree is as planted.
    assert_eq!(report.kept, vec![wt], "{report:?}");
    assert_eq!(snapshot(&a.sentinel), a.planted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_refuses_a_component_lying_in_a_running_teammates_directory() {
    // `echo` runs in `dirs/echo`: a component found there may have been
    // written by it, so the host does not load it for the next teammate.
    let a = Arena::new("layout-peer").await;
    let planted = a.dir("echo").join("hostile.wasm");
    std::fs::copy(teamhost_tests::HOSTILE, &planted).unwrap();
    let dir = a.dir("next");
    let mut req = hostile_request("next", "noop", &dir, "acceptEdits");
    req.component = planted.clone();
    let e = refused(&a.f, req).await;
    assert!(e.contains(&planted.display().to_string()), "{e}");
    assert!(e.contains(&a.echo), "names the teammate: {e}");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_refuses_a_component_in_a_running_teammates_directory_however_it_is_spelled() {
    // The host looks the component's ancestors up among the directories its
    // teammates run in: every way of writing the path, and a link from
    // outside every teammate's directory, must resolve to `dirs/echo`.
    let a = Arena::new("layout-spelled").await;
    let echo = a.dir("echo");
    let planted = echo.join("hostile.wasm");
    std::fs::copy(teamhost_tests::HOSTILE, &planted).unwrap();
    let dir = a.dir("next");
    let dirs = echo.parent().unwrap().to_path_buf();
    let link = dirs.join("route-to-echo");
    std::os::unix::fs::symlink(&echo, &link).unwrap();
    let spelled = [
        format!("{}/../echo/hostile.wasm", dir.display()),
        format!("{}/./hostile.wasm", echo.display()),
        format!("{}//echo/hostile.wasm", dirs.display()),
        format!("{}/hostile.wasm", link.display()),
    ];
    for component in spelled {
        let mut req = hostile_request("next", "noop", &dir, "acceptEdits");
        req.component = component.clone().into();
        let e = refused(&a.f, req).await;
        assert!(e.contains(&a.echo), "{component}: names the teammate: {e}");
    }
    a.assert_contained().await;
}
