//! A NATS store's deployment settings against real `nats-server`s
//! configured for them: mutual TLS with a CA made at test time, an
//! operator-mode server whose two accounts (with JetStream, a team each,
//! isolated) are known from signed JWTs and whose users connect with
//! `.creds` files, and a server listing NKey users. Each working setup does a round trip (team, message,
//! claim); each misconfiguration fails at connect with the error naming the
//! setting to fix. The real `teamhost` binary takes the flags and the
//! `TEAMHOST_STORE_*` variables, and a child teammate process it starts
//! connects the same way through its environment.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use teamhost::embed::{Host, HostOptions, SpawnRequest, TeammateSettings};
use teamhost::home::Home;
use teamhost::store::nats::NatsOptions;
use teamhost::store::{
    ClaimOutcome, NatsSecurity, NatsStore, NatsUrl, NewMember, NewTask, NewTeam, OutgoingMessage,
    Store, TaskStatus,
};
use teamhost_tests::nats_secure::{self, Operator, Pki};
use teamhost_tests::nats_server::NatsServer;

fn connect(url: &str, security: &NatsSecurity) -> teamhost::Result<Store> {
    let opts = NatsOptions {
        security: security.clone(),
        ..NatsOptions::default()
    };
    let nats = NatsStore::connect_with(&NatsUrl::parse(url).unwrap(), opts)?;
    Ok(Store::with_backend(Arc::new(nats)))
}

fn refused(url: &str, security: &NatsSecurity) -> String {
    match connect(url, security) {
        Ok(_) => panic!("{url} with {security:?} connected; it should have been refused"),
        Err(e) => {
            eprintln!("REFUSED: {e}");
            e.to_string()
        }
    }
}

/// Creates team `name`, sends a message and takes it, creates a task and
/// claims it: the store works.
fn round_trip(store: &Store, name: &str) {
    let team = store.team(name).unwrap();
    team.create(NewTeam::default()).unwrap();
    team.add_member(NewMember {
        name: "w".into(),
        ..Default::default()
    })
    .unwrap();
    team.send("w", OutgoingMessage::new("team-lead", "hello"))
        .unwrap();
    let taken = team.take_unread("w").unwrap();
    assert_eq!(
        taken.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["hello"]
    );
    team.create_task(NewTask {
        subject: "one".into(),
        ..Default::default()
    })
    .unwrap();
    assert!(matches!(
        team.claim_task("1", "w", false).unwrap(),
        ClaimOutcome::Claimed(_)
    ));
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A server with mutual TLS (`verify: true`) in operator mode, the files
/// to reach it, and the settings that do.
struct Secured {
    server: NatsServer,
    pki: Pki,
    creds: PathBuf,
    _dir: tempfile::TempDir,
}

impl Secured {
    fn start(test: &str) -> Option<Secured> {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::generate(dir.path());
        let op = Operator::new();
        let config = format!("{}{}", pki.server_tls(true), op.server_config());
        let server = NatsServer::start_configured_or_skip(test, Some(&config))?;
        let creds = write(dir.path(), "team.creds", &op.user_creds("host"));
        Some(Secured {
            server,
            pki,
            creds,
            _dir: dir,
        })
    }

    fn all(&self) -> NatsSecurity {
        NatsSecurity {
            ca: Some(self.pki.ca.clone()),
            cert: Some(self.pki.client_cert.clone()),
            key: Some(self.pki.client_key.clone()),
            creds: Some(self.creds.clone()),
            nkey: None,
        }
    }
}

#[test]
fn mutual_tls_and_a_credentials_file_reach_a_server_that_demands_both() {
    let Some(s) = Secured::start("mutual tls + creds") else {
        return;
    };
    let url = s.server.url("sec");
    round_trip(&connect(&url, &s.all()).unwrap(), "both");
    // tls:// says the same as nats:// here: the server requires TLS.
    let tls_url = url.replacen("nats://", "tls://", 1);
    let store = connect(&tls_url, &s.all()).unwrap();
    assert_eq!(store.team("both").unwrap().list_tasks().unwrap().len(), 1);
}

#[test]
fn each_tls_misconfiguration_is_refused_naming_the_setting_to_fix() {
    let Some(s) = Secured::start("tls errors") else {
        return;
    };
    let url = s.server.url("sec");
    // The server requires TLS, the client has no CA that signed its
    // certificate.
    let e = refused(
        &url,
        &NatsSecurity {
            ca: None,
            ..s.all()
        },
    );
    assert!(
        e.contains("pass --store-ca FILE (or TEAMHOST_STORE_CA)") && e.contains("UnknownIssuer"),
        "{e}"
    );
    // A CA, but not the one that signed the server's certificate.
    let e = refused(
        &url,
        &NatsSecurity {
            ca: Some(s.pki.other_ca.clone()),
            ..s.all()
        },
    );
    assert!(
        e.contains("not signed by the CA in --store-ca (TEAMHOST_STORE_CA)")
            && e.contains("other-ca.pem"),
        "{e}"
    );
    // The server verifies clients; none is given.
    let e = refused(
        &url,
        &NatsSecurity {
            cert: None,
            key: None,
            ..s.all()
        },
    );
    assert!(
        e.contains("requires a client certificate")
            && e.contains("pass --store-cert FILE (or TEAMHOST_STORE_CERT) and --store-key"),
        "{e}"
    );
    // A client certificate with the wrong key: refused before connecting.
    let e = refused(
        &url,
        &NatsSecurity {
            key: Some(s.pki.server_key.clone()),
            ..s.all()
        },
    );
    assert!(e.contains("do not make a client identity"), "{e}");
    assert!(!e.contains("PRIVATE KEY"), "{e}");
}

#[test]
fn the_creds_file_chooses_an_isolated_account_and_unknown_or_missing_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let op = Operator::new();
    let Some(server) =
        NatsServer::start_configured_or_skip("creds errors", Some(&op.server_config()))
    else {
        return;
    };
    let url = server.url("acct");
    let good = write(dir.path(), "good.creds", &op.user_creds("host"));
    let store = connect(
        &url,
        &NatsSecurity {
            creds: Some(good),
            ..Default::default()
        },
    )
    .unwrap();
    round_trip(&store, "creds");
    // A user of an account this server was never told about.
    let stranger = nkeys::KeyPair::new_account();
    let wrong = write(
        dir.path(),
        "wrong.creds",
        &nats_secure::creds(&stranger, "intruder"),
    );
    let e = refused(
        &url,
        &NatsSecurity {
            creds: Some(wrong),
            ..Default::default()
        },
    );
    assert!(
        e.contains("refused this host's credentials")
            && e.contains("check --store-creds (TEAMHOST_STORE_CREDS)"),
        "{e}"
    );
    let e = refused(&url, &NatsSecurity::default());
    assert!(
        e.contains("requires credentials") && e.contains("--store-creds"),
        "{e}"
    );
    // The credentials file chooses the account, and accounts share
    // nothing: with the same URL and prefix, the other account's user sees
    // no team, and makes its own of the same name beside it.
    let other = write(dir.path(), "b.creds", &op.other_account_creds("b"));
    let b = connect(
        &url,
        &NatsSecurity {
            creds: Some(other),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(b.list_teams().unwrap().is_empty());
    round_trip(&b, "creds");
    assert_eq!(store.list_teams().unwrap(), ["creds"]);
    // Nothing of a seed ever shows.
    assert!(!e.contains("SU"), "{e}");
}

#[test]
fn an_nkey_user_connects_with_its_seed_file_and_a_stranger_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (public, seed) = nats_secure::nkey_user();
    let config = format!("authorization {{\n  users = [ {{ nkey: {public:?} }} ]\n}}\n");
    let Some(server) = NatsServer::start_configured_or_skip("nkey", Some(&config)) else {
        return;
    };
    let url = server.url("nk");
    let file = write(dir.path(), "host.nk", &format!("{seed}\n"));
    let store = connect(
        &url,
        &NatsSecurity {
            nkey: Some(file),
            ..Default::default()
        },
    )
    .unwrap();
    round_trip(&store, "nkey");
    // A teammate whose directory holds the seed could read it: refused.
    let home = tempfile::tempdir().unwrap();
    let host = Host::with_store(
        Home::new(home.path()),
        store.clone(),
        HostOptions::default(),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let req = SpawnRequest::new("w", teamhost_tests::WORKER, "p", dir.path());
    let e = rt
        .block_on(host.spawn("nkey", req))
        .expect_err("the seed's directory is refused")
        .to_string();
    assert!(
        e.contains("store TLS or credentials file") && e.contains("host.nk"),
        "{e}"
    );
    let (_, other) = nats_secure::nkey_user();
    let stranger = write(dir.path(), "other.nk", &other);
    let e = refused(
        &url,
        &NatsSecurity {
            nkey: Some(stranger),
            ..Default::default()
        },
    );
    assert!(
        e.contains("check --store-nkey (TEAMHOST_STORE_NKEY)"),
        "{e}"
    );
    assert!(!e.contains(&other), "{e}");
    // TLS demanded of a server that has none.
    let tls_url = url.replacen("nats://", "tls://", 1);
    let e = refused(&tls_url, &NatsSecurity::default());
    assert!(e.contains("TLS") && e.contains("use a nats:// URL"), "{e}");
}

#[test]
fn the_teamhost_binary_takes_the_settings_from_flags_and_environment() {
    let Some(s) = Secured::start("cli flags") else {
        return;
    };
    let url = s.server.url("cli");
    round_trip(&connect(&url, &s.all()).unwrap(), "flags");
    let home = tempfile::tempdir().unwrap();
    let teamhost = |flags: &[&str], env: &[(&str, &Path)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_teamhost"));
        cmd.arg("--home")
            .arg(home.path())
            .args(["--store", &url])
            .args(flags)
            .args(["status", "--team", "flags"]);
        for v in [
            "TEAMHOST_STORE",
            "TEAMHOST_STORE_CA",
            "TEAMHOST_STORE_CERT",
            "TEAMHOST_STORE_KEY",
            "TEAMHOST_STORE_CREDS",
            "TEAMHOST_STORE_NKEY",
        ] {
            cmd.env_remove(v);
        }
        cmd.envs(env.iter().copied());
        cmd.output().expect("the teamhost binary runs")
    };
    let path = |p: &PathBuf| p.to_str().unwrap().to_string();
    let (ca, cert, key, creds) = (
        path(&s.pki.ca),
        path(&s.pki.client_cert),
        path(&s.pki.client_key),
        path(&s.creds),
    );
    // The TLS files by flag, the credentials by environment.
    let out = teamhost(
        &[
            "--store-ca",
            &ca,
            "--store-cert",
            &cert,
            "--store-key",
            &key,
        ],
        &[("TEAMHOST_STORE_CREDS", &s.creds)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("one"), "the task shows: {stdout}");
    // The flag wins over the environment: a wrong CA in the environment
    // is not used.
    let out = teamhost(
        &[
            "--store-ca",
            &ca,
            "--store-cert",
            &cert,
            "--store-key",
            &key,
            "--store-creds",
            &creds,
        ],
        &[("TEAMHOST_STORE_CA", &s.pki.other_ca)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without the CA: the clear error, and the exit status says so.
    let out = teamhost(
        &["--store-cert", &cert, "--store-key", &key],
        &[("TEAMHOST_STORE_CREDS", &s.creds)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("pass --store-ca"), "{stderr}");
}

#[test]
fn a_child_teammate_process_connects_with_the_hosts_tls_and_credentials() {
    let Some(s) = Secured::start("child") else {
        return;
    };
    let url = s.server.url("kids");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("a.txt"), "one two three").unwrap();
    let here = connect(&url, &s.all()).unwrap();
    let team = here.team("kids").unwrap();
    team.create(NewTeam::default()).unwrap();
    team.create_task(NewTask {
        subject: "Count a".into(),
        description: "- a.txt".into(),
        ..Default::default()
    })
    .unwrap();
    // This test process has none of the TEAMHOST_STORE_* variables: the
    // child can reach the server only with what the host passes it.
    for setting in teamhost::store::nats::security::SETTINGS {
        assert!(std::env::var_os(setting.env).is_none(), "{}", setting.env);
    }
    let opts = HostOptions {
        backends: teamhost::backends::BackendOptions {
            mode: teamhost::backends::TeammateMode::Process,
            interactive: true,
            teamhost_exe: Some(env!("CARGO_BIN_EXE_teamhost").into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let home = dir.path().join("home");
    let host = Host::with_store(Home::new(&home), here, opts).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let req = SpawnRequest {
            settings: TeammateSettings {
                mode: Some(teamhost::sandbox::PermissionMode::AcceptEdits),
                ..Default::default()
            },
            ..SpawnRequest::new("ann", teamhost_tests::WORKER, "You count words.", &data)
        };
        host.spawn("kids", req).await.unwrap();
        let mut events = host.events();
        let done = tokio::time::timeout(Duration::from_secs(60), async {
            while !team
                .list_tasks()
                .unwrap()
                .iter()
                .all(|t| t.status == TaskStatus::Completed)
            {
                let _ = events.recv().await;
            }
        })
        .await;
        let log = std::fs::read_to_string(home.join("logs/kids/ann.log")).unwrap_or_default();
        assert!(
            done.is_ok(),
            "the child completes its task; its log:\n{log}"
        );
        let report = host
            .shutdown_team("kids", "done", Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(report.stopped.len(), 1, "{report:?}");
    });
    let report = std::fs::read_to_string(data.join("reports/task-1.md")).unwrap();
    assert!(report.contains("**3**"), "{report}");
}

#[test]
fn a_teammate_is_refused_a_directory_holding_the_stores_tls_or_credentials_files() {
    let Some(s) = Secured::start("settings layout") else {
        return;
    };
    let url = s.server.url("guarded");
    let settings_dir = s.creds.parent().unwrap().to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // With a lease the host's store is fenced: the fence must still say
    // which files the store trusts.
    for lease in [None, Some(Duration::from_secs(10))] {
        let dir = tempfile::tempdir().unwrap();
        let store = connect(&url, &s.all()).unwrap();
        let team = store.team("guarded").unwrap();
        if !team.exists() {
            team.create(NewTeam::default()).unwrap();
        }
        let opts = HostOptions {
            lease,
            ..Default::default()
        };
        let host = Host::with_store(Home::new(dir.path().join("home")), store, opts).unwrap();
        let req = SpawnRequest::new("mallory", teamhost_tests::ECHO, "hi", &settings_dir);
        let refused = rt.block_on(host.spawn("guarded", req));
        let e = match refused {
            Ok(_) => panic!(
                "a teammate got the directory of the store's CA and credentials (lease {lease:?})"
            ),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(&settings_dir.display().to_string()), "{e}");
        assert!(
            host.store()
                .team("guarded")
                .unwrap()
                .config()
                .unwrap()
                .member("mallory")
                .is_none(),
            "nothing was registered (lease {lease:?})"
        );
    }
}
