//! A host model setup for tests: one model alias, `fake` ($3 / $15 per
//! million tokens), played by a scripted provider
//! ([`teamhost::model::scripted`]).

use std::path::PathBuf;
use std::sync::Arc;

use teamhost::embed::{HostOptions, ModelAccess};
use teamhost::model::config::{ModelConfig, ModelEntry, Price, ProviderSpec};
use teamhost::model::scripted::{Script, Scripted, ScriptedStats};
use teamhost::model::{CassetteMode, ModelHub, ModelPolicy};

/// A config whose only model is `fake`, served by the provider `script`
/// (whose script file is never read: tests put the provider in place).
pub fn config() -> ModelConfig {
    let mut config = ModelConfig::from_env();
    config.providers.clear();
    config.providers.insert(
        "script".into(),
        ProviderSpec::Scripted {
            script: "/unused".into(),
        },
    );
    config.models.clear();
    config.models.insert(
        "fake".into(),
        ModelEntry {
            provider: "script".into(),
            id: "fake-1".into(),
            context_window: 100_000,
            max_output_tokens: 8_000,
            price: Some(Price {
                input: 3.0,
                output: 15.0,
                cache_read: None,
                cache_write: None,
            }),
            prompt_caching: true,
        },
    );
    config
}

/// A hub in `mode` playing `script`, with its call counters.
pub fn hub(
    script: &str,
    mode: CassetteMode,
    cassettes: Option<PathBuf>,
) -> (Arc<ModelHub>, Arc<ScriptedStats>) {
    let hub = ModelHub::new(config(), mode, cassettes).unwrap();
    let scripted = Arc::new(Scripted::new(Script::parse(script).unwrap()));
    let stats = scripted.stats();
    hub.set_provider("script", scripted);
    (hub, stats)
}

/// Host options using `hub`.
pub fn options(hub: Arc<ModelHub>) -> HostOptions {
    HostOptions {
        models: ModelAccess::new(hub),
        ..HostOptions::default()
    }
}

/// A policy allowing `fake`, without a rate limit.
pub fn policy() -> ModelPolicy {
    let mut p = ModelPolicy::new(vec!["fake".into()]);
    p.requests_per_minute = None;
    p
}
