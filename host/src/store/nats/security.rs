//! [`NatsSecurity`]: how a NATS store proves who it is and whom it trusts —
//! TLS (a CA to trust, a client certificate for mutual TLS), a NATS
//! credentials file (user JWT + NKey seed) or an NKey seed file — and the
//! clear error for each way these go wrong.
//!
//! **Where they come from.** The host's flags and environment only: the
//! lead's command line or the environment of the process that embeds the
//! host ([`NatsSecurity::from_env`]). Never a manifest (it lives in a
//! directory a teammate may write: `[team]` refuses these keys), never a
//! teammate. A child `teamhost teammate` the host starts gets them in its
//! environment ([`NatsSecurity::child_env`]), never on its command line;
//! its guest has no environment and its Bash a fixed one.
//!
//! | setting | flag | environment | what |
//! |---|---|---|---|
//! | `ca` | `--store-ca FILE` | `TEAMHOST_STORE_CA` | PEM certificate(s) of the CA that signed the server's certificate; trusted instead of the system's roots |
//! | `cert` | `--store-cert FILE` | `TEAMHOST_STORE_CERT` | PEM client certificate (chain), for a server that verifies clients (`verify: true`) |
//! | `key` | `--store-key FILE` | `TEAMHOST_STORE_KEY` | its PEM private key (PKCS#8, PKCS#1 or SEC1) |
//! | `creds` | `--store-creds FILE` | `TEAMHOST_STORE_CREDS` | a NATS `.creds` file: the user JWT and its NKey seed (an account per team: one file per team) |
//! | `nkey` | `--store-nkey FILE` | `TEAMHOST_STORE_NKEY` | a file holding one user NKey seed (`SU…`) |
//!
//! TLS is required (a plain-text server is refused, never fallen back to)
//! when the URL is `tls://` or any of `ca`, `cert`, `key` is given; the
//! client also speaks TLS whenever the server asks for it. `creds` and
//! `nkey` exclude each other. Every file is read and checked once, before
//! connecting ([`NatsSecurity::load`]); the client reads the TLS files
//! again at each reconnection (a renewed certificate is picked up), the
//! credentials once.
//! Errors name the setting (flag and variable) and the file, never what is
//! in it.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One setting's names, for errors and for a child's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The command-line flag, `--store-ca`.
    pub flag: &'static str,
    /// The environment variable, `TEAMHOST_STORE_CA`.
    pub env: &'static str,
}

impl Setting {
    /// `--store-ca (TEAMHOST_STORE_CA)`, as errors name it.
    pub fn named(&self) -> String {
        format!("{} ({})", self.flag, self.env)
    }

    /// `--store-ca FILE (or TEAMHOST_STORE_CA)`, as errors ask for it.
    pub fn ask(&self) -> String {
        format!("{} FILE (or {})", self.flag, self.env)
    }
}

/// The CA to trust.
pub const CA: Setting = Setting {
    flag: "--store-ca",
    env: "TEAMHOST_STORE_CA",
};
/// The client certificate.
pub const CERT: Setting = Setting {
    flag: "--store-cert",
    env: "TEAMHOST_STORE_CERT",
};
/// The client certificate's key.
pub const KEY: Setting = Setting {
    flag: "--store-key",
    env: "TEAMHOST_STORE_KEY",
};
/// The credentials file.
pub const CREDS: Setting = Setting {
    flag: "--store-creds",
    env: "TEAMHOST_STORE_CREDS",
};
/// The NKey seed file.
pub const NKEY: Setting = Setting {
    flag: "--store-nkey",
    env: "TEAMHOST_STORE_NKEY",
};

/// Every setting, in the table's order.
pub const SETTINGS: [Setting; 5] = [CA, CERT, KEY, CREDS, NKEY];

/// The deployment settings of a NATS store: files only, each `None` when
/// not given. `NatsSecurity::default()` is none of them (plain `nats://`,
/// no credentials beyond those the URL may carry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NatsSecurity {
    /// `--store-ca`: the CA certificate(s) to trust (PEM).
    pub ca: Option<PathBuf>,
    /// `--store-cert`: the client certificate (PEM), with `key`.
    pub cert: Option<PathBuf>,
    /// `--store-key`: the client certificate's private key (PEM).
    pub key: Option<PathBuf>,
    /// `--store-creds`: a NATS credentials file (user JWT + NKey seed).
    pub creds: Option<PathBuf>,
    /// `--store-nkey`: a file holding a user NKey seed.
    pub nkey: Option<PathBuf>,
}

/// What [`NatsSecurity::load`] read and checked: ready to configure a
/// client. Holds secrets; its `Debug` shows none.
pub(super) struct Loaded {
    require_tls: bool,
    ca: Option<PathBuf>,
    client: Option<(PathBuf, PathBuf)>,
    creds: Option<String>,
    nkey: Option<String>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("require_tls", &self.require_tls)
            .field("ca", &self.ca)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// The setting a configuration key such as `store_ca`, `tls-cert` or
/// `credentials` means, if it looks like one: a manifest that holds such a
/// key is refused with the flag to use instead.
pub fn setting_named(key: &str) -> Option<Setting> {
    let key = key.to_ascii_lowercase();
    let words: Vec<&str> = key
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &[&str]| words.iter().any(|x| w.contains(x));
    if has(&["nkey", "nkeys", "seed"]) {
        Some(NKEY)
    } else if has(&["creds", "credentials", "credential", "jwt"]) {
        Some(CREDS)
    } else if has(&["cert", "certificate", "crt"]) {
        Some(CERT)
    } else if has(&["key", "private"]) {
        Some(KEY)
    } else if has(&["ca", "cafile", "tls", "ssl"]) {
        Some(CA)
    } else {
        None
    }
}

impl NatsSecurity {
    /// The settings in this process's environment (`TEAMHOST_STORE_CA`, …;
    /// an empty variable counts as unset). What an embedding program reads
    /// when it has no flags of its own.
    pub fn from_env() -> NatsSecurity {
        let var = |s: Setting| {
            std::env::var_os(s.env)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        NatsSecurity {
            ca: var(CA),
            cert: var(CERT),
            key: var(KEY),
            creds: var(CREDS),
            nkey: var(NKEY),
        }
    }

    /// Whether no setting is given.
    pub fn is_empty(&self) -> bool {
        self.given().next().is_none()
    }

    /// The settings given, each with its file.
    fn given(&self) -> impl Iterator<Item = (Setting, &Path)> {
        [&self.ca, &self.cert, &self.key, &self.creds, &self.nkey]
            .into_iter()
            .zip(SETTINGS)
            .filter_map(|(p, s)| p.as_deref().map(|p| (s, p)))
    }

    /// Whether these settings make TLS required (`ca`, `cert` or `key`).
    pub fn wants_tls(&self) -> bool {
        self.ca.is_some() || self.cert.is_some() || self.key.is_some()
    }

    /// The environment a child `teamhost teammate` needs to connect the
    /// same way: each given setting's variable, with its file made
    /// absolute (the child runs in the teammate's directory). Paths only,
    /// never the files' contents.
    pub fn child_env(&self) -> Vec<(&'static str, PathBuf)> {
        self.given()
            .map(|(s, p)| (s.env, std::path::absolute(p).unwrap_or_else(|_| p.into())))
            .collect()
    }

    /// Every file these settings name, made absolute: a teammate's
    /// directory must hold none of them (it could read a seed or replace
    /// the CA it trusts).
    pub fn files(&self) -> Vec<PathBuf> {
        self.child_env().into_iter().map(|(_, p)| p).collect()
    }

    /// Reads and checks every file, for a URL whose scheme is `tls://`
    /// when `tls_url`. Each problem is an [`Error::StoreSettings`] naming
    /// the setting and the file, and saying what to do.
    pub(super) fn load(&self, tls_url: bool) -> Result<Loaded> {
        if let (Some(_), Some(_)) = (&self.creds, &self.nkey) {
            return Err(bad(format!(
                "both {} and {} are given; a connection authenticates one way: give the credentials file (user JWT + seed, operator mode) or the NKey seed (a server listing nkey users), not both",
                CREDS.named(),
                NKEY.named()
            )));
        }
        match (&self.cert, &self.key) {
            (Some(_), None) => {
                return Err(bad(format!(
                    "{} is given without {}; a client certificate needs its private key: give both, or neither",
                    CERT.named(),
                    KEY.named()
                )))
            }
            (None, Some(_)) => {
                return Err(bad(format!(
                    "{} is given without {}; a private key needs its client certificate: give both, or neither",
                    KEY.named(),
                    CERT.named()
                )))
            }
            _ => self.check_tls()?,
        }
        let creds = match &self.creds {
            Some(p) => Some(load_creds(p)?),
            None => None,
        };
        let nkey = match &self.nkey {
            Some(p) => Some(load_nkey(p)?),
            None => None,
        };
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        Ok(Loaded {
            require_tls: tls_url || self.wants_tls(),
            ca: self.ca.as_ref().map(absolute),
            client: self
                .cert
                .as_ref()
                .zip(self.key.as_ref())
                .map(|(c, k)| (absolute(c), absolute(k))),
            creds,
            nkey,
        })
    }

    /// Checks the TLS files as the client will use them: the CA's
    /// certificates must be trust anchors, the client certificate and key
    /// must parse and belong together.
    fn check_tls(&self) -> Result<()> {
        if let Some(ca) = &self.ca {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_certs(CA, ca, "the CA that signed the server's")? {
                roots.add(cert).map_err(|e| {
                    bad(format!(
                        "{} {}: a certificate in it cannot be a trust anchor ({e}); give the CA's own certificate (PEM)",
                        CA.named(),
                        ca.display()
                    ))
                })?;
            }
        }
        if let (Some(cert), Some(key)) = (&self.cert, &self.key) {
            let chain = read_certs(CERT, cert, "the client")?;
            let key_der = read_key(key)?;
            let provider = rustls::crypto::ring::default_provider();
            rustls::sign::CertifiedKey::from_der(chain, key_der, &provider).map_err(|e| {
                bad(format!(
                    "{} {} and {} {} do not make a client identity ({e}); give the key that belongs to the certificate",
                    CERT.named(),
                    cert.display(),
                    KEY.named(),
                    key.display()
                ))
            })?;
        }
        Ok(())
    }
}

impl Loaded {
    /// `opts` configured with what was loaded.
    pub(super) fn apply(
        self,
        mut opts: async_nats::ConnectOptions,
    ) -> Result<async_nats::ConnectOptions> {
        // The client reads these files again at each (re)connection; they
        // were checked above.
        if let Some(ca) = self.ca {
            opts = opts.add_root_certificates(ca);
        }
        if let Some((cert, key)) = self.client {
            opts = opts.add_client_certificate(cert, key);
        }
        opts = opts.require_tls(self.require_tls);
        if let Some(creds) = self.creds {
            // Checked by `load_creds` with the client's own parser.
            opts = opts
                .credentials(&creds)
                .map_err(|_| bad(format!("{} does not parse", CREDS.named())))?;
        }
        if let Some(seed) = self.nkey {
            opts = opts.nkey(seed);
        }
        Ok(opts)
    }
}

fn bad(message: String) -> Error {
    Error::StoreSettings(message)
}

/// The file's bytes, or the error naming the setting.
fn read(s: Setting, path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        bad(format!(
            "{} {}: cannot read it ({e}); give the path of {what}",
            s.named(),
            path.display()
        ))
    })
}

/// The PEM certificates in a file, at least one.
fn read_certs(s: Setting, path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let what = format!("{what} certificate (PEM, `-----BEGIN CERTIFICATE-----`)");
    let bytes = read(s, path, &what)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| {
            bad(format!(
                "{} {}: not a PEM file ({e}); give {what}",
                s.named(),
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(bad(format!(
            "{} {}: no certificate in it; give {what}",
            s.named(),
            path.display()
        )));
    }
    Ok(certs)
}

/// The PEM private key in a file. Its contents are never repeated.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    let what = "the client certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1)";
    let bytes = read(KEY, path, what)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| {
        bad(format!(
            "{} {}: no private key in it; give {what}",
            KEY.named(),
            path.display()
        ))
    })
}

/// The credentials file's text, checked with the client's own parser.
fn load_creds(path: &Path) -> Result<String> {
    let what = "a NATS credentials file (`nsc generate creds`: the user JWT and its NKey seed)";
    let bytes = read(CREDS, path, what)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        bad(format!(
            "{} {}: not text; give {what}",
            CREDS.named(),
            path.display()
        ))
    })?;
    // The client's parser says which half is missing; its errors quote
    // nothing of the file.
    async_nats::ConnectOptions::new()
        .credentials(&text)
        .map_err(|e| {
            let why = if e.to_string().contains("JWT") {
                "no `-----BEGIN NATS USER JWT-----` block"
            } else {
                "no valid user NKey seed block (`-----BEGIN USER NKEY SEED-----`)"
            };
            bad(format!(
                "{} {}: does not parse ({why}); give {what}",
                CREDS.named(),
                path.display()
            ))
        })?;
    Ok(text)
}

/// The user seed in an NKey seed file.
fn load_nkey(path: &Path) -> Result<String> {
    let what = "a file holding one user NKey seed (`nk -gen user`: a line starting with SU)";
    let bytes = read(NKEY, path, what)?;
    let text = String::from_utf8(bytes).unwrap_or_default();
    // The seed is the first line that looks like one; a file may carry
    // comments or the public key beside it.
    let seed = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with('S') && !l.contains(char::is_whitespace) && l.len() > 50);
    let kind = seed.map(nkeys::KeyPair::from_seed);
    match kind {
        Some(Ok(kp)) if kp.key_pair_type() == nkeys::KeyPairType::User => {
            Ok(seed.unwrap_or_default().to_string())
        }
        Some(Ok(kp)) => Err(bad(format!(
            "{} {}: holds the seed of an {:?} key, not a user's; give {what}",
            NKEY.named(),
            path.display(),
            kp.key_pair_type()
        ))),
        _ => Err(bad(format!(
            "{} {}: no valid NKey seed in it; give {what}",
            NKEY.named(),
            path.display()
        ))),
    }
}

/// What to tell the lead when connecting failed for a reason these
/// settings explain: TLS or authentication. `None` for other failures
/// (unreachable, timed out), which the caller words itself.
pub(super) fn explain(
    kind: async_nats::ConnectErrorKind,
    detail: &str,
    security: &NatsSecurity,
    url_has_credentials: bool,
) -> Option<String> {
    use async_nats::ConnectErrorKind as K;
    match kind {
        // A failed handshake reaches the client as an I/O error as often
        // as a TLS one: the detail says which.
        K::Tls => {
            Some(explain_tls(detail, security).unwrap_or_else(|| tls_failed(detail, security)))
        }
        K::Io => explain_tls(detail, security),
        K::AuthorizationViolation | K::Authentication => {
            let given: Vec<String> = [
                security.creds.as_ref().map(|_| CREDS.named()),
                security.nkey.as_ref().map(|_| NKEY.named()),
                url_has_credentials.then(|| "the user:password in --store (TEAMHOST_STORE)".into()),
            ]
            .into_iter()
            .flatten()
            .collect();
            Some(if given.is_empty() {
                format!(
                    "the server requires credentials and none were given ({kind}); pass {} with a NATS .creds file, or {} with a user NKey seed, or user:password@ in the URL",
                    CREDS.ask(),
                    NKEY.ask()
                )
            } else {
                format!(
                    "the server refused this host's credentials ({kind}); check {}: the user must exist on this server (its account known to the server's resolver, its nkey listed in `authorization`) and not be expired or revoked",
                    given.join(" and ")
                )
            })
        }
        _ => None,
    }
}

/// The TLS failures with a known fix, by what the detail says.
fn explain_tls(detail: &str, security: &NatsSecurity) -> Option<String> {
    let lower = detail.to_ascii_lowercase();
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        return Some(match &security.ca {
            None => format!(
                "the server speaks TLS with a certificate no CA this host trusts has signed ({detail}); pass {} with the CA certificate (PEM) that signed the server's certificate",
                CA.ask()
            ),
            Some(ca) => format!(
                "the server's certificate is not signed by the CA in {} {} ({detail}); give the CA that signed the server's certificate",
                CA.named(),
                ca.display()
            ),
        });
    }
    if lower.contains("notvalidforname") || lower.contains("not valid for name") {
        return Some(format!(
            "the server's certificate does not name the host in the URL ({detail}); connect by a name or address listed in its subjectAltName"
        ));
    }
    let no_client_cert = security.cert.is_none();
    if lower.contains("certificaterequired")
        || lower.contains("certificate required")
        || (no_client_cert && lower.contains("badcertificate"))
    {
        // Without a certificate, a server that verifies clients answers
        // with one of these alerts (Go's: bad_certificate).
        return Some(format!(
            "the server requires a client certificate ({detail}); pass {} and {}",
            CERT.ask(),
            KEY.ask()
        ));
    }
    if lower.contains("badcertificate")
        || lower.contains("bad certificate")
        || lower.contains("unknownca")
        || lower.contains("unknown ca")
    {
        return Some(format!(
            "the server did not accept this host's client certificate ({detail}); check {} and {}: the certificate must be signed by the CA the server's `tls {{ ca_file }}` names",
            CERT.named(),
            KEY.named()
        ));
    }
    if lower.contains("certificate") && lower.contains("expired") {
        return Some(format!("a certificate has expired ({detail}); renew it"));
    }
    // What rustls says when the other side does not speak TLS.
    if lower.contains("corrupt message") || lower.contains("invalidcontenttype") {
        return Some(tls_failed(detail, security));
    }
    None
}

/// A TLS failure without a more precise cause.
fn tls_failed(detail: &str, _security: &NatsSecurity) -> String {
    format!(
        "TLS with the server failed ({detail}); if the server has no TLS, use a nats:// URL and leave {}, {} and {} out",
        CA.named(),
        CERT.named(),
        KEY.named()
    )
}

#[cfg(test)]
#[path = "security_tests.rs"]
mod tests;
