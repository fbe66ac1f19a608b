//! Tool rules in the reference's syntax (`Read`, `Bash(git:*)`,
//! `Edit(src/**)`, `Read(~/**)`), from a teammate's `allowedTools` and
//! `disallowedTools`, and what they match.
//!
//! # Syntax
//!
//! A rule is `Tool` (the whole tool) or `Tool(specifier)`. Tool names are
//! case-sensitive, as in the reference; `bash` is refused with "did you mean
//! `Bash`?". A well-formed name teamhost has no tool for (`WebFetch`,
//! `mcp__db__query`) is kept as [`RuleTool::Unknown`] and matches nothing, so a
//! list written for the reference CLI still loads; [`ToolRules::unknown_tools`]
//! lists them for a warning. The reference's list form (`"Bash(git:*) Edit
//! Read"`, `"Bash,Edit,Read"`) is split by [`split_list`].
//!
//! | rule | matches |
//! |---|---|
//! | `Read` | every Read, Glob and Grep (a Read rule covers every tool that reads, as in the reference) |
//! | `Edit` | every Edit and Write (an Edit rule covers every tool that edits) |
//! | `Write`, `Glob`, `Grep` | that tool only |
//! | `Bash` | every command |
//! | `Bash(git:*)` | a command whose first word is `git` (`git`, `git status`; not `gitx`) |
//! | `Bash(npm run test:*)` | a command whose first words are `npm run test` |
//! | `Bash(npm test)` | exactly `npm test` (words compared after shell quoting is removed) |
//! | `SendMessage`, `TaskCreate`, `TaskGet`, `TaskUpdate`, `TaskList` | the coordination calls that do what that reference tool does (no specifier) |
//!
//! # Paths
//!
//! A path specifier (on Read, Write, Edit, Glob, Grep) is a glob: `*` matches
//! within one path segment (dot files included), `?` one character, a whole
//! `**` segment any number of segments (zero included). Nothing else is
//! special. Where it is rooted:
//!
//! | specifier | relative to |
//! |---|---|
//! | `//abs/path` | the filesystem root (the reference's spelling for an absolute path) |
//! | `~/x`, `~` | **the capability directory**: a teammate has no home directory, so `~` is the root of the only tree it has |
//! | `/x` | the capability directory (in the reference, the directory of the settings file: the project root) |
//! | `./x`, `x/y` | the capability directory (the teammate's working directory) |
//! | `x` (no `/`) | any depth inside the capability directory, as in `.gitignore`: `*.rs` is every Rust file |
//!
//! A rule that matches a directory matches everything under it (`Edit(src)`
//! covers `src/main.rs`); a trailing `/` changes nothing. `..` is refused in a
//! rule; `~user` is refused.
//!
//! Call paths are absolute or relative to the capability directory and are
//! normalised lexically ([`ResolvedPath`]); `~` in a call path is an ordinary
//! name. A call path whose `..` steps outside the capability directory, even
//! if it comes back, **never matches an allow rule** (deny rules still match
//! where it lands); the engine denies it outright.
//!
//! Glob and Grep are judged on the directory they search: Grep's `path`;
//! Glob's `path` joined with the pattern's leading segments that have no
//! wildcard (`src/**/*.rs` searches `src`), and a pattern with `..` after a
//! wildcard is treated as climbing out. Files under that directory that a
//! deny rule covers must be skipped by the tool: see
//! [`ToolRules::denies_file`].
//!
//! # Bash
//!
//! A command is split into parts at `;`, `&&`, `||`, `|`, `&`, newlines and
//! parentheses outside quotes (`2>&1` and `&>` stay redirections). Then:
//!
//! - an **allow** needs a bare `Bash` rule, or every part matched by some
//!   `Bash(…)` allow rule: `Bash(git:*)` allows `git add . && git commit`
//!   but not `git status; rm -rf /`. A command with a substitution
//!   (`` ` ``, `$(`, `<(`, `>(`) or an unclosed quote matches no `Bash(…)`
//!   allow rule: what it runs is not known before it runs.
//! - a **deny** matches when any part does, including parts found by a
//!   second, cruder split that ignores quoting (so `echo "$(rm -rf x)"` and
//!   `sh -c "rm -rf x"` are caught by `Bash(rm:*)`). It errs on the side of
//!   denying.
//!
//! Bash deny rules are a convenience, not a boundary: `/bin/rm`, `env rm` or
//! a script file get past `Bash(rm:*)`, as they do in the reference.
//! Redirections are not analysed. What bounds Bash is the capability
//! directory it runs in.

use std::fmt;

use super::policy::PolicyContext;
use super::ToolName;

/// One rule: a tool and, optionally, what of it (a command or a path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    tool: RuleTool,
    specifier: Option<Specifier>,
}

/// The tool a rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleTool {
    /// A tool teamhost has.
    Known(ToolName),
    /// A well-formed name teamhost has no tool for; matches nothing.
    Unknown(String),
}

/// What a rule's parentheses say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Specifier {
    /// `Bash(git status:*)`: the command's first words.
    CommandPrefix(Vec<String>),
    /// `Bash(npm test)`: the command's words, exactly.
    Command(Vec<String>),
    /// `Edit(src/**)`: a path glob.
    Path(PathPattern),
    /// The specifier of an [`RuleTool::Unknown`] tool, kept as written.
    Opaque(String),
}

/// A parsed path glob: where it is rooted and its segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    base: PathBase,
    anchored: bool,
    segments: Vec<String>,
    /// `**` first when unanchored, `**` last (a directory covers its
    /// contents): what [`match_segments`] runs.
    effective: Vec<Seg>,
}

/// Where a path glob is rooted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathBase {
    /// The capability directory (`~/`, `/`, `./`, or nothing).
    CapabilityDir,
    /// The filesystem root (`//`).
    FilesystemRoot,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// `**`
    Any,
    /// One segment, with `*` and `?`.
    Glob(String),
}

impl PathPattern {
    /// Where it is rooted.
    pub fn base(&self) -> PathBase {
        self.base
    }

    /// False for a bare name like `*.rs`, which matches at any depth.
    pub fn is_anchored(&self) -> bool {
        self.anchored
    }

    /// The glob's segments below its base.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// Does the glob cover `path`? `for_allow`: a path that climbed out
    /// through `..` never matches.
    fn covers(&self, path: &ResolvedPath, for_allow: bool) -> bool {
        if for_allow && path.escaped {
            return false;
        }
        let comps: Vec<&str> = match self.base {
            PathBase::CapabilityDir => match path.relative_components() {
                Some(rel) => rel,
                None => return false,
            },
            PathBase::FilesystemRoot => {
                if !path.rooted {
                    return false;
                }
                path.comps.iter().map(String::as_str).collect()
            }
        };
        match_segments(&self.effective, &comps)
    }
}

/// Which list a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleList {
    /// `allowedTools`.
    Allowed,
    /// `disallowedTools`.
    Disallowed,
}

impl fmt::Display for RuleList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleList::Allowed => "allowedTools",
            RuleList::Disallowed => "disallowedTools",
        })
    }
}

/// A rule that does not parse, with the text, the list it was in and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// The list it came from, when known.
    pub list: Option<RuleList>,
    /// What is wrong with it.
    pub problem: RuleProblem,
}

/// What is wrong with a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleProblem {
    /// Nothing but whitespace.
    Empty,
    /// The tool name has characters a tool name cannot have.
    BadToolName,
    /// A teamhost tool in the wrong case.
    WrongCase(ToolName),
    /// `Bash(git:*` — no closing parenthesis.
    MissingClose,
    /// `Bash(git:*)x` — text after the closing parenthesis.
    TrailingText,
    /// `Bash()`.
    EmptySpecifier(ToolName),
    /// A specifier on a tool that takes none (`SendMessage(x)`).
    NoSpecifier(ToolName),
    /// `*` in a Bash specifier other than a trailing `:*`.
    BashWildcard,
    /// `Bash(:*)`.
    EmptyCommandPrefix,
    /// `Bash(a; b)`: a rule names one command.
    CompoundCommand,
    /// `..` in a path specifier.
    ClimbsOut,
    /// `~user/…`.
    OtherUsersHome,
}

impl fmt::Display for RuleProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleProblem::Empty => f.write_str("the rule is empty"),
            RuleProblem::BadToolName => {
                f.write_str("a tool name is letters, digits, `_` and `-`, starting with a letter")
            }
            RuleProblem::WrongCase(tool) => {
                write!(f, "tool names are case-sensitive: did you mean `{tool}`?")
            }
            RuleProblem::MissingClose => f.write_str("the specifier has no closing `)`"),
            RuleProblem::TrailingText => f.write_str("text follows the closing `)`"),
            RuleProblem::EmptySpecifier(tool) => write!(
                f,
                "`{tool}()` has an empty specifier; write `{tool}` for the whole tool"
            ),
            RuleProblem::NoSpecifier(tool) => write!(f, "`{tool}` takes no specifier"),
            RuleProblem::BashWildcard => f.write_str(
                "the only wildcard in a Bash rule is a trailing `:*`, as in `Bash(git:*)`",
            ),
            RuleProblem::EmptyCommandPrefix => {
                f.write_str("`:*` needs a command before it, as in `Bash(git:*)`")
            }
            RuleProblem::CompoundCommand => f.write_str(
                "a Bash rule names one command: no `;`, `&&`, `||`, `|`, `&`, \
                 parentheses, backticks or `$(`",
            ),
            RuleProblem::ClimbsOut => f.write_str(
                "a path rule may not contain `..`; write `//absolute/path` for a path \
                 outside the capability directory",
            ),
            RuleProblem::OtherUsersHome => f.write_str(
                "`~user` is not supported: `~` is the capability directory (a teammate \
                 has no home directory)",
            ),
        }
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid tool rule {:?}", self.rule)?;
        if let Some(list) = self.list {
            write!(f, " in {list}")?;
        }
        write!(
            f,
            ": {}; rules look like `Read`, `Bash(git:*)`, `Bash(npm test)` or `Edit(src/**)`",
            self.problem
        )
    }
}

impl std::error::Error for RuleError {}

impl Rule {
    /// Parses one rule. Surrounding whitespace is ignored.
    pub fn parse(rule: &str) -> Result<Rule, RuleError> {
        let text = rule.trim();
        let fail = |problem| RuleError {
            rule: rule.to_owned(),
            list: None,
            problem,
        };
        if text.is_empty() {
            return Err(fail(RuleProblem::Empty));
        }
        let (name, spec) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let close = text.rfind(')').filter(|&c| c > open);
                match close {
                    None => return Err(fail(RuleProblem::MissingClose)),
                    Some(c) if c + 1 != text.len() => return Err(fail(RuleProblem::TrailingText)),
                    Some(c) => (&text[..open], Some(text[open + 1..c].trim())),
                }
            }
        };
        let well_formed = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !well_formed {
            return Err(fail(RuleProblem::BadToolName));
        }
        let tool = match ToolName::from_reference(name) {
            Some(tool) => tool,
            None => {
                if let Some(tool) = ToolName::ALL
                    .into_iter()
                    .find(|t| t.as_str().eq_ignore_ascii_case(name))
                {
                    return Err(fail(RuleProblem::WrongCase(tool)));
                }
                return Ok(Rule {
                    text: text.to_owned(),
                    tool: RuleTool::Unknown(name.to_owned()),
                    specifier: spec.map(|s| Specifier::Opaque(s.to_owned())),
                });
            }
        };
        let specifier = match spec {
            None => None,
            Some("") => return Err(fail(RuleProblem::EmptySpecifier(tool))),
            Some(spec) => Some(parse_specifier(tool, spec).map_err(fail)?),
        };
        Ok(Rule {
            text: text.to_owned(),
            tool: RuleTool::Known(tool),
            specifier,
        })
    }

    /// Parses a list in the reference's CLI form: rules separated by commas
    /// or whitespace outside parentheses (`"Bash(git:*) Edit,Read"`).
    pub fn parse_list(list: &str) -> Result<Vec<Rule>, RuleError> {
        split_list(list).into_iter().map(Rule::parse).collect()
    }

    /// The rule as written (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tool it names.
    pub fn tool(&self) -> &RuleTool {
        &self.tool
    }

    /// What is in its parentheses, if anything.
    pub fn specifier(&self) -> Option<&Specifier> {
        self.specifier.as_ref()
    }

    /// Does this rule speak about calls of `tool` at all? A Read rule covers
    /// Read, Glob and Grep; an Edit rule covers Edit and Write.
    pub fn covers_tool(&self, tool: ToolName) -> bool {
        let RuleTool::Known(own) = self.tool else {
            return false;
        };
        match own {
            ToolName::Read => matches!(tool, ToolName::Read | ToolName::Glob | ToolName::Grep),
            ToolName::Edit => matches!(tool, ToolName::Edit | ToolName::Write),
            ToolName::Write
            | ToolName::Glob
            | ToolName::Grep
            | ToolName::Bash
            | ToolName::SendMessage
            | ToolName::TaskCreate
            | ToolName::TaskGet
            | ToolName::TaskUpdate
            | ToolName::TaskList => own == tool,
        }
    }

    /// Does this rule match the subject? `for_allow` selects the stricter
    /// reading used for allow rules (no `..` escapes).
    fn matches(&self, subject: &Subject<'_>, for_allow: bool) -> bool {
        match subject {
            Subject::Path { tool, path } => {
                self.covers_tool(*tool)
                    && match &self.specifier {
                        None => !(for_allow && path.escaped),
                        Some(Specifier::Path(pattern)) => pattern.covers(path, for_allow),
                        Some(Specifier::CommandPrefix(_) | Specifier::Command(_))
                        | Some(Specifier::Opaque(_)) => false,
                    }
            }
            Subject::Command(command) => {
                self.covers_tool(ToolName::Bash)
                    && match &self.specifier {
                        None => true,
                        Some(Specifier::CommandPrefix(_) | Specifier::Command(_)) => {
                            if for_allow {
                                !command.opaque
                                    && !command.parts.is_empty()
                                    && command.parts.iter().all(|p| self.matches_words(p))
                            } else {
                                command.parts.iter().any(|p| self.matches_words(p))
                                    || command.loose.iter().any(|p| self.matches_words(p))
                            }
                        }
                        Some(Specifier::Path(_) | Specifier::Opaque(_)) => false,
                    }
            }
            Subject::Coordination { tool } => {
                tool.is_some_and(|t| self.covers_tool(t)) && self.specifier.is_none()
            }
        }
    }

    /// Does this Bash rule's specifier match one command part?
    fn matches_words(&self, part: &[String]) -> bool {
        match &self.specifier {
            Some(Specifier::CommandPrefix(prefix)) => part.starts_with(prefix),
            Some(Specifier::Command(words)) => part == words.as_slice(),
            Some(Specifier::Path(_) | Specifier::Opaque(_)) | None => false,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_specifier(tool: ToolName, spec: &str) -> Result<Specifier, RuleProblem> {
    match tool {
        ToolName::Bash => parse_command_spec(spec),
        ToolName::Read | ToolName::Write | ToolName::Edit | ToolName::Glob | ToolName::Grep => {
            parse_path_spec(spec).map(Specifier::Path)
        }
        ToolName::SendMessage
        | ToolName::TaskCreate
        | ToolName::TaskGet
        | ToolName::TaskUpdate
        | ToolName::TaskList => Err(RuleProblem::NoSpecifier(tool)),
    }
}

fn parse_command_spec(spec: &str) -> Result<Specifier, RuleProblem> {
    let (body, prefix) = match spec.strip_suffix(":*") {
        Some(body) => (body, true),
        None => (spec, false),
    };
    if body.contains('*') {
        return Err(RuleProblem::BashWildcard);
    }
    let command = Command::parse(body);
    if command.opaque || command.parts.len() > 1 {
        return Err(RuleProblem::CompoundCommand);
    }
    let words = command.parts.into_iter().next().unwrap_or_default();
    if words.is_empty() {
        return Err(RuleProblem::EmptyCommandPrefix);
    }
    Ok(if prefix {
        Specifier::CommandPrefix(words)
    } else {
        Specifier::Command(words)
    })
}

fn parse_path_spec(spec: &str) -> Result<PathPattern, RuleProblem> {
    let (base, rest, rooted) = if let Some(rest) = spec.strip_prefix("//") {
        (PathBase::FilesystemRoot, rest, true)
    } else if spec == "~" {
        (PathBase::CapabilityDir, "", true)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        (PathBase::CapabilityDir, rest, true)
    } else if spec.starts_with('~') {
        return Err(RuleProblem::OtherUsersHome);
    } else if let Some(rest) = spec.strip_prefix("./") {
        (PathBase::CapabilityDir, rest, true)
    } else if let Some(rest) = spec.strip_prefix('/') {
        (PathBase::CapabilityDir, rest, true)
    } else {
        (PathBase::CapabilityDir, spec, false)
    };
    let rest = rest.trim_end_matches('/');
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .map(str::to_owned)
        .collect();
    if segments.iter().any(|s| s == "..") {
        return Err(RuleProblem::ClimbsOut);
    }
    let anchored = rooted || rest.contains('/') || segments.is_empty();
    let mut effective = Vec::with_capacity(segments.len() + 2);
    if !anchored {
        effective.push(Seg::Any);
    }
    effective.extend(segments.iter().map(|s| {
        if s == "**" {
            Seg::Any
        } else {
            Seg::Glob(s.clone())
        }
    }));
    effective.push(Seg::Any);
    Ok(PathPattern {
        base,
        anchored,
        segments,
        effective,
    })
}

/// Splits the reference's list form (`"Bash(git:*) Edit,Read"`) into rule
/// texts: separators are commas and whitespace outside parentheses.
pub fn split_list(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = None;
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                if let Some(s) = start.take() {
                    out.push(&list[s..i]);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(i);
    }
    if let Some(s) = start {
        out.push(&list[s..]);
    }
    out
}

/// A teammate's rules: `allowedTools` pre-approve, `disallowedTools` deny,
/// and deny wins. The default is no rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRules {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

impl ToolRules {
    /// Parses `allowedTools` and `disallowedTools`, one rule per item. The
    /// error names the list and the rule.
    pub fn new<A, D>(allowed: A, disallowed: D) -> Result<ToolRules, RuleError>
    where
        A: IntoIterator,
        A::Item: AsRef<str>,
        D: IntoIterator,
        D::Item: AsRef<str>,
    {
        let parse = |items: Vec<String>, list| {
            items
                .iter()
                .map(|s| {
                    Rule::parse(s).map_err(|mut e| {
                        e.list = Some(list);
                        e
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let allowed = allowed.into_iter().map(|s| s.as_ref().to_owned()).collect();
        let disallowed = disallowed
            .into_iter()
            .map(|s| s.as_ref().to_owned())
            .collect();
        Ok(ToolRules {
            allow: parse(allowed, RuleList::Allowed)?,
            deny: parse(disallowed, RuleList::Disallowed)?,
        })
    }

    /// Parses the two lists in the reference's CLI form
    /// (`--allowedTools "Bash(git:*) Edit Read"`); see [`split_list`].
    pub fn parse_lists(allowed: &str, disallowed: &str) -> Result<ToolRules, RuleError> {
        ToolRules::new(split_list(allowed), split_list(disallowed))
    }

    /// The allow rules, in order.
    pub fn allowed(&self) -> &[Rule] {
        &self.allow
    }

    /// The deny rules, in order.
    pub fn disallowed(&self) -> &[Rule] {
        &self.deny
    }

    /// Adds an allow rule (a grant from the lead, for the session).
    pub fn add_allowed(&mut self, rule: Rule) {
        self.allow.push(rule);
    }

    /// Adds a deny rule.
    pub fn add_disallowed(&mut self, rule: Rule) {
        self.deny.push(rule);
    }

    /// Tool names in either list that teamhost has no tool for, for a
    /// warning: those rules match nothing.
    pub fn unknown_tools(&self) -> Vec<&str> {
        self.allow
            .iter()
            .chain(&self.deny)
            .filter_map(|r| match &r.tool {
                RuleTool::Unknown(name) => Some(name.as_str()),
                RuleTool::Known(_) => None,
            })
            .collect()
    }

    /// The deny rule that covers one file a tool is about to return, if any:
    /// Glob and Grep are allowed on their search root, and must skip each
    /// file this names (`via` is the tool, `file` absolute or relative to the
    /// capability directory).
    pub fn denies_file(&self, via: ToolName, file: &str, ctx: &PolicyContext) -> Option<&Rule> {
        let path = ctx.resolve(file);
        self.first_deny(&Subject::Path {
            tool: via,
            path: &path,
        })
    }

    /// The first deny rule matching the subject.
    pub(crate) fn first_deny(&self, subject: &Subject<'_>) -> Option<&Rule> {
        self.deny.iter().find(|r| r.matches(subject, false))
    }

    /// The allow rules that together allow the subject, or `None`. For a
    /// compound command, one rule per part (deduplicated), unless a bare
    /// `Bash` rule allows all of it.
    pub(crate) fn allowing(&self, subject: &Subject<'_>) -> Option<Vec<&Rule>> {
        if let Some(rule) = self.allow.iter().find(|r| r.matches(subject, true)) {
            return Some(vec![rule]);
        }
        let Subject::Command(command) = subject else {
            return None;
        };
        if command.opaque || command.parts.is_empty() {
            return None;
        }
        let mut used: Vec<&Rule> = Vec::new();
        for part in &command.parts {
            let rule = self
                .allow
                .iter()
                .find(|r| r.covers_tool(ToolName::Bash) && r.matches_words(part))?;
            if !used.contains(&rule) {
                used.push(rule);
            }
        }
        Some(used)
    }

    /// Parts of the command no allow rule matches, for suggestions.
    pub(crate) fn unallowed_parts<'c>(&self, command: &'c Command) -> Vec<&'c [String]> {
        command
            .parts
            .iter()
            .filter(|part| {
                !self
                    .allow
                    .iter()
                    .any(|r| r.covers_tool(ToolName::Bash) && r.matches_words(part))
            })
            .map(Vec::as_slice)
            .collect()
    }
}

/// What rules are matched against: one view of a classified tool call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Subject<'a> {
    /// A file tool's file (Read, Write, Edit) or search root (Glob, Grep).
    Path {
        tool: ToolName,
        path: &'a ResolvedPath,
    },
    /// A Bash command.
    Command(&'a Command),
    /// A coordination call, under its reference tool name if it has one.
    Coordination { tool: Option<ToolName> },
}

// ---------------------------------------------------------------------------
// Paths

/// A directory given by the host (the capability directory, the plan file),
/// normalised lexically once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Anchor {
    rooted: bool,
    comps: Vec<String>,
}

impl Anchor {
    pub(crate) fn new(path: &str) -> Anchor {
        let mut comps: Vec<String> = Vec::new();
        for seg in path.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    comps.pop();
                }
                name => comps.push(name.to_owned()),
            }
        }
        Anchor {
            rooted: path.starts_with('/'),
            comps,
        }
    }

    fn contains(&self, rooted: bool, comps: &[String]) -> bool {
        rooted == self.rooted && comps.starts_with(&self.comps)
    }
}

/// A call's path, normalised lexically against the capability directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    rooted: bool,
    comps: Vec<String>,
    /// Components of the capability directory, when the path is inside it.
    inside: Option<usize>,
    escaped: bool,
}

impl ResolvedPath {
    /// `raw` (absolute, or relative to `cap`) normalised: `.` dropped, `..`
    /// pops a segment (and stays at `/` at the root). Any `..` step that
    /// lands outside `cap` marks the path as escaped.
    pub(crate) fn resolve(cap: &Anchor, raw: &str) -> ResolvedPath {
        let (rooted, mut comps) = if raw.starts_with('/') {
            (true, Vec::new())
        } else {
            (cap.rooted, cap.comps.clone())
        };
        let mut escaped = false;
        for seg in raw.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    comps.pop();
                    if !cap.contains(rooted, &comps) {
                        escaped = true;
                    }
                }
                name => comps.push(name.to_owned()),
            }
        }
        let inside = cap.contains(rooted, &comps).then_some(cap.comps.len());
        ResolvedPath {
            rooted,
            comps,
            inside,
            escaped,
        }
    }

    /// Glob's and Grep's search root: `path` (default: the capability
    /// directory) joined with the pattern's leading segments that have no
    /// wildcard. An absolute pattern ignores `path`. A `..` after a wildcard
    /// marks the result as escaped.
    pub(crate) fn resolve_search(
        cap: &Anchor,
        path: Option<&str>,
        pattern: Option<&str>,
    ) -> ResolvedPath {
        let mut joined = path.unwrap_or("").to_owned();
        let mut wild_dotdot = false;
        if let Some(pattern) = pattern {
            if pattern.starts_with('/') {
                joined = "/".to_owned();
            }
            let mut wild = false;
            for seg in pattern.split('/') {
                wild = wild || seg.contains(['*', '?', '[', '{']);
                if wild {
                    wild_dotdot = wild_dotdot || seg == "..";
                } else if !seg.is_empty() {
                    if !joined.is_empty() && !joined.ends_with('/') {
                        joined.push('/');
                    }
                    joined.push_str(seg);
                }
            }
        }
        let mut resolved = ResolvedPath::resolve(cap, &joined);
        if wild_dotdot {
            resolved.escaped = true;
        }
        resolved
    }

    /// A path the host chose (the plan file): its `..` are the host's
    /// business, not an escape.
    pub(crate) fn host_given(mut self) -> ResolvedPath {
        self.escaped = false;
        self
    }

    /// The same file as `other`, by normalised path, and neither escaped.
    pub(crate) fn same_file(&self, other: &ResolvedPath) -> bool {
        !self.escaped && !other.escaped && self.rooted == other.rooted && self.comps == other.comps
    }

    /// Inside the capability directory, and no `..` ever left it.
    pub fn is_inside(&self) -> bool {
        self.inside.is_some() && !self.escaped
    }

    /// A `..` stepped outside the capability directory.
    pub fn escapes(&self) -> bool {
        self.escaped
    }

    /// The normalised absolute path (`/cap/src/main.rs`).
    pub fn absolute(&self) -> String {
        join(self.rooted, &self.comps)
    }

    /// Relative to the capability directory (`src/main.rs`, `.` for the
    /// directory itself), when inside it.
    pub fn relative(&self) -> Option<String> {
        let rel = self.relative_components()?;
        Some(if rel.is_empty() {
            ".".to_owned()
        } else {
            rel.join("/")
        })
    }

    /// Relative when inside, absolute otherwise.
    pub fn display(&self) -> String {
        match self.relative() {
            Some(rel) if !self.escaped => rel,
            Some(_) | None => self.absolute(),
        }
    }

    /// The absolute parent directory (the path itself at the root).
    pub(crate) fn parent_absolute(&self) -> String {
        let n = self.comps.len().saturating_sub(1);
        join(self.rooted, &self.comps[..n])
    }

    fn relative_components(&self) -> Option<Vec<&str>> {
        let start = self.inside?;
        Some(self.comps[start..].iter().map(String::as_str).collect())
    }
}

fn join(rooted: bool, comps: &[String]) -> String {
    let body = comps.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}

/// Does the segment glob match the path's segments? Dynamic programming over
/// (pattern, path) positions, so many `**` cost no backtracking blow-up.
fn match_segments(pattern: &[Seg], path: &[&str]) -> bool {
    let (np, ns) = (pattern.len(), path.len());
    // row[j]: pattern[i..] matches path[j..], for the current i.
    let mut next = vec![false; ns + 1];
    next[ns] = true;
    for i in (0..np).rev() {
        let mut row = vec![false; ns + 1];
        for j in (0..=ns).rev() {
            row[j] = match &pattern[i] {
                Seg::Any => next[j] || (j < ns && row[j + 1]),
                Seg::Glob(glob) => j < ns && next[j + 1] && segment_matches(glob, path[j]),
            };
        }
        next = row;
    }
    next[0]
}

/// `*` (any run of characters) and `?` (one character) within one segment.
fn segment_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

// ---------------------------------------------------------------------------
// Bash commands

/// A Bash command split for matching (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// Parts, each a list of words with quoting removed.
    pub(crate) parts: Vec<Vec<String>>,
    /// Parts from the crude split that ignores quoting (deny only).
    loose: Vec<Vec<String>>,
    /// A substitution or an unclosed quote: what runs is not known.
    pub(crate) opaque: bool,
}

impl Command {
    pub(crate) fn parse(command: &str) -> Command {
        let (parts, opaque) = split_structured(command);
        Command {
            parts,
            loose: split_loose(command),
            opaque,
        }
    }
}

/// Splits at `;`, `&`, `|`, newlines and parentheses outside quotes; words at
/// whitespace; removes quotes and backslashes the way a shell would.
fn split_structured(command: &str) -> (Vec<Vec<String>>, bool) {
    struct Acc {
        parts: Vec<Vec<String>>,
        words: Vec<String>,
        word: String,
        in_word: bool,
    }
    impl Acc {
        fn end_word(&mut self) {
            if self.in_word {
                self.words.push(std::mem::take(&mut self.word));
                self.in_word = false;
            }
        }
        fn end_part(&mut self) {
            self.end_word();
            if !self.words.is_empty() {
                self.parts.push(std::mem::take(&mut self.words));
            }
        }
    }
    let chars: Vec<char> = command.chars().collect();
    let n = chars.len();
    let mut acc = Acc {
        parts: Vec::new(),
        words: Vec::new(),
        word: String::new(),
        in_word: false,
    };
    let mut opaque = false;
    let mut i = 0;
    while i < n {
        let c = chars[i];
        match c {
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    if next != '\n' {
                        acc.word.push(next);
                        acc.in_word = true;
                    }
                }
                i += 2;
                continue;
            }
            '\'' => {
                acc.in_word = true;
                match chars[i + 1..].iter().position(|&c| c == '\'') {
                    Some(len) => {
                        acc.word.extend(&chars[i + 1..i + 1 + len]);
                        i += len + 2;
                    }
                    None => {
                        opaque = true;
                        acc.word.extend(&chars[i + 1..]);
                        i = n;
                    }
                }
                continue;
            }
            '"' => {
                acc.in_word = true;
                i += 1;
                let mut closed = false;
                while i < n {
                    match chars[i] {
                        '"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        '\\' if i + 1 < n && matches!(chars[i + 1], '"' | '\\' | '$' | '`') => {
                            acc.word.push(chars[i + 1]);
                            i += 2;
                        }
                        '`' => {
                            opaque = true;
                            acc.word.push('`');
                            i += 1;
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            opaque = true;
                            acc.word.push('$');
                            i += 1;
                        }
                        other => {
                            acc.word.push(other);
                            i += 1;
                        }
                    }
                }
                opaque = opaque || !closed;
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                opaque = true;
                acc.end_part();
                i += 2;
                continue;
            }
            '`' => {
                opaque = true;
                acc.end_part();
            }
            '(' => {
                if acc.in_word && (acc.word.ends_with('<') || acc.word.ends_with('>')) {
                    opaque = true;
                }
                acc.end_part();
            }
            '&' => {
                let redirect =
                    (i > 0 && matches!(chars[i - 1], '>' | '<')) || chars.get(i + 1) == Some(&'>');
                if redirect {
                    acc.word.push('&');
                    acc.in_word = true;
                } else {
                    acc.end_part();
                }
            }
            ';' | '|' | ')' | '\n' => acc.end_part(),
            c if c.is_whitespace() => acc.end_word(),
            c => {
                acc.word.push(c);
                acc.in_word = true;
            }
        }
        i += 1;
    }
    acc.end_part();
    (acc.parts, opaque)
}

/// The crude split for deny rules: quotes, `$` and backslashes count as
/// separators or vanish, so quoted and substituted commands surface as parts.
fn split_loose(command: &str) -> Vec<Vec<String>> {
    command
        .split(|c: char| ";&|()`\"'\n$".contains(c))
        .map(|part| {
            part.split_whitespace()
                .map(|w| w.replace('\\', ""))
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .collect()
}

/// One word as a shell (and [`Command::parse`]) would read it back.
pub(crate) fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PolicyContext {
        PolicyContext::new("/work/cap")
    }

    fn rule(s: &str) -> Rule {
        Rule::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn problem(s: &str) -> RuleProblem {
        Rule::parse(s).unwrap_err().problem
    }

    fn path_rule_matches(rule_text: &str, tool: ToolName, path: &str) -> bool {
        let path = ctx().resolve(path);
        rule(rule_text).matches(&Subject::Path { tool, path: &path }, true)
    }

    fn allows_command(rules: &[&str], command: &str) -> bool {
        let rules = ToolRules::new(rules, [""; 0]).unwrap();
        rules
            .allowing(&Subject::Command(&Command::parse(command)))
            .is_some()
    }

    fn denies_command(rules: &[&str], command: &str) -> bool {
        let rules = ToolRules::new([""; 0], rules).unwrap();
        rules
            .first_deny(&Subject::Command(&Command::parse(command)))
            .is_some()
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

    // --- globs -------------------------------------------------------------

    #[test]
    fn star_stays_within_a_segment_and_double_star_crosses_segments() {
        assert!(segment_matches("*.rs", "main.rs"));
        assert!(segment_matches("*.rs", ".rs"));
        assert!(!segment_matches("*.rs", "main.rsx"));
        assert!(segment_matches("?.rs", "a.rs"));
        assert!(!segment_matches("?.rs", "ab.rs"));
        assert!(segment_matches("a*b*c", "axxbyyc"));
        assert!(!segment_matches("a*b*c", "axxbyy"));
        assert!(segment_matches("*", ".env"));
        let glob = |s: &str| {
            s.split('/')
                .map(|x| {
                    if x == "**" {
                        Seg::Any
                    } else {
                        Seg::Glob(x.into())
                    }
                })
                .collect::<Vec<_>>()
        };
        assert!(match_segments(&glob("src/*.rs"), &["src", "main.rs"]));
        assert!(!match_segments(&glob("src/*.rs"), &["src", "a", "main.rs"]));
        assert!(match_segments(
            &glob("src/**/*.rs"),
            &["src", "a", "b", "main.rs"]
        ));
        assert!(match_segments(&glob("src/**/*.rs"), &["src", "main.rs"]));
        assert!(match_segments(&glob("**"), &[]));
        assert!(match_segments(
            &glob("**/**/**/**/**/x"),
            &["a", "b", "c", "d", "e", "f", "g", "h", "x"]
        ));
        assert!(!match_segments(
            &glob("**/**/**/**/**/x"),
            &["a", "b", "c", "d", "e", "f", "g", "h", "y"]
        ));
    }

    #[test]
    fn edit_src_globstar_matches_files_under_src_only() {
        assert!(path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "src/main.rs"
        ));
        assert!(path_rule_matches(
            "Edit(src/**)",
            ToolName::Write,
            "src/a/b/c.rs"
        ));
        assert!(path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "/work/cap/src/lib.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "lib/src/x.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "srcx/a.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(src/**)",
            ToolName::Read,
            "src/a.rs"
        ));
    }

    #[test]
    fn a_bare_name_glob_matches_at_any_depth() {
        assert!(path_rule_matches("Edit(*.rs)", ToolName::Edit, "main.rs"));
        assert!(path_rule_matches(
            "Edit(*.rs)",
            ToolName::Edit,
            "src/deep/x.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(*.rs)",
            ToolName::Edit,
            "src/x.toml"
        ));
        assert!(path_rule_matches(
            "Read(.env)",
            ToolName::Read,
            "config/.env"
        ));
        assert!(!path_rule_matches(
            "Read(./.env)",
            ToolName::Read,
            "config/.env"
        ));
        assert!(path_rule_matches("Read(./.env)", ToolName::Read, ".env"));
    }

    #[test]
    fn a_rule_naming_a_directory_covers_everything_under_it() {
        assert!(path_rule_matches("Edit(src)", ToolName::Edit, "src/a/b.rs"));
        assert!(path_rule_matches(
            "Edit(src/)",
            ToolName::Edit,
            "src/a/b.rs"
        ));
        assert!(path_rule_matches(
            "Read(secrets)",
            ToolName::Read,
            "x/secrets/key"
        ));
    }

    #[test]
    fn tilde_is_the_capability_directory() {
        assert!(path_rule_matches("Read(~/**)", ToolName::Read, "a.txt"));
        assert!(path_rule_matches(
            "Read(~/**)",
            ToolName::Read,
            "/work/cap/x/y"
        ));
        assert!(path_rule_matches("Read(~/**)", ToolName::Grep, "."));
        assert!(path_rule_matches("Read(~)", ToolName::Read, "x"));
        assert!(path_rule_matches(
            "Read(~/docs/*.md)",
            ToolName::Read,
            "docs/a.md"
        ));
        assert!(!path_rule_matches(
            "Read(~/**)",
            ToolName::Read,
            "/home/me/.bashrc"
        ));
        assert!(!path_rule_matches(
            "Read(~/**)",
            ToolName::Read,
            "/work/other"
        ));
        // `~` in a call path is an ordinary name.
        assert!(!path_rule_matches(
            "Read(~/a.txt)",
            ToolName::Read,
            "~/b.txt"
        ));
        assert!(path_rule_matches("Read(~/**)", ToolName::Read, "~/b.txt"));
    }

    #[test]
    fn a_leading_slash_is_the_capability_directory_and_a_double_slash_the_root() {
        assert!(path_rule_matches(
            "Edit(/docs/**)",
            ToolName::Edit,
            "docs/a.md"
        ));
        assert!(!path_rule_matches(
            "Edit(/docs/**)",
            ToolName::Edit,
            "/docs/a.md"
        ));
        assert!(path_rule_matches(
            "Read(//tmp/**)",
            ToolName::Read,
            "/tmp/x/y"
        ));
        assert!(!path_rule_matches(
            "Read(//tmp/**)",
            ToolName::Read,
            "tmp/x"
        ));
        assert!(path_rule_matches(
            "Read(//work/cap/src/**)",
            ToolName::Read,
            "src/a.rs"
        ));
    }

    // --- path resolution and escapes --------------------------------------

    #[test]
    fn paths_are_normalised_lexically_against_the_capability_directory() {
        let c = ctx();
        let p = c.resolve("./src/./a/../b.rs");
        assert_eq!(p.absolute(), "/work/cap/src/b.rs");
        assert_eq!(p.relative().as_deref(), Some("src/b.rs"));
        assert!(p.is_inside());
        assert!(!p.escapes());
        assert_eq!(c.resolve("").relative().as_deref(), Some("."));
        assert_eq!(c.resolve("/work/cap//x/").display(), "x");
        assert_eq!(c.resolve("/").absolute(), "/");
        assert_eq!(c.resolve("/../../etc").absolute(), "/etc");
    }

    #[test]
    fn dot_dot_out_of_the_directory_escapes() {
        let c = ctx();
        for raw in ["../x", "src/../../x", "/work/cap/../x", "a/b/../../../x"] {
            let p = c.resolve(raw);
            assert!(p.escapes(), "{raw}");
            assert!(!p.is_inside(), "{raw}");
        }
        // Leaving and coming back still counts.
        let back = c.resolve("../cap/a.rs");
        assert_eq!(back.absolute(), "/work/cap/a.rs");
        assert!(back.escapes());
        assert!(!back.is_inside());
        // An absolute path outside is outside, not escaped.
        let etc = c.resolve("/etc/passwd");
        assert!(!etc.escapes());
        assert!(!etc.is_inside());
        assert_eq!(etc.display(), "/etc/passwd");
    }

    #[test]
    fn an_escaping_path_never_matches_an_allow_rule_but_still_matches_a_deny_rule() {
        let c = ctx();
        let p = c.resolve("src/../../cap/src/a.rs");
        let subject = Subject::Path {
            tool: ToolName::Read,
            path: &p,
        };
        for text in ["Read", "Read(src/**)", "Read(//work/**)", "Read(~/**)"] {
            let r = rule(text);
            assert!(!r.matches(&subject, true), "{text} allowed an escape");
        }
        let etc = c.resolve("../../etc/passwd");
        let subject = Subject::Path {
            tool: ToolName::Read,
            path: &etc,
        };
        assert!(rule("Read(//etc/**)").matches(&subject, false));
        assert!(rule("Read").matches(&subject, false));
    }

    #[test]
    fn glob_and_grep_are_judged_on_the_directory_they_search() {
        let cap = Anchor::new("/work/cap");
        let s = |path: Option<&str>, pattern: &str| {
            ResolvedPath::resolve_search(&cap, path, Some(pattern))
        };
        assert_eq!(s(None, "src/**/*.rs").display(), "src");
        assert_eq!(s(Some("lib"), "*.rs").display(), "lib");
        assert_eq!(s(None, "**/*.rs").display(), ".");
        assert_eq!(s(Some("x"), "/etc/*").display(), "/etc");
        assert!(s(None, "../*").escapes());
        assert!(s(None, "*/../../x").escapes());
        assert!(!s(None, "src/*/x").escapes());
        assert_eq!(
            ResolvedPath::resolve_search(&cap, Some("docs"), None).display(),
            "docs"
        );
    }

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

    // --- Bash --------------------------------------------------------------

    #[test]
    fn a_prefix_rule_matches_the_command_as_a_word() {
        assert!(allows_command(&["Bash(git:*)"], "git status"));
        assert!(allows_command(&["Bash(git:*)"], "git"));
        assert!(allows_command(&["Bash(git:*)"], "  git   log --oneline  "));
        assert!(!allows_command(&["Bash(git:*)"], "gitx status"));
        assert!(!allows_command(&["Bash(git:*)"], "echo git"));
        assert!(allows_command(
            &["Bash(npm run test:*)"],
            "npm run test -- --watch"
        ));
        assert!(!allows_command(&["Bash(npm run test:*)"], "npm run testx"));
        assert!(!allows_command(&["Bash(npm run test:*)"], "npm run"));
    }

    #[test]
    fn an_exact_rule_matches_only_that_command() {
        assert!(allows_command(&["Bash(npm test)"], "npm test"));
        assert!(allows_command(&["Bash(npm test)"], "npm  'test'"));
        assert!(!allows_command(&["Bash(npm test)"], "npm test --all"));
        assert!(!allows_command(&["Bash(npm test)"], "npm"));
        assert!(allows_command(&["Bash(echo 'a b')"], "echo \"a b\""));
        assert!(!allows_command(&["Bash(echo 'a b')"], "echo a b"));
    }

    #[test]
    fn a_compound_command_is_allowed_only_if_every_part_is() {
        assert!(!allows_command(&["Bash(git:*)"], "rm -rf /; git status"));
        assert!(!allows_command(&["Bash(git:*)"], "git status; rm -rf /"));
        assert!(!allows_command(&["Bash(git:*)"], "git status && rm -rf /"));
        assert!(!allows_command(&["Bash(git:*)"], "git status || rm -rf /"));
        assert!(!allows_command(&["Bash(git:*)"], "git log | sh"));
        assert!(!allows_command(&["Bash(git:*)"], "git log & rm x"));
        assert!(!allows_command(&["Bash(git:*)"], "git log\nrm x"));
        assert!(!allows_command(&["Bash(git:*)"], "(rm x)"));
        assert!(allows_command(
            &["Bash(git:*)"],
            "git add . && git commit -m 'a; b'"
        ));
        assert!(allows_command(
            &["Bash(git:*)", "Bash(npm test)"],
            "git pull && npm test"
        ));
        assert!(allows_command(&["Bash(cargo test:*)"], "cargo test 2>&1"));
        assert!(allows_command(
            &["Bash(cargo test:*)"],
            "cargo test &> out.txt"
        ));
    }

    #[test]
    fn a_substitution_or_unclosed_quote_matches_no_command_rule() {
        assert!(!allows_command(&["Bash(git:*)"], "git log $(rm -rf /)"));
        assert!(!allows_command(&["Bash(git:*)"], "git log `rm -rf /`"));
        assert!(!allows_command(&["Bash(git:*)"], "git log \"$(id)\""));
        assert!(!allows_command(
            &["Bash(git:*)"],
            "git diff <(cat /etc/passwd)"
        ));
        assert!(!allows_command(&["Bash(git:*)"], "git commit -m 'unclosed"));
        assert!(allows_command(
            &["Bash(git:*)"],
            "git commit -m '$(not run)'"
        ));
        // A bare Bash rule allows anything.
        assert!(allows_command(&["Bash"], "git log $(rm -rf /)"));
        assert!(!allows_command(&["Bash(git:*)"], ""));
    }

    #[test]
    fn a_deny_rule_matches_any_part_even_hidden_in_quotes_or_substitutions() {
        assert!(denies_command(&["Bash(rm:*)"], "rm -rf /"));
        assert!(denies_command(&["Bash(rm:*)"], "git status; rm -rf /"));
        assert!(denies_command(&["Bash(rm:*)"], "ls | rm x"));
        assert!(denies_command(&["Bash(rm:*)"], "echo $(rm -rf x)"));
        assert!(denies_command(&["Bash(rm:*)"], "echo \"$(rm -rf x)\""));
        assert!(denies_command(&["Bash(rm:*)"], "echo `rm x`"));
        assert!(denies_command(&["Bash(rm:*)"], "sh -c 'rm -rf x'"));
        assert!(denies_command(&["Bash(rm:*)"], "\"rm\" -rf x"));
        assert!(denies_command(&["Bash(rm:*)"], "\\rm -rf x"));
        assert!(denies_command(&["Bash"], "true"));
        assert!(!denies_command(&["Bash(rm:*)"], "rmdir x"));
        assert!(!denies_command(&["Bash(rm:*)"], "echo rm"));
    }

    #[test]
    fn words_are_quoted_back_so_they_parse_to_themselves() {
        for word in ["git", "a b", "it's", "$(x)", "", "src/*.rs"] {
            let quoted = quote_word(word);
            let parsed = Command::parse(&quoted);
            assert_eq!(parsed.parts, vec![vec![word.to_owned()]], "{quoted}");
        }
    }
}
