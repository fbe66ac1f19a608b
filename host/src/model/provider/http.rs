//! The HTTP side shared by both dialects: one `reqwest` client per provider
//! (rustls with the ring provider, the platform's certificate verifier),
//! the retry loop, timeouts, streaming, and error texts that never hold a
//! key, a header or the provider's URL.
//!
//! # Retries
//!
//! 429 (the provider's rate limit), 500, 502, 503, 504, 529 (overloaded),
//! a refused or dropped connection, a timeout, and a stream that is
//! malformed or ends before its last event are retried, up to
//! `max_retries` times. The wait is the provider's `retry-after-ms` or
//! `retry-after` (seconds or an HTTP date) when it gives one, else
//! `retry_base` doubled per attempt with ±25 % jitter. A `retry-after`
//! longer than `max_retry_wait` is not waited: the call fails at once as
//! `rate-limited` with that wait, for the guest to decide. A 429 that says
//! the account's quota or spending limit is reached is never retried.
//! 400, 401, 403, 404, 413 and 422 are never retried. A 500 that comes
//! back word for word the same as the attempt before is not retried
//! again: servers that answer a request they cannot take with a 500
//! (llama.cpp's does, for a validation error) would otherwise be asked
//! the same question `max_retries` times.
//!
//! # Timeouts
//!
//! `connect_timeout` for the connection, `idle_timeout` for silence between
//! two pieces of a streamed answer (or for the whole body when not
//! streaming), `request_timeout` for one attempt from start to end.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::key_scrub::{self, KeyScrub};
use super::sse;
use super::{ApiKey, ProviderCall, ProviderError, ProviderSettings};
use crate::model::types::{ContentBlock, Response};

/// The most characters of a provider's error text a guest sees (cut after
/// the key is scrubbed out of the whole text, never before).
const MAX_ERROR_CHARS: usize = 300;

/// What a dialect knows about its wire format.
pub(super) trait Wire: Send + Sync {
    /// Authentication and version headers.
    fn headers(&self, key: Option<&ApiKey>) -> Result<HeaderMap, ProviderError>;
    /// The request body.
    fn body(&self, call: &ProviderCall<'_>, stream: bool) -> Result<Value, ProviderError>;
    /// A whole (not streamed) answer; an error means a malformed body.
    fn parse(&self, body: &[u8]) -> Result<Response, String>;
    /// A decoder for a streamed answer.
    fn decoder(&self) -> Box<dyn Decoder>;
    /// Whether a 429's body says the account's quota or spending cap is
    /// reached (not worth retrying).
    fn spend_cap(&self, body: &str) -> bool;
}

/// Builds a streamed answer from its events.
pub(super) trait Decoder: Send {
    /// One event; `Ok(true)` when it was the last.
    fn event(&mut self, event: sse::Event) -> Result<bool, StreamFailure>;
    /// The answer, once the last event came.
    fn finish(self: Box<Self>) -> Result<Response, String>;
}

/// Why a stream broke.
pub(super) enum StreamFailure {
    /// An event that does not parse or does not fit.
    Malformed(String),
    /// An error event from the provider, with whether to retry.
    Provider { message: String, retry: bool },
}

/// The outcome of one attempt that did not answer.
enum Failure {
    /// Worth another attempt, after `after` if the provider said.
    Retry {
        error: ProviderError,
        after: Option<Duration>,
    },
    /// A 500: worth one more attempt, but not when the next answer is
    /// the same error word for word (then the server means it).
    ServerError {
        error: ProviderError,
        after: Option<Duration>,
    },
    /// Final.
    Fatal(ProviderError),
}

/// A 500 that came back unchanged on a second attempt: final, saying so.
fn repeated(error: ProviderError) -> ProviderError {
    match error {
        ProviderError::Unavailable(text) => ProviderError::Unavailable(format!(
            "{text} (the same error twice in a row: not retried again)"
        )),
        other => other,
    }
}

/// One provider's HTTP client.
pub(super) struct Client {
    http: reqwest::Client,
    settings: ProviderSettings,
    url: String,
    /// The key's scrubber, built once.
    key_scrub: Option<KeyScrub>,
}

/// Installs ring as rustls's process-wide crypto provider (reqwest's
/// `rustls-no-provider` needs one); a provider installed before is kept.
fn crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Client {
    /// A client for `settings`, posting to `{base_url}{path}`.
    pub(super) fn new(settings: ProviderSettings, path: &str) -> crate::Result<Client> {
        let base = settings.base_url.trim_end_matches('/');
        let url = format!("{base}{path}");
        let parsed = reqwest::Url::parse(&url).map_err(|e| {
            crate::Error::ModelSetup(format!("the provider's base URL is not a URL ({e})"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(crate::Error::ModelSetup(
                "the provider's base URL must start with http:// or https://".into(),
            ));
        }
        crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .user_agent(concat!("teamhost/", env!("CARGO_PKG_VERSION")))
            .pool_idle_timeout(Duration::from_secs(90))
            .build()
            .map_err(|e| {
                crate::Error::ModelSetup(format!(
                    "cannot set up the HTTP client: {}",
                    e.without_url()
                ))
            })?;
        let key_scrub = settings
            .api_key
            .as_ref()
            .and_then(|k| KeyScrub::new(k.expose()));
        Ok(Client {
            http,
            settings,
            url,
            key_scrub,
        })
    }

    /// One completion, retried as the module docs say.
    pub(super) async fn complete(
        &self,
        wire: &dyn Wire,
        call: ProviderCall<'_>,
    ) -> Result<Response, ProviderError> {
        let stream = self.settings.stream;
        let body = serde_json::to_vec(&wire.body(&call, stream)?)
            .map_err(|e| ProviderError::Invalid(format!("cannot encode the request: {e}")))?;
        let headers = wire.headers(self.settings.api_key.as_ref())?;
        let mut attempt = 0u32;
        // The text of the last attempt's 500, to tell a lasting one.
        let mut last_500: Option<String> = None;
        loop {
            let failure = match tokio::time::timeout(
                self.settings.request_timeout,
                self.attempt(wire, &headers, body.clone(), stream),
            )
            .await
            {
                Ok(Ok(response)) => return Ok(self.scrub_response(response)),
                Ok(Err(f)) => f,
                Err(_) => Failure::Retry {
                    error: ProviderError::Unavailable(format!(
                        "no complete answer within {:?} (request_timeout)",
                        self.settings.request_timeout
                    )),
                    after: None,
                },
            };
            let (error, after) = match failure {
                Failure::Fatal(e) => return Err(self.scrub(e)),
                Failure::Retry { error, after } => {
                    last_500 = None;
                    (error, after)
                }
                Failure::ServerError { error, after } => {
                    let text = error.to_string();
                    if last_500.as_deref() == Some(text.as_str()) {
                        return Err(self.scrub(repeated(error)));
                    }
                    last_500 = Some(text);
                    (error, after)
                }
            };
            if let Some(after) = after.filter(|a| *a > self.settings.max_retry_wait) {
                return Err(self.scrub(rate_limited(error, after)));
            }
            if attempt >= self.settings.max_retries {
                return Err(self.scrub(error));
            }
            let wait = after.unwrap_or_else(|| backoff(self.settings.retry_base, attempt));
            tracing::debug!(attempt, wait_ms = wait.as_millis() as u64, error = %self.scrub(error.clone()), "model call retried");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        wire: &dyn Wire,
        headers: &HeaderMap,
        body: Vec<u8>,
        stream: bool,
    ) -> Result<Response, Failure> {
        let sent = self
            .http
            .post(&self.url)
            .headers(headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send();
        // Silence before the answer starts counts as idle time too.
        let response = match tokio::time::timeout(self.settings.idle_timeout, sent).await {
            Err(_) => {
                return Err(Failure::Retry {
                    error: ProviderError::Unavailable(format!(
                        "no answer began within {:?} (idle_timeout)",
                        self.settings.idle_timeout
                    )),
                    after: None,
                })
            }
            Ok(r) => r.map_err(|e| Failure::Retry {
                error: ProviderError::Unavailable(connection_text(&e)),
                after: None,
            })?,
        };
        let status = response.status().as_u16();
        if status != 200 {
            let after = retry_after(response.headers());
            let text = String::from_utf8_lossy(&self.read_all(response).await.unwrap_or_default())
                .into_owned();
            let message = provider_message(&text);
            return Err(match status {
                429 if wire.spend_cap(&text) => Failure::Fatal(ProviderError::SpendCap(message)),
                429 => Failure::Retry {
                    error: ProviderError::RateLimited {
                        retry_after: after.unwrap_or_default(),
                        message: format!("429: {message}"),
                    },
                    after,
                },
                401 | 403 => {
                    Failure::Fatal(ProviderError::Credentials(format!("{status}: {message}")))
                }
                400 | 404 | 413 | 422 => {
                    Failure::Fatal(ProviderError::Invalid(format!("{status}: {message}")))
                }
                500 => Failure::ServerError {
                    error: ProviderError::Unavailable(format!("{status}: {message}")),
                    after,
                },
                502 | 503 | 504 | 529 => Failure::Retry {
                    error: ProviderError::Unavailable(format!("{status}: {message}")),
                    after,
                },
                _ => Failure::Fatal(ProviderError::Unavailable(format!("{status}: {message}"))),
            });
        }
        if !stream {
            let bytes = self
                .read_all(response)
                .await
                .map_err(|error| Failure::Retry { error, after: None })?;
            return wire.parse(&bytes).map_err(|e| Failure::Retry {
                error: ProviderError::Unavailable(format!("a malformed answer: {e}")),
                after: None,
            });
        }
        let mut decoder = wire.decoder();
        let mut parser = sse::Parser::default();
        let mut chunks = response.bytes_stream();
        loop {
            let chunk = match tokio::time::timeout(self.settings.idle_timeout, chunks.next()).await
            {
                Err(_) => {
                    return Err(Failure::Retry {
                        error: ProviderError::Unavailable(format!(
                            "the answer stalled for {:?} (idle_timeout)",
                            self.settings.idle_timeout
                        )),
                        after: None,
                    })
                }
                Ok(None) => {
                    return Err(Failure::Retry {
                        error: ProviderError::Unavailable(
                            "the answer's stream ended before its last event".into(),
                        ),
                        after: None,
                    })
                }
                Ok(Some(Err(e))) => {
                    return Err(Failure::Retry {
                        error: ProviderError::Unavailable(connection_text(&e)),
                        after: None,
                    })
                }
                Ok(Some(Ok(bytes))) => bytes,
            };
            let events = parser.feed(&chunk).map_err(|e| Failure::Retry {
                error: ProviderError::Unavailable(format!("a malformed stream: {e}")),
                after: None,
            })?;
            for event in events {
                match decoder.event(event) {
                    Ok(false) => {}
                    Ok(true) => {
                        return decoder.finish().map_err(|e| Failure::Retry {
                            error: ProviderError::Unavailable(format!("a malformed stream: {e}")),
                            after: None,
                        })
                    }
                    Err(StreamFailure::Malformed(e)) => {
                        return Err(Failure::Retry {
                            error: ProviderError::Unavailable(format!("a malformed stream: {e}")),
                            after: None,
                        })
                    }
                    Err(StreamFailure::Provider { message, retry }) => {
                        let error = ProviderError::Unavailable(format!(
                            "the provider stopped the answer: {message}"
                        ));
                        return Err(if retry {
                            Failure::Retry { error, after: None }
                        } else {
                            Failure::Fatal(error)
                        });
                    }
                }
            }
        }
    }

    /// A whole body, within the idle timeout, at most 64 MiB.
    async fn read_all(&self, response: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
        const MAX: usize = 64 << 20;
        let mut out = Vec::new();
        let mut chunks = response.bytes_stream();
        loop {
            match tokio::time::timeout(self.settings.idle_timeout, chunks.next()).await {
                Err(_) => {
                    return Err(ProviderError::Unavailable(
                        "the answer stalled (idle_timeout)".into(),
                    ))
                }
                Ok(None) => return Ok(out),
                Ok(Some(Err(e))) => return Err(ProviderError::Unavailable(connection_text(&e))),
                Ok(Some(Ok(b))) => {
                    if out.len() + b.len() > MAX {
                        return Err(ProviderError::Unavailable(
                            "the answer is larger than 64 MiB".into(),
                        ));
                    }
                    out.extend_from_slice(&b);
                }
            }
        }
    }

    /// `e` with the key and every piece of it taken out of its text (see
    /// [`key_scrub`]), should a provider ever echo it, then cut to
    /// [`MAX_ERROR_CHARS`]: the cut comes after the scrub, so it cannot fall
    /// inside a key and leave its start. Every error a call returns or logs
    /// passes through here.
    fn scrub(&self, e: ProviderError) -> ProviderError {
        let clean = |s: String| {
            let s = match &self.key_scrub {
                Some(k) => k.scrub(&s),
                None => s,
            };
            key_scrub::cut(&s, MAX_ERROR_CHARS)
        };
        match e {
            ProviderError::RateLimited {
                retry_after,
                message,
            } => ProviderError::RateLimited {
                retry_after,
                message: clean(message),
            },
            ProviderError::SpendCap(m) => ProviderError::SpendCap(clean(m)),
            ProviderError::Unavailable(m) => ProviderError::Unavailable(clean(m)),
            ProviderError::Invalid(m) => ProviderError::Invalid(clean(m)),
            ProviderError::Credentials(m) => ProviderError::Credentials(clean(m)),
        }
    }

    /// An answer with the key scrubbed out of its texts. A provider has no
    /// reason to put its caller's key in the model's answer, but an
    /// endpoint that reflects its request might; what reaches a guest (and
    /// its transcript) never holds it.
    fn scrub_response(&self, mut r: Response) -> Response {
        let Some(k) = &self.key_scrub else {
            return r;
        };
        for block in &mut r.content {
            match block {
                ContentBlock::Text(t) => *t = k.scrub(t),
                ContentBlock::Thinking(t) => t.text = k.scrub(&t.text),
                ContentBlock::ToolUse(_) | ContentBlock::ToolResult(_) => {}
            }
        }
        r
    }
}

/// A failure turned into `rate-limited` with the provider's wait.
fn rate_limited(error: ProviderError, after: Duration) -> ProviderError {
    let message = match error {
        ProviderError::RateLimited { message, .. } => message,
        other => other.to_string(),
    };
    ProviderError::RateLimited {
        retry_after: after,
        message,
    }
}

/// `base × 2^attempt`, ±25 %.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.min(16));
    let jitter = 0.75 + fastrand::f64() * 0.5;
    exp.mul_f64(jitter)
}

/// The provider's wait: `retry-after-ms`, else `retry-after` in seconds or
/// as an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0));
    }
    let v = text("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let wait = when.signed_duration_since(chrono::Utc::now());
    Some(wait.to_std().unwrap_or_default())
}

/// The provider's own error message from a body, or the body itself
/// (whole: [`Client::scrub`] cuts it, after the scrub).
fn provider_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        let e = v.get("error")?;
        let m = e
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| e.as_str())?;
        let kind = e.get("type").and_then(Value::as_str);
        Some(match kind {
            Some(k) => format!("{k}: {m}"),
            None => m.to_string(),
        })
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        "(no message)".to_string()
    } else {
        text
    }
}

/// A connection error, without the URL reqwest would put in it.
fn connection_text(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the connection broke while the answer came"
    } else {
        "the request failed"
    };
    // `without_url` drops the URL; the source chain says why (refused, reset, …).
    let mut cause = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if cause.is_empty() {
        what.to_string()
    } else {
        format!("{what}: {cause}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            retry_after(&d),
            Some(Duration::ZERO),
            "a date in the past: no wait"
        );
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn provider_messages_come_from_either_dialects_error_body() {
        assert_eq!(
            provider_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            provider_message(
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#
            ),
            "insufficient_quota: You exceeded your current quota"
        );
        assert_eq!(provider_message("  "), "(no message)");
        assert_eq!(
            provider_message(&"x".repeat(1000)).len(),
            1000,
            "not cut here: the cut comes after the scrub"
        );
    }

    #[test]
    fn backoff_doubles_with_jitter() {
        let b = backoff(Duration::from_millis(100), 3);
        assert!(
            b >= Duration::from_millis(600) && b <= Duration::from_millis(1000),
            "{b:?}"
        );
    }
}
