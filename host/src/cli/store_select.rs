//! Which store a command works on: `--store URL` (or `$TEAMHOST_STORE`,
//! or a manifest's `[team] store`), else the file store under the home.
//!
//! | value | store |
//! |---|---|
//! | absent | the reference's files under `--home` (the default) |
//! | `nats://HOST:PORT[/PREFIX]`, `tls://…` | a NATS JetStream server ([`crate::store::nats`]); the home keeps only machine-local files |
//!
//! The URL may carry credentials; they are shown nowhere (see
//! [`crate::store::nats::url`]). TLS files and credentials come from
//! [`SecurityArgs`] — the flags `--store-ca`, `--store-cert`,
//! `--store-key`, `--store-creds`, `--store-nkey`, or their
//! `TEAMHOST_STORE_*` variables (the flag wins) — never from a manifest
//! (see [`crate::store::nats::security`]).

use std::path::PathBuf;
use std::sync::Arc;

use crate::home::Home;
use crate::store::nats::NatsOptions;
use crate::store::{NatsSecurity, NatsStore, NatsUrl, Store};

/// The NATS store's TLS files and credentials, on every command (global
/// flags, like `--store`). Each is a file path; what is in the file is
/// never shown.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SecurityArgs {
    /// NATS store: the CA certificate (PEM) that signed the server's
    /// certificate, trusted instead of the system's roots; TLS is then
    /// required.
    #[arg(long, global = true, env = "TEAMHOST_STORE_CA", hide_env_values = true, value_name = "FILE", value_parser = file_arg())]
    pub store_ca: Option<PathBuf>,
    /// NATS store: a client certificate (PEM) for a server that verifies
    /// clients (mutual TLS); with --store-key.
    #[arg(long, global = true, env = "TEAMHOST_STORE_CERT", hide_env_values = true, value_name = "FILE", value_parser = file_arg())]
    pub store_cert: Option<PathBuf>,
    /// NATS store: the client certificate's private key (PEM).
    #[arg(long, global = true, env = "TEAMHOST_STORE_KEY", hide_env_values = true, value_name = "FILE", value_parser = file_arg())]
    pub store_key: Option<PathBuf>,
    /// NATS store: a credentials file (user JWT + NKey seed, as `nsc
    /// generate creds` writes); its account is the team's.
    #[arg(long, global = true, env = "TEAMHOST_STORE_CREDS", hide_env_values = true, value_name = "FILE", value_parser = file_arg())]
    pub store_creds: Option<PathBuf>,
    /// NATS store: a file holding a user NKey seed (SU…), for a server that
    /// lists nkey users.
    #[arg(long, global = true, env = "TEAMHOST_STORE_NKEY", hide_env_values = true, value_name = "FILE", value_parser = file_arg())]
    pub store_nkey: Option<PathBuf>,
}

/// A file path that may be empty (then not given): a tmux pane gets every
/// `TEAMHOST_STORE_*` variable, empty when the host has no such setting, so
/// that a stale one in the tmux server's environment is not used.
fn file_arg() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

impl SecurityArgs {
    /// The settings given (an empty value counts as not given).
    pub fn security(&self) -> NatsSecurity {
        let given = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
        NatsSecurity {
            ca: given(&self.store_ca),
            cert: given(&self.store_cert),
            key: given(&self.store_key),
            creds: given(&self.store_creds),
            nkey: given(&self.store_nkey),
        }
    }
}

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

/// The store `spec` names, over `home` when it names none; a NATS store
/// connects with `security`'s files, which the file store ignores (with a
/// warning: they were meant for a server).
pub fn open(home: &Home, spec: Option<&str>, security: &NatsSecurity) -> anyhow::Result<Store> {
    match parse(spec)? {
        None => {
            if !security.is_empty() {
                tracing::warn!(
                    "--store-ca/--store-cert/--store-key/--store-creds/--store-nkey (or their TEAMHOST_STORE_* variables) are set but the team lives in files under the home: they are ignored (give --store nats://… to use a server)"
                );
            }
            Ok(Store::new(home.clone()))
        }
        Some(url) => {
            let opts = NatsOptions {
                security: security.clone(),
                ..NatsOptions::default()
            };
            let nats = NatsStore::connect_with(&url, opts)?;
            Ok(Store::with_backend(Arc::new(nats)))
        }
    }
}

/// Where a store's teams are, for messages: the home, or the URL.
pub fn describe(home: &Home, store: &Store) -> String {
    store
        .backend()
        .remote_location()
        .unwrap_or_else(|| home.root().display().to_string())
}
