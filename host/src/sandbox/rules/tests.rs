//! Tests of rule parsing, of which tools a rule covers and of
//! [`ToolRules`]; the helpers here are shared with the tests of the other
//! files. Globs, paths and Bash commands test themselves in their own files.

use super::*;
// The policy's context is the one the engine hands the rules (a test
// fixture only: the rules themselves do not use the policy).
use crate::sandbox::{rules_verdict, CoordinationKind, PolicyContext, RuleVerdict, ToolCall};

/// The context the rule tests resolve paths in.
pub(super) fn ctx() -> PolicyContext {
    PolicyContext::new("/work/cap")
}

/// Parses a rule that must parse.
pub(super) fn rule(s: &str) -> Rule {
    Rule::parse(s).unwrap_or_else(|e| panic!("{e}"))
}

fn problem(s: &str) -> RuleProblem {
    Rule::parse(s).unwrap_err().problem
}

// --- parsing -----------------------------------------------------------

#[test]
fn the_reference_examples_parse() {
    assert_eq!(rule("Read").tool(), &RuleTool::Known(ToolName::Read));
    assert_eq!(rule("Read").specifier(), None);
    assert_eq!(
        rule("Bash(git:*)").specifier(),
        Some(&Specifier::CommandPrefix(vec!["git".into()]))
    );
    assert_eq!(
        rule("Bash(npm test)").specifier(),
        Some(&Specifier::Command(vec!["npm".into(), "test".into()]))
    );
    let Some(Specifier::Path(src)) = rule("Edit(src/**)").specifier().cloned() else {
        panic!("Edit(src/**) has a path specifier");
    };
    assert_eq!(src.base(), PathBase::CapabilityDir);
    assert!(src.is_anchored());
    assert_eq!(src.segments(), ["src", "**"]);
    let Some(Specifier::Path(home)) = rule("Read(~/**)").specifier().cloned() else {
        panic!("Read(~/**) has a path specifier");
    };
    assert_eq!(home.base(), PathBase::CapabilityDir);
    let Some(Specifier::Path(abs)) = rule("Read(//tmp/**)").specifier().cloned() else {
        panic!("Read(//tmp/**) has a path specifier");
    };
    assert_eq!(abs.base(), PathBase::FilesystemRoot);
}

#[test]
fn a_rule_keeps_its_text_for_reasons() {
    assert_eq!(rule("  Bash(git:*)  ").to_string(), "Bash(git:*)");
}

#[test]
fn malformed_rules_are_refused_with_what_is_wrong() {
    assert_eq!(problem(""), RuleProblem::Empty);
    assert_eq!(problem("   "), RuleProblem::Empty);
    assert_eq!(problem("Bash(git:*"), RuleProblem::MissingClose);
    assert_eq!(problem("Bash(git:*)x"), RuleProblem::TrailingText);
    assert_eq!(
        problem("Bash()"),
        RuleProblem::EmptySpecifier(ToolName::Bash)
    );
    assert_eq!(
        problem("Read(  )"),
        RuleProblem::EmptySpecifier(ToolName::Read)
    );
    assert_eq!(problem("(Read)"), RuleProblem::BadToolName);
    assert_eq!(problem("Re ad"), RuleProblem::BadToolName);
    assert_eq!(problem("1Read"), RuleProblem::BadToolName);
    assert_eq!(problem("Read)"), RuleProblem::BadToolName);
    assert_eq!(
        problem("bash(git:*)"),
        RuleProblem::WrongCase(ToolName::Bash)
    );
    assert_eq!(
        problem("sendmessage"),
        RuleProblem::WrongCase(ToolName::SendMessage)
    );
    assert_eq!(problem("Bash(:*)"), RuleProblem::EmptyCommandPrefix);
    assert_eq!(problem("Bash(git *)"), RuleProblem::BashWildcard);
    assert_eq!(problem("Bash(*:*)"), RuleProblem::BashWildcard);
    assert_eq!(
        problem("Bash(git status; rm:*)"),
        RuleProblem::CompoundCommand
    );
    assert_eq!(problem("Bash(a && b)"), RuleProblem::CompoundCommand);
    assert_eq!(problem("Bash(echo $(id))"), RuleProblem::CompoundCommand);
    assert_eq!(problem("Edit(../x/**)"), RuleProblem::ClimbsOut);
    assert_eq!(problem("Edit(src/../../x)"), RuleProblem::ClimbsOut);
    assert_eq!(problem("Read(~root/.ssh)"), RuleProblem::OtherUsersHome);
    assert_eq!(
        problem("SendMessage(team-lead)"),
        RuleProblem::NoSpecifier(ToolName::SendMessage)
    );
}

#[test]
fn a_rule_error_names_the_rule_the_list_and_the_fix() {
    let err = ToolRules::new(["Read"], ["Bash(rm:*"]).unwrap_err();
    assert_eq!(err.list, Some(RuleList::Disallowed));
    assert_eq!(
        err.to_string(),
        "invalid tool rule \"Bash(rm:*\" in disallowedTools: the specifier has no \
         closing `)`; rules look like `Read`, `Bash(git:*)`, `Bash(npm test)` or \
         `Edit(src/**)`"
    );
    let err = Rule::parse("read").unwrap_err();
    assert!(err.to_string().contains("did you mean `Read`?"), "{err}");
}

#[test]
fn unknown_tools_parse_match_nothing_and_are_listed() {
    let rules = ToolRules::new(["WebSearch(query:rust)", "Read"], ["mcp__db__drop"]).unwrap();
    assert_eq!(rules.unknown_tools(), ["WebSearch", "mcp__db__drop"]);
    let web = rule("WebSearch(query:rust)");
    assert_eq!(
        web.specifier(),
        Some(&Specifier::Opaque("query:rust".into()))
    );
    for tool in ToolName::ALL {
        assert!(!web.covers_tool(tool));
    }
}

/// `WebFetch(domain:…)`, as Claude Code writes it into a member's rules,
/// parses (a teammate its lead spawned must start) and matches no call:
/// hosts are the network rules' to decide. A bare `WebFetch` names the tool.
#[test]
fn webfetch_domain_rules_parse_and_match_no_call() {
    let fetch = ToolCall::Coordination(CoordinationKind::Fetch);
    let ctx = PolicyContext::new("/w");
    let domain = ToolRules::new(["WebFetch(domain:example.com)"], [] as [&str; 0]).unwrap();
    assert!(domain.unknown_tools().is_empty());
    assert_eq!(
        rule("WebFetch(domain:example.com)").specifier(),
        Some(&Specifier::Opaque("domain:example.com".into()))
    );
    assert!(matches!(
        rules_verdict(&domain, &fetch, &ctx),
        RuleVerdict::Neither
    ));
    let denied = ToolRules::new([] as [&str; 0], ["WebFetch"]).unwrap();
    assert!(matches!(
        rules_verdict(&denied, &fetch, &ctx),
        RuleVerdict::Denied(_)
    ));
}

#[test]
fn the_reference_list_form_splits_outside_parentheses() {
    assert_eq!(
        split_list("Bash(git:*) Edit Read"),
        ["Bash(git:*)", "Edit", "Read"]
    );
    assert_eq!(split_list("Bash,Edit,Read"), ["Bash", "Edit", "Read"]);
    assert_eq!(
        split_list(" Bash(npm test), Edit(src/**)  "),
        ["Bash(npm test)", "Edit(src/**)"]
    );
    let rules = ToolRules::parse_lists("Bash(git:*) Edit", "Write").unwrap();
    assert_eq!(rules.allowed().len(), 2);
    assert_eq!(rules.disallowed()[0].text(), "Write");
    assert_eq!(
        Rule::parse_list("Bash(git:* Read").unwrap_err().problem,
        RuleProblem::MissingClose
    );
}

// --- which tools a rule covers ----------------------------------------

#[test]
fn a_read_rule_covers_every_tool_that_reads_and_an_edit_rule_every_tool_that_edits() {
    let read = rule("Read");
    assert!(read.covers_tool(ToolName::Read));
    assert!(read.covers_tool(ToolName::Glob));
    assert!(read.covers_tool(ToolName::Grep));
    assert!(!read.covers_tool(ToolName::Write));
    let edit = rule("Edit");
    assert!(edit.covers_tool(ToolName::Edit));
    assert!(edit.covers_tool(ToolName::Write));
    assert!(!edit.covers_tool(ToolName::Read));
    let write = rule("Write");
    assert!(write.covers_tool(ToolName::Write));
    assert!(!write.covers_tool(ToolName::Edit));
    assert!(!rule("Grep").covers_tool(ToolName::Read));
}

// --- deny rules on the files a search returns ------------------------

#[test]
fn a_deny_rule_names_files_glob_and_grep_must_skip() {
    let rules = ToolRules::new([""; 0], ["Read(secrets/**)"]).unwrap();
    let c = ctx();
    assert!(rules
        .denies_file(ToolName::Grep, "secrets/key", &c)
        .is_some());
    assert!(rules
        .denies_file(ToolName::Glob, "/work/cap/secrets/a", &c)
        .is_some());
    assert!(rules
        .denies_file(ToolName::Grep, "src/main.rs", &c)
        .is_none());
}

// --- commands that run other programs (`runs_programs.rs`) ---------------

/// What [`runs_programs`] names for the first part of `command`, if anything.
fn runs(command: &str) -> Option<String> {
    let parsed = Command::parse(command);
    let words = parsed.parts.first().expect("a command");
    runs_programs(words).map(|found| found.what)
}

#[test]
fn every_row_of_the_runs_programs_table_names_what_runs_another_program() {
    let cases: &[(&str, &str)] = &[
        // Commands that run the command they are given.
        ("env sh -c 'touch x'", "env"),
        ("/usr/bin/env rm x", "env"),
        ("nice -n 5 rm x", "nice"),
        ("nohup rm x", "nohup"),
        ("time rm x", "time"),
        ("timeout 5 rm x", "timeout"),
        ("stdbuf -oL rm x", "stdbuf"),
        ("ionice -c3 rm x", "ionice"),
        ("command rm x", "command"),
        ("builtin eval x", "builtin"),
        ("xargs rm", "xargs"),
        ("sudo rm x", "sudo"),
        ("su", "su"),
        ("doas rm x", "doas"),
        ("pkexec rm", "pkexec"),
        ("runuser -u a rm", "runuser"),
        ("chroot . sh", "chroot"),
        ("setsid rm x", "setsid"),
        ("flock f rm x", "flock"),
        ("watch rm x", "watch"),
        ("parallel rm ::: x", "parallel"),
        ("exec rm x", "exec"),
        ("eval 'rm x'", "eval"),
        ("source ./x.sh", "source"),
        (". ./x.sh", "."),
        ("chrt 1 rm", "chrt"),
        ("taskset 1 rm", "taskset"),
        ("unshare rm", "unshare"),
        ("nsenter rm", "nsenter"),
        ("strace rm", "strace"),
        ("ltrace rm", "ltrace"),
        ("valgrind rm", "valgrind"),
        ("script -c rm", "script"),
        ("expect -c x", "expect"),
        ("systemd-run rm", "systemd-run"),
        ("sg g rm", "sg"),
        ("firejail rm", "firejail"),
        ("bwrap rm", "bwrap"),
        // Shells.
        ("sh -c 'rm x'", "sh"),
        ("bash x.sh", "bash"),
        ("dash", "dash"),
        ("zsh -c x", "zsh"),
        ("ksh", "ksh"),
        ("mksh", "mksh"),
        ("ash", "ash"),
        ("fish -c x", "fish"),
        ("csh", "csh"),
        ("tcsh", "tcsh"),
        ("busybox sh", "busybox"),
        // Interpreters with inline code.
        ("python -c 'import os'", "python -c"),
        ("python3 -Sc 'x'", "python3 -Sc"),
        ("pypy3 -c x", "pypy3 -c"),
        ("perl -e 'system 1'", "perl -e"),
        ("perl -ne 'print'", "perl -ne"),
        ("perl -E x", "perl -E"),
        ("ruby -e x", "ruby -e"),
        ("lua -e x", "lua -e"),
        ("Rscript -e x", "Rscript -e"),
        ("node -e x", "node -e"),
        ("node --eval=x", "node --eval=x"),
        ("nodejs -p x", "nodejs -p"),
        ("bun --print x", "bun --print"),
        ("php -r x", "php -r"),
        // awk and sed.
        ("awk 'BEGIN{system(\"id\")}'", "awk system()/|"),
        ("gawk '{print | \"sh\"}'", "gawk system()/|"),
        ("mawk -f prog.awk", "mawk -f"),
        ("nawk '@load \"x\"'", "nawk system()/|"),
        ("sed e x", "sed e"),
        ("sed '1e id' x", "sed e"),
        ("sed -e 's/a/id/e' x", "sed e"),
        ("gsed '/re/e id'", "gsed e"),
        ("sed -f script.sed x", "sed -f"),
        // find.
        ("find . -exec touch x ;", "find -exec"),
        ("find . -execdir x {} +", "find -execdir"),
        ("find . -ok x ;", "find -ok"),
        ("find . -okdir x ;", "find -okdir"),
        // tar, rsync, remote shells, zip.
        ("tar --to-command=sh -xf a.tar", "tar --to-command=sh"),
        (
            "tar --use-compress-program sh -cf a a",
            "tar --use-compress-program",
        ),
        ("tar -I sh -cf a a", "tar -I"),
        ("tar -cIf sh a", "tar -cIf"),
        ("tar xIf sh a", "tar xIf"),
        (
            "tar --checkpoint-action=exec=sh -cf a a",
            "tar --checkpoint-action=exec=sh",
        ),
        ("tar --info-script=x -cf a a", "tar --info-script=x"),
        (
            "tar --new-volume-script=x -cf a a",
            "tar --new-volume-script=x",
        ),
        ("tar -F x -cf a a", "tar -F"),
        ("tar --rsh-command=x -cf h:a a", "tar --rsh-command=x"),
        ("rsync -e sh a b", "rsync -e"),
        ("rsync -ave sh a b", "rsync -ave"),
        ("rsync --rsh=sh a b", "rsync --rsh=sh"),
        ("rsync --rsync-path=x a b", "rsync --rsync-path=x"),
        ("rsync a host:b", "rsync host:path"),
        ("ssh host id", "ssh"),
        ("scp a host:b", "scp"),
        ("sftp host", "sftp"),
        ("rsh host", "rsh"),
        ("zip -T a.zip x", "zip -T"),
        ("zip -TT sh a.zip x", "zip -TT"),
        ("zip --unzip-command=sh a.zip x", "zip --unzip-command=sh"),
        ("zip --test a.zip x", "zip --test"),
        // Pagers and editors.
        ("less x", "less"),
        ("more x", "more"),
        ("most x", "most"),
        ("pg x", "pg"),
        ("man git", "man"),
        ("vi x", "vi"),
        ("vim x", "vim"),
        ("nvim x", "nvim"),
        ("view x", "view"),
        ("vimdiff a b", "vimdiff"),
        ("ex x", "ex"),
        ("ed x", "ed"),
        ("emacs x", "emacs"),
        ("nano x", "nano"),
        ("pico x", "pico"),
        ("joe x", "joe"),
        ("mg x", "mg"),
    ];
    for (command, what) in cases {
        assert_eq!(runs(command).as_deref(), Some(*what), "{command}");
    }
}

#[test]
fn every_git_row_of_the_runs_programs_table_names_the_option() {
    let cases: &[(&str, &str)] = &[
        ("git -c core.pager=sh log", "git -c"),
        (
            "git --config-env=core.pager=X log",
            "git --config-env=core.pager=X",
        ),
        ("git --exec-path=/tmp status", "git --exec-path=/tmp"),
        ("git -p log", "git -p"),
        ("git --paginate log", "git --paginate"),
        ("git -C sub -c a.b=c status", "git -c"),
        (
            "git fetch --upload-pack=sh origin",
            "git fetch --upload-pack",
        ),
        (
            "git push --receive-pack=sh origin",
            "git push --receive-pack",
        ),
        ("git push --exec=sh origin", "git push --exec"),
        (
            "git archive --remote=x --exec=sh HEAD",
            "git archive --exec",
        ),
        ("git diff --ext-diff", "git diff --ext-diff"),
        ("git init --template=t", "git init --template"),
        ("git clone ext::sh x", "git clone ext::"),
        ("git clone -u sh url", "git clone -u"),
        ("git fetch -u sh", "git fetch -u"),
        ("git pull -u sh", "git pull -u"),
        ("git ls-remote -u sh url", "git ls-remote -u"),
        ("git archive -u sh", "git archive -u"),
        ("git clone -c core.sshCommand=sh url", "git clone -c"),
        (
            "git clone --config=core.sshCommand=sh url",
            "git clone --config=core.sshCommand=sh",
        ),
        ("git difftool", "git difftool"),
        ("git mergetool", "git mergetool"),
        ("git filter-branch --tree-filter sh", "git filter-branch"),
        ("git instaweb", "git instaweb"),
        ("git send-email x", "git send-email"),
        ("git citool", "git citool"),
        ("git gui", "git gui"),
        ("git web--browse x", "git web--browse"),
        ("git help log", "git help"),
        ("git credential fill", "git credential"),
        ("git pwn", "git pwn"),
        ("git st", "git st"),
        ("git rebase -x sh main", "git rebase -x"),
        ("git rebase --exec=sh main", "git rebase --exec"),
        ("git --upload-pack=sh fetch", "git fetch --upload-pack"),
        ("git rebase -i main", "git rebase -i"),
        ("git rebase --interactive main", "git rebase --interactive"),
        ("git bisect run sh", "git bisect run"),
        ("git submodule foreach sh", "git submodule foreach"),
        ("git grep -Osh x", "git grep -Osh"),
        (
            "git grep --open-files-in-pager=sh x",
            "git grep --open-files-in-pager=sh",
        ),
        ("git config alias.st '!sh'", "git config alias.st"),
        ("git config Alias.St '!sh'", "git config alias.st"),
        ("git config --add core.pager sh", "git config core.pager"),
        ("git config core.hooksPath h", "git config core.hookspath"),
        ("git config set pager.log sh", "git config pager.log"),
        ("git config filter.x.clean sh", "git config filter.x.clean"),
        (
            "git config credential.helper sh",
            "git config credential.helper",
        ),
        ("git config include.path x", "git config include.path"),
        (
            "git config includeIf.onbranch:x.path y",
            "git config includeif.onbranch:x.path",
        ),
        (
            "git config sequence.editor sh",
            "git config sequence.editor",
        ),
        ("git config gpg.program sh", "git config gpg.program"),
        ("git config diff.x.command sh", "git config diff.x.command"),
        (
            "git config mergetool.x.cmd sh",
            "git config mergetool.x.cmd",
        ),
        (
            "git config diff.x.textconv sh",
            "git config diff.x.textconv",
        ),
        (
            "git config remote.o.uploadpack sh",
            "git config remote.o.uploadpack",
        ),
        (
            "git config remote.o.receivepack sh",
            "git config remote.o.receivepack",
        ),
        (
            "git config gpg.ssh.program sh",
            "git config gpg.ssh.program",
        ),
        ("git config --edit", "git config --edit"),
        ("git config -e", "git config -e"),
        ("git commit", "git commit"),
        ("git commit -a", "git commit"),
        ("git commit -e -m x", "git commit"),
        ("git merge topic", "git merge"),
        ("git tag -a v1", "git tag"),
        ("git tag -s v1", "git tag"),
    ];
    for (command, what) in cases {
        assert_eq!(runs(command).as_deref(), Some(*what), "{command}");
    }
}

#[test]
fn commands_that_run_only_themselves_are_not_flagged() {
    for command in [
        "git status",
        "git",
        "git --version",
        "git log --oneline",
        "git -C sub status",
        "git --no-pager log",
        "git diff HEAD",
        "git push -u origin main",
        "git commit -m 'x'",
        "git commit -am x",
        "git commit --amend --no-edit",
        "git commit -F msg.txt",
        "git merge --ff-only topic",
        "git merge -m x topic",
        "git tag v1",
        "git tag -a v1 -m x",
        "git config user.name x",
        "git config --get alias.st",
        "git config --list",
        "git rebase main",
        "git grep x",
        "git bisect start",
        "git submodule update",
        "env",
        "env A=1",
        "env -0",
        "nice",
        "python x.py",
        "python -m pytest",
        "perl x.pl",
        "node x.js",
        "awk '{print $1}' f",
        "awk -F: '{print $1}' f",
        "sed -n '1,5p' f",
        "sed 's/a/b/g' f",
        "sed -e 's/e/E/' f",
        "sed -i 's/x/y/' f",
        "find . -name '*.rs'",
        "find . -delete",
        "tar -cf a.tar src",
        "tar xzf a.tgz",
        "rsync -a src/ dst/",
        "zip -r a.zip src",
        "ls -la",
        "cat x",
        "cargo test",
        "make",
    ] {
        assert_eq!(runs(command), None, "{command}");
    }
}
