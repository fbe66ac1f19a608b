//! [`OutboundHosts`]: the `allowed_outbound_hosts` a teammate's component
//! may send `wasi:http` requests to, written as Spin writes them: a scheme,
//! a host and an optional port.
//!
//! | entry | allows |
//! |---|---|
//! | `https://api.example.com` | `https` to that name on 443 (a scheme's own port when none is written) |
//! | `http://pkgs.test:8080` | `http` to that name on 8080 only |
//! | `https://*.example.com` | `https` to every name below `example.com`, not the name itself (as [`HostPattern`] reads `*.`) |
//! | `*://example.com:8443` | either scheme, on 8443 |
//! | `http://127.0.0.2:8080` | that address, written as an address in the request |
//!
//! A path, a query, credentials or a port of `*` are refused: the list says
//! where a component may go, never what it asks for there. The list is a
//! gate in front of the teammate's proxy, not a second policy: a request
//! it lets through is still judged by the network rules (`allowed_domains`,
//! `denied_domains`, `allowed_ports`: an unnamed host is asked), each
//! resolved address is still checked, and the budgets still count it.

use super::rules::HostPattern;
use super::target::Target;

/// The scheme an entry allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
    Any,
}

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    scheme: Scheme,
    host: HostPattern,
    /// `None`: the request's scheme's own port (80, 443).
    port: Option<u16>,
}

/// The hosts a component may send `wasi:http` requests to (see the module
/// docs). Empty: none, and the component may not import `wasi:http`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboundHosts {
    entries: Vec<Entry>,
}

impl OutboundHosts {
    /// Parses the list as a manifest writes it; every bad entry is named
    /// in the error.
    pub fn parse(list: &[String]) -> Result<OutboundHosts, String> {
        let mut problems = Vec::new();
        let entries = list
            .iter()
            .filter_map(|e| parse_entry(e).map_err(|why| problems.push(why)).ok())
            .collect();
        match problems.is_empty() {
            true => Ok(OutboundHosts { entries }),
            false => Err(problems.join("; ")),
        }
    }

    /// Whether the list allows nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether a request with `scheme` (`http` or `https`) to `target` is
    /// on the list.
    pub fn allows(&self, scheme: &str, target: &Target) -> bool {
        let (scheme, default) = match scheme {
            "http" => (Scheme::Http, 80),
            "https" => (Scheme::Https, 443),
            _ => return false,
        };
        self.entries.iter().any(|e| {
            (e.scheme == scheme || e.scheme == Scheme::Any)
                && e.port.unwrap_or(default) == target.port
                && e.host.matches_host(&target.host)
        })
    }

    /// The ports the list can reach, for the check that the network rules'
    /// `allowed_ports` hold them (a port written, else the scheme's own).
    pub fn ports(&self) -> Vec<(u16, usize)> {
        let mut out = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            match (e.port, e.scheme) {
                (Some(p), _) => out.push((p, i)),
                (None, Scheme::Http) => out.push((80, i)),
                (None, Scheme::Https) => out.push((443, i)),
                (None, Scheme::Any) => out.extend([(80, i), (443, i)]),
            }
        }
        out
    }
}

/// Parses one entry; `Err` names it and says why.
fn parse_entry(text: &str) -> Result<Entry, String> {
    let bad = |why: &str| format!("allowed_outbound_hosts {text:?}: {why}");
    let (scheme, rest) = text.split_once("://").ok_or_else(|| {
        bad("write a scheme, a host and an optional port (`https://example.com`)")
    })?;
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        "*" => Scheme::Any,
        _ => return Err(bad("the scheme is http, https or *")),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#', '@']) {
        return Err(bad(
            "only a scheme, a host and a port: no path, query or credentials",
        ));
    }
    // The port follows the last ':' outside an IPv6 address's brackets.
    let split = match rest.rfind(']') {
        Some(close) => rest[close..].find(':').map(|i| close + i),
        None => rest.rfind(':'),
    };
    let (host, port) = match split {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err(bad("the port is a number from 1 to 65535")),
        },
    };
    let host = HostPattern::parse(host).map_err(|why| bad(&why))?;
    Ok(Entry { scheme, host, port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> OutboundHosts {
        OutboundHosts::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn t(authority: &str) -> Target {
        Target::parse_authority(authority).unwrap()
    }

    #[test]
    fn scheme_host_and_port_must_all_match() {
        let h = hosts(&[
            "https://api.example.com",
            "http://pkgs.test:8080",
            "https://*.cdn.test",
            "*://both.test:8443",
            "http://127.0.0.2:9000/",
        ]);
        assert!(h.allows("https", &t("api.example.com:443")));
        assert!(!h.allows("http", &t("api.example.com:443")));
        assert!(!h.allows("https", &t("api.example.com:8443")));
        assert!(h.allows("http", &t("pkgs.test:8080")));
        assert!(!h.allows("http", &t("pkgs.test:80")));
        assert!(h.allows("https", &t("a.b.cdn.test:443")));
        assert!(!h.allows("https", &t("cdn.test:443")));
        assert!(!h.allows("https", &t("evilcdn.test:443")));
        assert!(h.allows("http", &t("both.test:8443")) && h.allows("https", &t("both.test:8443")));
        assert!(h.allows("http", &t("0x7f000002:9000")));
        assert!(!h.allows("ftp", &t("pkgs.test:8080")));
        assert!(!OutboundHosts::default().allows("https", &t("api.example.com:443")));
    }

    #[test]
    fn every_bad_entry_is_named() {
        let list: Vec<String> = [
            "example.com",
            "ftp://example.com",
            "https://example.com/path",
            "https://u@example.com",
            "https://example.com:0",
            "https://example.com:*",
            "https://*.com",
            "https://a b",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let why = OutboundHosts::parse(&list).unwrap_err();
        for entry in &list {
            assert!(
                why.contains(&format!("{entry:?}")),
                "{entry} not named in {why}"
            );
        }
        assert!(hosts(&["https://[2001:db8::1]:8443"]).allows("https", &t("[2001:db8::1]:8443")));
    }
}
