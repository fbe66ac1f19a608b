//! The permission engine: may this teammate make this tool call? A pure
//! function of the teammate's [`PermissionMode`], its [`ToolRules`] and the
//! [`ToolCall`], answering [`Decision::Allow`], [`Decision::Deny`] or
//! [`Decision::Ask`] (the lead, through `permission_request`) with a reason.
//! No I/O, no wasm, no clock: paths are normalised lexically, and where a
//! path's symbolic links lead is looked up before the decision
//! ([`PolicyContext::look`]) and handed to [`decide_on_disk`].
//!
//! The engine is policy, not containment. A teammate reaches files only
//! through its capability directory (cap-std, so symlinks cannot lead out);
//! an `Allow` here is necessary for a call to run, never sufficient.
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the vocabulary: [`ToolCall`] and its inputs, [`CoordinationKind`], [`ToolName`], [`ToolClass`] |
//! | [`mode`] | [`PermissionMode`]: the six modes, parse and display |
//! | [`confinement`] | [`DirAccess`] (the preopen by mode and deny rules) and [`Confinement`] (Bash, by mode) |
//! | [`limits`] | [`Limits`]: memory, CPU and wall time per turn, sizes, approval wait |
//! | [`rules`] | [`Rule`] and [`ToolRules`]: the reference's rule syntax, path globs, Bash command matching, lexical paths |
//! | [`policy`] | [`decide`], [`PolicyContext`], [`Decision`], [`Suggestion`] |
//!
//! # What each mode allows
//!
//! Rows are tool classes ([`ToolClass`]); "inside" means inside the
//! capability directory after lexical normalisation.
//!
//! | call | `default` | `acceptEdits` | `bypassPermissions` | `plan` | `dontAsk` | `delegate` |
//! |---|---|---|---|---|---|---|
//! | coordination (mailbox, messaging, tasks, team) | allow | allow | allow | allow | allow | allow |
//! | Read / Glob / Grep inside | allow | allow | allow | allow | allow | **deny** |
//! | Write / Edit inside | ask | allow | allow | **deny**¹ | deny | **deny** |
//! | Bash | ask | ask | allow | **deny** | deny | **deny** |
//! | Read / Glob / Grep / Write / Edit outside | **deny** | **deny** | **deny** | **deny**¹ | **deny** | **deny** |
//! | a path that climbs out through `..` | **deny** | **deny** | **deny** | **deny** | **deny** | **deny** |
//! | a path whose symbolic links lead out, or loop | **deny** | **deny** | **deny** | **deny** | **deny** | **deny** |
//!
//! ¹ except the plan file ([`PolicyContext::with_plan_file`]), which plan mode
//! may read, write and edit wherever the host put it.
//!
//! A path outside the directory is denied at once, in every mode: the tools
//! reach only the capability directory, so asking the lead would be a
//! question whose "yes" changes nothing. The reason says so and names the
//! absolute path.
//!
//! Rules change the table in two ways, in this order:
//!
//! 1. **A matching deny rule denies, in every mode, before anything else.**
//!    Deny wins over allow, over the mode and over the plan file.
//! 2. **A matching allow rule allows** any cell that is not bold: it turns an
//!    ask into an allow, and a denial of `dontAsk` into an allow. It does not
//!    open what `plan` or `delegate` close (those modes restrict the tool set
//!    itself, as the reference's do), nor a path outside the directory (an
//!    allow rule naming one, such as `Read(//etc/**)`, never allows anything).
//!
//! Both judge a path where its links lead (a deny rule also as spelled),
//! and a Bash allow rule with a specifier (`Bash(git:*)`) does not cover a
//! command that runs other programs through its own options (`git -c`,
//! `find -exec`): see [`rules`].
//!
//! The precise order [`decide`] follows: deny rules → `..` escapes →
//! `delegate` and `plan` (which allows the plan file here, wherever it is) →
//! paths outside the directory (denied) → coordination → allow rules → what
//! the mode allows → otherwise ask (`default`, `acceptEdits`) or deny
//! (`dontAsk`). `plan` never asks: it allows reads and the plan file and
//! denies everything else.
//!
//! # Decisions, and why
//!
//! - **`default`** allows reads inside the directory (the reference never asks
//!   to read the working directory, seeds 002 §4.8.3) and asks for edits and
//!   Bash.
//! - **`acceptEdits`** adds edits inside the directory. The reference asks
//!   for every operation outside the project directory, Read included (seeds
//!   002 §4.8.3); teamhost denies them instead, as every mode does, since no
//!   answer could make them run.
//! - **`bypassPermissions`** never asks. It covers the capability directory and
//!   Bash; a path outside the directory is denied, as in every mode.
//! - **`plan`** is read-only: reads as in `default`, the plan file writable,
//!   every other Write / Edit and all of Bash denied with "exit it through
//!   plan approval". Allow rules do not reopen them.
//! - **`dontAsk`** is `default` with every ask turned into a deny (seeds 001:
//!   "don't prompt, deny if not pre-approved"). Reads inside the directory
//!   count as pre-approved, as in `default`; so `dontAsk` plus an
//!   `allowedTools` list is how to give a teammate a fixed tool set.
//! - **`delegate`** allows coordination only (seeds 001, 002 §4.9:
//!   TeamCreate, TeamDelete, SendMessage, TaskCreate/Get/Update/List), and
//!   no sub-agents (a delegating lead spawns teammates through its seat).
//!   This is the one source of the delegate tool set: the toolbox shows a
//!   tool only when this policy does not deny it.
//!   The reference's Task tool maps a *teammate's* `mode: "delegate"` to
//!   `acceptEdits` at spawn (002 §9.4); that mapping belongs to whoever spawns,
//!   not here.
//! - **Coordination is always allowed** unless a deny rule names its reference
//!   tool (`SendMessage`, `TaskCreate`, …): the reference allows SendMessage
//!   without asking (seeds 004 §11), and a teammate that cannot message or
//!   touch its tasks cannot take part in the team. Calls on the teammate's own
//!   state (its inbox, `whoami`, the roster, asking for plan approval) have no
//!   reference tool, so no rule can name them: they are always allowed. Nor
//!   does answering a shutdown request: a `SendMessage` deny rule must never
//!   keep the lead from stopping a teammate. Coordination never asks the
//!   lead; the interfaces enforce the decision on every WIT call, and the
//!   coordination limits of [`Limits`] bound what passes.
//! - **`allowedTools` are pre-approvals, not a whitelist** (the CLI's
//!   `--allowedTools`): a tool missing from them is still subject to the mode.
//!
//! Rule syntax, paths (`~` is the capability directory) and Bash matching
//! (compound commands) are documented in [`rules`].

pub mod confinement;
pub mod limits;
pub mod mode;
pub mod policy;
pub mod rules;

pub use confinement::{Confinement, DirAccess};
pub use limits::{Limits, TeamAct, TeamActs, MAX_RANDOM_BYTES};
pub use mode::{ParseModeError, PermissionMode};
pub use policy::{
    decide, decide_on_disk, rules_verdict, Decision, Destination, PolicyContext, RuleBehavior,
    RuleValue, RuleVerdict, Suggestion, SuggestionError,
};
pub use rules::{
    OnDisk, PathBase, PathPattern, ResolvePath, ResolvedPath, Rule, RuleError, RuleList,
    RuleProblem, RuleTool, Specifier, ToolRules,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call a teammate wants to make: a tool with the reference's input, or a
/// coordination call through WIT. Every variant is classified by exhaustive
/// `match`es in [`policy`] and [`rules`] with no catch-all arm, so a new
/// variant does not compile until it has been given a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// Read a file.
    Read(ReadInput),
    /// Create or overwrite a file.
    Write(WriteInput),
    /// Replace text in a file.
    Edit(EditInput),
    /// List files matching a glob.
    Glob(GlobInput),
    /// Search file contents.
    Grep(GrepInput),
    /// Run a shell command.
    Bash(BashInput),
    /// A call on a teamhost WIT interface (mailbox, messaging, tasks, team).
    Coordination(CoordinationKind),
}

/// The Read tool's input (the reference's keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadInput {
    /// The file, absolute or relative to the capability directory.
    pub file_path: String,
    /// First line to read (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// How many lines to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// The Write tool's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteInput {
    /// The file, absolute or relative to the capability directory.
    pub file_path: String,
    /// The whole new content.
    pub content: String,
}

/// The Edit tool's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditInput {
    /// The file, absolute or relative to the capability directory.
    pub file_path: String,
    /// The text to replace.
    pub old_string: String,
    /// What replaces it.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_all: Option<bool>,
}

/// The Glob tool's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobInput {
    /// The glob (`src/**/*.rs`).
    pub pattern: String,
    /// The directory to search (default: the capability directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The Grep tool's input. Only `path` matters to the policy; the rest is
/// carried so the call can be shown to the lead as the reference shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GrepInput {
    /// The regular expression.
    pub pattern: String,
    /// The file or directory to search (default: the capability directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only files whose names match this glob (`*.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// `content`, `files_with_matches` or `count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_mode: Option<String>,
    /// Lines of context before each match (`-B`).
    #[serde(rename = "-B", default, skip_serializing_if = "Option::is_none")]
    pub before: Option<u64>,
    /// Lines of context after each match (`-A`).
    #[serde(rename = "-A", default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// Lines of context around each match (`-C`).
    #[serde(rename = "-C", default, skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// Show line numbers (`-n`).
    #[serde(rename = "-n", default, skip_serializing_if = "Option::is_none")]
    pub line_numbers: Option<bool>,
    /// Case-insensitive (`-i`).
    #[serde(rename = "-i", default, skip_serializing_if = "Option::is_none")]
    pub case_insensitive: Option<bool>,
    /// A ripgrep file type (`rust`, `js`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub file_type: Option<String>,
    /// At most this many results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_limit: Option<u64>,
    /// Let `.` match newlines and patterns span lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiline: Option<bool>,
}

/// The Bash tool's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BashInput {
    /// The command line, run by a shell in the capability directory.
    pub command: String,
    /// Milliseconds before the command is killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

impl ToolCall {
    /// `Read { file_path }`.
    pub fn read(file_path: impl Into<String>) -> Self {
        ToolCall::Read(ReadInput {
            file_path: file_path.into(),
            offset: None,
            limit: None,
        })
    }

    /// `Write { file_path, content }`.
    pub fn write(file_path: impl Into<String>, content: impl Into<String>) -> Self {
        ToolCall::Write(WriteInput {
            file_path: file_path.into(),
            content: content.into(),
        })
    }

    /// `Edit { file_path, old_string, new_string }`.
    pub fn edit(
        file_path: impl Into<String>,
        old_string: impl Into<String>,
        new_string: impl Into<String>,
    ) -> Self {
        ToolCall::Edit(EditInput {
            file_path: file_path.into(),
            old_string: old_string.into(),
            new_string: new_string.into(),
            replace_all: None,
        })
    }

    /// `Glob { pattern, path }`.
    pub fn glob(pattern: impl Into<String>, path: Option<&str>) -> Self {
        ToolCall::Glob(GlobInput {
            pattern: pattern.into(),
            path: path.map(str::to_owned),
        })
    }

    /// `Grep { pattern, path }`.
    pub fn grep(pattern: impl Into<String>, path: Option<&str>) -> Self {
        ToolCall::Grep(GrepInput {
            pattern: pattern.into(),
            path: path.map(str::to_owned),
            ..GrepInput::default()
        })
    }

    /// `Bash { command }`.
    pub fn bash(command: impl Into<String>) -> Self {
        ToolCall::Bash(BashInput {
            command: command.into(),
            timeout: None,
        })
    }

    /// Which row of the mode table this call is in.
    pub fn class(&self) -> ToolClass {
        match self {
            ToolCall::Read(_) | ToolCall::Glob(_) | ToolCall::Grep(_) => ToolClass::Read,
            ToolCall::Write(_) | ToolCall::Edit(_) => ToolClass::Edit,
            ToolCall::Bash(_) => ToolClass::Bash,
            ToolCall::Coordination(_) => ToolClass::Coordination,
        }
    }

    /// The tool rules name, when rules can name this call: `Read`, …,
    /// `Bash`, or a coordination call's reference tool (`SendMessage`, …).
    pub fn tool_name(&self) -> Option<ToolName> {
        match self {
            ToolCall::Read(_) => Some(ToolName::Read),
            ToolCall::Write(_) => Some(ToolName::Write),
            ToolCall::Edit(_) => Some(ToolName::Edit),
            ToolCall::Glob(_) => Some(ToolName::Glob),
            ToolCall::Grep(_) => Some(ToolName::Grep),
            ToolCall::Bash(_) => Some(ToolName::Bash),
            ToolCall::Coordination(kind) => kind.reference_tool(),
        }
    }

    /// The name a person sees: the tool (`"Bash"`) or the WIT function
    /// (`"messaging.send"`). This is the `tool_name` of a
    /// `permission_request`.
    pub fn display_name(&self) -> &'static str {
        match self {
            ToolCall::Coordination(kind) => kind.wit_name(),
            ToolCall::Read(_)
            | ToolCall::Write(_)
            | ToolCall::Edit(_)
            | ToolCall::Glob(_)
            | ToolCall::Grep(_)
            | ToolCall::Bash(_) => self.tool_name().map_or("", ToolName::as_str),
        }
    }

    /// The input as the reference's JSON (`{"file_path": …}`), for a
    /// `permission_request`'s `input`. A coordination call has none: `{}`.
    pub fn input_json(&self) -> Value {
        let value = match self {
            ToolCall::Read(input) => serde_json::to_value(input),
            ToolCall::Write(input) => serde_json::to_value(input),
            ToolCall::Edit(input) => serde_json::to_value(input),
            ToolCall::Glob(input) => serde_json::to_value(input),
            ToolCall::Grep(input) => serde_json::to_value(input),
            ToolCall::Bash(input) => serde_json::to_value(input),
            ToolCall::Coordination(_) => Ok(Value::Object(Default::default())),
        };
        // Plain structs of strings, numbers and booleans always serialize.
        value.unwrap_or(Value::Null)
    }
}

/// The rows of the mode table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolClass {
    /// Read, Glob, Grep: read files, change nothing.
    Read,
    /// Write, Edit: change files.
    Edit,
    /// Bash: anything a shell can do.
    Bash,
    /// Team, tasks, messaging, mailbox.
    Coordination,
}

/// A call on one of teamhost's coordination WIT interfaces, one variant per
/// WIT function (`wit/*.wit`), so a new function must be classified here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoordinationKind {
    /// `mailbox.*`: the caller's own inbox, and raw delivery.
    Mailbox(MailboxCall),
    /// `messaging.*`: SendMessage's semantics.
    Messaging(MessagingCall),
    /// `tasks.*`: the shared task list.
    Tasks(TasksCall),
    /// `team.*`: who am I, who is in the team.
    Team(TeamCall),
    /// `subagents.*`: the `Agent` tool.
    Subagents,
    /// The toolbox's `WebFetch`: a page fetched by the host through the
    /// teammate's network (its hosts decided by the network rules and the
    /// `Network` questions, not here).
    Fetch,
}

/// `mailbox` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MailboxCall {
    /// `unread`
    Unread,
    /// `take`
    Take,
    /// `history`
    History,
    /// `deliver`
    Deliver,
}

/// `messaging` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessagingCall {
    /// `send`
    Send,
    /// `broadcast`
    Broadcast,
    /// `request-shutdown`
    RequestShutdown,
    /// `respond-shutdown`
    RespondShutdown,
    /// `request-plan-approval`
    RequestPlanApproval,
    /// `respond-plan-approval`
    RespondPlanApproval,
}

/// `tasks` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TasksCall {
    /// `create`
    Create,
    /// `get`
    Get,
    /// `list`
    List,
    /// `update`
    Update,
    /// `delete`
    Delete,
    /// `add-dependency`
    AddDependency,
    /// `claim`
    Claim,
}

/// `team` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TeamCall {
    /// `whoami`
    Whoami,
    /// `roster`
    Roster,
}

impl CoordinationKind {
    /// `"interface.function"` as in the WIT (`"tasks.add-dependency"`).
    pub fn wit_name(self) -> &'static str {
        match self {
            CoordinationKind::Mailbox(call) => match call {
                MailboxCall::Unread => "mailbox.unread",
                MailboxCall::Take => "mailbox.take",
                MailboxCall::History => "mailbox.history",
                MailboxCall::Deliver => "mailbox.deliver",
            },
            CoordinationKind::Messaging(call) => match call {
                MessagingCall::Send => "messaging.send",
                MessagingCall::Broadcast => "messaging.broadcast",
                MessagingCall::RequestShutdown => "messaging.request-shutdown",
                MessagingCall::RespondShutdown => "messaging.respond-shutdown",
                MessagingCall::RequestPlanApproval => "messaging.request-plan-approval",
                MessagingCall::RespondPlanApproval => "messaging.respond-plan-approval",
            },
            CoordinationKind::Tasks(call) => match call {
                TasksCall::Create => "tasks.create",
                TasksCall::Get => "tasks.get",
                TasksCall::List => "tasks.list",
                TasksCall::Update => "tasks.update",
                TasksCall::Delete => "tasks.delete",
                TasksCall::AddDependency => "tasks.add-dependency",
                TasksCall::Claim => "tasks.claim",
            },
            CoordinationKind::Team(call) => match call {
                TeamCall::Whoami => "team.whoami",
                TeamCall::Roster => "team.roster",
            },
            CoordinationKind::Subagents => "subagents",
            CoordinationKind::Fetch => "toolbox.web-fetch",
        }
    }

    /// The reference tool that does the same thing, which is the name tool
    /// rules use for it: everything that puts a message in another inbox is
    /// `SendMessage`; task changes (status, owner, dependencies, deletion)
    /// are `TaskUpdate`, as in the reference. `None` for calls on the
    /// teammate's own state (its inbox, identity, the roster), for asking
    /// plan approval (the reference's `ExitPlanMode`, which a rule must not
    /// be able to take away from a teammate stuck in plan mode) and for
    /// answering a shutdown request (a `SendMessage` deny rule must never
    /// keep the lead from stopping a teammate).
    pub fn reference_tool(self) -> Option<ToolName> {
        match self {
            CoordinationKind::Mailbox(call) => match call {
                MailboxCall::Unread | MailboxCall::Take | MailboxCall::History => None,
                MailboxCall::Deliver => Some(ToolName::SendMessage),
            },
            CoordinationKind::Messaging(call) => match call {
                MessagingCall::Send
                | MessagingCall::Broadcast
                | MessagingCall::RequestShutdown
                | MessagingCall::RespondPlanApproval => Some(ToolName::SendMessage),
                // Answering the lead's shutdown request must stay possible
                // under any rule, or the lead could not stop the teammate.
                MessagingCall::RespondShutdown | MessagingCall::RequestPlanApproval => None,
            },
            CoordinationKind::Tasks(call) => match call {
                TasksCall::Create => Some(ToolName::TaskCreate),
                TasksCall::Get => Some(ToolName::TaskGet),
                TasksCall::List => Some(ToolName::TaskList),
                TasksCall::Update
                | TasksCall::Delete
                | TasksCall::AddDependency
                | TasksCall::Claim => Some(ToolName::TaskUpdate),
            },
            CoordinationKind::Team(call) => match call {
                TeamCall::Whoami | TeamCall::Roster => None,
            },
            CoordinationKind::Subagents => Some(ToolName::Agent),
            CoordinationKind::Fetch => Some(ToolName::WebFetch),
        }
    }
}

/// The tools a rule can name, spelled as the reference spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    /// `Read`; as a rule it also covers Glob and Grep (every tool that reads).
    Read,
    /// `Write`.
    Write,
    /// `Edit`; as a rule it also covers Write (every tool that edits).
    Edit,
    /// `Glob`.
    Glob,
    /// `Grep`.
    Grep,
    /// `Bash`.
    Bash,
    /// `SendMessage`: messaging, and `mailbox.deliver`.
    SendMessage,
    /// `TaskCreate`.
    TaskCreate,
    /// `TaskGet`.
    TaskGet,
    /// `TaskUpdate`: update, delete, add-dependency, claim.
    TaskUpdate,
    /// `TaskList`.
    TaskList,
    /// `Agent`: starting, messaging, reading and stopping sub-agents.
    Agent,
    /// `WebFetch`: a page fetched through the teammate's network. A rule
    /// with a specifier (the reference's `WebFetch(domain:…)`) is kept and
    /// matches nothing: hosts are the network rules' to decide.
    WebFetch,
}

impl ToolName {
    /// Every tool name.
    pub const ALL: [ToolName; 13] = [
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::Bash,
        ToolName::SendMessage,
        ToolName::TaskCreate,
        ToolName::TaskGet,
        ToolName::TaskUpdate,
        ToolName::TaskList,
        ToolName::Agent,
        ToolName::WebFetch,
    ];

    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Read => "Read",
            ToolName::Write => "Write",
            ToolName::Edit => "Edit",
            ToolName::Glob => "Glob",
            ToolName::Grep => "Grep",
            ToolName::Bash => "Bash",
            ToolName::SendMessage => "SendMessage",
            ToolName::TaskCreate => "TaskCreate",
            ToolName::TaskGet => "TaskGet",
            ToolName::TaskUpdate => "TaskUpdate",
            ToolName::TaskList => "TaskList",
            ToolName::Agent => "Agent",
            ToolName::WebFetch => "WebFetch",
        }
    }

    /// The tool spelled exactly `name`, if teamhost has it.
    pub fn from_reference(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_inputs_serialize_with_the_reference_keys() {
        let call = ToolCall::Grep(GrepInput {
            pattern: "fn main".into(),
            path: Some("src".into()),
            before: Some(2),
            file_type: Some("rust".into()),
            ..GrepInput::default()
        });
        assert_eq!(
            call.input_json().to_string(),
            r#"{"pattern":"fn main","path":"src","-B":2,"type":"rust"}"#
        );
        assert_eq!(
            ToolCall::read("a.rs").input_json().to_string(),
            r#"{"file_path":"a.rs"}"#
        );
        let edit: EditInput = serde_json::from_str(
            r#"{"file_path":"a","old_string":"x","new_string":"y","replace_all":true}"#,
        )
        .unwrap();
        assert_eq!(edit.replace_all, Some(true));
    }

    #[test]
    fn coordination_calls_map_to_the_reference_tools_that_do_the_same() {
        let send = CoordinationKind::Messaging(MessagingCall::Send);
        assert_eq!(send.reference_tool(), Some(ToolName::SendMessage));
        assert_eq!(send.wit_name(), "messaging.send");
        let claim = CoordinationKind::Tasks(TasksCall::Claim);
        assert_eq!(claim.reference_tool(), Some(ToolName::TaskUpdate));
        let whoami = CoordinationKind::Team(TeamCall::Whoami);
        assert_eq!(whoami.reference_tool(), None);
        let plan = CoordinationKind::Messaging(MessagingCall::RequestPlanApproval);
        assert_eq!(plan.reference_tool(), None);
        let stop = CoordinationKind::Messaging(MessagingCall::RespondShutdown);
        assert_eq!(
            stop.reference_tool(),
            None,
            "a shutdown answer is never blockable"
        );
        assert_eq!(
            ToolCall::Coordination(plan).display_name(),
            "messaging.request-plan-approval"
        );
    }

    #[test]
    fn tool_names_round_trip_and_are_case_sensitive() {
        for tool in ToolName::ALL {
            assert_eq!(ToolName::from_reference(tool.as_str()), Some(tool));
        }
        assert_eq!(ToolName::from_reference("bash"), None);
    }
}
