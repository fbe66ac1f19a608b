//! A team manifest (`TEAM.toml`): the team, its component teammates and its
//! seed tasks, as `teamhost run` reads it. Three layers, each on its own:
//! the typed structs below with their documented defaults, the TOML format
//! (serde, unknown keys rejected everywhere), then [`Manifest::validate`],
//! which checks what the format cannot and names the key and the fix.
//!
#![doc = concat!("```toml\n", include_str!("manifest_format.toml"), "```\n")]
//!
//! | key | default | checked by [`Manifest::validate`] |
//! |---|---|---|
//! | `team.name` | required | not empty, a valid team name |
//! | `team.notifications` | `all` | `all`, `state-changes` or `none` (when parsed) |
//! | `team.store` | the files under the home | a `nats://HOST:PORT[/PREFIX]` URL (when the run starts); `--store` wins |
//! | `teammate.name` | required | a new member's name (`store::names::check_new_member_name`: not `team-lead`, `user`, `teamhost`, `system` nor a look-alike, no `@`, no leading `-`, no invisible or bidi character), unique and not like an earlier one |
//! | `teammate.component` | required | the file exists (or `build` makes it) |
//! | `teammate.build` | none | see `manifest/build_spec.rs`: a command, its `workdir` not in a teammate's directory |
//! | `teammate.cwd` | `work/{name}` beside the manifest, made at start | the directory exists (unless left out) |
//! | `teammate.mode` | `default` | one of [`PermissionMode::ALL`](crate::sandbox::PermissionMode::ALL) |
//! | `teammate.allowed_tools`, `disallowed_tools` | `[]` | each rule parses (`Read`, `Bash(git:*)`, `Edit(src/**)`) |
//! | `teammate.isolation` | `none` | `none` or `worktree` |
//! | `teammate.limits.*` | [`crate::sandbox::Limits`] | positive |
//! | `teammate.model`, `teammate.model_policy.*` | no model capability | a non-empty allow list holding the default, positive limits, `budget_usd` ≥ 0 |
//! | `model.mode` | `live` | one of the five modes |
//! | `model.cassettes` | none | must not lie in a teammate's directory (layout check) |
//! | `agent.name`, `agent.description` | required | a word; not empty |
//! | `agent.permission_mode`, `agent.tools`, `agent.isolation`, `agent.component` | the parent's / all / `none` / the parent's | a mode; known tools; `none` or `worktree`; the file exists |
//! | `.claude/agents/*.md` beside the manifest | none | parses; not inside a teammate's directory |
//! | `approvals.*` | see `manifest/approvals_spec.rs` | deciders, rules, `plans` |
//! | `task.subject` | required | not empty |
//! | `task.blocked_by` | `[]` | each in `1..=tasks`, not itself, listed once, no cycles |
//!
//! Where things may lie is checked at start by [`crate::layout`] (`teamhost
//! run` and [`Host::spawn`](crate::embed::Host::spawn)): a teammate's `cwd`
//! must not hold the manifest, any component, the home or the cache.
//!
//! A task may be blocked by a later task; only cycles are refused. Relative
//! paths are resolved against the manifest's directory when it is parsed, so a
//! [`Manifest`] always holds absolute paths.

mod agent_spec;
mod approvals_spec;
mod build_spec;
mod lead_spec;
mod model_spec;
pub mod reachable;

pub use agent_spec::AgentSpec;
pub use approvals_spec::{ApprovalsSpec, PolicySpec, RouteSpec};
pub use build_spec::{BuildSpec, BuildTable};
pub use lead_spec::{CatalogueSpec, LeadTable};
pub use model_spec::{teammate_policy, ModelPolicySpec, ModelSpec};
pub use reachable::Reachable;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::sandbox::{PermissionMode, ToolRules};
use crate::store::names::{check_distinct, check_new_member_name, sanitize_team_name};
use crate::store::NewTask;
use crate::teammate::{SpawnRequest, TeammateSettings};

/// A whole manifest. Built by [`Manifest::load`] or [`Manifest::parse`], which
/// resolve relative paths and validate.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// `[team]`.
    pub team: TeamSpec,
    /// `[[teammate]]` tables, in spawn order.
    #[serde(rename = "teammate", default)]
    pub teammates: Vec<TeammateSpec>,
    /// `[[task]]` tables, created in this order (ids 1, 2, … in a fresh team).
    #[serde(rename = "task", default)]
    pub tasks: Vec<TaskSpec>,
    /// `[hooks]`: the lead's hook commands.
    #[serde(default)]
    pub hooks: HooksSpec,
    /// `[model]`: record/replay mode and the cassette directory.
    #[serde(default)]
    pub model: ModelSpec,
    /// `[[agent]]` tables: sub-agent definitions (with the project's
    /// `.claude/agents`, see `manifest/agent_spec.rs`).
    #[serde(rename = "agent", default)]
    pub agents: Vec<AgentSpec>,
    /// `[lead]`: the team's lead component (see
    /// `manifest/lead_spec.rs`). With it `teamhost run` starts the lead
    /// instead of `[[teammate]]` entries.
    #[serde(default)]
    pub lead: Option<LeadTable>,
    /// `[[catalogue]]`: the components a lead may spawn.
    #[serde(rename = "catalogue", default)]
    pub catalogue: Vec<CatalogueSpec>,
    /// `[approvals]`: who decides permission requests and plans (see
    /// `manifest/approvals_spec.rs`).
    #[serde(default)]
    pub approvals: ApprovalsSpec,
    /// The directory relative paths were resolved against (set by
    /// [`Manifest::resolve_paths`]; empty before).
    #[serde(skip)]
    pub base: PathBuf,
    /// The sub-agent definitions the manifest gives (its `[[agent]]`s, the
    /// project's `.claude/agents`, `[team] fork_subagents`): every
    /// teammate's, and the lead's and those it spawns in a led run. Set by
    /// [`Manifest::parse`]; `None` when there are none.
    #[serde(skip)]
    pub agent_definitions: Option<std::sync::Arc<crate::teammate::Definitions>>,
}

/// `[hooks]`: shell commands run at points of a teammate's life; see
/// [`crate::hooks`]. Every key optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSpec {
    /// Run when a teammate is about to go idle (exit 2 keeps it working).
    #[serde(default)]
    pub teammate_idle: Vec<String>,
    /// Run when a task is being completed (exit 2 refuses the completion).
    #[serde(default)]
    pub task_completed: Vec<String>,
    /// Run when a teammate starts.
    #[serde(default)]
    pub teammate_start: Vec<String>,
    /// Run when a teammate stops.
    #[serde(default)]
    pub teammate_stop: Vec<String>,
    /// Seconds one hook may run before it is killed (default 60).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl HooksSpec {
    /// The hooks this section configures.
    pub fn to_hooks(&self) -> crate::hooks::Hooks {
        let d = crate::hooks::Hooks::default();
        crate::hooks::Hooks {
            teammate_idle: self.teammate_idle.clone(),
            task_completed: self.task_completed.clone(),
            teammate_start: self.teammate_start.clone(),
            teammate_stop: self.teammate_stop.clone(),
            timeout: self
                .timeout_secs
                .map_or(d.timeout, std::time::Duration::from_secs),
        }
    }
}

/// `[team]`: the team to create.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamSpec {
    /// Team name (required).
    pub name: String,
    /// Recorded in the team config. Default: none.
    #[serde(default)]
    pub description: Option<String>,
    /// Where teammates run: `auto`, `in-process`, `process` or `tmux` (the
    /// reference's `teammateMode`). Default: `auto`; `--teammate-mode` wins.
    #[serde(default)]
    pub teammate_mode: Option<crate::backends::TeammateMode>,
    /// Which of the teammates' `idle_notification`s reach the lead's inbox:
    /// `all` (every one, as the reference does), `state-changes` (the first
    /// after start, completed tasks, failures) or `none`; the others go to
    /// the lead's history only. Default `all`. For
    /// [`HostOptions::notifications`](crate::embed::HostOptions::notifications);
    /// see [`crate::runner::notify`].
    #[serde(default)]
    pub notifications: crate::teammate::NotificationLevel,
    /// Where the team lives: `nats://HOST:PORT[/PREFIX]` for a NATS
    /// JetStream server (see [`crate::store::nats`]). Default: the files
    /// under the home; `--store` and `$TEAMHOST_STORE` win. Checked when
    /// the run starts.
    #[serde(default)]
    pub store: Option<String>,
    /// An `Agent` call that names no `subagent_type` forks its caller (a
    /// sub-agent going on from the caller's conversation, with its model
    /// and tools, in the background) instead of starting a fresh
    /// `general-purpose` one, for every teammate and the lead: the
    /// reference's fork path. Default `false`, as the reference's.
    #[serde(default)]
    pub fork_subagents: bool,
}

/// One `[[teammate]]`: a component to spawn in-process.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeammateSpec {
    /// Member name (required, unique in the manifest).
    pub name: String,
    /// The `.wasm` component (required). Absolute once parsed.
    pub component: PathBuf,
    /// Spawn prompt, delivered as the first message of its inbox (required).
    pub prompt: String,
    /// The one directory it can see. Default (empty): `work/{name}` beside
    /// the manifest, which `teamhost run` creates at start (the manifest's
    /// own directory would hold the manifest, which a teammate must never be
    /// able to rewrite: see [`crate::layout`]). With `isolation = "worktree"`
    /// it is the repository the worktree comes from, default the manifest's
    /// directory. Absolute once parsed.
    #[serde(default)]
    pub cwd: PathBuf,
    /// Whether `cwd` was left out, so it is the default `work/{name}`, which
    /// need not exist before `teamhost run` starts. Set when parsed.
    #[serde(skip)]
    pub cwd_is_default: bool,
    /// The sub-agent definitions its `Agent` tool may name. Set when parsed
    /// (the manifest's `[[agent]]` and the project's `.claude/agents`).
    #[serde(skip)]
    pub agent_definitions: Option<std::sync::Arc<crate::teammate::Definitions>>,
    /// Permission mode, one of [`PermissionMode::ALL`](crate::sandbox::PermissionMode::ALL)
    /// (parsed by [`PermissionMode`](crate::sandbox::PermissionMode)'s own
    /// parser when the manifest is checked). Default `default`.
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Tool rules allowed without asking. Default none. Recorded in the config;
    /// enforced by the sandbox.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Tool rules always denied. Default none.
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
    /// `mode` and the two rule lists as [`Manifest::validate`] parsed them,
    /// once: [`settings`](Self::settings) hands these on and never parses
    /// again. `None` until the spec has been validated (or when they did
    /// not parse, which validation reports).
    #[serde(skip)]
    typed: Option<(PermissionMode, ToolRules)>,
    /// Claim open tasks by itself when idle. Default `true`.
    #[serde(default = "yes")]
    pub auto_claim: bool,
    /// Model alias: recorded in the config, and the teammate's default model
    /// (with just this key it may use this one model). Default: none, and no
    /// model capability unless `model_policy` is given.
    #[serde(default)]
    pub model: Option<String>,
    /// `[teammate.model_policy]`: the models it may use and its budgets.
    #[serde(default)]
    pub model_policy: Option<ModelPolicySpec>,
    /// Role recorded in the config. Default: `general-purpose`.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Whether its plan must be approved first. Default `false`.
    #[serde(default)]
    pub plan_mode_required: bool,
    /// `none` (work in `cwd`) or `worktree` (a git worktree of its repository).
    #[serde(default)]
    pub isolation: IsolationSpec,
    /// Overrides of the default limits.
    #[serde(default)]
    pub limits: LimitsSpec,
    /// How the person builds the component: `teamhost run` runs it when the
    /// component is missing or older than its sources. Default: none (a
    /// stale component is only warned about).
    #[serde(default)]
    pub build: Option<BuildSpec>,
    /// `[teammate.network]`: its Bash reaches the network through the
    /// host's proxy, held to these rules (`crate::network::NetworkSettings`
    /// lists the keys). Default: no network at all.
    #[serde(default)]
    pub network: Option<crate::network::NetworkSettings>,
}

/// `teammate.isolation`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationSpec {
    /// Work in `cwd`.
    #[default]
    None,
    /// Work in a git worktree of `cwd`'s repository.
    Worktree,
}

/// `[teammate.limits]`: every key optional; see [`crate::sandbox::Limits`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Largest linear memory of one instance, MiB.
    pub memory_mb: Option<usize>,
    /// Linear memory of the teammate and all its sub-agents together, MiB.
    pub memory_total_mb: Option<usize>,
    /// CPU per turn, seconds.
    pub cpu_per_turn_secs: Option<u64>,
    /// Wall time per turn, seconds.
    pub wall_per_turn_secs: Option<u64>,
    /// Largest message, bytes.
    pub max_message_bytes: Option<usize>,
    /// Largest tool output, bytes.
    pub max_tool_output_bytes: Option<usize>,
    /// How long a tool call waits for the lead, seconds.
    pub ask_timeout_secs: Option<u64>,
    /// Disk budget of the teammate's directory, MiB.
    pub disk_mb: Option<u64>,
    /// Entries a measurement of the directory may walk.
    pub disk_entries: Option<usize>,
    /// Direct messages per turn.
    pub max_messages_per_turn: Option<u32>,
    /// Direct messages in all.
    pub max_messages_total: Option<u32>,
    /// Broadcasts per turn.
    pub max_broadcasts_per_turn: Option<u32>,
    /// Broadcasts in all.
    pub max_broadcasts_total: Option<u32>,
    /// Tasks created per turn.
    pub max_tasks_per_turn: Option<u32>,
    /// Tasks created in all.
    pub max_tasks_total: Option<u32>,
    /// Bytes the teammate and its sub-agents may write into the team's
    /// store over its life, MiB.
    pub team_total_mb: Option<u64>,
    /// `state.save`/`state.clear` calls per turn.
    pub max_state_saves_per_turn: Option<u32>,
    /// `state.save`/`state.clear` calls in all.
    pub max_state_saves_total: Option<u32>,
    /// Sub-agents the teammate and its sub-agents may start in all.
    pub max_subagents_total: Option<u32>,
}

impl LimitsSpec {
    /// The default limits with these overrides applied.
    pub fn to_limits(&self) -> crate::sandbox::Limits {
        use std::time::Duration;
        let d = crate::sandbox::Limits::default();
        crate::sandbox::Limits {
            memory_bytes: self.memory_mb.map_or(d.memory_bytes, |m| m << 20),
            memory_total_bytes: self
                .memory_total_mb
                .map_or(d.memory_total_bytes, |m| m << 20),
            max_team_bytes_total: self
                .team_total_mb
                .map_or(d.max_team_bytes_total, |m| m << 20),
            max_state_saves_per_turn: self
                .max_state_saves_per_turn
                .unwrap_or(d.max_state_saves_per_turn),
            max_state_saves_total: self
                .max_state_saves_total
                .unwrap_or(d.max_state_saves_total),
            max_subagents_total: self.max_subagents_total.unwrap_or(d.max_subagents_total),
            cpu_per_turn: self
                .cpu_per_turn_secs
                .map_or(d.cpu_per_turn, Duration::from_secs),
            wall_per_turn: self
                .wall_per_turn_secs
                .map_or(d.wall_per_turn, Duration::from_secs),
            max_message_bytes: self.max_message_bytes.unwrap_or(d.max_message_bytes),
            max_tool_output_bytes: self
                .max_tool_output_bytes
                .unwrap_or(d.max_tool_output_bytes),
            ask_timeout: self
                .ask_timeout_secs
                .map_or(d.ask_timeout, Duration::from_secs),
            max_pending_requests: d.max_pending_requests,
            disk_bytes: self.disk_mb.map_or(d.disk_bytes, |m| m << 20),
            disk_walk_entries: self.disk_entries.unwrap_or(d.disk_walk_entries),
            max_messages_per_turn: self
                .max_messages_per_turn
                .unwrap_or(d.max_messages_per_turn),
            max_messages_total: self.max_messages_total.unwrap_or(d.max_messages_total),
            max_broadcasts_per_turn: self
                .max_broadcasts_per_turn
                .unwrap_or(d.max_broadcasts_per_turn),
            max_broadcasts_total: self.max_broadcasts_total.unwrap_or(d.max_broadcasts_total),
            max_tasks_per_turn: self.max_tasks_per_turn.unwrap_or(d.max_tasks_per_turn),
            max_tasks_total: self.max_tasks_total.unwrap_or(d.max_tasks_total),
            ..d
        }
    }
}

/// One `[[task]]`: a seed task, created before any teammate starts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Imperative title (required).
    pub subject: String,
    /// Details. Default empty.
    #[serde(default)]
    pub description: String,
    /// Shown while in progress. Default: none.
    #[serde(default)]
    pub active_form: Option<String>,
    /// 1-based positions in the manifest's task list that must complete
    /// first. Default none.
    #[serde(default)]
    pub blocked_by: Vec<usize>,
}

fn default_mode() -> String {
    "default".into()
}

fn yes() -> bool {
    true
}

/// Why a manifest was refused. Every message names the file and the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read manifest {}: {source}", path.display())]
    Read {
        /// The manifest file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Not TOML, a key teamhost does not know, or a value of the wrong type.
    #[error("manifest {}: {message}", path.display())]
    Format {
        /// The manifest file.
        path: PathBuf,
        /// The parser's message (line, column, key) and a hint.
        message: String,
    },
    /// Well-formed, but breaks rules the format cannot express.
    #[error("manifest {} has {} problem(s):\n{}", path.display(), problems.len(),
        problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// The manifest file.
        path: PathBuf,
        /// One line per problem, each naming the key and the fix.
        problems: Vec<String>,
    },
}

impl Manifest {
    /// Reads, parses and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Manifest::parse(&text, path)
    }

    /// Parses `text` as the manifest at `file` (which need not exist: its
    /// directory anchors relative paths), resolves the paths and validates.
    pub fn parse(text: &str, file: &Path) -> Result<Manifest, ManifestError> {
        let mut manifest: Manifest = toml::from_str(text).map_err(|e| ManifestError::Format {
            path: file.to_path_buf(),
            message: format_error(&e),
        })?;
        manifest.resolve_paths(&base_dir(file));
        manifest
            .validate()
            .map_err(|problems| ManifestError::Invalid {
                path: file.to_path_buf(),
                problems,
            })?;
        let cwds: Vec<&Path> = manifest.teammates.iter().map(|t| t.cwd.as_path()).collect();
        let defs =
            agent_spec::load(&base_dir(file), &manifest.agents, &cwds).map_err(|problems| {
                ManifestError::Invalid {
                    path: file.to_path_buf(),
                    problems,
                }
            })?;
        let defs = match (defs, manifest.team.fork_subagents) {
            (defs, false) => defs,
            (defs, true) => Some(std::sync::Arc::new(
                defs.map(|d| (*d).clone())
                    .unwrap_or_default()
                    .with_fork(true),
            )),
        };
        for t in &mut manifest.teammates {
            t.agent_definitions = defs.clone();
        }
        manifest.agent_definitions = defs;
        Ok(manifest)
    }

    /// Joins relative `component` and `cwd` paths to `base`; an empty `cwd`
    /// becomes `{base}/work/{name}` (see [`default_cwd`]), or `base` itself
    /// for a teammate in a worktree (the repository its worktree comes from).
    pub fn resolve_paths(&mut self, base: &Path) {
        self.base = base.to_path_buf();
        self.model.resolve_paths(base);
        lead_spec::resolve_paths(self.lead.as_mut(), &mut self.catalogue, base);
        for a in &mut self.agents {
            if let Some(c) = &mut a.component {
                *c = base.join(&*c);
            }
        }
        for t in &mut self.teammates {
            t.component = base.join(&t.component);
            if let Some(b) = &mut t.build {
                b.resolve_paths(base);
            }
            t.cwd_is_default = t.cwd.as_os_str().is_empty();
            t.cwd = if t.cwd_is_default && t.isolation == IsolationSpec::Worktree {
                // The repository its worktree comes from; it works elsewhere.
                base.to_path_buf()
            } else if t.cwd_is_default {
                default_cwd(base, &t.name)
            } else {
                // `components` drops `.`: `cwd = "."` shows as the directory.
                base.join(&t.cwd).components().collect()
            };
        }
    }

    /// What each `[[approvals.route]]` binds: an `entry` must be a
    /// catalogue entry; a `teammate` that names no `[[teammate]]` but a
    /// catalogue entry is refused, since a lead spawns that entry under
    /// names it picks and the route would bind none of them (`entry =
    /// "…"` is what binds them).
    fn check_route_bindings(&self, problems: &mut Vec<String>) {
        let entries = || {
            self.catalogue
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (i, r) in self.approvals.routes.iter().enumerate() {
            if let Some(entry) = &r.entry {
                if !self.catalogue.iter().any(|c| &c.name == entry) {
                    problems.push(format!(
                        "[[approvals.route]] #{}: entry {entry:?} is not a [[catalogue]] entry; name one of [{}]",
                        i + 1,
                        entries()
                    ));
                }
            } else if !self.teammates.iter().any(|t| t.name == r.teammate)
                && self.catalogue.iter().any(|c| c.name == r.teammate)
            {
                problems.push(format!(
                    "[[approvals.route]] #{}: teammate {:?} is no [[teammate]] but a [[catalogue]] entry, which a lead spawns under names it picks, so this route would bind none of them; write entry = {:?} to bind every member spawned from it",
                    i + 1,
                    r.teammate,
                    r.teammate
                ));
            }
        }
    }

    /// Every directory a teammate of this manifest can write, by real path
    /// (`manifest/reachable.rs`): the `cwd` of each `[[teammate]]` outside a
    /// worktree, the lead's directory, each catalogue entry's `cwd`, and
    /// all of `{base}/work` when a lead may spawn teammates there under
    /// names it picks. The home is added by the caller that knows it.
    pub fn teammate_reachable(&self) -> Reachable {
        let mut r = Reachable::new();
        for t in &self.teammates {
            if t.isolation == IsolationSpec::None {
                r.add(&t.cwd);
            }
        }
        r.add(&default_cwd(&self.base, crate::store::config::LEAD_NAME));
        if let Some(l) = &self.lead {
            if !l.cwd.as_os_str().is_empty() {
                r.add(&l.cwd);
            }
        }
        for c in &self.catalogue {
            if c.cwd.as_os_str().is_empty() {
                r.add(&self.base.join("work"));
            } else {
                r.add(&c.cwd);
            }
        }
        r
    }

    /// Every path a teammate's directory must stay clear of, besides the
    /// home's: the manifest at `file` and every teammate's component.
    pub fn protected_paths(&self, file: &Path) -> Vec<crate::layout::Protected> {
        use crate::layout::{Kind, Protected};
        let mut all = vec![Protected::new(Kind::Manifest, file)];
        all.extend(
            self.teammates
                .iter()
                .map(|t| Protected::new(Kind::Component, &t.component)),
        );
        if let Some(c) = &self.model.cassettes {
            all.push(Protected::new(Kind::Cassettes, c));
        }
        all.extend(
            self.catalogue
                .iter()
                .map(|c| Protected::new(Kind::Component, &c.component))
                .chain(
                    self.lead
                        .iter()
                        .filter(|l| !l.component.as_os_str().is_empty())
                        .map(|l| Protected::new(Kind::Component, &l.component)),
                ),
        );
        all.extend(
            self.agents
                .iter()
                .filter_map(|a| a.component.as_ref())
                .map(|c| Protected::new(Kind::Component, c)),
        );
        all
    }

    /// Every rule of the module docs' table, all checked at once: one line
    /// per problem, naming the key and how to fix it. Each teammate's mode
    /// and tool rules are parsed here, once, and kept for
    /// [`TeammateSpec::settings`].
    pub fn validate(&mut self) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        if self.team.name.trim().is_empty() {
            problems.push(
                "[team] name is empty; give the team a name, like name = \"wordcount\"".into(),
            );
        } else if let Err(e) = sanitize_team_name(&self.team.name) {
            problems.push(format!("[team] name: {e}"));
        }
        if let Some(url) = &self.team.store {
            if crate::store::NatsUrl::parse(url).is_ok_and(|u| u.has_credentials()) {
                problems.push(format!(
                    "[team] store {}: the URL carries credentials, and a manifest never holds secrets; give the URL with credentials to the host (--store or TEAMHOST_STORE), or use --store-creds / --store-nkey (TEAMHOST_STORE_CREDS / TEAMHOST_STORE_NKEY)",
                    crate::store::nats::url::redact(url)
                ));
            }
        }
        if self.teammates.is_empty() && self.lead.is_none() && self.catalogue.is_empty() {
            problems
                .push("no [[teammate]]; add at least one with name, component and prompt".into());
        }
        let mut seen = BTreeSet::new();
        for (i, t) in self.teammates.iter_mut().enumerate() {
            check_teammate(i, t, &mut seen, &mut problems);
        }
        let reachable = self.teammate_reachable();
        for (i, t) in self.teammates.iter().enumerate() {
            if let Some(b) = &t.build {
                let who = format!("teammate {:?} ([[teammate]] #{})", t.name, i + 1);
                b.check(&who, &reachable, &mut problems);
            }
        }
        for (i, t) in self.tasks.iter().enumerate() {
            check_task(i, t, self.tasks.len(), &mut problems);
        }
        lead_spec::check(
            self.lead.as_mut(),
            &mut self.catalogue,
            self.teammates.len(),
            &mut problems,
        );
        problems.extend(cycles(&self.tasks));
        for (i, a) in self.agents.iter().enumerate() {
            a.check(i, &mut problems);
        }
        if let Err(e) = self.model.parsed_mode() {
            problems.push(e);
        }
        self.approvals.check(&mut problems);
        self.check_route_bindings(&mut problems);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

impl TeammateSpec {
    /// How this teammate runs: the mode and tool rules
    /// [`Manifest::validate`] parsed (a manifest from [`Manifest::load`] or
    /// [`Manifest::parse`] has been validated).
    ///
    /// # Panics
    ///
    /// When the spec was not validated, or its mode or rules did not parse
    /// (validation refused the manifest then): a spec is never run on a
    /// mode or rules guessed here.
    pub fn settings(&self) -> TeammateSettings {
        let (mode, rules) = self.typed.clone().unwrap_or_else(|| {
            panic!(
                "teammate {:?}: settings() of a spec Manifest::validate did not accept",
                self.name
            )
        });
        TeammateSettings {
            agent_type: self.agent_type.clone(),
            model: self.model.clone(),
            mode: Some(mode),
            plan_mode_required: self.plan_mode_required,
            rules,
            auto_claim: self.auto_claim,
            limits: self.limits.to_limits(),
            notifications: None,
            model_policy: teammate_policy(self.model.as_deref(), self.model_policy.as_ref())
                .unwrap_or_default(),
            agents: self.agent_definitions.clone(),
            network: self.network.clone(),
        }
    }

    /// The spawn request for this teammate ([`settings`](Self::settings)
    /// with its name, component, prompt, directory and isolation).
    pub fn spawn_request(&self) -> SpawnRequest {
        SpawnRequest {
            isolation: match self.isolation {
                IsolationSpec::None => crate::teammate::Isolation::None,
                IsolationSpec::Worktree => crate::teammate::Isolation::Worktree,
            },
            settings: self.settings(),
            ..SpawnRequest::new(&self.name, &self.component, &self.prompt, &self.cwd)
        }
    }
}

impl TaskSpec {
    /// The task to create, without dependencies: they may point at later
    /// tasks, so the caller adds them once every task exists.
    pub fn new_task(&self) -> NewTask {
        NewTask {
            subject: self.subject.clone(),
            description: self.description.clone(),
            active_form: self.active_form.clone(),
            blocked_by: Vec::new(),
            metadata: None,
        }
    }
}

/// The directory a teammate called `name` works in when its `cwd` is left
/// out: `{base}/work/{name}`, `base` being the manifest's directory.
pub fn default_cwd(base: &Path, name: &str) -> PathBuf {
    base.join("work").join(name)
}

/// The directory relative paths in `file` are anchored to, made absolute.
fn base_dir(file: &Path) -> PathBuf {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::path::absolute(&dir).unwrap_or(dir)
}

fn format_error(e: &toml::de::Error) -> String {
    let setting = e
        .message()
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
        .and_then(crate::store::nats::security::setting_named);
    let store_hint;
    let hint = if let Some(s) = setting {
        store_hint = format!(
            "\nthe store's TLS files and credentials are never read from a manifest (a teammate may be able to write its directory): give the host {} FILE, or set {} in its environment (likewise --store-ca, --store-cert, --store-key, --store-creds, --store-nkey)",
            s.flag, s.env
        );
        store_hint.as_str()
    } else if e.message().starts_with("unknown field") {
        "\nremove or rename that key: teamhost refuses keys it does not know, so a typo is never ignored (the keys are listed in `teamhost run --help`)"
    } else if e.message().starts_with("missing field") {
        "\nadd that key (see `teamhost run --help` for the format)"
    } else {
        ""
    };
    format!("{}{hint}", e.to_string().trim_end())
}

fn check_teammate(
    i: usize,
    t: &mut TeammateSpec,
    seen: &mut BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    let who = format!("teammate {:?} ([[teammate]] #{})", t.name, i + 1);
    if let Err(e) = teammate_policy(t.model.as_deref(), t.model_policy.as_ref()) {
        problems.push(format!("{who}: {e}"));
    }
    if let Err(e) = check_new_member_name(&t.name) {
        problems.push(format!("{who}: name: {e}"));
    } else if let Err(e) = check_distinct(&t.name, seen.iter().map(String::as_str)) {
        problems.push(format!("{who}: name: {e} (an earlier [[teammate]])"));
    } else if !seen.insert(t.name.clone()) {
        problems.push(format!(
            "{who}: name is used by an earlier teammate; names must be unique (try {:?})",
            format!("{}-2", t.name)
        ));
    }
    if t.build.is_none() && !t.component.is_file() {
        problems.push(format!(
            "{who}: component {} {}; fix the path (relative paths start at the manifest's directory) or build the teammate first: `cargo build --release --target wasm32-wasip2` in its Rust crate, `scripts/build-polyglot` in a teamhost clone for the Python and JS examples (docs/guides/teammate-template.md)",
            t.component.display(),
            if t.component.exists() { "is not a file" } else { "does not exist" },
        ));
    }
    let rules = ToolRules::new(t.allowed_tools.iter(), t.disallowed_tools.iter())
        .map_err(|e| problems.push(format!("{who}: {e}")));
    if let Some(Err(e)) = t
        .network
        .as_ref()
        .map(crate::network::NetworkSettings::check)
    {
        problems.push(format!("{who}: [teammate.network]: {e}"));
    }
    let l = &t.limits;
    for (key, zero) in [
        ("memory_mb", l.memory_mb == Some(0)),
        ("memory_total_mb", l.memory_total_mb == Some(0)),
        ("team_total_mb", l.team_total_mb == Some(0)),
        (
            "max_state_saves_per_turn",
            l.max_state_saves_per_turn == Some(0),
        ),
        ("max_state_saves_total", l.max_state_saves_total == Some(0)),
        ("max_subagents_total", l.max_subagents_total == Some(0)),
        ("cpu_per_turn_secs", l.cpu_per_turn_secs == Some(0)),
        ("wall_per_turn_secs", l.wall_per_turn_secs == Some(0)),
        ("max_message_bytes", l.max_message_bytes == Some(0)),
        ("max_tool_output_bytes", l.max_tool_output_bytes == Some(0)),
        ("disk_mb", l.disk_mb == Some(0)),
        ("disk_entries", l.disk_entries == Some(0)),
        ("max_messages_per_turn", l.max_messages_per_turn == Some(0)),
        ("max_messages_total", l.max_messages_total == Some(0)),
        (
            "max_broadcasts_per_turn",
            l.max_broadcasts_per_turn == Some(0),
        ),
        ("max_broadcasts_total", l.max_broadcasts_total == Some(0)),
        ("max_tasks_per_turn", l.max_tasks_per_turn == Some(0)),
        ("max_tasks_total", l.max_tasks_total == Some(0)),
    ] {
        if zero {
            problems.push(format!(
                "{who}: limits.{key} is 0; leave it out for the default or give a positive value"
            ));
        }
    }
    if !t.cwd_is_default && !t.cwd.is_dir() {
        problems.push(format!(
            "{who}: cwd {} is not a directory; create it or fix the path (relative to the manifest's directory; leave cwd out for `work/{{name}}` beside the manifest, made at start)",
            t.cwd.display()
        ));
    }
    let mode = t.mode.parse::<PermissionMode>().map_err(|_| {
        let modes: Vec<&str> = PermissionMode::ALL.iter().map(|m| m.as_str()).collect();
        problems.push(format!(
            "{who}: mode {:?} is not a permission mode; use one of {}",
            t.mode,
            modes.join(", ")
        ));
    });
    t.typed = mode.ok().zip(rules.ok());
    if t.prompt.trim().is_empty() {
        problems.push(format!(
            "{who}: prompt is empty; say what the teammate is for"
        ));
    }
}

fn check_task(i: usize, t: &TaskSpec, count: usize, problems: &mut Vec<String>) {
    let n = i + 1;
    let what = format!("task {n} ({:?})", t.subject);
    if t.subject.trim().is_empty() {
        problems.push(format!(
            "task {n}: subject is empty; give it an imperative title like \"Count chapter one\""
        ));
    }
    let mut listed = BTreeSet::new();
    for &b in &t.blocked_by {
        if b == n {
            problems.push(format!(
                "{what}: blocked_by lists {n}, the task itself; remove it"
            ));
        } else if b == 0 || b > count {
            problems.push(format!(
                "{what}: blocked_by = {b} is out of range; use positions 1 to {count} in the [[task]] list"
            ));
        } else if !listed.insert(b) {
            problems.push(format!(
                "{what}: blocked_by lists {b} twice; list each task once"
            ));
        }
    }
}

/// Dependency cycles among `tasks`, one problem per cycle found (self and
/// out-of-range references are reported by `check_task` and skipped here).
fn cycles(tasks: &[TaskSpec]) -> Vec<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        i: usize,
        tasks: &[TaskSpec],
        marks: &mut [Mark],
        path: &mut Vec<usize>,
        out: &mut Vec<String>,
    ) {
        marks[i] = Mark::OnPath;
        path.push(i);
        for &b in &tasks[i].blocked_by {
            if b == 0 || b > tasks.len() || b == i + 1 {
                continue;
            }
            let j = b - 1;
            match marks[j] {
                Mark::New => visit(j, tasks, marks, path, out),
                Mark::OnPath => {
                    let start = path.iter().position(|&k| k == j).unwrap_or(0);
                    let ring: Vec<String> = path[start..]
                        .iter()
                        .chain(std::iter::once(&j))
                        .map(|k| (k + 1).to_string())
                        .collect();
                    out.push(format!(
                        "tasks {} form a dependency cycle (each is blocked_by the next), so none could ever start; remove one of those blocked_by entries",
                        ring.join(" → ")
                    ));
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks[i] = Mark::Done;
    }
    let mut marks = vec![Mark::New; tasks.len()];
    let mut out = Vec::new();
    for i in 0..tasks.len() {
        if marks[i] == Mark::New {
            visit(i, tasks, &mut marks, &mut Vec::new(), &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// The format `teamhost run --help` and these docs show is a manifest
    /// that parses, with every section filled in.
    #[test]
    fn the_documented_format_parses_with_every_section() {
        let m: super::Manifest = toml::from_str(include_str!("manifest_format.toml")).unwrap();
        assert_eq!(m.team.name, "wordcount");
        assert_eq!(m.teammates.len(), 1);
        assert_eq!(m.tasks.len(), 1);
        assert!(!m.hooks.to_hooks().teammate_idle.is_empty());
        // The key a spent team budget's notice tells the lead to raise.
        assert_eq!(m.model.team_budget(), Ok(Some(5_000_000)));
    }

    use super::*;

    /// A directory with a fake component and a `data/` directory, and the
    /// path of a manifest inside it.
    fn fixture() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("worker.wasm"), b"\0asm").unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let file = dir.path().join("team.toml");
        (dir, file)
    }

    const GOOD: &str = r#"
[team]
name = "wordcount"
description = "counts words"

[[teammate]]
name = "counter"
component = "worker.wasm"
prompt = "You count words."
cwd = "data"
mode = "acceptEdits"
allowed_tools = ["Read"]

[[teammate]]
name = "second"
component = "worker.wasm"
prompt = "You count words too."

[[task]]
subject = "Count one"
description = "- one.txt"

[[task]]
subject = "Count all"
active_form = "Counting all"
blocked_by = [1, 3]

[[task]]
subject = "Count three"
"#;

    fn problems(text: &str) -> Vec<String> {
        let (_dir, file) = fixture();
        match Manifest::parse(text, &file) {
            Err(ManifestError::Invalid { problems, .. }) => problems,
            other => panic!("expected validation problems, got {other:?}"),
        }
    }

    fn one_problem(text: &str) -> String {
        let p = problems(text);
        assert_eq!(p.len(), 1, "{p:#?}");
        p.into_iter().next().unwrap()
    }

    fn with_teammate(extra: &str) -> String {
        format!(
            "[team]\nname = \"t\"\n[[teammate]]\nname = \"a\"\ncomponent = \"worker.wasm\"\nprompt = \"p\"\n{extra}\n"
        )
    }

    fn with_tasks(tasks: &[&str]) -> String {
        let mut text = with_teammate("");
        for (i, blocked_by) in tasks.iter().enumerate() {
            text += &format!(
                "[[task]]\nsubject = \"T{}\"\nblocked_by = {blocked_by}\n",
                i + 1
            );
        }
        text
    }

    #[test]
    fn parses_a_full_manifest_with_defaults_and_absolute_paths() {
        let (dir, file) = fixture();
        let m = Manifest::parse(GOOD, &file).unwrap();
        assert_eq!(m.team.name, "wordcount");
        assert_eq!(m.team.description.as_deref(), Some("counts words"));
        let [a, b] = &m.teammates[..] else {
            panic!("{m:?}")
        };
        assert_eq!(a.component, dir.path().join("worker.wasm"));
        assert_eq!(a.cwd, dir.path().join("data"));
        assert_eq!(a.mode, "acceptEdits");
        assert_eq!(a.allowed_tools, ["Read"]);
        // Defaults: `work/{name}` beside the manifest, not made by parsing.
        assert_eq!(b.cwd, dir.path().join("work").join("second"));
        assert!(b.cwd_is_default && !a.cwd_is_default && !b.cwd.exists());
        assert_eq!(b.mode, "default");
        assert!(b.auto_claim && !b.plan_mode_required);
        assert!(b.allowed_tools.is_empty() && b.disallowed_tools.is_empty());
        assert_eq!((b.model.as_ref(), b.agent_type.as_ref()), (None, None));
        assert_eq!(m.tasks.len(), 3);
        assert_eq!(m.tasks[1].blocked_by, [1, 3], "a later blocker is fine");
        assert_eq!(m.tasks[2].description, "");
        assert_eq!(m.tasks[1].active_form.as_deref(), Some("Counting all"));
    }

    #[test]
    fn spawn_request_carries_every_teammate_setting() {
        let (_dir, file) = fixture();
        let m = Manifest::parse(GOOD, &file).unwrap();
        let r = m.teammates[0].spawn_request();
        assert_eq!(r.name, "counter");
        assert_eq!(r.component, m.teammates[0].component);
        assert_eq!(r.cwd, m.teammates[0].cwd);
        assert_eq!(r.settings.mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(r.settings.rules.allowed_texts(), ["Read"]);
        assert!(r.settings.auto_claim);
        let t = m.tasks[1].new_task();
        assert_eq!(t.subject, "Count all");
        assert!(t.blocked_by.is_empty(), "dependencies are added afterwards");
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_it() {
        let (_dir, file) = fixture();
        for (text, key) in [
            (
                GOOD.replace("description = \"counts", "colour = \"counts"),
                "colour",
            ),
            (
                GOOD.replace("cwd = \"data\"", "workdir = \"data\""),
                "workdir",
            ),
            (GOOD.replace("active_form", "activeForm"), "activeForm"),
            (format!("{GOOD}\n[extra]\nx = 1\n"), "extra"),
        ] {
            let err = Manifest::parse(&text, &file).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, ManifestError::Format { .. }), "{msg}");
            assert!(msg.contains(&format!("unknown field `{key}`")), "{msg}");
            assert!(msg.contains("remove or rename that key"), "{msg}");
        }
    }

    #[test]
    fn store_settings_in_a_manifest_are_refused_with_the_flag_to_use() {
        let (_dir, file) = fixture();
        for (key, flag, env) in [
            ("store_ca", "--store-ca", "TEAMHOST_STORE_CA"),
            ("tls-cert", "--store-cert", "TEAMHOST_STORE_CERT"),
            ("store_key", "--store-key", "TEAMHOST_STORE_KEY"),
            ("credentials", "--store-creds", "TEAMHOST_STORE_CREDS"),
            ("nkey_seed", "--store-nkey", "TEAMHOST_STORE_NKEY"),
        ] {
            let text = GOOD.replace(
                "description = \"counts",
                &format!("{key} = \"/etc/x\"\ndescription = \"counts"),
            );
            let msg = Manifest::parse(&text, &file).unwrap_err().to_string();
            assert!(msg.contains(&format!("unknown field `{key}`")), "{msg}");
            assert!(msg.contains("never read from a manifest"), "{msg}");
            assert!(msg.contains(flag) && msg.contains(env), "{key}: {msg}");
        }
        let text = GOOD.replace(
            "description = \"counts",
            "store = \"nats://alice:s3cret@h:4222/p\"\ndescription = \"counts",
        );
        let msg = Manifest::parse(&text, &file).unwrap_err().to_string();
        assert!(msg.contains("carries credentials"), "{msg}");
        assert!(!msg.contains("s3cret"), "{msg}");
        let plain = GOOD.replace(
            "description = \"counts",
            "store = \"nats://h:4222/p\"\ndescription = \"counts",
        );
        assert!(Manifest::parse(&plain, &file).is_ok());
    }

    #[test]
    fn a_missing_required_key_is_an_error_naming_it() {
        let (_dir, file) = fixture();
        let text = GOOD.replace("prompt = \"You count words.\"", "");
        let msg = Manifest::parse(&text, &file).unwrap_err().to_string();
        assert!(msg.contains("missing field `prompt`"), "{msg}");
    }

    #[test]
    fn a_wrong_type_is_an_error() {
        let (_dir, file) = fixture();
        let text = GOOD.replace("blocked_by = [1, 3]", "blocked_by = [\"1\"]");
        let err = Manifest::parse(&text, &file).unwrap_err();
        assert!(matches!(err, ManifestError::Format { .. }), "{err}");
    }

    #[test]
    fn an_empty_team_name_is_refused() {
        let p = one_problem(&with_teammate("").replace("name = \"t\"", "name = \" \""));
        assert!(p.starts_with("[team] name is empty"), "{p}");
    }

    #[test]
    fn a_path_like_team_name_is_refused() {
        let p = one_problem(&with_teammate("").replace("name = \"t\"", "name = \"../x\""));
        assert!(p.starts_with("[team] name:") && p.contains(".."), "{p}");
    }

    #[test]
    fn a_manifest_without_teammates_is_refused() {
        let p = one_problem("[team]\nname = \"t\"\n");
        assert!(p.contains("add at least one"), "{p}");
    }

    #[test]
    fn an_unknown_mode_names_the_teammate_and_the_modes() {
        let p = one_problem(&with_teammate("mode = \"yolo\""));
        assert!(p.starts_with("teammate \"a\""), "{p}");
        assert!(
            p.contains("\"yolo\"") && p.contains("bypassPermissions"),
            "{p}"
        );
    }

    #[test]
    fn a_missing_component_names_the_teammate_and_the_path() {
        let text = with_teammate("").replace("worker.wasm", "nope.wasm");
        let p = one_problem(&text);
        assert!(p.starts_with("teammate \"a\""), "{p}");
        assert!(p.contains("nope.wasm does not exist"), "{p}");
        assert!(
            p.contains("--target wasm32-wasip2` in its Rust crate"),
            "{p}"
        );
        assert!(!p.contains("inside guests/"), "{p}");
    }

    #[test]
    fn a_missing_cwd_is_refused() {
        let p = one_problem(&with_teammate("cwd = \"elsewhere\""));
        assert!(p.contains("elsewhere is not a directory"), "{p}");
    }

    #[test]
    fn duplicate_teammate_names_are_refused() {
        let text = format!(
            "{}[[teammate]]\nname = \"a\"\ncomponent = \"worker.wasm\"\nprompt = \"p\"\n",
            with_teammate("")
        );
        let p = one_problem(&text);
        assert!(p.contains("[[teammate]] #2") && p.contains("unique"), "{p}");
    }

    #[test]
    fn reserved_and_bad_teammate_names_are_refused() {
        for (name, says) in [
            ("team-lead", "reserved for the lead"),
            ("teamhost", "reserved"),
            ("a@b", "'@'"),
            ("", "must not be empty"),
            (".hidden", "'.'"),
            ("user", "reserved for the person"),
            ("team\u{2010}lead", "reads as \"team-lead\""),
            ("team-lead ", "ends with whitespace"),
            ("team-lead\u{200b}", "invisible"),
            ("\u{202e}x", "bidi control"),
            ("-rf", "option"),
        ] {
            // JSON's escapes are TOML's (Rust's `{:?}` writes `\u{200b}`).
            let quoted = serde_json::to_string(name).unwrap();
            let text = with_teammate("").replace("name = \"a\"", &format!("name = {quoted}"));
            let p = one_problem(&text);
            assert!(p.contains(says), "{name}: {p}");
        }
    }

    #[test]
    fn a_teammate_named_like_an_earlier_one_is_refused_naming_it() {
        let text = format!(
            "{}[[teammate]]\nname = \"A\"\ncomponent = \"worker.wasm\"\nprompt = \"p\"\n",
            with_teammate("")
        );
        let p = one_problem(&text);
        assert!(
            p.contains("[[teammate]] #2") && p.contains("looks like \"a\""),
            "{p}"
        );
    }

    #[test]
    fn an_empty_prompt_is_refused() {
        let p = one_problem(&with_teammate("").replace("prompt = \"p\"", "prompt = \"\""));
        assert!(p.contains("prompt is empty"), "{p}");
    }

    #[test]
    fn an_empty_task_subject_is_refused() {
        let text = format!("{}[[task]]\nsubject = \"\"\n", with_teammate(""));
        let p = one_problem(&text);
        assert!(p.starts_with("task 1: subject is empty"), "{p}");
    }

    #[test]
    fn a_task_blocked_by_itself_is_refused() {
        let p = one_problem(&with_tasks(&["[]", "[2]"]));
        assert!(
            p.contains("task 2 (\"T2\")") && p.contains("the task itself"),
            "{p}"
        );
    }

    #[test]
    fn blocked_by_out_of_range_is_refused() {
        let p = problems(&with_tasks(&["[0]", "[3]"]));
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(p[0].contains("blocked_by = 0 is out of range"), "{p:#?}");
        assert!(
            p[1].contains("blocked_by = 3 is out of range; use positions 1 to 2"),
            "{p:#?}"
        );
    }

    #[test]
    fn a_duplicate_blocker_is_refused() {
        let p = one_problem(&with_tasks(&["[]", "[1, 1]"]));
        assert!(p.contains("lists 1 twice"), "{p}");
    }

    #[test]
    fn a_later_blocker_is_fine_but_a_cycle_is_not() {
        let (_dir, file) = fixture();
        Manifest::parse(&with_tasks(&["[2]", "[]"]), &file).unwrap();
        let p = one_problem(&with_tasks(&["[3]", "[1]", "[2]"]));
        assert!(
            p.contains("tasks 1 → 3 → 2 → 1 form a dependency cycle"),
            "{p}"
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text =
            with_teammate("mode = \"nope\"\ncwd = \"missing\"").replace("worker.wasm", "gone.wasm");
        assert_eq!(problems(&text).len(), 3);
    }

    #[test]
    fn load_names_a_missing_file() {
        let err = Manifest::load(Path::new("/no/such/team.toml")).unwrap_err();
        assert!(err.to_string().contains("/no/such/team.toml"), "{err}");
    }

    #[test]
    fn limits_and_isolation_reach_the_spawn_request() {
        let (_dir, file) = fixture();
        let text = GOOD.replace(
            "allowed_tools = [\"Read\"]\n",
            "allowed_tools = [\"Read\"]\nisolation = \"worktree\"\n[teammate.limits]\nmemory_mb = 16\nask_timeout_secs = 2\n",
        );
        let m = Manifest::parse(&text, &file).unwrap();
        let r = m.teammates[0].spawn_request();
        assert_eq!(r.isolation, crate::teammate::Isolation::Worktree);
        assert_eq!(r.settings.limits.memory_bytes, 16 << 20);
        assert_eq!(
            r.settings.limits.ask_timeout,
            std::time::Duration::from_secs(2)
        );
        assert_eq!(
            r.settings.limits.cpu_per_turn,
            crate::sandbox::Limits::default().cpu_per_turn
        );
        let r2 = m.teammates[1].spawn_request();
        assert_eq!(r2.isolation, crate::teammate::Isolation::None);
    }

    #[test]
    fn a_worktree_teammate_without_cwd_branches_from_the_manifests_directory() {
        let (dir, file) = fixture();
        let m = Manifest::parse(&with_teammate("isolation = \"worktree\""), &file).unwrap();
        let t = &m.teammates[0];
        assert!(t.cwd_is_default);
        assert_eq!(t.cwd, dir.path(), "the repository its worktree comes from");
    }

    #[test]
    fn protected_paths_are_the_manifest_and_every_component() {
        let (dir, file) = fixture();
        let m = Manifest::parse(GOOD, &file).unwrap();
        let kinds: Vec<_> = m
            .protected_paths(&file)
            .into_iter()
            .map(|p| (p.kind, p.path))
            .collect();
        let component = dir.path().join("worker.wasm");
        use crate::layout::Kind;
        assert_eq!(
            kinds,
            [
                (Kind::Manifest, file.clone()),
                (Kind::Component, component.clone()),
                (Kind::Component, component),
            ]
        );
    }

    #[test]
    fn coordination_limits_reach_the_spawn_request_and_zero_is_refused() {
        let (_dir, file) = fixture();
        let text = GOOD.replace(
            "allowed_tools = [\"Read\"]\n",
            "allowed_tools = [\"Read\"]\n[teammate.limits]\nmax_messages_per_turn = 7\nmax_tasks_total = 9\n",
        );
        let limits = Manifest::parse(&text, &file).unwrap().teammates[0]
            .spawn_request()
            .settings
            .limits;
        assert_eq!(limits.max_messages_per_turn, 7);
        assert_eq!(limits.max_tasks_total, 9);
        let d = crate::sandbox::Limits::default();
        assert_eq!(limits.max_broadcasts_per_turn, d.max_broadcasts_per_turn);
        let zero = GOOD.replace(
            "allowed_tools = [\"Read\"]\n",
            "allowed_tools = [\"Read\"]\n[teammate.limits]\nmax_broadcasts_total = 0\n",
        );
        let err = Manifest::parse(&zero, &file).unwrap_err().to_string();
        assert!(err.contains("limits.max_broadcasts_total is 0"), "{err}");
    }

    #[test]
    fn the_tree_budgets_reach_the_spawn_request_and_zero_is_refused() {
        let (_dir, file) = fixture();
        let text = GOOD.replace(
            "allowed_tools = [\"Read\"]\n",
            "allowed_tools = [\"Read\"]\n[teammate.limits]\nmemory_total_mb = 96\nteam_total_mb = 3\nmax_state_saves_per_turn = 4\nmax_state_saves_total = 40\nmax_subagents_total = 5\n",
        );
        let limits = Manifest::parse(&text, &file).unwrap().teammates[0]
            .spawn_request()
            .settings
            .limits;
        assert_eq!(limits.memory_total_bytes, 96 << 20);
        assert_eq!(limits.max_team_bytes_total, 3 << 20);
        assert_eq!(
            (
                limits.max_state_saves_per_turn,
                limits.max_state_saves_total
            ),
            (4, 40)
        );
        assert_eq!(limits.max_subagents_total, 5);
        let zero = GOOD.replace(
            "allowed_tools = [\"Read\"]\n",
            "allowed_tools = [\"Read\"]\n[teammate.limits]\nmax_subagents_total = 0\n",
        );
        let err = Manifest::parse(&zero, &file).unwrap_err().to_string();
        assert!(err.contains("limits.max_subagents_total is 0"), "{err}");
    }

    #[test]
    fn a_bad_tool_rule_or_a_zero_limit_is_refused_by_name() {
        let (_dir, file) = fixture();
        let text = GOOD.replace(
            "allowed_tools = [\"Read\"]\n",
            "allowed_tools = [\"Bash(git:*\"]\n[teammate.limits]\nmemory_mb = 0\n",
        );
        let problems = Manifest::parse(&text, &file).unwrap_err().to_string();
        assert!(problems.contains("Bash(git:*"), "{problems}");
        assert!(problems.contains("limits.memory_mb is 0"), "{problems}");
        let unknown = GOOD.replace(
            "allowed_tools = [\"Read\"]\n",
            "allowed_tools = [\"Read\"]\n[teammate.limits]\nmemory_gb = 1\n",
        );
        let err = Manifest::parse(&unknown, &file).unwrap_err().to_string();
        assert!(err.contains("memory_gb"), "{err}");
    }

    #[test]
    fn notifications_default_to_all_and_are_read_in_their_three_spellings() {
        use crate::teammate::NotificationLevel;
        let (_dir, file) = fixture();
        let m = Manifest::parse(GOOD, &file).unwrap();
        assert_eq!(m.team.notifications, NotificationLevel::All);
        for (name, level) in [
            ("all", NotificationLevel::All),
            ("state-changes", NotificationLevel::StateChanges),
            ("none", NotificationLevel::None),
        ] {
            let text = GOOD.replace(
                "description = \"counts words\"",
                &format!("description = \"counts words\"\nnotifications = \"{name}\""),
            );
            let m = Manifest::parse(&text, &file).unwrap();
            assert_eq!(m.team.notifications, level, "{name}");
        }
    }

    #[test]
    fn a_bad_notification_level_is_an_error_naming_the_three() {
        let (_dir, file) = fixture();
        let text = GOOD.replace(
            "description = \"counts words\"",
            "description = \"counts words\"\nnotifications = \"quiet\"",
        );
        let err = Manifest::parse(&text, &file).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ManifestError::Format { .. }), "{msg}");
        assert!(msg.contains("notifications"), "{msg}");
        assert!(msg.contains("\"quiet\""), "{msg}");
        assert!(msg.contains("all, state-changes, none"), "{msg}");
    }

    #[test]
    fn hooks_are_read_with_their_timeout_and_unknown_hook_keys_refused() {
        let (_dir, file) = fixture();
        let text = format!("{GOOD}\n[hooks]\nteammate_idle = [\"./check.sh\"]\ntimeout_secs = 5\n");
        let m = Manifest::parse(&text, &file).unwrap();
        let h = m.hooks.to_hooks();
        assert_eq!(h.teammate_idle, ["./check.sh"]);
        assert_eq!(h.timeout, std::time::Duration::from_secs(5));
        assert!(h.task_completed.is_empty());
        let bad = format!("{GOOD}\n[hooks]\non_idle = [\"x\"]\n");
        let err = Manifest::parse(&bad, &file).unwrap_err().to_string();
        assert!(err.contains("on_idle"), "{err}");
    }
}
