//! The flags of `teamhost teammate` that say how the teammate runs, and how
//! they become its [`TeammateSettings`] over its member entry: the inverse
//! of [`TeammateSettings::child_args`], which a host uses to start one (the
//! tests below check the round trip).

use clap::{ArgAction, Args};

use crate::cli::model_args::ModelPolicyArgs;
use crate::model::ModelPolicy;
use crate::runner::NotificationLevel;
use crate::sandbox::{Limits, PermissionMode, ToolRules};
use crate::store::Member;
use crate::teammate::{member_mode, TeammateSettings};

/// How the teammate runs (the reference's flags, then teamhost's).
#[derive(Debug, Clone, Args)]
pub struct SettingsArgs {
    /// Role (default: the member entry's, else general-purpose).
    #[arg(long = "agent-type", value_name = "TYPE")]
    pub(crate) agent_type: Option<String>,
    /// Model id (recorded; the component decides what it does).
    #[arg(long, value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// Plans must be approved by the lead before acting.
    #[arg(long = "plan-mode-required")]
    pub(crate) plan_mode_required: bool,
    /// Sandbox mode: default, acceptEdits, bypassPermissions, plan, dontAsk,
    /// delegate (and Claude Code's bubble, which is default here).
    #[arg(long = "permission-mode", value_name = "MODE")]
    pub(crate) permission_mode: Option<String>,
    /// Same as --permission-mode bypassPermissions.
    #[arg(long = "dangerously-skip-permissions")]
    pub(crate) dangerously_skip_permissions: bool,
    /// Tool rules allowed without asking (comma- or space-separated).
    #[arg(long = "allowedTools", alias = "allowed-tools", value_name = "RULES", num_args = 1.., action = ArgAction::Append)]
    pub(crate) allowed_tools: Vec<String>,
    /// Tool rules always denied (comma- or space-separated).
    #[arg(long = "disallowedTools", alias = "disallowed-tools", value_name = "RULES", num_args = 1.., action = ArgAction::Append)]
    pub(crate) disallowed_tools: Vec<String>,
    /// Do not claim open tasks when idle.
    #[arg(long = "no-auto-claim")]
    pub(crate) no_auto_claim: bool,
    /// Which idle notifications reach the lead's inbox: all (the reference's
    /// behaviour), state-changes (the first, completed tasks, failures) or
    /// none. The others go to the lead's history only.
    #[arg(long, env = "TEAMHOST_NOTIFICATIONS", hide_env_values = true, value_name = "LEVEL", default_value_t = NotificationLevel::All)]
    pub(crate) notifications: NotificationLevel,
    /// The teammate's limits as JSON (`crate::sandbox::Limits`, missing keys
    /// at their defaults); given by the host that starts it.
    #[arg(long, hide = true, value_name = "JSON")]
    pub(crate) limits: Option<String>,
    /// The teammate's model policy as JSON (`crate::model::ModelPolicy`);
    /// given by the host that starts it, instead of the `--model-*` flags.
    #[arg(long = "model-policy", hide = true, value_name = "JSON")]
    pub(crate) model_policy_json: Option<String>,
    /// The agent definitions its sub-agents may name, as JSON
    /// (`crate::teammate::Definitions`); given by the host that starts it,
    /// from places its operator chose.
    #[arg(long = "agent-definitions", hide = true, value_name = "JSON")]
    pub(crate) agent_definitions: Option<String>,
    /// The teammate's network as JSON (`crate::network::NetworkSettings`);
    /// given by the host that starts it. Without it the teammate has none.
    #[arg(long, hide = true, value_name = "JSON")]
    pub(crate) network: Option<String>,
    /// The teammate's model policy. Only these flags give the teammate a
    /// model; `--model` alone (Claude Code passes its own model to every
    /// teammate) grants nothing, and is the default when they allow it.
    #[command(flatten)]
    pub(crate) model_policy: ModelPolicyArgs,
}

impl SettingsArgs {
    /// The settings: each flag given wins over the member entry's value;
    /// what the entry does not record (auto-claim, notifications, limits,
    /// model policy) comes from the flags alone. Fails on malformed
    /// `--limits` or model flags, saying which.
    pub fn over(&self, member: &Member) -> anyhow::Result<TeammateSettings> {
        let model = self.model.clone().or(member.model.clone());
        let limits = match &self.limits {
            None => Limits::default(),
            Some(json) => serde_json::from_str(json)
                .map_err(|e| anyhow::anyhow!("--limits is not a limits object: {e}"))?,
        };
        Ok(TeammateSettings {
            agent_type: self.agent_type.clone().or(member.agent_type.clone()),
            model_policy: self.policy(model.as_deref())?,
            model,
            mode: self.mode(member)?,
            plan_mode_required: self.plan_mode_required || member.plan_mode_required == Some(true),
            rules: self.rules(member)?,
            auto_claim: !self.no_auto_claim,
            limits,
            notifications: Some(self.notifications),
            agents: match &self.agent_definitions {
                None => None,
                Some(json) => Some(std::sync::Arc::new(serde_json::from_str(json).map_err(
                    |e| anyhow::anyhow!("--agent-definitions is not a definitions object: {e}"),
                )?)),
            },
            network: match &self.network {
                None => None,
                Some(json) => {
                    let n: crate::network::NetworkSettings = serde_json::from_str(json)
                        .map_err(|e| anyhow::anyhow!("--network is not a network object: {e}"))?;
                    n.check().map_err(|e| anyhow::anyhow!("--network: {e}"))?;
                    Some(n)
                }
            },
        })
    }

    /// The mode: `--dangerously-skip-permissions`, else `--permission-mode`,
    /// else the member entry's; parsed here, once.
    fn mode(&self, member: &Member) -> anyhow::Result<Option<PermissionMode>> {
        if self.dangerously_skip_permissions {
            return Ok(Some(PermissionMode::BypassPermissions));
        }
        match &self.permission_mode {
            // Claude Code 2.1.332's `bubble` sends every permission question
            // up to the lead: teamhost's `default` mode does exactly that.
            Some(flag) if flag == "bubble" => Ok(Some(PermissionMode::Default)),
            Some(flag) => Ok(Some(flag.parse().map_err(
                |e: crate::sandbox::ParseModeError| anyhow::anyhow!("--permission-mode: {e}"),
            )?)),
            None => Ok(member_mode(member)?),
        }
    }

    /// The tool rules: each list from its flags when given, else the member
    /// entry's; parsed here, once (a list the flags replace is not read).
    fn rules(&self, member: &Member) -> anyhow::Result<ToolRules> {
        let list = |flags: &[String], recorded: &Option<Vec<String>>| {
            if flags.is_empty() {
                recorded.clone().unwrap_or_default()
            } else {
                split_rules(flags)
            }
        };
        Ok(ToolRules::new(
            list(&self.allowed_tools, &member.allowed_tools),
            list(&self.disallowed_tools, &member.disallowed_tools),
        )?)
    }
}

impl SettingsArgs {
    /// `--model-policy` exactly, or what the `--model-*` flags and
    /// `--model` describe; both at once is an error.
    fn policy(&self, model: Option<&str>) -> anyhow::Result<Option<ModelPolicy>> {
        let Some(json) = &self.model_policy_json else {
            return self.model_policy.explicit_policy(model);
        };
        if self.model_policy.given() {
            anyhow::bail!(
                "--model-policy and --model-* flags were both given: give one or the other"
            );
        }
        let policy: ModelPolicy = serde_json::from_str(json)
            .map_err(|e| anyhow::anyhow!("--model-policy is not a model policy: {e}"))?;
        policy
            .validate()
            .map_err(|e| anyhow::anyhow!("--model-policy: {e}"))?;
        Ok(Some(policy))
    }
}

/// Splits tool-rule arguments on commas and spaces outside parentheses
/// (`Read,Bash(git log:*) Edit` → `Read`, `Bash(git log:*)`, `Edit`).
pub fn split_rules(args: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|a| crate::sandbox::rules::split_list(a))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    #[derive(Debug, Parser)]
    struct Only {
        #[command(flatten)]
        s: SettingsArgs,
    }

    /// The settings a host starts a child with, as the child reads them.
    fn round_trip(settings: &TeammateSettings) -> TeammateSettings {
        let args = settings.child_args(NotificationLevel::All);
        let parsed = Only::try_parse_from(std::iter::once("teammate".to_string()).chain(args))
            .expect("the child parses the host's flags");
        parsed.s.over(&member()).unwrap()
    }

    /// A member entry that records nothing the flags could be confused with.
    fn member() -> Member {
        serde_json::from_value(serde_json::json!({
            "agentId": "w@t", "name": "w", "joinedAt": 0, "tmuxPaneId": "", "cwd": "/", "subscriptions": []
        }))
        .unwrap()
    }

    #[test]
    fn every_setting_a_host_gives_reaches_the_child_unchanged() {
        let mut policy = ModelPolicy::new(vec!["sonnet".into(), "haiku".into()]);
        policy.max_tokens_per_call = 1234;
        policy.calls_per_turn = Some(7);
        policy.budget_tokens = Some(99_000);
        policy.budget_microdollars = Some(2_500_000);
        policy.requests_per_minute = Some(12);
        let settings = TeammateSettings {
            agent_type: Some("reviewer".into()),
            model: Some("sonnet".into()),
            mode: Some(PermissionMode::AcceptEdits),
            plan_mode_required: true,
            rules: ToolRules::new(["Read", "Bash(git log:*)"], ["Write"]).unwrap(),
            auto_claim: false,
            limits: Limits {
                memory_bytes: (3 << 20) + 12_345,
                cpu_per_turn: Duration::from_millis(1_500),
                max_messages_total: 3,
                ..Limits::default()
            },
            notifications: Some(NotificationLevel::StateChanges),
            model_policy: Some(policy),
            agents: Some(std::sync::Arc::new({
                let mut d = crate::teammate::Definitions::new();
                d.insert(crate::teammate::Definition {
                    name: "reviewer".into(),
                    description: "reviews".into(),
                    prompt: "Review.\nCarefully.".into(),
                    tools: Some(vec!["Read".into()]),
                    permission_mode: Some("plan".into()),
                    background: true,
                    ..Default::default()
                });
                // The fork path crosses to a `teamhost teammate` process too.
                d.with_fork(true)
            })),
            network: Some(crate::network::NetworkSettings {
                allowed_domains: vec!["*.pypi.org".into(), "127.0.0.1".into()],
                denied_domains: vec!["evil.example".into()],
                allowed_ports: Some(vec![443, 8080]),
                max_mb: Some(5),
                max_connections: None,
                resolve: [("pkg.test".to_string(), vec!["127.0.0.1".parse().unwrap()])].into(),
                allowed_outbound_hosts: vec!["http://pkg.test:8080".into()],
            }),
        };
        assert_eq!(round_trip(&settings), settings);

        // Unlimited calls, tokens and rate stay unlimited.
        let mut unlimited = ModelPolicy::new(vec!["haiku".into()]);
        unlimited.calls_per_turn = None;
        unlimited.budget_tokens = None;
        unlimited.requests_per_minute = None;
        let open = TeammateSettings {
            model: None,
            model_policy: Some(unlimited),
            ..settings
        };
        assert_eq!(round_trip(&open), open);
    }

    #[test]
    fn the_defaults_and_bypass_mode_survive_the_trip_too() {
        let defaults = TeammateSettings {
            agent_type: Some("general-purpose".into()),
            notifications: Some(NotificationLevel::All),
            ..TeammateSettings::default()
        };
        assert_eq!(round_trip(&defaults), defaults);
        let bypass = TeammateSettings {
            mode: Some(PermissionMode::BypassPermissions),
            ..defaults
        };
        assert_eq!(round_trip(&bypass), bypass);
    }

    #[test]
    fn claude_code_s_bubble_mode_asks_the_lead_as_default_does() {
        let parsed = Only::try_parse_from(["teammate", "--permission-mode=bubble"]).unwrap();
        let settings = parsed.s.over(&member()).unwrap();
        assert_eq!(settings.mode, Some(PermissionMode::Default));
    }

    #[test]
    fn flags_win_over_the_member_entry_and_bad_limits_are_refused() {
        let mut m = member();
        m.mode = Some("plan".into());
        m.allowed_tools = Some(vec!["Read".into()]);
        let parse =
            |args: &[&str]| Only::try_parse_from(std::iter::once(&"teammate").chain(args)).unwrap();
        let recorded = parse(&[]).s.over(&m).unwrap();
        assert_eq!(recorded.mode, Some(PermissionMode::Plan));
        assert_eq!(recorded.rules.allowed_texts(), ["Read"]);
        let flagged = parse(&[
            "--permission-mode",
            "dontAsk",
            "--allowedTools",
            "Glob,Grep",
        ])
        .s
        .over(&m)
        .unwrap();
        assert_eq!(flagged.mode, Some(PermissionMode::DontAsk));
        assert_eq!(flagged.rules.allowed_texts(), ["Glob", "Grep"]);
        let err = parse(&["--limits", "{\"memory_byts\": 1}"])
            .s
            .over(&m)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--limits") && err.contains("memory_byts"),
            "{err}"
        );
    }
}
