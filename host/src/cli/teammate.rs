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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::broadcast::error::RecvError;

use super::Output;
use crate::embed::{Attach, Event, Host, HostOptions, SpawnRequest, TeammateState};
use crate::home::Home;
use crate::hooks::{settings, Hooks};
use crate::store::Member;

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
    #[arg(long, env = "TEAMHOST_COMPONENT", value_name = "PATH|NAME")]
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

/// The home `teamhost teammate` works in, and whether it is Claude Code's
/// (then teamhost's own files, such as the component cache, stay in
/// teamhost's usual home). See the module docs.
pub fn teammate_home(flag: Option<&Path>) -> anyhow::Result<(Home, bool)> {
    if let Some(dir) = flag {
        return Ok((Home::new(dir), false));
    }
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        return Ok((Home::new(dir), true));
    }
    if std::env::var("CLAUDECODE").is_ok_and(|v| v == "1") {
        if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            return Ok((Home::new(PathBuf::from(h).join(".claude")), true));
        }
    }
    Ok((Home::resolve(None)?, false))
}

/// Finds the component: `wanted` (flag or `$TEAMHOST_COMPONENT`) as a path or
/// a name, else the agent's name, then its type, as names.
fn resolve_component(
    wanted: Option<&str>,
    name: &str,
    agent_type: &str,
) -> anyhow::Result<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("TEAMHOST_COMPONENT_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    if let Ok(home) = Home::resolve(None) {
        dirs.push(home.components());
    }
    let find = |n: &str| {
        dirs.iter()
            .map(|d| d.join(format!("{n}.wasm")))
            .find(|p| p.is_file())
    };
    if let Some(w) = wanted.filter(|w| !w.is_empty()) {
        let as_path = Path::new(w);
        if w.contains('/') || w.ends_with(".wasm") || as_path.is_file() {
            if !as_path.is_file() {
                bail!("the component {w} does not exist (from --component or TEAMHOST_COMPONENT)");
            }
            return Ok(std::path::absolute(as_path)?);
        }
        return find(w).ok_or_else(|| {
            anyhow::anyhow!(
                "no component named {w:?}: looked for {w}.wasm in {}; pass a path instead",
                shown_dirs(&dirs)
            )
        });
    }
    if let Some(p) = find(name).or_else(|| find(agent_type)) {
        return Ok(p);
    }
    bail!(
        "no component for teammate {name}: pass --component PATH, or set TEAMHOST_COMPONENT=/path/to/teammate.wasm \
         (a Claude Code lead runs CLAUDE_CODE_TEAMMATE_COMMAND with its own flags, so use a wrapper script: \
         `#!/bin/sh` then `TEAMHOST_COMPONENT=/path/to/teammate.wasm exec teamhost teammate \"$@\"`), \
         or put {name}.wasm or {agent_type}.wasm in {}",
        shown_dirs(&dirs)
    )
}

fn shown_dirs(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        "$TEAMHOST_COMPONENT_PATH (unset)".into()
    } else {
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
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

/// The hooks this teammate runs: `--settings`, else the settings files of
/// the user and of the teammate's directory (its member `cwd`, else the
/// current directory), leaving out every file inside that directory, which
/// the teammate can write ([`settings::trusted_files`]).
fn hooks(
    home: &Home,
    store: &crate::store::Store,
    a: &TeammateArgs,
    name: &str,
    team: &str,
) -> anyhow::Result<Hooks> {
    if let Some(given) = &a.settings {
        let text = if given.trim_start().starts_with('{') {
            given.clone()
        } else {
            std::fs::read_to_string(given)
                .with_context(|| format!("cannot read --settings {given}"))?
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).context("--settings is not a JSON document")?;
        return Hooks::from_settings(&value).map_err(|e| anyhow::anyhow!("--settings: {e}"));
    }
    let dir = store
        .team(team)
        .and_then(|t| t.config())
        .ok()
        .and_then(|c| c.member(name).and_then(|m| m.cwd.clone()))
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .map_or_else(std::env::current_dir, Ok)
        .context("cannot tell the teammate's directory")?;
    let (files, skipped) =
        settings::trusted_files(settings::settings_files(&home.settings(), &dir), &dir);
    for s in skipped.iter().filter(|s| s.file.symlink_metadata().is_ok()) {
        tracing::warn!("{s}");
    }
    settings::load_files(&files).map_err(|e| anyhow::anyhow!("cannot read the hooks: {e}"))
}

/// The store with the task list a Claude Code 2.1.332 lead names in
/// `CLAUDE_CODE_TASK_LIST_ID` (its list id, when it differs from the team
/// name): the tasks are then in `tasks/{id}/`. Files only: a NATS team has
/// one list.
fn task_list(store: crate::store::Store, team: &str) -> anyhow::Result<crate::store::Store> {
    let Some(list) = std::env::var("CLAUDE_CODE_TASK_LIST_ID")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        return Ok(store);
    };
    let Some(files) = store.file_store() else {
        tracing::warn!(%list, "CLAUDE_CODE_TASK_LIST_ID is ignored: the team is on a NATS store, with one task list");
        return Ok(store);
    };
    let files = files
        .clone()
        .with_task_list(team, &list)
        .with_context(|| format!("CLAUDE_CODE_TASK_LIST_ID={list:?} cannot name a task list"))?;
    Ok(crate::store::Store::with_backend(std::sync::Arc::new(
        files,
    )))
}

/// Name and team from the flags.
fn identity(a: &TeammateArgs) -> anyhow::Result<(String, String)> {
    let (id_name, id_team) = match a.agent_id.as_deref().map(|id| id.split_once('@')) {
        Some(Some((n, t))) => (Some(n.to_string()), Some(t.to_string())),
        Some(None) => bail!(
            "--agent-id {:?} is not NAME@TEAM",
            a.agent_id.as_deref().unwrap_or_default()
        ),
        None => (None, None),
    };
    let pick =
        |flag: &Option<String>, from_id: Option<String>, what: &str| -> anyhow::Result<String> {
            match (flag, from_id) {
                (Some(f), Some(i))
                    if *f != i
                        && crate::store::names::sanitize_team_name(f).ok()
                            != crate::store::names::sanitize_team_name(&i).ok() =>
                {
                    bail!("--agent-id says {what} {i:?} but --{what}-name says {f:?}")
                }
                (Some(f), _) => Ok(f.clone()),
                (None, Some(i)) => Ok(i),
                (None, None) => bail!(
                    "which teammate? pass --agent-id NAME@TEAM (or --agent-name and --team-name)"
                ),
            }
        };
    let name = pick(&a.agent_name, id_name, "agent")?;
    let team = pick(&a.team_name, id_team, "team")?;
    Ok((name, team))
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

/// Everything between knowing the member and running it: hooks, model
/// access, the host, the request, the attach. Returns the host, its event
/// feed (subscribed before the attach, so no event of the teammate's is
/// missed) and the log.
#[allow(clippy::too_many_arguments)]
async fn join(
    home: Home,
    store: crate::store::Store,
    cache_dir: Option<PathBuf>,
    out: &Output,
    a: &TeammateArgs,
    member: &Member,
    team_name: &str,
    start: Instant,
) -> anyhow::Result<(Host, tokio::sync::broadcast::Receiver<Event>, Log)> {
    let name = member.name.as_str();
    let hooks = hooks(&home, &store, a, name, team_name)?;
    let opts = HostOptions {
        poll_interval: Duration::from_millis(a.poll_ms.max(1)),
        watch_files: !a.no_watch,
        cache_dir: cache_dir.clone(),
        notifications: a.how.notifications,
        hooks: std::sync::Arc::new(hooks),
        // teamhost's own files (its model config) stay in teamhost's home
        // when the team is Claude Code's (the cache's parent's parent).
        models: crate::cli::model_args::model_access(
            cache_dir
                .as_deref()
                .and_then(|c| c.parent())
                .and_then(|c| c.parent())
                .unwrap_or(home.root()),
            &a.model_calls,
            None,
        )?,
        ..Default::default()
    };
    let host = Host::with_store(home.clone(), store, opts)?;
    let team = host.team(team_name)?;
    let req = request(a, member)?;
    if a.how.dangerously_skip_permissions {
        tracing::warn!(
            "--dangerously-skip-permissions: {name} runs in bypassPermissions mode: it may edit \
             anything in {} and run Bash there without asking; to restrict it, give its wrapper \
             --disallowed-tools rules or drop the flag",
            req.cwd.display()
        );
    }
    let how = placement(a, member, team.name());
    let log = Log::new(out.is_json(), start, name);
    let events = host.events();
    host.attach(team.name(), req.clone(), how.clone()).await?;
    log.line(
        "joined",
        format!(
            "team {} as {} ({}), {}, mode {}, in {}, home {}",
            team.name(),
            name,
            member.color.as_deref().unwrap_or("-"),
            req.component.display(),
            req.settings.permission_mode().as_str(),
            req.cwd.display(),
            home.root().display()
        ),
        json!({"team": team.name(), "name": name, "backendType": how.backend_type, "paneId": how.pane_id, "mode": req.settings.permission_mode().as_str()}),
    );
    Ok((host, events, log))
}

/// A member that could not start: its tasks go back to `pending`, it leaves
/// the config, its unread spawn prompt goes, and the lead is told why, from
/// `teamhost`, in the words a failed teammate's end uses. When a process
/// teamhost started for the same member still runs (a second `teamhost
/// teammate` for a member that already runs), the lead is only told: the
/// running one keeps its place.
fn report_start_failure(
    home: &Home,
    team: &crate::store::Team,
    member: &Member,
    why: &str,
) -> crate::Result<()> {
    let lead = team.config()?.lead_name().to_string();
    let me = std::process::id();
    let another_runs = crate::home::started::list(home, team.name())
        .unwrap_or_default()
        .iter()
        .any(|p| p.name == member.name && p.pid != me && p.open_if_running().is_some());
    if another_runs {
        team.deliver(
            &lead,
            crate::store::OutgoingMessage::new(
                crate::protocol::HOST_SENDER,
                format!(
                    "a second start of {} failed: {why}. The one already running goes on.",
                    member.name
                ),
            ),
        )?;
        return Ok(());
    }
    let unassigned = team.unassign_agent(&member.name, &member.agent_id, true)?;
    match team.remove_member(&member.name) {
        Ok(_) | Err(crate::Error::MemberNotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    team.take_unread(&member.name)?;
    team.deliver(
        &lead,
        crate::store::OutgoingMessage::new(
            crate::protocol::HOST_SENDER,
            format!(
                "{} could not start: {why}. {}",
                member.name, unassigned.notification
            ),
        ),
    )?;
    Ok(())
}

/// Forwards the store feed's config changes (the team may be gone).
struct ConfigTicks(tokio::sync::mpsc::UnboundedSender<()>);

impl crate::store::StoreObserver for ConfigTicks {
    fn changed(&self, event: &crate::store::StoreEvent) {
        if matches!(event, crate::store::StoreEvent::ConfigChanged { .. }) {
            let _ = self.0.send(());
        }
    }
}

/// The spawn request for the member: its settings from the flags over the
/// member entry ([`SettingsArgs::over`](super::settings_args::SettingsArgs::over)),
/// its component found by name or type.
fn request(a: &TeammateArgs, member: &Member) -> anyhow::Result<SpawnRequest> {
    let mut settings = a.how.over(member)?;
    let agent_type = settings
        .agent_type
        .get_or_insert_with(|| "general-purpose".into())
        .clone();
    let component = resolve_component(a.component.as_deref(), &member.name, &agent_type)?;
    let cwd = member
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .map_or_else(std::env::current_dir, Ok)
        .context("cannot tell the teammate's directory")?;
    Ok(SpawnRequest {
        settings,
        ..SpawnRequest::new(member.name.clone(), component, "", cwd)
    })
}

/// Backend and pane it reports, and where the guest's output goes.
fn placement(a: &TeammateArgs, member: &Member, team: &str) -> Attach {
    let pane = std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty());
    let (backend_type, pane_id) = match pane {
        Some(p) => ("tmux".to_string(), p),
        None => {
            let b = member
                .backend_type
                .clone()
                .filter(|b| b != "in-process")
                .unwrap_or_else(|| "process".into());
            // A pane id recorded for an in-process member does not describe
            // this process: name the backend instead.
            let p = member
                .tmux_pane_id
                .clone()
                .filter(|p| !p.is_empty() && p != "in-process")
                .unwrap_or_else(|| b.clone());
            (b, p)
        }
    };
    let guest_log = a.log.clone().or_else(|| {
        // The guest writes where this process's stderr goes (a pane, or the
        // process backend's log file); a file when stderr cannot be reopened.
        let stderr = PathBuf::from("/proc/self/fd/2");
        match std::fs::OpenOptions::new().append(true).open(&stderr) {
            Ok(_) => Some(stderr),
            Err(_) => Home::resolve(None)
                .ok()
                .map(|h| h.teammate_log(team, &member.name)),
        }
    });
    Attach {
        backend_type,
        pane_id,
        guest_log,
        resumed: a.resumed,
    }
}

/// Event lines: human text on stderr, and JSON lines on stdout with `--json`.
struct Log {
    json: bool,
    start: Instant,
    name: String,
}

impl Log {
    fn new(json: bool, start: Instant, name: &str) -> Log {
        Log {
            json,
            start,
            name: name.to_string(),
        }
    }

    fn line(&self, event: &str, text: impl AsRef<str>, mut fields: serde_json::Value) {
        let t = self.start.elapsed().as_secs_f64();
        // stderr may be a pane that was just closed: never panic on it.
        let _ = writeln!(
            std::io::stderr(),
            "+{t:7.3}s  {}  {event:<6} {}",
            // One event, one line: a failure reason cannot start another.
            crate::protocol::describe::printable_line(&self.name),
            crate::protocol::describe::printable_line(text.as_ref())
        );
        if self.json {
            let at_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros() as u64)
                .unwrap_or_default();
            if let serde_json::Value::Object(m) = &mut fields {
                m.insert("event".into(), event.into());
                m.insert("atUs".into(), at_us.into());
            }
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{fields}");
            let _ = stdout.flush();
        }
    }
}

#[cfg(test)]
mod tests {
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
