//! Which store a command works on: `--store URL` (or `$TEAMHOST_STORE`,
//! or a manifest's `[team] store`), else the file store under the home.
//!
//! | value | store |
//! |---|---|
//! | absent | the reference's files under `--home` (the default) |
//! | `nats://HOST:PORT[/PREFIX]`, `tls://…` | a NATS JetStream server ([`crate::store::nats`]); the home keeps only machine-local files |
//!
//! The URL may carry credentials; they are shown nowhere (see
//! [`crate::store::nats::url`]).

use std::sync::Arc;

use crate::home::Home;
use crate::store::{NatsStore, NatsUrl, Store};

/// Parses a `--store` value: `None` for the file store.
pub fn parse(spec: Option<&str>) -> anyhow::Result<Option<NatsUrl>> {
    let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if !NatsUrl::is_nats(spec) {
        anyhow::bail!(
            "--store {}: not a store URL; give nats://HOST:PORT[/PREFIX] for a NATS server, or leave --store (and TEAMHOST_STORE) out for the files under --home",
            crate::store::nats::url::redact(spec)
        );
    }
    Ok(Some(NatsUrl::parse(spec)?))
}

/// The store `spec` names, over `home` when it names none.
pub fn open(home: &Home, spec: Option<&str>) -> anyhow::Result<Store> {
    match parse(spec)? {
        None => Ok(Store::new(home.clone())),
        Some(url) => {
            let nats = NatsStore::connect(&url)?;
            Ok(Store::with_backend(Arc::new(nats)))
        }
    }
}

/// Where a store's teams are, for messages: the home, or the URL.
pub fn describe(home: &Home, store: &Store) -> String {
    match store.backend().as_any().downcast_ref::<NatsStore>() {
        Some(n) => n.url().display(),
        None => home.root().display().to_string(),
    }
}
