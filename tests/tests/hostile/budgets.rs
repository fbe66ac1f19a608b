//! Hostile tests: one budget per teammate (issue 27, item 3). A teammate
//! and everything it starts draw from the same budgets (memory, sub-agents,
//! acts and bytes written to the team over its life, state saves, disk), and
//! the disk is counted while the turn runs, not only after it. Each breach
//! names its limit; the host and the other teammates go on.

use std::path::Path;
use std::time::Duration;

use crate::sandbox_support::{hostile_request, step, steps, wait_done, Arena};

/// Bytes of the files under `dir`, recursively.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                bytes_under(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_at_depth_draw_from_their_teammates_one_memory_pool() {
    let a = Arena::new("budget-memory").await;
    // Each level holds 24 MiB while the one below runs: three levels need
    // more than the 64 MiB the tree has, though each instance stays far
    // under its own 48 MiB.
    let spawn = |name: &str, total_mib: usize| {
        let mut req = hostile_request(name, "budget nest-alloc 24 2", &a.dir(name), "acceptEdits");
        req.settings.limits.memory_bytes = 48 << 20;
        req.settings.limits.memory_total_bytes = total_mib << 20;
        req.settings.limits.cpu_per_turn = Duration::from_secs(10);
        req
    };
    let tight = a.spawn(spawn("tight", 64)).await;
    let got = wait_done(&a.f, &tight, "budget", 1).await;
    let nest = step(&got, "budget/nest-alloc");
    assert!(
        nest.detail.starts_with(
            "holding 24 MiB; below: completed holding 24 MiB; below: failed memory limit: "
        ),
        "the bottom sub-agent should have been stopped by the tree's pool: {nest:?}"
    );
    assert!(
        nest.detail.contains("([teammate.limits] memory_total_mb)"),
        "{nest:?}"
    );
    // The same chain with room in the pool reaches the bottom.
    let roomy = a.spawn(spawn("roomy", 128)).await;
    let got = wait_done(&a.f, &roomy, "budget", 1).await;
    let nest = step(&got, "budget/nest-alloc");
    assert!(
        nest.detail
            .ends_with("below: completed holding 24 MiB at the bottom"),
        "{nest:?}"
    );
    // The teammates live on: their memory came back when their sub-agents ended.
    a.f.host
        .send_as_lead(&a.f.name, &tight, "budget nest-alloc 24 1", None)
        .unwrap();
    let got = wait_done(&a.f, &tight, "budget", 2).await;
    let nest = step(&got, "budget/nest-alloc");
    assert!(
        nest.detail
            .ends_with("below: completed holding 24 MiB at the bottom"),
        "{nest:?}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_started_by_the_whole_tree_count_against_one_life_long_limit() {
    let a = Arena::new("budget-spawns").await;
    let dir = a.dir("spawner");
    let mut req = hostile_request("spawner", "budget spawn-tree 5", &dir, "acceptEdits");
    req.settings.limits.max_subagents_total = 4;
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "budget", 1).await;
    let child = step(&got, "budget/spawn-tree-child");
    assert_eq!(child.detail, "completed 2 of 2 started ", "{got:#?}");
    // The child and its two took three of four: one more, then refused.
    let own = step(&got, "budget/spawn-tree");
    assert!(
        own.detail.starts_with("1 of 5 started denied: ")
            && own.detail.contains("(max_subagents_total)"),
        "{own:?}"
    );
    // Over its life: a later turn gets none either.
    a.f.host
        .send_as_lead(&a.f.name, &name, "budget spawn-many 1", None)
        .unwrap();
    let got = wait_done(&a.f, &name, "budget", 2).await;
    let later = step(&got, "budget/spawn-many");
    assert!(
        later.detail.starts_with("0 of 1 started denied: ")
            && later.detail.contains("max_subagents_total"),
        "{later:?}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_of_1_mib_turn_after_turn_are_stopped_by_the_team_bytes_budget() {
    let a = Arena::new("budget-team-bytes").await;
    let mut events = a.f.host.events();
    let dir = a.dir("talker");
    let mut req = hostile_request("talker", "budget big-send 1000", &dir, "acceptEdits");
    req.settings.limits.max_team_bytes_total = 3 << 20;
    let name = a.spawn(req).await;
    for turn in 1..=3 {
        let got = wait_done(&a.f, &name, "budget", turn).await;
        assert!(step(&got, "budget/big-send").ok(), "turn {turn}: {got:#?}");
        a.f.host
            .send_as_lead(&a.f.name, &name, "budget big-send 1000", None)
            .unwrap();
    }
    let reason = a.failure(&mut events, &name).await;
    assert!(
        reason.contains("team-bytes limit") && reason.contains("([teammate.limits] team_total_mb)"),
        "{reason}"
    );
    let sent: usize =
        a.f.lead_inbox()
            .iter()
            .filter(|m| m.from == name)
            .map(|m| m.text.len() + m.summary.as_ref().map_or(0, String::len))
            .sum();
    assert!(sent <= 3 << 20, "{sent} bytes reached the lead");
    assert!(sent >= 3 * 1_024_000, "three big messages went through");
    assert!(
        a.host_notices()
            .iter()
            .any(|n| n.starts_with(&format!("{name} failed: ")) && n.contains("team-bytes limit")),
        "the lead is told"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_save_flood_is_stopped_per_turn_and_over_the_life() {
    let a = Arena::new("budget-saves").await;
    let mut events = a.f.host.events();
    let limits = |req: &mut teamhost::embed::SpawnRequest| {
        req.settings.limits.max_state_saves_per_turn = 10;
        req.settings.limits.max_state_saves_total = 15;
    };
    // In one turn.
    let mut req = hostile_request(
        "flooder",
        "budget save-flood 1000",
        &a.dir("flooder"),
        "acceptEdits",
    );
    limits(&mut req);
    let flooder = a.spawn(req).await;
    let reason = a.failure(&mut events, &flooder).await;
    assert!(
        reason.contains("state-save limit") && reason.contains("(max_state_saves_per_turn)"),
        "{reason}"
    );
    // A little every turn.
    let mut req = hostile_request(
        "trickler",
        "budget save-flood 8",
        &a.dir("trickler"),
        "acceptEdits",
    );
    limits(&mut req);
    let trickler = a.spawn(req).await;
    let got = wait_done(&a.f, &trickler, "budget", 1).await;
    assert_eq!(step(&got, "budget/save-flood").detail, "8 of 8 saved");
    a.f.host
        .send_as_lead(&a.f.name, &trickler, "budget save-flood 8", None)
        .unwrap();
    let reason = a.failure(&mut events, &trickler).await;
    assert!(
        reason.contains("state-save limit") && reason.contains("(max_state_saves_total)"),
        "{reason}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wasi_write_loop_far_past_the_disk_budget_is_refused_while_the_turn_runs() {
    let a = Arena::new("budget-wasi-disk").await;
    let dir = a.dir("filler");
    // 256 MiB through the guest's own writes, with 4 MiB to spend; then a
    // sparse file of 64 MiB (its length counts).
    let prompt = "exhaust fill fat.bin 256\nbudget set-len sparse.bin 64";
    let mut req = hostile_request("filler", prompt, &dir, "acceptEdits");
    req.settings.limits.disk_bytes = 4 << 20;
    req.settings.limits.cpu_per_turn = Duration::from_secs(10);
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "budget", 1).await;
    // A stream's write fails (`last-operation-failed`, which wasi-libc
    // reports as an I/O error).
    let fill = step(&got, "exhaust/fill");
    assert!(!fill.ok() && fill.detail.starts_with("io "), "{fill:?}");
    let fat = std::fs::metadata(dir.join("fat.bin")).unwrap().len();
    assert!(fat <= 4 << 20, "fat.bin grew to {fat} bytes");
    let sparse = step(&got, "budget/set-len");
    assert!(
        !sparse.ok() && sparse.detail.contains("No space left on device"),
        "{sparse:?}"
    );
    assert!(
        std::fs::metadata(dir.join("sparse.bin")).map_or(0, |m| m.len()) <= 4 << 20,
        "sparse.bin grew"
    );
    assert!(
        bytes_under(&dir) <= (4 << 20) + (1 << 20),
        "the directory holds {} bytes",
        bytes_under(&dir)
    );
    // The lead is told, naming the limit.
    let notices = a.host_notices();
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with(&format!("{name}: a write"))
                && n.contains("disk limit")
                && n.contains("([teammate.limits] disk_mb)")),
        "{notices:?}"
    );
    // The teammate was refused, not broken: it still answers.
    a.f.host
        .send_as_lead(&a.f.name, &name, "whoami", None)
        .unwrap();
    let got = wait_done(&a.f, &name, "whoami", 1).await;
    assert!(step(&got, "whoami").ok(), "{got:#?}");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_write_loop_past_the_disk_budget_is_stopped_while_the_call_runs() {
    let a = Arena::new("budget-bash-disk").await;
    let mut events = a.f.host.events();
    // One file: no file of the call may grow past what is left.
    let dir = a.dir("yes");
    let mut req = hostile_request("yes", "bash-run yes > y.txt", &dir, "bypassPermissions");
    req.settings.limits.disk_bytes = 4 << 20;
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "bash-run", 1).await;
    let run = step(&got, "bash-run");
    assert!(
        run.ok(),
        "the call returned (its writer killed by the file-size limit): {run:?}"
    );
    assert!(std::fs::metadata(dir.join("y.txt")).unwrap().len() <= 4 << 20);
    a.f.host
        .send_as_lead(&a.f.name, &name, "whoami", None)
        .unwrap();
    assert!(step(&wait_done(&a.f, &name, "whoami", 1).await, "whoami").ok());

    // Many files, for ever: the call is killed while it runs (without the
    // watch it would write until its 120 s timeout).
    let dir = a.dir("dd");
    let loop_ = "bash-run i=0; while :; do dd if=/dev/zero of=f$i bs=64k count=16 2>/dev/null; i=$((i+1)); done";
    let mut req = hostile_request("dd", loop_, &dir, "bypassPermissions");
    req.settings.limits.disk_bytes = 8 << 20;
    let name = a.spawn(req).await;
    let reason = a.failure(&mut events, &name).await;
    assert!(
        reason.contains("disk limit")
            && reason.contains("([teammate.limits] disk_mb)")
            && reason.contains("stopped while it ran"),
        "{reason}"
    );
    let held = bytes_under(&dir);
    assert!(
        held < (8 << 20) + (128 << 20),
        "the directory holds {held} bytes; the watch should have stopped the loop soon after 8 MiB"
    );
    assert!(
        steps(&a.f, &name).iter().all(|s| s.step != "bash-run"),
        "the call never returned to the guest"
    );
    a.assert_contained().await;
}

/// After a turn the tree is walked only when the count cannot vouch for it
/// (runtime/disk_meter.rs): entries made without a byte, directories and
/// hard links must each still bring that walk, in the turn that makes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_directories_and_links_made_without_a_byte_still_meet_the_disk_budget() {
    let a = Arena::new("budget-entries").await;
    let mut events = a.f.host.events();
    let refuse = |req: &mut teamhost::embed::SpawnRequest| {
        req.settings.limits.disk_walk_entries = 50;
        req.settings.limits.disk_bytes = 4 << 20;
    };
    // Each teammate's first turn is measured (nothing was yet) and fits;
    // its second makes what only a walk can see.
    let cases = [
        // Empty files across two turns: 30 fit, 60 do not.
        (
            "touch",
            "exhaust touch a 30",
            "exhaust touch b 30",
            "disk_entries",
        ),
        // Directories: counted as unseen, so the turn's end walks.
        (
            "mkdirs",
            "exhaust touch a 1",
            "exhaust mkdirs d 60",
            "disk_entries",
        ),
        // Hard links: no byte written, yet the directory shows 9 MiB.
        (
            "links",
            "exhaust fill fat.bin 3",
            "exhaust links fat.bin 2",
            "disk_mb",
        ),
    ];
    for (who, first, second, limit) in cases {
        let dir = a.dir(who);
        let mut req = hostile_request(who, first, &dir, "acceptEdits");
        refuse(&mut req);
        req.settings.limits.cpu_per_turn = Duration::from_secs(10);
        let name = a.spawn(req).await;
        let got = wait_done(&a.f, &name, "exhaust", 1).await;
        assert!(
            got.iter()
                .filter(|s| s.step.starts_with("exhaust/"))
                .all(|s| s.ok()),
            "{who}: the first turn fits: {got:#?}"
        );
        a.f.host
            .send_as_lead(&a.f.name, &name, second, None)
            .unwrap();
        let reason = a.failure(&mut events, &name).await;
        assert!(
            reason.contains("disk limit") && reason.contains(&format!("[teammate.limits] {limit}")),
            "{who}: {reason}"
        );
    }
    a.assert_contained().await;
}
