//! A teammate's real Bash with its network (its own namespace, its proxy),
//! for running the attack list of issue 46 against it by hand or from
//! `scripts/compare-network-srt` (side `bash`). Needs what a teammate's
//! network needs: `CAP_SYS_ADMIN` (run as root).
//!
//! ```text
//! cargo run -p teamhost --example network_bash_probe -- '<command>'
//! cargo run -p teamhost --example network_bash_probe < commands   # one a line
//! ```
//!
//! It builds a team in memory with the teammate `probe` (Bash allowed,
//! mode `default`) working in `PROBE_DIR` (default: a new temporary
//! directory; its commands see it at `/tmp`), and runs each command in that
//! teammate's Bash: stdout to stdout, stderr to stderr, then one line on
//! stderr, `[exit N]` (or `[timed out]`, `[signal]`, `[truncated]` added).
//! The probe's own exit code is the last command's (124 on a timeout, 125
//! when Bash refused to run it). All commands of one run share the
//! teammate's proxy, so its budgets too.
//!
//! The teammate's network mirrors the comparison's allowlist:
//! `pkgs.test`, `sneaky.test`, `mixed.test` and the address `127.0.0.2`
//! allowed, nothing denied, port `PROBE_PORT` (default 18080) only, names
//! resolved by the system's resolver (the script puts the test names in
//! `/etc/hosts`). The lead answers every `Network` question with
//! `PROBE_LEAD`: `no` (default), `once` (allowed, this connection) or
//! `remember` (allowed for the run). `PROBE_MAX_MB` sets `max_mb` (default
//! the settings' default, 1024), `PROBE_TIMEOUT_MS` each call's timeout
//! (default 120000; Bash clamps it to 600000).
//!
//! With `PROBE_OTHER` set, a second teammate, `other`, with a different
//! allowlist (`127.0.0.1` and `sneaky.test`, the same port: what `probe`
//! must never reach) and its own directory, runs `PROBE_OTHER` first, its
//! output prefixed `other: `, so its namespace and proxy exist while
//! `probe`'s commands run.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use teamhost::network::NetworkSettings;
use teamhost::protocol::{Parsed, PermissionResponse, ProtocolMessage, WireMessage};
use teamhost::runtime::bindings::tools::{BashOutput, Host as _};
use teamhost::runtime::AgentCtx;
use teamhost::sandbox::{PermissionMode, ToolRules};
use teamhost::store::{MemoryStore, NewMember, NewTeam, OutgoingMessage, Store, Team};

/// How the lead answers every `Network` question.
#[derive(Clone, Copy, Debug)]
enum Lead {
    No,
    Once,
    Remember,
}

/// The lead: reads its inbox every 50 ms and answers each `Network`
/// request as `how` says, logging the host asked about on stderr.
fn lead(team: Team, how: Lead) {
    tokio::spawn(async move {
        let mut answered = std::collections::BTreeSet::new();
        loop {
            for m in team.unread("team-lead").unwrap_or_default() {
                let Parsed::Protocol(ProtocolMessage::PermissionRequest(r)) =
                    ProtocolMessage::parse(&m.text)
                else {
                    continue;
                };
                if r.tool_name != "Network" || !answered.insert(r.request_id.clone()) {
                    continue;
                }
                let host = r.input["host"].as_str().unwrap_or_default().to_string();
                eprintln!("network_bash_probe: the lead was asked about {host}: {how:?}");
                let answer = match how {
                    Lead::No => PermissionResponse::deny(&r.request_id, "the probe's lead says no"),
                    Lead::Once => PermissionResponse::allow(&r.request_id, r.input.clone(), vec![]),
                    Lead::Remember => {
                        let rule = serde_json::json!({
                            "type": "addRules",
                            "rules": [{"toolName": "Network", "ruleContent": format!("domain:{host}")}],
                            "behavior": "allow",
                            "destination": "session",
                        });
                        PermissionResponse::allow(&r.request_id, r.input.clone(), vec![rule])
                    }
                };
                let _ = team.deliver(&m.from, OutgoingMessage::new("team-lead", answer.to_text()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

fn settings(allowed: &[&str], port: u16, max_mb: Option<u64>) -> NetworkSettings {
    NetworkSettings {
        allowed_domains: allowed.iter().map(|s| s.to_string()).collect(),
        allowed_ports: Some(vec![port]),
        max_mb,
        ..NetworkSettings::default()
    }
}

fn teammate(
    team: &Team,
    name: &str,
    dir: &std::path::Path,
    net: NetworkSettings,
) -> anyhow::Result<AgentCtx> {
    Ok(AgentCtx::builder(team.clone(), name, dir)
        .mode(PermissionMode::Default)
        .rules(ToolRules::new(["Bash"], [] as [&str; 0])?)
        .network(net)
        .build()?)
}

/// Runs `command` in `a`'s Bash; prints what it gave (stdout lines
/// prefixed with `prefix`) and returns the exit code to report.
async fn run(a: &mut AgentCtx, command: &str, timeout_ms: u64, prefix: &str) -> i32 {
    let got: BashOutput = match a
        .tool_glue()
        .bash(command.to_string(), Some(timeout_ms))
        .await
    {
        Ok(got) => got,
        Err(e) => {
            eprintln!("{prefix}[Bash refused: {e}]");
            return 125;
        }
    };
    let mut out = std::io::stdout().lock();
    for line in got.stdout.lines() {
        let _ = writeln!(out, "{prefix}{line}");
    }
    let _ = out.flush();
    drop(out);
    for line in got.stderr.lines() {
        eprintln!("{prefix}{line}");
    }
    let code = match (got.exit_code, got.timed_out) {
        (_, true) => 124,
        (Some(c), false) => c,
        (None, false) => 128,
    };
    let mut how = match (got.exit_code, got.timed_out) {
        (_, true) => "[timed out".to_string(),
        (Some(c), false) => format!("[exit {c}"),
        (None, false) => "[signal".to_string(),
    };
    if got.truncated {
        how.push_str(", truncated");
    }
    eprintln!("{prefix}{how}]");
    code
}

fn env_number(name: &str) -> anyhow::Result<Option<u64>> {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().map_err(|e| anyhow::anyhow!("{name}={v}: {e}")))
        .transpose()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let port = env_number("PROBE_PORT")?.unwrap_or(18080);
    let port = u16::try_from(port)?;
    let max_mb = env_number("PROBE_MAX_MB")?;
    let timeout_ms = env_number("PROBE_TIMEOUT_MS")?.unwrap_or(120_000);
    let how = match std::env::var("PROBE_LEAD").as_deref() {
        Err(_) | Ok("no") => Lead::No,
        Ok("once") => Lead::Once,
        Ok("remember") => Lead::Remember,
        Ok(other) => anyhow::bail!("PROBE_LEAD={other}: say no, once or remember"),
    };

    let store = Store::with_backend(Arc::new(MemoryStore::new()));
    let team = store.team("probe-team")?;
    team.create(NewTeam::default())?;
    for name in ["probe", "other"] {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })?;
    }
    lead(team.clone(), how);

    let temp = tempfile::tempdir()?;
    let dir = match std::env::var_os("PROBE_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => temp.path().to_path_buf(),
    };
    let allowed = ["pkgs.test", "sneaky.test", "mixed.test", "127.0.0.2"];
    let mut probe = teammate(&team, "probe", &dir, settings(&allowed, port, max_mb))?;

    // The other teammate, kept alive (its namespace and proxy with it)
    // until the probe's commands are done.
    let other_dir = tempfile::tempdir()?;
    let _other = match std::env::var("PROBE_OTHER") {
        Ok(command) => {
            let net = settings(&["127.0.0.1", "sneaky.test"], port, max_mb);
            let mut other = teammate(&team, "other", other_dir.path(), net)?;
            run(&mut other, &command, timeout_ms, "other: ").await;
            Some(other)
        }
        Err(_) => None,
    };

    let commands: Vec<String> = match std::env::args().nth(1) {
        Some(command) => vec![command],
        None => std::io::stdin()
            .lock()
            .lines()
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|l| !l.trim().is_empty())
            .collect(),
    };
    let mut code = 0;
    for command in &commands {
        code = run(&mut probe, command, timeout_ms, "").await;
    }
    let usage = probe.tools.network.as_ref().map(|n| n.usage());
    if std::env::var_os("PROBE_USAGE").is_some() {
        eprintln!("network_bash_probe: {usage:#?}");
    }
    drop((probe, _other, other_dir, temp));
    std::process::exit(code)
}
