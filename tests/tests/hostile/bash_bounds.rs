//! Hostile tests: Bash is bounded like the guest is — its process tree is
//! held to a process count and the teammate's memory (a control group per
//! call), each of its processes to the teammate's CPU per turn — and the
//! host and the other teammates go on.

use crate::sandbox_support::{hostile_request, step, wait_done, Arena};
use teamhost::tools::cgroup::{self, CgroupKind};

/// Live processes whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> usize {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want))
        .filter(|e| {
            // Zombies hold no resources and are reaped by their parent.
            std::fs::read_to_string(e.path().join("stat"))
                .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
                .unwrap_or(false)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_in_bash_is_held_to_the_process_limit() {
    match cgroup::kind() {
        Ok(CgroupKind::V2) | Ok(CgroupKind::V1 { pids: true, .. }) => {}
        other => {
            eprintln!("no pids cgroup here ({other:?}): Bash has no process bound");
            return;
        }
    }
    let a = Arena::new("fork-bomb").await;
    // 400 background sleepers: more than the 128 processes a call may have.
    let got = a
        .attack(
            "bomber",
            "bypassPermissions",
            "bash-run i=0; while [ $i -lt 400 ]; do sleep 30.4747 & i=$((i+1)); done; echo started $i",
        )
        .await;
    let run = step(&got, "bash-run");
    assert!(run.ok(), "{run:?}");
    assert!(!run.detail.contains("started 400"), "{run:?}");
    assert!(
        run.detail.contains("fork") || run.detail.contains("Resource temporarily unavailable"),
        "the shell should have been refused a fork: {run:?}"
    );
    // Nothing the call started outlives it.
    assert_eq!(processes_running(&["sleep", "30.4747"]), 0);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_process_tree_is_held_to_the_teammates_memory() {
    let a = Arena::new("bash-memory").await;
    // The teammate's memory limit is 64 MiB (the default): a 1 MiB buffer
    // is fine, a 256 MiB one is not, whether a memory cgroup (the tree) or
    // RLIMIT_AS (each process) holds it.
    let prompt = "bash-run dd if=/dev/zero of=/dev/null bs=1M count=4 2>&1 && echo small-ok\n\
                  bash-run dd if=/dev/zero of=/dev/null bs=256M count=1 2>&1 && echo big-ok";
    let req = hostile_request("hog", prompt, &a.dir("hog"), "bypassPermissions");
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "bash-run", 2).await;
    let runs = crate::sandbox_support::all(&got, "bash-run");
    assert_eq!(runs.len(), 2, "{got:#?}");
    assert!(runs[0].detail.contains("small-ok"), "{:?}", runs[0]);
    assert!(!runs[1].detail.contains("big-ok"), "{:?}", runs[1]);
    assert_ne!(runs[1].exit_code(), Some(0), "{:?}", runs[1]);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_bash_command_is_stopped_by_the_cpu_limit_not_the_timeout() {
    let a = Arena::new("bash-cpu").await;
    // small_limits: 1 s of CPU per turn; Bash's own timeout is 120 s.
    let got = a
        .attack(
            "spinner",
            "bypassPermissions",
            "bash-run while :; do :; done",
        )
        .await;
    let run = step(&got, "bash-run");
    assert!(run.ok(), "{run:?}");
    assert!(
        run.detail.starts_with("exit=none timed_out=false"),
        "the CPU limit should have killed the shell: {run:?}"
    );
    a.assert_contained().await;
}
