//! WebFetch's fetcher: one `http://` or `https://` URL fetched for a
//! teammate by the host, held to the same [`Gate`] as its proxy, and its
//! text returned (an HTML page as Markdown).
//!
//! | step | what | refused when |
//! |---|---|---|
//! | 1 | the URL parsed (the `url` crate: the WHATWG standard, so `127.1` is `127.0.0.1`) | not a URL; a scheme other than `http` and `https` |
//! | 2 | its host and port admitted by the [`Gate`]: rules, a question about a host no rule names, every resolved address checked | what the gate refuses |
//! | 3 | the request sent to the checked addresses only (a client per hop whose resolver answers those addresses and nothing else; no proxy, no redirect followed by the client, no compression asked for) | no answer in time; an answer from another address |
//! | 4 | a redirect (301, 302, 303, 307, 308 with a `Location`) resolved against the URL it came from and taken again from step 1, at most [`FetchLimits::max_redirects`] times | a scheme other than `http` and `https`; one hop too many |
//! | 5 | the type: text only ([`is_text`]'s list) | any other type, named in the error; a compressed body |
//! | 6 | the body read as a stream, cut at [`FetchLimits::max_bytes`] (never more is held: a response of many GiB costs `max_bytes`) | — (`truncated` says so) |
//! | 7 | HTML turned into Markdown (`htmd`), a page nested past 512 elements bounded first (`fetch/html.rs`); other text decoded as UTF-8 (a byte that is not is replaced) | — |
//!
//! The network time of the whole fetch (every hop's connection, request
//! and body) is bounded by [`FetchLimits::timeout`]; the time a question
//! waits for its answer is not counted (the [`super::Asker`] bounds that),
//! nor the conversion to Markdown (on a thread of its own, seconds at worst
//! for a page built to be slow: `fetch/html.rs`).
//! An answer that is not a redirect is returned whatever its status (a 404
//! page is text too): `status` says which.
//!
//! With a [`FetchTape`] a fetch is recorded, or answered from the tape with
//! no network, no rule and no question (the run is replayed as recorded).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::gate::Gate;
use super::target::Target;

mod hop;
mod html;
mod tape;
mod text;

pub use tape::{FetchTape, TapeMode};
pub use text::is_text;

/// A fetch's bounds.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    /// The most body bytes read (default 10 MiB); past it the text is cut
    /// and [`Fetched::truncated`] set.
    pub max_bytes: u64,
    /// The network time of the whole fetch, every hop together (default
    /// 30 s).
    pub timeout: Duration,
    /// The most redirects followed (default 10).
    pub max_redirects: u32,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            max_bytes: 10 << 20,
            timeout: Duration::from_secs(30),
            max_redirects: 10,
        }
    }
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    /// Where it ended, after the redirects.
    pub url: String,
    /// The final answer's HTTP status.
    pub status: u16,
    /// Its type as the server named it, lower case, without parameters
    /// (`text/html`), or `""` when it named none.
    pub content_type: String,
    /// The page as Markdown (HTML) or as text.
    pub text: String,
    /// The body bytes read.
    pub bytes: u64,
    /// Whether the body went on past [`FetchLimits::max_bytes`].
    pub truncated: bool,
    /// The URLs that answered with a redirect, in order.
    pub redirects: Vec<String>,
}

/// Why a fetch failed; each says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum FetchError {
    /// Not an `http://` or `https://` URL.
    #[error("{0}")]
    BadUrl(String),
    /// The gate refused a hop (`from`: the URL that redirected to it).
    #[error("{url} is refused{}: {why}. Ask for another source, or have the person allow the host in the teammate's network rules", from.as_ref().map(|f| format!(" (a redirect from {f})")).unwrap_or_default())]
    Refused {
        /// The refused hop.
        url: String,
        /// What redirected to it, if a redirect did.
        from: Option<String>,
        /// The gate's reason.
        why: String,
    },
    /// More redirects than [`FetchLimits::max_redirects`].
    #[error("{url} redirected {max} times and on again: not followed further (a redirect loop?)")]
    TooManyRedirects {
        /// The URL that redirected once too often.
        url: String,
        /// The limit.
        max: u32,
    },
    /// A type that is not text.
    #[error("{url} answered {content_type:?}, which is not text: WebFetch returns text pages only (HTML, plain text, JSON, XML, …)")]
    NotText {
        /// The URL.
        url: String,
        /// The type the server named.
        content_type: String,
    },
    /// No complete answer within [`FetchLimits::timeout`].
    #[error(
        "{url} gave no complete answer within {timeout_ms} ms: try again later or another source"
    )]
    Timeout {
        /// The hop being fetched.
        url: String,
        /// The limit, in milliseconds.
        timeout_ms: u64,
    },
    /// The exchange failed (no connection, a broken answer, TLS).
    #[error("{url} could not be fetched: {why}")]
    Failed {
        /// The hop.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// Replaying, and the tape holds no fetch of this URL.
    #[error("{0}")]
    NotRecorded(String),
    /// Recording, and the tape could not be written.
    #[error("{0}")]
    Tape(String),
}

/// What the fetcher did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchUsage {
    /// Fetches that went to the network, refused ones included.
    pub fetches: u64,
    /// Fetches answered from the tape.
    pub replayed: u64,
    /// Body bytes read.
    pub bytes: u64,
    /// Hosts reached (`host:port`, each hop) and how many times.
    pub reached: BTreeMap<String, u64>,
    /// URLs refused and why, the latest reason each (at most 1000).
    pub refused: BTreeMap<String, String>,
}

/// One teammate's fetcher (see the module docs).
pub struct Fetcher {
    gate: Arc<Gate>,
    limits: FetchLimits,
    tape: Option<Arc<FetchTape>>,
    usage: Mutex<FetchUsage>,
}

impl Fetcher {
    /// A fetcher admitting every hop through `gate` (the teammate's, shared
    /// with its proxy), within `limits`, with no tape.
    pub fn new(gate: Arc<Gate>, limits: FetchLimits) -> Fetcher {
        Fetcher {
            gate,
            limits,
            tape: None,
            usage: Mutex::new(FetchUsage::default()),
        }
    }

    /// The same, recording to or replaying from `tape` ([`TapeMode`]).
    pub fn with_tape(mut self, tape: Arc<FetchTape>) -> Fetcher {
        self.tape = Some(tape);
        self
    }

    /// What it did so far.
    pub fn usage(&self) -> FetchUsage {
        self.lock().clone()
    }

    /// Fetches `url` (see the module docs): from the tape when it replays
    /// and holds it, else from the network (recorded when the tape
    /// records). A refusal is recorded and replayed as one.
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        if let Some(tape) = &self.tape {
            match tape.lookup(url) {
                Some(outcome) => {
                    self.lock().replayed += 1;
                    return outcome;
                }
                None if !tape.mode().records() => return Err(tape.not_recorded(url)),
                None => {}
            }
        }
        let started = Instant::now();
        let outcome = self.fetch_live(url).await;
        {
            let mut u = self.lock();
            u.fetches += 1;
            if let Ok(f) = &outcome {
                u.bytes += f.bytes;
            }
            if let Err(e) = &outcome {
                if u.refused.len() < 1000 || u.refused.contains_key(url) {
                    u.refused.insert(url.to_string(), e.to_string());
                }
            }
        }
        if let Some(tape) = &self.tape {
            tape.record(url, &outcome, started.elapsed())?;
        }
        outcome
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FetchUsage> {
        self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Steps 1–7, hop after hop.
    async fn fetch_live(&self, url: &str) -> Result<Fetched, FetchError> {
        let mut current = parse(url)?;
        let mut redirects: Vec<String> = Vec::new();
        let mut spent = Duration::ZERO;
        loop {
            let target = target_of(&current)?;
            let addrs = self
                .gate
                .admit(&target)
                .await
                .map_err(|why| FetchError::Refused {
                    url: current.to_string(),
                    from: redirects.last().cloned(),
                    why,
                })?;
            let left = self.limits.timeout.saturating_sub(spent);
            let started = Instant::now();
            let step = tokio::time::timeout(
                left,
                hop::exchange(&current, &target, &addrs, self.limits.max_bytes),
            )
            .await;
            spent += started.elapsed();
            let step = step.map_err(|_| FetchError::Timeout {
                url: current.to_string(),
                timeout_ms: self.limits.timeout.as_millis() as u64,
            })??;
            *self.lock().reached.entry(target.to_string()).or_default() += 1;
            match step {
                hop::Step::Redirect(location) => {
                    if redirects.len() as u32 >= self.limits.max_redirects {
                        return Err(FetchError::TooManyRedirects {
                            url: current.to_string(),
                            max: self.limits.max_redirects,
                        });
                    }
                    let next = redirect_target(&current, &location)?;
                    redirects.push(current.to_string());
                    current = next;
                }
                hop::Step::Page(mut page) => {
                    let text = match text::is_html(&page.content_type) {
                        true => {
                            // The host's CPU: at most MAX_HTML of markup is
                            // parsed (a hostile page costs seconds per 10 MiB).
                            if page.body.len() > MAX_HTML {
                                page.body.truncate(MAX_HTML);
                                page.truncated = true;
                            }
                            html::to_markdown(page.body).await
                        }
                        false => String::from_utf8_lossy(&page.body).into_owned(),
                    };
                    return Ok(Fetched {
                        url: current.to_string(),
                        status: page.status,
                        content_type: page.content_type,
                        text,
                        bytes: page.bytes,
                        truncated: page.truncated,
                        redirects,
                    });
                }
            }
        }
    }
}

/// The most HTML turned into Markdown per fetch (the rest is cut and
/// `truncated` set): far more text than a tool result carries, and a
/// bound on the host's CPU, which an adversarial page of 10 MiB can keep
/// busy for seconds in the parser.
pub const MAX_HTML: usize = 1 << 20;

/// Step 1: an `http://` or `https://` URL.
fn parse(url: &str) -> Result<url::Url, FetchError> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| {
        FetchError::BadUrl(format!(
            "{url:?} is not a URL ({e}): give an absolute http:// or https:// URL"
        ))
    })?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(FetchError::BadUrl(format!(
            "{url:?} is a {other}: URL; WebFetch fetches http:// and https:// only"
        ))),
    }
}

/// Where a redirect from `from` to `location` goes, or why it is refused.
fn redirect_target(from: &url::Url, location: &str) -> Result<url::Url, FetchError> {
    let next = from.join(location).map_err(|e| FetchError::Refused {
        url: location.to_string(),
        from: Some(from.to_string()),
        why: format!("the redirect's Location is not a URL ({e})"),
    })?;
    match next.scheme() {
        "http" | "https" => Ok(next),
        other => Err(FetchError::Refused {
            url: next.to_string(),
            from: Some(from.to_string()),
            why: format!("a redirect to a {other}: URL (only http and https are followed)"),
        }),
    }
}

/// The host and port a URL names, as the gate reads them.
fn target_of(url: &url::Url) -> Result<Target, FetchError> {
    let bad = |why: String| FetchError::BadUrl(format!("{url}: {why}"));
    let host = url
        .host_str()
        .ok_or_else(|| bad("the URL names no host".into()))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| bad("the URL names no port".into()))?;
    Target::new(host, port).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Answer, Asker, BoxFuture, MapResolver, NetworkRules};

    #[test]
    fn a_fetch_can_run_on_any_task_and_the_fetcher_be_shared() {
        struct Never;
        impl Asker for Never {
            fn ask<'a>(&'a self, _: &'a Target) -> BoxFuture<'a, Answer> {
                Box::pin(async { Answer::No("no".into()) })
            }
        }
        fn send<T: Send>(_: T) {}
        fn shared<T: Send + Sync>() {}
        shared::<Fetcher>();
        let rules = NetworkRules::new(&[], &[], None).unwrap();
        let resolver = Arc::new(MapResolver::default());
        let gate = Gate::new(rules, Arc::new(Never), resolver, Duration::from_secs(1));
        let fetcher = Fetcher::new(gate, FetchLimits::default());
        send(fetcher.fetch("http://a.test/"));
    }

    #[test]
    fn only_http_and_https_urls_are_fetched() {
        assert!(parse("https://example.com/a").is_ok());
        assert!(parse("http://127.1:8080/").is_ok());
        for bad in [
            "file:///etc/passwd",
            "ftp://x/",
            "gopher://x/",
            "nonsense",
            "",
        ] {
            assert!(
                matches!(parse(bad), Err(FetchError::BadUrl(_))),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn ip_literals_are_read_as_the_gate_reads_them() {
        for spelling in ["127.1", "2130706433", "0x7f000001", "0177.0.0.1"] {
            let t = target_of(&parse(&format!("http://{spelling}/")).unwrap()).unwrap();
            assert_eq!(t.to_string(), "127.0.0.1:80", "{spelling}");
        }
        let t = target_of(&parse("https://[::ffff:127.0.0.1]/").unwrap()).unwrap();
        assert_eq!(t.to_string(), "[::ffff:127.0.0.1]:443");
    }

    #[test]
    fn redirects_are_resolved_and_held_to_http() {
        let from = parse("http://a.test/dir/page?q=1").unwrap();
        assert_eq!(
            redirect_target(&from, "other").unwrap().as_str(),
            "http://a.test/dir/other"
        );
        assert_eq!(
            redirect_target(&from, "//b.test/x").unwrap().as_str(),
            "http://b.test/x"
        );
        for bad in ["file:///etc/passwd", "ftp://b.test/", "data:text/plain,hi"] {
            assert!(
                matches!(redirect_target(&from, bad), Err(FetchError::Refused { .. })),
                "{bad}"
            );
        }
    }
}
