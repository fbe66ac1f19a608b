//! Hostile tests: no host detail reaches a guest. A teammate sweeps every
//! failing call it can make (missing files, paths outside, denied writes,
//! malformed globs and regexes, Bash refused by its mode) and lists its
//! tools; none of the texts it gets back names the host's absolute path of
//! its directory, of the test's temporary directory, or of the teamhost home.

use crate::sandbox_support::{hostile_request, wait_done, Arena, Step};

/// Every string the guest got back that could carry a host path.
fn answers(got: &[Step]) -> Vec<&Step> {
    got.iter()
        .filter(|s| s.step.starts_with("exhaust/") && s.status != "DONE")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_to_a_sweep_of_failing_calls_names_a_host_path() {
    let a = Arena::new("host-paths").await;
    let tmp = std::fs::canonicalize(a.f.tmp.path()).unwrap();
    let home = std::fs::canonicalize(&a.f.home).unwrap();
    let mut swept = 0;
    // Modes that never ask the lead: every answer comes from the host alone.
    for mode in ["plan", "dontAsk", "delegate"] {
        let name = format!("sweeper-{}", mode.to_lowercase());
        let dir = a.dir_with_link(&name);
        let cap = std::fs::canonicalize(&dir).unwrap();
        let req = hostile_request(&name, "exhaust leak-sweep", &dir, mode);
        let name = a.spawn(req).await;
        let got = wait_done(&a.f, &name, "exhaust", 1).await;
        let answers = answers(&got);
        assert!(answers.len() > 20, "{got:#?}");
        // The sweep did meet failures of every kind it aims at.
        assert!(answers.iter().any(|s| s.detail.starts_with("denied: ")));
        assert!(answers.iter().any(|s| !s.ok()));
        for s in &answers {
            for host in [&cap, &dir, &tmp, &home, &a.f.tmp.path().to_path_buf()] {
                let host = host.to_string_lossy();
                assert!(
                    !s.detail.contains(host.as_ref()),
                    "{mode}: {} names the host path {host}: {s:?}",
                    s.step
                );
            }
            s.assert_no_leak();
        }
        swept += answers.len();
    }
    assert!(swept > 60);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_still_says_what_was_refused_in_the_guests_own_words() {
    let a = Arena::new("host-paths-words").await;
    let got = a.attack("speaker", "plan", "exhaust leak-sweep").await;
    let outside = crate::sandbox_support::step(&got, "exhaust/read-4");
    outside.assert_denied();
    assert!(
        outside.detail.contains("/etc/shadow"),
        "the path the guest spelled is kept: {outside:?}"
    );
    let write = crate::sandbox_support::step(&got, "exhaust/write-inside");
    write.assert_denied();
    assert!(write.detail.contains("inside.txt"), "{write:?}");
    a.assert_contained().await;
}
