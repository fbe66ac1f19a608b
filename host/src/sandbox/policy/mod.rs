//! The engine: [`decide`] (mode, rules, call, context) → [`Decision`], and
//! the [`Suggestion`]s an ask carries (the reference's
//! `permission_suggestions`, seeds 002 §4.8.1). The table of what each mode
//! allows, and the order of the checks, is in [`crate::sandbox`].
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`decide`], [`PolicyContext`], [`Decision`]; how a call is classified and described |
//! | `suggestions.rs` | [`Suggestion`], [`RuleValue`], [`RuleBehavior`], [`Destination`]: which ones an ask carries, and their JSON |
//! | `verdict.rs` | [`rules_verdict`]: what rules alone say of a call (allowed, denied, neither), for the approval policy |
//! | `tests.rs` | the engine's tests, mode by mode |

mod suggestions;
#[cfg(test)]
mod tests;
mod verdict;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::mode::PermissionMode;
use super::rules::{
    follow, runs_programs, Anchor, Command, OnDisk, ResolvePath, ResolvedPath, RunsPrograms,
    Subject, ToolRules,
};
use super::{CoordinationKind, ToolCall, ToolClass, ToolName};

pub use suggestions::{Destination, RuleBehavior, RuleValue, Suggestion, SuggestionError};
pub use verdict::{rules_verdict, RuleVerdict};

/// What the engine knows about the teammate besides its mode and rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyContext {
    capability_dir: PathBuf,
    plan_file: Option<PathBuf>,
    cap: Anchor,
    plan: Option<ResolvedPath>,
}

impl PolicyContext {
    /// A context for a teammate whose capability directory is
    /// `capability_dir`: absolute, and already canonical (resolved once at
    /// spawn; [`decide`] only normalises lexically, and
    /// [`PolicyContext::look`] follows links under it). No plan file.
    pub fn new(capability_dir: impl Into<PathBuf>) -> PolicyContext {
        let capability_dir = capability_dir.into();
        let cap = Anchor::new(&capability_dir.to_string_lossy());
        PolicyContext {
            capability_dir,
            plan_file: None,
            cap,
            plan: None,
        }
    }

    /// Sets the plan file: the one file plan mode lets the teammate write
    /// (and read), wherever it is. Relative to the capability directory
    /// unless absolute.
    pub fn with_plan_file(mut self, plan_file: impl Into<PathBuf>) -> PolicyContext {
        let plan_file = plan_file.into();
        self.plan =
            Some(ResolvedPath::resolve(&self.cap, &plan_file.to_string_lossy()).host_given());
        self.plan_file = Some(plan_file);
        self
    }

    /// The capability directory, as given.
    pub fn capability_dir(&self) -> &Path {
        &self.capability_dir
    }

    /// The plan file, as given.
    pub fn plan_file(&self) -> Option<&Path> {
        self.plan_file.as_deref()
    }

    /// A call's path (absolute, or relative to the capability directory),
    /// normalised lexically.
    pub fn resolve(&self, path: &str) -> ResolvedPath {
        ResolvedPath::resolve(&self.cap, path)
    }

    /// Looks on disk, the one method of the engine that does: follows the
    /// symbolic links on the way to a file call's path (Read, Write, Edit;
    /// Glob's and Grep's search root) inside the capability directory, for
    /// [`decide_on_disk`]. [`OnDisk::NotLooked`] for other calls and for
    /// paths that are not inside the directory as spelled.
    pub fn look(&self, call: &ToolCall) -> OnDisk {
        let Target::Path { path, .. } = Target::of(call, self, &OnDisk::NotLooked) else {
            return OnDisk::NotLooked;
        };
        match path.relative() {
            Some(rel) if path.is_inside() => {
                let comps: Vec<&str> = rel.split('/').filter(|c| *c != ".").collect();
                follow(&self.capability_dir, &comps)
            }
            Some(_) | None => OnDisk::NotLooked,
        }
    }

    fn is_plan_file(&self, path: &ResolvedPath) -> bool {
        self.plan.as_ref().is_some_and(|plan| plan.same_file(path))
    }

    fn cap_display(&self) -> String {
        self.capability_dir.display().to_string()
    }
}

impl ResolvePath for PolicyContext {
    fn resolve(&self, path: &str) -> ResolvedPath {
        PolicyContext::resolve(self, path)
    }
}

/// The engine's answer, with a sentence naming the rule or mode that decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call. For Glob and Grep this covers the search root; files
    /// under it that [`ToolRules::denies_file`] names must still be skipped.
    Allow {
        /// Why.
        reason: String,
    },
    /// Refuse the call; the guest gets the reason as a typed error.
    Deny {
        /// Why, and what would change it.
        reason: String,
    },
    /// Ask the lead (a `permission_request`), offering ways to grant this
    /// for longer.
    Ask {
        /// Why, shown to the lead.
        reason: String,
        /// The request's `permission_suggestions`.
        suggestions: Vec<Suggestion>,
    },
}

impl Decision {
    /// The sentence that says why.
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow { reason } | Decision::Deny { reason } => reason,
            Decision::Ask { reason, .. } => reason,
        }
    }

    /// An ask's suggestions; empty for allow and deny.
    pub fn suggestions(&self) -> &[Suggestion] {
        match self {
            Decision::Ask { suggestions, .. } => suggestions,
            Decision::Allow { .. } | Decision::Deny { .. } => &[],
        }
    }

    /// `Allow`?
    pub fn is_allow(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }

    /// `Deny`?
    pub fn is_deny(&self) -> bool {
        matches!(self, Decision::Deny { .. })
    }

    /// `Ask`?
    pub fn is_ask(&self) -> bool {
        matches!(self, Decision::Ask { .. })
    }

    /// The `permission_suggestions` array of a `permission_request`.
    pub fn suggestions_json(&self) -> Vec<Value> {
        self.suggestions().iter().map(Suggestion::to_json).collect()
    }
}

/// Decides one call on its spelling alone ([`decide_on_disk`] with
/// [`OnDisk::NotLooked`]). Pure: the same arguments give the same decision.
pub fn decide(
    mode: PermissionMode,
    rules: &ToolRules,
    call: &ToolCall,
    ctx: &PolicyContext,
) -> Decision {
    decide_on_disk(mode, rules, call, ctx, &OnDisk::NotLooked)
}

/// Decides one call, knowing where its path leads on disk (`on_disk`, from
/// [`PolicyContext::look`]). Pure: the same arguments give the same
/// decision.
///
/// Path rules judge both paths: a deny rule matching the path as spelled or
/// where its links lead denies; an allow rule must match where the links
/// lead. A link on the way that leads out of the directory, or links that
/// loop, deny the call. A Bash command an allow rule with a specifier
/// matches, but that runs other programs through its own options
/// (`git -c`, `find -exec`; see the rules' `runs_programs` table), is not
/// pre-approved by that rule: it goes on to the mode, which asks or denies.
///
/// The order: deny rules → `..` escapes → `delegate` and `plan` → paths
/// outside the capability directory (denied: nothing could run them) →
/// coordination → allow rules → what the mode allows → ask (`default`,
/// `acceptEdits`) or deny (`dontAsk`). See [`crate::sandbox`] for the table.
pub fn decide_on_disk(
    mode: PermissionMode,
    rules: &ToolRules,
    call: &ToolCall,
    ctx: &PolicyContext,
    on_disk: &OnDisk,
) -> Decision {
    let target = Target::of(call, ctx, on_disk);
    let subject = target.subject();
    let real = target.real_subject();
    let class = call.class();
    let what = describe(call, &target);
    let cap = ctx.cap_display();

    // 1. Deny wins over everything, on the path as spelled or as it leads.
    let denied = rules
        .first_deny(&subject)
        .or_else(|| real.as_ref().and_then(|r| rules.first_deny(r)));
    if let Some(rule) = denied {
        return deny(format!(
            "{what} is denied by rule `{rule}` in disallowedTools (a deny rule wins over \
             every mode and allow rule)"
        ));
    }

    // 2. `..` out of the directory.
    if let Target::Path { path, .. } = &target {
        if path.escapes() {
            return deny(format!(
                "{what} climbs out of the capability directory {cap} through `..` (it \
                 resolves to {}); teamhost never allows that: name the file by its \
                 absolute path",
                path.absolute()
            ));
        }
    }
    match on_disk {
        OnDisk::LeadsOut { link, target } => {
            return deny(format!(
                "{what} goes through the symbolic link `{link}`, which points to `{target}`, \
                 outside the capability directory {cap}: a teammate reaches nothing outside \
                 it; use a path inside the directory"
            ));
        }
        OnDisk::Loop { link } => {
            return deny(format!(
                "{what} goes through more than {} symbolic links (the last was `{link}`): \
                 the links loop; remove the loop",
                super::rules::MAX_LINKS
            ));
        }
        OnDisk::NotLooked | OnDisk::Inside(_) => {}
    }

    // 3. Modes that take tools away, whatever the rules say.
    match mode {
        PermissionMode::Delegate => match class {
            // The coordination set of seed 001 has no sub-agents: a lead in
            // delegate mode spawns teammates (the lead's seat), never helpers
            // that could read or run what delegate mode takes away.
            ToolClass::Coordination
                if matches!(call, ToolCall::Coordination(CoordinationKind::Subagents)) =>
            {
                return deny(
                    "delegate mode allows only coordination (team, tasks, messaging): \
                     sub-agents are not available; spawn a teammate instead (the Agent \
                     tool with team_name and name)"
                        .to_string(),
                );
            }
            ToolClass::Coordination => {}
            ToolClass::Read | ToolClass::Edit | ToolClass::Bash => {
                return deny(format!(
                    "delegate mode allows only coordination (team, tasks, messaging): \
                     {what} is not available until the teammate leaves delegate mode"
                ));
            }
        },
        PermissionMode::Plan => {
            let plan_file = match &target {
                Target::Path { path, real, .. } => {
                    ctx.is_plan_file(path) && real.as_ref().is_none_or(|r| ctx.is_plan_file(r))
                }
                Target::Command(_) | Target::Coordination(_) => false,
            };
            match class {
                ToolClass::Bash => {
                    return deny(format!(
                        "plan mode is read-only and does not run Bash ({what}); exit plan \
                         mode through plan approval first"
                    ));
                }
                ToolClass::Edit | ToolClass::Read if plan_file => {
                    return allow(format!("plan mode allows {what}: it is the plan file"));
                }
                ToolClass::Edit => {
                    let plan = match ctx.plan_file() {
                        Some(p) => format!("only the plan file {} may change", p.display()),
                        None => "no plan file is set".to_owned(),
                    };
                    return deny(format!(
                        "plan mode is read-only: {what} is not allowed ({plan}); exit plan \
                         mode through plan approval first"
                    ));
                }
                ToolClass::Read | ToolClass::Coordination => {}
            }
        }
        PermissionMode::Default
        | PermissionMode::AcceptEdits
        | PermissionMode::BypassPermissions
        | PermissionMode::DontAsk => {}
    }

    // 4. Nothing outside the directory can run (the file tools reach only the
    //    capability directory, whatever anyone answers), so asking the lead
    //    would be a question whose "yes" does nothing: deny now, and say why.
    //    The plan file, which plan mode allows wherever it is, was handled above.
    if let Target::Path { path, .. } = &target {
        if !path.is_inside() {
            return deny(format!(
                "{what} is outside the capability directory {cap} ({}): a teammate reaches \
                 nothing else, so no rule or answer of the lead can let it run; use a path \
                 inside the directory",
                path.absolute()
            ));
        }
    }

    // 5. Coordination: always, as the reference allows SendMessage.
    if let Target::Coordination(_) = target {
        return allow(format!(
            "{what} is a coordination call, which every mode allows (the reference never \
             asks for SendMessage or the task tools)"
        ));
    }

    // 6. Allow rules: on where the path leads; for a command, not one that
    //    runs other programs unless a bare `Bash` rule allows everything.
    let allowed = rules.allowing(real.as_ref().unwrap_or(&subject));
    let smuggles = match (&target, &allowed) {
        (Target::Command(command), Some(matched))
            if matched.iter().all(|r| r.specifier().is_some()) =>
        {
            command
                .parts
                .iter()
                .find_map(|p| runs_programs(p).map(|found| (p, found)))
        }
        _ => None,
    };
    let allowed = if smuggles.is_some() { None } else { allowed };
    let smuggled = smuggles.map(|(part, found)| smuggled_reason(&found, rules, part));
    if let Some(matched) = allowed {
        let names: Vec<String> = matched.iter().map(|r| format!("`{r}`")).collect();
        return allow(match names.as_slice() {
            [one] => format!("{what} is allowed by rule {one} in allowedTools"),
            many => format!(
                "{what} is allowed by rules {} in allowedTools (each part of the command \
                 matches one)",
                many.join(", ")
            ),
        });
    }

    // 7. What the mode allows by itself. A path is inside the directory by
    //    now (step 4), so the mode only has to look at the tool class.
    let mode_allows = match mode {
        PermissionMode::Default | PermissionMode::DontAsk | PermissionMode::Plan => {
            class == ToolClass::Read
        }
        PermissionMode::AcceptEdits => matches!(class, ToolClass::Read | ToolClass::Edit),
        PermissionMode::BypassPermissions => true,
        PermissionMode::Delegate => false,
    };
    if mode_allows {
        let scope = match class {
            ToolClass::Bash | ToolClass::Coordination => String::new(),
            ToolClass::Read | ToolClass::Edit => format!(" inside the capability directory {cap}"),
        };
        let kind = match class {
            ToolClass::Read => "reads",
            ToolClass::Edit => "edits",
            ToolClass::Bash => "Bash",
            ToolClass::Coordination => "coordination",
        };
        return allow(format!("{mode} mode allows {kind}{scope}: {what}"));
    }

    // 8. Nothing allowed it: an edit or Bash in `default`, Bash in
    //    `acceptEdits`, anything no rule names in `dontAsk`.
    if let Some(why) = smuggled {
        return match mode {
            PermissionMode::Default | PermissionMode::AcceptEdits => Decision::Ask {
                reason: format!("{mode} mode asks the lead before {what}: {why}"),
                // No rule would cover it either: the lead answers this call.
                suggestions: Vec::new(),
            },
            PermissionMode::DontAsk
            | PermissionMode::BypassPermissions
            | PermissionMode::Plan
            | PermissionMode::Delegate => deny(format!(
                "{mode} mode cannot ask the lead: {what} is denied: {why}"
            )),
        };
    }
    match mode {
        PermissionMode::Default | PermissionMode::AcceptEdits => Decision::Ask {
            reason: format!("{mode} mode asks the lead before {what}: no allow rule matches"),
            // A rule for the path as it leads, not as spelled: only that one
            // would allow it.
            suggestions: suggestions::suggest(mode, rules, &target.as_led()),
        },
        PermissionMode::DontAsk => deny(format!(
            "dontAsk mode denies what no allow rule pre-approves: {what} matches no rule in \
             allowedTools"
        )),
        // Steps 3 to 7 decide every call in these modes (`plan` never asks:
        // it allows reads and the plan file and denies the rest); this arm is
        // for the exhaustive match.
        PermissionMode::BypassPermissions | PermissionMode::Plan | PermissionMode::Delegate => {
            deny(format!("{mode} mode does not allow {what}"))
        }
    }
}

/// "`git -c` can run another program (sets configuration …); the rule
/// `Bash(git:*)` does not cover it".
fn smuggled_reason(found: &RunsPrograms, rules: &ToolRules, part: &[String]) -> String {
    let rule = match rules.allowing_part(part) {
        Some(rule) => format!("the rule `{rule}` does not cover it"),
        None => "no allow rule covers it".to_owned(),
    };
    format!(
        "`{}` can run another program ({}); {rule}",
        found.what, found.how
    )
}

fn allow(reason: String) -> Decision {
    Decision::Allow { reason }
}

fn deny(reason: String) -> Decision {
    Decision::Deny { reason }
}

/// A call, classified for the rules: the exhaustive `match` every new
/// [`ToolCall`] variant has to pass through.
#[derive(Clone)]
enum Target {
    /// `real`: where the path's links lead, when looked up.
    Path {
        tool: ToolName,
        path: ResolvedPath,
        real: Option<ResolvedPath>,
    },
    Command(Command),
    Coordination(CoordinationKind),
}

impl Target {
    fn of(call: &ToolCall, ctx: &PolicyContext, on_disk: &OnDisk) -> Target {
        let mut target = Target::spelled(call, ctx);
        if let (Target::Path { real, .. }, OnDisk::Inside(rel)) = (&mut target, on_disk) {
            *real = Some(ctx.resolve(rel));
        }
        target
    }

    fn spelled(call: &ToolCall, ctx: &PolicyContext) -> Target {
        match call {
            ToolCall::Read(input) => Target::Path {
                tool: ToolName::Read,
                path: ctx.resolve(&input.file_path),
                real: None,
            },
            ToolCall::Write(input) => Target::Path {
                tool: ToolName::Write,
                path: ctx.resolve(&input.file_path),
                real: None,
            },
            ToolCall::Edit(input) => Target::Path {
                tool: ToolName::Edit,
                path: ctx.resolve(&input.file_path),
                real: None,
            },
            ToolCall::Glob(input) => Target::Path {
                tool: ToolName::Glob,
                path: ResolvedPath::resolve_search(
                    &ctx.cap,
                    input.path.as_deref(),
                    Some(&input.pattern),
                ),
                real: None,
            },
            ToolCall::Grep(input) => Target::Path {
                tool: ToolName::Grep,
                path: ResolvedPath::resolve_search(&ctx.cap, input.path.as_deref(), None),
                real: None,
            },
            ToolCall::Bash(input) => Target::Command(Command::parse(&input.command)),
            ToolCall::Coordination(kind) => Target::Coordination(*kind),
        }
    }

    fn subject(&self) -> Subject<'_> {
        match self {
            Target::Path { tool, path, .. } => Subject::Path { tool: *tool, path },
            Target::Command(command) => Subject::Command(command),
            Target::Coordination(kind) => Subject::Coordination {
                tool: kind.reference_tool(),
            },
        }
    }

    /// The subject as the path's links lead, when they were looked up.
    fn real_subject(&self) -> Option<Subject<'_>> {
        match self {
            Target::Path {
                tool,
                real: Some(real),
                ..
            } => Some(Subject::Path {
                tool: *tool,
                path: real,
            }),
            Target::Path { real: None, .. } | Target::Command(_) | Target::Coordination(_) => None,
        }
    }

    /// The path as its links lead, as a target of its own (for suggestions).
    fn as_led(&self) -> std::borrow::Cow<'_, Target> {
        match self {
            Target::Path {
                tool,
                real: Some(real),
                ..
            } => std::borrow::Cow::Owned(Target::Path {
                tool: *tool,
                path: real.clone(),
                real: None,
            }),
            Target::Path { real: None, .. } | Target::Command(_) | Target::Coordination(_) => {
                std::borrow::Cow::Borrowed(self)
            }
        }
    }
}

/// "Write to `src/a.rs`", "Bash `git status`", "`messaging.send`".
fn describe(call: &ToolCall, target: &Target) -> String {
    let shown = match target {
        Target::Path { path, .. } => path.display(),
        Target::Command(_) | Target::Coordination(_) => String::new(),
    };
    let said = describe_spelled(call, &shown);
    match target {
        Target::Path {
            path,
            real: Some(real),
            ..
        } if real.display() != path.display() => {
            format!("{said} (through symbolic links: `{}`)", real.display())
        }
        Target::Path { .. } | Target::Command(_) | Target::Coordination(_) => said,
    }
}

fn describe_spelled(call: &ToolCall, shown: &str) -> String {
    match call {
        ToolCall::Read(input) => format!("Read of `{}`", raw_or(&input.file_path, shown)),
        ToolCall::Write(input) => format!("Write to `{}`", raw_or(&input.file_path, shown)),
        ToolCall::Edit(input) => format!("Edit of `{}`", raw_or(&input.file_path, shown)),
        ToolCall::Glob(input) => format!("Glob `{}` in `{shown}`", input.pattern),
        ToolCall::Grep(_) => format!("Grep in `{shown}`"),
        ToolCall::Bash(input) => {
            let command: String = input.command.chars().take(120).collect();
            let more = if command.len() < input.command.len() {
                "…"
            } else {
                ""
            };
            format!("Bash `{command}{more}`")
        }
        ToolCall::Coordination(kind) => format!("`{}`", kind.wit_name()),
    }
}

/// The path as the guest wrote it when that is how we show it anyway, else
/// the normalised form (so `../x` stays recognisable in a reason).
fn raw_or<'a>(raw: &'a str, shown: &'a str) -> &'a str {
    if raw.contains("..") {
        raw
    } else {
        shown
    }
}
