//! The engine: [`decide`] (mode, rules, call, context) → [`Decision`], and
//! the [`Suggestion`]s an ask carries (the reference's
//! `permission_suggestions`, seeds 002 §4.8.1). The table of what each mode
//! allows, and the order of the checks, is in [`crate::sandbox`].

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::mode::PermissionMode;
use super::rules::{
    quote_word, Anchor, Command, ResolvedPath, Rule, RuleError, Subject, ToolRules,
};
use super::{CoordinationKind, ToolCall, ToolClass, ToolName};

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
    /// spawn; the engine only normalises lexically). No plan file.
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

    fn is_plan_file(&self, path: &ResolvedPath) -> bool {
        self.plan.as_ref().is_some_and(|plan| plan.same_file(path))
    }

    fn cap_display(&self) -> String {
        self.capability_dir.display().to_string()
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

/// One way the lead could grant a call for longer than once (the reference's
/// `permission_suggestions`; the same shapes come back in a response's
/// `permission_updates`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suggestion {
    /// `{type:"addRules", rules:[{toolName, ruleContent}], behavior, destination}`.
    AddRules {
        /// The rules.
        rules: Vec<RuleValue>,
        /// Allow, deny or ask.
        behavior: RuleBehavior,
        /// Where the grant lives.
        destination: Destination,
    },
    /// `{type:"addDirectories", directories, destination}`. The engine never
    /// suggests it (a teammate has exactly one directory); it is here so the
    /// lead's updates parse.
    AddDirectories {
        /// Absolute directories.
        directories: Vec<String>,
        /// Where the grant lives.
        destination: Destination,
    },
    /// `{type:"setMode", mode, destination}`.
    SetMode {
        /// The mode to switch to.
        mode: PermissionMode,
        /// Where the grant lives.
        destination: Destination,
    },
}

/// A rule as the reference writes it in suggestions: `Bash(git:*)` is
/// `{toolName:"Bash", ruleContent:"git:*"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleValue {
    /// `"Bash"`.
    pub tool_name: String,
    /// `"git:*"`; `None` for the whole tool.
    pub rule_content: Option<String>,
}

impl RuleValue {
    /// A rule on `tool` with `content`.
    pub fn new(tool: ToolName, content: Option<String>) -> RuleValue {
        RuleValue {
            tool_name: tool.as_str().to_owned(),
            rule_content: content,
        }
    }

    /// The rule text: `Tool` or `Tool(content)`.
    pub fn text(&self) -> String {
        match &self.rule_content {
            Some(content) => format!("{}({content})", self.tool_name),
            None => self.tool_name.clone(),
        }
    }

    /// Parses it as a [`Rule`], to add to a teammate's [`ToolRules`].
    pub fn to_rule(&self) -> Result<Rule, RuleError> {
        Rule::parse(&self.text())
    }

    /// `{toolName, ruleContent?}`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("toolName".into(), Value::from(self.tool_name.as_str()));
        if let Some(content) = &self.rule_content {
            map.insert("ruleContent".into(), Value::from(content.as_str()));
        }
        Value::Object(map)
    }
}

/// An `addRules` suggestion's `behavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleBehavior {
    /// `"allow"`.
    Allow,
    /// `"deny"`.
    Deny,
    /// `"ask"`.
    Ask,
}

impl RuleBehavior {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleBehavior::Allow => "allow",
            RuleBehavior::Deny => "deny",
            RuleBehavior::Ask => "ask",
        }
    }

    fn parse(s: &str) -> Option<RuleBehavior> {
        [RuleBehavior::Allow, RuleBehavior::Deny, RuleBehavior::Ask]
            .into_iter()
            .find(|b| b.as_str() == s)
    }
}

/// Where a granted permission lives. teamhost keeps every grant for the
/// session; the others are the reference's settings files, kept so the
/// lead's answers parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// `"session"`: until the teammate stops.
    Session,
    /// `"localSettings"`.
    LocalSettings,
    /// `"projectSettings"`.
    ProjectSettings,
    /// `"userSettings"`.
    UserSettings,
    /// `"cliArg"`.
    CliArg,
}

impl Destination {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Destination::Session => "session",
            Destination::LocalSettings => "localSettings",
            Destination::ProjectSettings => "projectSettings",
            Destination::UserSettings => "userSettings",
            Destination::CliArg => "cliArg",
        }
    }

    fn parse(s: &str) -> Option<Destination> {
        [
            Destination::Session,
            Destination::LocalSettings,
            Destination::ProjectSettings,
            Destination::UserSettings,
            Destination::CliArg,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }
}

/// JSON that is not a suggestion teamhost understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuggestionError(pub String);

impl std::fmt::Display for SuggestionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid permission suggestion: {}", self.0)
    }
}

impl std::error::Error for SuggestionError {}

impl Suggestion {
    /// The reference's JSON, keys in its order:
    /// `{"type":"addRules","rules":[{"toolName":"Read","ruleContent":"//tmp/**"}],"behavior":"allow","destination":"session"}`.
    pub fn to_json(&self) -> Value {
        match self {
            Suggestion::AddRules {
                rules,
                behavior,
                destination,
            } => json!({
                "type": "addRules",
                "rules": rules.iter().map(RuleValue::to_json).collect::<Vec<_>>(),
                "behavior": behavior.as_str(),
                "destination": destination.as_str(),
            }),
            Suggestion::AddDirectories {
                directories,
                destination,
            } => json!({
                "type": "addDirectories",
                "directories": directories,
                "destination": destination.as_str(),
            }),
            Suggestion::SetMode { mode, destination } => json!({
                "type": "setMode",
                "mode": mode.as_str(),
                "destination": destination.as_str(),
            }),
        }
    }

    /// Parses one suggestion (or one of a response's `permission_updates`).
    pub fn from_json(value: &Value) -> Result<Suggestion, SuggestionError> {
        let err = |msg: String| SuggestionError(msg);
        let obj = value
            .as_object()
            .ok_or_else(|| err(format!("expected an object, got {value}")))?;
        let string = |key: &str| -> Result<&str, SuggestionError> {
            obj.get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| err(format!("`{key}` is missing or not a string")))
        };
        let destination = {
            let d = string("destination")?;
            Destination::parse(d).ok_or_else(|| err(format!("unknown destination {d:?}")))?
        };
        match string("type")? {
            "addRules" => {
                let behavior = string("behavior")?;
                let behavior = RuleBehavior::parse(behavior)
                    .ok_or_else(|| err(format!("unknown behavior {behavior:?}")))?;
                let rules = obj
                    .get("rules")
                    .and_then(Value::as_array)
                    .ok_or_else(|| err("`rules` is missing or not an array".into()))?
                    .iter()
                    .map(|r| {
                        let tool_name = r
                            .get("toolName")
                            .and_then(Value::as_str)
                            .ok_or_else(|| err(format!("rule {r} has no `toolName`")))?;
                        let rule_content = match r.get("ruleContent") {
                            None | Some(Value::Null) => None,
                            Some(Value::String(s)) => Some(s.clone()),
                            Some(other) => {
                                return Err(err(format!("`ruleContent` {other} is not a string")))
                            }
                        };
                        Ok(RuleValue {
                            tool_name: tool_name.to_owned(),
                            rule_content,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Suggestion::AddRules {
                    rules,
                    behavior,
                    destination,
                })
            }
            "addDirectories" => {
                let directories = obj
                    .get("directories")
                    .and_then(Value::as_array)
                    .and_then(|a| {
                        a.iter()
                            .map(|d| d.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| err("`directories` is not an array of strings".into()))?;
                Ok(Suggestion::AddDirectories {
                    directories,
                    destination,
                })
            }
            "setMode" => {
                let mode = string("mode")?
                    .parse()
                    .map_err(|e: super::ParseModeError| err(e.to_string()))?;
                Ok(Suggestion::SetMode { mode, destination })
            }
            other => Err(err(format!(
                "unknown type {other:?}; teamhost knows addRules, addDirectories and setMode"
            ))),
        }
    }
}

/// Decides one call. Pure: the same arguments give the same decision.
///
/// The order: deny rules → `..` escapes → `delegate` → coordination → `plan`
/// → allow rules → what the mode allows inside the capability directory →
/// ask (`default`, `acceptEdits`, `plan`) or deny (`dontAsk`,
/// `bypassPermissions`). See [`crate::sandbox`] for the table.
pub fn decide(
    mode: PermissionMode,
    rules: &ToolRules,
    call: &ToolCall,
    ctx: &PolicyContext,
) -> Decision {
    let target = Target::of(call, ctx);
    let subject = target.subject();
    let class = call.class();
    let what = describe(call, &target);
    let cap = ctx.cap_display();

    // 1. Deny wins over everything.
    if let Some(rule) = rules.first_deny(&subject) {
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

    // 3. Modes that take tools away, whatever the rules say.
    match mode {
        PermissionMode::Delegate => match class {
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
                Target::Path { path, .. } => ctx.is_plan_file(path),
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

    // 4. Coordination: always, as the reference allows SendMessage.
    if let Target::Coordination(_) = target {
        return allow(format!(
            "{what} is a coordination call, which every mode allows (the reference never \
             asks for SendMessage or the task tools)"
        ));
    }

    // 5. Allow rules.
    if let Some(matched) = rules.allowing(&subject) {
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

    // 6. What the mode allows by itself: never a path outside the directory.
    let inside = match &target {
        Target::Path { path, .. } => path.is_inside(),
        Target::Command(_) | Target::Coordination(_) => false,
    };
    let mode_allows = match mode {
        PermissionMode::Default | PermissionMode::DontAsk | PermissionMode::Plan => {
            class == ToolClass::Read && inside
        }
        PermissionMode::AcceptEdits => matches!(class, ToolClass::Read | ToolClass::Edit) && inside,
        PermissionMode::BypassPermissions => match class {
            ToolClass::Read | ToolClass::Edit => inside,
            ToolClass::Bash | ToolClass::Coordination => true,
        },
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

    // 7. Nothing allowed it.
    let outside = match &target {
        Target::Path { path, .. } if !inside => format!(
            ", which is outside the capability directory {cap} ({})",
            path.absolute()
        ),
        Target::Path { .. } | Target::Command(_) | Target::Coordination(_) => String::new(),
    };
    match mode {
        PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::Plan => {
            Decision::Ask {
                reason: format!(
                    "{mode} mode asks the lead before {what}{outside}: no allow rule matches"
                ),
                suggestions: suggest(mode, rules, &target),
            }
        }
        PermissionMode::DontAsk => deny(format!(
            "dontAsk mode denies what no allow rule pre-approves: {what}{outside} matches no \
             rule in allowedTools"
        )),
        PermissionMode::BypassPermissions => deny(format!(
            "bypassPermissions mode covers only the capability directory {cap}: {what} is \
             outside it ({}) and no allow rule names it",
            match &target {
                Target::Path { path, .. } => path.absolute(),
                Target::Command(_) | Target::Coordination(_) => String::new(),
            }
        )),
        PermissionMode::Delegate => deny(format!(
            "delegate mode allows only coordination (team, tasks, messaging): {what} is not \
             available"
        )),
    }
}

fn allow(reason: String) -> Decision {
    Decision::Allow { reason }
}

fn deny(reason: String) -> Decision {
    Decision::Deny { reason }
}

/// A call, classified for the rules: the exhaustive `match` every new
/// [`ToolCall`] variant has to pass through.
enum Target {
    Path { tool: ToolName, path: ResolvedPath },
    Command(Command),
    Coordination(CoordinationKind),
}

impl Target {
    fn of(call: &ToolCall, ctx: &PolicyContext) -> Target {
        match call {
            ToolCall::Read(input) => Target::Path {
                tool: ToolName::Read,
                path: ctx.resolve(&input.file_path),
            },
            ToolCall::Write(input) => Target::Path {
                tool: ToolName::Write,
                path: ctx.resolve(&input.file_path),
            },
            ToolCall::Edit(input) => Target::Path {
                tool: ToolName::Edit,
                path: ctx.resolve(&input.file_path),
            },
            ToolCall::Glob(input) => Target::Path {
                tool: ToolName::Glob,
                path: ResolvedPath::resolve_search(
                    &ctx.cap,
                    input.path.as_deref(),
                    Some(&input.pattern),
                ),
            },
            ToolCall::Grep(input) => Target::Path {
                tool: ToolName::Grep,
                path: ResolvedPath::resolve_search(&ctx.cap, input.path.as_deref(), None),
            },
            ToolCall::Bash(input) => Target::Command(Command::parse(&input.command)),
            ToolCall::Coordination(kind) => Target::Coordination(*kind),
        }
    }

    fn subject(&self) -> Subject<'_> {
        match self {
            Target::Path { tool, path } => Subject::Path { tool: *tool, path },
            Target::Command(command) => Subject::Command(command),
            Target::Coordination(kind) => Subject::Coordination {
                tool: kind.reference_tool(),
            },
        }
    }
}

/// "Write to `src/a.rs`", "Bash `git status`", "`messaging.send`".
fn describe(call: &ToolCall, target: &Target) -> String {
    let shown = match target {
        Target::Path { path, .. } => path.display(),
        Target::Command(_) | Target::Coordination(_) => String::new(),
    };
    match call {
        ToolCall::Read(input) => format!("Read of `{}`", raw_or(&input.file_path, &shown)),
        ToolCall::Write(input) => format!("Write to `{}`", raw_or(&input.file_path, &shown)),
        ToolCall::Edit(input) => format!("Edit of `{}`", raw_or(&input.file_path, &shown)),
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

/// The suggestions an ask carries.
fn suggest(mode: PermissionMode, rules: &ToolRules, target: &Target) -> Vec<Suggestion> {
    let add = |values: Vec<RuleValue>| Suggestion::AddRules {
        rules: values,
        behavior: RuleBehavior::Allow,
        destination: Destination::Session,
    };
    match target {
        Target::Path { tool, path } => {
            let family = match tool {
                ToolName::Read | ToolName::Glob | ToolName::Grep => ToolName::Read,
                ToolName::Write | ToolName::Edit => ToolName::Edit,
                ToolName::Bash
                | ToolName::SendMessage
                | ToolName::TaskCreate
                | ToolName::TaskGet
                | ToolName::TaskUpdate
                | ToolName::TaskList => *tool,
            };
            if path.is_inside() {
                // Only edits ask inside the directory.
                let rel = path.relative().unwrap_or_else(|| ".".into());
                let mut out = Vec::new();
                if mode == PermissionMode::Default {
                    out.push(Suggestion::SetMode {
                        mode: PermissionMode::AcceptEdits,
                        destination: Destination::Session,
                    });
                }
                out.push(add(vec![RuleValue::new(family, Some(format!("./{rel}")))]));
                out
            } else {
                let dir = match tool {
                    ToolName::Glob | ToolName::Grep => path.absolute(),
                    ToolName::Read
                    | ToolName::Write
                    | ToolName::Edit
                    | ToolName::Bash
                    | ToolName::SendMessage
                    | ToolName::TaskCreate
                    | ToolName::TaskGet
                    | ToolName::TaskUpdate
                    | ToolName::TaskList => path.parent_absolute(),
                };
                let content = if dir == "/" {
                    "//**".to_owned()
                } else {
                    format!("/{dir}/**")
                };
                vec![add(vec![RuleValue::new(family, Some(content))])]
            }
        }
        Target::Command(command) => {
            if command.opaque {
                return Vec::new();
            }
            let mut values: Vec<RuleValue> = Vec::new();
            for part in rules.unallowed_parts(command) {
                let value = RuleValue::new(ToolName::Bash, Some(prefix_rule(part)));
                if !values.contains(&value) {
                    values.push(value);
                }
            }
            if values.is_empty() {
                Vec::new()
            } else {
                vec![add(values)]
            }
        }
        Target::Coordination(_) => Vec::new(),
    }
}

/// `git status --short` → `git status:*`; `rm -rf x` → `rm:*`: the command
/// and, when the second word looks like a subcommand, that too.
fn prefix_rule(part: &[String]) -> String {
    let subcommand = part.get(1).is_some_and(|w| {
        !w.is_empty()
            && !w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    });
    let n = if subcommand { 2 } else { 1 };
    let words: Vec<String> = part.iter().take(n).map(|w| quote_word(w)).collect();
    format!("{}:*", words.join(" "))
}

#[cfg(test)]
mod tests {
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
            ("read outside", ToolCall::read("/etc/passwd"), "??D?DD"),
            ("glob outside", ToolCall::glob("*", Some("/etc")), "??D?DD"),
            ("grep outside", ToolCall::grep("x", Some("/tmp")), "??D?DD"),
            ("write inside", ToolCall::write("src/a.rs", "x"), "?AADDD"),
            (
                "edit inside",
                ToolCall::edit("src/a.rs", "a", "b"),
                "?AADDD",
            ),
            ("write outside", ToolCall::write("/tmp/x", "x"), "??DDDD"),
            ("edit outside", ToolCall::edit("/tmp/x", "a", "b"), "??DDDD"),
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
    fn an_allow_rule_opens_asks_and_dont_ask_but_not_plan_or_delegate() {
        let r = rules(&["Bash(make:*)", "Edit(src/**)", "Read(//etc/**)"], &[]);
        let rows: Vec<(&str, ToolCall, &str)> = vec![
            ("bash", ToolCall::bash("make all"), "AAADAD"),
            ("edit", ToolCall::edit("src/a.rs", "a", "b"), "AAADAD"),
            ("read outside", ToolCall::read("/etc/hosts"), "AAAAAD"),
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
    fn default_asks_to_read_outside_and_suggests_the_reference_rule_shape() {
        let decision = d(
            PermissionMode::Default,
            &no_rules(),
            ToolCall::read("/tmp/x.txt"),
        );
        assert!(decision.is_ask());
        assert!(
            decision
                .reason()
                .contains("outside the capability directory /work/cap"),
            "{}",
            decision.reason()
        );
        assert_eq!(
            decision.suggestions_json(),
            vec![json!({
                "type": "addRules",
                "rules": [{"toolName": "Read", "ruleContent": "//tmp/**"}],
                "behavior": "allow",
                "destination": "session"
            })]
        );
        let root = d(PermissionMode::Default, &no_rules(), ToolCall::read("/x"));
        let Suggestion::AddRules { rules: values, .. } = &root.suggestions()[0] else {
            panic!("expected addRules");
        };
        assert_eq!(values[0].rule_content.as_deref(), Some("//**"));
    }

    // --- acceptEdits --------------------------------------------------------

    #[test]
    fn accept_edits_allows_edits_inside_and_asks_outside() {
        let mode = PermissionMode::AcceptEdits;
        let inside = d(mode, &no_rules(), ToolCall::write("/work/cap/new.txt", "x"));
        assert!(inside.is_allow());
        assert!(inside.reason().starts_with("acceptEdits mode allows edits"));
        let outside = d(
            mode,
            &no_rules(),
            ToolCall::write("/tmp/delegate-test/x", "x"),
        );
        assert!(outside.is_ask());
        assert_eq!(
            outside.suggestions_json(),
            vec![json!({
                "type": "addRules",
                "rules": [{"toolName": "Edit", "ruleContent": "//tmp/delegate-test/**"}],
                "behavior": "allow",
                "destination": "session"
            })]
        );
    }

    #[test]
    fn accept_edits_asks_even_to_read_outside_the_directory() {
        // seeds 002 §4.8.3: in acceptEdits, a Read outside the project asks.
        let decision = d(
            PermissionMode::AcceptEdits,
            &no_rules(),
            ToolCall::read("/etc/hosts"),
        );
        assert!(decision.is_ask());
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
    fn bypass_never_asks_and_denies_a_path_outside_without_a_rule() {
        let mode = PermissionMode::BypassPermissions;
        let decision = d(mode, &no_rules(), ToolCall::read("/etc/passwd"));
        assert!(decision.is_deny());
        assert_eq!(
            decision.reason(),
            "bypassPermissions mode covers only the capability directory /work/cap: Read of \
             `/etc/passwd` is outside it (/etc/passwd) and no allow rule names it"
        );
        let r = rules(&["Read(//etc/**)"], &[]);
        assert!(d(mode, &r, ToolCall::read("/etc/passwd")).is_allow());
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
    fn plan_asks_to_read_outside_the_directory() {
        assert!(d(
            PermissionMode::Plan,
            &no_rules(),
            ToolCall::read("/etc/hosts")
        )
        .is_ask());
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
        let broadcast =
            ToolCall::Coordination(CoordinationKind::Messaging(MessagingCall::Broadcast));
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

    #[test]
    fn an_absolute_path_outside_is_never_allowed_by_mode_alone() {
        for mode in PermissionMode::ALL {
            for call in [
                ToolCall::read("/etc/passwd"),
                ToolCall::write("/etc/passwd", "x"),
                ToolCall::grep("root", Some("/etc")),
            ] {
                assert!(
                    !d(mode, &no_rules(), call.clone()).is_allow(),
                    "{mode} {call:?}"
                );
            }
        }
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

    // --- suggestions' JSON ----------------------------------------------------

    #[test]
    fn suggestions_render_the_reference_shapes_and_parse_back() {
        let all = vec![
            Suggestion::AddRules {
                rules: vec![
                    RuleValue::new(ToolName::Read, Some("//tmp/**".into())),
                    RuleValue::new(ToolName::Bash, None),
                ],
                behavior: RuleBehavior::Allow,
                destination: Destination::Session,
            },
            Suggestion::AddDirectories {
                directories: vec!["/tmp".into(), "/tmp/delegate-test".into()],
                destination: Destination::Session,
            },
            Suggestion::SetMode {
                mode: PermissionMode::AcceptEdits,
                destination: Destination::Session,
            },
        ];
        let texts: Vec<String> = all.iter().map(|s| s.to_json().to_string()).collect();
        assert_eq!(
            texts,
            [
                r#"{"type":"addRules","rules":[{"toolName":"Read","ruleContent":"//tmp/**"},{"toolName":"Bash"}],"behavior":"allow","destination":"session"}"#,
                r#"{"type":"addDirectories","directories":["/tmp","/tmp/delegate-test"],"destination":"session"}"#,
                r#"{"type":"setMode","mode":"acceptEdits","destination":"session"}"#,
            ]
        );
        for s in &all {
            assert_eq!(&Suggestion::from_json(&s.to_json()).unwrap(), s);
        }
    }

    #[test]
    fn malformed_suggestions_are_refused_with_what_is_wrong() {
        let cases = [
            (json!("x"), "expected an object"),
            (
                json!({"type": "addRules", "destination": "session", "behavior": "allow"}),
                "`rules`",
            ),
            (
                json!({"type": "setMode", "mode": "yolo", "destination": "session"}),
                "valid modes are",
            ),
            (
                json!({"type": "removeRules", "destination": "session"}),
                "unknown type",
            ),
            (
                json!({"type": "setMode", "mode": "plan", "destination": "elsewhere"}),
                "unknown destination",
            ),
        ];
        for (value, expected) in cases {
            let err = Suggestion::from_json(&value).unwrap_err().to_string();
            assert!(err.contains(expected), "{value}: {err}");
        }
    }

    #[test]
    fn a_rule_value_becomes_a_rule() {
        let value = RuleValue::new(ToolName::Bash, Some("git:*".into()));
        assert_eq!(value.text(), "Bash(git:*)");
        assert_eq!(value.to_rule().unwrap().text(), "Bash(git:*)");
        let bad = RuleValue::new(ToolName::Bash, Some("".into()));
        assert!(bad.to_rule().is_err());
    }
}
