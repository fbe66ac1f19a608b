//! The host's model configuration: which providers it can reach, with which
//! credentials, and the catalog of model aliases with their prices.
//!
//! It comes from the host alone: built-in defaults, the host's environment
//! and an optional TOML file the person running the host chose (`teamhost
//! run --model-config PATH`, `$TEAMHOST_MODEL_CONFIG`, or
//! `{home}/models.toml`). Never from a manifest, a team file or a
//! teammate's directory (the CLI refuses a config file inside one).
//!
//! # Built in
//!
//! | provider | dialect | base URL | key |
//! |---|---|---|---|
//! | `anthropic` | Anthropic Messages | `$ANTHROPIC_BASE_URL` or `https://api.anthropic.com` | `$ANTHROPIC_API_KEY` |
//! | `openai` | OpenAI chat completions | `$OPENAI_BASE_URL` or `https://api.openai.com/v1` | `$OPENAI_API_KEY` |
//!
//! | alias | provider | id | USD per million tokens (input / output) |
//! |---|---|---|---|
//! | `sonnet` | anthropic | `claude-sonnet-4-5` | 3 / 15 |
//! | `opus` | anthropic | `claude-opus-4-5` | 5 / 25 |
//! | `haiku` | anthropic | `claude-haiku-4-5` | 1 / 5 |
//!
//! Cache reads cost 0.1× and cache writes 1.25× the input price. These
//! prices are defaults for budgeting, not a quote: override them in the
//! file when they change.
//!
//! Prompt caching is on by default: Anthropic-dialect requests carry cache
//! breakpoints (see `provider/cache_breakpoints.rs`). `prompt_caching =
//! false` under a provider or a model turns it off for it; the OpenAI
//! dialect sends nothing for it either way.
//!
//! Any provider's raw model id is also usable as `PROVIDER/ID` (for example
//! `openai/gpt-4o-mini` or `local/qwen2.5-coder`); such a model has no price,
//! so it costs 0 for budgets (a teammate with a cost budget may only use
//! priced models: the broker refuses the others when the teammate starts).
//!
//! # File format
//!
//! ```toml
//! [providers.local]              # a new provider, or `anthropic` / `openai` to override
//! dialect = "openai"             # "anthropic" | "openai" | "scripted"
//! base_url = "http://127.0.0.1:8080/v1"
//! api_key_env = "LOCAL_LLM_KEY"  # the environment variable holding the key (optional)
//! stream = true
//! connect_timeout_secs = 10
//! idle_timeout_secs = 120
//! request_timeout_secs = 600
//! max_retries = 4
//! retry_base_ms = 500
//! max_retry_wait_secs = 60
//! prompt_caching = true          # Anthropic dialect: mark cache breakpoints
//!
//! [providers.script]
//! dialect = "scripted"
//! script = "script.json"         # relative to this file
//!
//! [models.coder]
//! provider = "local"
//! id = "qwen2.5-coder-7b"
//! context_window = 32768
//! max_output_tokens = 8192
//! price = { input = 0.0, output = 0.0, cache_read = 0.0, cache_write = 0.0 }
//! prompt_caching = true          # false: never cache this model's prompts
//! ```
//!
//! The file holds no key itself: it names the environment variable that
//! does (`api_key_env`), so the file can be shared and checked in. A key
//! written into it (`api_key = …`) is refused with a message saying so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::provider::{ApiKey, Dialect, ProviderSettings};

/// How a configured provider is reached.
#[derive(Debug, Clone)]
pub enum ProviderSpec {
    /// Over HTTP. `settings.api_key` is `None` when the variable is unset;
    /// `key_env` names it for error texts.
    Http {
        /// Everything the HTTP provider needs.
        settings: ProviderSettings,
        /// The environment variable the key comes from.
        key_env: Option<String>,
    },
    /// From a script file ([`super::scripted`]).
    Scripted {
        /// The script's path.
        script: PathBuf,
    },
}

/// A model alias in the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelEntry {
    /// The provider's name in the config.
    pub provider: String,
    /// The provider's model id.
    pub id: String,
    /// Tokens of context.
    pub context_window: u32,
    /// The most output tokens one call may ask for.
    pub max_output_tokens: u32,
    /// USD per million tokens; `None`: unpriced (costs 0).
    pub price: Option<Price>,
    /// Whether its requests may use prompt caching (the provider's
    /// `prompt_caching` must allow it too). Default true.
    pub prompt_caching: bool,
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Price {
    fn of(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cache_read: None,
            cache_write: None,
        }
    }

    /// The cost of `usage`, in microdollars (rounded up: a budget is never
    /// under-charged).
    pub fn cost_microdollars(&self, usage: &super::Usage) -> u64 {
        // USD per million tokens = microdollars per token.
        let read = self.cache_read.unwrap_or(self.input * 0.1);
        let write = self.cache_write.unwrap_or(self.input * 1.25);
        let total = usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * read
            + usage.cache_write_tokens as f64 * write;
        total.max(0.0).ceil().min(u64::MAX as f64) as u64
    }
}

/// The host's model configuration.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Providers by name.
    pub providers: BTreeMap<String, ProviderSpec>,
    /// The catalog by alias.
    pub models: BTreeMap<String, ModelEntry>,
    /// The file it was read from, if any.
    pub source: Option<PathBuf>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig::from_env()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    providers: BTreeMap<String, FileProvider>,
    #[serde(default)]
    models: BTreeMap<String, FileModel>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProvider {
    dialect: String,
    base_url: Option<String>,
    api_key_env: Option<String>,
    /// Only to give a clear refusal.
    api_key: Option<toml::Value>,
    stream: Option<bool>,
    connect_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    request_timeout_secs: Option<u64>,
    max_retries: Option<u32>,
    retry_base_ms: Option<u64>,
    max_retry_wait_secs: Option<u64>,
    prompt_caching: Option<bool>,
    script: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    provider: String,
    id: String,
    context_window: Option<u32>,
    max_output_tokens: Option<u32>,
    price: Option<Price>,
    prompt_caching: Option<bool>,
}

/// The key in `var`, if set and not empty.
fn key_from_env(var: &str) -> Option<ApiKey> {
    std::env::var(var)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .map(ApiKey::new)
}

fn env_or(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

impl ModelConfig {
    /// The built-in providers and catalog, with keys and base URLs from the
    /// host's environment.
    pub fn from_env() -> ModelConfig {
        let mut providers = BTreeMap::new();
        providers.insert(
            "anthropic".to_string(),
            ProviderSpec::Http {
                settings: ProviderSettings::new(
                    Dialect::Anthropic,
                    env_or("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
                    key_from_env("ANTHROPIC_API_KEY"),
                ),
                key_env: Some("ANTHROPIC_API_KEY".into()),
            },
        );
        providers.insert(
            "openai".to_string(),
            ProviderSpec::Http {
                settings: ProviderSettings::new(
                    Dialect::Openai,
                    env_or("OPENAI_BASE_URL", "https://api.openai.com/v1"),
                    key_from_env("OPENAI_API_KEY"),
                ),
                key_env: Some("OPENAI_API_KEY".into()),
            },
        );
        let mut models = BTreeMap::new();
        for (alias, id, input, output) in [
            ("sonnet", "claude-sonnet-4-5", 3.0, 15.0),
            ("opus", "claude-opus-4-5", 5.0, 25.0),
            ("haiku", "claude-haiku-4-5", 1.0, 5.0),
        ] {
            models.insert(
                alias.to_string(),
                ModelEntry {
                    provider: "anthropic".into(),
                    id: id.into(),
                    context_window: 200_000,
                    max_output_tokens: 64_000,
                    price: Some(Price::of(input, output)),
                    prompt_caching: true,
                },
            );
        }
        ModelConfig {
            providers,
            models,
            source: None,
        }
    }

    /// The built-in config, overlaid with the file at `path` when given.
    /// Errors name the file and the entry, and never hold a key.
    pub fn load(path: Option<&Path>) -> crate::Result<ModelConfig> {
        let mut config = ModelConfig::from_env();
        let Some(path) = path else {
            return Ok(config);
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            crate::Error::ModelSetup(format!(
                "cannot read the model config {}: {e}",
                path.display()
            ))
        })?;
        config.overlay(&text, path).map_err(|e| {
            crate::Error::ModelSetup(format!(
                "the model config {} is not valid: {e}",
                path.display()
            ))
        })?;
        config.source = Some(path.to_path_buf());
        Ok(config)
    }

    /// Applies a config file's text (its directory resolves relative paths).
    fn overlay(&mut self, text: &str, path: &Path) -> Result<(), String> {
        // toml's own Display quotes the offending line, which could hold a
        // key pasted by mistake: keep only the message and the line number.
        let file: FileConfig = toml::from_str(text).map_err(|e: toml::de::Error| {
            let line = e.span().map_or(0, |s| {
                text[..s.start.min(text.len())].lines().count().max(1)
            });
            format!("line {line}: {}", e.message())
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for (name, p) in file.providers {
            self.providers
                .insert(name.clone(), provider_spec(&name, p, base)?);
        }
        for (alias, m) in file.models {
            if alias.contains('/') {
                return Err(format!("[models.{alias:?}]: an alias must not contain '/' (that form means PROVIDER/ID)"));
            }
            if !self.providers.contains_key(&m.provider) {
                return Err(format!(
                    "[models.{alias}] names provider {:?}, which is not configured (known: {})",
                    m.provider,
                    self.providers
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            self.models.insert(
                alias,
                ModelEntry {
                    provider: m.provider,
                    id: m.id,
                    context_window: m.context_window.unwrap_or(128_000),
                    max_output_tokens: m.max_output_tokens.unwrap_or(8_192),
                    price: m.price,
                    prompt_caching: m.prompt_caching.unwrap_or(true),
                },
            );
        }
        Ok(())
    }

    /// Resolves an alias or `PROVIDER/ID` to its catalog entry.
    pub fn resolve(&self, alias: &str) -> Option<ModelEntry> {
        if let Some(entry) = self.models.get(alias) {
            return Some(entry.clone());
        }
        let (provider, id) = alias.split_once('/')?;
        if id.is_empty() || !self.providers.contains_key(provider) {
            return None;
        }
        Some(ModelEntry {
            provider: provider.to_string(),
            id: id.to_string(),
            context_window: 128_000,
            max_output_tokens: 8_192,
            price: None,
            prompt_caching: true,
        })
    }

    /// Files the config makes the host read (script files): they must stay
    /// out of every teammate's reach, like the config itself.
    pub fn files(&self) -> Vec<PathBuf> {
        self.providers
            .values()
            .filter_map(|p| match p {
                ProviderSpec::Scripted { script } => Some(script.clone()),
                ProviderSpec::Http { .. } => None,
            })
            .collect()
    }
}

fn provider_spec(name: &str, p: FileProvider, base: &Path) -> Result<ProviderSpec, String> {
    if p.api_key.is_some() {
        return Err(format!(
            "[providers.{name}] holds a key (api_key): keys do not belong in files; put it in an environment variable and write api_key_env = \"VARIABLE\""
        ));
    }
    let dialect = match p.dialect.as_str() {
        "anthropic" => Dialect::Anthropic,
        "openai" => Dialect::Openai,
        "scripted" => {
            let script = p.script.ok_or_else(|| {
                format!("[providers.{name}] is scripted but has no script = \"FILE\"")
            })?;
            return Ok(ProviderSpec::Scripted {
                script: base.join(script),
            });
        }
        other => {
            return Err(format!(
                "[providers.{name}] dialect {other:?} is unknown: use \"anthropic\", \"openai\" or \"scripted\""
            ))
        }
    };
    let default_base = match (name, dialect) {
        ("anthropic", _) => Some(env_or("ANTHROPIC_BASE_URL", "https://api.anthropic.com")),
        ("openai", _) => Some(env_or("OPENAI_BASE_URL", "https://api.openai.com/v1")),
        _ => None,
    };
    let base_url = p.base_url.or(default_base).ok_or_else(|| {
        format!("[providers.{name}] needs base_url = \"http(s)://HOST[:PORT]/…\"")
    })?;
    let key_env = p.api_key_env.or_else(|| match name {
        "anthropic" => Some("ANTHROPIC_API_KEY".into()),
        "openai" => Some("OPENAI_API_KEY".into()),
        _ => None,
    });
    let mut settings =
        ProviderSettings::new(dialect, base_url, key_env.as_deref().and_then(key_from_env));
    if let Some(v) = p.stream {
        settings.stream = v;
    }
    let secs = Duration::from_secs;
    if let Some(v) = p.connect_timeout_secs {
        settings.connect_timeout = secs(v);
    }
    if let Some(v) = p.idle_timeout_secs {
        settings.idle_timeout = secs(v);
    }
    if let Some(v) = p.request_timeout_secs {
        settings.request_timeout = secs(v);
    }
    if let Some(v) = p.max_retries {
        settings.max_retries = v;
    }
    if let Some(v) = p.retry_base_ms {
        settings.retry_base = Duration::from_millis(v);
    }
    if let Some(v) = p.max_retry_wait_secs {
        settings.max_retry_wait = secs(v);
    }
    if let Some(v) = p.prompt_caching {
        settings.prompt_caching = v;
    }
    Ok(ProviderSpec::Http { settings, key_env })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<ModelConfig, String> {
        let mut c = ModelConfig::from_env();
        c.overlay(text, Path::new("/etc/teamhost/models.toml"))?;
        Ok(c)
    }

    #[test]
    fn the_built_in_catalog_resolves_aliases_and_provider_ids() {
        let c = ModelConfig::from_env();
        assert_eq!(c.resolve("sonnet").unwrap().id, "claude-sonnet-4-5");
        let raw = c.resolve("openai/gpt-4o-mini").unwrap();
        assert_eq!(
            (raw.provider.as_str(), raw.id.as_str(), raw.price),
            ("openai", "gpt-4o-mini", None)
        );
        assert!(c.resolve("nobody/x").is_none());
        assert!(c.resolve("gpt").is_none());
    }

    #[test]
    fn a_file_adds_providers_and_models_with_paths_relative_to_it() {
        let c = load_text(
            "[providers.s]\ndialect = \"scripted\"\nscript = \"s.json\"\n[models.fake]\nprovider = \"s\"\nid = \"fake-1\"\nprice = { input = 1.0, output = 2.0 }\n",
        )
        .unwrap();
        assert_eq!(c.files(), vec![PathBuf::from("/etc/teamhost/s.json")]);
        assert_eq!(c.resolve("fake").unwrap().price, Some(Price::of(1.0, 2.0)));
    }

    #[test]
    fn a_key_written_into_the_file_is_refused_without_repeating_it() {
        let err = load_text("[providers.x]\ndialect = \"openai\"\nbase_url = \"http://h\"\napi_key = \"sk-SECRET-99\"\n").unwrap_err();
        assert!(err.contains("api_key_env"), "{err}");
        assert!(!err.contains("sk-SECRET-99"), "{err}");
        let err = load_text("[providers.x]\ndialect = \"openai\"\nbase_url = \"http://h\"\nkey = \"sk-SECRET-99\"\n").unwrap_err();
        assert!(!err.contains("sk-SECRET-99"), "{err}");
    }

    #[test]
    fn mistakes_name_the_entry_and_the_fix() {
        let err = load_text("[providers.x]\ndialect = \"grpc\"\n").unwrap_err();
        assert!(
            err.contains("[providers.x]") && err.contains("\"anthropic\""),
            "{err}"
        );
        let err = load_text("[models.m]\nprovider = \"nope\"\nid = \"i\"\n").unwrap_err();
        assert!(err.contains("not configured"), "{err}");
    }

    #[test]
    fn prompt_caching_is_on_unless_a_provider_or_model_turns_it_off() {
        let c = ModelConfig::from_env();
        assert!(c.resolve("sonnet").unwrap().prompt_caching);
        let c = load_text(
            "[providers.anthropic]\ndialect = \"anthropic\"\nprompt_caching = false\n[models.quick]\nprovider = \"anthropic\"\nid = \"claude-haiku-4-5\"\nprompt_caching = false\n",
        )
        .unwrap();
        assert!(!c.resolve("quick").unwrap().prompt_caching);
        assert!(c.resolve("sonnet").unwrap().prompt_caching);
        match &c.providers["anthropic"] {
            ProviderSpec::Http { settings, .. } => assert!(!settings.prompt_caching),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn prices_are_microdollars_per_token_rounded_up() {
        let p = Price::of(3.0, 15.0);
        let u = crate::model::Usage {
            input_tokens: 1_000,
            output_tokens: 100,
            cache_read_tokens: 1_000,
            cache_write_tokens: 0,
        };
        // 1000×3 + 100×15 + 1000×0.3 = 4800 µ$
        assert_eq!(p.cost_microdollars(&u), 4_800);
    }
}
