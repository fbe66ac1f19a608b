//! The admission of one target, shared by everything that reaches out for a
//! teammate (the [`super::Proxy`] and the [`super::Fetcher`]): the rules'
//! verdict, the question about a host no rule names, the resolution, the
//! check of every address. One [`Gate`] per teammate, so a host allowed
//! "for the rest of the run" through the proxy is allowed for a fetch too,
//! and the other way round.
//!
//! | step | what | refused when |
//! |---|---|---|
//! | 1 | the rules' verdict ([`NetworkRules::judge`]) | a denied host or port |
//! | 2 | a host no rule names asked ([`Asker`]) unless the run already allowed it for the rest of the run | a "no" |
//! | 3 | a name resolved ([`Resolver`]) within the connect timeout | no answer, or no address |
//! | 4 | **every** address checked ([`NetworkRules::check_address`]) | one address refused: a name whose answers mix a public and a loopback address is refused whole |
//!
//! The caller connects only to the addresses [`Gate::admit`] returns, never
//! to a name resolved again (no DNS rebinding between check and connect).

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::rules::{NetworkRules, Verdict};
use super::target::{Host, Target};

/// A boxed future, for the traits below.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Answers a target no rule names: the person, the lead or the policy,
/// through the teammate's approval routes (tool `Network`).
pub trait Asker: Send + Sync {
    /// The answer for `target`.
    fn ask<'a>(&'a self, target: &'a Target) -> BoxFuture<'a, Answer>;
}

/// An answer to a [`Asker::ask`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This connection (or this fetch) only.
    Once,
    /// This host, on any allowed port, for the rest of the run.
    ForTheRun,
    /// Refused, and why.
    No(String),
}

/// Resolves a name to addresses.
pub trait Resolver: Send + Sync {
    /// The addresses of `name`.
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>>;
}

/// The system's resolver (`getaddrinfo`, on tokio's blocking pool).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let found = tokio::net::lookup_host((name, 0)).await?;
            Ok(found.map(|a| a.ip()).collect())
        })
    }
}

/// A fixed table of names, for tests and for pinning names: a name not in
/// it does not resolve. It never asks the system.
#[derive(Debug, Default, Clone)]
pub struct MapResolver(pub BTreeMap<String, Vec<IpAddr>>);

impl Resolver for MapResolver {
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        let found = self.0.get(name).cloned();
        Box::pin(async move {
            found.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "no such name in the resolver's table",
                )
            })
        })
    }
}

/// One teammate's admission of targets (see the module docs).
pub struct Gate {
    rules: NetworkRules,
    asker: Arc<dyn Asker>,
    resolver: Arc<dyn Resolver>,
    resolve_timeout: Duration,
    for_the_run: Mutex<HashSet<Host>>,
}

impl Gate {
    /// A gate holding targets to `rules`, asking `asker` about the rest,
    /// resolving names with `resolver` within `resolve_timeout`.
    pub fn new(
        rules: NetworkRules,
        asker: Arc<dyn Asker>,
        resolver: Arc<dyn Resolver>,
        resolve_timeout: Duration,
    ) -> Arc<Gate> {
        Arc::new(Gate {
            rules,
            asker,
            resolver,
            resolve_timeout,
            for_the_run: Mutex::new(HashSet::new()),
        })
    }

    /// The rules it holds targets to.
    pub fn rules(&self) -> &NetworkRules {
        &self.rules
    }

    /// The hosts allowed for the rest of the run so far, sorted.
    pub fn allowed_for_the_run(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self
            .for_the_run
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(Host::to_string)
            .collect();
        hosts.sort();
        hosts
    }

    /// The addresses `target` may be reached at, each checked, with its
    /// port; or why not (the text names the target or the address).
    pub async fn admit(&self, target: &Target) -> Result<Vec<SocketAddr>, String> {
        match self.rules.judge(target) {
            Verdict::Deny(why) => return Err(why),
            Verdict::Allow => {}
            Verdict::Ask => {
                // Nobody is asked about what would be refused whatever
                // the answer: an address of a refused class, or a name
                // that is this machine by definition (RFC 6761).
                if let Host::Ip(a) = &target.host {
                    self.rules.check_address(target, *a)?;
                }
                if let Host::Name(n) = &target.host {
                    if n == "localhost" || n.ends_with(".localhost") {
                        self.rules
                            .check_address(target, std::net::Ipv4Addr::LOCALHOST.into())?;
                    }
                }
                self.ask(target).await?
            }
        }
        let addrs = match &target.host {
            Host::Ip(a) => vec![*a],
            Host::Name(n) => {
                let resolved =
                    tokio::time::timeout(self.resolve_timeout, self.resolver.resolve(n)).await;
                match resolved {
                    Ok(Ok(a)) if !a.is_empty() => a,
                    Ok(Ok(_)) => return Err(format!("{n} resolves to no address")),
                    Ok(Err(e)) => return Err(format!("{n} does not resolve: {e}")),
                    Err(_) => return Err(format!("{n} did not resolve in time")),
                }
            }
        };
        for a in &addrs {
            self.rules.check_address(target, *a)?;
        }
        Ok(addrs
            .into_iter()
            .map(|a| SocketAddr::new(a, target.port))
            .collect())
    }

    /// Step 2: asks about `target` unless it was allowed for the run.
    async fn ask(&self, target: &Target) -> Result<(), String> {
        if self.lock().contains(&target.host) {
            return Ok(());
        }
        match self.asker.ask(target).await {
            Answer::Once => Ok(()),
            Answer::ForTheRun => {
                self.lock().insert(target.host.clone());
                Ok(())
            }
            Answer::No(why) => Err(format!("{target}: {why}")),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Host>> {
        self.for_the_run.lock().unwrap_or_else(|p| p.into_inner())
    }
}
