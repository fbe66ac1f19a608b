//! The broker: [`ModelHub`], one per host, and [`ModelClient`], one per
//! teammate.
//!
//! A teammate's call goes: policy (is the alias allowed? is the request
//! well formed and within the per-call maximum?) → meter (calls per turn,
//! rate limit, budgets: [`super::meter`]) → cassette (replay modes:
//! [`super::cassette`]) → provider (built on first use from the host's
//! config: [`super::config`]) → cassette (record modes) → meter (the actual
//! usage is charged). Nothing is held locked across the provider call, so
//! teammates never wait on each other in the broker, and dropping the
//! call's future (the teammate was stopped) abandons the HTTP request and
//! gives the reservation back.
//!
//! Every error the guest gets is built here or by a provider, without keys,
//! headers or URLs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::cassette::{Cassette, CassetteMode, Lookup};
use super::config::{ModelConfig, ModelEntry, ProviderSpec};
use super::meter::{Meter, Reservation};
use super::policy::{ModelPolicy, DEFAULT_BUDGET_MICRODOLLARS};
use super::provider::{self, Provider, ProviderCall};
use super::scripted::{Script, Scripted};
use super::team_budget::TeamBudget;
use super::transcript::Transcript;
use super::types::{
    ContentBlock, ModelError, ModelInfo, Request, Response, Role, Spend, ToolChoice,
};

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

/// The largest request a guest may send, as JSON (8 MiB).
pub const MAX_REQUEST_BYTES: usize = 8 << 20;

/// Host-wide model state: the config, the providers built so far, the
/// cassettes open.
pub struct ModelHub {
    config: ModelConfig,
    mode: CassetteMode,
    cassettes: Option<PathBuf>,
    enabled: bool,
    providers: Mutex<HashMap<String, Built>>,
    open: Mutex<HashMap<(String, String), Arc<Cassette>>>,
    /// The team-wide cost budget (microdollars) of every team it serves.
    team_budget: Mutex<Option<u64>>,
    /// Each team's purse, opened with its first teammate.
    purses: Mutex<HashMap<String, Arc<TeamBudget>>>,
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

    /// Opens `team`'s purse, when the hub has a team budget and it is not
    /// open yet, counting `spent_before` (what the team's usage records
    /// say it spent: a resumed team's budget is for its whole life).
    pub fn open_team_budget(&self, team: &str, spent_before: impl FnOnce() -> u64) {
        let _ = self.team_purse(team, spent_before);
    }

    fn team_purse(
        &self,
        team: &str,
        spent_before: impl FnOnce() -> u64,
    ) -> Option<Arc<TeamBudget>> {
        let budget = (*self.team_budget.lock().unwrap_or_else(|p| p.into_inner()))?;
        let mut purses = self.purses.lock().unwrap_or_else(|p| p.into_inner());
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

    /// The client of `teammate` in `team`. Without a policy the client is
    /// disabled. With one, every allowed alias must be in the catalog, and
    /// with a cost budget every allowed model must have a price.
    pub fn client(
        self: &Arc<Self>,
        team: &str,
        teammate: &str,
        policy: Option<ModelPolicy>,
    ) -> crate::Result<ModelClient> {
        self.client_keeping(team, teammate, policy, None)
    }

    /// [`client`](Self::client), keeping the teammate's conversation in
    /// `transcript` after each successful call (see
    /// [`super::transcript`]); `model.history` reads it back.
    pub fn client_keeping(
        self: &Arc<Self>,
        team: &str,
        teammate: &str,
        policy: Option<ModelPolicy>,
        transcript: Option<Transcript>,
    ) -> crate::Result<ModelClient> {
        let Some(policy) = policy else {
            return Ok(ModelClient { inner: None });
        };
        let refuse = |why: String| {
            crate::Error::ModelSetup(format!("teammate {teammate:?}'s model policy: {why}"))
        };
        if !self.enabled {
            return Err(refuse(
                "this host has no model access configured (the embedding program gives one in HostOptions.models)".into(),
            ));
        }
        policy.validate().map_err(refuse)?;
        let mut policy = policy;
        let team_purse = self.team_purse(team, || 0);
        let mut models = HashMap::new();
        for alias in &policy.allow {
            let entry = self.config.resolve(alias).ok_or_else(|| {
                refuse(format!(
                    "model {alias:?} is not in the host's catalog (known: {}); add [models.{alias}] to the host's model config, or write PROVIDER/MODEL-ID",
                    self.config.models.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            })?;
            if policy.budget_microdollars.is_some() && entry.price.is_none() {
                return Err(refuse(format!(
                    "model {alias:?} has no price in the host's config, so a cost budget (budget_usd) cannot be kept: give it a price or drop budget_usd"
                )));
            }
            if team_purse.is_some() && entry.price.is_none() {
                return Err(refuse(format!(
                    "model {alias:?} has no price in the host's config, so the team's cost budget ([model] team_budget_usd) cannot be kept: give it a price or drop team_budget_usd"
                )));
            }
            // A provider this teammate would call must be usable now (its
            // key present): a teammate that cannot think fails at its start,
            // where its lead is told, not at its first call.
            let calls_provider = !matches!(
                (&self.cassettes, self.mode),
                (Some(_), CassetteMode::Replay | CassetteMode::ReplayLenient)
            );
            if calls_provider {
                self.provider(&entry.provider)
                    .map_err(|e| refuse(format!("model {alias:?}: {e}")))?;
            }
            models.insert(alias.clone(), entry);
        }
        policy.budget_microdollars = applied_budget(&policy, models.values());
        let cassette = match (&self.cassettes, self.mode) {
            (_, CassetteMode::Live) | (None, _) => None,
            (Some(dir), mode) => Some(self.cassette(dir, team, teammate, mode)?),
        };
        Ok(ModelClient {
            inner: Some(Arc::new(ClientInner {
                hub: self.clone(),
                team: team.to_string(),
                teammate: teammate.to_string(),
                models,
                meter: Arc::new(Meter::sharing(policy, team_purse)),
                cassette,
                sub: None,
                used_tokens: Default::default(),
                transcript,
            })),
        })
    }

    /// The teammate's cassette, shared by its later lives in this host (a
    /// respawned teammate appends to the recording of its first life).
    fn cassette(
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
    fn provider(&self, name: &str) -> Result<Arc<dyn Provider>, ModelError> {
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

struct ClientInner {
    hub: Arc<ModelHub>,
    team: String,
    teammate: String,
    models: HashMap<String, ModelEntry>,
    /// Shared with the sub-agents' clients: their spending is the parent's.
    meter: Arc<Meter>,
    cassette: Option<Arc<Cassette>>,
    /// A sub-agent's client: its default model (always one the parent may
    /// use). `None` for a teammate's own.
    sub: Option<String>,
    /// Tokens this client's calls used (a sub-agent's own share).
    used_tokens: std::sync::atomic::AtomicU64,
    transcript: Option<Transcript>,
}

/// One teammate's access to models. Cheap to clone; clones share the
/// meter.
#[derive(Clone)]
pub struct ModelClient {
    inner: Option<Arc<ClientInner>>,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            None => f.write_str("ModelClient(disabled)"),
            Some(c) => write!(f, "ModelClient({}/{})", c.team, c.teammate),
        }
    }
}

/// Gives a reservation back when a call ends without an answer, cancelled
/// included.
struct Held<'a> {
    meter: &'a Meter,
    reservation: Option<Reservation>,
}

impl Held<'_> {
    fn settle(mut self, response: &Response, entry: &ModelEntry, estimated: bool) {
        if let Some(r) = self.reservation.take() {
            self.meter
                .settle_as(r, &response.usage, entry.price.as_ref(), estimated);
        }
    }
}

/// `response` with the usage it is charged: its own, or when the provider
/// reported none (llama.cpp's server never does in a stream) the host's
/// estimate, about four bytes a token of the request and of the answer,
/// at least one each: a budget must go down with every call. The second
/// value says whether it is an estimate. The guest gets the same figures
/// it is charged.
fn billed(mut response: Response, input_estimate: u64) -> (Response, bool) {
    if response.usage.total() > 0 {
        return (response, false);
    }
    let answer: usize = response
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.len(),
            ContentBlock::ToolUse(u) => u.name.len() + u.input.len(),
            ContentBlock::Thinking(t) => t.text.len(),
            _ => 0,
        })
        .sum();
    response.usage.input_tokens = input_estimate.max(1);
    response.usage.output_tokens = (answer as u64).div_ceil(4).max(1);
    (response, true)
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.reservation.take() {
            self.meter.release(r);
        }
    }
}

impl ModelClient {
    /// A client with no model access.
    pub fn disabled() -> ModelClient {
        ModelClient { inner: None }
    }

    /// Whether the teammate has a model policy.
    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The models it may use (empty when disabled); `max_output_tokens` is
    /// the smaller of the model's and the policy's per-call maximum.
    pub fn models(&self) -> Vec<ModelInfo> {
        let Some(c) = &self.inner else {
            return Vec::new();
        };
        let policy = c.meter.policy();
        policy
            .allow
            .iter()
            .filter_map(|alias| {
                c.models.get(alias).map(|e| ModelInfo {
                    alias: alias.clone(),
                    id: e.id.clone(),
                    context_window: e.context_window,
                    max_output_tokens: e.max_output_tokens.min(policy.max_tokens_per_call),
                    is_default: *alias == policy.default,
                })
            })
            .collect()
    }

    /// What it spent and has left.
    pub fn spent(&self) -> Spend {
        self.inner
            .as_ref()
            .map_or_else(Spend::default, |c| c.meter.spend())
    }

    /// Counts what the teammate's earlier life spent against its budgets
    /// (see [`Meter::carry_over`]); nothing without a model policy.
    pub fn carry_over(&self, calls: u64, usage: &super::types::Usage, cost_microdollars: u64) {
        if let Some(c) = &self.inner {
            c.meter.carry_over(calls, usage, cost_microdollars);
        }
    }

    /// A new turn (calls per turn start again). A sub-agent's client does
    /// nothing: its calls count in its parent's turn.
    pub fn start_turn(&self) {
        if let Some(c) = self.inner.as_ref().filter(|c| c.sub.is_none()) {
            c.meter.start_turn();
        }
    }

    /// A client for a sub-agent named `name` (the cassette's key), sharing
    /// this client's meter (so its spending is counted against this budget,
    /// calls per turn and rate limit included) and its models, with
    /// `model` as its default. `model` must be one this client may use;
    /// `None` keeps this client's default. `transcript` keeps the
    /// sub-agent's conversation (its resumption reads it back through
    /// `model.history`). A disabled client gives a disabled one.
    pub fn sub_agent(
        &self,
        name: &str,
        model: Option<&str>,
        transcript: Option<Transcript>,
    ) -> Result<ModelClient, String> {
        let Some(c) = &self.inner else {
            return match model {
                None => Ok(ModelClient::disabled()),
                Some(m) => Err(format!(
                    "model {m:?} was asked for, but the parent has no model access"
                )),
            };
        };
        let default = match model {
            None => c.default_alias().to_string(),
            Some(m) if c.models.contains_key(m) => m.to_string(),
            Some(m) => {
                return Err(format!(
                    "model {m:?} is more than the parent may use (it may use: {})",
                    c.meter.policy().allow.join(", ")
                ))
            }
        };
        let cassette = match (&c.hub.cassettes, c.hub.mode) {
            (_, CassetteMode::Live) | (None, _) => None,
            (Some(dir), mode) => Some(
                c.hub
                    .cassette(dir, &c.team, name, mode)
                    .map_err(|e| e.to_string())?,
            ),
        };
        Ok(ModelClient {
            inner: Some(Arc::new(ClientInner {
                hub: c.hub.clone(),
                team: c.team.clone(),
                teammate: name.to_string(),
                models: c.models.clone(),
                meter: c.meter.clone(),
                cassette,
                sub: Some(default),
                used_tokens: Default::default(),
                transcript,
            })),
        })
    }

    /// Tokens this client's own calls used (for a sub-agent, its share of
    /// the shared meter).
    pub fn tokens_used(&self) -> u64 {
        self.inner.as_ref().map_or(0, |c| {
            c.used_tokens.load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// The notice for the lead, once, after a budget first refused a call.
    pub fn take_budget_notice(&self) -> Option<String> {
        self.inner
            .as_ref()
            .and_then(|c| c.meter.take_budget_notice())
    }

    /// The conversation kept for this teammate, ready to continue (see
    /// [`super::transcript`]); empty without a model policy, without a
    /// transcript, or when the kept one cannot be read (logged).
    pub fn history(&self) -> Vec<super::types::Message> {
        let Some(t) = self.inner.as_ref().and_then(|c| c.transcript.as_ref()) else {
            return Vec::new();
        };
        t.load().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the kept conversation is unreadable; the teammate starts afresh");
            Vec::new()
        })
    }

    /// One completion under the teammate's policy (see the module docs).
    pub async fn complete(&self, request: Request) -> Result<Response, ModelError> {
        self.complete_keeping(request, Keep::Conversation).await
    }

    /// [`complete`](Self::complete) for a side call (a summary, say):
    /// metered, limited and recorded the same, but its exchange is not kept
    /// as the teammate's conversation, so [`history`](Self::history) still
    /// gives the conversation of the last `complete`.
    pub async fn complete_aside(&self, request: Request) -> Result<Response, ModelError> {
        self.complete_keeping(request, Keep::Nothing).await
    }

    async fn complete_keeping(&self, request: Request, keep: Keep) -> Result<Response, ModelError> {
        let Some(c) = &self.inner else {
            return Err(ModelError::Denied(
                "this teammate has no model access: its lead gives it a model policy ([teammate.model_policy] in the manifest, or --model-allow)".into(),
            ));
        };
        c.complete(request, keep).await
    }
}

/// Whether a call's exchange becomes the kept conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// It does (`model.complete`).
    Conversation,
    /// It does not (`model.complete-aside`).
    Nothing,
}

impl ClientInner {
    /// What `model: ""` means for this client.
    fn default_alias(&self) -> &str {
        self.sub.as_deref().unwrap_or(&self.meter.policy().default)
    }

    async fn complete(&self, request: Request, keep: Keep) -> Result<Response, ModelError> {
        let answer = match keep {
            Keep::Conversation => self.complete_kept(request).await,
            Keep::Nothing => self.call(&request).await,
        };
        if let Ok(r) = &answer {
            self.used_tokens
                .fetch_add(r.usage.total(), std::sync::atomic::Ordering::Relaxed);
        }
        answer
    }

    /// A completion, then the transcript kept (off the async threads). A
    /// transcript that cannot be written fails the call: the teammate would
    /// otherwise go on with a conversation the host could not restore.
    async fn complete_kept(&self, request: Request) -> Result<Response, ModelError> {
        let Some(transcript) = &self.transcript else {
            return self.call(&request).await;
        };
        let response = self.call(&request).await?;
        if let Err(e) = transcript.keep(request, &response).await {
            tracing::error!(team = %self.team, teammate = %self.teammate, error = %e, "the conversation was not kept");
            return Err(ModelError::Unavailable(format!(
                "the host could not keep the conversation: {e}"
            )));
        }
        Ok(response)
    }

    async fn call(&self, request: &Request) -> Result<Response, ModelError> {
        let policy = self.meter.policy();
        let alias = if request.model.is_empty() {
            self.default_alias().to_string()
        } else {
            request.model.clone()
        };
        let entry = self.models.get(&alias).ok_or_else(|| {
            ModelError::Denied(format!(
                "model {:?} is not allowed for this teammate; it may use: {}",
                truncate(&alias, 64),
                policy.allow.join(", ")
            ))
        })?;
        let size = validate(request)?;
        let max_tokens = request
            .max_tokens
            .unwrap_or(policy.max_tokens_per_call.min(entry.max_output_tokens));
        let limit = policy.max_tokens_per_call.min(entry.max_output_tokens);
        if max_tokens == 0 || max_tokens > limit {
            return Err(ModelError::Invalid(format!(
                "max-tokens {max_tokens} is outside 1..={limit} (this teammate's per-call maximum for {alias})"
            )));
        }
        let input_estimate = (size as u64).div_ceil(4);
        let started = Instant::now();

        // From the cassette, when the mode replays. The meter decides
        // first, as it does before a live call: a run that was refused a
        // call (budget, calls per turn) replays that refusal, not a missing
        // recording. No rate limit here: a replay waits on nothing.
        let mut drifted = None;
        if let Some(cassette) = self.cassette.as_ref().filter(|_| self.hub.mode.replays()) {
            let price = entry.price.as_ref();
            let reservation = self
                .meter
                .reserve(input_estimate, max_tokens, price, false)?;
            let served = match cassette.lookup(request) {
                Lookup::Hit(r) => Some(r),
                Lookup::Drift {
                    difference,
                    recorded,
                } => match self.hub.mode {
                    CassetteMode::ReplayLenient => {
                        tracing::warn!(team = %self.team, teammate = %self.teammate, "{difference}; serving the recorded answer (replay-lenient)");
                        Some(recorded)
                    }
                    CassetteMode::ReplayOrRecord => {
                        drifted = Some(difference);
                        None
                    }
                    _ => {
                        self.meter.release(reservation);
                        return Err(ModelError::NotRecorded(difference));
                    }
                },
                Lookup::Miss(text) if self.hub.mode == CassetteMode::ReplayOrRecord => {
                    drifted = Some(text);
                    None
                }
                Lookup::Miss(text) => {
                    self.meter.release(reservation);
                    return Err(ModelError::NotRecorded(text));
                }
            };
            match served {
                Some(response) => {
                    let response = super::replay_ids::rebind(response, request);
                    let (response, estimated) = billed(response, input_estimate);
                    self.meter
                        .settle_as(reservation, &response.usage, price, estimated);
                    self.log(&alias, &response, started, "cassette");
                    return Ok(response);
                }
                // To the provider, which reserves again (rate-limited).
                None => self.meter.unreserve(reservation),
            }
        }
        if let Some(why) = drifted {
            tracing::info!(team = %self.team, teammate = %self.teammate, "{why}; calling the provider (replay-or-record)");
        }

        // From the provider.
        let held = Held {
            meter: &self.meter,
            reservation: Some(self.meter.reserve(
                input_estimate,
                max_tokens,
                entry.price.as_ref(),
                true,
            )?),
        };
        let provider = self.hub.provider(&entry.provider)?;
        let response = provider
            .complete(ProviderCall {
                model_id: &entry.id,
                request,
                max_tokens,
                prompt_caching: entry.prompt_caching,
            })
            .await
            .map_err(|e| {
                tracing::debug!(team = %self.team, teammate = %self.teammate, alias = %alias, error = %e, "model call failed");
                ModelError::from(e)
            })?;
        // The cassette keeps what the provider said (no usage stays no
        // usage), so its replay bills the same estimate and counts it as one.
        let said = response;
        let (response, estimated) = billed(said.clone(), input_estimate);
        held.settle(&response, entry, estimated);
        if let Some(cassette) = self.cassette.as_ref().filter(|_| {
            matches!(
                self.hub.mode,
                CassetteMode::Record | CassetteMode::ReplayOrRecord
            )
        }) {
            let latency = started.elapsed().as_millis() as u64;
            if let Err(e) = cassette.record(provider.kind(), request, &said, latency) {
                tracing::error!(team = %self.team, teammate = %self.teammate, error = %e, "the answer was not recorded");
                return Err(ModelError::Unavailable(format!(
                    "the host could not record the answer: {e}"
                )));
            }
        }
        self.log(&alias, &response, started, provider.kind());
        Ok(response)
    }

    fn log(&self, alias: &str, response: &Response, started: Instant, source: &str) {
        tracing::debug!(
            team = %self.team,
            teammate = %self.teammate,
            alias,
            source,
            input = response.usage.input_tokens,
            output = response.usage.output_tokens,
            ms = started.elapsed().as_millis() as u64,
            "model call"
        );
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        format!("{}…", s.chars().take(n).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Checks a request's shape; returns its size as JSON.
fn validate(request: &Request) -> Result<usize, ModelError> {
    let invalid = |s: String| Err(ModelError::Invalid(s));
    let size = serde_json::to_vec(request)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_REQUEST_BYTES {
        return invalid(format!(
            "the request is {size} bytes of JSON; the most is {MAX_REQUEST_BYTES}: drop or shorten older messages"
        ));
    }
    let Some(first) = request.messages.first() else {
        return invalid("a request needs at least one message".into());
    };
    if first.role != Role::User {
        return invalid("the first message must be the user's".into());
    }
    if let Some(t) = request.temperature {
        if !(0.0..=1.0).contains(&t) {
            return invalid(format!("temperature {t} is outside 0..=1"));
        }
    }
    let mut names = std::collections::HashSet::new();
    for tool in &request.tools {
        let ok_name = !tool.name.is_empty()
            && tool.name.len() <= 64
            && tool
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok_name {
            return invalid(format!(
                "tool name {:?} must be 1 to 64 characters of letters, digits, '_' or '-'",
                truncate(&tool.name, 64)
            ));
        }
        if !names.insert(tool.name.as_str()) {
            return invalid(format!("tool {:?} is defined twice", tool.name));
        }
        match serde_json::from_str::<serde_json::Value>(&tool.input_schema) {
            Ok(serde_json::Value::Object(_)) => {}
            _ => {
                return invalid(format!(
                    "the input schema of tool {:?} is not a JSON object",
                    tool.name
                ))
            }
        }
    }
    if let Some(ToolChoice::Tool(name)) = &request.tool_choice {
        if !names.contains(name.as_str()) {
            return invalid(format!(
                "tool-choice names {:?}, which is not among the request's tools",
                truncate(name, 64)
            ));
        }
    }
    // Every tool result answers a tool use of the assistant message just
    // before it.
    let mut asked: Vec<&str> = Vec::new();
    for (i, message) in request.messages.iter().enumerate() {
        let mut uses = Vec::new();
        for block in &message.content {
            match block {
                ContentBlock::ToolUse(u) if message.role == Role::Assistant => {
                    uses.push(u.id.as_str())
                }
                ContentBlock::ToolUse(_) => {
                    return invalid(format!("message {i}: only the assistant writes tool uses"))
                }
                ContentBlock::ToolResult(r)
                    if message.role == Role::User && !asked.contains(&r.tool_use_id.as_str()) =>
                {
                    return invalid(format!(
                        "message {i} answers tool use {:?}, which the assistant message before it did not make",
                        truncate(&r.tool_use_id, 64)
                    ));
                }
                ContentBlock::ToolResult(_) if message.role == Role::User => {}
                ContentBlock::ToolResult(_) => {
                    return invalid(format!("message {i}: tool results belong in user messages"))
                }
                _ => {}
            }
        }
        asked = uses;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{Message, ToolResult, ToolUse};

    fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
        Message { role, content }
    }

    #[test]
    fn an_orphan_tool_result_is_invalid() {
        let use_ = ContentBlock::ToolUse(ToolUse {
            id: "a".into(),
            name: "Read".into(),
            input: "{}".into(),
        });
        let result = |id: &str| {
            ContentBlock::ToolResult(ToolResult {
                tool_use_id: id.into(),
                content: String::new(),
                is_error: false,
            })
        };
        let good = Request::new(vec![
            msg(Role::User, vec![ContentBlock::Text("x".into())]),
            msg(Role::Assistant, vec![use_.clone()]),
            msg(Role::User, vec![result("a")]),
        ]);
        assert!(validate(&good).is_ok());
        let orphan = Request::new(vec![msg(Role::User, vec![result("zzz")])]);
        assert!(
            matches!(validate(&orphan), Err(ModelError::Invalid(m)) if m.contains("did not make"))
        );
        assert!(validate(&Request::new(vec![])).is_err());
        assert!(validate(&Request::new(vec![msg(Role::Assistant, vec![use_])])).is_err());
    }

    #[test]
    fn the_default_budget_applies_only_to_priced_costly_models_left_without_one() {
        use super::super::config::Price;
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
