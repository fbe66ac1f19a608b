//! Tests of rule parsing, of which tools a rule covers and of
//! [`ToolRules`]; the helpers here are shared with the tests of the other
//! files. Globs, paths and Bash commands test themselves in their own files.

use super::*;

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
    let rules =
        ToolRules::new(["WebFetch(domain:example.com)", "Read"], ["mcp__db__drop"]).unwrap();
    assert_eq!(rules.unknown_tools(), ["WebFetch", "mcp__db__drop"]);
    let web = rule("WebFetch(domain:example.com)");
    assert_eq!(
        web.specifier(),
        Some(&Specifier::Opaque("domain:example.com".into()))
    );
    for tool in ToolName::ALL {
        assert!(!web.covers_tool(tool));
    }
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
