//! `Host::spawn_many`: a batch of teammates registered many to a config
//! write starts each one exactly as `Host::spawn` would (names, colours,
//! prompts, first turns), gives each request its own result, undoes a
//! member whose start fails, and refuses a component that lies in another
//! batch member's directory.

use crate::common;

use common::{line, probe_request, turns, Fixture};
use teamhost::embed::SpawnRequest;
use teamhost::Error;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_starts_every_teammate_as_single_spawns_would() {
    let f = Fixture::new("many");
    let wanted = ["w", "w", "x", "w", "y"];
    let dirs: Vec<_> = (0..wanted.len()).map(|i| f.dir(&format!("d{i}"))).collect();
    let requests: Vec<SpawnRequest> = wanted
        .iter()
        .zip(&dirs)
        .enumerate()
        .map(|(i, (name, dir))| probe_request(name, &format!("prompt {i}"), dir))
        .collect();
    let results = common::bounded("the batch", f.host.spawn_many(&f.name, requests))
        .await
        .unwrap();
    let names: Vec<String> = results
        .into_iter()
        .map(|r| r.expect("every request is spawned").name)
        .collect();
    // In the order of the requests, made unique as one by one.
    assert_eq!(names, ["w", "w-2", "x", "w-3", "y"]);
    f.settle().await;
    for (i, (name, dir)) in names.iter().zip(&dirs).enumerate() {
        assert_eq!(
            turns(dir),
            [line("initial", "team-lead", &format!("prompt {i}"))],
            "{name} took its own prompt once"
        );
    }
    // The same colours, in the same join order, as single spawns give.
    let single = Fixture::new("single");
    for (name, dir) in wanted.iter().zip(&dirs) {
        let req = probe_request(
            name,
            "p",
            &single.dir(&dir.file_name().unwrap().to_string_lossy()),
        );
        single.host.spawn(&single.name, req).await.unwrap();
    }
    let colours = |f: &Fixture| -> Vec<(String, Option<String>)> {
        let config = f.team.config().unwrap();
        config
            .members
            .iter()
            .map(|m| (m.name.clone(), m.color.clone()))
            .collect()
    };
    assert_eq!(colours(&f), colours(&single));
    let running: Vec<String> = f
        .host
        .teammates(&f.name)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(running.len(), 5, "{running:?}");
    single.settle().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_or_a_failed_start_does_not_stop_the_others() {
    let f = Fixture::new("mixed");
    let config = f.team.file_paths().unwrap().config();
    let (good, good_too) = (f.dir("good"), f.dir("good-too"));
    let not_wasm = f.tmp.path().join("agent.wasm");
    std::fs::write(&not_wasm, "not a component").unwrap();
    // Too little memory for the guest: registered, then it cannot start.
    let mut starved = probe_request("starved", "never read", &f.dir("starved"));
    starved.settings.limits.memory_bytes = 1;
    let requests = vec![
        probe_request("good", "first", &good),
        probe_request("team-lead", "a lead look-alike", &f.dir("lead")),
        probe_request("nowhere", "no directory", &f.tmp.path().join("missing")),
        SpawnRequest::new("junk", &not_wasm, "not wasm", f.dir("junk")),
        starved,
        probe_request("good-too", "second", &good_too),
    ];
    let results = common::bounded("the batch", f.host.spawn_many(&f.name, requests))
        .await
        .unwrap();
    assert_eq!(results.len(), 6);
    assert_eq!(results[0].as_ref().unwrap().name, "good");
    assert!(results[1].is_err(), "the lead's name is refused");
    let dir_error = results[2].as_ref().unwrap_err().to_string();
    assert!(dir_error.contains("cannot be used"), "{dir_error}");
    assert!(
        matches!(&results[3], Err(Error::Component { path, .. }) if *path == not_wasm),
        "{:?}",
        results[3].as_ref().map(|t| &t.name)
    );
    let start_error = results[4].as_ref().unwrap_err().to_string();
    assert!(start_error.contains("cannot start it"), "{start_error}");
    assert_eq!(results[5].as_ref().unwrap().name, "good-too");
    f.settle().await;
    // The failed start is undone: no member, no prompt left for a later
    // teammate of its name.
    assert_eq!(f.members(), ["team-lead", "good", "good-too"]);
    assert!(f.team.unread("starved").unwrap().is_empty());
    assert_eq!(turns(&good), [line("initial", "team-lead", "first")]);
    assert_eq!(turns(&good_too), [line("initial", "team-lead", "second")]);
    assert!(std::fs::read_to_string(&config)
        .unwrap()
        .contains("good-too"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_in_another_batch_members_directory_is_refused_either_way_round() {
    for order in ["holder first", "holder last"] {
        let f = Fixture::new("layout");
        let holder_dir = f.dir("holder");
        // A copy of the probe inside the holder's directory: the holder
        // could rewrite what the host runs for the other teammate.
        let planted = holder_dir.join("planted.wasm");
        std::fs::copy(teamhost_tests::PROBE, &planted).unwrap();
        let holder = probe_request("holder", "hold", &holder_dir);
        let mut victim = probe_request("victim", "run", &f.dir("victim"));
        victim.component = planted.clone();
        let requests = if order == "holder first" {
            vec![holder, victim]
        } else {
            vec![victim, holder]
        };
        let results = common::bounded("the batch", f.host.spawn_many(&f.name, requests))
            .await
            .unwrap();
        let (held, refused) = if order == "holder first" {
            (&results[0], &results[1])
        } else {
            (&results[1], &results[0])
        };
        assert_eq!(held.as_ref().unwrap().name, "holder", "{order}");
        let why = refused.as_ref().unwrap_err().to_string();
        assert!(
            why.contains("unsafe layout") && why.contains("holder"),
            "{order}: {why}"
        );
        f.settle().await;
        assert_eq!(f.members(), ["team-lead", "holder"], "{order}");
    }
}

/// The prompts of a group go in as one batch: one that cannot be written
/// (its inbox's path taken by a directory, so the batch fails before
/// anything is in place and the others are written again one by one)
/// undoes that spawn alone, leaving no spawn record for it, and every
/// other teammate gets its prompt once. (A batch failing after some
/// inboxes were written: `store/deliver_many/tests.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_cannot_be_written_undoes_only_its_own_spawn() {
    let f = Fixture::new("prompts");
    let inbox = f.team.file_paths().unwrap().inbox("blocked").unwrap();
    std::fs::create_dir_all(&inbox).unwrap();
    let names = ["a", "blocked", "b"];
    let dirs: Vec<_> = names.iter().map(|n| f.dir(n)).collect();
    let requests = names
        .iter()
        .zip(&dirs)
        .map(|(n, dir)| probe_request(n, &format!("to {n}"), dir))
        .collect();
    let results = common::bounded("the batch", f.host.spawn_many(&f.name, requests))
        .await
        .unwrap();
    assert_eq!(results[0].as_ref().unwrap().name, "a");
    let why = results[1].as_ref().unwrap_err().to_string();
    assert!(
        why.contains("blocked.json"),
        "its prompt cannot be written: {why}"
    );
    assert_eq!(results[2].as_ref().unwrap().name, "b");
    f.settle().await;
    assert_eq!(f.members(), ["team-lead", "a", "b"]);
    assert_eq!(turns(&dirs[0]), [line("initial", "team-lead", "to a")]);
    assert_eq!(turns(&dirs[2]), [line("initial", "team-lead", "to b")]);
    let home = teamhost::home::Home::new(&f.home);
    let recorded: Vec<String> = teamhost::home::spawn_record::list(&home, &f.name)
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(
        recorded.len(),
        2,
        "no record for the undone spawn: {recorded:?}"
    );
    assert!(!recorded.contains(&"blocked".to_string()), "{recorded:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_during_a_batch_stops_every_teammate_it_started_and_starts_no_more() {
    use teamhost::embed::Event;
    let f = Fixture::new("stop-many");
    let mut events = f.host.events();
    // More than one chunk of registrations (256) and many groups of
    // sixteen: the stop begins while the first group runs and the later
    // ones are still to be started.
    let requests: Vec<SpawnRequest> = (0..300)
        .map(|i| probe_request(&format!("p{i}"), "hello", &f.dir(&format!("d{i}"))))
        .collect();
    let batch = {
        let (host, team) = (f.host.clone(), f.name.clone());
        tokio::spawn(async move { host.spawn_many(&team, requests).await })
    };
    common::next_event(
        &mut events,
        "a teammate of the batch to run",
        |e| matches!(e, Event::StateChanged { team, .. } if *team == f.name),
    )
    .await;
    let report = common::bounded(
        "the shutdown",
        f.host.shutdown_team(&f.name, "done", common::LIMIT),
    )
    .await
    .unwrap();
    let results = common::bounded("the batch", batch).await.unwrap().unwrap();

    // Each request either started a teammate the stop then asked, or was
    // refused saying why; nothing was left in between.
    let (mut started, mut refused) = (Vec::new(), 0);
    for result in results {
        match result {
            Ok(info) => started.push(info.name),
            Err(Error::Spawn(why)) if why.contains("shutting down") => refused += 1,
            Err(other) => panic!("a batch member failed otherwise: {other}"),
        }
    }
    assert!(!started.is_empty(), "the stop began after a teammate ran");
    // The first teammate ran long before the last groups could start.
    assert!(refused > 0, "the batch went on past the stop");
    let mut asked: Vec<String> = report
        .stopped
        .iter()
        .chain(&report.killed)
        .cloned()
        .collect();
    asked.sort();
    started.sort();
    assert_eq!(
        asked, started,
        "the stop asked exactly the teammates started"
    );
    // None runs on, and the config holds the lead alone: the stopped left
    // it, and the refused were taken out of it again.
    let still: Vec<_> = f
        .host
        .teammates(&f.name)
        .into_iter()
        .filter(|t| !t.state.is_finished())
        .map(|t| t.name)
        .collect();
    assert!(
        still.is_empty(),
        "still running after the shutdown: {still:?}"
    );
    let members: Vec<String> = f.team.config().unwrap().member_names();
    assert_eq!(members, [teamhost_tests::fixture::LEAD], "{members:?}");
    // The team can be used again once the stop is over.
    let again = f
        .host
        .spawn(&f.name, probe_request("after", "again", &f.dir("after")))
        .await
        .unwrap();
    assert_eq!(again.name, "after");
}
