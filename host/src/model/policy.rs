//! A teammate's model policy: which models it may use and how much. Plain
//! data, from the manifest's `[teammate.model_policy]` or `teamhost
//! teammate`'s `--model-*` flags; the broker ([`super::broker`]) enforces it
//! with the meter ([`super::meter`]).
//!
//! A teammate has a model capability only when it has a policy: without one,
//! `model.models()` is empty and `model.complete` is `denied`.

/// What one teammate may do with models. [`ModelPolicy::new`] gives the
/// defaults in brackets.
///
/// Serialised as JSON for the `--model-policy` flag a host gives a teammate
/// it starts in another process (every key required).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPolicy {
    /// Model aliases it may ask for (the host's catalog names, or
    /// `provider/model-id`). Never empty.
    pub allow: Vec<String>,
    /// What `model: ""` means [the first of `allow`].
    pub default: String,
    /// The most `max_tokens` of one call [4,096].
    pub max_tokens_per_call: u32,
    /// Completions per turn [50]; `None`: unlimited.
    pub calls_per_turn: Option<u32>,
    /// Tokens over the teammate's life, input and output, cached or not
    /// [2,000,000]; `None`: unlimited.
    pub budget_tokens: Option<u64>,
    /// Money over its life, in millionths of a US dollar at the host's
    /// prices (the manifest's `budget_usd` × 1,000,000). `None`: the
    /// broker gives [`DEFAULT_BUDGET_MICRODOLLARS`] when every model the
    /// teammate may use has a price and one of them is not free, and no
    /// cost budget otherwise.
    pub budget_microdollars: Option<u64>,
    /// Completions per minute [60]; `None`: unlimited.
    pub requests_per_minute: Option<u32>,
}

/// The cost budget of a teammate whose manifest gives none, using priced
/// models: US$1.00 over its life (raise it with `budget_usd`).
pub const DEFAULT_BUDGET_MICRODOLLARS: u64 = 1_000_000;

impl ModelPolicy {
    /// A policy allowing `allow` (the first is the default), with the
    /// documented defaults. `allow` must not be empty.
    pub fn new(allow: Vec<String>) -> Self {
        let default = allow.first().cloned().unwrap_or_default();
        ModelPolicy {
            allow,
            default,
            max_tokens_per_call: 4096,
            calls_per_turn: Some(50),
            budget_tokens: Some(2_000_000),
            budget_microdollars: None,
            requests_per_minute: Some(60),
        }
    }

    /// Checks the policy is usable: a non-empty allow list holding the
    /// default, and positive limits.
    pub fn validate(&self) -> Result<(), String> {
        if self.allow.is_empty() || self.allow.iter().any(|a| a.trim().is_empty()) {
            return Err(
                "the model policy allows no model: list at least one alias in `allow`".into(),
            );
        }
        if !self.allow.contains(&self.default) {
            return Err(format!(
                "the default model {:?} is not in the allowed list {:?}",
                self.default, self.allow
            ));
        }
        if self.max_tokens_per_call == 0 {
            return Err("max_tokens_per_call must be at least 1".into());
        }
        if self.calls_per_turn == Some(0) || self.requests_per_minute == Some(0) {
            return Err("calls_per_turn and requests_per_minute must be at least 1 (leave them out for no limit)".into());
        }
        Ok(())
    }
}

/// Converts a budget in US dollars (the manifest's `budget_usd`) to
/// microdollars, refusing what is not a finite non-negative amount.
pub fn usd_to_microdollars(usd: f64) -> Result<u64, String> {
    if !usd.is_finite() || usd < 0.0 {
        return Err(format!(
            "budget_usd must be a non-negative number of US dollars, not {usd}"
        ));
    }
    Ok((usd * 1_000_000.0).round().min(u64::MAX as f64) as u64)
}
