//! Who decides a request (approval routing), and what the
//! policy answers. Pure: the manifest's `[approvals]` becomes [`Routes`]
//! (`manifest/approvals_spec.rs`), and the host asks it per request.
//!
//! | step | rule |
//! |---|---|
//! | 1 | a request of the lead itself: always [`Decider::Person`] (a lead never approves its own request) |
//! | 2 | the first [`Route`] that binds the requester and **covers** the request, in the manifest's order; else [`Routes::default_decider`] |
//! | 3 | any route that binds the requester, **touches** the request and names a stricter decider than step 2's wins over it (the strictest; the first of equals) |
//!
//! A route binds a requester by member name (`teammate`: a name or `*`) or
//! by catalogue entry (`entry`: every member a lead spawned from that entry,
//! whatever name it chose; the member's `agentType` in the team's config,
//! which only the host writes).
//!
//! A route's `tool` is `*` (every request), `plan` (a plan), a tool name
//! (`Bash`, `Network`, also one teamhost has no tool for) or a rule in the
//! reference's syntax (`Bash(git push:*)`, `Edit(src/**)`,
//! `Network(domain:*.pypi.org)`: a network question about a host the
//! pattern matches, as the teammate's network rules match hosts). It **covers** a call the
//! way an allow rule would (every part of a compound command, the real
//! path of a file) and **touches** a call the way a deny rule would (any
//! part of a compound command, `/bin/rm` for `rm`, a link to a named path).
//! So a route can only move a request towards a stricter decider by
//! spelling: `cd . && rm -f x` and `/bin/rm -f x` reach the person a
//! `Bash(rm:*)` route names, and `cargo test && curl …` is not handed to
//! the policy by a `Bash(cargo test:*)` route unless the default is the
//! lead (the policy then denies or escalates what its rules do not allow).
//!
//! Strictness ([`Decider::strictness`]): the person, then the policy (the
//! person's own written rules, which escalate to the person what they do
//! not name), then the lead (an agent deciding within its grant).
//!
//! The policy ([`Policy`]) answers with its own allow and deny rules
//! ([`crate::sandbox::rules_verdict`]): deny wins, a call neither names is
//! escalated to the person, and a plan is approved only when
//! `plans = "approve"`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Decider, Request};
use crate::network::{Host, HostPattern};
use crate::protocol::PermissionRequest;
use crate::sandbox::{
    rules_verdict, BashInput, EditInput, GlobInput, GrepInput, PolicyContext, ReadInput, Rule,
    RuleVerdict, Specifier, ToolCall, ToolRules, WriteInput,
};

/// What a route's `tool` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolMatch {
    /// `*`: every request.
    Any,
    /// `plan`: plan approval requests.
    Plan,
    /// A rule (`Bash`, `Bash(git push:*)`), matched against permission
    /// requests' calls. A bare name teamhost has no tool for matches a
    /// request for that tool name.
    Rule(String),
}

/// One `[[approvals.route]]`: who decides the requests for `tool` of
/// `teammate`, or of every member spawned from catalogue `entry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// A member name, or `*` for every teammate; empty when `entry` is
    /// given.
    #[serde(default)]
    pub teammate: String,
    /// A catalogue entry: the route binds every member the lead spawned
    /// from it. Exactly one of `teammate` and `entry` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// `*`, `plan`, a tool name or a rule.
    pub tool: String,
    /// Who decides.
    pub decider: Decider,
}

/// What the policy does with a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanPolicy {
    /// Escalate it to the person (the default: no rule reads a plan).
    #[default]
    Person,
    /// Approve it (the teammate leaves plan mode for `default`).
    Approve,
}

/// `[approvals.policy]`: the rules the host answers with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Calls it allows (reference syntax).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Calls it denies; wins over `allow`.
    #[serde(default)]
    pub deny: Vec<String>,
    /// What it does with a plan.
    #[serde(default)]
    pub plans: PlanPolicy,
}

/// The policy's answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyVerdict {
    /// Allow the call / approve the plan; why.
    Allow(String),
    /// Deny the call; why (given to the teammate).
    Deny(String),
    /// Neither: the person decides; why.
    Escalate(String),
}

/// A team's approval routes. Built by [`Routes::new`] (which checks every
/// rule), kept in the home as JSON (see `home::decisions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RoutesText", into = "RoutesText")]
pub struct Routes {
    text: RoutesText,
    policy_rules: ToolRules,
}

/// The serialised form: what the manifest said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutesText {
    default: Decider,
    #[serde(default)]
    routes: Vec<Route>,
    #[serde(default)]
    policy: Policy,
}

impl TryFrom<RoutesText> for Routes {
    type Error = String;
    fn try_from(t: RoutesText) -> Result<Routes, String> {
        Routes::new(t.default, t.routes, t.policy)
    }
}

impl From<Routes> for RoutesText {
    fn from(r: Routes) -> RoutesText {
        r.text
    }
}

impl Routes {
    /// Routes with `default` for what no route names, checked: each route's
    /// `tool` is `*`, `plan` or a rule that parses, and each policy rule
    /// parses. `Err` names the bad item and how to write it.
    pub fn new(default: Decider, routes: Vec<Route>, policy: Policy) -> Result<Routes, String> {
        for (i, r) in routes.iter().enumerate() {
            match (&r.entry, r.teammate.trim().is_empty()) {
                (None, true) => {
                    return Err(format!(
                        "[[approvals.route]] #{}: teammate is empty; name a member, \"*\", or a \
                         catalogue entry with entry = \"…\"",
                        i + 1
                    ))
                }
                (Some(e), _) if e.trim().is_empty() => {
                    return Err(format!(
                        "[[approvals.route]] #{}: entry is empty; name a [[catalogue]] entry",
                        i + 1
                    ))
                }
                (Some(_), false) => {
                    return Err(format!(
                        "[[approvals.route]] #{}: give teammate or entry, not both (a route \
                         binds members by name or by the catalogue entry they were spawned from)",
                        i + 1
                    ))
                }
                _ => {}
            }
            if let ToolMatch::Rule(rule) = tool_match(&r.tool) {
                Rule::parse(&rule).map_err(|e| {
                    format!(
                        "[[approvals.route]] #{} tool {:?}: {e}; write \"*\", \"plan\", a tool \
                         name (\"Bash\") or a rule (\"Bash(git push:*)\")",
                        i + 1,
                        r.tool
                    )
                })?;
            }
        }
        let policy_rules = ToolRules::new(&policy.allow, &policy.deny)
            .map_err(|e| format!("[approvals.policy]: {e}"))?;
        Ok(Routes {
            text: RoutesText {
                default,
                routes,
                policy,
            },
            policy_rules,
        })
    }

    /// Everything to `decider`, no routes, an empty policy.
    pub fn all_to(decider: Decider) -> Routes {
        Routes::new(decider, Vec::new(), Policy::default()).expect("no rules to parse")
    }

    /// Who decides what no route names.
    pub fn default_decider(&self) -> Decider {
        self.text.default
    }

    /// The routes, in order.
    pub fn routes(&self) -> &[Route] {
        &self.text.routes
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.text.policy
    }

    /// Whether any request can be the policy's to answer: the default or
    /// some route names it. When none can, the policy desk has nothing to do.
    pub fn reaches_policy(&self) -> bool {
        self.text.default == Decider::Policy
            || self
                .text
                .routes
                .iter()
                .any(|r| r.decider == Decider::Policy)
    }

    /// Who decides `request` in a team whose lead is `lead_name`, from
    /// `requester` (see the module docs' table). A request of the lead
    /// itself always goes to the person.
    pub fn decider_for(
        &self,
        request: &Request,
        lead_name: &str,
        requester: &Requester,
    ) -> Decider {
        if request.from() == lead_name {
            return Decider::Person;
        }
        let binding: Vec<&Route> = self
            .text
            .routes
            .iter()
            .filter(|r| r.binds(request.from(), requester.entry.as_deref()))
            .collect();
        let covered = binding
            .iter()
            .find(|r| tool_matches(&r.tool, request, &requester.cwd, Reach::Covers))
            .map_or(self.text.default, |r| r.decider);
        binding
            .iter()
            .filter(|r| r.decider.strictness() > covered.strictness())
            .filter(|r| tool_matches(&r.tool, request, &requester.cwd, Reach::Touches))
            .map(|r| r.decider)
            .fold(covered, |most, d| {
                if d.strictness() > most.strictness() {
                    d
                } else {
                    most
                }
            })
    }

    /// The policy's answer to `request` (`cwd`: the requester's directory).
    pub fn policy_verdict(&self, request: &Request, cwd: &Path) -> PolicyVerdict {
        match request {
            Request::Plan(_) => match self.text.policy.plans {
                PlanPolicy::Approve => {
                    PolicyVerdict::Allow("the approval policy approves every plan".into())
                }
                PlanPolicy::Person => PolicyVerdict::Escalate(
                    "the approval policy leaves plans to the person (plans = \"person\")".into(),
                ),
            },
            Request::Permission(p) => match verdict(&self.policy_rules, p, cwd) {
                RuleVerdict::Denied(rule) => {
                    PolicyVerdict::Deny(format!("denied by the approval policy's rule `{rule}`"))
                }
                RuleVerdict::Allowed(rules) => PolicyVerdict::Allow(format!(
                    "allowed by the approval policy's rule `{}`",
                    rules.join("`, `")
                )),
                RuleVerdict::Neither => PolicyVerdict::Escalate(format!(
                    "no rule of the approval policy names this {} call",
                    p.tool_name
                )),
            },
        }
    }
}

fn tool_match(tool: &str) -> ToolMatch {
    match tool.trim() {
        "*" => ToolMatch::Any,
        "plan" => ToolMatch::Plan,
        other => ToolMatch::Rule(other.to_string()),
    }
}

impl Route {
    /// Whether this route binds member `name`, spawned from catalogue
    /// entry `entry` (if any).
    fn binds(&self, name: &str, entry: Option<&str>) -> bool {
        match &self.entry {
            Some(e) => entry == Some(e.as_str()),
            None => self.teammate == "*" || self.teammate == name,
        }
    }
}

/// What the routes need to know of the member that asks, besides its
/// name: read from the team's config by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    /// Its directory: path rules are read against it.
    pub cwd: std::path::PathBuf,
    /// The catalogue entry a lead spawned it from (its `agentType`).
    pub entry: Option<String>,
}

impl Requester {
    /// A requester in `cwd`, spawned from no catalogue entry.
    pub fn at(cwd: impl Into<std::path::PathBuf>) -> Requester {
        Requester {
            cwd: cwd.into(),
            entry: None,
        }
    }
}

/// How a route's rule is matched against a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// As an allow rule: the rule covers the whole call.
    Covers,
    /// As a deny rule: the rule names some part of the call.
    Touches,
}

fn tool_matches(tool: &str, request: &Request, cwd: &Path, reach: Reach) -> bool {
    match (tool_match(tool), request) {
        (ToolMatch::Any, _) => true,
        (ToolMatch::Plan, Request::Plan(_)) => true,
        (ToolMatch::Plan, Request::Permission(_)) | (ToolMatch::Rule(_), Request::Plan(_)) => false,
        (ToolMatch::Rule(rule), Request::Permission(p)) => {
            let one = [rule.as_str()];
            let none: [&str; 0] = [];
            let rules = match reach {
                Reach::Covers => ToolRules::new(one, none),
                Reach::Touches => ToolRules::new(none, one),
            };
            match (rules, reach) {
                (Ok(rules), Reach::Covers) => {
                    matches!(verdict(&rules, p, cwd), RuleVerdict::Allowed(_))
                }
                (Ok(rules), Reach::Touches) => {
                    matches!(verdict(&rules, p, cwd), RuleVerdict::Denied(_))
                }
                (Err(_), _) => false,
            }
        }
    }
}

/// The rules' verdict on a permission request's call. A tool teamhost runs
/// (Read, Write, Edit, Glob, Grep, Bash) is matched like the sandbox does;
/// any other tool name (a coordination call, one teamhost has no tool for)
/// only by a bare rule naming it exactly. An input that does not parse as
/// the tool's matches no rule.
fn verdict(rules: &ToolRules, p: &PermissionRequest, cwd: &Path) -> RuleVerdict {
    let Some(call) = tool_call(&p.tool_name, &p.input) else {
        let named = |list: &[Rule]| {
            list.iter()
                .find(|r| (r.specifier().is_none() && r.text() == p.tool_name) || names_host(r, p))
                .map(|r| r.to_string())
        };
        if let Some(rule) = named(rules.disallowed()) {
            return RuleVerdict::Denied(rule);
        }
        return match named(rules.allowed()) {
            Some(rule) => RuleVerdict::Allowed(vec![rule]),
            None => RuleVerdict::Neither,
        };
    };
    rules_verdict(rules, &call, &PolicyContext::new(cwd))
}

/// Whether `rule` is `Network(domain:PATTERN)` and `p` a network question
/// (tool `Network`, input `{"host", "port"}`) about a host `PATTERN`
/// matches, as the teammate's own network rules would match it
/// (`*.example.com` is the names below it; an address only itself).
fn names_host(rule: &Rule, p: &PermissionRequest) -> bool {
    const NETWORK: &str = "Network";
    if p.tool_name != NETWORK {
        return false;
    }
    let Some(Specifier::Opaque(spec)) = rule.specifier() else {
        return false;
    };
    let Some(pattern) = rule
        .text()
        .strip_prefix(NETWORK)
        .and(spec.strip_prefix("domain:"))
    else {
        return false;
    };
    let (Ok(pattern), Some(Ok(host))) = (
        HostPattern::parse(pattern),
        p.input["host"].as_str().map(Host::parse),
    ) else {
        return false;
    };
    pattern.matches_host(&host)
}

/// A permission request's call as the sandbox classifies it, with `input`
/// (the request's, or a replacement): `None` for a tool teamhost does not
/// run itself, or an input that does not parse as the tool's.
pub fn tool_call(tool: &str, input: &Value) -> Option<ToolCall> {
    let input = input.clone();
    Some(match tool {
        "Read" => ToolCall::Read(serde_json::from_value::<ReadInput>(input).ok()?),
        "Write" => ToolCall::Write(serde_json::from_value::<WriteInput>(input).ok()?),
        "Edit" => ToolCall::Edit(serde_json::from_value::<EditInput>(input).ok()?),
        "Glob" => ToolCall::Glob(serde_json::from_value::<GlobInput>(input).ok()?),
        "Grep" => ToolCall::Grep(serde_json::from_value::<GrepInput>(input).ok()?),
        "Bash" => ToolCall::Bash(serde_json::from_value::<BashInput>(input).ok()?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
