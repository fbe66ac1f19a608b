//! `teamhost run --goal TEXT [--lead COMPONENT]` (or a manifest's `[lead]`
//! table): a team whose lead is a component (issue 29). The lead is started
//! with [`Host::start_lead`] instead of the manifest's teammates; it forms
//! the team, spawns teammates from `[[catalogue]]` and deletes the team when
//! it is done, which ends the run. The person keeps the live view (or the
//! event lines) and answers what is escalated to them.
//!
//! | the run ends when | then |
//! |---|---|
//! | the lead deleted its team | the summary; exit 0 |
//! | the lead's runner failed or was killed | its reason printed; the teammates shut down; exit 1 |
//! | the person quits (`q`, Ctrl-C, SIGTERM) or `--timeout` passes | the lead stopped, the teammates shut down; exit 1 |
//!
//! Decisions: `--lead` needs `[[catalogue]]` in the manifest (a lead
//! without one could spawn nothing); a manifest with a lead has no
//! `[[teammate]]` entries (refused when parsed, and with `--lead`): every
//! teammate is the lead's to spawn.

use std::time::{Duration, Instant};

use anyhow::Context;

use super::display::Display;
use super::report::{Log, Reporter};
use super::stop::Signals;
use super::{RunArgs, SHUTDOWN_TIMEOUT};
use crate::cli::Output;
use crate::embed::{Host, TeammateState};
use crate::home::Home;
use crate::manifest::{LeadTable, Manifest};
use crate::protocol::describe::printable_line;
use crate::store::config::LEAD_NAME;

/// Whether this run is led by a component: `--goal`, `--lead` or `[lead]`.
pub(super) fn is_led(a: &RunArgs, m: &Manifest) -> bool {
    a.goal.is_some() || a.lead.is_some() || m.lead.is_some()
}

/// Refuses a catalogue entry's or the lead's directory that holds the
/// manifest, a component, the home or the cache (as a teammate's).
pub(super) fn check_dirs(checker: &crate::layout::Checker, m: &Manifest) -> anyhow::Result<()> {
    for c in m.catalogue.iter().filter(|c| !c.cwd.as_os_str().is_empty()) {
        checker.check(&c.name, &c.cwd).map_err(anyhow::Error::msg)?;
    }
    if let Some(l) = &m.lead {
        checker
            .check(LEAD_NAME, &l.cwd)
            .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// What the summary says.
#[derive(serde::Serialize)]
struct LeadSummary {
    team: String,
    /// `completed` (the lead deleted its team), `failed`, `killed`,
    /// `interrupted`, `timed-out`.
    outcome: String,
    /// Why, when it did not complete.
    error: Option<String>,
    /// How long the run took, in seconds.
    seconds: f64,
    /// Who decided the team's requests: the lead, the person, the policy.
    decisions: super::decisions::Decisions,
}

/// Runs the led team to its end. See the module docs.
pub(super) async fn run_led(
    home: &std::path::Path,
    host: &Host,
    out: &Output,
    a: &RunArgs,
    m: &Manifest,
    log: Log,
    signals: &mut Signals,
) -> anyhow::Result<()> {
    let start = Instant::now();
    let run_began_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let goal = a
        .goal
        .clone()
        .or_else(|| m.lead.as_ref().and_then(|l| l.goal.clone()))
        .filter(|g| !g.trim().is_empty())
        .context(
            "a team led by a component needs a goal: pass --goal \"TEXT\" or set `goal` in [lead]",
        )?;
    if m.catalogue.is_empty() {
        anyhow::bail!(
            "{} has no [[catalogue]]: a lead component spawns its teammates only from the manifest's [[catalogue]] entries; add at least one",
            a.manifest.display()
        );
    }
    if !m.teammates.is_empty() {
        anyhow::bail!(
            "{} has [[teammate]] entries, but a lead component spawns every teammate itself: move them to [[catalogue]] or run without --lead/--goal",
            a.manifest.display()
        );
    }
    let table = m.lead.clone().unwrap_or_else(LeadTable::from_cli);
    // A bare `team.toml` has the empty path as its parent: the current
    // directory.
    let base = a
        .manifest
        .parent()
        .map(|p| match p.as_os_str().is_empty() {
            true => std::path::absolute("."),
            false => std::path::absolute(p),
        })
        .transpose()?
        .unwrap_or_default();
    let lead_component = a.lead.as_ref().map(std::path::absolute).transpose()?;
    let mut spec = super::lead_spec::lead_spec(
        &table,
        &base,
        lead_component.as_deref(),
        &goal,
        &m.catalogue,
    )
    .map_err(anyhow::Error::msg)?;
    if m.lead.is_none() {
        spec.cwd = crate::manifest::default_cwd(&base, LEAD_NAME);
    }
    let team = host.team(&m.team.name)?;
    let home_dir = Home::new(home);
    let how = if a.resume {
        crate::run::Start::Resume
    } else if a.replace {
        crate::run::Start::Replace
    } else {
        crate::run::Start::Fresh
    };
    crate::run::existing_team(&home_dir, &team, how, &a.manifest, &log).await?;
    // Who decides requests (the lead by default).
    let routes = m
        .approvals
        .routes(true)
        .map_err(|problems| anyhow::anyhow!("[approvals]: {}", problems.join("; ")))?;
    // The lines' reporter hears every event from the lead's first turn on
    // (the tasks it creates there included): it starts before the lead.
    // The lead's inbox is the lead component's: the reporter consumes none
    // of it (taking it here raced the lead's runner, which then never saw
    // the messages the reporter took).
    let lines = a.lines || out.is_json() || !crate::view::terminal_available();
    let reporter = lines.then(|| Reporter::start(host, &team, None, log));
    if let Err(e) = host.start_lead(team.name(), spec).await {
        if let Some(r) = reporter {
            r.stop().await;
        }
        return Err(anyhow::Error::from(e))
            .with_context(|| format!("cannot start the lead of team {:?}", team.name()));
    }
    crate::run::claim(&home_dir, &team);
    // The policy's requests are answered from here on.
    let _approval_desk = match host.serve_approvals(team.name(), routes) {
        Ok(desk) => desk,
        Err(e) => {
            if let Some(r) = reporter {
                r.stop().await;
            }
            return Err(e.into());
        }
    };
    let display = if let Some(reporter) = reporter {
        Display::Lines(reporter)
    } else {
        let seat = crate::view::Seat::beside_lead(host.clone(), team.clone());
        Display::Screen(crate::view::LiveView::start(
            seat,
            Some(host),
            "teamhost run",
        )?)
    };
    display.line(
        "run",
        format!(
            "team {} is led by a component; its goal is its first message",
            team.name()
        ),
    );
    signals
        .watchdog()
        .set_deadline(Some(Instant::now() + Duration::from_secs(a.timeout)));
    // The exit status of a stop without the store: 128 + a signal's number.
    let mut code = 1;
    let ended = tokio::select! {
        end = host.wait_lead(team.name()) => end.ok_or_else(|| "the lead is not running".to_string()),
        sig = signals.next() => {
            code = sig.exit_code();
            Err(format!("interrupted ({})", sig.name()))
        }
        how = display.quit_requested() => {
            signals.watchdog().asked(how);
            Err(format!("interrupted ({how})"))
        }
        _ = tokio::time::sleep(Duration::from_secs(a.timeout)) => Err(format!(
            "the lead did not finish within {}s; raise --timeout or read its log", a.timeout
        )),
    };
    signals.watchdog().set_deadline(None);
    if let Err(why) = super::stop::check_store(signals, &team, SHUTDOWN_TIMEOUT).await {
        return Err(super::stop::stop_without_store(host, signals, display, &why, code).await);
    }
    if let Err(lost) = host.check_lease(team.name()) {
        // Another host runs the teammates now: nothing more is written here.
        display.line("run", format!("stopping: {lost}"));
        display.stop().await;
        return Err(lost.into());
    }
    let (outcome, error) = match ended {
        Ok(TeammateState::Completed) => ("completed".to_string(), None),
        Ok(TeammateState::Failed(why)) => (
            "failed".to_string(),
            Some(format!("the lead failed: {}", printable_line(&why))),
        ),
        Ok(other) => (
            "stopped".to_string(),
            Some(format!("the lead ended {other:?}")),
        ),
        Err(why) => ("interrupted".to_string(), Some(why)),
    };
    if let Some(e) = &error {
        display.line("run", format!("stopping: {e}"));
    }
    // What the lead left running: stopped here (a lead that deleted its
    // team left nothing).
    if team.try_exists().unwrap_or(false) {
        let lead_running = host
            .teammates(team.name())
            .iter()
            .any(|t| t.name == LEAD_NAME && !t.state.is_finished());
        if lead_running {
            host.kill(team.name(), LEAD_NAME).await?;
        }
        let reason = error.clone().unwrap_or_else(|| "the run is over".into());
        host.shutdown_team(team.name(), &reason, SHUTDOWN_TIMEOUT)
            .await?;
        if !a.keep {
            host.delete_team(team.name()).await?;
        }
    }
    display.stop().await;
    let summary = LeadSummary {
        team: team.name().to_string(),
        outcome,
        error,
        seconds: start.elapsed().as_secs_f64(),
        decisions: super::decisions::Decisions::new(
            host.decisions(team.name(), run_began_ms)
                .unwrap_or_default(),
        ),
    };
    out.print(&summary, || {
        let mut text = format!(
            "team {}: the lead's run {} in {:.1}s\n",
            summary.team, summary.outcome, summary.seconds
        );
        if let Some(e) = &summary.error {
            text.push_str(&format!("error: {e}\n"));
        }
        summary.decisions.human(&mut text);
        text
    })?;
    match summary.error {
        None => Ok(()),
        Some(e) => Err(anyhow::anyhow!(e)),
    }
}
