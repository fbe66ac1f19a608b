//! The model flags `teamhost run` and `teamhost teammate` share, and how
//! they become the host's model broker ([`ModelAccess`]).
//!
//! | flag | environment | default |
//! |---|---|---|
//! | `--model-mode MODE` | `TEAMHOST_MODEL_MODE` | the manifest's `[model] mode`, else `live` |
//! | `--model-config FILE` | `TEAMHOST_MODEL_CONFIG` | `{home}/models.toml` when it exists, else the built-in providers and aliases |
//! | `--cassettes DIR` | `TEAMHOST_CASSETTES` | the manifest's `[model] cassettes` |
//!
//! Credentials are read by the broker from the host's environment
//! (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …) or its config file, never from
//! a flag: a flag would show in `ps` and in a tmux pane's command line.
//!
//! `teamhost teammate` also takes a teammate's model policy as flags
//! (`--model-allow`, `--model-max-tokens`, …; see [`ModelPolicyArgs`]); with
//! only the reference's `--model ALIAS`, the teammate may use that model with
//! the default limits.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::embed::ModelAccess;
use crate::manifest::ModelSpec;
use crate::model::ModelPolicy;

/// Where model calls go, and whether they are recorded or replayed.
#[derive(Debug, Clone, Default, Args)]
pub struct ModelArgs {
    /// live (call the provider), record (call it and write cassettes),
    /// replay (answer from cassettes only; a request that changed fails),
    /// replay-lenient (serve a changed request's recorded answer with a
    /// warning), replay-or-record (replay, and record what is missing).
    #[arg(
        long = "model-mode",
        env = "TEAMHOST_MODEL_MODE",
        hide_env_values = true,
        value_name = "MODE"
    )]
    pub mode: Option<String>,
    /// The host's model config (providers, credentials, aliases, prices).
    #[arg(
        long = "model-config",
        env = "TEAMHOST_MODEL_CONFIG",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub config: Option<PathBuf>,
    /// The cassette directory ({DIR}/{team}/{teammate}.jsonl).
    #[arg(
        long = "cassettes",
        env = "TEAMHOST_CASSETTES",
        hide_env_values = true,
        value_name = "DIR"
    )]
    pub cassettes: Option<PathBuf>,
}

/// A teammate's model policy on `teamhost teammate`'s command line.
#[derive(Debug, Clone, Default, Args)]
pub struct ModelPolicyArgs {
    /// Model aliases the teammate may use (comma-separated).
    #[arg(long = "model-allow", value_name = "ALIASES", value_delimiter = ',')]
    pub allow: Vec<String>,
    /// Most tokens one call may generate.
    #[arg(long = "model-max-tokens", value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Completions per turn.
    #[arg(long = "model-calls-per-turn", value_name = "N")]
    pub calls_per_turn: Option<u32>,
    /// Tokens over the teammate's life.
    #[arg(long = "model-budget-tokens", value_name = "N")]
    pub budget_tokens: Option<u64>,
    /// US dollars over the teammate's life, at the host's prices.
    #[arg(long = "model-budget-usd", value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Completions per minute.
    #[arg(long = "model-rpm", value_name = "N")]
    pub requests_per_minute: Option<u32>,
}

impl ModelPolicyArgs {
    /// The policy these flags and `--model` describe; `None` when neither
    /// names a model.
    pub fn policy(&self, model: Option<&str>) -> anyhow::Result<Option<ModelPolicy>> {
        let spec = crate::manifest::ModelPolicySpec {
            allow: self
                .allow
                .iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            default: None,
            max_tokens_per_call: self.max_tokens,
            calls_per_turn: self.calls_per_turn,
            budget_tokens: self.budget_tokens,
            budget_usd: self.budget_usd,
            requests_per_minute: self.requests_per_minute,
        };
        crate::manifest::teammate_policy(model, self.given().then_some(&spec))
            .map_err(|e| anyhow::anyhow!("the model flags: {e}"))
    }

    /// Whether any `--model-*` policy flag was given.
    pub(crate) fn given(&self) -> bool {
        self.allow.iter().any(|s| !s.trim().is_empty())
            || self.max_tokens.is_some()
            || self.calls_per_turn.is_some()
            || self.budget_tokens.is_some()
            || self.budget_usd.is_some()
            || self.requests_per_minute.is_some()
    }

    /// The policy of a `teamhost teammate`: only `--model-*` flags give it a
    /// model capability. Claude Code passes `--model` (its own model's id)
    /// to every teammate it starts, which must neither grant a model nor
    /// fail the start; `--model` becomes the default when the flags allow
    /// it.
    pub fn explicit_policy(&self, model: Option<&str>) -> anyhow::Result<Option<ModelPolicy>> {
        if !self.given() {
            return Ok(None);
        }
        let allowed = |m: &&str| {
            let listed: Vec<&str> = self
                .allow
                .iter()
                .flat_map(|a| a.split(','))
                .map(str::trim)
                .collect();
            listed.iter().all(|a| a.is_empty()) || listed.contains(m)
        };
        self.policy(model.filter(allowed))
    }
}

/// Builds the host's model broker from the flags, the manifest's `[model]`
/// table (when there is a manifest) and the home's `models.toml`
/// ([`crate::run::model_access`]).
pub fn model_access(
    home: &Path,
    args: &ModelArgs,
    manifest: Option<&ModelSpec>,
) -> anyhow::Result<ModelAccess> {
    let choice = crate::run::ModelChoice {
        mode: args.mode.clone(),
        config: args.config.clone(),
        cassettes: args.cassettes.clone(),
    };
    crate::run::model_access(home, &choice, manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(allow: &[&str]) -> ModelPolicyArgs {
        ModelPolicyArgs {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            max_tokens: None,
            calls_per_turn: None,
            budget_tokens: None,
            budget_usd: None,
            requests_per_minute: None,
        }
    }

    #[test]
    fn claude_codes_model_flag_alone_grants_a_teammate_no_model() {
        assert_eq!(
            args(&[]).explicit_policy(Some("claude-opus-4-8")).unwrap(),
            None
        );
        let p = args(&["sonnet", "haiku"])
            .explicit_policy(Some("claude-opus-4-8"))
            .unwrap()
            .unwrap();
        assert_eq!((p.default.as_str(), p.allow.len()), ("sonnet", 2));
        let p = args(&["sonnet", "haiku"])
            .explicit_policy(Some("haiku"))
            .unwrap()
            .unwrap();
        assert_eq!(p.default, "haiku");
    }
}
