//! Which model calls a run's host makes: [`ModelChoice`] (the caller's
//! choice, which wins over the manifest's `[model]`) and [`model_access`],
//! the host's model broker built from it.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::embed::ModelAccess;
use crate::layout::Kind;
use crate::manifest::ModelSpec;
use crate::model::{CassetteMode, ModelConfig, ModelHub};

/// The caller's choice of model calls; each field left `None` falls back to
/// the manifest's `[model]`, then to the default.
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    /// `live`, `record`, `replay`, `replay-lenient` (default: the manifest's
    /// `[model] mode`, else `live`).
    pub mode: Option<String>,
    /// The host's model config (default: `{home}/models.toml` when it
    /// exists, else the built-in providers and aliases).
    pub config: Option<PathBuf>,
    /// The cassette directory (default: the manifest's `[model] cassettes`).
    pub cassettes: Option<PathBuf>,
}

/// Builds a host's model broker from `choice`, the manifest's `[model]`
/// table (when there is a manifest) and the home's `models.toml`: what
/// `teamhost run` gives its host, for a [`super::Run`] of a manifest whose
/// teammates or lead call a model. Relative paths in `choice` are made
/// absolute against the current directory. The files that decide what the
/// model answers (the config, its scripts, the cassettes) are protected:
/// no teammate's directory may hold one.
pub fn model_access(
    home: &Path,
    choice: &ModelChoice,
    manifest: Option<&ModelSpec>,
) -> anyhow::Result<ModelAccess> {
    let args = choice;
    let mode: CassetteMode = match (&args.mode, manifest.and_then(|m| m.mode.as_ref())) {
        (Some(m), _) | (None, Some(m)) => m
            .parse()
            .map_err(|e| anyhow::anyhow!("--model-mode / [model] mode: {e}"))?,
        (None, None) => CassetteMode::Live,
    };
    let cassettes = args
        .cassettes
        .clone()
        .map(|c| std::path::absolute(&c).unwrap_or(c))
        .or_else(|| manifest.and_then(|m| m.cassettes.clone()));
    if mode != CassetteMode::Live && cassettes.is_none() {
        anyhow::bail!(
            "model mode {} needs a cassette directory: pass --cassettes DIR, set TEAMHOST_CASSETTES, or add cassettes = \"DIR\" to the manifest's [model] table",
            args.mode.as_deref().or(manifest.and_then(|m| m.mode.as_deref())).unwrap_or("?")
        );
    }
    let config_path = args
        .config
        .clone()
        .map(|c| std::path::absolute(&c).unwrap_or(c))
        .or_else(|| Some(crate::home::Home::new(home).model_config()).filter(|p| p.is_file()));
    let config = ModelConfig::load(config_path.as_deref())
        .with_context(|| "cannot load the host's model config".to_string())?;
    let scripts = config.files();
    let hub = ModelHub::new(config, mode, cassettes.clone())?;
    hub.set_team_budget(
        manifest
            .map(ModelSpec::team_budget)
            .transpose()
            .map_err(|e| anyhow::anyhow!(e))?
            .flatten(),
    );
    let mut child = Vec::new();
    let mut access = ModelAccess::new(hub);
    // A script file decides what the model answers: a teammate must not
    // be able to write it, any more than the config naming it.
    for script in scripts {
        access = access.protecting(Kind::ModelConfig, script);
    }
    child.extend(["--model-mode".to_string(), mode.to_string()]);
    if let Some(c) = &config_path {
        child.extend(["--model-config".to_string(), c.display().to_string()]);
        access = access.protecting(Kind::ModelConfig, c);
    }
    if let Some(c) = &cassettes {
        child.extend(["--cassettes".to_string(), c.display().to_string()]);
        access = access.protecting(Kind::Cassettes, c);
    }
    Ok(access.with_child_args(child))
}
