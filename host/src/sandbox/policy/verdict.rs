//! What a list of rules alone says about one call, without a mode: the
//! approval policy's question ("does a rule of the manifest's
//! `[approvals.policy]` allow or deny this request?"). Unlike [`decide`],
//! a call no rule names is neither allowed nor denied: the caller escalates
//! it.

use super::{decide_on_disk, OnDisk, PermissionMode, PolicyContext, Target, ToolCall, ToolRules};

/// The rules' verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleVerdict {
    /// A deny rule matches (named), on the path as spelled or as it leads.
    Denied(String),
    /// Allow rules match (named), and nothing about the call itself (a
    /// path out of the directory, a link leading out, a command that runs
    /// other programs through its options) takes the allowing away.
    Allowed(Vec<String>),
    /// No rule speaks for or against it.
    Neither,
}

/// The verdict of `rules` on `call` for a teammate whose context is `ctx`.
/// Looks where the call's path leads on disk (like [`decide_on_disk`]
/// after [`PolicyContext::look`]). Deny rules win over allow rules.
pub fn rules_verdict(rules: &ToolRules, call: &ToolCall, ctx: &PolicyContext) -> RuleVerdict {
    let on_disk = ctx.look(call);
    verdict_on_disk(rules, call, ctx, &on_disk)
}

fn verdict_on_disk(
    rules: &ToolRules,
    call: &ToolCall,
    ctx: &PolicyContext,
    on_disk: &OnDisk,
) -> RuleVerdict {
    let target = Target::of(call, ctx, on_disk);
    let subject = target.subject();
    let real = target.real_subject();
    let denied = rules
        .first_deny(&subject)
        .or_else(|| real.as_ref().and_then(|r| rules.first_deny(r)));
    if let Some(rule) = denied {
        return RuleVerdict::Denied(rule.to_string());
    }
    let Some(matched) = rules.allowing(real.as_ref().unwrap_or(&subject)) else {
        return RuleVerdict::Neither;
    };
    // The engine in `dontAsk` (no asking, no mode grants past reads) with
    // the same rules: it refuses escapes, links out and smuggled programs.
    if decide_on_disk(PermissionMode::DontAsk, rules, call, ctx, on_disk).is_allow() {
        RuleVerdict::Allowed(matched.iter().map(|r| r.to_string()).collect())
    } else {
        RuleVerdict::Neither
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> ToolRules {
        ToolRules::new(allow.iter().copied(), deny.iter().copied()).unwrap()
    }

    #[test]
    fn an_allow_rule_allows_and_a_deny_rule_wins_over_it() {
        let ctx = PolicyContext::new("/nonexistent/cap");
        let r = rules(&["Bash(cargo test:*)", "Bash"], &["Bash(rm:*)"]);
        assert_eq!(
            rules_verdict(&r, &ToolCall::bash("cargo test -q"), &ctx),
            RuleVerdict::Allowed(vec!["Bash(cargo test:*)".into()])
        );
        assert_eq!(
            rules_verdict(&r, &ToolCall::bash("rm -rf x"), &ctx),
            RuleVerdict::Denied("Bash(rm:*)".into())
        );
    }

    #[test]
    fn a_call_no_rule_names_is_neither() {
        let ctx = PolicyContext::new("/nonexistent/cap");
        let r = rules(&["Bash(cargo test:*)"], &["Bash(rm:*)"]);
        assert_eq!(
            rules_verdict(&r, &ToolCall::bash("git push"), &ctx),
            RuleVerdict::Neither
        );
        // A read is allowed by every mode, but not by these rules.
        assert_eq!(
            rules_verdict(&r, &ToolCall::read("src/lib.rs"), &ctx),
            RuleVerdict::Neither
        );
    }

    #[test]
    fn a_command_that_runs_other_programs_is_not_allowed_by_a_prefix_rule() {
        let ctx = PolicyContext::new("/nonexistent/cap");
        let r = rules(&["Bash(git:*)"], &[]);
        assert_eq!(
            rules_verdict(&r, &ToolCall::bash("git -c core.pager=sh log"), &ctx),
            RuleVerdict::Neither
        );
    }

    #[test]
    fn a_path_out_of_the_directory_is_never_allowed() {
        let ctx = PolicyContext::new("/nonexistent/cap");
        let r = rules(&["Edit"], &[]);
        assert_eq!(
            rules_verdict(&r, &ToolCall::write("../x", "y"), &ctx),
            RuleVerdict::Neither
        );
        assert_eq!(
            rules_verdict(&r, &ToolCall::write("src/x", "y"), &ctx),
            RuleVerdict::Allowed(vec!["Edit".into()])
        );
    }
}
