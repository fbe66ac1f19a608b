//! [`ModelClient`]: one teammate's access to models, made by its host's
//! [`ModelHub`] ([`ModelHub::client`]). A call goes policy → meter →
//! cassette → provider → cassette → meter (see [`super`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::hub::{applied_budget, ModelHub};
use super::request_check::{truncate, validate};
use crate::model::cassette::{Cassette, CassetteMode, Lookup};
use crate::model::config::ModelEntry;
use crate::model::meter::{Meter, Reservation};
use crate::model::policy::ModelPolicy;
use crate::model::provider::ProviderCall;
use crate::model::transcript::Transcript;
use crate::model::types::{ContentBlock, ModelError, ModelInfo, Request, Response, Spend};

impl ModelHub {
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
    /// [`crate::model::transcript`]); `model.history` reads it back.
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
                last_system: Default::default(),
            })),
        })
    }
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
    /// The system prompt of its last kept call (a fork starts from it).
    last_system: std::sync::Mutex<Option<String>>,
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
    pub fn carry_over(
        &self,
        calls: u64,
        usage: &crate::model::types::Usage,
        cost_microdollars: u64,
    ) {
        if let Some(c) = &self.inner {
            c.meter.carry_over(calls, usage, cost_microdollars);
        }
    }

    /// Gives `amount` microdollars of this client's cost budget away
    /// ([`Meter::give`]): a lead's gift to a teammate, out of the budget its
    /// own calls spend. Without a model policy nothing is counted (what a
    /// lead without one may give is bounded by its grant alone).
    pub fn give(&self, amount: u64) -> Result<(), String> {
        match &self.inner {
            Some(c) => c.meter.give(amount),
            None => Ok(()),
        }
    }

    /// Takes back a gift ([`Meter::give_back`]).
    pub fn give_back(&self, amount: u64) {
        if let Some(c) = &self.inner {
            c.meter.give_back(amount);
        }
    }

    /// Counts an earlier life's gifts ([`Meter::carry_over_given`]).
    pub fn carry_over_given(&self, amount: u64) {
        if let Some(c) = &self.inner {
            c.meter.carry_over_given(amount);
        }
    }

    /// What is left to give ([`Meter::cost_left_to_give`]); `None` without
    /// a cost budget or a model policy.
    pub fn cost_left_to_give(&self) -> Option<u64> {
        self.inner
            .as_ref()
            .and_then(|c| c.meter.cost_left_to_give())
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
                last_system: Default::default(),
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
    /// [`crate::model::transcript`]); empty without a model policy, without a
    /// transcript, or when the kept one cannot be read (logged).
    pub fn history(&self) -> Vec<crate::model::types::Message> {
        let Some(t) = self.inner.as_ref().and_then(|c| c.transcript.as_ref()) else {
            return Vec::new();
        };
        t.load().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the kept conversation is unreadable; the teammate starts afresh");
            Vec::new()
        })
    }

    /// What a fork of this agent starts from: the system prompt of its
    /// last kept call and its conversation as kept (the last answer's tool
    /// calls unanswered); `None` without a model policy or before its first
    /// kept call.
    pub fn fork_context(&self) -> Option<(Option<String>, Vec<crate::model::types::Message>)> {
        let c = self.inner.as_ref()?;
        let messages = c.transcript.as_ref()?.load_as_kept().ok()?;
        if messages.is_empty() {
            return None;
        }
        let system = c
            .last_system
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Some((system, messages))
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
        *self.last_system.lock().unwrap_or_else(|p| p.into_inner()) = request.system.clone();
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
                    let response = crate::model::replay_ids::rebind(response, request);
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
