//! [`NetworkSettings`]: a teammate's network as an operator writes it — in
//! the manifest's `[teammate.network]`, through the embedding API, or in a
//! spawn record — and what the host builds from it: the rules, the proxy's
//! bounds and the resolver.
//!
//! | key (manifest; the reference's `sandbox.network` spelling also read) | default | meaning |
//! |---|---|---|
//! | `allowed_domains` (`allowedDomains`) | none | hosts reached without asking: `example.com`, `*.example.com` (below it, not itself), an address (`127.0.0.1`, which also lets that address through the check of refused addresses) |
//! | `denied_domains` (`deniedDomains`) | none | hosts and addresses refused; deny wins |
//! | `allowed_ports` (`allowedPorts`) | 443, 80 | ports any connection may go to |
//! | `max_mb` | 1024 | MiB in and out together over the teammate's life |
//! | `max_connections` | 10,000 | connections over the teammate's life (64 at once) |
//! | `resolve` | none | names pinned to addresses (`{"pkg.test" = ["127.0.0.1"]}`), asked of no resolver; the addresses are still checked |
//! | `allowed_outbound_hosts` | none | Spin's key: where the teammate's component may send `wasi:http` requests (`["https://api.example.com", "http://pkgs.test:8080", "https://*.example.com"]`: scheme, host, optional port; [`OutboundHosts`]); without it a component that imports `wasi:http` does not load. Each request still goes through the proxy and the rules above; its ports must be allowed ports |
//!
//! A host no rule names is asked (tool `Network`, routed by `[approvals]`).
//! A teammate without a `network` table has no network at all.

use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::gate::{BoxFuture, Resolver, SystemResolver};
use super::outbound::OutboundHosts;
use super::proxy::ProxyLimits;
use super::rules::NetworkRules;

/// A teammate's network (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSettings {
    /// Hosts reached without asking.
    #[serde(default, alias = "allowedDomains")]
    pub allowed_domains: Vec<String>,
    /// Hosts and addresses always refused.
    #[serde(default, alias = "deniedDomains")]
    pub denied_domains: Vec<String>,
    /// Ports a connection may go to; `None`: 443 and 80.
    #[serde(
        default,
        alias = "allowedPorts",
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_ports: Option<Vec<u16>>,
    /// MiB in and out together; `None`: 1024.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mb: Option<u64>,
    /// Connections over the teammate's life; `None`: 10,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<u64>,
    /// Names pinned to addresses.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resolve: BTreeMap<String, Vec<IpAddr>>,
    /// Where its component may send `wasi:http` requests (Spin's
    /// `allowed_outbound_hosts`); empty: it may not import `wasi:http`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_outbound_hosts: Vec<String>,
}

impl NetworkSettings {
    /// The rules; every bad pattern or port named in the error.
    pub fn rules(&self) -> Result<NetworkRules, String> {
        NetworkRules::new(
            &self.allowed_domains,
            &self.denied_domains,
            self.allowed_ports.as_deref(),
        )
    }

    /// The hosts its component may send `wasi:http` requests to; every bad
    /// entry named in the error.
    pub fn outbound_hosts(&self) -> Result<OutboundHosts, String> {
        OutboundHosts::parse(&self.allowed_outbound_hosts)
    }

    /// Checks everything that can be wrong before a teammate starts: the
    /// rules, the bounds, the pins, and that every entry of
    /// `allowed_outbound_hosts` parses and names a port `allowed_ports`
    /// allows (else its requests could only be refused).
    pub fn check(&self) -> Result<(), String> {
        let rules = self.rules()?;
        let outbound = self.outbound_hosts()?;
        let closed: Vec<String> = outbound
            .ports()
            .into_iter()
            .filter(|(port, _)| !rules.allows_port(*port))
            .map(|(port, i)| format!("{:?} (port {port})", self.allowed_outbound_hosts[i]))
            .collect();
        if !closed.is_empty() {
            return Err(format!(
                "network.allowed_outbound_hosts: {} reach a port allowed_ports does not allow; add it to allowed_ports",
                closed.join(", ")
            ));
        }
        if self.max_mb == Some(0) || self.max_connections == Some(0) {
            return Err(
                "network: max_mb and max_connections must be positive (leave \
                        the network table out for no network)"
                    .into(),
            );
        }
        if let Some((name, _)) = self.resolve.iter().find(|(_, a)| a.is_empty()) {
            return Err(format!("network.resolve: {name:?} is pinned to no address"));
        }
        Ok(())
    }

    /// The proxy's bounds.
    pub fn limits(&self) -> ProxyLimits {
        let default = ProxyLimits::default();
        ProxyLimits {
            max_bytes: self
                .max_mb
                .map_or(default.max_bytes, |mb| mb.saturating_mul(1 << 20)),
            max_total: self.max_connections.unwrap_or(default.max_total),
            ..default
        }
    }

    /// The resolver: the pinned names, then the system's.
    pub fn resolver(&self) -> Arc<dyn Resolver> {
        Arc::new(PinnedResolver {
            pins: self
                .resolve
                .iter()
                .map(|(n, a)| (n.trim_end_matches('.').to_ascii_lowercase(), a.clone()))
                .collect(),
        })
    }
}

/// Pinned names first, then [`SystemResolver`].
struct PinnedResolver {
    pins: BTreeMap<String, Vec<IpAddr>>,
}

impl Resolver for PinnedResolver {
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        match self.pins.get(name) {
            Some(found) => {
                let found = found.clone();
                Box::pin(async move { Ok(found) })
            }
            None => SystemResolver.resolve(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_references_spelling_reads_and_bad_rules_are_named() {
        let s: NetworkSettings = toml::from_str(
            r#"allowedDomains = ["*.pypi.org"]
               deniedDomains = ["evil.example"]
               allowed_ports = [443]
               resolve = { "pkg.test" = ["127.0.0.1"] }"#,
        )
        .unwrap();
        assert_eq!(s.allowed_domains, ["*.pypi.org"]);
        assert!(s.check().is_ok());
        assert_eq!(s.limits().max_bytes, 1 << 30);
        let bad = NetworkSettings {
            allowed_domains: vec!["*.1.2.3.4".into(), "a b".into()],
            ..NetworkSettings::default()
        };
        let why = bad.check().unwrap_err();
        assert!(why.contains("1.2.3.4") && why.contains("a b"), "{why}");
        assert!(toml::from_str::<NetworkSettings>("allowed = []").is_err());
    }

    #[test]
    fn outbound_hosts_are_checked_against_the_ports() {
        let s: NetworkSettings = toml::from_str(
            r#"allowed_outbound_hosts = ["https://api.example.com", "http://pkgs.test:8080"]
               allowed_ports = [443, 8080]"#,
        )
        .unwrap();
        assert!(s.check().is_ok(), "{:?}", s.check());
        let closed = NetworkSettings {
            allowed_outbound_hosts: vec!["http://pkgs.test:8080".into()],
            ..NetworkSettings::default()
        };
        let why = closed.check().unwrap_err();
        assert!(
            why.contains("8080") && why.contains("allowed_ports"),
            "{why}"
        );
        let bad = NetworkSettings {
            allowed_outbound_hosts: vec!["pkgs.test".into()],
            ..NetworkSettings::default()
        };
        let why = bad.check().unwrap_err();
        assert!(
            why.contains("allowed_outbound_hosts \"pkgs.test\""),
            "{why}"
        );
    }
}
