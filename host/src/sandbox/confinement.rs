//! Which confinement a teammate gets, by permission mode: the preopen its
//! own file calls see ([`DirAccess`], fixed at spawn) and whether Bash must
//! run under kernel confinement ([`Confinement`]). Policy, so it lives here;
//! the runtime and the tools carry it out.

use super::rules::{RuleTool, ToolRules};
use super::PermissionMode;
use super::ToolName;

/// How the guest's own file system calls (WASI) may use its directory. Tool
/// calls are separate: they go through the sandbox and the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirAccess {
    /// No preopen at all (`delegate`: coordination only).
    None,
    /// Read-only: writes must go through the Write/Edit tools, which the
    /// sandbox checks (`default`, `plan`, `dontAsk`).
    ReadOnly,
    /// Read-write (`acceptEdits`, `bypassPermissions`).
    ReadWrite,
}

impl DirAccess {
    /// The preopen a teammate gets at spawn: the mode's ([`for_mode`]),
    /// narrowed by its deny rules. The guest's own file calls cannot be
    /// checked against rules path by path, so any deny rule on reading
    /// (`Read`, `Glob`, `Grep`, with or without a path) takes the preopen away,
    /// and any deny rule on writing (`Write`, `Edit`) makes it read-only: what
    /// remains goes through the tools, which apply every rule.
    ///
    /// [`for_mode`]: DirAccess::for_mode
    pub fn for_teammate(mode: PermissionMode, rules: &ToolRules) -> DirAccess {
        let denies = |tools: &[ToolName]| {
            rules
                .disallowed()
                .iter()
                .any(|r| matches!(r.tool(), RuleTool::Known(t) if tools.contains(t)))
        };
        let access = DirAccess::for_mode(mode);
        if denies(&[ToolName::Read, ToolName::Glob, ToolName::Grep]) {
            DirAccess::None
        } else if denies(&[ToolName::Write, ToolName::Edit]) && access == DirAccess::ReadWrite {
            DirAccess::ReadOnly
        } else {
            access
        }
    }

    /// The preopen a mode gets at spawn. A mode changed later (plan approval)
    /// does not widen it: extra writes go through the tools.
    pub fn for_mode(mode: PermissionMode) -> DirAccess {
        match mode {
            PermissionMode::AcceptEdits | PermissionMode::BypassPermissions => DirAccess::ReadWrite,
            PermissionMode::Default | PermissionMode::Plan | PermissionMode::DontAsk => {
                DirAccess::ReadOnly
            }
            PermissionMode::Delegate => DirAccess::None,
        }
    }
}

/// Whether Bash may run without kernel confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// Refuse unless Landlock confines the process (every mode but
    /// `bypassPermissions`).
    Required,
    /// Confine when the kernel can, run anyway when it cannot
    /// (`bypassPermissions`).
    BestEffort,
}

impl Confinement {
    /// What Bash gets in `mode`: best effort only when the person chose
    /// `bypassPermissions`; every other mode refuses to run unconfined.
    pub fn for_mode(mode: PermissionMode) -> Confinement {
        if mode == PermissionMode::BypassPermissions {
            Confinement::BestEffort
        } else {
            Confinement::Required
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(deny: &[&str]) -> ToolRules {
        ToolRules::new(Vec::<String>::new(), deny.iter().copied()).unwrap()
    }

    #[test]
    fn each_mode_gets_its_preopen() {
        use PermissionMode as M;
        assert_eq!(DirAccess::for_mode(M::AcceptEdits), DirAccess::ReadWrite);
        assert_eq!(
            DirAccess::for_mode(M::BypassPermissions),
            DirAccess::ReadWrite
        );
        assert_eq!(DirAccess::for_mode(M::Default), DirAccess::ReadOnly);
        assert_eq!(DirAccess::for_mode(M::Plan), DirAccess::ReadOnly);
        assert_eq!(DirAccess::for_mode(M::DontAsk), DirAccess::ReadOnly);
        assert_eq!(DirAccess::for_mode(M::Delegate), DirAccess::None);
    }

    #[test]
    fn bash_runs_unconfined_only_in_bypass_permissions() {
        for mode in PermissionMode::ALL {
            let want = if mode == PermissionMode::BypassPermissions {
                Confinement::BestEffort
            } else {
                Confinement::Required
            };
            assert_eq!(Confinement::for_mode(mode), want, "{mode}");
        }
    }

    #[test]
    fn deny_rules_narrow_the_preopen_so_they_cannot_be_bypassed() {
        let m = PermissionMode::BypassPermissions;
        assert_eq!(
            DirAccess::for_teammate(m, &rules(&[])),
            DirAccess::ReadWrite
        );
        assert_eq!(
            DirAccess::for_teammate(m, &rules(&["Read"])),
            DirAccess::None
        );
        assert_eq!(
            DirAccess::for_teammate(m, &rules(&["Grep(secrets/**)"])),
            DirAccess::None
        );
        assert_eq!(
            DirAccess::for_teammate(m, &rules(&["Edit(src/**)"])),
            DirAccess::ReadOnly
        );
        assert_eq!(
            DirAccess::for_teammate(m, &rules(&["Bash(rm:*)"])),
            DirAccess::ReadWrite
        );
        let plan = PermissionMode::Plan;
        assert_eq!(
            DirAccess::for_teammate(plan, &rules(&["Write"])),
            DirAccess::ReadOnly
        );
    }
}
