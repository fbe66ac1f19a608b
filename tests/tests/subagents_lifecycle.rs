//! Sub-agents' failure, cancellation and their parent stopping (seed 003's
//! state machine), on a seat driven directly with the real probe component:
//! a failed or trapped sub-agent is a `failed` result and its parent goes
//! on; a parent that stops waiting (its turn killed) or ends takes its
//! sub-agents with it — nothing keeps running. The waits are on the
//! teammate's sub-agent counters ([`Tree::until`]), never on time.

use std::sync::Arc;

use teamhost::home::Home;
use teamhost::runtime::subagent_host::{
    Caller, StartRequest, Started, SubagentHost, SubagentStatus,
};
use teamhost::runtime::{Identity, Runtime, SharedParts};
use teamhost::sandbox::{Limits, PermissionMode, ToolRules};
use teamhost::store::{NewTeam, Store};
use teamhost::subagents::{Definitions, Seat, SeatConfig, SubagentLimits, Tree};

use crate::common;

struct Parent {
    _tmp: tempfile::TempDir,
    dir: std::path::PathBuf,
    seat: Arc<Seat>,
    tree: Arc<Tree>,
}

fn parent() -> Parent {
    parent_with(|_, dir| dir.to_path_buf())
}

/// A parent whose directory `place(home, work)` gives (`work` is a fresh
/// directory).
fn parent_with(place: impl FnOnce(&Home, &std::path::Path) -> std::path::PathBuf) -> Parent {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let home = Home::new(tmp.path().join("home"));
    let dir = place(&home, &work);
    let team = Store::in_memory().team("life").unwrap();
    team.create(NewTeam::default()).unwrap();
    let limits_sub = SubagentLimits::default();
    let tree = Tree::new(&home, "life", "parent", limits_sub);
    let tools = teamhost::tools::ToolBox::open(&dir, Default::default()).unwrap();
    let budget = teamhost::runtime::TreeBudget::new(&Limits::default(), Arc::new(tools));
    let seat = Seat::new(SeatConfig {
        runtime: Runtime::new(None).unwrap(),
        component: teamhost_tests::PROBE.into(),
        home: home.clone(),
        shared: SharedParts::new(team, "team-lead"),
        identity: Identity {
            name: "parent".into(),
            agent_id: "parent@life".into(),
            team: "life".into(),
            color: String::new(),
            agent_type: "general-purpose".into(),
            model: String::new(),
            plan_mode_required: false,
            backend_type: "in-process".into(),
            pane_id: "in-process".into(),
        },
        dir: dir.clone(),
        client: teamhost::model::ModelClient::disabled(),
        depth: 0,
        limits_sub,
        definitions: Arc::new(Definitions::new()),
        tree: tree.clone(),
        budget,
        forked: false,
    });
    Parent {
        _tmp: tmp,
        dir: dir.clone(),
        seat,
        tree,
    }
}

fn request(prompt: &str, background: bool) -> StartRequest {
    StartRequest {
        description: "life".into(),
        prompt: prompt.into(),
        background,
        ..StartRequest::default()
    }
}

fn caller() -> Caller {
    Caller {
        mode: PermissionMode::AcceptEdits,
        rules: ToolRules::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_trapped_sub_agent_is_a_failed_result_and_the_parent_goes_on() {
    let p = parent();
    let Started::Finished(failed) = p
        .seat
        .start(caller(), request("fail", false))
        .await
        .unwrap()
    else {
        panic!("a synchronous start finishes")
    };
    assert_eq!(failed.status, SubagentStatus::Failed);
    assert_eq!(failed.output, "told to fail");
    let Started::Finished(trapped) = p
        .seat
        .start(caller(), request("trap", false))
        .await
        .unwrap()
    else {
        panic!("a synchronous start finishes")
    };
    assert_eq!(trapped.status, SubagentStatus::Failed);
    assert!(trapped.output.contains("unreachable"), "{}", trapped.output);
    // The parent's next sub-agent works.
    let Started::Finished(ok) = p
        .seat
        .start(caller(), request("say on", false))
        .await
        .unwrap()
    else {
        panic!("a synchronous start finishes")
    };
    assert_eq!(
        (ok.status, ok.output.as_str()),
        (SubagentStatus::Completed, "said: on")
    );
    assert_eq!(p.tree.record().running, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_stops_waiting_takes_its_synchronous_sub_agent_with_it() {
    let p = parent();
    let seat = p.seat.clone();
    // The parent's turn, blocked in a synchronous sub-agent that spins.
    let turn = tokio::spawn(async move { seat.start(caller(), request("spin", false)).await });
    common::bounded("the sub-agent to run", p.tree.until(|r| r.running == 1)).await;
    // The parent's turn is killed (its future dropped).
    turn.abort();
    common::bounded(
        "the sub-agent to be killed",
        p.tree.until(|r| r.running == 0),
    )
    .await;
    let all = p.seat.list();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].status, SubagentStatus::Killed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_ends_kills_its_background_sub_agents_and_theirs() {
    let p = parent();
    // One spinning at depth 1, and one waiting on its own sub-agent, which
    // spins at depth 2.
    p.seat.start(caller(), request("spin", true)).await.unwrap();
    p.seat
        .start(caller(), request("deep-spin", true))
        .await
        .unwrap();
    common::bounded("all three to run", p.tree.until(|r| r.running == 3)).await;
    assert_eq!(p.tree.record().deepest, 2);
    let tree = p.tree.clone();
    drop(p.seat);
    common::bounded("every sub-agent to end", tree.until(|r| r.running == 0)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_background_sub_agent_ends_it_killed() {
    let p = parent();
    let Started::Launched(info) = p.seat.start(caller(), request("spin", true)).await.unwrap()
    else {
        panic!("a background start is launched")
    };
    assert_eq!(info.status, SubagentStatus::Running);
    p.seat.stop(&info.id).unwrap();
    common::bounded("the stop", p.tree.until(|r| r.running == 0)).await;
    assert_eq!(
        p.seat.output(&info.id).unwrap().status,
        SubagentStatus::Killed
    );
    // A finished one cannot be stopped again.
    assert!(p
        .seat
        .stop(&info.id)
        .unwrap_err()
        .to_string()
        .contains("not running"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_parent_ends_clean_worktrees_go_and_changed_ones_stay() {
    // The parent works in a worktree the host made of a repository.
    let p = parent_with(|home, work| {
        // The probe logs its turns in its directory: not a change.
        std::fs::write(work.join(".gitignore"), "turns.log\n").unwrap();
        for args in [
            vec!["init", "-q"],
            vec!["config", "user.email", "t@example.com"],
            vec!["config", "user.name", "t"],
            vec!["add", ".gitignore"],
            vec!["commit", "-q", "-m", "init"],
        ] {
            let ok = std::process::Command::new("git")
                .arg("-C")
                .arg(work)
                .args(&args)
                .status()
                .unwrap();
            assert!(ok.success(), "git {args:?}");
        }
        teamhost::worktree::create(home, "life", "parent", work).unwrap()
    });
    let dir = p.dir.clone();
    let in_worktree = |prompt: &str| StartRequest {
        worktree: true,
        ..request(prompt, false)
    };
    let Started::Finished(changed) = p
        .seat
        .start(caller(), in_worktree("write made.txt work"))
        .await
        .unwrap()
    else {
        panic!("a synchronous start finishes")
    };
    let Started::Finished(clean) = p
        .seat
        .start(caller(), in_worktree("say nothing"))
        .await
        .unwrap()
    else {
        panic!("a synchronous start finishes")
    };
    let changed = std::path::PathBuf::from(changed.worktree.unwrap());
    let clean = std::path::PathBuf::from(clean.worktree.unwrap());
    assert!(changed.join("made.txt").exists() && clean.is_dir());
    assert!(
        !dir.join("made.txt").exists(),
        "the parent's checkout is untouched"
    );
    // Finished sub-agents keep their worktrees (a message may resume them)
    // until their parent ends.
    let tree = p.tree.clone();
    drop(p.seat);
    common::bounded(
        "every sub-agent's task to end",
        tree.until(|r| r.alive == 0),
    )
    .await;
    assert!(!clean.exists(), "the clean worktree was removed");
    assert_eq!(
        std::fs::read_to_string(changed.join("made.txt")).unwrap(),
        "work",
        "the worktree with changes was kept"
    );
}
