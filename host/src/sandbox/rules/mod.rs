//! Tool rules in the reference's syntax (`Read`, `Bash(git:*)`,
//! `Edit(src/**)`, `Read(~/**)`), from a teammate's `allowedTools` and
//! `disallowedTools`, and what they match.
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`Rule`], [`RuleTool`], [`Specifier`]: parsing a rule and matching it; [`ToolRules`]; [`RuleError`] |
//! | `glob.rs` | [`PathPattern`], [`PathBase`]: parsing a path specifier and matching its glob |
//! | `paths.rs` | [`ResolvedPath`]: lexical normalisation of call paths against the capability directory |
//! | `command.rs` | Bash commands: splitting a command line into parts and words, parsing a Bash specifier |
//! | `runs_programs.rs` | which commands run other programs through their own options (`git -c`, `find -exec`, `env`): the table |
//! | `links.rs` | [`OnDisk`], [`follow`]: where a call's path leads through the symbolic links inside the directory (the one file that reads the filesystem) |
//! | `tests.rs` | tests of parsing and of [`ToolRules`]; each other file tests itself |
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
//! where it lands); the engine denies it outright. It denies every other call
//! path outside the capability directory too, whatever the allow rules say:
//! an allow rule only ever allows paths inside it, even one written
//! `//abs/path`.
//!
//! **Symbolic links.** Rules judge where a path leads, not how it is
//! spelled. Before a file call is decided, the host follows the links on
//! the way to its path inside the capability directory ([`follow`], the
//! last component included; for a path that does not exist yet, the
//! deepest existing parent) and hands the engine the result ([`OnDisk`]).
//! A deny rule that matches the path as spelled **or** where it leads
//! denies (`Read(secrets/**)` holds against `peek -> secrets`); an allow
//! rule must match where it leads (`Edit(src/**)` does not reach `other/`
//! through `src/out -> ../other`). A link on the way that points out of the
//! directory denies the call at once, as a path outside it does, and so do
//! links that loop. The lookup is advisory: a link swapped after it can
//! only lead to another path inside the directory, because the tools open
//! every path through cap-std, which follows no link out. A hard link
//! cannot be told from the file it names; a teammate that may run `ln` or
//! `cp` can give a denied file a new name, which is why path deny rules
//! bind the file tools and the capability directory is the boundary.
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
//! A command an allow rule with a specifier matches is still not
//! pre-approved when it can run another program through its own options
//! or configuration (`git -c`, `git --upload-pack`, an unknown git
//! subcommand that may be an alias, `find -exec`, `env`, `xargs`, shells,
//! `python -c`, …: the table is in `runs_programs.rs`). Such a call goes on
//! to the mode, which asks the lead, or denies it where the mode cannot ask
//! (`dontAsk`); the reason names the option and the rule. A bare `Bash`
//! rule and `bypassPermissions` still allow it; deny rules are unchanged.
//!
//! Bash deny rules are a convenience, not a boundary: `/bin/rm`, `env rm` or
//! a script file get past `Bash(rm:*)`, as they do in the reference.
//! Redirections are not analysed. What bounds Bash is the capability
//! directory it runs in.

mod command;
mod glob;
mod links;
mod lists;
mod paths;
mod runs_programs;
#[cfg(test)]
mod tests;

use std::fmt;

use super::ToolName;

pub(crate) use command::{quote_word, Command};
pub use glob::{PathBase, PathPattern};
pub use links::{follow, OnDisk, MAX_LINKS};
pub(crate) use paths::Anchor;
pub use paths::ResolvedPath;
pub(crate) use runs_programs::{runs_programs, RunsPrograms};

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
                "a path rule may not contain `..`: a teammate reaches nothing outside its \
                 capability directory (`//absolute/path` names a path in it absolutely)",
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
            | ToolName::TaskList
            | ToolName::Agent
            | ToolName::WebFetch => own == tool,
        }
    }

    /// Does this rule match the subject? `for_allow` selects the stricter
    /// reading used for allow rules (no `..` escapes).
    fn matches(&self, subject: &Subject<'_>, for_allow: bool) -> bool {
        match subject {
            Subject::Path { tool, path } => {
                self.covers_tool(*tool)
                    && match &self.specifier {
                        None => !(for_allow && path.escapes()),
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
                                command.parts.iter().chain(&command.loose).any(|p| {
                                    self.matches_words(p)
                                        || self.matches_words(&command::program_form(p))
                                })
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
        ToolName::Bash => command::parse_command_spec(spec),
        ToolName::Read | ToolName::Write | ToolName::Edit | ToolName::Glob | ToolName::Grep => {
            glob::parse_path_spec(spec).map(Specifier::Path)
        }
        ToolName::SendMessage
        | ToolName::TaskCreate
        | ToolName::TaskGet
        | ToolName::TaskUpdate
        | ToolName::TaskList
        | ToolName::Agent => Err(RuleProblem::NoSpecifier(tool)),
        // `WebFetch(domain:…)`, as Claude Code writes it into a member's
        // rules: read, kept, and matching no call (a refusal would fail the
        // teammate a Claude Code lead spawned).
        ToolName::WebFetch => Ok(Specifier::Opaque(spec.to_string())),
    }
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
    pub fn denies_file(&self, via: ToolName, file: &str, ctx: &impl ResolvePath) -> Option<&Rule> {
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

    /// The first Bash allow rule that matches one part of a command by its
    /// words (`Bash(git:*)`, `Bash(npm test)`), for reasons.
    pub(crate) fn allowing_part(&self, part: &[String]) -> Option<&Rule> {
        self.allow
            .iter()
            .find(|r| r.covers_tool(ToolName::Bash) && r.matches_words(part))
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

/// What places a call's path against the capability directory: the
/// policy's `PolicyContext` implements it. A trait here so the rules need
/// nothing from the policy engine above them (which uses the rules).
pub trait ResolvePath {
    /// A call's path (absolute, or relative to the capability directory),
    /// normalised lexically.
    fn resolve(&self, path: &str) -> ResolvedPath;
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
