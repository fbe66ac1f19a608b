//! [`TeammateSettings`]: how a teammate is to run — role, model, permission
//! mode and rules, plan approval, auto-claim, limits, notifications, model
//! policy — as one type, whatever it comes from and wherever it goes.
//!
//! The mode and the tool rules are typed ([`PermissionMode`],
//! [`ToolRules`]): each source parses them once, where it is read, and the
//! error names the key or flag and what is accepted.
//!
//! Every source and destination converts here, once:
//!
//! | from / to | function |
//! |---|---|
//! | a manifest's `[[teammate]]` | `TeammateSpec::settings` (in [`crate::manifest`]) |
//! | an embedder | [`SpawnRequest::settings`](super::SpawnRequest) |
//! | the team's member entry (reference schema) | [`TeammateSettings::from_member`], [`TeammateSettings::new_member`] |
//! | a spawn record (the host's machine-local copy) | serde: the mode as its spelling, the rules as `allowedTools`/`disallowedTools`, refused on read when they do not parse |
//! | a child `teamhost teammate`'s command line | [`TeammateSettings::child_args`]; the CLI parses them back (`cli/settings_args.rs`), a round trip its tests check |

use crate::model::ModelPolicy;
use crate::sandbox::{Limits, ParseModeError, PermissionMode, RuleError, ToolRules};
use crate::store::{Member, NewMember};

use super::NotificationLevel;

/// How a teammate runs. [`Default`]: agent type `general-purpose` (left
/// out of the member entry), no model, mode `default`, no plan approval, no
/// tool rules, auto-claim on, [`Limits::default`], the host's notification
/// level, no model capability. Serialised (camelCase) in the host's
/// machine-local spawn records, from which `teamhost run --resume` brings a
/// teammate back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TeammateSettings {
    /// Role recorded in the config.
    pub agent_type: Option<String>,
    /// Model id recorded in the config.
    pub model: Option<String>,
    /// Permission mode; `None`: not recorded in the member entry, and the
    /// teammate runs in [`PermissionMode::Default`] ([`Self::permission_mode`]).
    /// `plan` preopens the directory read-only.
    pub mode: Option<PermissionMode>,
    /// Whether the teammate must get its plan approved first.
    pub plan_mode_required: bool,
    /// Tool rules: allowed without asking, and always denied (recorded as
    /// the member's `allowedTools` and `disallowedTools`; enforced by the
    /// sandbox). Serialised as those two lists.
    #[serde(flatten)]
    pub rules: ToolRules,
    /// Whether the teammate claims open tasks by itself when idle (the
    /// reference's behaviour). Default `true`.
    pub auto_claim: bool,
    /// Memory, CPU and wall time per turn, sizes, approval wait.
    pub limits: Limits,
    /// Which of its `idle_notification`s reach the lead's inbox (the others
    /// go to the lead's history only; see [`crate::runner::notify`]).
    /// `None`: the host's
    /// [`HostOptions::notifications`](crate::embed::HostOptions::notifications).
    pub notifications: Option<NotificationLevel>,
    /// What the teammate may do with models (`model.complete`): `None`, the
    /// default, gives it no model capability at all.
    pub model_policy: Option<ModelPolicy>,
    /// The agent definitions its sub-agents may be started from
    /// (`subagent_type`), from places the operator chose (the host's and
    /// the project's `.claude/agents`, the manifest's `[[agent]]`); `None`:
    /// only `general-purpose`.
    pub agents: Option<std::sync::Arc<super::Definitions>>,
    /// Its network (Bash through the host's proxy, held to these rules);
    /// `None`, the default, gives it no network at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::network::NetworkSettings>,
}

impl Default for TeammateSettings {
    fn default() -> Self {
        TeammateSettings {
            agent_type: None,
            model: None,
            mode: None,
            plan_mode_required: false,
            rules: ToolRules::default(),
            auto_claim: true,
            limits: Limits::default(),
            notifications: None,
            model_policy: None,
            agents: None,
            network: None,
        }
    }
}

impl TeammateSettings {
    /// The mode the teammate runs in: [`Self::mode`], else `default`.
    pub fn permission_mode(&self) -> PermissionMode {
        self.mode.unwrap_or_default()
    }

    /// What a member entry records (written by teamhost or by Claude Code):
    /// role, model, mode, plan approval and tool rules; the rest (which the
    /// reference does not record) at its default. Fails when its mode or
    /// one of its rules does not parse (the error names the mode, or the
    /// rule and its list).
    pub fn from_member(member: &Member) -> Result<Self, SettingsError> {
        Ok(TeammateSettings {
            agent_type: member.agent_type.clone(),
            model: member.model.clone(),
            mode: member_mode(member)?,
            plan_mode_required: member.plan_mode_required == Some(true),
            rules: ToolRules::new(
                member.allowed_tools.iter().flatten(),
                member.disallowed_tools.iter().flatten(),
            )?,
            ..TeammateSettings::default()
        })
    }

    /// The member entry to register for teammate `name` (in `color`, or the
    /// next free one), started with `prompt` in `cwd` by `backend`
    /// (`in-process`, `process`, `tmux`; also its pane id until it reports
    /// one). The entry keeps at most [`MEMBER_PROMPT_CHARS`] of the prompt
    /// (the whole prompt is the teammate's first message).
    pub fn new_member(
        &self,
        name: &str,
        color: Option<&str>,
        prompt: &str,
        cwd: &str,
        backend: &str,
    ) -> NewMember {
        NewMember {
            name: name.to_string(),
            agent_type: self.agent_type.clone(),
            model: self.model.clone(),
            prompt: Some(prompt_prefix(prompt)),
            color: color.map(str::to_string),
            plan_mode_required: self.plan_mode_required,
            cwd: Some(cwd.to_string()),
            backend_type: Some(backend.to_string()),
            tmux_pane_id: Some(backend.to_string()),
            mode: self.mode.map(|m| m.as_str().to_string()),
            allowed_tools: self.rules.allowed_texts(),
            disallowed_tools: self.rules.disallowed_texts(),
            is_active: None,
        }
    }

    /// The flags that give a child `teamhost teammate` exactly these
    /// settings: the reference's (`--agent-type`, `--model`,
    /// `--permission-mode` or `--dangerously-skip-permissions`,
    /// `--plan-mode-required`, `--allowedTools`, `--disallowedTools`), then
    /// teamhost's (`--no-auto-claim`, `--notifications`, and as JSON, exact
    /// to the last field, `--limits`, `--model-policy` and
    /// `--agent-definitions`). `notifications`
    /// is the level to give when the settings leave it to the host.
    pub fn child_args(&self, notifications: NotificationLevel) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut flag = |k: &str, v: &str| {
            a.push(k.into());
            a.push(v.into());
        };
        flag(
            "--agent-type",
            self.agent_type.as_deref().unwrap_or("general-purpose"),
        );
        if let Some(model) = &self.model {
            flag("--model", model);
        }
        match self.mode {
            Some(PermissionMode::BypassPermissions) => {
                a.push("--dangerously-skip-permissions".into())
            }
            Some(mode) => {
                a.push("--permission-mode".into());
                a.push(mode.as_str().into());
            }
            None => {}
        }
        if self.plan_mode_required {
            a.push("--plan-mode-required".into());
        }
        if !self.rules.allowed().is_empty() {
            a.push("--allowedTools".into());
            a.push(self.rules.allowed_texts().join(","));
        }
        if !self.rules.disallowed().is_empty() {
            a.push("--disallowedTools".into());
            a.push(self.rules.disallowed_texts().join(","));
        }
        if !self.auto_claim {
            a.push("--no-auto-claim".into());
        }
        a.push("--notifications".into());
        a.push(self.notifications.unwrap_or(notifications).as_str().into());
        if self.limits != Limits::default() {
            a.push("--limits".into());
            a.push(serde_json::to_string(&self.limits).expect("limits serialise"));
        }
        if let Some(policy) = &self.model_policy {
            a.push("--model-policy".into());
            a.push(serde_json::to_string(policy).expect("a model policy serialises"));
        }
        if let Some(agents) = &self.agents {
            a.push("--agent-definitions".into());
            a.push(serde_json::to_string(agents.as_ref()).expect("definitions serialise"));
        }
        if let Some(network) = &self.network {
            a.push("--network".into());
            a.push(serde_json::to_string(network).expect("network settings serialise"));
        }
        a
    }
}

/// A member entry's mode, parsed (`None` when it records none).
pub fn member_mode(member: &Member) -> Result<Option<PermissionMode>, ParseModeError> {
    member.mode.as_deref().map(str::parse).transpose()
}

/// Why recorded settings do not parse: the mode, or one of the tool rules.
/// The message is the parser's (it names the accepted modes, or the rule
/// and its list).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// Not one of the six permission modes.
    #[error(transparent)]
    Mode(#[from] ParseModeError),
    /// A tool rule that does not parse.
    #[error(transparent)]
    Rules(#[from] RuleError),
}

impl From<SettingsError> for crate::Error {
    fn from(e: SettingsError) -> Self {
        crate::Error::Spawn(e.to_string())
    }
}

/// The most characters of a teammate's first prompt its member entry in
/// `config.json` keeps (the reference stores the prompt there; a prompt of
/// megabytes would make every read of the config slow). Longer prompts are
/// cut, with `…` at the end.
pub const MEMBER_PROMPT_CHARS: usize = 2_000;

/// `prompt` as its member entry keeps it: at most [`MEMBER_PROMPT_CHARS`].
pub fn prompt_prefix(prompt: &str) -> String {
    match prompt.char_indices().nth(MEMBER_PROMPT_CHARS) {
        None => prompt.to_string(),
        Some((at, _)) => format!("{}…", &prompt[..at]),
    }
}

#[cfg(test)]
mod prompt_tests {
    use super::*;

    #[test]
    fn a_member_entry_keeps_a_bounded_prefix_of_a_long_prompt() {
        assert_eq!(prompt_prefix("short"), "short");
        let long = "é".repeat(MEMBER_PROMPT_CHARS + 10);
        let kept = prompt_prefix(&long);
        assert_eq!(kept.chars().count(), MEMBER_PROMPT_CHARS + 1);
        assert!(kept.ends_with('…'));
        let exact = "x".repeat(MEMBER_PROMPT_CHARS);
        assert_eq!(prompt_prefix(&exact), exact);
    }
}
