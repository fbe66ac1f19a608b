//! Hostile tests: rules judge what a call does, not how it is spelled
//! (class 4). A link the guest makes cannot walk a deny rule around or take
//! an allow rule out of its subtree, and a command-prefix rule such as
//! `Bash(git:*)` does not cover a command that runs another program through
//! its own options or the repository's config: `dontAsk` denies it,
//! `default` asks the lead, and the marker the smuggled program would
//! create never appears.

use std::path::Path;

use teamhost::approvals::PermitAnswer;

use crate::sandbox_support::{
    all, hostile_request, permission_requests, step, wait_done, wait_permission_request, Arena,
    SECRET,
};

/// The file the alias the teammate writes into its repository's own config
/// would create.
const ALIAS_MARKER: &str = "pwned-alias";

/// One command that runs another program through an allowed command's
/// options.
struct Smuggler {
    /// The command, as the guest sends it.
    command: &'static str,
    /// What the refusal must say.
    why: &'static str,
    /// The file the smuggled program creates if it runs.
    marker: &'static str,
    /// Whether it really runs where Bash is allowed outright (a pager needs
    /// a terminal, which Bash's captured output is not; `git config` only
    /// stores the alias).
    runs_unasked: bool,
}

const SMUGGLERS: [Smuggler; 6] = [
    Smuggler {
        command: "git -c core.pager='touch pwned-pager' -p log",
        why: "`git -c` can run another program",
        marker: "pwned-pager",
        runs_unasked: false,
    },
    Smuggler {
        command: "git -c alias.pwn='!touch pwned-c-alias' pwn",
        why: "`git -c` can run another program",
        marker: "pwned-c-alias",
        runs_unasked: true,
    },
    Smuggler {
        command: "git fetch --upload-pack='touch pwned-upload' .",
        why: "`git fetch --upload-pack` can run another program",
        marker: "pwned-upload",
        runs_unasked: true,
    },
    Smuggler {
        command: "find . -maxdepth 0 -exec touch pwned-find {} +",
        why: "`find -exec` can run another program",
        marker: "pwned-find",
        runs_unasked: true,
    },
    Smuggler {
        command: "env sh -c 'touch pwned-env'",
        why: "`env` can run another program",
        marker: "pwned-env",
        runs_unasked: true,
    },
    Smuggler {
        command: "git config alias.pwn '!touch pwned-alias-config'",
        why: "`git config alias.pwn` can run another program",
        marker: "pwned-alias-config",
        runs_unasked: false,
    },
];

/// `bash-run` lines for `smugglers`.
fn bash_lines<'s>(smugglers: impl IntoIterator<Item = &'s Smuggler>) -> Vec<String> {
    smugglers
        .into_iter()
        .map(|s| format!("bash-run {}", s.command))
        .collect()
}

/// The rules every Bash test here runs under.
fn bash_rules() -> Vec<String> {
    ["Bash(git:*)", "Bash(find:*)", "Bash(env:*)", "Edit"]
        .map(String::from)
        .to_vec()
}

/// Makes `dir` a git repository with one commit, so `git log` has
/// something to page.
fn git_repo(dir: &Path) {
    std::fs::write(dir.join("README"), "a repository\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "README"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "first",
        ][..],
    ] {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git is installed");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
}

fn assert_no_marker(dir: &Path) {
    let markers = SMUGGLERS.iter().map(|s| s.marker).chain([ALIAS_MARKER]);
    for marker in markers {
        assert!(
            !dir.join(marker).exists(),
            "{marker} appeared: a smuggled program ran"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_the_guest_makes_cannot_walk_a_deny_rule_around_or_an_allow_rule_out_of_its_subtree()
{
    let a = Arena::new("rules-links").await;
    let dir = a.dir("linker");
    for d in ["secrets", "src", "other"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("secrets/key"), format!("{SECRET} in secrets\n")).unwrap();
    let prompt = "read-file secrets/key\n\
                  bash-run ln -s secrets peek\n\
                  read-file peek/key\n\
                  bash-run ln -s ../other src/out\n\
                  write-file src/out/pwned.txt pwned\n\
                  write-file src/fine.txt fine\n\
                  read-file src/fine.txt";
    let mut req = hostile_request("linker", prompt, &dir, "dontAsk");
    // `ln` is allowed: making a link is not the attack, using it is.
    req.settings.rules = teamhost::sandbox::ToolRules::new(
        ["Read", "Edit(src/**)", "Bash(ln:*)"]
            .map(String::from)
            .to_vec(),
        req.settings.rules.disallowed_texts(),
    )
    .unwrap();
    req.settings.rules = teamhost::sandbox::ToolRules::new(
        req.settings.rules.allowed_texts(),
        vec!["Read(secrets/**)"],
    )
    .unwrap();
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "read-file", 3).await;

    let links = all(&got, "bash-run");
    assert_eq!(links.len(), 2, "{got:#?}");
    for link in &links {
        assert_eq!(
            link.exit_code(),
            Some(0),
            "the guest could not make its link: {link:?}"
        );
    }
    let reads = all(&got, "read-file");
    // As spelled and through the link, the deny rule holds.
    reads[0].assert_denied().assert_no_leak();
    let peek = reads[1];
    peek.assert_denied().assert_no_leak();
    assert!(
        peek.detail.contains("`Read(secrets/**)`") && peek.detail.contains("secrets/key"),
        "the refusal should name the rule and where the link leads: {peek:?}"
    );
    let writes = all(&got, "write-file");
    let out = writes[0];
    out.assert_denied();
    assert!(
        out.detail.contains("other/pwned.txt"),
        "the refusal should say where the link leads: {out:?}"
    );
    assert!(!dir.join("other/pwned.txt").exists());
    // The rules still allow what they name.
    assert!(writes[1].ok(), "{got:#?}");
    assert!(
        reads[2].ok() && reads[2].detail.contains("fine"),
        "{got:#?}"
    );
    assert!(permission_requests(&a.f, &name).is_empty());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_dont_ask_mode_a_git_prefix_rule_does_not_cover_commands_that_run_other_programs() {
    let a = Arena::new("rules-dontask").await;
    let dir = a.dir("smuggler");
    git_repo(&dir);
    let mut prompt = vec!["bash-run git status".to_owned()];
    prompt.extend(bash_lines(&SMUGGLERS));
    prompt.push(format!(
        "write-file .git/config [alias] pwn = \"!touch {ALIAS_MARKER}\""
    ));
    prompt.push("bash-run git pwn".into());
    prompt.push("bash-run git log --oneline".into());
    let mut req = hostile_request("smuggler", &prompt.join("\n"), &dir, "dontAsk");
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(bash_rules(), req.settings.rules.disallowed_texts())
            .unwrap();
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "bash-run", SMUGGLERS.len() + 3).await;

    let runs = all(&got, "bash-run");
    assert_eq!(runs.len(), SMUGGLERS.len() + 3, "{got:#?}");
    assert_eq!(runs[0].exit_code(), Some(0), "git status: {:?}", runs[0]);
    for (s, run) in SMUGGLERS.iter().zip(&runs[1..]) {
        run.assert_denied();
        assert!(run.detail.contains(s.why), "{}: {run:?}", s.command);
        assert!(
            run.detail.contains("does not cover it"),
            "{}: {run:?}",
            s.command
        );
    }
    // An alias the teammate wrote into its own repository's config: the
    // subcommand is not a built-in, so the rule does not cover it.
    assert!(step(&got, "write-file").ok(), "{got:#?}");
    let alias = runs[SMUGGLERS.len() + 1];
    alias.assert_denied();
    assert!(alias.detail.contains("`git pwn`"), "{alias:?}");
    // A plain git command still runs.
    let log = runs[SMUGGLERS.len() + 2];
    assert_eq!(log.exit_code(), Some(0), "{log:?}");
    assert!(log.detail.contains("first"), "{log:?}");
    assert_no_marker(&dir);
    assert!(permission_requests(&a.f, &name).is_empty());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_default_mode_a_command_that_runs_other_programs_asks_the_lead_and_a_denial_holds() {
    let a = Arena::new("rules-default").await;
    let dir = a.dir("asker");
    git_repo(&dir);
    let mut prompt = bash_lines(&SMUGGLERS);
    prompt.push("bash-run git status".into());
    let mut req = hostile_request("asker", &prompt.join("\n"), &dir, "default");
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(bash_rules(), req.settings.rules.disallowed_texts())
            .unwrap();
    let name = a.spawn(req).await;

    for (n, s) in SMUGGLERS.iter().enumerate() {
        let request = wait_permission_request(&a.f, &name, n + 1).await;
        assert_eq!(request["tool_name"], "Bash", "{request}");
        assert_eq!(request["input"]["command"], s.command, "{request}");
        assert!(request.to_string().contains(s.why), "{request}");
        let id = request["request_id"].as_str().unwrap().to_owned();
        let answer = PermitAnswer::Deny {
            reason: "not that".into(),
        };
        a.f.host.permit(&a.f.name, &id, answer).unwrap();
    }
    let got = wait_done(&a.f, &name, "bash-run", SMUGGLERS.len() + 1).await;
    let runs = all(&got, "bash-run");
    for (run, s) in runs.iter().zip(&SMUGGLERS) {
        run.assert_denied();
        assert!(run.detail.contains("not that"), "{}: {run:?}", s.command);
    }
    // `git status` is pre-approved: it ran, and asked nothing.
    let status = runs[SMUGGLERS.len()];
    assert_eq!(status.exit_code(), Some(0), "{status:?}");
    assert_eq!(permission_requests(&a.f, &name).len(), SMUGGLERS.len());
    assert_no_marker(&dir);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smuggled_programs_are_real_where_bash_is_allowed_outright() {
    // The control: in bypassPermissions the same commands run and their
    // markers appear, so the markers' absence above is the rules' doing.
    let a = Arena::new("rules-control").await;
    let dir = a.dir("control");
    git_repo(&dir);
    let real: Vec<&Smuggler> = SMUGGLERS.iter().filter(|s| s.runs_unasked).collect();
    let prompt = bash_lines(real.iter().copied());
    let mut req = hostile_request("control", &prompt.join("\n"), &dir, "bypassPermissions");
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(bash_rules(), req.settings.rules.disallowed_texts())
            .unwrap();
    let name = a.spawn(req).await;
    let got = wait_done(&a.f, &name, "bash-run", real.len()).await;
    for s in real {
        let marker = s.marker;
        assert!(
            dir.join(marker).exists(),
            "{marker} did not appear: {got:#?}"
        );
    }
    a.assert_contained().await;
}
