//! A run's layout, checked before anything starts: no teammate's directory
//! may hold the manifest, a component, the home, the component cache, a
//! model file or a path the caller protects, nor lie inside the home
//! ([`crate::layout`]); then the default directories (`work/{name}` beside
//! the manifest, for teammates without `cwd`) are made.

use std::path::Path;

use anyhow::Context;

use crate::embed::ModelAccess;
use crate::layout::{Checker, Protected};
use crate::manifest::{IsolationSpec, Manifest};

/// The checker for a run of `m` (loaded from `file`) on the home at `home`:
/// it protects the home's paths, the manifest and its components,
/// `models`' files and `extra`.
pub fn layout_checker(
    home: &Path,
    file: &Path,
    m: &Manifest,
    models: &ModelAccess,
    extra: &[Protected],
) -> Checker {
    let mut protected = crate::home::Home::new(home).protected_paths(None);
    protected.extend(m.protected_paths(file));
    protected.extend(models.protected().iter().cloned());
    protected.extend(extra.iter().cloned());
    Checker::new(&protected)
}

/// Refuses the first teammate whose directory `checker` refuses (a
/// teammate in its own worktree is checked when the worktree is made).
pub fn check_teammates(checker: &Checker, m: &Manifest) -> anyhow::Result<()> {
    for t in &m.teammates {
        if t.isolation == IsolationSpec::None {
            checker.check(&t.name, &t.cwd).map_err(anyhow::Error::msg)?;
        }
    }
    Ok(())
}

/// Refuses a catalogue entry's or the lead's directory that `checker`
/// refuses, as a teammate's: a led run's teammates are the lead's to spawn.
pub fn check_lead_dirs(checker: &Checker, m: &Manifest) -> anyhow::Result<()> {
    for c in m.catalogue.iter().filter(|c| !c.cwd.as_os_str().is_empty()) {
        checker.check(&c.name, &c.cwd).map_err(anyhow::Error::msg)?;
    }
    if let Some(l) = &m.lead {
        checker
            .check(crate::store::config::LEAD_NAME, &l.cwd)
            .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Makes the default directories (`work/{name}`) of the teammates that left
/// `cwd` out.
pub fn make_default_dirs(m: &Manifest) -> anyhow::Result<()> {
    for t in m.teammates.iter().filter(|t| t.cwd_is_default) {
        std::fs::create_dir_all(&t.cwd).with_context(|| {
            format!(
                "cannot make teammate `{}`'s directory {} (the default for a teammate without `cwd`)",
                t.name,
                t.cwd.display()
            )
        })?;
    }
    Ok(())
}
