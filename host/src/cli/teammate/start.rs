//! Joining the member its lead wrote: the hooks it runs, the spawn request
//! from the flags over the member entry, where it reports its pane and
//! writes its output, and a member that could not start handed back to the
//! lead (its tasks to `pending`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use super::Output;
use crate::embed::{Attach, Event, Host, HostOptions, SpawnRequest};
use crate::home::Home;
use crate::hooks::{settings, Hooks};
use crate::store::Member;

use super::finding::resolve_component;
use super::log::Log;
use super::TeammateArgs;

/// The hooks this teammate runs: `--settings`, else the settings files of
/// the user and of the teammate's directory (its member `cwd`, else the
/// current directory), leaving out every file inside that directory, which
/// the teammate can write ([`settings::trusted_files`]).
pub(super) fn hooks(
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

/// Everything between knowing the member and running it: hooks, model
/// access, the host, the request, the attach. Returns the host, its event
/// feed (subscribed before the attach, so no event of the teammate's is
/// missed) and the log.
#[allow(clippy::too_many_arguments)]
pub(super) async fn join(
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
pub(super) fn report_start_failure(
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
pub(super) struct ConfigTicks(pub(super) tokio::sync::mpsc::UnboundedSender<()>);

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
pub(super) fn request(a: &TeammateArgs, member: &Member) -> anyhow::Result<SpawnRequest> {
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
pub(super) fn placement(a: &TeammateArgs, member: &Member, team: &str) -> Attach {
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
