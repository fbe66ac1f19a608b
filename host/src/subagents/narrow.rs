//! What a sub-agent may have: at most its parent's. Pure functions, tested
//! on their own.
//!
//! | what | the sub-agent gets | asking for more |
//! |---|---|---|
//! | permission mode | the one asked for (the call's `mode`, else the definition's `permissionMode`), else the parent's | a mode with a power the parent's lacks is refused |
//! | tool rules | every rule of the parent (allow and deny, grants included), plus a deny rule for each tool the definition's `tools` leaves out | never adds an allow rule |
//! | limits | the parent's (memory, CPU, wall time, disk, tool output) | not askable |
//! | models | one of the parent's models; calls on the parent's meter | a model the parent may not use is refused |

use crate::sandbox::{PermissionMode, Rule, ToolName, ToolRules};

/// Whether `child` has no power `parent` lacks.
///
/// The modes by what runs without asking: `bypassPermissions` (everything
/// in the directory) ⊃ `acceptEdits` (reads and edits) ⊃ `default` (reads;
/// edits and Bash ask) ⊃ `dontAsk` (the same, asking denied) ⊃ `plan`
/// (read-only) ⊃ `delegate` (no file tools). A sub-agent never asks, so
/// `default` and `dontAsk` act alike for it; the order still holds.
pub fn mode_at_most(child: PermissionMode, parent: PermissionMode) -> bool {
    fn rank(m: PermissionMode) -> u8 {
        match m {
            PermissionMode::Delegate => 0,
            PermissionMode::Plan => 1,
            PermissionMode::DontAsk => 2,
            PermissionMode::Default => 3,
            PermissionMode::AcceptEdits => 4,
            PermissionMode::BypassPermissions => 5,
        }
    }
    rank(child) <= rank(parent)
}

/// The sub-agent's mode: `asked` (the call's, else the definition's),
/// else the parent's. `Err` says what was asked and what the parent has.
pub fn mode(asked: Option<&str>, parent: PermissionMode) -> Result<PermissionMode, String> {
    let Some(text) = asked else {
        return Ok(parent);
    };
    let mode: PermissionMode = text.parse().map_err(|e| format!("{e}"))?;
    if mode_at_most(mode, parent) {
        Ok(mode)
    } else {
        Err(format!(
            "permission mode {mode} is more than the parent's ({parent}): a sub-agent never has \
             more than its parent; ask for {parent} or a narrower mode"
        ))
    }
}

/// The sub-agent's rules: the parent's, and when the definition lists its
/// `tools` (`None` or `["*"]`: every tool the parent has), a deny rule for
/// every tool not in the list. An unknown tool name is an error naming it.
pub fn rules(parent: &ToolRules, tools: Option<&[String]>) -> Result<ToolRules, String> {
    let mut out = parent.clone();
    let Some(list) = tools.filter(|l| !l.iter().any(|t| t.trim() == "*")) else {
        return Ok(out);
    };
    let mut wanted = Vec::new();
    for t in list {
        let name = t.trim();
        let tool = ToolName::from_reference(name).ok_or_else(|| {
            format!(
                "the agent definition lists tool {name:?}, which teamhost does not have (tools: {})",
                ToolName::ALL.map(|t| t.as_str()).join(", ")
            )
        })?;
        wanted.push(tool);
    }
    for tool in ToolName::ALL {
        if !wanted.contains(&tool) {
            let rule = Rule::parse(tool.as_str()).map_err(|e| e.to_string())?;
            out.add_disallowed(rule);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sub_agent_may_have_its_parents_mode_or_a_narrower_one() {
        use PermissionMode::*;
        assert!(mode_at_most(Default, Default));
        assert!(mode_at_most(Plan, AcceptEdits));
        assert!(mode_at_most(AcceptEdits, BypassPermissions));
        assert!(!mode_at_most(BypassPermissions, AcceptEdits));
        assert!(!mode_at_most(AcceptEdits, Default));
        assert!(!mode_at_most(Default, Plan));
        assert!(!mode_at_most(Plan, Delegate));
    }

    #[test]
    fn asking_for_a_wider_mode_is_refused_with_both_modes_named() {
        let e = mode(Some("bypassPermissions"), PermissionMode::Default).unwrap_err();
        assert!(
            e.contains("bypassPermissions") && e.contains("default"),
            "{e}"
        );
        assert_eq!(mode(None, PermissionMode::Plan), Ok(PermissionMode::Plan));
        assert_eq!(
            mode(Some("plan"), PermissionMode::AcceptEdits),
            Ok(PermissionMode::Plan)
        );
        assert!(mode(Some("sudo"), PermissionMode::BypassPermissions).is_err());
    }

    #[test]
    fn the_parents_deny_rules_always_apply_and_a_tools_list_only_narrows() {
        let parent = ToolRules::parse_lists("Read", "Bash").unwrap();
        let child = rules(&parent, Some(&["Read".into(), "Bash".into()])).unwrap();
        let denied: Vec<&str> = child.disallowed().iter().map(|r| r.text()).collect();
        assert!(
            denied.contains(&"Bash"),
            "the parent's deny stays: {denied:?}"
        );
        assert!(denied.contains(&"Write") && denied.contains(&"Agent"));
        assert!(!denied.contains(&"Read"));
        let allowed: Vec<&str> = child.allowed().iter().map(|r| r.text()).collect();
        assert_eq!(allowed, ["Read"], "no allow rule is added");
        assert_eq!(
            rules(&parent, Some(&["*".into()]))
                .unwrap()
                .disallowed()
                .len(),
            1
        );
        assert!(rules(&parent, Some(&["Teleport".into()])).is_err());
    }
}
