//! [`NatsUrl`]: where a NATS store lives, as the lead names it
//! (`--store nats://[USER:PASS@]HOST:PORT[,HOST:PORT…][/PREFIX][?replicas=N]`,
//! `$TEAMHOST_STORE`, the manifest's `[team] store`), and how it is shown.
//!
//! **Several servers.** A JetStream cluster is named by its seed list:
//! `nats://h1:4222,h2:4222,h3:4222/prefix` (or the usual
//! `nats://h1:4222,nats://h2:4222/prefix`, each item repeating the scheme).
//! The client is given every server, connects to any that answers and
//! reconnects to any other (and to those the cluster itself announces). A
//! URL with one server keeps its exact meaning and display.
//!
//! **Credentials.** The URL may carry them (`user:password@`, or a token as
//! the user part), once, before the first server; they apply to every
//! server. They are treated like keys: kept only to connect, never in
//! [`NatsUrl::display`], in errors, logs, pseudo paths or a teammate's
//! view. `Debug` shows the redacted form too.
//!
//! | part | default | rule |
//! |---|---|---|
//! | scheme | — | `nats://` or `tls://`, one for every server |
//! | servers | — | 1 to 16 `HOST[:PORT]`, comma-separated; an IPv6 literal in brackets |
//! | port | 4222 | |
//! | prefix | `teamhost` | 1–32 of `A-Z a-z 0-9 _ -`: it starts every bucket, stream and subject name |
//! | `?replicas=N` | 3 on a JetStream cluster, 1 on a lone server | 1 to 5: how many servers keep a copy of each of the team's streams (see `setup.rs`) |

use crate::error::{Error, Result};

/// The prefix when the URL has none.
pub const DEFAULT_PREFIX: &str = "teamhost";

/// Longest prefix accepted (bucket and stream names stay short).
const MAX_PREFIX: usize = 32;

/// Most servers one URL may name.
const MAX_SERVERS: usize = 16;

/// Most replicas JetStream allows a stream.
pub const MAX_REPLICAS: usize = 5;

/// A parsed `nats://` store URL.
#[derive(Clone, PartialEq, Eq)]
pub struct NatsUrl {
    scheme: String,
    credentials: Option<String>,
    /// `HOST:PORT` of each server, in the order given (never empty).
    servers: Vec<String>,
    prefix: String,
    /// `?replicas=N`, when given.
    replicas: Option<usize>,
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

    /// Parses `nats://[CREDENTIALS@]HOST[:PORT][,HOST[:PORT]…][/PREFIX][?replicas=N]`
    /// (module docs). The error never repeats the credentials.
    pub fn parse(s: &str) -> Result<NatsUrl> {
        let bad = |why: &str| {
            Error::StoreUrl(format!(
                "store URL {}: {why}; the form is nats://HOST:PORT[,HOST:PORT…][/PREFIX][?replicas=N] (PREFIX: letters, digits, '_' and '-'; N: 1 to {MAX_REPLICAS})",
                redact(s)
            ))
        };
        let (scheme, rest) = s
            .split_once("://")
            .filter(|(sc, _)| *sc == "nats" || *sc == "tls")
            .ok_or_else(|| bad("the scheme must be nats:// or tls://"))?;
        // The usual seed list repeats the scheme before each server.
        let rest = rest.replace(&format!(",{scheme}://"), ",");
        if rest.contains("://") {
            return Err(bad(&format!(
                "every server must use the scheme {scheme}:// (or none after the first)"
            )));
        }
        // The query starts after the credentials (a password may hold '?').
        let after_at = rest.rfind('@').map_or(0, |i| i + 1);
        let (rest, query) = match rest[after_at..].find('?') {
            Some(q) => (&rest[..after_at + q], &rest[after_at + q + 1..]),
            None => (rest.as_str(), ""),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (credentials, hostports) = match authority.rsplit_once('@') {
            Some((c, h)) if !c.is_empty() => (Some(c.to_string()), h),
            Some(_) => return Err(bad("empty credentials before '@'")),
            None => (None, authority),
        };
        let servers = hostports
            .split(',')
            .map(|hp| server(hp).map_err(|why| bad(&why)))
            .collect::<Result<Vec<_>>>()?;
        if servers.len() > MAX_SERVERS {
            return Err(bad(&format!("more than {MAX_SERVERS} servers")));
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
        let mut replicas = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("replicas", n)) => {
                    let n = n
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=MAX_REPLICAS).contains(n))
                        .ok_or_else(|| {
                            bad(&format!(
                                "replicas={n:?} must be a number from 1 to {MAX_REPLICAS}"
                            ))
                        })?;
                    replicas = Some(n);
                }
                _ => {
                    return Err(bad(&format!(
                        "unknown option {pair:?} (the only one is replicas=N)"
                    )))
                }
            }
        }
        Ok(NatsUrl {
            scheme: scheme.to_string(),
            credentials,
            servers,
            prefix: prefix.to_string(),
            replicas,
        })
    }

    /// The prefix every bucket, stream and subject name starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `HOST:PORT` of every server, comma-separated, for messages.
    pub fn address(&self) -> String {
        self.servers.join(",")
    }

    /// `HOST:PORT` of every server, in the order given.
    pub fn servers(&self) -> &[String] {
        &self.servers
    }

    /// "the NATS server at H:P", or "the NATS servers at H1:P1, H2:P2" for
    /// a seed list: how messages name where the store is.
    pub fn servers_phrase(&self) -> String {
        match self.servers.as_slice() {
            [one] => format!("the NATS server at {one}"),
            many => format!("the NATS servers at {}", many.join(", ")),
        }
    }

    /// The replica count the URL asks for (`?replicas=N`); `None` lets the
    /// store decide (module docs of `setup.rs`).
    pub fn replicas(&self) -> Option<usize> {
        self.replicas
    }

    /// The URL without credentials: `nats://HOST:PORT[,HOST:PORT…]/PREFIX`,
    /// with `?replicas=N` when it was given. The only form that is ever
    /// shown.
    pub fn display(&self) -> String {
        format!(
            "{}://{}/{}{}",
            self.scheme,
            self.address(),
            self.prefix,
            self.query()
        )
    }

    fn query(&self) -> String {
        match self.replicas {
            Some(n) => format!("?replicas={n}"),
            None => String::new(),
        }
    }

    /// What the client connects to, one URL a server, credentials included
    /// in each. Never log them.
    pub(super) fn connect_addresses(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|hp| match &self.credentials {
                Some(c) => format!("{}://{c}@{hp}", self.scheme),
                None => format!("{}://{hp}", self.scheme),
            })
            .collect()
    }

    /// The credentials alone, to scrub them from any text.
    pub(super) fn credentials(&self) -> Option<&str> {
        self.credentials.as_deref()
    }

    /// The URL to hand a child `teamhost teammate` (`--store`), credentials
    /// included: the child connects with them. See the module docs of
    /// [`super`] for why this does not reach a teammate.
    pub fn to_arg(&self) -> String {
        match &self.credentials {
            Some(c) => format!(
                "{}://{c}@{}/{}{}",
                self.scheme,
                self.address(),
                self.prefix,
                self.query()
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

/// One `HOST[:PORT]` of the list as `HOST:PORT`, or why not.
fn server(hostport: &str) -> std::result::Result<String, String> {
    let (host, port) = match hostport.rsplit_once(':') {
        // An IPv6 literal keeps its brackets: [::1]:4222.
        Some((h, p)) if !p.contains(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("the port of {hostport:?} is not a number"))?,
        ),
        _ => (hostport, 4222),
    };
    if host.is_empty() || host.contains(char::is_whitespace) || host.contains('@') {
        return Err(if hostport.is_empty() {
            "no host (an empty item in the server list?)".into()
        } else {
            format!("no host in {hostport:?}")
        });
    }
    Ok(format!("{host}:{port}"))
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
        assert_eq!(u.connect_addresses(), ["nats://alice:s3cret@h:1"]);
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

    #[test]
    fn a_seed_list_keeps_every_server_in_order() {
        for spec in [
            "nats://10.0.0.1:4222,10.0.0.2:4223,node3/team_x",
            "nats://10.0.0.1:4222,nats://10.0.0.2:4223,nats://node3/team_x",
        ] {
            let u = NatsUrl::parse(spec).unwrap();
            assert_eq!(
                u.servers(),
                ["10.0.0.1:4222", "10.0.0.2:4223", "node3:4222"]
            );
            assert_eq!(u.prefix(), "team_x");
            assert_eq!(
                u.display(),
                "nats://10.0.0.1:4222,10.0.0.2:4223,node3:4222/team_x"
            );
            assert_eq!(
                u.servers_phrase(),
                "the NATS servers at 10.0.0.1:4222, 10.0.0.2:4223, node3:4222"
            );
            assert_eq!(
                u.connect_addresses(),
                [
                    "nats://10.0.0.1:4222",
                    "nats://10.0.0.2:4223",
                    "nats://node3:4222"
                ]
            );
            assert_eq!(u.replicas(), None);
        }
        let one = NatsUrl::parse("nats://h:1/p").unwrap();
        assert_eq!(one.servers_phrase(), "the NATS server at h:1");
        assert_eq!(one.display(), "nats://h:1/p");
        let v6 = NatsUrl::parse("nats://[::1]:4222,[::1]:4223").unwrap();
        assert_eq!(v6.servers(), ["[::1]:4222", "[::1]:4223"]);
    }

    #[test]
    fn credentials_apply_to_every_server_and_are_never_shown() {
        let u = NatsUrl::parse("nats://alice:s3?cr,et@a:1,b:2,c:3/p?replicas=3").unwrap();
        assert_eq!(
            u.connect_addresses(),
            [
                "nats://alice:s3?cr,et@a:1",
                "nats://alice:s3?cr,et@b:2",
                "nats://alice:s3?cr,et@c:3"
            ]
        );
        assert_eq!(u.replicas(), Some(3));
        assert_eq!(u.to_arg(), "nats://alice:s3?cr,et@a:1,b:2,c:3/p?replicas=3");
        assert_eq!(NatsUrl::parse(&u.to_arg()).unwrap(), u);
        for shown in [
            u.display(),
            format!("{u:?}"),
            u.address(),
            u.servers_phrase(),
        ] {
            assert!(!shown.contains("s3?cr"), "{shown}");
            assert!(!shown.contains("alice"), "{shown}");
        }
        assert_eq!(u.display(), "nats://a:1,b:2,c:3/p?replicas=3");
        for bad in [
            "nats://alice:s3cret@a:1,b:x/p",
            "nats://alice:s3cret@a:1,,b:2/p",
            "nats://alice:s3cret@a:1/p?replicas=9",
            "nats://alice:s3cret@a:1/p?color=red",
        ] {
            let err = NatsUrl::parse(bad).unwrap_err().to_string();
            assert!(!err.contains("s3cret"), "{err}");
            assert!(err.contains("nats://***@a:1"), "{err}");
        }
    }

    #[test]
    fn replicas_must_be_one_to_five() {
        for n in 1..=5 {
            let u = NatsUrl::parse(&format!("nats://h:1/p?replicas={n}")).unwrap();
            assert_eq!(u.replicas(), Some(n));
            assert_eq!(u.display(), format!("nats://h:1/p?replicas={n}"));
        }
        assert_eq!(
            NatsUrl::parse("nats://h:1?replicas=1").unwrap().display(),
            "nats://h:1/teamhost?replicas=1"
        );
        for (bad, says) in [
            (
                "nats://h:1/p?replicas=0",
                "replicas=\"0\" must be a number from 1 to 5",
            ),
            ("nats://h:1/p?replicas=6", "from 1 to 5"),
            ("nats://h:1/p?replicas=three", "from 1 to 5"),
            ("nats://h:1/p?replica=3", "unknown option \"replica=3\""),
            (
                "nats://h:1,tls://g:2/p",
                "every server must use the scheme nats://",
            ),
            ("nats://h:1,/p", "no host"),
        ] {
            let err = NatsUrl::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
