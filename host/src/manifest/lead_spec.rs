//! A manifest's `[lead]` table and `[[catalogue]]` entries: the
//! component that leads the team, and what it may spawn.
//!
//! | key | default | checked |
//! |---|---|---|
//! | `lead.component` | required (or `--lead`) | the file exists (or `build` makes it) |
//! | `lead.goal` | none (`--goal` wins; one of them is needed) | not empty |
//! | `lead.mode` | `delegate` | a permission mode |
//! | `lead.allowed_tools`, `disallowed_tools` | `[]` | each rule parses |
//! | `lead.model`, `lead.model_policy` | no model | as a teammate's |
//! | `lead.max_teammates` | 8 | positive |
//! | `lead.max_spawns_total` | 32 | positive: teammates spawned over the lead's life |
//! | `lead.max_refused_answers_per_turn` | 10 | positive: refused answers recorded as escalations per turn |
//! | `lead.max_refused_answers_total` | 200 | positive: the same over the lead's life |
//! | `lead.cwd` | `work/team-lead` beside the manifest, made at start | a directory when given |
//! | `lead.limits` | the default limits | positive |
//! | `catalogue.name` | required | a new member's name (`store::names::check_new_member_name`: not `team-lead`, `user`, `teamhost`, `system` nor a look-alike), unique and not like an earlier entry |
//! | `catalogue.description` | empty | |
//! | `catalogue.component` | required | the file exists (or `build` makes it) |
//! | `catalogue.cwd` | `work/{member}` per teammate | a directory when given |
//! | `catalogue.max_mode` | `default` | a permission mode |
//! | `catalogue.allowed_tools` | `[]` | each rule parses: the most it may be given |
//! | `catalogue.disallowed_tools` | `[]` | each rule parses: always applied |
//! | `catalogue.models` | `[]` | the aliases it may use |
//! | `catalogue.budget_usd` | none | ≥ 0, and fits in microdollars |
//! | `catalogue.limits`, `isolation`, `auto_claim` | as a teammate's | as a teammate's |
//!
//! A lead never names a path: everything it may spawn is here. The CLI
//! turns these into `embed::LeadSpec` (`cli/run/lead.rs`): the manifest
//! sits below `embed`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{BuildSpec, IsolationSpec, LimitsSpec, ModelPolicySpec};
use crate::sandbox::{PermissionMode, ToolRules};
use crate::store::config::LEAD_NAME;
use crate::store::names::{check_distinct, check_new_member_name};

/// `[lead]`: the team's lead component.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeadTable {
    /// The lead component (`lead` world). `--lead` wins.
    #[serde(default)]
    pub component: PathBuf,
    /// The goal (its first message). `--goal` wins.
    #[serde(default)]
    pub goal: Option<String>,
    /// Its permission mode. Default `delegate`.
    #[serde(default = "delegate")]
    pub mode: String,
    /// Its allow rules (also the most it may give a teammate unless it is
    /// in `delegate` or `bypassPermissions`).
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Its deny rules (also applied to every teammate it spawns).
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
    /// `mode` and the two rule lists as [`super::Manifest::validate`]
    /// parsed them, once: the lead's spec takes these and never parses
    /// again. `None` until validated (or when they did not parse, which
    /// validation reports).
    #[serde(skip)]
    typed: Option<(PermissionMode, ToolRules)>,
    /// Its model alias.
    #[serde(default)]
    pub model: Option<String>,
    /// Its models and budgets (the models and money it may give).
    #[serde(default)]
    pub model_policy: Option<ModelPolicySpec>,
    /// The most teammates at once. Default 8.
    #[serde(default = "eight")]
    pub max_teammates: usize,
    /// The most teammates spawned over its life. Default 32.
    #[serde(default = "thirty_two")]
    pub max_spawns_total: usize,
    /// Refused answers recorded as escalations per turn. Default 10.
    #[serde(default = "ten")]
    pub max_refused_answers_per_turn: u32,
    /// Refused answers recorded as escalations over its life. Default 200.
    #[serde(default = "two_hundred")]
    pub max_refused_answers_total: u32,
    /// Its directory. Default `work/team-lead`.
    #[serde(default)]
    pub cwd: PathBuf,
    /// Its limits.
    #[serde(default)]
    pub limits: LimitsSpec,
    /// How to build its component.
    #[serde(default)]
    pub build: Option<BuildSpec>,
}

/// One `[[catalogue]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogueSpec {
    /// The name a spawn names.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Its component.
    pub component: PathBuf,
    /// How to build it.
    #[serde(default)]
    pub build: Option<BuildSpec>,
    /// Its teammates' directory (default: `work/{member}` each).
    #[serde(default)]
    pub cwd: PathBuf,
    /// The widest mode. Default `default`.
    #[serde(default = "default_mode")]
    pub max_mode: String,
    /// The most tools.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Always denied.
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
    /// `max_mode` and the two rule lists as [`super::Manifest::validate`]
    /// parsed them, once: the lead's spec takes these and never parses
    /// again. `None` until validated (or when they did not parse, which
    /// validation reports).
    #[serde(skip)]
    typed: Option<(PermissionMode, ToolRules)>,
    /// The model aliases it may use.
    #[serde(default)]
    pub models: Vec<String>,
    /// The most one teammate may spend, US dollars.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// Limits.
    #[serde(default)]
    pub limits: LimitsSpec,
    /// `none` or `worktree`.
    #[serde(default)]
    pub isolation: IsolationSpec,
    /// Claims open tasks when idle. Default true.
    #[serde(default = "yes")]
    pub auto_claim: bool,
}

fn delegate() -> String {
    "delegate".into()
}
fn default_mode() -> String {
    "default".into()
}
/// `embed::DEFAULT_MAX_TEAMMATES` (the manifest sits below `embed`).
fn eight() -> usize {
    8
}
/// `embed::DEFAULT_MAX_SPAWNS_TOTAL`.
fn thirty_two() -> usize {
    32
}
/// `embed::DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN`.
fn ten() -> u32 {
    10
}
/// `embed::DEFAULT_MAX_REFUSED_ANSWERS_TOTAL`.
fn two_hundred() -> u32 {
    200
}
fn yes() -> bool {
    true
}

/// Joins relative paths to `base`.
pub(super) fn resolve_paths(
    lead: Option<&mut LeadTable>,
    catalogue: &mut [CatalogueSpec],
    base: &Path,
) {
    if let Some(l) = lead {
        if !l.component.as_os_str().is_empty() {
            l.component = base.join(&l.component);
        }
        l.cwd = if l.cwd.as_os_str().is_empty() {
            super::default_cwd(base, LEAD_NAME)
        } else {
            base.join(&l.cwd)
        };
        if let Some(b) = &mut l.build {
            b.resolve_paths(base);
        }
    }
    for c in catalogue {
        c.component = base.join(&c.component);
        if !c.cwd.as_os_str().is_empty() {
            c.cwd = base.join(&c.cwd);
        }
        if let Some(b) = &mut c.build {
            b.resolve_paths(base);
        }
    }
}

fn mode(text: &str, who: &str, key: &str, problems: &mut Vec<String>) -> Option<PermissionMode> {
    text.parse::<PermissionMode>()
        .map_err(|_| {
            let modes: Vec<&str> = PermissionMode::ALL.iter().map(|m| m.as_str()).collect();
            problems.push(format!(
                "{who}: {key} {text:?} is not a permission mode; use one of {}",
                modes.join(", ")
            ))
        })
        .ok()
}

/// Every problem of `[lead]` and `[[catalogue]]`, one line each.
pub(super) fn check(
    lead: Option<&mut LeadTable>,
    catalogue: &mut [CatalogueSpec],
    teammates: usize,
    problems: &mut Vec<String>,
) {
    if let Some(l) = lead {
        let who = "[lead]";
        if teammates > 0 {
            problems.push(format!(
                "{who}: a team with a lead component has no [[teammate]] entries: the lead spawns its teammates from [[catalogue]]; move them there"
            ));
        }
        if catalogue.is_empty() {
            problems.push(format!(
                "{who}: no [[catalogue]] entry: add the components the lead may spawn"
            ));
        }
        if l.build.is_none() && !l.component.as_os_str().is_empty() && !l.component.is_file() {
            problems.push(format!(
                "{who}: component {} does not exist; fix the path or build it first",
                l.component.display()
            ));
        }
        if l.goal.as_deref().is_some_and(|g| g.trim().is_empty()) {
            problems.push(format!(
                "{who}: goal is empty; say what the team is for, or leave it out and pass --goal"
            ));
        }
        let parsed = mode(&l.mode, who, "mode", problems);
        let rules = ToolRules::new(&l.allowed_tools, &l.disallowed_tools)
            .map_err(|e| problems.push(format!("{who}: {e}")));
        l.typed = parsed.zip(rules.ok());
        if let Err(e) = super::teammate_policy(l.model.as_deref(), l.model_policy.as_ref()) {
            problems.push(format!("{who}: {e}"));
        }
        for (key, zero, default) in [
            ("max_teammates", l.max_teammates == 0, "8"),
            ("max_spawns_total", l.max_spawns_total == 0, "32"),
            (
                "max_refused_answers_per_turn",
                l.max_refused_answers_per_turn == 0,
                "10",
            ),
            (
                "max_refused_answers_total",
                l.max_refused_answers_total == 0,
                "200",
            ),
        ] {
            if zero {
                problems.push(format!(
                    "{who}: {key} is 0; leave it out for {default} or give a positive number"
                ));
            }
        }
    }
    let mut seen = BTreeSet::new();
    for (i, c) in catalogue.iter_mut().enumerate() {
        let who = format!("catalogue entry {:?} ([[catalogue]] #{})", c.name, i + 1);
        if let Err(e) = check_new_member_name(&c.name) {
            problems.push(format!("{who}: name: {e}"));
        } else if let Err(e) = check_distinct(&c.name, seen.iter().map(String::as_str)) {
            problems.push(format!("{who}: name: {e} (an earlier [[catalogue]] entry)"));
        } else if !seen.insert(c.name.clone()) {
            problems.push(format!(
                "{who}: name is used by an earlier entry; give each entry its own name"
            ));
        }
        if c.build.is_none() && !c.component.is_file() {
            problems.push(format!(
                "{who}: component {} does not exist; fix the path (relative to the manifest's directory) or build it first",
                c.component.display()
            ));
        }
        if !c.cwd.as_os_str().is_empty() && !c.cwd.is_dir() {
            problems.push(format!("{who}: cwd {} is not a directory", c.cwd.display()));
        }
        let parsed = mode(&c.max_mode, &who, "max_mode", problems);
        let rules = ToolRules::new(&c.allowed_tools, &c.disallowed_tools)
            .map_err(|e| problems.push(format!("{who}: {e}")));
        c.typed = parsed.zip(rules.ok());
        if let Some(Err(e)) = c.budget_usd.map(crate::model::policy::usd_to_microdollars) {
            problems.push(format!("{who}: {e}"));
        }
    }
}

impl LeadTable {
    /// The table `--lead` stands for when the manifest has none: its
    /// defaults, validated.
    pub fn from_cli() -> LeadTable {
        let mut table: LeadTable = toml::from_str("").expect("every key has a default");
        table.typed = Some((PermissionMode::Delegate, ToolRules::default()));
        table
    }

    /// The lead's mode and tool rules, as validation parsed them.
    ///
    /// # Panics
    ///
    /// When the table was not validated, or its mode or rules did not parse
    /// (validation refused the manifest then): a lead never runs on a mode
    /// or rules guessed here.
    pub fn mode_and_rules(&self) -> (PermissionMode, ToolRules) {
        self.typed
            .clone()
            .expect("[lead]: mode_and_rules() of a table Manifest::validate did not accept")
    }
}

impl CatalogueSpec {
    /// The entry's widest mode and its tool rules, as validation parsed
    /// them.
    ///
    /// # Panics
    ///
    /// When the entry was not validated, or did not parse (validation
    /// refused the manifest then).
    pub fn max_mode_and_rules(&self) -> (PermissionMode, ToolRules) {
        self.typed.clone().unwrap_or_else(|| {
            panic!(
                "catalogue entry {:?}: max_mode_and_rules() of an entry Manifest::validate did not accept",
                self.name
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::manifest::Manifest;

    fn dir_with_components() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        for f in ["lead.wasm", "worker.wasm"] {
            std::fs::write(dir.path().join(f), b"").unwrap();
        }
        let file = dir.path().join("team.toml");
        (dir, file)
    }

    const GOOD: &str = r#"
[team]
name = "led"
[lead]
component = "lead.wasm"
goal = "do it"
[[catalogue]]
name = "worker"
component = "worker.wasm"
max_mode = "acceptEdits"
allowed_tools = ["Read"]
"#;

    #[test]
    fn a_lead_and_its_catalogue_parse_with_their_defaults() {
        let (_d, file) = dir_with_components();
        let m = Manifest::parse(GOOD, &file).unwrap();
        let lead = m.lead.as_ref().unwrap();
        assert_eq!(lead.mode, "delegate");
        assert_eq!(lead.max_teammates, 8);
        assert_eq!(lead.max_spawns_total, 32);
        assert_eq!(lead.max_refused_answers_per_turn, 10);
        assert_eq!(lead.max_refused_answers_total, 200);
        assert!(lead.cwd.ends_with("work/team-lead"));
        assert_eq!(m.catalogue[0].max_mode, "acceptEdits");
        assert_eq!(m.catalogue[0].allowed_tools, ["Read"]);
        assert!(m.catalogue[0].component.is_absolute());
    }

    fn problems(text: &str) -> String {
        let (_d, file) = dir_with_components();
        match Manifest::parse(text, &file) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_bad_catalogue_entry_is_refused_naming_the_key() {
        let e = problems(&format!("{GOOD}colour = \"red\"\n"));
        assert!(e.contains("colour"), "{e}");
        let e = problems(&GOOD.replace("component = \"worker.wasm\"", ""));
        assert!(e.contains("component"), "{e}");
        let e = problems(&GOOD.replace("acceptEdits", "godMode"));
        assert!(e.contains("max_mode") && e.contains("godMode"), "{e}");
        let e = problems(&GOOD.replace("worker.wasm", "missing.wasm"));
        assert!(e.contains("missing.wasm"), "{e}");
        // A budget that does not fit in microdollars is refused, not cut.
        let e = problems(&format!("{GOOD}budget_usd = 1e308\n"));
        assert!(
            e.contains("budget_usd") && e.contains("more US dollars than teamhost can count"),
            "{e}"
        );
    }

    #[test]
    fn the_leads_life_limits_must_be_positive_naming_the_key() {
        for key in [
            "max_spawns_total",
            "max_refused_answers_per_turn",
            "max_refused_answers_total",
        ] {
            let e = problems(
                &GOOD.replace("goal = \"do it\"", &format!("goal = \"do it\"\n{key} = 0")),
            );
            assert!(e.contains(&format!("{key} is 0")), "{e}");
        }
    }

    #[test]
    fn a_lead_with_teammates_or_without_a_catalogue_is_refused() {
        let e = problems(&format!(
            "{GOOD}[[teammate]]\nname = \"x\"\ncomponent = \"worker.wasm\"\nprompt = \"p\"\n"
        ));
        assert!(e.contains("[[catalogue]]"), "{e}");
        let no_catalogue = GOOD.split("[[catalogue]]").next().unwrap();
        let e = problems(no_catalogue);
        assert!(e.contains("no [[catalogue]] entry"), "{e}");
    }
}
