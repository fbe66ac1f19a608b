//! What [`Host::start_lead`](crate::embed::Host::start_lead) takes: the lead
//! component and its own grant ([`LeadSpec`]), and the catalogue of
//! components it may spawn, each with the most it may be given
//! ([`CatalogueEntry`]). A manifest's `[lead]` table and `[[catalogue]]`
//! entries build these (`manifest/lead_spec.rs`).

use std::path::PathBuf;

use crate::sandbox::{Limits, PermissionMode, ToolRules};
use crate::teammate::{Isolation, TeammateSettings};

/// A team's lead component and its grant.
///
/// [`LeadSpec::new`] fills the defaults: mode `delegate`, no tool rules, no
/// model, no catalogue, at most [`DEFAULT_MAX_TEAMMATES`] teammates at once
/// and [`DEFAULT_MAX_SPAWNS_TOTAL`] over its life, at most
/// [`DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN`] refused answers recorded per turn
/// and [`DEFAULT_MAX_REFUSED_ANSWERS_TOTAL`] over its life, teammates
/// without a `cwd` of their own working in `{work_dir}/{name}`.
#[derive(Debug, Clone)]
pub struct LeadSpec {
    /// The lead component (`.wasm`, the `lead` world).
    pub component: PathBuf,
    /// The goal: the lead's first message.
    pub goal: String,
    /// The lead's own directory.
    pub cwd: PathBuf,
    /// Where a catalogue entry without a `cwd` puts each teammate
    /// (`{work_dir}/{name}`, made at spawn).
    pub work_dir: PathBuf,
    /// How the lead runs: its mode (`delegate` by default), tool rules,
    /// model and model policy, limits. Its allow rules, models and model
    /// budget are also the most it may give a teammate (see
    /// [`crate::embed::LeadGrant`]).
    pub settings: TeammateSettings,
    /// What it may spawn, in the manifest's order.
    pub catalogue: Vec<CatalogueEntry>,
    /// The most teammates it may have at once.
    pub max_teammates: usize,
    /// The most teammates it may spawn over its life: a teammate that was
    /// shut down frees its place among `max_teammates`, not here (the
    /// manifest's `[lead] max_spawns_total`).
    pub max_spawns_total: usize,
    /// The most of its answers refused (escalated to the person) in one
    /// turn that are recorded as escalations; later refusals of the turn are
    /// refused without a record (`[lead] max_refused_answers_per_turn`).
    pub max_refused_answers_per_turn: u32,
    /// The same over its life (`[lead] max_refused_answers_total`).
    pub max_refused_answers_total: u32,
}

/// [`LeadSpec::max_teammates`] by default.
pub const DEFAULT_MAX_TEAMMATES: usize = 8;

/// [`LeadSpec::max_spawns_total`] by default: four lives of a full team.
pub const DEFAULT_MAX_SPAWNS_TOTAL: usize = 4 * DEFAULT_MAX_TEAMMATES;

/// [`LeadSpec::max_refused_answers_per_turn`] by default.
pub const DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN: u32 = 10;

/// [`LeadSpec::max_refused_answers_total`] by default.
pub const DEFAULT_MAX_REFUSED_ANSWERS_TOTAL: u32 = 200;

impl LeadSpec {
    /// A lead with the documented defaults.
    pub fn new(
        component: impl Into<PathBuf>,
        goal: impl Into<String>,
        cwd: impl Into<PathBuf>,
        work_dir: impl Into<PathBuf>,
    ) -> LeadSpec {
        LeadSpec {
            component: component.into(),
            goal: goal.into(),
            cwd: cwd.into(),
            work_dir: work_dir.into(),
            settings: TeammateSettings {
                mode: Some(PermissionMode::Delegate),
                auto_claim: false,
                ..TeammateSettings::default()
            },
            catalogue: Vec::new(),
            max_teammates: DEFAULT_MAX_TEAMMATES,
            max_spawns_total: DEFAULT_MAX_SPAWNS_TOTAL,
            max_refused_answers_per_turn: DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN,
            max_refused_answers_total: DEFAULT_MAX_REFUSED_ANSWERS_TOTAL,
        }
    }
}

/// One component a lead may spawn and the most a teammate from it may be
/// given. [`CatalogueEntry::new`]: no description, its own directory under
/// the lead's `work_dir`, `max_mode` `default`, no tool rules, no models,
/// no budget, default limits, no worktree, auto-claim on.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueEntry {
    /// What a spawn names (the `Agent` tool's `subagent_type`).
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Its component.
    pub component: PathBuf,
    /// The directory its teammates work in (`None`: `{work_dir}/{name}`
    /// per teammate).
    pub cwd: Option<PathBuf>,
    /// The widest mode a teammate from it may have.
    pub max_mode: PermissionMode,
    /// Allow rules: the most tools it may be given. Deny rules: always
    /// applied to its teammates.
    pub rules: ToolRules,
    /// The model aliases its teammates may use (the first by default).
    pub models: Vec<String>,
    /// The most one teammate from it may spend on models, in US dollars.
    pub budget_usd: Option<f64>,
    /// Its teammates' limits (memory, CPU, wall time, disk, output).
    pub limits: Limits,
    /// A git worktree per teammate, or the directory itself.
    pub isolation: Isolation,
    /// Its teammates claim open tasks when idle.
    pub auto_claim: bool,
}

impl CatalogueEntry {
    /// An entry with the documented defaults.
    pub fn new(name: impl Into<String>, component: impl Into<PathBuf>) -> CatalogueEntry {
        CatalogueEntry {
            name: name.into(),
            description: String::new(),
            component: component.into(),
            cwd: None,
            max_mode: PermissionMode::Default,
            rules: ToolRules::default(),
            models: Vec::new(),
            budget_usd: None,
            limits: Limits::default(),
            isolation: Isolation::None,
            auto_claim: true,
        }
    }
}
