//! Hostile tests: one teammate cannot exhaust the host. Files of any shape
//! cost the host bounded memory per tool call; WASI descriptors, the disk of
//! the teammate's directory and its captured log are capped; each breach is
//! a clean error or a failure naming the limit, and the host and the other
//! teammates go on.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::sandbox_support::{hostile_request, step, steps, wait_done, Arena, Step};

/// The host process's peak resident memory (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kib << 10
}

/// Resets the peak to the current resident size, where the kernel allows
/// it, so the measurement starts from now.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A real file of `mib` MiB of `x`, with no newline.
fn no_newline_file(path: &Path, mib: usize) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..mib {
        f.write_all(&chunk).unwrap();
    }
}

/// A sparse file of `len` bytes: 16 KiB of text, then a hole (no newline).
fn sparse_file(path: &Path, len: u64) {
    std::fs::write(path, "a".repeat(16 << 10)).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_and_grepping_a_sparse_100_gib_file_and_a_256_mib_line_costs_the_host_bounded_memory(
) {
    let a = Arena::new("exhaust-read").await;
    let dir = a.dir("reader");
    no_newline_file(&dir.join("line.txt"), 256);
    sparse_file(&dir.join("sparse.txt"), 100 << 30);
    let prompt = "exhaust read line.txt\nexhaust read sparse.txt\nexhaust grep x{3}";
    let mut req = hostile_request("reader", prompt, &dir, "default");
    // The planted files are the test's, not the teammate's: its disk budget
    // must not be what stops it here.
    req.settings.limits.disk_bytes = 200 << 30;
    reset_peak_rss();
    let before = peak_rss();
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "exhaust", 3).await;
    let grown = peak_rss().saturating_sub(before);
    assert!(
        grown < 128 << 20,
        "the host's peak memory grew by {} MiB reading a 256 MiB line",
        grown >> 20
    );

    let reads = crate::sandbox_support::all(&got, "exhaust/read");
    assert_eq!(reads.len(), 2, "{got:#?}");
    for read in reads {
        assert!(read.ok(), "{read:?}");
        assert!(read.detail.contains("truncated=true"), "{read:?}");
        assert!(read.detail.contains("lines=1 "), "{read:?}");
        let bytes: usize = read.detail["bytes=".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(bytes < 16 << 10, "{read:?}");
    }
    let grep = step(&got, "exhaust/grep");
    assert!(grep.ok(), "{grep:?}");
    assert!(
        !grep.detail.contains("line.txt") && !grep.detail.contains("sparse.txt"),
        "files over the size cap are skipped, not searched: {grep:?}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_opening_descriptors_in_a_loop_is_stopped_at_the_cap() {
    let a = Arena::new("exhaust-fds").await;
    let mut events = a.f.host.events();
    let dir = a.dir("opener");
    std::fs::write(dir.join("open-me.txt"), "x").unwrap();
    let mut req = hostile_request("opener", "exhaust open-many 100000", &dir, "default");
    req.settings.limits.max_open_resources = 256;
    let name = a.spawn(req).await;
    let reason = a.failure(&mut events, &name).await;
    assert!(
        reason.contains("descriptor limit") && reason.contains("max_open_resources"),
        "{reason}"
    );
    assert!(reason.contains("256"), "{reason}");
    let got = steps(&a.f, &name);
    assert!(step(&got, "exhaust/start").ok(), "{got:#?}");
    assert!(
        got.iter().all(|s| s.step != "exhaust/open-many"),
        "the loop should not have finished: {got:#?}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_recurses_without_end_is_stopped_and_deep_stacks_work_turn_after_turn() {
    let a = Arena::new("exhaust-stack").await;
    let mut events = a.f.host.events();
    // A deep but finite dive, twice: the stack given back after the first
    // turn (runtime/stacks.rs) must carry the second.
    let diver = a
        .spawn(hostile_request(
            "diver",
            "exhaust deep 5000",
            &a.dir("diver"),
            "default",
        ))
        .await;
    a.f.host
        .send_as_lead(a.f.team.name(), &diver, "exhaust deep 5000", None)
        .unwrap();
    let got = wait_done(&a.f, &diver, "exhaust", 2).await;
    let dives: Vec<&Step> = got.iter().filter(|s| s.step == "exhaust/deep").collect();
    assert_eq!(dives.len(), 2, "{got:#?}");
    assert!(
        dives.iter().all(|s| s.ok() && s.detail == "reached 5000"),
        "{got:#?}"
    );
    // Without end: a trap for this teammate only.
    let name = a
        .spawn(hostile_request(
            "diver2",
            "exhaust recurse",
            &a.dir("diver2"),
            "default",
        ))
        .await;
    let reason = a.failure(&mut events, &name).await;
    assert!(reason.contains("call stack exhausted"), "{reason}");
    assert!(
        steps(&a.f, &name)
            .iter()
            .all(|s| s.step != "exhaust/recurse"),
        "the dive never returned"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_asking_wasi_random_for_more_than_64_kib_at_once_is_stopped_naming_the_limit() {
    let a = Arena::new("exhaust-random").await;
    let mut events = a.f.host.events();
    let most = teamhost::sandbox::MAX_RANDOM_BYTES;
    // Up to the bound, both generators answer in full, with bytes that
    // vary.
    let prompt = format!("exhaust random {most}\nexhaust insecure-random {most}");
    let fair = a
        .spawn(hostile_request("fair", &prompt, &a.dir("fair"), "default"))
        .await;
    let got = wait_done(&a.f, &fair, "exhaust", 2).await;
    for s in ["exhaust/random", "exhaust/insecure-random"] {
        let drew = step(&got, s);
        assert!(drew.ok(), "{drew:?}");
        assert!(
            drew.detail == format!("{most} bytes, 256 distinct values"),
            "{drew:?}"
        );
    }
    // One byte past it, from either: a trap for that teammate alone (under
    // wasmtime-wasi's own bound, 64 MiB, these calls were answered).
    for (name, attack) in [("greedy", "random"), ("greedier", "insecure-random")] {
        let prompt = format!("exhaust {attack} {}", most + 1);
        let name = a
            .spawn(hostile_request(name, &prompt, &a.dir(name), "default"))
            .await;
        let reason = a.failure(&mut events, &name).await;
        assert!(
            reason.contains("random limit")
                && reason.contains(&format!("{} bytes", most + 1))
                && reason.contains(&most.to_string()),
            "{reason}"
        );
        let got = steps(&a.f, &name);
        assert!(step(&got, "exhaust/start").ok(), "{got:#?}");
        assert!(
            got.iter().all(|s| s.step != format!("exhaust/{attack}")),
            "the call never returned: {got:#?}"
        );
    }
    // The first teammate still works.
    a.f.host
        .send_as_lead(&a.f.name, &fair, "whoami", None)
        .unwrap();
    let got = wait_done(&a.f, &fair, "whoami", 1).await;
    assert!(step(&got, "whoami").ok(), "{got:#?}");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_writing_past_its_disk_budget_is_refused_by_the_tools_and_its_wasi_writes() {
    let a = Arena::new("exhaust-disk").await;
    let dir = a.dir("filler");
    // 8 MiB through the Write tool (refused in advance), then 8 MiB through
    // the guest's own WASI writes (refused as they pass the budget, during
    // the turn: budgets.rs has the rest).
    let prompt = "exhaust tool-fill big.txt 8192\nexhaust fill fat.bin 8";
    let mut req = hostile_request("filler", prompt, &dir, "acceptEdits");
    req.settings.limits.disk_bytes = 4 << 20;
    req.settings.limits.cpu_per_turn = Duration::from_secs(10);
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "exhaust", 2).await;
    let refused = step(&got, "exhaust/tool-fill");
    refused.assert_invalid();
    assert!(refused.detail.contains("disk limit"), "{refused:?}");
    assert!(!dir.join("big.txt").exists(), "the tool wrote nothing");
    let fill = step(&got, "exhaust/fill");
    assert!(!fill.ok() && fill.detail.starts_with("io "), "{fill:?}");
    assert!(std::fs::metadata(dir.join("fat.bin")).unwrap().len() <= 4 << 20);
    let notices = a.host_notices();
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with(&format!("{name}: ")) && n.contains("disk limit")),
        "{notices:?}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_printing_100_mib_leaves_a_log_no_bigger_than_the_cap_and_one_note() {
    let a = Arena::new("exhaust-log").await;
    let dir = a.dir("printer");
    let mut req = hostile_request("printer", "exhaust print 100", &dir, "default");
    req.settings.limits.cpu_per_turn = Duration::from_secs(30);
    let cap = req.settings.limits.max_log_bytes;
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "exhaust", 1).await;
    let printed = step(&got, "exhaust/print");
    assert!(printed.ok(), "writes to a full log never fail: {printed:?}");

    let log =
        a.f.home
            .join("logs")
            .join(&a.f.name)
            .join(format!("{name}.log"));
    let text = std::fs::read(&log).unwrap();
    let note = "[teamhost: log cut at";
    let notes = text
        .windows(note.len())
        .filter(|w| *w == note.as_bytes())
        .count();
    assert_eq!(notes, 1, "one note where the log was cut");
    assert!(
        text.len() as u64 <= cap + 200,
        "the log has {} bytes; the cap is {cap}",
        text.len()
    );
    assert!(text.len() as u64 >= cap, "the log filled up to the cap");
    // The teammate is still alive and working after its flood.
    a.f.host
        .send_as_lead(&a.f.name, &name, "whoami", None)
        .unwrap();
    let got = wait_done(&a.f, &name, "whoami", 1).await;
    assert!(step(&got, "whoami").ok(), "{got:#?}");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_state_is_bounded_its_own_and_kept_outside_the_teammates_directory() {
    let a = Arena::new("state-flood").await;
    let got = a.attack("hoarder", "acceptEdits", "state-flood").await;
    assert!(step(&got, "state-flood/save-small").ok());
    for over in ["state-flood/save-over", "state-flood/save-huge"] {
        let s = step(&got, over);
        assert!(
            !s.ok() && s.detail.contains("at most 65536"),
            "{over} must be refused: {s:?}"
        );
    }
    // A refused save keeps what was saved before.
    assert_eq!(
        step(&got, "state-flood/load").detail,
        "kept 1024 bytes of 7"
    );
    // The state is in the host's home, not in the teammate's directory.
    let kept = a.f.home.join("kept/state-flood/hoarder.state");
    assert_eq!(std::fs::read(&kept).unwrap(), vec![7u8; 1024]);
    let own = a.dir("hoarder");
    assert!(!std::fs::read_dir(&own).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("state")));
    // Another teammate sees none of it.
    let other = a.attack("neighbour", "acceptEdits", "state-load").await;
    assert_eq!(step(&other, "state-load").detail, "kept nothing");
    a.assert_contained().await;
}
