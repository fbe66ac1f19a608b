//! [`LeadGrant`]: what a lead component may give, asked of one type. Its
//! questions: [`LeadGrant::may_spawn`] (what a teammate it spawns gets,
//! here), and for its answers to a permission or plan request
//! [`LeadGrant::within_entry`] and [`LeadGrant::within_own`]
//! (`answer_grant.rs`). Each is at most the requester's catalogue entry
//! **and** at most the lead's own grant, with the `delegate` exception
//! ([`delegates`]) written once here. Pure, tested on their own; a wider
//! ask is refused with what was wider and what the most is, never narrowed
//! silently (only what the lead leaves unasked is narrowed, as
//! `leading.wit` documents).
//!
//! What a spawn gets:
//!
//! | what | the entry's most | the lead's own grant | unasked |
//! |---|---|---|---|
//! | mode | `max_mode` | the lead's mode now (order: [`mode_at_most`]), except a `delegate` lead: see below | the entry's `max_mode`, narrowed to the lead's |
//! | allow rules | the entry's allow rules (same text) | the lead's allow rules (same text), except a `delegate` or `bypassPermissions` lead | the entry's, narrowed to the lead's |
//! | deny rules | always the entry's | always the lead's | both |
//! | model | one of `models` | one of the lead's model policy's | the entry's first |
//! | budget (US$) | `budget_usd` | what is left of the lead's model budget (the one its broker keeps, the default US$1 included) after the budgets it gave | the entry's, else the default the broker will give the teammate's model: charged all the same |
//!
//! Budgets are counted in microdollars; an amount that is not one (not
//! finite, negative, or more than a `u64` of microdollars holds) is
//! refused, never cut to fit.
//!
//! **A `delegate` lead** may not use a file tool itself, yet exists to hand
//! work out: its mode and allow rules are no ceiling, and what it may give
//! is the catalogue's (the person's grant, written in the manifest). Its
//! deny rules, models and budget still bound every spawn. A
//! `bypassPermissions` lead runs every tool unasked, so its allow rules are
//! no ceiling either.

use crate::model::policy::{microdollars_text, usd_to_microdollars};
use crate::runtime::lead_host::{Caller, LeadSpawn};
use crate::sandbox::{PermissionMode, ToolRules};
pub use crate::subagents::narrow::mode_at_most;

use crate::embed::grant::spec::CatalogueEntry;

/// The lead's own grant at the moment of an act: its mode and rules now,
/// and for a spawn what models and budget it has to give.
#[derive(Debug, Clone)]
pub struct LeadGrant {
    /// Its mode now.
    pub mode: PermissionMode,
    /// Its tool rules now.
    pub rules: ToolRules,
    /// The model aliases it may use.
    pub models: Vec<String>,
    /// What is left of its model budget to give, in microdollars (`None`:
    /// it has no budget of its own, so none bounds a spawn). Its budget is
    /// the one its broker keeps ([`crate::model::ModelHub::budget_for`]).
    pub budget_left_microdollars: Option<u64>,
}

/// What a spawned teammate gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Granted {
    /// Its mode.
    pub mode: PermissionMode,
    /// Its tool rules: the granted allow rules, the entry's and the lead's
    /// deny rules.
    pub rules: ToolRules,
    /// Its model alias.
    pub model: Option<String>,
    /// Its model budget in microdollars: what it will be held to and what
    /// the lead's purse is charged.
    pub budget_microdollars: Option<u64>,
}

impl LeadGrant {
    /// The grant of a lead answering a request: its mode and rules at the
    /// moment of the call (models and budget bound only a spawn).
    pub fn answering(caller: &Caller) -> LeadGrant {
        LeadGrant {
            mode: caller.mode,
            rules: caller.rules.clone(),
            models: Vec::new(),
            budget_left_microdollars: None,
        }
    }

    /// What a teammate spawned from `entry` for `ask` gets, or why the ask
    /// is wider than the entry or this grant. `unset_budget` says what cost
    /// budget a teammate given no budget gets with a model alias (the
    /// broker's rule, [`crate::model::ModelHub::budget_for`]): that is what
    /// it is charged.
    pub fn may_spawn(
        &self,
        entry: &CatalogueEntry,
        ask: &LeadSpawn,
        unset_budget: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Granted, String> {
        let mode = mode(entry, self, ask.mode)?;
        let rules = rules(entry, self, ask.tools.as_deref())?;
        let model = model(entry, self, ask.model.as_deref())?;
        let budget_microdollars =
            budget(entry, self, ask.budget_usd, model.as_deref(), unset_budget)?;
        Ok(Granted {
            mode,
            rules,
            model,
            budget_microdollars,
        })
    }
}

/// Whether a lead in `mode` delegates: it uses no tool itself, so its own
/// mode and allow rules are no ceiling on what it gives, and its grant is
/// its catalogue (the person's, written in the manifest). The one place the
/// exception is written: what a spawn gets ([`LeadGrant::may_spawn`]),
/// and what an answer may allow or approve ([`LeadGrant::within_entry`],
/// [`LeadGrant::within_own`]) all ask here. Its deny rules, models and budget still bound it.
pub fn delegates(mode: PermissionMode) -> bool {
    mode == PermissionMode::Delegate
}

/// The lead's own mode as a ceiling on a mode it gives (a spawn's, a plan
/// approval's); `None` when it [`delegates`].
fn own_mode_ceiling(mode: PermissionMode) -> Option<PermissionMode> {
    (!delegates(mode)).then_some(mode)
}

/// Whether `given` is within the own mode ceiling of a lead in `lead_mode`
/// ([`own_mode_ceiling`]; always, when it delegates).
pub(super) fn within_own_mode(lead_mode: PermissionMode, given: PermissionMode) -> bool {
    own_mode_ceiling(lead_mode).is_none_or(|c| mode_at_most(given, c))
}

/// Whether the lead's own allow rules bound the allow rules it gives: not
/// when it [`delegates`], nor in `bypassPermissions`, which runs every tool
/// unasked (its allow rules say nothing).
fn own_rules_bound(mode: PermissionMode) -> bool {
    !delegates(mode) && mode != PermissionMode::BypassPermissions
}

fn mode(
    entry: &CatalogueEntry,
    lead: &LeadGrant,
    asked: Option<PermissionMode>,
) -> Result<PermissionMode, String> {
    let ceiling = own_mode_ceiling(lead.mode);
    let Some(mode) = asked else {
        return Ok(match ceiling {
            Some(c) if !mode_at_most(entry.max_mode, c) => c,
            _ => entry.max_mode,
        });
    };
    if !mode_at_most(mode, entry.max_mode) {
        return Err(format!(
            "mode {mode} is wider than catalogue entry {:?} allows: at most {}",
            entry.name, entry.max_mode
        ));
    }
    if let Some(c) = ceiling.filter(|c| !mode_at_most(mode, *c)) {
        return Err(format!(
            "mode {mode} is wider than the lead's own mode: at most {c}"
        ));
    }
    Ok(mode)
}

fn rules(
    entry: &CatalogueEntry,
    lead: &LeadGrant,
    asked: Option<&[String]>,
) -> Result<ToolRules, String> {
    let entry_allowed = entry.rules.allowed_texts();
    let lead_allowed = lead.rules.allowed_texts();
    let bound = own_rules_bound(lead.mode);
    let allowed: Vec<String> = match asked {
        None => entry_allowed
            .iter()
            .filter(|r| !bound || lead_allowed.contains(r))
            .cloned()
            .collect(),
        Some(list) => {
            for rule in list {
                if !entry_allowed.contains(rule) {
                    return Err(format!(
                        "tool rule {rule:?} is wider than catalogue entry {:?} allows: at most [{}]",
                        entry.name,
                        entry_allowed.join(", ")
                    ));
                }
                if bound && !lead_allowed.contains(rule) {
                    return Err(format!(
                        "tool rule {rule:?} is wider than the lead's own rules: at most [{}]",
                        lead_allowed.join(", ")
                    ));
                }
            }
            list.to_vec()
        }
    };
    let mut denied = entry.rules.disallowed_texts();
    for rule in lead.rules.disallowed_texts() {
        if !denied.contains(&rule) {
            denied.push(rule);
        }
    }
    ToolRules::new(&allowed, &denied).map_err(|e| format!("tool rules: {e}"))
}

fn model(
    entry: &CatalogueEntry,
    lead: &LeadGrant,
    asked: Option<&str>,
) -> Result<Option<String>, String> {
    let Some(model) = asked.or(entry.models.first().map(String::as_str)) else {
        return Ok(None);
    };
    if !entry.models.iter().any(|m| m == model) {
        return Err(format!(
            "model {model:?} is not one catalogue entry {:?} may use: [{}]",
            entry.name,
            entry.models.join(", ")
        ));
    }
    if !lead.models.iter().any(|m| m == model) {
        return Err(format!(
            "model {model:?} is not one the lead may use itself: [{}]",
            lead.models.join(", ")
        ));
    }
    Ok(Some(model.to_string()))
}

fn budget(
    entry: &CatalogueEntry,
    lead: &LeadGrant,
    asked: Option<f64>,
    model: Option<&str>,
    unset_budget: &dyn Fn(&str) -> Option<u64>,
) -> Result<Option<u64>, String> {
    let most = entry
        .budget_usd
        .map(|usd| {
            usd_to_microdollars(usd).map_err(|e| format!("catalogue entry {:?}: {e}", entry.name))
        })
        .transpose()?;
    let asked = asked
        .map(|usd| usd_to_microdollars(usd).map_err(|e| format!("the spawn's {e}")))
        .transpose()?;
    let given = asked.or(most);
    if let (Some(given), Some(most)) = (given, most) {
        if given > most {
            return Err(format!(
                "budget {} is more than catalogue entry {:?} allows: at most {}",
                microdollars_text(given),
                entry.name,
                microdollars_text(most)
            ));
        }
    }
    // A teammate without a model spends nothing.
    let Some(model) = model else {
        return Ok(None);
    };
    let (budget, unset) = match given {
        Some(b) => (Some(b), false),
        None => (unset_budget(model), true),
    };
    match (budget, lead.budget_left_microdollars) {
        (Some(b), Some(left)) if b > left => Err(if unset {
            format!(
                "no budget given, so the teammate would get the default cost budget of {} for model {model:?}, \
                 more than the lead has left to give: at most {}; give a budget_usd that fits",
                microdollars_text(b),
                microdollars_text(left)
            )
        } else {
            format!(
                "budget {} is more than the lead has left to give: at most {}",
                microdollars_text(b),
                microdollars_text(left)
            )
        }),
        _ => Ok(budget),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionMode::*;

    fn entry() -> CatalogueEntry {
        CatalogueEntry {
            max_mode: AcceptEdits,
            rules: ToolRules::new(["Read", "Edit", "Bash(cargo test:*)"], ["WebFetch"]).unwrap(),
            models: vec!["fast".into(), "smart".into()],
            budget_usd: Some(2.0),
            ..CatalogueEntry::new("worker", "worker.wasm")
        }
    }

    fn lead(mode: PermissionMode) -> LeadGrant {
        LeadGrant {
            mode,
            rules: ToolRules::new(["Read", "Edit"], ["Bash(rm:*)"]).unwrap(),
            models: vec!["fast".into()],
            budget_left_microdollars: Some(1_500_000),
        }
    }

    /// No default budget for any model.
    fn none(_: &str) -> Option<u64> {
        None
    }

    fn ask() -> LeadSpawn {
        LeadSpawn {
            entry: "worker".into(),
            name: "w".into(),
            prompt: "go".into(),
            ..LeadSpawn::default()
        }
    }

    #[test]
    fn unasked_values_are_the_entrys_narrowed_to_the_lead() {
        let mut l = lead(Default);
        l.budget_left_microdollars = Some(5_000_000);
        let g = l.may_spawn(&entry(), &ask(), &none).unwrap();
        assert_eq!(g.mode, Default);
        assert_eq!(g.rules.allowed_texts(), ["Read", "Edit"]);
        assert_eq!(g.rules.disallowed_texts(), ["WebFetch", "Bash(rm:*)"]);
        assert_eq!(g.model.as_deref(), Some("fast"));
        assert_eq!(g.budget_microdollars, Some(2_000_000));
        // The entry's budget is more than the lead has left: refused, not cut.
        let e = lead(Default)
            .may_spawn(&entry(), &ask(), &none)
            .unwrap_err();
        assert!(e.contains("left to give"), "{e}");
    }

    #[test]
    fn a_delegate_lead_gives_what_the_catalogue_allows() {
        let mut l = lead(Delegate);
        l.budget_left_microdollars = None;
        let g = l.may_spawn(&entry(), &ask(), &none).unwrap();
        assert_eq!(g.mode, AcceptEdits);
        assert_eq!(
            g.rules.allowed_texts(),
            ["Read", "Edit", "Bash(cargo test:*)"]
        );
        // Its deny rules still bind.
        assert!(g
            .rules
            .disallowed_texts()
            .contains(&"Bash(rm:*)".to_string()));
    }

    #[test]
    fn a_mode_wider_than_the_entry_or_the_lead_is_refused_naming_the_most() {
        let mut a = ask();
        a.mode = Some(BypassPermissions);
        let e = lead(Delegate).may_spawn(&entry(), &a, &none).unwrap_err();
        assert!(
            e.contains("wider than catalogue entry") && e.contains("acceptEdits"),
            "{e}"
        );
        a.mode = Some(AcceptEdits);
        let e = lead(Default).may_spawn(&entry(), &a, &none).unwrap_err();
        assert!(
            e.contains("lead's own mode") && e.contains("at most default"),
            "{e}"
        );
    }

    #[test]
    fn more_tools_than_the_entry_or_the_lead_are_refused() {
        let mut a = ask();
        a.tools = Some(vec!["Write".into()]);
        let e = lead(Delegate).may_spawn(&entry(), &a, &none).unwrap_err();
        assert!(
            e.contains("\"Write\"") && e.contains("catalogue entry"),
            "{e}"
        );
        a.tools = Some(vec!["Bash(cargo test:*)".into()]);
        let e = lead(Default).may_spawn(&entry(), &a, &none).unwrap_err();
        assert!(e.contains("lead's own rules"), "{e}");
    }

    #[test]
    fn a_model_the_entry_or_the_lead_lacks_is_refused() {
        let mut a = ask();
        a.model = Some("huge".into());
        assert!(lead(Default)
            .may_spawn(&entry(), &a, &none)
            .unwrap_err()
            .contains("catalogue entry"));
        a.model = Some("smart".into());
        assert!(lead(Default)
            .may_spawn(&entry(), &a, &none)
            .unwrap_err()
            .contains("the lead may use itself"));
    }

    #[test]
    fn a_bigger_budget_than_the_entry_or_what_the_lead_has_left_is_refused() {
        let mut a = ask();
        a.budget_usd = Some(3.0);
        assert!(lead(Default)
            .may_spawn(&entry(), &a, &none)
            .unwrap_err()
            .contains("at most US$2"));
        a.budget_usd = Some(1.75);
        assert!(lead(Default)
            .may_spawn(&entry(), &a, &none)
            .unwrap_err()
            .contains("left to give: at most US$1.5"));
        a.budget_usd = Some(f64::NAN);
        assert!(lead(Default).may_spawn(&entry(), &a, &none).is_err());
        a.budget_usd = Some(1.0);
        assert_eq!(
            lead(Default)
                .may_spawn(&entry(), &a, &none)
                .unwrap()
                .budget_microdollars,
            Some(1_000_000)
        );
    }

    #[test]
    fn an_amount_that_is_not_microdollars_is_refused_never_saturated() {
        let mut l = lead(Delegate);
        l.budget_left_microdollars = None;
        let mut e = entry();
        e.budget_usd = None;
        let mut a = ask();
        for usd in [1e308, f64::INFINITY, -1.0] {
            a.budget_usd = Some(usd);
            let err = l.may_spawn(&e, &a, &none).unwrap_err();
            assert!(err.starts_with("the spawn's budget_usd"), "{err}");
        }
        // A catalogue entry's own amount is held to the same rule.
        e.budget_usd = Some(1e300);
        a.budget_usd = None;
        let err = l.may_spawn(&e, &a, &none).unwrap_err();
        assert!(err.contains("catalogue entry \"worker\""), "{err}");
    }

    #[test]
    fn an_unset_budget_is_charged_as_the_default_the_teammate_will_get() {
        let default = |_: &str| Some(1_000_000);
        let mut e = entry();
        e.budget_usd = None;
        let mut l = lead(Default);
        l.budget_left_microdollars = Some(1_000_000);
        let g = l.may_spawn(&e, &ask(), &default).unwrap();
        assert_eq!(g.budget_microdollars, Some(1_000_000));
        l.budget_left_microdollars = Some(999_999);
        let err = l.may_spawn(&e, &ask(), &default).unwrap_err();
        assert!(
            err.contains("default cost budget of US$1")
                && err.contains("at most US$0.999999")
                && err.contains("budget_usd"),
            "{err}"
        );
        // A free or unpriced model gets no cost budget: nothing to charge.
        assert_eq!(
            l.may_spawn(&e, &ask(), &none).unwrap().budget_microdollars,
            None
        );
    }
}
