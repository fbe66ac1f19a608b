//! [`ModelHub`]: the host-wide model state (the config, the providers
//! built so far, the cassettes open, each team's purse) and the one rule of
//! what cost budget a policy is held to ([`applied_budget`]). Its clients
//! are made in `client.rs`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::model::cassette::{Cassette, CassetteMode};
use crate::model::config::{ModelConfig, ModelEntry, ProviderSpec};
use crate::model::policy::{ModelPolicy, DEFAULT_BUDGET_MICRODOLLARS};
use crate::model::provider::{self, Provider};
use crate::model::scripted::{Script, Scripted};
use crate::model::team_budget::TeamBudget;
use crate::model::types::ModelError;

/// The cost budget the broker holds a teammate with `policy` to, whose
/// allowed models are `models`: the policy's own `budget_microdollars`,
/// else [`DEFAULT_BUDGET_MICRODOLLARS`] where it can be kept and means
/// something (every model has a price and one of them is not free), else
/// none. The one rule: [`ModelHub::client`] applies it and a lead's seat
/// gives and charges by it ([`ModelHub::budget_for`]).
pub fn applied_budget<'a>(
    policy: &ModelPolicy,
    models: impl IntoIterator<Item = &'a ModelEntry>,
) -> Option<u64> {
    if policy.budget_microdollars.is_some() {
        return policy.budget_microdollars;
    }
    let (mut priced, mut costly) = (true, false);
    for entry in models {
        match &entry.price {
            Some(p) => costly |= p.input > 0.0 || p.output > 0.0,
            None => priced = false,
        }
    }
    (priced && costly).then_some(DEFAULT_BUDGET_MICRODOLLARS)
}

/// A provider built from the config, or why it could not be.
type Built = Result<Arc<dyn Provider>, String>;

/// Host-wide model state: the config, the providers built so far, the
/// cassettes open.
pub struct ModelHub {
    pub(super) config: ModelConfig,
    pub(super) mode: CassetteMode,
    pub(super) cassettes: Option<PathBuf>,
    pub(super) enabled: bool,
    pub(super) providers: Mutex<HashMap<String, Built>>,
    pub(super) open: Mutex<HashMap<(String, String), Arc<Cassette>>>,
    /// The team-wide cost budget (microdollars) of every team it serves.
    pub(super) team_budget: Mutex<Option<u64>>,
    /// Each team's purse, opened with its first teammate.
    pub(super) purses: Mutex<HashMap<String, Arc<TeamBudget>>>,
}

impl std::fmt::Debug for ModelHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelHub")
            .field("mode", &self.mode)
            .field("cassettes", &self.cassettes)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl ModelHub {
    /// A hub answering from `config`'s providers in `mode`, with cassettes
    /// under `cassettes` (required by every mode but `live`).
    pub fn new(
        config: ModelConfig,
        mode: CassetteMode,
        cassettes: Option<PathBuf>,
    ) -> crate::Result<Arc<Self>> {
        if mode != CassetteMode::Live && cassettes.is_none() {
            return Err(crate::Error::ModelSetup(format!(
                "model mode {mode} needs a cassette directory"
            )));
        }
        Ok(Arc::new(ModelHub {
            config,
            mode,
            cassettes,
            enabled: true,
            providers: Mutex::default(),
            open: Mutex::default(),
            team_budget: Mutex::default(),
            purses: Mutex::default(),
        }))
    }

    /// A hub with no model access: every teammate's `models()` is empty and
    /// a teammate given a model policy cannot be spawned.
    pub fn none() -> Arc<Self> {
        Arc::new(ModelHub {
            config: ModelConfig::from_env(),
            mode: CassetteMode::Live,
            cassettes: None,
            enabled: false,
            providers: Mutex::default(),
            open: Mutex::default(),
            team_budget: Mutex::default(),
            purses: Mutex::default(),
        })
    }

    /// Its mode.
    pub fn mode(&self) -> CassetteMode {
        self.mode
    }

    /// Its cassette directory, when it records or replays.
    pub fn cassettes(&self) -> Option<&std::path::Path> {
        self.cassettes.as_deref()
    }

    /// Its config.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Puts a provider in place of the one the config names (for tests and
    /// embedders with their own provider).
    pub fn set_provider(&self, name: &str, provider: Arc<dyn Provider>) {
        self.providers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), Ok(provider));
    }

    /// Gives every team this hub serves a cost budget of `microdollars`
    /// over its life, shared by all its teammates and sub-agents (the
    /// manifest's `[model] team_budget_usd`); `None`: none. Set it before
    /// the first client.
    pub fn set_team_budget(&self, microdollars: Option<u64>) {
        *self.team_budget.lock().unwrap_or_else(|p| p.into_inner()) = microdollars;
    }

    /// The team budget this hub gives every team (the manifest's), if any.
    pub fn team_budget(&self) -> Option<u64> {
        *self.team_budget.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens `team`'s purse, when the hub has a team budget and it is not
    /// open yet, counting `spent_before` (what the team's usage records
    /// say it spent: a resumed team's budget is for its whole life). Only
    /// this process's calls count from then on: a purse on the team's
    /// account ([`ModelHub::open_team_account`]) counts every process's.
    pub fn open_team_budget(&self, team: &str, spent_before: impl FnOnce() -> u64) {
        let _ = self.team_purse(team, spent_before);
    }

    /// Opens `team`'s purse on the team's account in `store` (the
    /// account as `account` is now), unless a purse for the team is open
    /// already: from here on this process's teammates of `team` spend from
    /// what it claims there ([`TeamBudget::on_account`]).
    pub fn open_team_account(
        &self,
        team: &str,
        account: &crate::model::team_account::TeamAccount,
        store: Arc<dyn crate::model::team_account::AccountStore>,
    ) {
        static PURSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut purses = self.purses.lock().unwrap_or_else(|p| p.into_inner());
        if purses.contains_key(team) {
            return;
        }
        // One holder per purse: two hosts in one process (tests, an
        // embedder's) never share a claim.
        let n = PURSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let holder = format!("{}/{n}", crate::model::team_account::holder_id());
        purses.insert(
            team.to_string(),
            Arc::new(TeamBudget::on_account(account, store, holder)),
        );
    }

    /// Whether `team` has a purse open in this hub.
    pub fn has_team_purse(&self, team: &str) -> bool {
        self.purses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(team)
    }

    /// Hands back to `team`'s account what this process claimed and did
    /// not spend ([`TeamBudget::settle_account`]): one of its teammates
    /// ended.
    pub fn settle_team_account(&self, team: &str) {
        let purse = self
            .purses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(team)
            .cloned();
        if let Some(purse) = purse {
            purse.settle_account();
        }
    }

    pub(super) fn team_purse(
        &self,
        team: &str,
        spent_before: impl FnOnce() -> u64,
    ) -> Option<Arc<TeamBudget>> {
        let mut purses = self.purses.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(open) = purses.get(team) {
            return Some(open.clone());
        }
        let budget = (*self.team_budget.lock().unwrap_or_else(|p| p.into_inner()))?;
        Some(
            purses
                .entry(team.to_string())
                .or_insert_with(|| Arc::new(TeamBudget::new(budget, spent_before())))
                .clone(),
        )
    }

    /// The cost budget, in microdollars, a client built for `policy` is
    /// held to ([`applied_budget`] over the models of this hub's catalog):
    /// what a lead's seat gives and charges is read here, so it is always
    /// what the broker keeps. An alias the catalog lacks counts as
    /// unpriced (a client for it is refused anyway).
    pub fn budget_for(&self, policy: &ModelPolicy) -> Option<u64> {
        let entries: Option<Vec<ModelEntry>> = policy
            .allow
            .iter()
            .map(|alias| self.config.resolve(alias))
            .collect();
        match entries {
            Some(entries) => applied_budget(policy, entries.iter()),
            None => policy.budget_microdollars,
        }
    }

    /// The teammate's cassette, shared by its later lives in this host (a
    /// respawned teammate appends to the recording of its first life).
    pub(super) fn cassette(
        &self,
        dir: &Path,
        team: &str,
        teammate: &str,
        mode: CassetteMode,
    ) -> crate::Result<Arc<Cassette>> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let key = (team.to_string(), teammate.to_string());
        if let Some(c) = open.get(&key) {
            return Ok(c.clone());
        }
        let c = Arc::new(Cassette::open(dir, team, teammate, mode)?);
        open.insert(key, c.clone());
        Ok(c)
    }

    /// The provider named `name`, built on first use.
    pub(super) fn provider(&self, name: &str) -> Result<Arc<dyn Provider>, ModelError> {
        let mut providers = self.providers.lock().unwrap_or_else(|p| p.into_inner());
        let built = providers
            .entry(name.to_string())
            .or_insert_with(|| build_provider(&self.config, name));
        built.clone().map_err(ModelError::Unavailable)
    }
}

fn build_provider(config: &ModelConfig, name: &str) -> Result<Arc<dyn Provider>, String> {
    match config.providers.get(name) {
        None => Err(format!("the host has no provider {name:?}")),
        Some(ProviderSpec::Scripted { script }) => Script::load(script)
            .map(|s| Arc::new(Scripted::new(s)) as Arc<dyn Provider>)
            .map_err(|e| e.to_string()),
        Some(ProviderSpec::Http { settings, key_env }) => {
            if settings.api_key.is_none() && is_remote(&settings.base_url) {
                let var = key_env.as_deref().unwrap_or("its api_key_env variable");
                return Err(format!(
                    "the host has no key for provider {name:?}: set {var} in the environment of the teamhost process that runs the teammate (a teammate a Claude Code lead starts in a tmux pane does not get the lead's {var}: export it in the wrapper script that runs `teamhost teammate`, or in the tmux server's environment with `tmux set-environment -g {var} ...`)"
                ));
            }
            provider::build(settings.clone())
                .map_err(|e| format!("cannot set up provider {name:?}: {e}"))
        }
    }
}

/// Whether a base URL is a hosted API (which needs a key) rather than a
/// server on this machine.
fn is_remote(base_url: &str) -> bool {
    let rest = base_url.split("://").nth(1).unwrap_or(base_url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    !matches!(host, "127.0.0.1" | "localhost" | "0.0.0.0") && !rest.starts_with("[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_budget_applies_only_to_priced_costly_models_left_without_one() {
        use crate::model::config::Price;
        let entry = |price: Option<(f64, f64)>| ModelEntry {
            provider: "p".into(),
            id: "m".into(),
            context_window: 1,
            max_output_tokens: 1,
            price: price.map(|(input, output)| Price {
                input,
                output,
                cache_read: None,
                cache_write: None,
            }),
            prompt_caching: false,
        };
        let unset = ModelPolicy::new(vec!["m".into()]);
        let costly = [entry(Some((3.0, 15.0)))];
        assert_eq!(
            applied_budget(&unset, &costly),
            Some(DEFAULT_BUDGET_MICRODOLLARS)
        );
        assert_eq!(applied_budget(&unset, &[entry(Some((0.0, 0.0)))]), None);
        assert_eq!(
            applied_budget(&unset, &[costly[0].clone(), entry(None)]),
            None
        );
        let mut set = unset.clone();
        set.budget_microdollars = Some(7);
        assert_eq!(applied_budget(&set, &costly), Some(7));
    }

    #[test]
    fn local_servers_need_no_key() {
        assert!(!is_remote("http://127.0.0.1:8080/v1"));
        assert!(!is_remote("http://localhost:11434/v1"));
        assert!(!is_remote("http://[::1]:8000"));
        assert!(is_remote("https://api.anthropic.com"));
    }
}
