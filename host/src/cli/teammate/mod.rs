//! `teamhost teammate`: runs one WebAssembly teammate whose member entry and
//! spawn prompt its lead has already written, until it approves a shutdown.
//! It is the program a Claude Code lead starts for an external teammate
//! (`CLAUDE_CODE_TEAMMATE_COMMAND`, with `--teammate-mode tmux`), and the one
//! teamhost's own `process` and `tmux` backends start.
//!
//! The lead runs the command it is given with the teammate's flags, so a
//! one-line wrapper script names the component:
//!
//! ```sh
//! #!/bin/sh
//! TEAMHOST_COMPONENT=/path/to/reviewer.wasm exec teamhost teammate "$@"
//! ```
//!
//! | flag | from the reference | used for |
//! |---|---|---|
//! | `--agent-id NAME@TEAM` | yes | who it is (name and team, when the next two are absent) |
//! | `--agent-name`, `--team-name` | yes | the member entry to attach to |
//! | `--agent-color`, `--parent-session-id` | yes | checked against the config (a mismatch is logged) |
//! | `$CLAUDE_CODE_TASK_LIST_ID` | yes (2.1.332) | the task list (`tasks/{id}/`) when the lead's differs from the team name |
//! | `--lead-verify-key MS.KEY` | yes (2.1.332) | the lead's Ed25519 key: lead-named entries must carry a valid `lead_sig` ([`crate::store::lead_guard`]) |
//! | any other `--flag[=value]` | (newer CLIs) | ignored with a warning on stderr ([`crate::cli::tolerate_unknown_flags`]) |
//! | `--agent-type`, `--model`, `--plan-mode-required` | yes | its identity (default: the member entry) |
//! | `--permission-mode`, `--dangerously-skip-permissions` | yes | its sandbox mode (the latter is `bypassPermissions`) |
//! | `--allowedTools`, `--disallowedTools` | yes | tool rules, comma- or space-separated, repeatable |
//! | `--component PATH\|NAME` | no | the `.wasm`; default `$TEAMHOST_COMPONENT`, else a file named after the agent, then its type |
//! | `--home DIR` | no | default `$CLAUDE_CONFIG_DIR`, else `~/.claude` when started by Claude Code (`CLAUDECODE=1`), else `$TEAMHOST_HOME` / `~/.teamhost` |
//! | `--store URL` | no | the team on a NATS server (`nats://HOST:PORT[/PREFIX]`, default `$TEAMHOST_STORE`); the home then keeps only this machine's files |
//! | `--store-ca FILE`, `--store-cert`, `--store-key`, `--store-creds`, `--store-nkey` | no | the NATS store's TLS files and credentials (default `$TEAMHOST_STORE_CA`, …: a host starting this process passes them in its environment, never its arguments) |
//! | `--no-auto-claim`, `--log FILE` | no | do not claim open tasks; write the guest's output to FILE instead of stderr |
//! | `--settings FILE\|JSON` | yes | hooks in Claude Code's settings format; default: `{home}/settings.json`; never a file inside its own directory (its `.claude/settings*.json` are skipped with a warning: the teammate can write them) ([`crate::hooks::settings`]) |
//! | `--notifications LEVEL` | no | which idle notifications reach the lead's inbox: `all` (default), `state-changes`, `none`; default `$TEAMHOST_NOTIFICATIONS` (see [`crate::runner::notify`]) |
//! | `--model-allow`, `--model-max-tokens`, … | no | its model policy ([`crate::cli::model_args`]) |
//! | `--limits JSON`, `--model-policy JSON` | no | hidden: a teamhost host passes its limits and model policy exactly |
//!
//! The flags that say how it runs are [`SettingsArgs`](super::settings_args::SettingsArgs):
//! they become a [`TeammateSettings`](crate::teammate::TeammateSettings) over
//! the member entry, the inverse of what a teamhost host writes when it
//! starts one ([`TeammateSettings::child_args`](crate::teammate::TeammateSettings::child_args)).
//!
//! A component NAME (no `/`, no `.wasm`) is looked for as `NAME.wasm` in each
//! directory of `$TEAMHOST_COMPONENT_PATH`, then in `{teamhost home}/components`.
//! Its directory is the member's `cwd`, else the current directory. In a tmux
//! pane (`$TMUX_PANE`) it reports `paneId` = the pane and `backendType: "tmux"`.
//!
//! It prints one line per turn and state change on stderr (with `--json` also
//! one JSON object per line on stdout: `{"event":"turn","kind":"message","atUs":…}`).
//! A start that fails once its member entry is found (no component, a model
//! it may not use or has no key for, a bad flag, a guest that does not
//! load) reaches the lead as a message from `teamhost` saying why, and
//! leaves the team as if it had never joined: its entry and unread spawn
//! prompt removed, any task it owned back to `pending`. The lead, which
//! waits for its new teammate, learns at once instead of timing out.
//!
//! SIGUSR1 is the word of the host that started it that the team is
//! stopping: a permission request waiting for the lead is denied at once
//! ("the host is stopping (…)", recorded as answered), and the teammate goes
//! on to its shutdown request. It is ignored until the teammate runs (its
//! host sends it again at every poll).
//!
//! Exit status: 0 after an approved shutdown; 1 when the teammate failed or
//! could not start; 128+N when stopped by signal N (SIGTERM, SIGINT, SIGHUP:
//! it first leaves the team cleanly: tasks back to `pending`, the lead told);
//! 4 when its team was deleted under it.
//!
//! | file | what it owns |
//! |---|---|
//! | `mod.rs` | the flags ([`TeammateArgs`]), the run and its end (exit statuses) |
//! | `finding.rs` | where it runs: the home, the component, its identity, the task list |
//! | `start.rs` | joining its member: hooks, the spawn request, placement, a failed start reported to the lead |
//! | `log.rs` | its event lines: text on stderr, JSON lines with `--json` |

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::broadcast::error::RecvError;

use super::Output;
use crate::embed::{Event, TeammateState};
use crate::home::Home;

mod finding;
mod log;
mod start;

use finding::{identity, task_list, teammate_home};
use start::{join, report_start_failure, ConfigTicks};

/// Exit status when the team was deleted while the teammate ran.
const EXIT_TEAM_GONE: i32 = 4;

/// Arguments of `teamhost teammate` (the reference's names, camelCase ones
/// included, so a Claude Code lead can start it).
#[derive(Debug, Args)]
pub struct TeammateArgs {
    /// `NAME@TEAM`.
    #[arg(long = "agent-id", value_name = "NAME@TEAM")]
    pub(super) agent_id: Option<String>,
    /// Member name (default: from --agent-id).
    #[arg(long = "agent-name", value_name = "NAME")]
    agent_name: Option<String>,
    /// Team name (default: from --agent-id).
    #[arg(long = "team-name", value_name = "TEAM")]
    team_name: Option<String>,
    /// Display colour given by the lead.
    #[arg(long = "agent-color", value_name = "COLOR")]
    pub(super) agent_color: Option<String>,
    /// The lead's session id.
    #[arg(long = "parent-session-id", value_name = "UUID")]
    parent_session_id: Option<String>,
    /// The public key a Claude Code 2.1.332 lead signs this teammate's
    /// inbox entries with, `<unix ms>.<base64url SPKI>`: lead-named entries
    /// that do not verify are then forged (shown marked unverified, never
    /// acted on). Without it, lead entries are taken as they are.
    #[arg(long = "lead-verify-key", value_name = "MS.KEY")]
    pub(super) lead_verify_key: Option<String>,
    /// How it runs: role, model, mode, tool rules, plan approval,
    /// auto-claim, notifications, limits, model policy.
    #[command(flatten)]
    pub(super) how: super::settings_args::SettingsArgs,
    /// The teammate component: a .wasm path, or a name looked up in
    /// $TEAMHOST_COMPONENT_PATH and {teamhost home}/components.
    #[arg(
        long,
        env = "TEAMHOST_COMPONENT",
        hide_env_values = true,
        value_name = "PATH|NAME"
    )]
    component: Option<String>,
    /// Write the guest's stdout and stderr to FILE (default: this process's stderr).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Come back as this member after its host died: take over its task in
    /// progress, its plan and permission requests waiting for the lead, its
    /// kept conversation and saved state (default: start afresh, clearing
    /// what an earlier teammate of this name left on this machine).
    #[arg(long)]
    resumed: bool,
    /// Hooks in Claude Code's settings format: a JSON document, or a file
    /// holding one. Default: the hooks of `{home}/settings.json`; files
    /// inside the teammate's directory (its `.claude/settings*.json`) are
    /// skipped, since the teammate can write them (see
    /// `crate::hooks::settings`).
    #[arg(long, value_name = "FILE|JSON")]
    settings: Option<String>,
    /// Fallback poll interval in milliseconds (benchmarks).
    #[arg(long = "poll-ms", hide = true, default_value_t = 500)]
    poll_ms: u64,
    /// Do not watch files for changes: wake on the fallback poll only (benchmarks).
    #[arg(long = "no-watch", hide = true)]
    no_watch: bool,
    /// Model calls: live, recorded or replayed.
    #[command(flatten)]
    model_calls: crate::cli::model_args::ModelArgs,
}

/// How the run ended.
enum End {
    Completed,
    Failed(String),
    Signalled(i32),
    TeamGone,
}

/// Runs `teamhost teammate`. `home_flag` is the global `--home`, `store`
/// the global `--store` (or `$TEAMHOST_STORE`): with a NATS store the team
/// lives there and the home keeps only this machine's files; `security`
/// its TLS files and credentials (flags or `$TEAMHOST_STORE_*`, which the
/// host that started this process set).
pub(super) fn run(
    home_flag: Option<&Path>,
    store: Option<&str>,
    security: &crate::store::NatsSecurity,
    out: &Output,
    a: TeammateArgs,
) -> anyhow::Result<()> {
    // SIGUSR1 is the host's word that the team is stopping (see the
    // module docs); until it is heard below, one must not end the process
    // (its default action), only be ignored: the host sends it again.
    // SAFETY: setting a signal's disposition to SIG_IGN runs no code.
    unsafe {
        libc::signal(libc::SIGUSR1, libc::SIG_IGN);
    }
    // T0 of the lead-entry window: this process's start, near enough.
    let started_ms = crate::protocol::time::now_ms() as i64;
    let (name, team_name) = identity(&a)?;
    let lead_key = a
        .lead_verify_key
        .as_deref()
        .map(crate::protocol::lead_sig::LeadVerifyKey::parse)
        .transpose()?;
    let (home, claude_home) = teammate_home(home_flag)?;
    let store = super::store_select::open(&home, store, security)?;
    let store = task_list(store, &team_name)?;
    let store = match lead_key {
        Some(key) => {
            // The lead's name is the team's, read when the teammate joins;
            // `team-lead` until then is the reference's.
            let lead = store
                .team(&team_name)
                .and_then(|t| t.config())
                .map(|c| c.lead_name().to_string())
                .unwrap_or_else(|_| "team-lead".into());
            let guard = if a.resumed {
                // Its host kept the key of its earlier life: what that
                // life left unread counts, what it consumed is spent.
                let spent = store.team(&team_name)?.consumed_msg_ids(&name)?;
                crate::store::LeadGuard::verifying_resumed(&team_name, &name, &lead, key, spent)
            } else {
                crate::store::LeadGuard::verifying(&team_name, &name, &lead, key, started_ms)
            };
            store.with_lead_guard(std::sync::Arc::new(guard))
        }
        // No launch key: the inbox is screened with the team's key when
        // its config names one (`backends::assembly`), as an in-process
        // teammate's is.
        None => store.with_lead_guard(std::sync::Arc::new(crate::store::LeadGuard::signing())),
    };
    let cache_dir = if claude_home {
        Some(Home::resolve(None)?.component_cache())
    } else {
        None
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let end = rt.block_on(run_teammate(
        home, store, cache_dir, out, &a, &name, &team_name,
    ))?;
    rt.shutdown_timeout(Duration::from_secs(2));
    let _ = std::io::stdout().flush();
    match end {
        End::Completed => Ok(()),
        End::Failed(why) => bail!("{name} failed: {why}"),
        End::Signalled(sig) => std::process::exit(128 + sig),
        End::TeamGone => std::process::exit(EXIT_TEAM_GONE),
    }
}

async fn run_teammate(
    home: Home,
    store: crate::store::Store,
    cache_dir: Option<PathBuf>,
    out: &Output,
    a: &TeammateArgs,
    name: &str,
    team_name: &str,
) -> anyhow::Result<End> {
    let start = Instant::now();
    let in_files = store.file_store().is_some();
    let team = store.team(team_name)?;
    let config = team.config().with_context(|| {
        if in_files {
            format!(
                "team {team_name:?} not found under {}: pass --home DIR (or set CLAUDE_CONFIG_DIR) to the lead's home",
                home.root().display()
            )
        } else {
            format!("team {team_name:?} not found in {}", team.location().display())
        }
    })?;
    let Some(member) = config.member(name).cloned() else {
        bail!(
            "{name} is not a member of team {} (members: {}); the lead registers a teammate before starting it",
            team.name(),
            config.member_names().join(", ")
        );
    };
    if let (Some(given), Some(have)) = (&a.parent_session_id, &config.lead_session_id) {
        if given != have {
            tracing::warn!(%given, %have, "--parent-session-id differs from the team's leadSessionId");
        }
    }
    if let (Some(given), Some(have)) = (&a.agent_color, &member.color) {
        if given != have {
            tracing::warn!(%given, %have, "--agent-color differs from the member entry");
        }
    }
    // From here the lead waits for this member: a start that fails tells
    // it why and leaves the team as if the teammate had never joined.
    let joined = join(
        home.clone(),
        store,
        cache_dir,
        out,
        a,
        &member,
        team.name(),
        start,
    )
    .await;
    let (host, events, log) = match joined {
        Ok(j) => j,
        Err(e) => {
            let (t, m, why, h) = (team.clone(), member.clone(), format!("{e:#}"), home.clone());
            let told = tokio::task::spawn_blocking(move || report_start_failure(&h, &t, &m, &why))
                .await
                .map_err(|j| anyhow::anyhow!("{j}"))
                .and_then(|r| r.map_err(anyhow::Error::from));
            if let Err(e2) = told {
                tracing::error!(error = %e2, "could not tell the lead that this teammate cannot start");
            }
            return Err(e);
        }
    };
    let mut events = events;

    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut usr1 = signal(SignalKind::user_defined1())?;
    let mut told_to_stop = false;
    // Is the team still there? On files, a look at its config every poll
    // (a stat); on a server, a look whenever its config changes (the
    // store's feed), never a poll.
    let mut tick = tokio::time::interval(Duration::from_millis(a.poll_ms.max(1)));
    let config_path = team.location();
    let (config_tx, mut config_changed) = tokio::sync::mpsc::unbounded_channel();
    let _config_feed = if in_files {
        None
    } else {
        Some(team.watch(std::sync::Arc::new(ConfigTicks(config_tx)))?)
    };
    let end = loop {
        let sig = tokio::select! {
            ev = events.recv() => {
                match ev {
                    Ok(Event::TurnStarted { name: n, kind, .. }) if n == name => {
                        log.line("turn", kind.clone(), json!({"kind": kind}));
                    }
                    Ok(Event::StateChanged { name: n, state, .. }) if n == name => {
                        let detail = match &state {
                            TeammateState::Failed(why) => format!("failed: {why}"),
                            s => s.as_str().to_string(),
                        };
                        log.line("state", detail, json!({"state": state.as_str()}));
                        match state {
                            TeammateState::Completed => break End::Completed,
                            TeammateState::Failed(why) => break End::Failed(why),
                            TeammateState::Killed => break End::Signalled(libc::SIGTERM),
                            _ => {}
                        }
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => break End::Failed("the host stopped".into()),
                }
                continue;
            }
            _ = term.recv() => libc::SIGTERM,
            _ = int.recv() => libc::SIGINT,
            _ = hup.recv() => libc::SIGHUP,
            _ = usr1.recv() => {
                if !told_to_stop {
                    told_to_stop = true;
                    log.line(
                        "stopping",
                        "the host is stopping the team: waits for the lead end",
                        json!({"stopping": true}),
                    );
                    host.stop_waits(team.name(), name, "its host is shutting the team down");
                }
                continue;
            }
            Some(()) = config_changed.recv() => {
                if !team.exists() {
                    log.line("exit", format!("team {} was deleted; stopping", team.name()), json!({"reason": "team-deleted"}));
                    break End::TeamGone;
                }
                continue;
            }
            _ = tick.tick(), if in_files => {
                if !config_path.exists() {
                    log.line("exit", format!("team {} was deleted; stopping", team.name()), json!({"reason": "team-deleted"}));
                    break End::TeamGone;
                }
                continue;
            }
        };
        log.line(
            "signal",
            format!("signal {sig}: leaving the team"),
            json!({"signal": sig}),
        );
        if let Err(e) = host.kill(team.name(), name).await {
            tracing::error!(error = %e, "could not stop cleanly");
        }
        break End::Signalled(sig);
    };
    let code = match &end {
        End::Completed => 0,
        End::Failed(_) => 1,
        End::Signalled(s) => 128 + s,
        End::TeamGone => EXIT_TEAM_GONE,
    };
    log.line(
        "exit",
        format!("exit status {code}"),
        json!({"status": code}),
    );
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::finding::resolve_component;
    use super::*;
    use crate::cli::settings_args::split_rules;
    use crate::runner::NotificationLevel;

    #[test]
    fn tool_rules_split_on_commas_and_spaces_outside_parentheses() {
        let args = vec!["Read,Bash(git log:*)".to_string(), "Edit Write".to_string()];
        assert_eq!(
            split_rules(&args),
            ["Read", "Bash(git log:*)", "Edit", "Write"]
        );
    }

    /// `teamhost teammate`'s arguments alone.
    #[derive(Debug, clap::Parser)]
    struct Only {
        #[command(flatten)]
        a: TeammateArgs,
    }

    #[test]
    fn notifications_flag_takes_the_three_levels_and_refuses_others() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let mut args = vec!["teammate", "--agent-id", "w@t"];
            args.extend_from_slice(extra);
            Only::try_parse_from(args)
        };
        // The default, unless $TEAMHOST_NOTIFICATIONS is set for this test run.
        if std::env::var_os("TEAMHOST_NOTIFICATIONS").is_none() {
            assert_eq!(
                parse(&[]).unwrap().a.how.notifications,
                NotificationLevel::All
            );
        }
        for (name, level) in [
            ("all", NotificationLevel::All),
            ("state-changes", NotificationLevel::StateChanges),
            ("none", NotificationLevel::None),
        ] {
            let got = parse(&["--notifications", name])
                .unwrap()
                .a
                .how
                .notifications;
            assert_eq!(got, level, "{name}");
        }
        let err = parse(&["--notifications", "quiet"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("quiet"), "{err}");
        assert!(err.contains("all, state-changes, none"), "{err}");
    }

    #[test]
    fn a_missing_component_says_how_to_set_one() {
        let err = resolve_component(None, "nobody-has-this", "nor-this-type")
            .unwrap_err()
            .to_string();
        assert!(err.contains("TEAMHOST_COMPONENT="), "{err}");
        assert!(err.contains("--component"), "{err}");
        assert!(err.contains("wrapper script"), "{err}");
    }
}
