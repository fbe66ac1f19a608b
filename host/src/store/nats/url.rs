//! [`NatsUrl`]: where a NATS store lives, as the lead names it
//! (`--store nats://[USER:PASS@]HOST:PORT[/PREFIX]`, `$TEAMHOST_STORE`, the
//! manifest's `[team] store`), and how it is shown.
//!
//! The URL may carry credentials (`user:password@`, or a token as the user
//! part). They are treated like keys: kept only to connect, never in
//! [`NatsUrl::display`], in errors, logs, pseudo paths or a teammate's
//! view. `Debug` shows the redacted form too.
//!
//! | part | default | rule |
//! |---|---|---|
//! | scheme | — | `nats://` or `tls://` |
//! | port | 4222 | |
//! | prefix | `teamhost` | 1–32 of `A-Z a-z 0-9 _ -`: it starts every bucket, stream and subject name |

use crate::error::{Error, Result};

/// The prefix when the URL has none.
pub const DEFAULT_PREFIX: &str = "teamhost";

/// Longest prefix accepted (bucket and stream names stay short).
const MAX_PREFIX: usize = 32;

/// A parsed `nats://` store URL.
#[derive(Clone, PartialEq, Eq)]
pub struct NatsUrl {
    scheme: String,
    credentials: Option<String>,
    host: String,
    port: u16,
    prefix: String,
}

impl std::fmt::Debug for NatsUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NatsUrl({})", self.display())
    }
}

impl NatsUrl {
    /// Whether `s` names a NATS store (its scheme is `nats://` or `tls://`).
    pub fn is_nats(s: &str) -> bool {
        s.starts_with("nats://") || s.starts_with("tls://")
    }

    /// Parses `nats://[CREDENTIALS@]HOST[:PORT][/PREFIX]`. The error never
    /// repeats the credentials.
    pub fn parse(s: &str) -> Result<NatsUrl> {
        let bad = |why: &str| {
            Error::StoreUrl(format!(
                "store URL {}: {why}; the form is nats://HOST:PORT[/PREFIX] (PREFIX: letters, digits, '_' and '-')",
                redact(s)
            ))
        };
        let (scheme, rest) = s
            .split_once("://")
            .filter(|(sc, _)| *sc == "nats" || *sc == "tls")
            .ok_or_else(|| bad("the scheme must be nats:// or tls://"))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (credentials, hostport) = match authority.rsplit_once('@') {
            Some((c, h)) if !c.is_empty() => (Some(c.to_string()), h),
            Some(_) => return Err(bad("empty credentials before '@'")),
            None => (None, authority),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            // An IPv6 literal keeps its brackets: [::1]:4222.
            Some((h, p)) if !p.contains(']') => (
                h,
                p.parse::<u16>()
                    .map_err(|_| bad("the port is not a number"))?,
            ),
            _ => (hostport, 4222),
        };
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(bad("no host"));
        }
        let prefix = path.trim_end_matches('/');
        let prefix = if prefix.is_empty() {
            DEFAULT_PREFIX
        } else {
            prefix
        };
        if prefix.len() > MAX_PREFIX
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(bad(&format!(
                "the prefix {prefix:?} must be 1 to {MAX_PREFIX} letters, digits, '_' or '-'"
            )));
        }
        Ok(NatsUrl {
            scheme: scheme.to_string(),
            credentials,
            host: host.to_string(),
            port,
            prefix: prefix.to_string(),
        })
    }

    /// The prefix every bucket, stream and subject name starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `HOST:PORT`, for error messages.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The URL without credentials: `nats://HOST:PORT/PREFIX`. The only form
    /// that is ever shown.
    pub fn display(&self) -> String {
        format!(
            "{}://{}:{}/{}",
            self.scheme, self.host, self.port, self.prefix
        )
    }

    /// What the client connects to, credentials included. Never log it.
    pub(super) fn connect_address(&self) -> String {
        match &self.credentials {
            Some(c) => format!("{}://{c}@{}:{}", self.scheme, self.host, self.port),
            None => format!("{}://{}:{}", self.scheme, self.host, self.port),
        }
    }

    /// The URL to hand a child `teamhost teammate` (`--store`), credentials
    /// included: the child connects with them. See the module docs of
    /// [`super`] for why this does not reach a teammate.
    pub fn to_arg(&self) -> String {
        match &self.credentials {
            Some(c) => format!(
                "{}://{c}@{}:{}/{}",
                self.scheme, self.host, self.port, self.prefix
            ),
            None => self.display(),
        }
    }

    /// Whether the scheme is `tls://` (TLS required).
    pub fn is_tls(&self) -> bool {
        self.scheme == "tls"
    }

    /// Whether the URL carries credentials.
    pub fn has_credentials(&self) -> bool {
        self.credentials.is_some()
    }
}

/// `s` with anything between `://` and `@` replaced by `***`.
pub fn redact(s: &str) -> String {
    match (s.find("://"), s.rfind('@')) {
        (Some(i), Some(j)) if j > i + 3 => format!("{}***{}", &s[..i + 3], &s[j..]),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gives_address_prefix_and_defaults() {
        let u = NatsUrl::parse("nats://127.0.0.1:4333/team_x").unwrap();
        assert_eq!(u.address(), "127.0.0.1:4333");
        assert_eq!(u.prefix(), "team_x");
        assert_eq!(u.display(), "nats://127.0.0.1:4333/team_x");
        let d = NatsUrl::parse("nats://example").unwrap();
        assert_eq!(d.address(), "example:4222");
        assert_eq!(d.prefix(), DEFAULT_PREFIX);
    }

    #[test]
    fn credentials_are_kept_for_connecting_and_never_shown() {
        let u = NatsUrl::parse("nats://alice:s3cret@h:1/p").unwrap();
        assert!(u.has_credentials());
        assert_eq!(u.connect_address(), "nats://alice:s3cret@h:1");
        for shown in [u.display(), format!("{u:?}")] {
            assert!(!shown.contains("s3cret"), "{shown}");
        }
        let err = NatsUrl::parse("nats://alice:s3cret@h:x/p")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("s3cret"), "{err}");
        assert!(err.contains("port"), "{err}");
    }

    #[test]
    fn prefixes_that_cannot_name_a_stream_are_refused() {
        for bad in [
            "nats://h:1/a.b",
            "nats://h:1/a*",
            "nats://h:1/a b",
            "http://h:1",
            "nats://:1",
        ] {
            assert!(NatsUrl::parse(bad).is_err(), "{bad}");
        }
        let long = format!("nats://h:1/{}", "x".repeat(33));
        assert!(NatsUrl::parse(&long).is_err());
    }
}
