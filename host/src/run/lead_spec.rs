//! The manifest's `[lead]` table and `[[catalogue]]` entries as the
//! [`LeadSpec`] that [`Host::start_lead`](crate::embed::Host::start_lead)
//! takes (here, above both, because the manifest sits below `embed`).

use std::path::Path;

use crate::embed::{CatalogueEntry, LeadSpec};
use crate::manifest::{teammate_policy, CatalogueSpec, IsolationSpec, LeadTable};
use crate::store::config::LEAD_NAME;
use crate::teammate::TeammateSettings;

/// The lead to start: `component` and `goal` are the CLI's when given,
/// else the table's. Only for a validated manifest.
pub(super) fn lead_spec(
    table: &LeadTable,
    base: &Path,
    component: Option<&Path>,
    goal: &str,
    catalogue: &[CatalogueSpec],
) -> Result<LeadSpec, String> {
    let component = component
        .map(Path::to_path_buf)
        .unwrap_or_else(|| table.component.clone());
    if component.as_os_str().is_empty() {
        return Err(
            "[lead] has no component: add `component = \"lead.wasm\"` or pass --lead COMPONENT"
                .into(),
        );
    }
    let (mode, rules) = table.mode_and_rules();
    let mut spec = LeadSpec::new(component, goal, &table.cwd, base.join("work"));
    spec.settings = TeammateSettings {
        agent_type: Some(LEAD_NAME.into()),
        model: table.model.clone(),
        mode: Some(mode),
        rules,
        auto_claim: false,
        limits: lead_limits(&table.limits),
        model_policy: teammate_policy(table.model.as_deref(), table.model_policy.as_ref())?,
        ..TeammateSettings::default()
    };
    spec.max_teammates = table.max_teammates;
    spec.max_spawns_total = table.max_spawns_total;
    spec.max_refused_answers_per_turn = table.max_refused_answers_per_turn;
    spec.max_refused_answers_total = table.max_refused_answers_total;
    spec.catalogue = catalogue.iter().map(catalogue_entry).collect();
    Ok(spec)
}

/// A `[[catalogue]]` entry as the seat takes it.
pub(super) fn catalogue_entry(c: &CatalogueSpec) -> CatalogueEntry {
    let (max_mode, rules) = c.max_mode_and_rules();
    CatalogueEntry {
        name: c.name.clone(),
        description: c.description.clone(),
        component: c.component.clone(),
        cwd: (!c.cwd.as_os_str().is_empty()).then(|| c.cwd.clone()),
        max_mode,
        rules,
        models: c.models.clone(),
        budget_usd: c.budget_usd,
        limits: c.limits.to_limits(),
        isolation: match c.isolation {
            IsolationSpec::None => crate::teammate::Isolation::None,
            IsolationSpec::Worktree => crate::teammate::Isolation::Worktree,
        },
        auto_claim: c.auto_claim,
    }
}

/// The lead's limits: a teammate's, except that a lead breaks a goal into
/// tasks, so unless `[lead.limits]` says otherwise it may create as many in
/// one turn as over its life (a teammate's 100 per turn would trap a lead
/// whose plan has 101).
fn lead_limits(table: &crate::manifest::LimitsSpec) -> crate::sandbox::Limits {
    let mut limits = table.to_limits();
    if table.max_tasks_per_turn.is_none() {
        limits.max_tasks_per_turn = limits.max_tasks_total;
    }
    limits
}

#[cfg(test)]
mod tests {
    use crate::manifest::Manifest;
    use crate::sandbox::PermissionMode;

    #[test]
    fn a_manifest_lead_becomes_the_spec_with_its_defaults_and_the_clis_component_wins() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["lead.wasm", "other.wasm", "worker.wasm"] {
            std::fs::write(dir.path().join(f), b"").unwrap();
        }
        let file = dir.path().join("team.toml");
        let text = "[team]\nname = \"led\"\n[lead]\ncomponent = \"lead.wasm\"\n\
                    [[catalogue]]\nname = \"worker\"\ncomponent = \"worker.wasm\"\nmax_mode = \"acceptEdits\"\nallowed_tools = [\"Read\"]\n";
        let m = Manifest::parse(text, &file).unwrap();
        let lead = m.lead.as_ref().unwrap();
        let spec = super::lead_spec(lead, dir.path(), None, "the goal", &m.catalogue).unwrap();
        assert_eq!(spec.settings.mode, Some(PermissionMode::Delegate));
        assert_eq!(spec.max_teammates, 8);
        assert_eq!(
            spec.max_spawns_total,
            crate::embed::DEFAULT_MAX_SPAWNS_TOTAL
        );
        assert_eq!(
            spec.max_refused_answers_per_turn,
            crate::embed::DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN
        );
        assert_eq!(
            spec.max_refused_answers_total,
            crate::embed::DEFAULT_MAX_REFUSED_ANSWERS_TOTAL
        );
        assert_eq!(spec.goal, "the goal");
        assert!(spec.cwd.ends_with("work/team-lead"));
        assert_eq!(spec.catalogue[0].max_mode, PermissionMode::AcceptEdits);
        assert_eq!(spec.catalogue[0].rules.allowed_texts(), ["Read"]);
        // A lead may create as many tasks in one turn as over its life.
        assert_eq!(
            spec.settings.limits.max_tasks_per_turn,
            spec.settings.limits.max_tasks_total
        );
        let other = dir.path().join("other.wasm");
        let spec = super::lead_spec(lead, dir.path(), Some(&other), "g", &m.catalogue).unwrap();
        assert_eq!(spec.component, other);
    }
}
