//! One hop of a fetch: the request sent to addresses the gate checked, and
//! the answer read as a redirect or as a page whose body is cut at the
//! byte limit.
//!
//! The client is built for this hop alone: its resolver answers every name
//! with the checked addresses (and `resolve_to_addrs` pins the host's own
//! name to them), so nothing is resolved again; it follows no redirect,
//! uses no proxy from the environment, asks for no compression (none is
//! built into it) and keeps no cookie. An answer that came from an address
//! the gate did not check is refused.

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::text;
use super::FetchError;
use crate::network::target::{Host, Target};

/// What one hop answered.
pub(super) enum Step {
    /// A redirect, and its `Location` as sent.
    Redirect(String),
    /// A page of text.
    Page(Page),
}

/// A page's answer, its body cut at the limit.
pub(super) struct Page {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    pub bytes: u64,
    pub truncated: bool,
}

/// A resolver that answers every name with the checked addresses.
struct Pinned(Vec<SocketAddr>);

impl Resolve for Pinned {
    fn resolve(&self, _name: Name) -> Resolving {
        let addrs = self.0.clone();
        Box::pin(async move { Ok(Box::new(addrs.into_iter()) as Addrs) })
    }
}

/// Sends a GET for `url` (whose host is `target`) to `addrs` and reads the
/// answer, at most `max_bytes` of its body.
pub(super) async fn exchange(
    url: &url::Url,
    target: &Target,
    addrs: &[SocketAddr],
    max_bytes: u64,
) -> Result<Step, FetchError> {
    let failed = |why: String| FetchError::Failed {
        url: url.to_string(),
        why,
    };
    let client = client(target, addrs).map_err(&failed)?;
    let mut response = client
        .get(url.as_str())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/markdown;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.1",
        )
        .send()
        .await
        .map_err(|e| failed(describe(&e)))?;
    if let Some(from) = response.remote_addr() {
        if !addrs.contains(&from) {
            return Err(failed(format!(
                "the answer came from {from}, not an address that was checked"
            )));
        }
    }
    let status = response.status().as_u16();
    if matches!(status, 301 | 302 | 303 | 307 | 308) {
        if let Some(location) = response.headers().get(reqwest::header::LOCATION) {
            let location = location
                .to_str()
                .map_err(|_| failed("the redirect's Location is not ASCII".into()))?;
            return Ok(Step::Redirect(location.to_string()));
        }
    }
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    if let Some(encoding) = header(reqwest::header::CONTENT_ENCODING) {
        if !encoding.trim().eq_ignore_ascii_case("identity") {
            return Err(failed(format!(
                "the page came compressed ({encoding}), which the fetcher does not decode"
            )));
        }
    }
    let content_type = text::media_type(header(reqwest::header::CONTENT_TYPE).as_deref());
    if !content_type.is_empty() && !text::is_text(&content_type) {
        return Err(FetchError::NotText {
            url: url.to_string(),
            content_type,
        });
    }
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(describe(&e)))? {
        let room = max_bytes.saturating_sub(body.len() as u64) as usize;
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    // A page whose server named no type is text only when it reads as
    // text: UTF-8 (a character cut at the end aside), no NUL byte.
    if content_type.is_empty() && !text::looks_like_text(&body) {
        return Err(FetchError::NotText {
            url: url.to_string(),
            content_type: "(none named; the body is not text)".into(),
        });
    }
    Ok(Step::Page(Page {
        status,
        content_type,
        bytes: body.len() as u64,
        body,
        truncated,
    }))
}

/// A client for one hop to `target` at `addrs`.
fn client(target: &Target, addrs: &[SocketAddr]) -> Result<reqwest::Client, String> {
    // reqwest's `rustls-no-provider` needs a process-wide provider; one
    // installed before is kept.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(Pinned(addrs.to_vec())))
        .user_agent(concat!(
            "teamhost/",
            env!("CARGO_PKG_VERSION"),
            " (WebFetch)"
        ))
        .pool_max_idle_per_host(0);
    if let Host::Name(name) = &target.host {
        builder = builder.resolve_to_addrs(name, addrs);
    }
    builder
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {}", describe(&e)))
}

/// A reqwest error with its causes, without the URL (the caller names it).
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
