//! A teammate's network rules: the hosts it may reach, those it may not
//! (deny wins), and the ports; what a host no rule names gets (a question,
//! routed like any permission request); and the check of each address a
//! name resolved to, which is where a name that points at this machine is
//! caught.
//!
//! | pattern | matches |
//! |---|---|
//! | `example.com` | that name only (not `www.example.com`, not `example.com.evil`) |
//! | `*.example.com` | every name below `example.com` (`a.example.com`, `a.b.example.com`), not `example.com` itself and not `evilexample.com`: list both to allow both |
//! | `203.0.113.7`, `[2001:db8::1]` | that address, written as an address or resolved from a name |
//!
//! The order of a decision ([`NetworkRules::judge`], then
//! [`NetworkRules::check_address`] for each address the name resolved to):
//!
//! 1. a port not in `ports` (443 and 80 unless set): refused;
//! 2. the host, or an address it resolved to, matches a denied pattern:
//!    refused;
//! 3. it matches an allowed pattern: allowed; otherwise it is a question
//!    (tool `Network`) for whoever decides the teammate's requests;
//! 4. an address in a class [`super::address::refused_class`] lists (this
//!    machine, private networks, link-local, the metadata service, …) is
//!    refused unless an allowed pattern names that address itself: a name
//!    allowed by a rule, or allowed by the person, that resolves to
//!    `127.0.0.1` is still refused.

use std::net::IpAddr;

use super::address::refused_class;
use super::target::{Host, Target};

/// The ports allowed when none are set.
pub const DEFAULT_PORTS: &[u16] = &[443, 80];

/// One host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One name.
    Name(String),
    /// Every name below this one (`*.` + it).
    Below(String),
    /// One address.
    Ip(IpAddr),
}

impl HostPattern {
    /// Parses a pattern of the table above; `Err` says why not.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let (below, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let host = Host::parse(rest).map_err(|e| format!("network rule {text:?}: {e}"))?;
        match (host, below) {
            (Host::Name(n), true) => {
                if !n.contains('.') {
                    return Err(format!(
                        "network rule {text:?}: a wildcard over a whole top-level domain is refused; name a domain (`*.example.com`)"
                    ));
                }
                Ok(HostPattern::Below(n))
            }
            (Host::Name(n), false) => Ok(HostPattern::Name(n)),
            (Host::Ip(a), false) => Ok(HostPattern::Ip(a)),
            (Host::Ip(_), true) => Err(format!(
                "network rule {text:?}: a wildcard goes with a name, not an address"
            )),
        }
    }

    /// Whether the pattern matches `host`.
    pub fn matches_host(&self, host: &Host) -> bool {
        match (self, host) {
            (HostPattern::Name(p), Host::Name(n)) => p == n,
            (HostPattern::Below(p), Host::Name(n)) => n
                .strip_suffix(p.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Ip(p), Host::Ip(a)) => p == a,
            _ => false,
        }
    }

    /// Whether the pattern names `addr` itself.
    pub fn names_address(&self, addr: IpAddr) -> bool {
        matches!(self, HostPattern::Ip(p) if *p == addr)
    }
}

/// What the rules say of a target before it is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An allowed pattern matches it.
    Allow,
    /// Refused, and why.
    Deny(String),
    /// No rule names it: ask whoever decides the teammate's requests.
    Ask,
}

/// A teammate's network rules (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkRules {
    allowed: Vec<HostPattern>,
    denied: Vec<HostPattern>,
    ports: Vec<u16>,
}

impl NetworkRules {
    /// Rules from the patterns and ports as a manifest writes them (`None`
    /// ports: [`DEFAULT_PORTS`]). Every bad pattern is named in the error.
    pub fn new(
        allowed: &[String],
        denied: &[String],
        ports: Option<&[u16]>,
    ) -> Result<NetworkRules, String> {
        let mut problems = Vec::new();
        let mut parse = |list: &[String]| {
            list.iter()
                .filter_map(|p| HostPattern::parse(p).map_err(|e| problems.push(e)).ok())
                .collect::<Vec<_>>()
        };
        let allowed = parse(allowed);
        let denied = parse(denied);
        let ports = ports
            .map(<[u16]>::to_vec)
            .unwrap_or_else(|| DEFAULT_PORTS.to_vec());
        if ports.contains(&0) {
            problems.push("network ports: 0 is no port".into());
        }
        match problems.is_empty() {
            true => Ok(NetworkRules {
                allowed,
                denied,
                ports,
            }),
            false => Err(problems.join("; ")),
        }
    }

    /// Whether `port` is an allowed port (step 1).
    pub fn allows_port(&self, port: u16) -> bool {
        self.ports.contains(&port)
    }

    /// The verdict on `target` before resolution (steps 1–3).
    pub fn judge(&self, target: &Target) -> Verdict {
        if !self.ports.contains(&target.port) {
            return Verdict::Deny(format!(
                "port {} is not an allowed port ({})",
                target.port,
                self.ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.denied.iter().any(|p| p.matches_host(&target.host)) {
            return Verdict::Deny(format!("{} is a denied host", target.host));
        }
        if self.allowed.iter().any(|p| p.matches_host(&target.host)) {
            return Verdict::Allow;
        }
        Verdict::Ask
    }

    /// Checks one address `target`'s host resolved to (step 4, and a
    /// denied address).
    pub fn check_address(&self, target: &Target, addr: IpAddr) -> Result<(), String> {
        if self.denied.iter().any(|p| p.names_address(addr)) {
            return Err(format!(
                "{} resolves to {addr}, a denied address",
                target.host
            ));
        }
        match refused_class(addr) {
            Some(class) if !self.allowed.iter().any(|p| p.names_address(addr)) => Err(format!(
                "{} resolves to {addr}, {class}: refused unless a rule allows that address itself",
                target.host
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allowed: &[&str], denied: &[&str]) -> NetworkRules {
        let s = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        NetworkRules::new(&s(allowed), &s(denied), None).unwrap()
    }

    fn judge(r: &NetworkRules, authority: &str) -> Verdict {
        r.judge(&Target::parse_authority(authority).unwrap())
    }

    #[test]
    fn suffix_tricks_do_not_match() {
        let r = rules(&["example.com", "*.pypi.org"], &[]);
        assert_eq!(judge(&r, "example.com:443"), Verdict::Allow);
        assert_eq!(judge(&r, "files.pypi.org:443"), Verdict::Allow);
        assert_eq!(judge(&r, "a.b.pypi.org:443"), Verdict::Allow);
        for ask in [
            "example.com.evil:443",
            "evilexample.com:443",
            "www.example.com:443",
            "pypi.org:443",
            "evilpypi.org:443",
            "pypi.org.evil:443",
        ] {
            assert_eq!(judge(&r, ask), Verdict::Ask, "{ask}");
        }
    }

    #[test]
    fn deny_wins_and_ports_are_held() {
        let r = rules(&["*.example.com"], &["bad.example.com"]);
        assert!(matches!(judge(&r, "bad.example.com:443"), Verdict::Deny(_)));
        assert!(matches!(
            judge(&r, "BAD.Example.com.:443"),
            Verdict::Deny(_)
        ));
        assert!(
            matches!(judge(&r, "ok.example.com:22"), Verdict::Deny(why) if why.contains("port 22"))
        );
        assert_eq!(judge(&r, "ok.example.com:80"), Verdict::Allow);
    }

    #[test]
    fn an_allowed_name_that_resolves_here_is_refused_unless_the_address_is_named() {
        let r = rules(&["pkgs.test", "127.0.0.2"], &[]);
        let t = Target::parse_authority("pkgs.test:443").unwrap();
        assert!(r.check_address(&t, "127.0.0.1".parse().unwrap()).is_err());
        assert!(r
            .check_address(&t, "::ffff:127.0.0.1".parse().unwrap())
            .is_err());
        assert!(r
            .check_address(&t, "169.254.169.254".parse().unwrap())
            .is_err());
        assert!(r.check_address(&t, "127.0.0.2".parse().unwrap()).is_ok());
        assert!(r
            .check_address(&t, "93.184.215.14".parse().unwrap())
            .is_ok());
        // Written as an address in another spelling, it is that address.
        assert_eq!(judge(&r, "0x7f000002:443"), Verdict::Allow);
        assert_eq!(judge(&r, "127.1:443"), Verdict::Ask);
    }

    #[test]
    fn bad_patterns_are_all_named() {
        let s = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let err =
            NetworkRules::new(&s(&["*.com", "a b", "*.1.2.3.4"]), &s(&["x/y"]), None).unwrap_err();
        for needle in ["\"*.com\"", "\"a b\"", "\"*.1.2.3.4\"", "\"x/y\""] {
            assert!(err.contains(needle), "{needle} not in {err}");
        }
    }
}
