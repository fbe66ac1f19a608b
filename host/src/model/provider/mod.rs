//! The providers the host talks to for its teammates: one trait, one file per
//! wire dialect (Anthropic Messages, OpenAI-compatible chat completions), the
//! shared HTTP client (timeouts, retries honouring `retry-after`, streaming)
//! in `http.rs` and the SSE parser in `sse.rs`.
//!
//! A provider gets a request whose model alias the broker has already
//! resolved and whose policy it has already checked; it only speaks HTTP. It
//! owns the credentials it was built with and keeps them out of everything
//! it returns: no [`ProviderError`] text ever holds a key, a header or the
//! provider's URL.

mod anthropic;
mod cache_breakpoints;
mod http;
pub mod key_scrub;
mod openai;
mod sse;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::types::{ModelError, Request, Response};

/// A boxed `Send` future (the trait is object-safe, so the broker can hold
/// any provider).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a provider is asked: the guest's request with the alias resolved.
#[derive(Debug, Clone, Copy)]
pub struct ProviderCall<'a> {
    /// The provider's model id (`claude-sonnet-4-5`, `gpt-4o-mini`, …).
    pub model_id: &'a str,
    /// The request as the guest made it (its `model` field is the alias:
    /// use `model_id`).
    pub request: &'a Request,
    /// `max_tokens` to send: the request's, or the policy's per-call maximum.
    pub max_tokens: u32,
    /// Whether the model's settings allow prompt caching (the provider's
    /// must too; only the Anthropic dialect marks anything).
    pub prompt_caching: bool,
}

/// A model provider. Dropping the future returned by `complete` cancels the
/// call (the HTTP request is abandoned): that is how a stopped teammate's
/// call ends.
pub trait Provider: Send + Sync + 'static {
    /// `"anthropic"`, `"openai"` or `"scripted"`: for logs and cassette
    /// headers.
    fn kind(&self) -> &'static str;

    /// One completion, with the host's retries already spent on transient
    /// failures when this returns an error.
    fn complete<'a>(
        &'a self,
        call: ProviderCall<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>>;
}

/// Why a provider call failed, after the host's own retries. The text says
/// what happened for a person; it never holds a key, a header or a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// 429 for the provider's rate limit, still after the retries (or with a
    /// `retry-after` longer than the host waits).
    #[error("rate limited by the provider: {message}")]
    RateLimited {
        /// What the provider asked for (or the host's last back-off).
        retry_after: Duration,
        message: String,
    },
    /// A 429 that retrying cannot cure: the account's spending cap or quota.
    #[error("the provider's spending limit for the host's account is reached: {0}")]
    SpendCap(String),
    /// 5xx, 529 overloaded, a timeout, a refused connection, a malformed or
    /// truncated stream.
    #[error("the provider is unavailable: {0}")]
    Unavailable(String),
    /// The provider refused the request as malformed (400, 404, 413, 422).
    #[error("the provider refused the request: {0}")]
    Invalid(String),
    /// 401 or 403: the host's credentials (its configuration, not the
    /// guest's doing).
    #[error("the provider rejected the host's credentials: {0}")]
    Credentials(String),
}

impl From<ProviderError> for ModelError {
    fn from(e: ProviderError) -> Self {
        match e {
            ProviderError::RateLimited {
                retry_after,
                message,
            } => ModelError::RateLimited {
                retry_after_ms: retry_after.as_millis().min(u64::MAX as u128) as u64,
                message,
            },
            e @ (ProviderError::SpendCap(_)
            | ProviderError::Unavailable(_)
            | ProviderError::Credentials(_)) => ModelError::Unavailable(e.to_string()),
            ProviderError::Invalid(m) => {
                ModelError::Invalid(format!("the provider refused it: {m}"))
            }
        }
    }
}

/// The two wire formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// `POST {base}/v1/messages`, `x-api-key`, `anthropic-version`.
    Anthropic,
    /// `POST {base}/chat/completions` (base usually ends in `/v1`),
    /// `Authorization: Bearer`; OpenAI, vLLM, llama.cpp, Ollama, LM Studio.
    Openai,
}

/// An API key. Its `Debug` and `Display` never show it; only
/// [`ApiKey::expose`] does, for the one header that carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (surrounding whitespace removed).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into().trim().to_string())
    }
    /// The key itself: only for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<hidden>)")
    }
}

/// How to reach one provider, and how patiently.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    /// Which wire format.
    pub dialect: Dialect,
    /// `https://api.anthropic.com`, `https://api.openai.com/v1`,
    /// `http://127.0.0.1:8080/v1`, … (no trailing slash needed).
    pub base_url: String,
    /// `None` for a local server that wants none.
    pub api_key: Option<ApiKey>,
    /// Stream the answer (SSE). Default true.
    pub stream: bool,
    /// Connecting. Default 10 s.
    pub connect_timeout: Duration,
    /// Silence allowed between two pieces of a streamed answer (or before
    /// the whole answer when not streaming). Default 120 s.
    pub idle_timeout: Duration,
    /// One attempt from start to end. Default 10 min.
    pub request_timeout: Duration,
    /// Retries after 429 (rate limit), 5xx, 529 and connection failures.
    /// Default 4.
    pub max_retries: u32,
    /// The first back-off; doubled per retry, with jitter, when the provider
    /// gives no `retry-after`. Default 500 ms.
    pub retry_base: Duration,
    /// The longest `retry-after` the host waits itself; a longer one is
    /// returned to the guest as `rate-limited`. Default 60 s.
    pub max_retry_wait: Duration,
    /// Mark cache breakpoints in requests (Anthropic dialect only; the
    /// OpenAI dialect caches by itself and sends nothing for it). Default
    /// true.
    pub prompt_caching: bool,
}

impl ProviderSettings {
    /// Settings with the documented defaults.
    pub fn new(dialect: Dialect, base_url: impl Into<String>, api_key: Option<ApiKey>) -> Self {
        ProviderSettings {
            dialect,
            base_url: base_url.into(),
            api_key,
            stream: true,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(600),
            max_retries: 4,
            retry_base: Duration::from_millis(500),
            max_retry_wait: Duration::from_secs(60),
            prompt_caching: true,
        }
    }
}

/// Builds the provider `settings` describe. Fails (with a message that
/// names no key) when the HTTP client cannot be built or the URL is not
/// `http`/`https`.
pub fn build(settings: ProviderSettings) -> crate::Result<Arc<dyn Provider>> {
    Ok(match settings.dialect {
        Dialect::Anthropic => Arc::new(anthropic::Anthropic::new(settings)?),
        Dialect::Openai => Arc::new(openai::OpenAi::new(settings)?),
    })
}
