//! `[approvals]`: who decides each permission request and plan (approval
//! routing), becoming [`Routes`] (`approvals/route.rs` has the
//! rules of the decision).
//!
//! ```toml
//! [approvals]
//! default = "lead"                  # lead | person | policy; default: lead when the team has a lead component, else person
//! [approvals.policy]                # what "policy" answers
//! allow = ["Bash(cargo test:*)"]    # rules in the reference's syntax
//! deny = ["Bash(rm:*)"]             # wins over allow; a call neither names goes to the person
//! plans = "person"                  # person (default) | approve
//! [[approvals.route]]               # zero or more; the first match wins, before `default`
//! teammate = "fixer"                # a member name, or "*"; or instead:
//! # entry = "fixer"                 # a [[catalogue]] entry: every member the lead spawns from it
//! tool = "Bash(git push:*)"         # "*", "plan", a tool name or a rule
//! decider = "person"
//! ```
//!
//! | key | default | checked |
//! |---|---|---|
//! | `default` | `lead` with a lead component, else `person` | `lead`, `person` or `policy` |
//! | `policy.allow`, `policy.deny` | `[]` | each rule parses |
//! | `policy.plans` | `person` | `person` or `approve` |
//! | `route.teammate` or `route.entry` | one of them required | a name or `*`; a `[[catalogue]]` entry's name |
//! | `route.tool`, `route.decider` | required | `*`, `plan`, a tool or a rule that parses; a decider |
//!
//! A lead's own requests always go to the person, whatever this says. How a
//! route matches (a route to a stricter decider catches any part of a
//! compound command) is `approvals/route.rs`'s table.

use serde::Deserialize;

use crate::approvals::{Decider, PlanPolicy, Policy, Route, Routes};

/// `[approvals]`. Every key optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsSpec {
    /// Who decides what no route names (`lead`, `person`, `policy`).
    pub default: Option<String>,
    /// `[approvals.policy]`.
    #[serde(default)]
    pub policy: PolicySpec,
    /// `[[approvals.route]]`, in order.
    #[serde(rename = "route", default)]
    pub routes: Vec<RouteSpec>,
}

/// `[approvals.policy]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Rules whose calls the policy allows.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules whose calls it denies (wins over `allow`).
    #[serde(default)]
    pub deny: Vec<String>,
    /// `person` (default) or `approve`.
    pub plans: Option<String>,
}

/// One `[[approvals.route]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// A member name or `*` (or empty with `entry`).
    #[serde(default)]
    pub teammate: String,
    /// A catalogue entry: binds every member spawned from it.
    pub entry: Option<String>,
    /// `*`, `plan`, a tool name or a rule.
    pub tool: String,
    /// `lead`, `person` or `policy`.
    pub decider: String,
}

fn decider(word: &str, key: &str) -> Result<Decider, String> {
    match word {
        "lead" => Ok(Decider::Lead),
        "person" => Ok(Decider::Person),
        "policy" => Ok(Decider::Policy),
        other => Err(format!(
            "{key}: unknown decider {other:?}; write \"lead\", \"person\" or \"policy\""
        )),
    }
}

impl ApprovalsSpec {
    /// The routes this section says, for a team that has a lead component
    /// (`has_lead`: the default decider is then the lead, else the person).
    /// `Err` lists every problem, naming the key and the fix.
    pub fn routes(&self, has_lead: bool) -> Result<Routes, Vec<String>> {
        let mut problems = Vec::new();
        let default = match &self.default {
            None if has_lead => Decider::Lead,
            None => Decider::Person,
            Some(word) => decider(word, "[approvals] default").unwrap_or_else(|e| {
                problems.push(e);
                Decider::Person
            }),
        };
        let plans = match self.policy.plans.as_deref() {
            None | Some("person") => PlanPolicy::Person,
            Some("approve") => PlanPolicy::Approve,
            Some(other) => {
                problems.push(format!(
                    "[approvals.policy] plans: unknown value {other:?}; write \"person\" (the \
                     person decides plans) or \"approve\" (the policy approves every plan)"
                ));
                PlanPolicy::Person
            }
        };
        let mut routes = Vec::new();
        for (i, r) in self.routes.iter().enumerate() {
            let key = format!("[[approvals.route]] #{} decider", i + 1);
            match decider(&r.decider, &key) {
                Ok(d) => routes.push(Route {
                    teammate: r.teammate.clone(),
                    entry: r.entry.clone(),
                    tool: r.tool.clone(),
                    decider: d,
                }),
                Err(e) => problems.push(e),
            }
        }
        if !has_lead
            && (default == Decider::Lead || routes.iter().any(|r| r.decider == Decider::Lead))
        {
            problems.push(
                "[approvals] sends requests to the lead, but this team has no lead component \
                 ([lead] or --lead): write \"person\" or \"policy\" instead"
                    .to_string(),
            );
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let policy = Policy {
            allow: self.policy.allow.clone(),
            deny: self.policy.deny.clone(),
            plans,
        };
        Routes::new(default, routes, policy).map_err(|e| vec![e])
    }

    /// Adds this section's problems to `problems` (see [`Self::routes`]).
    /// Whether the team has a lead is known only when it runs (`--lead`),
    /// so a route to the lead is checked there.
    pub(super) fn check(&self, problems: &mut Vec<String>) {
        if let Err(found) = self.routes(true) {
            problems.extend(found);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::manifest::Manifest;

    const BASE: &str = "[team]\nname = \"t\"\n[[teammate]]\nname = \"fixer\"\ncomponent = \"x.wasm\"\nprompt = \"p\"\n";

    /// The format layer only (the component need not exist).
    fn format(extra: &str) -> Manifest {
        toml::from_str(&format!("{BASE}{extra}")).unwrap()
    }

    /// All three layers: `Err` lists every problem.
    fn parse(extra: &str) -> Result<Manifest, String> {
        Manifest::parse(
            &format!("{BASE}{extra}"),
            Path::new("/nonexistent/team.toml"),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_approvals_section_becomes_routes() {
        let m = format(
            "[approvals]\ndefault = \"policy\"\n[approvals.policy]\nallow = [\"Bash(cargo test:*)\"]\ndeny = [\"Bash(rm:*)\"]\nplans = \"approve\"\n[[approvals.route]]\nteammate = \"fixer\"\ntool = \"plan\"\ndecider = \"person\"\n",
        );
        let routes = m.approvals.routes(true).unwrap();
        assert_eq!(routes.default_decider(), Decider::Policy);
        assert_eq!(routes.routes()[0].decider, Decider::Person);
        assert_eq!(routes.policy().plans, PlanPolicy::Approve);
    }

    /// A route binds catalogue spawns only through `entry`.
    #[test]
    fn a_route_naming_a_catalogue_entry_as_a_teammate_or_an_unknown_entry_is_refused() {
        let catalogue = "[[catalogue]]\nname = \"helper\"\ncomponent = \"y.wasm\"\n";
        let e = parse(&format!(
            "{catalogue}[[approvals.route]]\nteammate = \"helper\"\ntool = \"*\"\ndecider = \"person\"\n"
        ))
        .unwrap_err();
        assert!(
            e.contains("teammate \"helper\" is no [[teammate]] but a [[catalogue]] entry")
                && e.contains("entry = \"helper\""),
            "{e}"
        );
        let e = parse(&format!(
            "{catalogue}[[approvals.route]]\nentry = \"nobody\"\ntool = \"*\"\ndecider = \"person\"\n"
        ))
        .unwrap_err();
        assert!(
            e.contains("entry \"nobody\" is not a [[catalogue]] entry; name one of [helper]"),
            "{e}"
        );
        let e = parse(&format!(
            "{catalogue}[[approvals.route]]\nentry = \"helper\"\ntool = \"*\"\ndecider = \"person\"\n"
        ))
        .unwrap_err();
        assert!(
            !e.contains("[[approvals.route]]"),
            "an entry route is fine: {e}"
        );
    }

    #[test]
    fn the_default_is_the_lead_with_a_lead_component_else_the_person() {
        let m = format("");
        assert_eq!(
            m.approvals.routes(true).unwrap().default_decider(),
            Decider::Lead
        );
        assert_eq!(
            m.approvals.routes(false).unwrap().default_decider(),
            Decider::Person
        );
    }

    #[test]
    fn bad_deciders_keys_and_rules_are_named() {
        let e = parse("[approvals]\ndefault = \"boss\"\n").unwrap_err();
        assert!(
            e.contains("[approvals] default: unknown decider \"boss\""),
            "{e}"
        );
        let e = parse("[approvals]\nwho = \"lead\"\n").unwrap_err();
        assert!(e.contains("who"), "{e}");
        let e = parse("[approvals.policy]\nallow = [\"Bash(\"]\n").unwrap_err();
        assert!(e.contains("[approvals.policy]"), "{e}");
        let e =
            parse("[[approvals.route]]\nteammate = \"*\"\ntool = \"Bash\"\ndecider = \"robot\"\n")
                .unwrap_err();
        assert!(e.contains("[[approvals.route]] #1 decider"), "{e}");
        let e = parse("[approvals.policy]\nplans = \"maybe\"\n").unwrap_err();
        assert!(e.contains("plans"), "{e}");
    }
}
