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
/// microdollars, refusing what is not a finite non-negative amount and what
/// does not fit in a `u64` of microdollars (about US$18.4 trillion): a
/// budget is never cut to the largest one silently.
pub fn usd_to_microdollars(usd: f64) -> Result<u64, String> {
    if !usd.is_finite() || usd < 0.0 {
        return Err(format!(
            "budget_usd must be a non-negative number of US dollars, not {usd}"
        ));
    }
    let micro = (usd * 1_000_000.0).round();
    // `u64::MAX as f64` is 2^64, one more than the largest u64.
    if micro >= u64::MAX as f64 {
        return Err(format!(
            "budget_usd {usd:?} is more US dollars than teamhost can count (at most {}); give a smaller amount",
            microdollars_text(u64::MAX)
        ));
    }
    Ok(micro as u64)
}

/// `micro` millionths of a US dollar as text: `US$1`, `US$0.25`.
pub fn microdollars_text(micro: u64) -> String {
    let (whole, frac) = (micro / 1_000_000, micro % 1_000_000);
    if frac == 0 {
        format!("US${whole}")
    } else {
        let frac = format!("{frac:06}");
        format!("US${whole}.{}", frac.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_amount_that_does_not_fit_in_microdollars_is_refused_not_saturated() {
        assert_eq!(usd_to_microdollars(1.5), Ok(1_500_000));
        assert_eq!(usd_to_microdollars(0.0), Ok(0));
        for usd in [1e308, 1e14 * 1.9, f64::MAX] {
            let e = usd_to_microdollars(usd).unwrap_err();
            assert!(e.contains("more US dollars than teamhost can count"), "{e}");
        }
        for usd in [f64::NAN, f64::INFINITY, -0.01] {
            assert!(usd_to_microdollars(usd).is_err(), "{usd}");
        }
        // The largest amount that fits is still accepted.
        assert!(usd_to_microdollars(18_000_000_000_000.0).is_ok());
    }

    #[test]
    fn microdollars_read_as_dollars() {
        assert_eq!(microdollars_text(1_000_000), "US$1");
        assert_eq!(microdollars_text(250_000), "US$0.25");
        assert_eq!(microdollars_text(1), "US$0.000001");
        assert_eq!(microdollars_text(u64::MAX), "US$18446744073709.551615");
    }
}
