//! Sandbox benchmark: the cost of a permission decision, of a tool call run
//! directly, and of a tool call made by a guest through the WIT interface and
//! the sandbox, and of a guest's own WASI file write (counted against its
//! disk budget). Run with `cargo bench -p teamhost-tests --bench sandbox`;
//! prints a Markdown table.

use std::time::{Duration, Instant};

use teamhost::embed::{Event, Host, SpawnRequest, TeammateSettings};
use teamhost::home::Home;
use teamhost::sandbox::{
    decide, decide_on_disk, PermissionMode, PolicyContext, ToolCall, ToolRules,
};
use teamhost::store::NewTeam;
use teamhost::tools::{ToolBox, ToolLimits};

fn main() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bench.txt"), "a line of text\n".repeat(64)).unwrap();

    println!("| operation | per call | calls |");
    println!("|---|---:|---:|");
    let ctx = PolicyContext::new(&dir);
    let none = ToolRules::new(Vec::<String>::new(), Vec::<String>::new()).unwrap();
    let many = ToolRules::new(
        [
            "Read",
            "Bash(git:*)",
            "Bash(npm test)",
            "Edit(src/**)",
            "Write(docs/*.md)",
        ],
        (0..20).map(|i| format!("Edit(secret{i}/**)")),
    )
    .unwrap();
    let cases: [(&str, PermissionMode, &ToolRules, ToolCall); 4] = [
        (
            "decide: Read inside, no rules",
            PermissionMode::Default,
            &none,
            ToolCall::read("src/main.rs"),
        ),
        (
            "decide: Write, 25 rules",
            PermissionMode::AcceptEdits,
            &many,
            ToolCall::write("src/lib.rs", "x"),
        ),
        (
            "decide: compound Bash, 25 rules",
            PermissionMode::Default,
            &many,
            ToolCall::bash("git status && git diff | head"),
        ),
        (
            "decide: escape attempt",
            PermissionMode::BypassPermissions,
            &many,
            ToolCall::read("../../etc/passwd"),
        ),
    ];
    for (name, mode, rules, call) in cases {
        let n = 200_000;
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(decide(mode, rules, std::hint::black_box(&call), &ctx));
        }
        row(name, t.elapsed() / n, n);
    }

    // What round two's path check adds to a Read's decision: the same call
    // on a real file, decided on its spelling alone (as before) and after
    // looking where the path leads on disk (now).
    let real = ToolCall::read("bench.txt");
    let n = 100_000;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(decide(PermissionMode::Default, &many, &real, &ctx));
    }
    row(
        "decide: Read of a real file, spelling only (round one)",
        t.elapsed() / n,
        n,
    );
    let t = Instant::now();
    for _ in 0..n {
        let on_disk = ctx.look(std::hint::black_box(&real));
        std::hint::black_box(decide_on_disk(
            PermissionMode::Default,
            &many,
            &real,
            &ctx,
            &on_disk,
        ));
    }
    row(
        "look + decide: Read of a real file, resolved through links (round two)",
        t.elapsed() / n,
        n,
    );

    let tools = ToolBox::open(&dir, ToolLimits::default()).unwrap();
    let input = teamhost::sandbox::ReadInput {
        file_path: "bench.txt".into(),
        offset: None,
        limit: None,
    };
    let n = 20_000;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(tools.read(&input).unwrap());
    }
    row(
        "Read of a 1 KiB file, host side only (ToolBox)",
        t.elapsed() / n,
        n,
    );

    // Bash: the same `sh -c true` with the same scrubbed environment, first
    // as a plain child process (what Bash cost before any confinement),
    // then through the ToolBox with everything it runs under here.
    let n = 200;
    let t = Instant::now();
    for _ in 0..n {
        let status = std::process::Command::new("/bin/sh")
            .args(["-c", "true"])
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(status.status.success());
    }
    row(
        "Bash `true`, a plain child process (no confinement)",
        t.elapsed() / n,
        n,
    );
    let bash = teamhost::sandbox::BashInput {
        command: "true".into(),
        timeout: None,
    };
    let confinement = tools.confinement();
    let t = Instant::now();
    for _ in 0..n {
        let out = tools
            .bash(&bash, teamhost::tools::Confinement::BestEffort)
            .unwrap();
        assert_eq!(out.exit_code, Some(0));
    }
    row(
        &format!(
            "Bash `true` through the ToolBox ({})",
            describe(&confinement)
        ),
        t.elapsed() / n,
        n,
    );

    // The disk walk that follows every Bash call and every turn, which now
    // also clears set-id bits (a mode test on metadata it reads anyway).
    let walked = tmp.path().join("walked");
    std::fs::create_dir_all(&walked).unwrap();
    for i in 0..1_000 {
        std::fs::write(walked.join(format!("f{i}")), "x").unwrap();
    }
    let walker = ToolBox::open(&walked, ToolLimits::default()).unwrap();
    let n = 200;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(walker.disk_usage(100_000));
    }
    row(
        "disk walk of 1,000 files, as after every Bash call and turn (set-id check included)",
        t.elapsed() / n,
        n,
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let host = Host::new(Home::new(tmp.path().join("home"))).unwrap();
        host.create_team("bench", NewTeam::default()).unwrap();
        let req = SpawnRequest {
            settings: TeammateSettings {
                mode: Some(teamhost::sandbox::PermissionMode::AcceptEdits),
                auto_claim: false,
                ..Default::default()
            },
            ..SpawnRequest::new("probe", teamhost_tests::PROBE, "bench", &dir)
        };
        host.spawn("bench", req).await.unwrap();
        host.wait_idle("bench").await.unwrap();
        let team = host.team("bench").unwrap();
        let round = |what: &'static str, n: u32| {
            let host = host.clone();
            let team = team.clone();
            async move {
                let mut events = host.events();
                let t = Instant::now();
                host.send_as_lead("bench", "probe", &format!("{what} {n}"), None)
                    .unwrap();
                loop {
                    match tokio::time::timeout(Duration::from_secs(60), events.recv()).await {
                        Ok(Ok(Event::InboxChanged { agent, .. })) if agent == "team-lead" => {
                            let done = team
                                .take_where("team-lead", |m| {
                                    m.text.starts_with(&format!("{what} done"))
                                })
                                .unwrap();
                            if let Some(m) = done.first() {
                                assert_eq!(m.text, format!("{what} done {n}/{n}"));
                                return t.elapsed();
                            }
                        }
                        Ok(_) => {}
                        Err(_) => panic!("no answer from the probe"),
                    }
                }
            }
        };
        let base = round("read-loop", 0).await;
        let n = 5_000;
        let total = round("read-loop", n).await;
        row(
            "Read by a guest through WIT + sandbox + ToolBox (blocking pool)",
            total.saturating_sub(base) / n,
            n,
        );
        let base = round("open-loop", 0).await;
        let total = round("open-loop", n).await;
        row(
            "a guest's own WASI open + read + close of a 1 KiB file (guarded open-at)",
            total.saturating_sub(base) / n,
            n,
        );
        // The guest's own file writes, each counted against the disk
        // budget before it happens (runtime/wasi_writes.rs).
        let writes = |n: u32, kib: u32| {
            let host = host.clone();
            let team = team.clone();
            async move {
                let mut events = host.events();
                let t = Instant::now();
                host.send_as_lead("bench", "probe", &format!("write-loop {n} {kib}"), None)
                    .unwrap();
                loop {
                    match tokio::time::timeout(Duration::from_secs(120), events.recv()).await {
                        Ok(Ok(Event::InboxChanged { agent, .. })) if agent == "team-lead" => {
                            let done = team
                                .take_where("team-lead", |m| m.text.starts_with("write-loop done"))
                                .unwrap();
                            if let Some(m) = done.first() {
                                assert_eq!(m.text, format!("write-loop done {n}/{n}"));
                                return t.elapsed();
                            }
                        }
                        Ok(_) => {}
                        Err(_) => panic!("no answer from the probe"),
                    }
                }
            }
        };
        for (kib, n) in [(4u32, 20_000u32), (1024, 200)] {
            let base = writes(0, kib).await;
            let total = writes(n, kib).await;
            row(
                &format!("WASI write of {kib} KiB by a guest (counted against disk_bytes)"),
                total.saturating_sub(base) / n,
                n,
            );
        }
        host.shutdown_team("bench", "done", Duration::from_secs(10))
            .await
            .unwrap();
    });
}

/// What Bash ran under, for the row's name.
fn describe(e: &teamhost::tools::Enforcement) -> String {
    match e {
        teamhost::tools::Enforcement::Landlock {
            abi,
            seccomp,
            namespaces,
            cgroup,
            ..
        } => {
            let mut parts = vec![format!("Landlock ABI {abi}")];
            if *seccomp {
                parts.push("seccomp".into());
            }
            if *namespaces {
                parts.push("PID/mount/IPC namespaces".into());
            }
            match cgroup {
                Ok(kind) => parts.push(format!("cgroup {kind:?}")),
                Err(_) => parts.push("no cgroup".into()),
            }
            parts.push("rlimits".into());
            parts.join(" + ")
        }
        teamhost::tools::Enforcement::Unconfined { .. } => "unconfined".into(),
    }
}

fn row(name: &str, per_call: Duration, n: u32) {
    let ns = per_call.as_nanos();
    let shown = if ns >= 10_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    };
    println!("| {name} | {shown} | {n} |");
}
