//! The tmux backend: each teammate runs `teamhost teammate` (the same command
//! as the process backend) in a tmux pane, which shows its live log; tmux also
//! copies the pane's output to `{log_dir}/{team}/{name}.log` (`pipe-pane`).
//!
//! | where the host runs | where a teammate's pane goes |
//! |---|---|
//! | [`TmuxOptions::split_from`] set | the first teammate splits that pane's window side by side (`split-window -h`), later ones split the previous teammate's pane (`-v`), as the reference does |
//! | inside tmux (`$TMUX_PANE`) | a window of their own, `teamhost-{team}`, in the host's session, made with the first teammate (`new-window -d`: the person stays where they are); later ones split it, tiled. The host's pane keeps its whole width for the live view (`prefix n` shows the teammates) |
//! | outside tmux | a new window of the detached session `teamhost-{team}`, created with the first one |
//!
//! The pane id goes into the member's `tmuxPaneId`. The pane keeps its
//! process's exit status (`remain-on-exit`, set on teamhost's panes only) until
//! the host has read it, then the host closes it. Only panes teamhost recorded
//! for the team, still running the recorded process, are ever killed: a pane
//! of the user's in the same server is never touched, and a pane already gone
//! is fine.
//!
//! [`TmuxOptions::split_from`]: super::TmuxOptions::split_from

use std::ffi::OsStr;
use std::path::Path;

use super::child::{begin, log_path, teammate_args, ChildBackend, Starting};
use super::monitor::{monitor, Proc};
use super::panes::{is_ours, kill_pane_if_ours, pane_said, run, tmux};
use super::started;
use super::{BackendKind, SpawnEnv, Spawned, TmuxOptions};
use crate::error::{Error, Result};
use crate::home::started::Started;
use crate::store::{Member, Team};
use crate::teammate::SpawnRequest;

/// The tmux-pane [`Backend`](super::Backend).
pub(crate) fn backend() -> ChildBackend {
    ChildBackend::new(BackendKind::Tmux, |env, team, req, rejoining| {
        Box::pin(start(env, team, req, rejoining))
    })
}

/// Spawns `req` (registering it), or starts the registered `rejoining`
/// member again with `--resumed`.
async fn start(
    env: SpawnEnv<'_>,
    team: &Team,
    req: SpawnRequest,
    rejoining: Option<Member>,
) -> Result<Spawned> {
    let starting = begin(&env, team, &req, BackendKind::Tmux, rejoining, |store| {
        match store.secret_url() {
            // A pane runs a command line; the URL's credentials would show in it.
            Some(_) => Err(Error::Backend(
                "a NATS store URL with credentials cannot be handed to a tmux pane without showing in its command line; use the process backend (--teammate-mode process) or a URL without credentials".into(),
            )),
            None => Ok(()),
        }
    })
    .await?;
    let rollback = |e: Error| starting.rollback(team, e);
    let Starting {
        store, member, exe, ..
    } = &starting;
    let exe_shown = exe.display().to_string();
    let mut command = vec![exe.clone().into_os_string()];
    command.extend(teammate_args(
        team, store, member, &req, &env.hooks, env.models,
    ));
    command.extend(starting.flags());
    let line = format!(
        "exec {}",
        command
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let opts = env.backends.tmux.clone();
    let socket = opts.socket.clone();
    let dir = member.cwd.clone().unwrap_or_else(|| ".".into());
    let log = log_path(&env.log_dir, team, &member.name);
    let (t, name, home) = (team.clone(), member.name.clone(), env.home.clone());
    // The store's TLS/credentials files reach the pane's environment with
    // `-e` (tmux's own arguments), not its command line.
    let env_args = forwarded_env(&store.env());
    let placed = crate::blocking::run("tmux placement", move || {
        place(&home, &t, &name, &opts, &dir, &line, &log, &env_args)
    })
    .await
    .map_err(rollback)?
    .map_err(rollback)?;
    let (pane, pid) = placed;
    let fd = started::pidfd_open(pid).map_err(|e| {
        // What it said reaches the pane (kept by `remain-on-exit` when it
        // was set in time); read before the pane is closed.
        let said = pane_said(socket.as_deref(), &pane, pid)
            .map_or_else(|| "it left nothing on its pane".to_string(), |s| format!("its pane shows: {s}"));
        kill_pane_if_ours(socket.as_deref(), &pane, pid);
        let log = log_path(&env.log_dir, team, &member.name);
        let log = if log.metadata().is_ok_and(|m| m.len() > 0) {
            format!("; its log: {}", log.display())
        } else {
            String::new()
        };
        rollback(Error::Backend(format!(
            "teammate {}'s pane {pane} ended at once: its command `{exe_shown} teammate …` (pid {pid}) exited before the host could watch it ({e}); {said}{log}; check that {exe_shown} is the teamhost binary, or set TEAMHOST_EXE to it",
            member.name
        )))
    })?;
    let mut rec = Started::new(&member.name, "tmux", pid);
    rec.pane_id = Some(pane.clone());
    rec.tmux_socket = socket.clone();
    if let Err(e) = crate::home::started::record(&env.home, team.name(), &rec) {
        tracing::warn!(teammate = %member.name, error = %e, "could not record the teammate's pane");
    }
    let pane_for_config = pane.clone();
    let member = match team.update_member(&member.name, |m| {
        m.tmux_pane_id = Some(pane_for_config.clone());
        m.clone()
    }) {
        Ok(m) => m,
        // It may already have left (a fast shutdown); the monitor sorts it out.
        Err(e) => {
            tracing::warn!(teammate = %member.name, error = %e, "could not record tmuxPaneId");
            member.clone()
        }
    };
    Ok(monitor(
        &env,
        team,
        member,
        &req,
        Proc::Pane {
            pid,
            fd,
            socket,
            pane,
        },
        BackendKind::Tmux,
        starting.key,
    ))
}

/// Creates the pane running `line` and returns its id and its process id.
#[allow(clippy::too_many_arguments)]
fn place(
    home: &crate::home::Home,
    team: &Team,
    name: &str,
    opts: &TmuxOptions,
    dir: &str,
    line: &str,
    log: &Path,
    env_args: &[String],
) -> Result<(String, u32)> {
    let socket = opts.socket.as_deref();
    let host_pane = if opts.socket.is_none() && super::detect::inside_tmux() {
        std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty())
    } else {
        None
    };
    // The team's last teammate pane still running its process, if any.
    let last = || -> Result<Option<String>> {
        Ok(crate::home::started::list(home, team.name())?
            .into_iter()
            .filter(|r| r.name != name && r.backend == "tmux")
            .filter_map(|r| {
                let p = r.pane_id?;
                is_ours(socket, &p, r.pid).then_some(p)
            })
            .next_back())
    };
    let out = match (opts.split_from.clone(), host_pane) {
        (None, Some(host_pane)) => {
            own_window(socket, team, name, &host_pane, last()?, dir, env_args, line)?
        }
        (Some(lead_pane), _) => {
            // Beside the lead for the first teammate, below the last one after.
            let last = last()?;
            let (dir_flag, target) = match &last {
                Some(p) => ("-v", p.clone()),
                None => ("-h", lead_pane),
            };
            let mut c = tmux(socket);
            c.args(["split-window", "-d", dir_flag, "-t", &target, "-P", "-F"])
                .arg("#{pane_id} #{pane_pid}")
                .args(["-c", dir])
                .args(env_args)
                .arg(line);
            run(c, &format!("split pane {target} for teammate {name}"))?
        }
        (None, None) => {
            let session = format!("teamhost-{}", team.name());
            let exists = tmux(socket)
                .args(["has-session", "-t", &format!("={session}")])
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            let new_window = || {
                let mut c = tmux(socket);
                c.args([
                    "new-window",
                    "-d",
                    "-t",
                    &format!("={session}:"),
                    "-P",
                    "-F",
                ])
                .arg("#{pane_id} #{pane_pid}")
                .args(["-c", dir, "-n", name])
                .args(env_args)
                .arg(line);
                run(
                    c,
                    &format!("open a window in {session} for teammate {name}"),
                )
            };
            if exists {
                new_window()?
            } else {
                let mut c = tmux(socket);
                c.args(["new-session", "-d", "-s", &session, "-n", name])
                    .args(["-x", "200", "-y", "50", "-P", "-F"])
                    .arg("#{pane_id} #{pane_pid}")
                    .args(["-c", dir])
                    .args(env_args)
                    .arg(line);
                match run(c, &format!("start session {session} for teammate {name}")) {
                    Ok(o) => o,
                    // Another spawn created it meanwhile.
                    Err(e) if e.to_string().contains("duplicate session") => new_window()?,
                    Err(e) => return Err(e),
                }
            }
        }
    };
    let (pane, pid) = out
        .split_once(' ')
        .and_then(|(p, pid)| Some((p.to_string(), pid.parse::<u32>().ok()?)))
        .ok_or_else(|| Error::Backend(format!("unexpected answer from tmux: {out:?}")))?;
    // Keep the pane after its process ends until the host has read the exit
    // status (this pane only), and copy its output to the log file.
    let mut c = tmux(socket);
    c.args(["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
    if let Err(e) = run(c, "keep the pane's exit status") {
        tracing::debug!(error = %e, "remain-on-exit not set (the pane may be gone already)");
    }
    if let Some(parent) = log.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let mut c = tmux(socket);
    c.args(["pipe-pane", "-t", &pane])
        .arg(format!("cat >> {}", shell_quote(log.as_os_str())));
    if let Err(e) = run(c, "copy the pane to its log file") {
        tracing::debug!(error = %e, "no log file for the pane");
    }
    Ok((pane, pid))
}

/// Opens `name`'s pane in the team's own window of the host's session:
/// the window (`teamhost-{team}`, made detached, so the person's view stays
/// in front) for the first teammate, a split of the `last` teammate's pane,
/// tiled, after. Answers `pane_id pane_pid`.
#[allow(clippy::too_many_arguments)]
fn own_window(
    socket: Option<&Path>,
    team: &Team,
    name: &str,
    host_pane: &str,
    last: Option<String>,
    dir: &str,
    env_args: &[String],
    line: &str,
) -> Result<String> {
    if let Some(last) = last {
        let mut c = tmux(socket);
        c.args(["split-window", "-d", "-v", "-t", &last, "-P", "-F"])
            .arg("#{pane_id} #{pane_pid}")
            .args(["-c", dir])
            .args(env_args)
            .arg(line);
        let out = run(c, &format!("split pane {last} for teammate {name}"))?;
        let mut c = tmux(socket);
        c.args(["select-layout", "-t", &last, "tiled"]);
        if let Err(e) = run(c, "tile the teammates' window") {
            tracing::debug!(error = %e, "the teammates' window is not tiled");
        }
        return Ok(out);
    }
    let mut c = tmux(socket);
    c.args(["display-message", "-p", "-t", host_pane, "#{session_id}"]);
    let session = run(c, &format!("find the session of pane {host_pane}"))?;
    let mut c = tmux(socket);
    c.args(["new-window", "-d", "-t", &format!("{}:", session.trim())])
        .args(["-n", &format!("teamhost-{}", team.name()), "-P", "-F"])
        .arg("#{pane_id} #{pane_pid}")
        .args(["-c", dir])
        .args(env_args)
        .arg(line);
    run(c, &format!("open the team's window for teammate {name}"))
}

/// `-e VAR=value` for the variables a teammate needs from the host's
/// environment (a pane gets the tmux server's environment, not ours), then
/// `store`'s (the store's TLS and credentials files). Every store setting
/// variable is given, empty when the host has none, so that one left in
/// the tmux server's environment is not used instead.
fn forwarded_env(store: &[(&'static str, std::ffi::OsString)]) -> Vec<String> {
    let host = ["TEAMHOST_LOG", "TEAMHOST_COMPONENT_PATH", "PATH"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v}")));
    let settings = crate::store::nats::security::SETTINGS.iter().map(|s| {
        let v = store
            .iter()
            .find(|(k, _)| *k == s.env)
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{}={v}", s.env)
    });
    host.chain(settings)
        .flat_map(|kv| ["-e".to_string(), kv])
        .collect()
}

/// Quotes `s` for `sh -c` (single quotes; `'` as `'\''`).
fn shell_quote(s: &OsStr) -> String {
    let s = s.to_string_lossy();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        return s.into_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_keeps_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote(OsStr::new("--agent-id")), "--agent-id");
        assert_eq!(shell_quote(OsStr::new("a@b")), "a@b");
        assert_eq!(shell_quote(OsStr::new("two words")), "'two words'");
        assert_eq!(shell_quote(OsStr::new("it's")), "'it'\\''s'");
        assert_eq!(shell_quote(OsStr::new("")), "''");
        assert_eq!(shell_quote(OsStr::new("Bash(git:*)")), "'Bash(git:*)'");
    }

    #[test]
    fn a_pane_gets_every_store_setting_variable_set_or_emptied() {
        let args = forwarded_env(&[("TEAMHOST_STORE_NKEY", "/etc/t/host.nk".into())]);
        let pairs: Vec<&str> = args
            .chunks(2)
            .map(|c| {
                assert_eq!(c[0], "-e");
                c[1].as_str()
            })
            .collect();
        assert!(
            pairs.contains(&"TEAMHOST_STORE_NKEY=/etc/t/host.nk"),
            "{pairs:?}"
        );
        for empty in [
            "TEAMHOST_STORE_CA=",
            "TEAMHOST_STORE_CERT=",
            "TEAMHOST_STORE_KEY=",
            "TEAMHOST_STORE_CREDS=",
        ] {
            assert!(pairs.contains(&empty), "{empty} in {pairs:?}");
        }
    }
}
