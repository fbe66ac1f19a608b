//! Checks of [`NatsSecurity`] that need no server: each unusable file or
//! combination is refused before connecting, with an error naming the
//! setting and never the secret. (Real servers: host/tests/nats_security.rs.)

use super::*;

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn refused(s: &NatsSecurity) -> String {
    s.load(false).expect_err("refused").to_string()
}

fn creds_text(jwt: &str, seed: &str) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n************************* IMPORTANT *************************\n\n-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
    )
}

#[test]
fn a_missing_file_is_named_with_its_flag_and_variable() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.pem");
    for (s, setting) in [
        (
            NatsSecurity {
                ca: Some(missing.clone()),
                ..Default::default()
            },
            CA,
        ),
        (
            NatsSecurity {
                creds: Some(missing.clone()),
                ..Default::default()
            },
            CREDS,
        ),
        (
            NatsSecurity {
                nkey: Some(missing.clone()),
                ..Default::default()
            },
            NKEY,
        ),
    ] {
        let e = refused(&s);
        assert!(e.contains(setting.flag) && e.contains(setting.env), "{e}");
        assert!(e.contains("nope.pem") && e.contains("cannot read"), "{e}");
    }
}

#[test]
fn a_ca_that_is_not_pem_or_holds_no_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = file(&dir, "ca.pem", "this is not a certificate\n");
    let e = refused(&NatsSecurity {
        ca: Some(garbage),
        ..Default::default()
    });
    assert!(
        e.contains("--store-ca") && e.contains("no certificate"),
        "{e}"
    );
    let broken = file(
        &dir,
        "broken.pem",
        "-----BEGIN CERTIFICATE-----\n%%%%\n-----END CERTIFICATE-----\n",
    );
    let e = refused(&NatsSecurity {
        ca: Some(broken),
        ..Default::default()
    });
    assert!(
        e.contains("--store-ca") && e.contains("not a PEM file"),
        "{e}"
    );
}

#[test]
fn a_ca_whose_certificate_cannot_be_an_anchor_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Valid base64 in a CERTIFICATE block, but not a certificate.
    let junk = file(
        &dir,
        "junk.pem",
        "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
    );
    let e = refused(&NatsSecurity {
        ca: Some(junk),
        ..Default::default()
    });
    assert!(
        e.contains("--store-ca") && e.contains("trust anchor"),
        "{e}"
    );
}

#[test]
fn a_certificate_without_its_key_and_the_reverse_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let any = file(&dir, "x.pem", "x");
    let e = refused(&NatsSecurity {
        cert: Some(any.clone()),
        ..Default::default()
    });
    assert!(
        e.contains("--store-cert (TEAMHOST_STORE_CERT) is given without --store-key"),
        "{e}"
    );
    let e = refused(&NatsSecurity {
        key: Some(any),
        ..Default::default()
    });
    assert!(
        e.contains("--store-key (TEAMHOST_STORE_KEY) is given without --store-cert"),
        "{e}"
    );
}

#[test]
fn a_key_file_without_a_key_is_refused_without_quoting_it() {
    let dir = tempfile::tempdir().unwrap();
    // A certificate-shaped block: parses as PEM, holds no key.
    let cert = file(
        &dir,
        "cert.pem",
        "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
    );
    let key = file(&dir, "key.pem", "SECRET-MATERIAL\n");
    let e = refused(&NatsSecurity {
        cert: Some(cert),
        key: Some(key),
        ..Default::default()
    });
    assert!(
        e.contains("--store-key") && e.contains("no private key"),
        "{e}"
    );
    assert!(!e.contains("SECRET-MATERIAL"), "{e}");
}

#[test]
fn creds_and_nkey_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let any = file(&dir, "x", "x");
    let e = refused(&NatsSecurity {
        creds: Some(any.clone()),
        nkey: Some(any),
        ..Default::default()
    });
    assert!(
        e.contains("--store-creds") && e.contains("--store-nkey"),
        "{e}"
    );
    assert!(e.contains("not both"), "{e}");
}

#[test]
fn a_creds_file_that_does_not_parse_says_which_half_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let seed = nkeys::KeyPair::new_user().seed().unwrap();
    let no_jwt = file(&dir, "a.creds", &format!("just the seed {seed}\n"));
    let e = refused(&NatsSecurity {
        creds: Some(no_jwt),
        ..Default::default()
    });
    assert!(
        e.contains("--store-creds (TEAMHOST_STORE_CREDS)") && e.contains("NATS USER JWT"),
        "{e}"
    );
    assert!(!e.contains(&seed), "the seed is never repeated: {e}");
    let bad_seed = file(&dir, "b.creds", &creds_text("eyJhbGciOi.x.y", "SUNOTASEED"));
    let e = refused(&NatsSecurity {
        creds: Some(bad_seed),
        ..Default::default()
    });
    assert!(
        e.contains("--store-creds") && e.contains("NKEY SEED"),
        "{e}"
    );
    assert!(!e.contains("SUNOTASEED"), "{e}");
}

#[test]
fn a_well_formed_creds_file_loads() {
    let dir = tempfile::tempdir().unwrap();
    let seed = nkeys::KeyPair::new_user().seed().unwrap();
    let ok = file(&dir, "ok.creds", &creds_text("eyJhbGciOi.x.y", &seed));
    let loaded = NatsSecurity {
        creds: Some(ok),
        ..Default::default()
    }
    .load(false)
    .expect("loads");
    assert!(!loaded.require_tls, "credentials alone do not require TLS");
    assert!(
        !format!("{loaded:?}").contains(&seed),
        "Debug shows no secret"
    );
}

#[test]
fn an_nkey_file_must_hold_a_user_seed() {
    let dir = tempfile::tempdir().unwrap();
    let e = refused(&NatsSecurity {
        nkey: Some(file(
            &dir,
            "n1",
            "SUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
        )),
        ..Default::default()
    });
    assert!(
        e.contains("--store-nkey (TEAMHOST_STORE_NKEY)") && e.contains("no valid NKey seed"),
        "{e}"
    );
    let account = nkeys::KeyPair::new_account().seed().unwrap();
    let e = refused(&NatsSecurity {
        nkey: Some(file(&dir, "n2", &account)),
        ..Default::default()
    });
    assert!(e.contains("Account") && e.contains("not a user's"), "{e}");
    assert!(!e.contains(&account), "{e}");
    let user = nkeys::KeyPair::new_user();
    let text = format!(
        "# teamhost's user\n{}\n{}\n",
        user.public_key(),
        user.seed().unwrap()
    );
    let loaded = NatsSecurity {
        nkey: Some(file(&dir, "n3", &text)),
        ..Default::default()
    }
    .load(false)
    .expect("a user seed with a comment and its public key loads");
    assert_eq!(loaded.nkey.as_deref(), Some(user.seed().unwrap().as_str()));
}

#[test]
fn tls_is_required_by_a_tls_url_or_any_tls_file() {
    let none = NatsSecurity::default();
    assert!(!none.load(false).unwrap().require_tls);
    assert!(none.load(true).unwrap().require_tls);
    assert!(NatsSecurity {
        ca: Some("x".into()),
        ..Default::default()
    }
    .wants_tls());
}

#[test]
fn a_child_gets_every_setting_as_an_absolute_path_in_its_environment() {
    let s = NatsSecurity {
        ca: Some("rel/ca.pem".into()),
        creds: Some("/abs/team.creds".into()),
        ..Default::default()
    };
    let env = s.child_env();
    assert_eq!(env.len(), 2);
    assert_eq!(env[0].0, "TEAMHOST_STORE_CA");
    assert!(env[0].1.is_absolute() && env[0].1.ends_with("rel/ca.pem"));
    assert_eq!(
        env[1],
        ("TEAMHOST_STORE_CREDS", PathBuf::from("/abs/team.creds"))
    );
    assert!(NatsSecurity::default().child_env().is_empty());
}

#[test]
fn connect_failures_name_the_setting_to_fix() {
    use async_nats::ConnectErrorKind as K;
    let none = NatsSecurity::default();
    let unknown = "TLS error: invalid peer certificate: UnknownIssuer";
    let m = explain(K::Tls, unknown, &none, false).unwrap();
    assert!(
        m.contains("pass --store-ca FILE (or TEAMHOST_STORE_CA)"),
        "{m}"
    );
    let with_ca = NatsSecurity {
        ca: Some("/etc/x/ca.pem".into()),
        ..Default::default()
    };
    let m = explain(K::Tls, unknown, &with_ca, false).unwrap();
    assert!(
        m.contains("not signed by the CA in") && m.contains("/etc/x/ca.pem"),
        "{m}"
    );
    let m = explain(
        K::Tls,
        "received fatal alert: CertificateRequired",
        &none,
        false,
    )
    .unwrap();
    assert!(
        m.contains("--store-cert") && m.contains("--store-key"),
        "{m}"
    );
    let m = explain(K::AuthorizationViolation, "", &none, false).unwrap();
    assert!(
        m.contains("requires credentials") && m.contains("--store-creds"),
        "{m}"
    );
    let creds = NatsSecurity {
        creds: Some("/x.creds".into()),
        ..Default::default()
    };
    let m = explain(K::AuthorizationViolation, "", &creds, false).unwrap();
    assert!(
        m.contains("refused") && m.contains("check --store-creds"),
        "{m}"
    );
    assert!(!m.contains("--store-nkey"), "{m}");
    assert!(explain(K::Io, "connection refused", &none, false).is_none());
}
