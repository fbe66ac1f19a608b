//! The manifest's model keys: the top-level `[model]` table (record/replay
//! mode and the cassette directory) and each teammate's
//! `[teammate.model_policy]`. Credentials, provider URLs and prices are not
//! here on purpose: they are the host's (its environment or its model
//! config file), never a manifest's.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::policy::{usd_to_microdollars, ModelPolicy};
use crate::model::CassetteMode;

/// `[model]`: how the team's model calls are made. Every key optional;
/// `--model-mode` and `--cassettes` (or their environment variables) win.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// `live`, `record`, `replay`, `replay-lenient` or `replay-or-record`.
    /// Default `live`.
    pub mode: Option<String>,
    /// Where cassettes are (`{cassettes}/{team}/{teammate}.jsonl`). Relative
    /// to the manifest; absolute once parsed. Needed by every mode but
    /// `live`.
    pub cassettes: Option<PathBuf>,
    /// US dollars the whole team may spend on models over its life, shared
    /// by every teammate and sub-agent. Default: none (each teammate still
    /// has its own budget: `budget_usd`, [`crate::model::policy::DEFAULT_BUDGET_MICRODOLLARS`]
    /// by default with priced models).
    pub team_budget_usd: Option<f64>,
}

impl ModelSpec {
    /// Joins a relative cassette directory to `base`.
    pub(super) fn resolve_paths(&mut self, base: &Path) {
        if let Some(c) = &mut self.cassettes {
            *c = base.join(&*c).components().collect();
        }
    }

    /// The mode, parsed (`None` when left out).
    pub fn parsed_mode(&self) -> Result<Option<CassetteMode>, String> {
        self.mode
            .as_deref()
            .map(|m| {
                m.parse::<CassetteMode>()
                    .map_err(|e| format!("[model] mode: {e}"))
            })
            .transpose()
    }

    /// The team budget in microdollars (`None` when left out).
    pub fn team_budget(&self) -> Result<Option<u64>, String> {
        self.team_budget_usd
            .map(|usd| usd_to_microdollars(usd).map_err(|e| format!("[model] team_{e}")))
            .transpose()
    }
}

/// `[teammate.model_policy]`: what the teammate may do with models; see
/// [`ModelPolicy`] for the defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPolicySpec {
    /// Model aliases it may use. Default: the teammate's `model`.
    #[serde(default)]
    pub allow: Vec<String>,
    /// What `model: ""` means. Default: the teammate's `model`, else the
    /// first of `allow`.
    pub default: Option<String>,
    /// The most tokens one call may generate.
    pub max_tokens_per_call: Option<u32>,
    /// Completions per turn (0 is refused; leave it out for the default).
    pub calls_per_turn: Option<u32>,
    /// Tokens over the teammate's life.
    pub budget_tokens: Option<u64>,
    /// US dollars over the teammate's life, at the host's prices.
    pub budget_usd: Option<f64>,
    /// Completions per minute.
    pub requests_per_minute: Option<u32>,
}

/// The policy of a teammate whose manifest entry has `model` and/or
/// `model_policy`; `Ok(None)` when it has neither (no model capability).
pub fn teammate_policy(
    model: Option<&str>,
    spec: Option<&ModelPolicySpec>,
) -> Result<Option<ModelPolicy>, String> {
    let model = model.map(str::trim).filter(|m| !m.is_empty());
    let Some(spec) = spec else {
        return Ok(model.map(|m| ModelPolicy::new(vec![m.to_string()])));
    };
    let mut allow = spec.allow.clone();
    if allow.is_empty() {
        match model {
            Some(m) => allow.push(m.to_string()),
            None => {
                return Err("model_policy.allow is empty and the teammate has no `model`: list the model aliases it may use, like allow = [\"sonnet\"]".into())
            }
        }
    }
    let mut policy = ModelPolicy::new(allow);
    if let Some(d) = spec.default.clone().or_else(|| model.map(str::to_string)) {
        policy.default = d;
    }
    if let Some(n) = spec.max_tokens_per_call {
        policy.max_tokens_per_call = n;
    }
    if spec.calls_per_turn.is_some() {
        policy.calls_per_turn = spec.calls_per_turn;
    }
    if spec.budget_tokens.is_some() {
        policy.budget_tokens = spec.budget_tokens;
    }
    if let Some(usd) = spec.budget_usd {
        policy.budget_microdollars = Some(usd_to_microdollars(usd)?);
    }
    if spec.requests_per_minute.is_some() {
        policy.requests_per_minute = spec.requests_per_minute;
    }
    policy.validate().map(|()| Some(policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_alone_allows_just_that_model_with_the_defaults() {
        let p = teammate_policy(Some("sonnet"), None).unwrap().unwrap();
        assert_eq!(
            (p.allow, p.default),
            (vec!["sonnet".to_string()], "sonnet".to_string())
        );
        assert_eq!(
            p.max_tokens_per_call,
            ModelPolicy::new(vec!["x".into()]).max_tokens_per_call
        );
    }

    #[test]
    fn no_model_and_no_policy_is_no_capability() {
        assert_eq!(teammate_policy(None, None), Ok(None));
        assert_eq!(teammate_policy(Some("  "), None), Ok(None));
    }

    #[test]
    fn a_policy_overrides_each_default_it_names() {
        let spec = ModelPolicySpec {
            allow: vec!["haiku".into(), "sonnet".into()],
            budget_usd: Some(0.25),
            calls_per_turn: Some(3),
            ..Default::default()
        };
        let p = teammate_policy(Some("sonnet"), Some(&spec))
            .unwrap()
            .unwrap();
        assert_eq!(p.default, "sonnet");
        assert_eq!(p.budget_microdollars, Some(250_000));
        assert_eq!(p.calls_per_turn, Some(3));
    }

    #[test]
    fn a_team_budget_is_in_microdollars_and_never_negative() {
        let spec = |usd| ModelSpec {
            team_budget_usd: Some(usd),
            ..ModelSpec::default()
        };
        assert_eq!(spec(2.5).team_budget(), Ok(Some(2_500_000)));
        assert_eq!(ModelSpec::default().team_budget(), Ok(None));
        let err = spec(-1.0).team_budget().unwrap_err();
        assert!(err.starts_with("[model] team_budget_usd"), "{err}");
    }

    #[test]
    fn bad_policies_are_refused_with_the_fix() {
        let empty = ModelPolicySpec::default();
        assert!(teammate_policy(None, Some(&empty))
            .unwrap_err()
            .contains("allow = [\"sonnet\"]"));
        let negative = ModelPolicySpec {
            allow: vec!["a".into()],
            budget_usd: Some(-1.0),
            ..Default::default()
        };
        assert!(teammate_policy(None, Some(&negative))
            .unwrap_err()
            .contains("budget_usd"));
        let stray = ModelPolicySpec {
            allow: vec!["a".into()],
            default: Some("b".into()),
            ..Default::default()
        };
        assert!(teammate_policy(None, Some(&stray))
            .unwrap_err()
            .contains("not in the allowed list"));
    }
}
