//! What a NATS server needs to demand TLS and credentials, made at test
//! time: [`Pki`] (a self-signed CA, a server certificate for 127.0.0.1 and
//! a client certificate, by `openssl`), [`Operator`] (an operator, an
//! account with JetStream and its users, as signed NATS JWTs and `.creds`
//! files, by the `nkeys` crate) and the server configuration blocks that
//! use them ([`Pki::server_tls`], [`Operator::server_config`]).
//!
//! A NATS JWT is `base64url(header).base64url(claims).base64url(sig)`
//! without padding; the header is `{"typ":"JWT","alg":"ed25519-nkey"}` and
//! the signature is the issuer's NKey signing the first two parts.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use nkeys::KeyPair;
use serde_json::{json, Value};

/// A CA with a server and a client certificate, each a PEM file.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA's certificate (what `--store-ca` trusts).
    pub ca: PathBuf,
    /// The server's certificate (for 127.0.0.1 and localhost) and key.
    pub server_cert: PathBuf,
    /// The server certificate's key.
    pub server_key: PathBuf,
    /// A client certificate the CA signed, and its key.
    pub client_cert: PathBuf,
    /// The client certificate's key.
    pub client_key: PathBuf,
    /// Another CA, which signed nothing the server shows.
    pub other_ca: PathBuf,
}

impl Pki {
    /// Makes the files in `dir` with `openssl` (P-256 keys, valid 2 days).
    /// Panics, saying what to install, when `openssl` is missing.
    pub fn generate(dir: &Path) -> Pki {
        let p = |name: &str| dir.join(name);
        let ca = |name: &str| {
            openssl(
                dir,
                &[
                    "req",
                    "-x509",
                    "-new",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-nodes",
                    "-days",
                    "2",
                    "-keyout",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.pem"),
                    "-subj",
                    &format!("/CN=teamhost test {name}"),
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ],
            )
        };
        ca("ca");
        ca("other-ca");
        for (name, ext, serial) in [
            (
                "server",
                "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n",
                "0x1001",
            ),
            (
                "client",
                "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n",
                "0x1002",
            ),
        ] {
            std::fs::write(p(&format!("{name}.ext")), ext).unwrap();
            openssl(
                dir,
                &[
                    "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", &format!("{name}.key"), "-out",
                    &format!("{name}.csr"), "-subj", &format!("/CN=teamhost test {name}"),
                ],
            );
            openssl(
                dir,
                &[
                    "x509", "-req", "-in", &format!("{name}.csr"), "-CA", "ca.pem", "-CAkey",
                    "ca.key", "-set_serial", serial, "-days", "2", "-out",
                    &format!("{name}.pem"), "-extfile", &format!("{name}.ext"),
                ],
            );
        }
        Pki {
            ca: p("ca.pem"),
            server_cert: p("server.pem"),
            server_key: p("server.key"),
            client_cert: p("client.pem"),
            client_key: p("client.key"),
            other_ca: p("other-ca.pem"),
        }
    }

    /// The server's `tls { … }` block: its certificate, and with `verify`
    /// a client certificate signed by the CA required. The handshake may
    /// take 5 s (the default 0.5 s is short on a busy machine).
    pub fn server_tls(&self, verify: bool) -> String {
        format!(
            "tls {{\n  cert_file: {:?}\n  key_file: {:?}\n  ca_file: {:?}\n  verify: {verify}\n  timeout: 5\n}}\n",
            self.server_cert, self.server_key, self.ca
        )
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run openssl ({e}): install it (apt-get install openssl); the TLS tests make their certificates with it")
        });
    assert!(
        out.status.success(),
        "openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A NATS operator with two accounts that have JetStream (a team each:
/// accounts see nothing of each other) and the system account: the server
/// trusts the operator and knows the accounts (`resolver: MEMORY`); users
/// of an account connect with `.creds` files.
pub struct Operator {
    operator: KeyPair,
    account: KeyPair,
    other: KeyPair,
    system: KeyPair,
}

impl Default for Operator {
    fn default() -> Self {
        Operator::new()
    }
}

impl Operator {
    /// A fresh operator and account.
    pub fn new() -> Operator {
        Operator {
            operator: KeyPair::new_operator(),
            account: KeyPair::new_account(),
            other: KeyPair::new_account(),
            system: KeyPair::new_account(),
        }
    }

    /// The server's configuration: the operator's JWT, the account's
    /// preloaded (with JetStream, no limits), and the system account a
    /// server with JetStream in operator mode needs.
    pub fn server_config(&self) -> String {
        let op = self.operator.public_key();
        let operator_jwt = jwt(
            &self.operator,
            &op,
            "teamhost-test-operator",
            json!({ "type": "operator", "version": 2 }),
        );
        let team_account = |kp: &KeyPair, name: &str| {
            let public = kp.public_key();
            let signed = jwt(
                &self.operator,
                &public,
                name,
                json!({
                "type": "account",
                "version": 2,
                "limits": {
                    "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                    "wildcards": true, "conn": -1, "leaf": -1,
                    "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1,
                },
                "default_permissions": { "pub": {}, "sub": {} },
                }),
            );
            format!("  {public}: {signed:?}\n")
        };
        let system = self.system.public_key();
        let system_jwt = jwt(
            &self.operator,
            &system,
            "SYS",
            json!({ "type": "account", "version": 2, "limits": { "conn": -1, "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": true, "leaf": -1 } }),
        );
        format!(
            "operator: {operator_jwt:?}\nsystem_account: {system}\nresolver: MEMORY\nresolver_preload: {{\n{}{}  {system}: {system_jwt:?}\n}}\n",
            team_account(&self.account, "team-a"),
            team_account(&self.other, "team-b"),
        )
    }

    /// A `.creds` file's text for a new user of the first account.
    pub fn user_creds(&self, name: &str) -> String {
        creds(&self.account, name)
    }

    /// A `.creds` file's text for a new user of the second account.
    pub fn other_account_creds(&self, name: &str) -> String {
        creds(&self.other, name)
    }
}

/// A `.creds` file's text for a new user that `account` signs (the server
/// knows it only when it knows the account).
pub fn creds(account: &KeyPair, name: &str) -> String {
    let user = KeyPair::new_user();
    let user_jwt = jwt(
        account,
        &user.public_key(),
        name,
        json!({
            "type": "user", "version": 2, "pub": {}, "sub": {},
            "subs": -1, "data": -1, "payload": -1,
        }),
    );
    format!(
        "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n************************* IMPORTANT *************************\nNKEY Seed printed below can be used to sign and prove identity.\n\n-----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n",
        user.seed().expect("a generated key has a seed")
    )
}

/// A NATS JWT: `claims` under `nats`, `sub` and `name`, signed by `issuer`.
pub fn jwt(issuer: &KeyPair, sub: &str, name: &str, nats: Value) -> String {
    let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
    let iat = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let header = b64(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let claims = json!({
        "jti": format!("{sub}-{iat}"),
        "iat": iat,
        "iss": issuer.public_key(),
        "sub": sub,
        "name": name,
        "nats": nats,
    });
    let body = b64(claims.to_string().as_bytes());
    let signed = format!("{header}.{body}");
    let sig = issuer.sign(signed.as_bytes()).expect("sign the JWT");
    format!("{signed}.{}", b64(&sig))
}

/// A new user NKey: its public key (`U…`, for the server's
/// `authorization { users = [{ nkey: … }] }`) and its seed (`SU…`, for
/// `--store-nkey`).
pub fn nkey_user() -> (String, String) {
    let kp = KeyPair::new_user();
    (
        kp.public_key(),
        kp.seed().expect("a generated key has a seed"),
    )
}
