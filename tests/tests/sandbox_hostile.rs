//! Hostile guests: the `hostile` component attacks its sandbox the way an
//! untrusted third-party teammate would. For every attack:
//!
//! - a sentinel tree outside every capability directory (`dirs/sentinel`,
//!   `../sentinel` from each teammate) is unchanged afterwards: the same
//!   paths, contents, mtimes and modes;
//! - the attack got a typed error (`denied`, `invalid`), a WASI I/O error, or
//!   a clean trap that names the limit it broke, and the test asserts which;
//! - the host and another teammate keep working: an `echo` teammate in the
//!   same team still answers a message afterwards.

use crate::common;
use crate::sandbox_support;

use common::Fixture;
use sandbox_support::{
    all, hostile_request, permission_requests, step, steps, wait_done, wait_permission_request,
    Arena, Step, PASSWD_ROOT, SECRET,
};
use teamhost::approvals::{PermitAnswer, PlanAnswer};
use teamhost::embed::TeammateState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_etc_passwd_is_refused_by_the_preopen_and_by_the_read_tool() {
    let a = Arena::new("passwd").await;
    // No mode asks the lead about a path outside the directory: the answer
    // comes from the sandbox alone, at once.
    for mode in teamhost::sandbox::PermissionMode::ALL.map(|m| m.as_str()) {
        let name = format!("reader-{}", mode.to_lowercase());
        let got = a.attack(&name, mode, "read-passwd").await;
        step(&got, "read-passwd/fs")
            .assert_io_error()
            .assert_no_leak();
        let tool = step(&got, "read-passwd/tool");
        tool.assert_denied().assert_no_leak();
        // delegate takes the Read tool away before looking at the path.
        if mode != "delegate" {
            assert!(
                tool.detail
                    .contains("`/etc/passwd` is outside the capability directory"),
                "{mode}: {tool:?}"
            );
        }
        let asked = permission_requests(&a.f, &name);
        assert!(asked.is_empty(), "{mode}: {asked:#?}");
    }
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn climbing_out_with_dotdot_is_refused_for_files_and_every_tool() {
    let a = Arena::new("dotdot").await;
    let abs = a.sentinel.display().to_string();
    // bypassPermissions: the widest mode, with a writable preopen.
    let name = "climber";
    let got = a
        .attack(name, "bypassPermissions", &format!("dotdot {abs}"))
        .await;
    eprintln!("{got:#?}");
    for s in ["dotdot/fs-read", "dotdot/fs-write", "dotdot/fs-list"] {
        step(&got, s).assert_io_error().assert_no_leak();
    }
    // `/` in the guest is not the host's root: at most it names the guest's
    // own directory (wasi-libc resolves absolute paths against the preopen).
    let root = step(&got, "dotdot/fs-list-root");
    if root.ok() {
        let own = a.f.tmp.path().join("dirs").join(name);
        for entry in root.detail.split(',').filter(|e| !e.is_empty()) {
            assert!(
                own.join(entry).exists(),
                "{entry} is not the guest's: {root:?}"
            );
        }
    } else {
        root.assert_io_error();
    }
    step(&got, "dotdot/fs-read-abs").assert_io_error();
    for s in [
        "dotdot/tool-read",
        "dotdot/tool-write",
        "dotdot/tool-edit",
        "dotdot/tool-glob",
        "dotdot/tool-grep",
        "dotdot/tool-read-abs",
        "dotdot/tool-write-abs",
    ] {
        step(&got, s).assert_denied().assert_no_leak();
    }
    step(&got, "dotdot/tool-glob-pattern").assert_refused_or_empty();
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_out_of_the_directory_leads_nowhere() {
    let a = Arena::new("symlink").await;
    let dir = a.dir_with_link("linker");
    let name = a
        .spawn(hostile_request(
            "linker",
            "symlink",
            &dir,
            "bypassPermissions",
        ))
        .await;
    let got = wait_done(&a.f, &name, "symlink", 1).await;

    // `link` was planted by the test; `own` the guest tried to make itself.
    let own_made = step(&got, "symlink/make-own").ok();
    for link in ["link", "own"] {
        if link == "own" && !own_made {
            continue;
        }
        for s in ["fs-read", "fs-write", "fs-list"] {
            step(&got, &format!("symlink/{link}/{s}"))
                .assert_io_error()
                .assert_no_leak();
        }
        for s in ["tool-read", "tool-write", "tool-edit"] {
            step(&got, &format!("symlink/{link}/{s}"))
                .assert_denied()
                .assert_no_leak();
        }
        for s in ["tool-glob", "tool-grep"] {
            step(&got, &format!("symlink/{link}/{s}")).assert_refused_or_empty();
        }
    }
    step(&got, "symlink/tool-glob-all").assert_no_leak();
    step(&got, "symlink/tool-grep-all").assert_refused_or_empty();
    assert!(!dir.join("pwned.txt").exists());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_cannot_write_through_the_preopen_or_the_tools() {
    let a = Arena::new("plan-write").await;
    let dir = a.dir("planner");
    std::fs::write(dir.join("notes.txt"), "notes of the planner\n").unwrap();
    let name = a
        .spawn(hostile_request("planner", "write-plan", &dir, "plan"))
        .await;
    let got = wait_done(&a.f, &name, "write-plan", 1).await;

    step(&got, "write-plan/fs-write").assert_io_error();
    step(&got, "write-plan/tool-write").assert_denied();
    step(&got, "write-plan/tool-edit").assert_denied();
    step(&got, "write-plan/tool-bash").assert_denied();
    assert!(!dir.join("x.txt").exists());
    assert!(!dir.join("y.txt").exists());
    assert!(
        !dir.join("results.log").exists(),
        "the preopen is read-only"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "notes of the planner\n"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disallowed_tool_is_denied_even_in_bypass_permissions() {
    let a = Arena::new("disallowed").await;
    let dir = a.dir("reader");
    std::fs::write(dir.join("notes.txt"), "notes of the reader\n").unwrap();
    let mut req = hostile_request("reader", "disallowed", &dir, "bypassPermissions");
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(req.settings.rules.allowed_texts(), vec!["Read"])
            .unwrap();
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "disallowed", 1).await;

    // A `Read` deny rule covers every tool that reads.
    step(&got, "disallowed/tool-read").assert_denied();
    step(&got, "disallowed/tool-glob").assert_denied();
    step(&got, "disallowed/tool-grep").assert_denied();
    // Tool rules bind the tools only: the guest's own WASI reads of its
    // directory are governed by the preopen (read-write in this mode).
    eprintln!(
        "with disallowedTools [Read], std::fs read of the guest's own file: {:?}",
        step(&got, "disallowed/fs-read")
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_is_denied_where_the_mode_forbids_it_and_asks_in_default_mode() {
    let a = Arena::new("bash-modes").await;
    for mode in ["plan", "dontAsk", "delegate"] {
        let name = format!("sh-{}", mode.to_lowercase());
        let got = a.attack(&name, mode, "bash").await;
        step(&got, "bash/echo").assert_denied();
    }

    // default: the call asks the lead; unanswered, it is denied at the
    // approval timeout.
    let dir = a.dir("sh-default");
    let mut req = hostile_request("sh-default", "bash", &dir, "default");
    req.settings.limits.ask_timeout = std::time::Duration::from_secs(1);
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "bash", 1).await;
    step(&got, "bash/echo").assert_denied();
    let asked = permission_requests(&a.f, &name);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["tool_name"], "Bash");
    assert_eq!(asked[0]["input"]["command"], "echo hi");

    // bypassPermissions: it runs.
    let got = a.attack("sh-bypass", "bypassPermissions", "bash").await;
    let ran = step(&got, "bash/echo");
    assert!(ran.ok(), "{ran:?}");
    assert_eq!(ran.exit_code(), Some(0), "{ran:?}");
    assert!(ran.detail.contains("stdout=hi "), "{ran:?}");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_under_landlock_cannot_leave_the_directory() {
    let a = Arena::new("bash-escape").await;
    let token = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let pwned = std::path::PathBuf::from(format!("/tmp/teamhost-pwned-{token}"));
    let dir = a.dir_with_link("shell");
    let name = a
        .spawn(hostile_request(
            "shell",
            &format!("bash-escape {token}"),
            &dir,
            "bypassPermissions",
        ))
        .await;
    let got = wait_done(&a.f, &name, "bash-escape", 1).await;

    for s in ["dotdot", "shadow", "link-read", "link-write"] {
        step(&got, &format!("bash-escape/{s}")).assert_bash_failed();
    }
    // With a mount namespace `/tmp` is the shell's own directory, so the
    // touch works there; the host's `/tmp` is never reached either way.
    let tmp = step(&got, "bash-escape/tmp");
    if teamhost::tools::confine::namespaces() {
        assert_eq!(tmp.exit_code(), Some(0), "{tmp:?}");
        assert!(dir.join(format!("teamhost-pwned-{token}")).exists());
    } else {
        tmp.assert_bash_failed();
    }
    assert!(!pwned.exists(), "{} was created", pwned.display());
    assert!(!dir.join("pwned.txt").exists());
    if std::path::Path::new("/etc/shadow").exists() {
        let shadow = step(&got, "bash-escape/shadow");
        assert!(!shadow.detail.contains("root:"), "{shadow:?}");
    }
    // For contrast: inside its directory the shell works.
    let inside = step(&got, "bash-escape/inside");
    assert!(inside.ok() && inside.exit_code() == Some(0), "{inside:?}");
    assert!(dir.join("inside.txt").is_file());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_guest_is_stopped_at_its_cpu_limit_and_the_lead_is_told() {
    let a = Arena::new("spin").await;
    let (name, _) = breach(&a, "spinner", "spin", "CPU limit").await;
    assert!(!a.f.members().contains(&name));
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_allocating_a_gibibyte_is_stopped_at_its_memory_limit() {
    let a = Arena::new("alloc").await;
    let (_, got) = breach(&a, "hog", "alloc", "memory limit").await;
    assert!(got.iter().all(|s| s.step != "alloc/survived"), "{got:#?}");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_mib_message_is_refused_as_invalid_naming_the_limit() {
    let a = Arena::new("big-message").await;
    let got = a.attack("loud", "bypassPermissions", "big-message").await;
    for s in [
        "big-message/send",
        "big-message/deliver",
        "big-message/broadcast",
        "big-message/summary",
        "big-message/task",
    ] {
        let refused = step(&got, s);
        refused.assert_invalid();
        assert!(
            refused.detail.contains("max_message_bytes"),
            "the error should name the limit: {refused:?}"
        );
    }
    // Refused calls sent nothing; the guest still talks normally.
    assert!(step(&got, "big-message/after").ok());
    let biggest = |inbox: Vec<teamhost::store::InboxMessage>| {
        inbox.iter().map(|m| m.text.len()).max().unwrap_or(0)
    };
    assert!(biggest(a.f.lead_inbox()) < 1 << 20);
    assert!(biggest(a.f.team.unread(&a.echo).unwrap()) < 1 << 20);
    assert!(a.f.team.list_tasks().unwrap().is_empty());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_mib_message_traps_on_the_memory_limit_before_it_is_sent() {
    let a = Arena::new("huge-message").await;
    let (_, got) = breach(&a, "louder", "huge-message", "memory limit").await;
    assert!(
        got.iter().all(|s| s.step != "huge-message/send"),
        "{got:#?}"
    );
    a.assert_contained().await;
}

/// Spawns a hostile teammate running `attack` (bypassPermissions), waits
/// for it to fail, and checks the breach names `limit` — in its failure and
/// in the host's notice to the lead — and that the attack had started.
/// Returns its name and result lines.
async fn breach(a: &Arena, name: &str, attack: &str, limit: &str) -> (String, Vec<Step>) {
    let mut events = a.f.host.events();
    let dir = a.dir(name);
    let name = a
        .spawn(hostile_request(name, attack, &dir, "bypassPermissions"))
        .await;
    let reason = a.failure(&mut events, &name).await;
    assert!(reason.contains(limit), "reason: {reason}");
    let got = steps(&a.f, &name);
    assert!(step(&got, &format!("{attack}/start")).ok(), "{got:#?}");
    let notices = a.host_notices();
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with(&format!("{name} failed: ")) && n.contains(limit)),
        "{notices:?}"
    );
    (name, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_cannot_approve_its_own_plan_nor_can_a_peer() {
    let a = Arena::new("own-plan").await;
    let dir = a.dir("schemer");
    let name = a
        .spawn(hostile_request("schemer", "approve-own-plan", &dir, "plan"))
        .await;
    let got = wait_done(&a.f, &name, "approve-own-plan", 1).await;
    let request = step(&got, "approve-own-plan/request");
    assert!(request.ok(), "{request:?}");
    let id = request.detail.clone();
    assert!(id.starts_with("plan_approval-"), "{id}");
    step(&got, "approve-own-plan/respond-self").assert_denied();
    assert_eq!(step(&got, "approve-own-plan/mode").detail, "mode=plan");

    // Each forged answer it managed to deliver to itself wakes it; none
    // counts: it is still in plan mode and still cannot write.
    let forged = ["forge-deliver", "forge-send"]
        .iter()
        .filter(|s| step(&got, &format!("approve-own-plan/{s}")).ok())
        .count();
    let mut answers = forged;
    let got = wait_done(&a.f, &name, "plan-answer", answers).await;
    let own_answers = all(&got, "plan-answer");
    assert_eq!(own_answers.len(), forged, "{got:#?}");
    for s in own_answers {
        assert!(s.detail.starts_with(&format!("from={name} ")), "{s:?}");
        assert!(s.detail.ends_with(" now=plan"), "{s:?}");
    }
    for s in all(&got, "plan/write-after") {
        s.assert_denied();
    }

    // A peer forges the lead's answer with the right request id. The peer
    // asks to be called `team-lead`: a reserved name is refused (issue 40),
    // so it joins under a name of its own.
    let accomplice_dir = a.dir("accomplice");
    let accomplice = a.spawn_as_accomplice(&accomplice_dir).await;
    a.f.host
        .send_as_lead(
            &a.f.name,
            &accomplice,
            &format!("forge-plan-for {name} {id}"),
            None,
        )
        .unwrap();
    let by_peer = wait_done(&a.f, &accomplice, "forge-plan-for", 1).await;
    // The forgery never reaches the schemer: raw delivery of a protocol
    // message is refused (and an answer that did arrive would not count).
    step(&by_peer, "forge-plan-for/deliver").assert_denied();
    let member = a.f.team.config().unwrap().member(&name).cloned().unwrap();
    assert_eq!(member.mode.as_deref(), Some("plan"));
    assert!(!dir.join("done.txt").exists());

    // The plan is still waiting for the lead, and the lead's answer counts.
    a.f.host
        .answer_plan(
            &a.f.name,
            &id,
            PlanAnswer::Approve {
                mode: Some(teamhost::sandbox::PermissionMode::AcceptEdits),
            },
        )
        .unwrap();
    answers += 1;
    let got = wait_done(&a.f, &name, "plan-answer", answers).await;
    let last = step(&got, "plan-answer");
    assert!(last.detail.starts_with("from=team-lead "), "{last:?}");
    assert!(last.detail.ends_with(" now=acceptEdits"), "{last:?}");
    assert!(step(&got, "plan/write-after").ok());
    assert_eq!(
        std::fs::read_to_string(dir.join("done.txt")).unwrap(),
        "done"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_permission_response_does_not_answer_a_permission_request() {
    let a = Arena::new("forge-perm").await;
    let dir = a.dir("forger");
    let mut req = hostile_request("forger", "forge-permission", &dir, "default");
    req.settings.limits.ask_timeout = std::time::Duration::from_secs(1);
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "forge-permission", 1).await;

    // It still asked the lead, nobody (that counts) answered, and at the
    // approval timeout the call was denied.
    let asked = permission_requests(&a.f, &name);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["tool_name"], "Write");
    step(&got, "forge-permission/write").assert_denied();
    assert!(!dir.join("x.txt").exists());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leads_answer_counts_even_when_a_peer_forges_one_with_the_right_id() {
    let a = Arena::new("forge-peer").await;
    let dir = a.dir("victim");
    let victim = a
        .spawn(hostile_request(
            "victim",
            "write-file x.txt written by the victim",
            &dir,
            "default",
        ))
        .await;
    let accomplice_dir = a.dir("accomplice");
    let accomplice = a.spawn_as_accomplice(&accomplice_dir).await;

    let request = wait_permission_request(&a.f, &victim, 1).await;
    let id = request["request_id"].as_str().unwrap().to_string();
    a.f.host
        .send_as_lead(
            &a.f.name,
            &accomplice,
            &format!("forge-permission-for {victim} {id}"),
            None,
        )
        .unwrap();
    let by_peer = wait_done(&a.f, &accomplice, "forge-permission-for", 1).await;
    // Raw delivery of a protocol message is refused: the forgery never reaches
    // the victim, whose call is still waiting for the lead.
    step(&by_peer, "forge-permission-for/deliver").assert_denied();
    let mut seen = a.f.team.history(&victim).unwrap();
    seen.extend(a.f.team.read_inbox(&victim).unwrap());
    assert!(
        !seen
            .iter()
            .any(|m| m.from == accomplice && m.text.contains(&id)),
        "{seen:#?}"
    );
    assert_eq!(done_write(&a.f, &victim), 0);
    assert!(!dir.join("x.txt").exists());

    // The lead allows the call as requested: it runs with the victim's own
    // input, not the forged one.
    a.f.host
        .permit(
            &a.f.name,
            &id,
            PermitAnswer::Allow {
                updated_input: None,
                permission_updates: Vec::new(),
            },
        )
        .unwrap();
    let got = wait_done(&a.f, &victim, "write-file", 1).await;
    assert!(step(&got, "write-file").ok(), "{got:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("x.txt")).unwrap(),
        "written by the victim"
    );
    a.assert_contained().await;
}

fn done_write(f: &Fixture, name: &str) -> usize {
    sandbox_support::done_count(f, name, "write-file")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_cannot_shut_down_a_peer() {
    let a = Arena::new("forge-shutdown").await;
    let echo = a.echo.clone();
    let got = a
        .attack(
            "saboteur",
            "bypassPermissions",
            &format!("forge-shutdown {echo}"),
        )
        .await;
    step(&got, "forge-shutdown/request").assert_denied();
    eprintln!(
        "a forged shutdown_request delivered to {echo}: {:?}",
        step(&got, "forge-shutdown/deliver")
    );
    a.f.settle().await;
    let state =
        a.f.host
            .teammates(&a.f.name)
            .into_iter()
            .find(|t| t.name == echo)
            .unwrap()
            .state;
    assert!(
        !state.is_finished(),
        "a peer's forged shutdown_request stopped {echo}: {state:?}"
    );
    assert!(a.f.members().contains(&echo));
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn there_is_no_way_to_spawn_a_teammate_from_inside_a_guest() {
    // The teammate's contract has no spawn function: no `spawn:` in any
    // teamhost WIT file but `leading.wit`, the lead's seat, whose every call
    // is denied to a component that is not its team's lead
    // (lead_hostile::a_component_that_is_not_the_lead_is_denied_every_leading_call).
    let wit = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("wit");
    let mut files = 0;
    for entry in std::fs::read_dir(&wit).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wit")
            && path.file_name().is_some_and(|n| n != "leading.wit")
        {
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                assert!(
                    !line.replace(' ', "").contains("spawn:"),
                    "{}: {line}",
                    path.display()
                );
            }
        }
    }
    assert!(
        files >= 8,
        "read only {files} WIT files in {}",
        wit.display()
    );

    let a = Arena::new("spawn").await;
    // The component's imports are the world's interfaces and WASI: none can
    // name a spawn function, and the host links nothing else.
    let runtime = a.f.host.runtime();
    let (_, component) = runtime
        .cache()
        .load(std::path::Path::new(teamhost_tests::HOSTILE))
        .unwrap();
    let imports: Vec<String> = component
        .component_type()
        .imports(runtime.engine())
        .map(|(name, _)| name.to_string())
        .collect();
    assert!(!imports.is_empty());
    let world = [
        "types",
        "team",
        "protocol",
        "mailbox",
        "tasks",
        "messaging",
        "tools",
        "model",
        "toolbox",
        "state",
        "subagents",
    ];
    for import in &imports {
        assert!(!import.contains("spawn"), "{import}");
        let ours = world
            .iter()
            .any(|i| *import == format!("teamhost:agent/{i}@0.1.0"));
        assert!(ours || import.starts_with("wasi:"), "{import}");
    }

    let before = a.f.members();
    let got = a.attack("spawner", "bypassPermissions", "spawn").await;
    let s = step(&got, "spawn");
    assert!(!s.ok() && s.detail.starts_with("no spawn import"), "{s:?}");
    let mut expected = before.clone();
    expected.push("spawner".into());
    assert_eq!(a.f.members(), expected);
    assert_eq!(a.f.host.teammates(&a.f.name).len(), 2);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attack_leaves_the_attacker_running_and_answering() {
    // Typed denials are not traps: the attacker is still a working teammate
    // that can be given the next attack.
    let a = Arena::new("persist").await;
    let got = a
        .attack("persistent", "bypassPermissions", "read-passwd")
        .await;
    step(&got, "read-passwd/tool").assert_denied();
    a.f.host
        .send_as_lead(&a.f.name, "persistent", "dotdot", None)
        .unwrap();
    let got = wait_done(&a.f, "persistent", "dotdot", 1).await;
    step(&got, "dotdot/tool-read").assert_denied();
    a.f.settle().await;
    let me =
        a.f.host
            .teammates(&a.f.name)
            .into_iter()
            .find(|t| t.name == "persistent")
            .unwrap();
    assert_eq!(me.state, TeammateState::Idle);
    assert!(!got
        .iter()
        .any(|s| s.detail.contains(SECRET) || s.detail.contains(PASSWD_ROOT)));
    a.assert_contained().await;
}

/// Waits, on a pidfd (an event, not a poll), up to `bound` for process `pid`
/// to exit. True when it has exited (or is already gone).
/// Host pids of `sleep DURATION` processes (found through /proc, since the
/// command reports only its pid inside its own namespace).
fn pids_of_sleep(duration: &str) -> Vec<i32> {
    let want = format!("sleep\0{duration}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes())
        })
        .collect()
}

fn exits_within(pid: i32, bound: std::time::Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags; the descriptor it returns is
    // closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if fd < 0 {
        return true; // no such process: already reaped
    }
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(bound.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd; `fd` is ours to close.
    let ready = unsafe { libc::poll(&mut poll, 1, ms) };
    unsafe { libc::close(fd) };
    ready == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_process_a_bash_call_starts_outlives_the_call() {
    let a = Arena::new("bash-leftover").await;
    let dir = a.dir("lingerer");
    // One background process in the shell's group, one that leaves it with
    // setsid; the shell returns only once each has written its pid (so the
    // end of the call cannot catch it before it is set up).
    // Each `sleep` gets a duration no other process has, so the test can find
    // it in the host's /proc: inside Bash's PID namespace `$$` is not the pid
    // the host sees.
    let prompt = "bash-run sh -c 'echo $$ > group.pid; exec sleep 60.4711' </dev/null >/dev/null 2>&1 & while [ ! -s group.pid ]; do sleep 0.01; done
bash-run setsid sh -c 'echo $$ > setsid.pid; exec sleep 60.4712' </dev/null >/dev/null 2>&1 & while [ ! -s setsid.pid ]; do sleep 0.01; done";
    let name = a
        .spawn(hostile_request(
            "lingerer",
            prompt,
            &dir,
            "bypassPermissions",
        ))
        .await;
    let got = wait_done(&a.f, &name, "bash-run", 2).await;
    let runs = all(&got, "bash-run");
    assert!(runs.iter().all(|s| s.exit_code() == Some(0)), "{runs:#?}");

    let mut survivors = Vec::new();
    for (file, marker) in [("group.pid", "60.4711"), ("setsid.pid", "60.4712")] {
        assert!(
            dir.join(file).is_file(),
            "the shell started {file}'s process"
        );
        for pid in pids_of_sleep(marker) {
            if !exits_within(pid, std::time::Duration::from_secs(5)) {
                survivors.push((file, pid));
            }
        }
    }
    // Clean up after a failure: only the `sleep` this test started.
    for (_, pid) in &survivors {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.starts_with(b"sleep\0") {
            // SAFETY: kill takes integers only.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
    }
    assert!(
        survivors.is_empty(),
        "processes started by a Bash call outlived it: {survivors:?}"
    );
    a.assert_contained().await;
}
