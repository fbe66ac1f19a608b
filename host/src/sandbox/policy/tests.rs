//! Tests of [`decide`]: the mode table, then each mode, coordination, deny
//! rules, Bash, path escapes and paths outside the capability directory. The
//! suggestions' JSON is tested in `suggestions.rs`.

use serde_json::json;

use super::super::{MailboxCall, MessagingCall, TasksCall, TeamCall};
use super::*;

const CAP: &str = "/work/cap";

fn ctx() -> PolicyContext {
    PolicyContext::new(CAP).with_plan_file("/home/lead/.teamhost/plans/p.md")
}

fn no_rules() -> ToolRules {
    ToolRules::default()
}

fn rules(allow: &[&str], deny: &[&str]) -> ToolRules {
    ToolRules::new(allow, deny).unwrap_or_else(|e| panic!("{e}"))
}

fn d(mode: PermissionMode, rules: &ToolRules, call: ToolCall) -> Decision {
    decide(mode, rules, &call, &ctx())
}

fn send() -> ToolCall {
    ToolCall::Coordination(CoordinationKind::Messaging(MessagingCall::Send))
}

/// `A`, `D` or `?` for a decision.
fn letter(decision: &Decision) -> char {
    match decision {
        Decision::Allow { .. } => 'A',
        Decision::Deny { .. } => 'D',
        Decision::Ask { .. } => '?',
    }
}

/// One call of every variant. The `match` has no `_` arm: a new
/// [`ToolCall`] variant fails to compile here until a test case exists,
/// just as it fails in `Target::of` until it has a policy.
fn one_of_each() -> Vec<ToolCall> {
    let calls = vec![
        ToolCall::read("src/a.rs"),
        ToolCall::write("src/a.rs", "x"),
        ToolCall::edit("src/a.rs", "a", "b"),
        ToolCall::glob("**/*.rs", None),
        ToolCall::grep("fn", Some("src")),
        ToolCall::bash("make"),
        send(),
    ];
    for call in &calls {
        match call {
            ToolCall::Read(_)
            | ToolCall::Write(_)
            | ToolCall::Edit(_)
            | ToolCall::Glob(_)
            | ToolCall::Grep(_)
            | ToolCall::Bash(_)
            | ToolCall::Coordination(_) => {}
        }
    }
    calls
}

#[test]
fn every_tool_call_variant_gets_a_decision_with_a_reason_in_every_mode() {
    for mode in PermissionMode::ALL {
        for call in one_of_each() {
            let decision = d(mode, &no_rules(), call.clone());
            assert!(!decision.reason().is_empty(), "{mode} {call:?}");
        }
    }
}

#[test]
fn the_mode_table_holds_for_each_tool_class_inside_and_outside() {
    // Columns: default, acceptEdits, bypassPermissions, plan, dontAsk, delegate.
    let rows: Vec<(&str, ToolCall, &str)> = vec![
        ("coordination", send(), "AAAAAA"),
        (
            "task claim",
            ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::Claim)),
            "AAAAAA",
        ),
        ("read inside", ToolCall::read("src/a.rs"), "AAAAAD"),
        ("glob inside", ToolCall::glob("src/**/*.rs", None), "AAAAAD"),
        ("grep inside", ToolCall::grep("x", None), "AAAAAD"),
        ("read outside", ToolCall::read("/etc/passwd"), "DDDDDD"),
        ("glob outside", ToolCall::glob("*", Some("/etc")), "DDDDDD"),
        ("grep outside", ToolCall::grep("x", Some("/tmp")), "DDDDDD"),
        ("write inside", ToolCall::write("src/a.rs", "x"), "?AADDD"),
        (
            "edit inside",
            ToolCall::edit("src/a.rs", "a", "b"),
            "?AADDD",
        ),
        ("write outside", ToolCall::write("/tmp/x", "x"), "DDDDDD"),
        ("edit outside", ToolCall::edit("/tmp/x", "a", "b"), "DDDDDD"),
        // The plan file lies outside the directory here: only plan mode
        // reaches it.
        (
            "plan file, outside",
            ToolCall::write("/home/lead/.teamhost/plans/p.md", "x"),
            "DDDADD",
        ),
        (
            "read plan file, outside",
            ToolCall::read("/home/lead/.teamhost/plans/p.md"),
            "DDDADD",
        ),
        ("bash", ToolCall::bash("make"), "??ADDD"),
        ("escape", ToolCall::read("../x"), "DDDDDD"),
    ];
    for (name, call, expected) in rows {
        let got: String = PermissionMode::ALL
            .into_iter()
            .map(|mode| letter(&d(mode, &no_rules(), call.clone())))
            .collect();
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn an_allow_rule_opens_asks_and_dont_ask_but_not_plan_delegate_or_a_path_outside() {
    let r = rules(&["Bash(make:*)", "Edit(src/**)", "Read(//etc/**)"], &[]);
    let rows: Vec<(&str, ToolCall, &str)> = vec![
        ("bash", ToolCall::bash("make all"), "AAADAD"),
        ("edit", ToolCall::edit("src/a.rs", "a", "b"), "AAADAD"),
        // `Read(//etc/**)` matches, but nothing could run it.
        ("read outside", ToolCall::read("/etc/hosts"), "DDDDDD"),
    ];
    for (name, call, expected) in rows {
        let got: String = PermissionMode::ALL
            .into_iter()
            .map(|mode| letter(&d(mode, &r, call.clone())))
            .collect();
        assert_eq!(got, expected, "{name}");
    }
}

// --- default -----------------------------------------------------------

#[test]
fn default_allows_reads_inside_the_capability_directory() {
    let decision = d(
        PermissionMode::Default,
        &no_rules(),
        ToolCall::read("README.md"),
    );
    assert!(decision.is_allow());
    assert_eq!(
        decision.reason(),
        "default mode allows reads inside the capability directory /work/cap: Read of \
         `README.md`"
    );
}

#[test]
fn default_asks_before_an_edit_and_suggests_accept_edits_or_a_rule() {
    let decision = d(
        PermissionMode::Default,
        &no_rules(),
        ToolCall::edit("src/main.rs", "a", "b"),
    );
    assert!(decision.is_ask());
    assert_eq!(
        decision.reason(),
        "default mode asks the lead before Edit of `src/main.rs`: no allow rule matches"
    );
    assert_eq!(
        decision.suggestions_json(),
        vec![
            json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}),
            json!({
                "type": "addRules",
                "rules": [{"toolName": "Edit", "ruleContent": "./src/main.rs"}],
                "behavior": "allow",
                "destination": "session"
            }),
        ]
    );
}

#[test]
fn a_suggested_edit_rule_allows_that_file_once_added() {
    let decision = d(
        PermissionMode::Default,
        &no_rules(),
        ToolCall::write("main.rs", "x"),
    );
    let Suggestion::AddRules { rules: values, .. } = &decision.suggestions()[1] else {
        panic!("expected addRules");
    };
    let mut granted = no_rules();
    granted.add_allowed(values[0].to_rule().unwrap());
    assert!(d(
        PermissionMode::Default,
        &granted,
        ToolCall::write("main.rs", "y")
    )
    .is_allow());
    // `./main.rs` is anchored: it does not grant src/main.rs.
    assert!(d(
        PermissionMode::Default,
        &granted,
        ToolCall::write("src/main.rs", "y")
    )
    .is_ask());
}

#[test]
fn default_asks_before_bash_and_suggests_a_prefix_rule_per_unallowed_part() {
    let r = rules(&["Bash(git:*)"], &[]);
    let decision = d(
        PermissionMode::Default,
        &r,
        ToolCall::bash("git pull && cargo test --lib && rm -rf target"),
    );
    assert!(decision.is_ask());
    assert_eq!(
        decision.suggestions_json(),
        vec![json!({
            "type": "addRules",
            "rules": [
                {"toolName": "Bash", "ruleContent": "cargo test:*"},
                {"toolName": "Bash", "ruleContent": "rm:*"}
            ],
            "behavior": "allow",
            "destination": "session"
        })]
    );
}

#[test]
fn a_command_with_a_substitution_asks_without_suggestions() {
    let r = rules(&["Bash(git:*)"], &[]);
    let decision = d(
        PermissionMode::Default,
        &r,
        ToolCall::bash("git log $(cat x)"),
    );
    assert!(decision.is_ask());
    assert!(decision.suggestions().is_empty());
}

#[test]
fn default_denies_a_read_outside_at_once_and_says_nothing_can_let_it_run() {
    let decision = d(
        PermissionMode::Default,
        &no_rules(),
        ToolCall::read("/tmp/x.txt"),
    );
    assert!(decision.is_deny());
    assert_eq!(
        decision.reason(),
        "Read of `/tmp/x.txt` is outside the capability directory /work/cap (/tmp/x.txt): \
         a teammate reaches nothing else, so no rule or answer of the lead can let it run; \
         use a path inside the directory"
    );
    assert!(decision.suggestions().is_empty());
}

// --- acceptEdits --------------------------------------------------------

#[test]
fn accept_edits_allows_edits_inside_and_denies_them_outside() {
    let mode = PermissionMode::AcceptEdits;
    let inside = d(mode, &no_rules(), ToolCall::write("/work/cap/new.txt", "x"));
    assert!(inside.is_allow());
    assert!(inside.reason().starts_with("acceptEdits mode allows edits"));
    let outside = d(
        mode,
        &no_rules(),
        ToolCall::write("/tmp/delegate-test/x", "x"),
    );
    assert!(outside.is_deny());
    assert!(
        outside.reason().starts_with(
            "Write to `/tmp/delegate-test/x` is outside the capability directory /work/cap \
             (/tmp/delegate-test/x)"
        ),
        "{}",
        outside.reason()
    );
}

#[test]
fn accept_edits_denies_a_read_outside_instead_of_asking() {
    // The reference asks here (seeds 002 §4.8.3: "all operations outside the
    // project directory trigger a request, Read included"), but a teammate's
    // tools cannot reach outside its directory: a "yes" would change nothing.
    let decision = d(
        PermissionMode::AcceptEdits,
        &no_rules(),
        ToolCall::read("/etc/hosts"),
    );
    assert!(decision.is_deny());
    assert!(
        decision
            .reason()
            .contains("outside the capability directory /work/cap (/etc/hosts)"),
        "{}",
        decision.reason()
    );
}

#[test]
fn accept_edits_asks_before_bash_unless_a_rule_allows_it() {
    let mode = PermissionMode::AcceptEdits;
    assert!(d(mode, &no_rules(), ToolCall::bash("mkdir -p /tmp/x")).is_ask());
    let r = rules(&["Bash(mkdir:*)"], &[]);
    let allowed = d(mode, &r, ToolCall::bash("mkdir -p /tmp/x"));
    assert_eq!(
        allowed.reason(),
        "Bash `mkdir -p /tmp/x` is allowed by rule `Bash(mkdir:*)` in allowedTools"
    );
}

// --- bypassPermissions --------------------------------------------------

#[test]
fn bypass_allows_everything_inside_and_bash() {
    let mode = PermissionMode::BypassPermissions;
    for call in [
        ToolCall::read("a"),
        ToolCall::write("a", "b"),
        ToolCall::edit("a", "b", "c"),
        ToolCall::bash("rm -rf target"),
        ToolCall::grep("x", None),
    ] {
        assert!(d(mode, &no_rules(), call.clone()).is_allow(), "{call:?}");
    }
}

#[test]
fn bypass_denies_a_path_outside_even_when_an_allow_rule_names_it() {
    let mode = PermissionMode::BypassPermissions;
    let decision = d(mode, &no_rules(), ToolCall::read("/etc/passwd"));
    assert!(decision.is_deny());
    assert_eq!(
        decision.reason(),
        "Read of `/etc/passwd` is outside the capability directory /work/cap \
         (/etc/passwd): a teammate reaches nothing else, so no rule or answer of the lead \
         can let it run; use a path inside the directory"
    );
    let r = rules(&["Read(//etc/**)"], &[]);
    assert_eq!(d(mode, &r, ToolCall::read("/etc/passwd")), decision);
}

#[test]
fn bypass_still_obeys_deny_rules() {
    let r = rules(&[], &["Bash(git push:*)", "Edit(.env)"]);
    let mode = PermissionMode::BypassPermissions;
    let push = d(mode, &r, ToolCall::bash("git push --force"));
    assert_eq!(
        push.reason(),
        "Bash `git push --force` is denied by rule `Bash(git push:*)` in disallowedTools \
         (a deny rule wins over every mode and allow rule)"
    );
    assert!(d(mode, &r, ToolCall::write("config/.env", "x")).is_deny());
    assert!(d(mode, &r, ToolCall::bash("git status")).is_allow());
}

// --- plan ---------------------------------------------------------------

#[test]
fn plan_allows_reading_and_writing_the_plan_file_only() {
    let mode = PermissionMode::Plan;
    let plan = "/home/lead/.teamhost/plans/p.md";
    assert!(d(mode, &no_rules(), ToolCall::write(plan, "# Plan")).is_allow());
    assert!(d(mode, &no_rules(), ToolCall::edit(plan, "a", "b")).is_allow());
    assert!(d(mode, &no_rules(), ToolCall::read(plan)).is_allow());
    assert!(d(mode, &no_rules(), ToolCall::read("src/a.rs")).is_allow());
    let other = d(mode, &no_rules(), ToolCall::write("src/a.rs", "x"));
    assert!(other.is_deny());
    assert_eq!(
        other.reason(),
        "plan mode is read-only: Write to `src/a.rs` is not allowed (only the plan file \
         /home/lead/.teamhost/plans/p.md may change); exit plan mode through plan \
         approval first"
    );
}

#[test]
fn plan_denies_bash_and_edits_even_when_a_rule_allows_them() {
    let r = rules(&["Bash", "Edit"], &[]);
    let bash = d(PermissionMode::Plan, &r, ToolCall::bash("ls"));
    assert!(bash.is_deny());
    assert!(bash
        .reason()
        .contains("exit plan mode through plan approval"));
    assert!(d(PermissionMode::Plan, &r, ToolCall::edit("a", "b", "c")).is_deny());
}

#[test]
fn plan_without_a_plan_file_denies_every_write() {
    let ctx = PolicyContext::new(CAP);
    let decision = decide(
        PermissionMode::Plan,
        &no_rules(),
        &ToolCall::write("plan.md", "x"),
        &ctx,
    );
    assert!(decision.is_deny());
    assert!(decision.reason().contains("no plan file is set"));
}

#[test]
fn a_relative_plan_file_is_inside_the_capability_directory() {
    let ctx = PolicyContext::new(CAP).with_plan_file(".plans/p.md");
    let write = |path: &str| {
        decide(
            PermissionMode::Plan,
            &no_rules(),
            &ToolCall::write(path, "x"),
            &ctx,
        )
    };
    assert!(write("/work/cap/.plans/p.md").is_allow());
    assert!(write("./.plans/x/../p.md").is_allow());
    assert!(write(".plans/q.md").is_deny());
}

#[test]
fn plan_denies_reading_outside_the_directory_except_the_plan_file() {
    let mode = PermissionMode::Plan;
    let outside = d(mode, &no_rules(), ToolCall::read("/etc/hosts"));
    assert!(outside.is_deny());
    assert!(
        outside
            .reason()
            .contains("outside the capability directory /work/cap (/etc/hosts)"),
        "{}",
        outside.reason()
    );
    // The plan file is outside too, and plan mode reads it all the same.
    let plan = d(
        mode,
        &no_rules(),
        ToolCall::read("/home/lead/.teamhost/plans/p.md"),
    );
    assert!(plan.is_allow(), "{}", plan.reason());
}

// --- dontAsk ------------------------------------------------------------

#[test]
fn dont_ask_denies_what_no_rule_pre_approves() {
    let r = rules(&["Bash(cargo test:*)", "Edit(~/**)"], &[]);
    let mode = PermissionMode::DontAsk;
    let make = d(mode, &r, ToolCall::bash("make"));
    assert_eq!(
        make.reason(),
        "dontAsk mode denies what no allow rule pre-approves: Bash `make` matches no rule \
         in allowedTools"
    );
    assert!(d(mode, &r, ToolCall::bash("cargo test --lib")).is_allow());
    assert!(d(mode, &r, ToolCall::edit("deep/x.rs", "a", "b")).is_allow());
    assert!(d(mode, &r, ToolCall::write("/tmp/x", "a")).is_deny());
}

#[test]
fn dont_ask_counts_reads_inside_the_directory_as_pre_approved() {
    let decision = d(
        PermissionMode::DontAsk,
        &no_rules(),
        ToolCall::read("src/a.rs"),
    );
    assert!(decision.is_allow());
    assert!(decision.reason().starts_with("dontAsk mode allows reads"));
}

// --- delegate -----------------------------------------------------------

#[test]
fn delegate_allows_only_coordination_even_with_allow_rules() {
    let r = rules(&["Read", "Bash", "Edit"], &[]);
    let read = d(PermissionMode::Delegate, &r, ToolCall::read("a"));
    assert_eq!(
        read.reason(),
        "delegate mode allows only coordination (team, tasks, messaging): Read of `a` is \
         not available until the teammate leaves delegate mode"
    );
    assert!(d(PermissionMode::Delegate, &r, ToolCall::bash("ls")).is_deny());
    assert!(d(PermissionMode::Delegate, &r, send()).is_allow());
}

#[test]
fn delegate_denies_sub_agents_even_with_an_agent_allow_rule() {
    let r = rules(&["Agent"], &[]);
    let sub = ToolCall::Coordination(CoordinationKind::Subagents);
    let decision = d(PermissionMode::Delegate, &r, sub.clone());
    assert!(decision.is_deny());
    assert!(decision.reason().contains("sub-agents are not available"));
    assert!(d(PermissionMode::Default, &r, sub).is_allow());
}

// --- coordination -------------------------------------------------------

#[test]
fn every_coordination_call_is_allowed_in_every_mode() {
    let kinds = [
        CoordinationKind::Mailbox(MailboxCall::Unread),
        CoordinationKind::Mailbox(MailboxCall::Take),
        CoordinationKind::Mailbox(MailboxCall::History),
        CoordinationKind::Mailbox(MailboxCall::Deliver),
        CoordinationKind::Messaging(MessagingCall::Send),
        CoordinationKind::Messaging(MessagingCall::Broadcast),
        CoordinationKind::Messaging(MessagingCall::RequestShutdown),
        CoordinationKind::Messaging(MessagingCall::RespondShutdown),
        CoordinationKind::Messaging(MessagingCall::RequestPlanApproval),
        CoordinationKind::Messaging(MessagingCall::RespondPlanApproval),
        CoordinationKind::Tasks(TasksCall::Create),
        CoordinationKind::Tasks(TasksCall::Get),
        CoordinationKind::Tasks(TasksCall::List),
        CoordinationKind::Tasks(TasksCall::Update),
        CoordinationKind::Tasks(TasksCall::Delete),
        CoordinationKind::Tasks(TasksCall::AddDependency),
        CoordinationKind::Tasks(TasksCall::Claim),
        CoordinationKind::Team(TeamCall::Whoami),
        CoordinationKind::Team(TeamCall::Roster),
    ];
    for mode in PermissionMode::ALL {
        for kind in kinds {
            let decision = d(mode, &no_rules(), ToolCall::Coordination(kind));
            assert!(decision.is_allow(), "{mode} {kind:?}");
        }
    }
}

#[test]
fn a_deny_rule_on_a_reference_tool_denies_its_coordination_calls() {
    let r = rules(&[], &["SendMessage", "TaskUpdate"]);
    let mode = PermissionMode::BypassPermissions;
    let broadcast = ToolCall::Coordination(CoordinationKind::Messaging(MessagingCall::Broadcast));
    let decision = d(mode, &r, broadcast);
    assert_eq!(
        decision.reason(),
        "`messaging.broadcast` is denied by rule `SendMessage` in disallowedTools (a deny \
         rule wins over every mode and allow rule)"
    );
    let deliver = ToolCall::Coordination(CoordinationKind::Mailbox(MailboxCall::Deliver));
    assert!(d(mode, &r, deliver).is_deny());
    let claim = ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::Claim));
    assert!(d(mode, &r, claim).is_deny());
    let list = ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::List));
    assert!(d(mode, &r, list).is_allow());
    // The teammate's own state and plan approval cannot be taken away.
    let unread = ToolCall::Coordination(CoordinationKind::Mailbox(MailboxCall::Unread));
    assert!(d(mode, &r, unread).is_allow());
    let plan = ToolCall::Coordination(CoordinationKind::Messaging(
        MessagingCall::RequestPlanApproval,
    ));
    assert!(d(PermissionMode::Plan, &r, plan).is_allow());
}

#[test]
fn answering_a_shutdown_request_survives_every_coordination_deny_rule_in_every_mode() {
    let r = rules(
        &[],
        &[
            "SendMessage",
            "TaskCreate",
            "TaskGet",
            "TaskUpdate",
            "TaskList",
        ],
    );
    let answer =
        || ToolCall::Coordination(CoordinationKind::Messaging(MessagingCall::RespondShutdown));
    for mode in PermissionMode::ALL {
        assert!(d(mode, &r, answer()).is_allow(), "{mode}");
        let send = ToolCall::Coordination(CoordinationKind::Messaging(MessagingCall::Send));
        assert!(d(mode, &r, send).is_deny(), "{mode}");
        let create = ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::Create));
        assert!(
            d(mode, &r, create)
                .reason()
                .contains("denied by rule `TaskCreate`"),
            "{mode}"
        );
    }
}

#[test]
fn coordination_calls_never_ask_the_lead() {
    let allow_nothing = rules(&[], &[]);
    for mode in PermissionMode::ALL {
        for kind in [
            CoordinationKind::Messaging(MessagingCall::Send),
            CoordinationKind::Tasks(TasksCall::Create),
            CoordinationKind::Tasks(TasksCall::Update),
        ] {
            assert!(
                !d(mode, &allow_nothing, ToolCall::Coordination(kind)).is_ask(),
                "{mode} {kind:?}"
            );
        }
    }
}

// --- deny wins ----------------------------------------------------------

#[test]
fn deny_wins_over_an_allow_rule_for_the_same_call() {
    let r = rules(
        &["Bash(git:*)", "Read"],
        &["Bash(git push:*)", "Read(secrets/**)"],
    );
    for mode in PermissionMode::ALL {
        assert!(d(mode, &r, ToolCall::bash("git push")).is_deny(), "{mode}");
        assert!(
            d(mode, &r, ToolCall::read("secrets/key")).is_deny(),
            "{mode}"
        );
    }
    assert!(d(PermissionMode::DontAsk, &r, ToolCall::bash("git pull")).is_allow());
    let both = rules(&["Edit"], &["Edit"]);
    assert!(d(
        PermissionMode::AcceptEdits,
        &both,
        ToolCall::edit("a", "b", "c")
    )
    .is_deny());
}

#[test]
fn deny_wins_over_the_plan_file() {
    let r = rules(&[], &["Write"]);
    let plan = "/home/lead/.teamhost/plans/p.md";
    assert!(d(PermissionMode::Plan, &r, ToolCall::write(plan, "x")).is_deny());
}

#[test]
fn a_read_deny_rule_stops_grep_and_glob_into_the_denied_directory() {
    let r = rules(&[], &["Read(secrets/**)"]);
    let mode = PermissionMode::BypassPermissions;
    assert!(d(mode, &r, ToolCall::grep("key", Some("secrets"))).is_deny());
    assert!(d(mode, &r, ToolCall::glob("secrets/*", None)).is_deny());
    // A search of the whole directory runs; the tool skips what is denied.
    assert!(d(mode, &r, ToolCall::grep("key", None)).is_allow());
    assert!(r
        .denies_file(ToolName::Grep, "secrets/key", &ctx())
        .is_some());
}

// --- the reference's Bash examples ---------------------------------------

#[test]
fn bash_git_prefix_allows_git_status_but_not_gitx_or_a_chained_command() {
    let r = rules(&["Bash(git:*)"], &[]);
    let mode = PermissionMode::DontAsk;
    assert!(d(mode, &r, ToolCall::bash("git status")).is_allow());
    assert!(d(mode, &r, ToolCall::bash("gitx status")).is_deny());
    assert!(d(mode, &r, ToolCall::bash("rm -rf /; git status")).is_deny());
    assert!(d(mode, &r, ToolCall::bash("git status && rm -rf /")).is_deny());
    assert!(d(mode, &r, ToolCall::bash("git status | sh")).is_deny());
    assert!(d(mode, &r, ToolCall::bash("git log `id`")).is_deny());
    assert!(d(mode, &r, ToolCall::bash("git log $(id)")).is_deny());
    let both = d(
        mode,
        &rules(&["Bash(git:*)", "Bash(npm test)"], &[]),
        ToolCall::bash("git pull && npm test"),
    );
    assert_eq!(
        both.reason(),
        "Bash `git pull && npm test` is allowed by rules `Bash(git:*)`, `Bash(npm test)` \
         in allowedTools (each part of the command matches one)"
    );
}

// --- path escapes -------------------------------------------------------

#[test]
fn paths_that_climb_out_are_denied_in_every_mode_whatever_the_rules() {
    let r = rules(&["Read", "Edit", "Read(//**)", "Edit(//**)"], &[]);
    for mode in PermissionMode::ALL {
        for call in [
            ToolCall::read("../x"),
            ToolCall::read("src/../../x"),
            ToolCall::write("src/../../../etc/passwd", "x"),
            ToolCall::edit("../cap/src/a.rs", "a", "b"),
            ToolCall::glob("../*", None),
            ToolCall::glob("*/../../*", None),
            ToolCall::grep("x", Some("..")),
        ] {
            let decision = d(mode, &r, call.clone());
            assert!(decision.is_deny(), "{mode} {call:?}");
            assert!(
                decision.reason().contains("through `..`"),
                "{}",
                decision.reason()
            );
        }
    }
    let escape = d(
        PermissionMode::BypassPermissions,
        &r,
        ToolCall::read("src/../../x"),
    );
    assert_eq!(
        escape.reason(),
        "Read of `src/../../x` climbs out of the capability directory /work/cap through \
         `..` (it resolves to /work/x); teamhost never allows that: name the file by its \
         absolute path"
    );
}

// --- paths outside the directory -----------------------------------------

#[test]
fn a_path_outside_is_denied_in_every_mode_whatever_the_allow_rules_and_never_asks() {
    let rule_sets = [
        no_rules(),
        rules(&["Read", "Edit"], &[]),
        rules(&["Read(//**)", "Edit(//**)"], &[]),
        rules(
            &[
                "Read(//etc/**)",
                "Edit(//tmp/**)",
                "Read(//work/capital/**)",
            ],
            &[],
        ),
    ];
    let calls = [
        (ToolCall::read("/etc/passwd"), "/etc/passwd"),
        (ToolCall::write("/tmp/x", "x"), "/tmp/x"),
        (ToolCall::edit("/tmp/x", "a", "b"), "/tmp/x"),
        (ToolCall::glob("*", Some("/etc")), "/etc"),
        (ToolCall::glob("/etc/*.conf", None), "/etc"),
        (ToolCall::grep("root", Some("/etc")), "/etc"),
        // A sibling whose name starts with the directory's is not inside it.
        (ToolCall::read("/work/capital/a"), "/work/capital/a"),
        (ToolCall::read("/"), "/"),
    ];
    for mode in PermissionMode::ALL {
        for r in &rule_sets {
            for (call, absolute) in &calls {
                let decision = d(mode, r, call.clone());
                assert!(decision.is_deny(), "{mode} {call:?}: {decision:?}");
                // `delegate`, and `plan` for an edit, take the tool away
                // first (step 3), with their own reason.
                let mode_first = mode == PermissionMode::Delegate
                    || (mode == PermissionMode::Plan && call.class() == ToolClass::Edit);
                if mode_first {
                    continue;
                }
                let reason = decision.reason();
                assert!(
                    reason.contains(&format!(
                        "is outside the capability directory /work/cap ({absolute})"
                    )) && reason.contains("no rule or answer of the lead can let it run"),
                    "{mode} {call:?}: {reason}"
                );
            }
        }
    }
}

#[test]
fn a_deny_rule_on_a_path_outside_still_names_the_rule() {
    // Deny rules come first, with their own reason.
    let r = rules(&[], &["Read(//etc/**)"]);
    let decision = d(PermissionMode::Default, &r, ToolCall::read("/etc/passwd"));
    assert!(decision.is_deny());
    assert!(
        decision
            .reason()
            .contains("is denied by rule `Read(//etc/**)` in disallowedTools"),
        "{}",
        decision.reason()
    );
}

#[test]
fn dot_dot_that_stays_inside_is_an_ordinary_path() {
    let decision = d(
        PermissionMode::AcceptEdits,
        &no_rules(),
        ToolCall::write("src/../b.rs", "x"),
    );
    assert!(decision.is_allow());
    assert!(
        decision.reason().ends_with("Write to `src/../b.rs`"),
        "{}",
        decision.reason()
    );
}

#[test]
fn tilde_rules_are_rooted_at_the_capability_directory() {
    let r = rules(&["Read(~/**)"], &[]);
    let mode = PermissionMode::DontAsk;
    assert!(d(mode, &r, ToolCall::grep("x", Some("/work/cap"))).is_allow());
    assert!(d(mode, &r, ToolCall::read("/home/me/.ssh/id_rsa")).is_deny());
    let deny_home = rules(&[], &["Edit(~/.git/**)"]);
    assert!(d(
        PermissionMode::BypassPermissions,
        &deny_home,
        ToolCall::write(".git/config", "x")
    )
    .is_deny());
}

// --- paths through symbolic links (`decide_on_disk`) -------------------

/// A real capability directory: `secrets/key`, `src/a.rs`, `other/`, and
/// the links each test adds.
struct LinkedTree {
    dir: tempfile::TempDir,
    ctx: PolicyContext,
}

impl LinkedTree {
    fn new() -> LinkedTree {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["secrets", "src", "other"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("secrets/key"), "k").unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        LinkedTree {
            ctx: PolicyContext::new(&root),
            dir,
        }
    }

    fn link(&self, target: &str, at: &str) {
        std::os::unix::fs::symlink(target, self.dir.path().join(at)).unwrap();
    }

    /// Looks the call up on disk, then decides it.
    fn decide(&self, mode: PermissionMode, rules: &ToolRules, call: ToolCall) -> Decision {
        let on_disk = self.ctx.look(&call);
        decide_on_disk(mode, rules, &call, &self.ctx, &on_disk)
    }
}

#[test]
fn a_deny_rule_cannot_be_walked_around_through_a_link() {
    let t = LinkedTree::new();
    t.link("secrets", "peek");
    let r = rules(&["Read"], &["Read(secrets/**)"]);
    let mode = PermissionMode::DontAsk;
    let through = t.decide(mode, &r, ToolCall::read("peek/key"));
    assert!(through.is_deny(), "{through:?}");
    assert!(
        through.reason().contains("`Read(secrets/**)`"),
        "{through:?}"
    );
    assert!(through.reason().contains("secrets/key"), "{through:?}");
    // The spelling alone would have let it through: the link is what matters.
    assert!(decide(mode, &r, &ToolCall::read("peek/key"), &t.ctx).is_allow());
    // Grep and Glob rooted in the link are judged the same way.
    assert!(t
        .decide(mode, &r, ToolCall::grep("k", Some("peek")))
        .is_deny());
    assert!(t.decide(mode, &r, ToolCall::glob("peek/*", None)).is_deny());
    // A file the deny rule does not cover still reads.
    assert!(t.decide(mode, &r, ToolCall::read("src/a.rs")).is_allow());
}

#[test]
fn an_allow_rule_cannot_reach_out_of_its_subtree_through_a_link() {
    let t = LinkedTree::new();
    t.link("../other", "src/out");
    let r = rules(&["Edit(src/**)"], &[]);
    let out = t.decide(
        PermissionMode::DontAsk,
        &r,
        ToolCall::write("src/out/x.rs", "x"),
    );
    assert!(out.is_deny(), "{out:?}");
    assert!(out.reason().contains("other/x.rs"), "{out:?}");
    // In default mode the same call asks instead of being pre-approved.
    let asked = t.decide(
        PermissionMode::Default,
        &r,
        ToolCall::write("src/out/x.rs", "x"),
    );
    assert!(asked.is_ask(), "{asked:?}");
    // A file really under src/ is still allowed.
    assert!(t
        .decide(
            PermissionMode::DontAsk,
            &r,
            ToolCall::edit("src/a.rs", "a", "b")
        )
        .is_allow());
}

#[test]
fn a_new_file_under_a_linked_directory_is_judged_where_the_link_leads() {
    let t = LinkedTree::new();
    t.link("../other", "src/gen");
    let r = rules(&["Edit(src/**)"], &["Edit(other/**)"]);
    let new = t.decide(
        PermissionMode::AcceptEdits,
        &r,
        ToolCall::write("src/gen/new/deep.rs", "x"),
    );
    assert!(new.is_deny(), "{new:?}");
    assert!(new.reason().contains("`Edit(other/**)`"), "{new:?}");
}

#[test]
fn a_dangling_link_is_judged_by_the_path_it_names() {
    let t = LinkedTree::new();
    t.link("../secrets/planted", "src/drop");
    let r = rules(&["Edit(src/**)"], &["Edit(secrets/**)"]);
    let drop = t.decide(
        PermissionMode::AcceptEdits,
        &r,
        ToolCall::write("src/drop", "x"),
    );
    assert!(drop.is_deny(), "{drop:?}");
}

#[test]
fn a_dot_dot_in_a_link_target_that_stays_inside_is_followed_and_allowed() {
    let t = LinkedTree::new();
    std::fs::create_dir_all(t.dir.path().join("src/real")).unwrap();
    t.link("../src/./real", "src/alias");
    let r = rules(&["Edit(src/**)"], &[]);
    let ok = t.decide(
        PermissionMode::DontAsk,
        &r,
        ToolCall::write("src/alias/x.rs", "x"),
    );
    assert!(ok.is_allow(), "{ok:?}");
}

#[test]
fn a_link_out_of_the_directory_or_a_link_loop_is_denied_in_every_mode() {
    let t = LinkedTree::new();
    t.link("/etc", "etc");
    t.link("loop2", "loop1");
    t.link("loop1", "loop2");
    let r = rules(&["Read", "Edit"], &[]);
    for mode in PermissionMode::ALL {
        let out = t.decide(mode, &r, ToolCall::read("etc/passwd"));
        assert!(out.is_deny(), "{mode} {out:?}");
        assert!(out.reason().contains("symbolic link `etc`"), "{out:?}");
        assert!(
            out.reason().contains("outside the capability directory"),
            "{out:?}"
        );
        let looped = t.decide(mode, &r, ToolCall::write("loop1/x", "x"));
        assert!(looped.is_deny(), "{mode} {looped:?}");
        assert!(looped.reason().contains("loop"), "{looped:?}");
    }
}

#[test]
fn a_call_with_no_links_decides_as_before() {
    let t = LinkedTree::new();
    let r = rules(&["Edit(src/**)"], &["Read(secrets/**)"]);
    for mode in PermissionMode::ALL {
        for call in one_of_each() {
            let looked = t.decide(mode, &r, call.clone());
            let spelled = decide(mode, &r, &call, &t.ctx);
            assert_eq!(letter(&looked), letter(&spelled), "{mode} {call:?}");
        }
    }
}

// --- commands that run other programs ----------------------------------

#[test]
fn a_prefix_rule_does_not_cover_a_command_that_runs_other_programs() {
    let r = rules(&["Bash(git:*)", "Bash(find:*)", "Bash(env:*)"], &[]);
    for command in [
        "git -c core.pager='touch x' -p log",
        "git --upload-pack='touch x' fetch origin",
        "git fetch --upload-pack='touch x' origin",
        "git st",
        "find . -exec touch x ;",
        "env sh -c 'touch x'",
        "git status && find . -exec touch x +",
    ] {
        let denied = d(PermissionMode::DontAsk, &r, ToolCall::bash(command));
        assert!(denied.is_deny(), "{command}: {denied:?}");
        assert!(
            denied.reason().contains("can run another program"),
            "{denied:?}"
        );
        assert!(denied.reason().contains("does not cover it"), "{denied:?}");
        let asked = d(PermissionMode::Default, &r, ToolCall::bash(command));
        assert!(asked.is_ask(), "{command}: {asked:?}");
        assert!(asked.suggestions().is_empty(), "{asked:?}");
        assert!(d(PermissionMode::AcceptEdits, &r, ToolCall::bash(command)).is_ask());
        assert!(d(
            PermissionMode::BypassPermissions,
            &r,
            ToolCall::bash(command)
        )
        .is_allow());
        assert!(d(PermissionMode::Plan, &r, ToolCall::bash(command)).is_deny());
    }
    let git_c = d(
        PermissionMode::DontAsk,
        &r,
        ToolCall::bash("git -c a.b=c log"),
    );
    assert!(
        git_c.reason().contains("`git -c` can run another program"),
        "{git_c:?}"
    );
    assert!(
        git_c.reason().contains("the rule `Bash(git:*)`"),
        "{git_c:?}"
    );
    // Plain uses are still pre-approved.
    for command in [
        "git status",
        "git log --oneline",
        "find . -name '*.rs'",
        "env",
    ] {
        let ok = d(PermissionMode::DontAsk, &r, ToolCall::bash(command));
        assert!(ok.is_allow(), "{command}: {ok:?}");
    }
}

#[test]
fn an_exact_rule_does_not_cover_a_command_that_runs_other_programs_but_bare_bash_does() {
    let exact = rules(&["Bash(git lg)"], &[]);
    assert!(d(PermissionMode::DontAsk, &exact, ToolCall::bash("git lg")).is_deny());
    let bare = rules(&["Bash"], &[]);
    assert!(d(
        PermissionMode::DontAsk,
        &bare,
        ToolCall::bash("git -c a.b=c log")
    )
    .is_allow());
    // Deny rules are unchanged.
    let deny = rules(&["Bash(git:*)"], &["Bash(git push:*)"]);
    let pushed = d(PermissionMode::DontAsk, &deny, ToolCall::bash("git push"));
    assert!(pushed.reason().contains("`Bash(git push:*)`"), "{pushed:?}");
}

#[test]
fn in_plan_mode_a_plan_file_that_is_a_link_does_not_let_plan_mode_write_where_it_leads() {
    let t = LinkedTree::new();
    t.link("src/a.rs", "plan.md");
    let ctx = t
        .ctx
        .clone()
        .with_plan_file(t.ctx.capability_dir().join("plan.md"));
    let call = ToolCall::write("plan.md", "x");
    let on_disk = ctx.look(&call);
    let through = decide_on_disk(PermissionMode::Plan, &no_rules(), &call, &ctx, &on_disk);
    assert!(through.is_deny(), "{through:?}");
    // The plan file itself, not a link, is still writable.
    std::fs::remove_file(t.dir.path().join("plan.md")).unwrap();
    let on_disk = ctx.look(&call);
    let own = decide_on_disk(PermissionMode::Plan, &no_rules(), &call, &ctx, &on_disk);
    assert!(own.is_allow(), "{own:?}");
}
