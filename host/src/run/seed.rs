//! A fresh run's tasks: the manifest's `[[task]]`s created in order, then
//! their dependencies.

use anyhow::Context;

use crate::manifest::Manifest;
use crate::store::Team;

/// Creates the manifest's tasks in order, then their dependencies (a task may
/// be blocked by a later one). Returns the ids, by manifest position.
pub(super) fn seed_tasks(team: &Team, m: &Manifest) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::with_capacity(m.tasks.len());
    for (i, t) in m.tasks.iter().enumerate() {
        let task = team
            .create_task(t.new_task())
            .with_context(|| format!("cannot create task {} ({:?})", i + 1, t.subject))?;
        ids.push(task.id);
    }
    for (i, t) in m.tasks.iter().enumerate() {
        for &b in &t.blocked_by {
            team.add_dependency(&ids[b - 1], &ids[i])
                .with_context(|| format!("cannot make task {} blocked by {b}", i + 1))?;
        }
    }
    Ok(ids)
}
