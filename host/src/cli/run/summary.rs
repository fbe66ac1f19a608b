//! The final summary: who did which task, the messages exchanged, the
//! shutdown and the time taken; printed as text, or as one JSON document
//! with `--json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::output::push_line;
use crate::embed::{ShutdownReport, TeammateInfo, TeammateState};
use crate::manifest::Manifest;
use crate::protocol::describe::reason_line;
use crate::run::{Ended, MessageCounts, TurnFailures};
use crate::store::{Task, Team};

/// How long the phases of a run took.
pub(super) struct Timings {
    /// When the run started.
    pub start: Instant,
    /// Spawning every teammate (part of `work`).
    pub spawn: Duration,
    /// From the start until the work was done or given up.
    pub work: Duration,
    /// The shutdown protocol.
    pub shutdown: Duration,
}

/// What `teamhost run` prints at the end.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Summary {
    team: String,
    /// Every task completed, every teammate stopped cleanly, no replay
    /// drifted and no turn failed (or `--allow-failed-turns`).
    ok: bool,
    /// `completed`, `timed-out`, `interrupted`, `stuck`, `teammates-stopped`,
    /// `spawn-failed` or `error`; with `--join`, `shut-down` (every
    /// teammate approved the lead's shutdown).
    outcome: &'static str,
    pub(super) error: Option<String>,
    /// From start to the end of the shutdown.
    elapsed_ms: u64,
    /// From start until the work was done (or given up).
    work_ms: u64,
    /// Of the work phase: spawning every teammate.
    spawn_ms: u64,
    /// The shutdown protocol: requests sent until every teammate stopped
    /// (or was killed).
    shutdown_ms: u64,
    tasks: Vec<TaskLine>,
    teammates: Vec<MateLine>,
    messages: MessageCounts,
    /// Who decided the permission requests and plans of this run.
    decisions: super::decisions::Decisions,
    /// The turns that failed and the replays that drifted.
    turn_failures: TurnFailures,
    /// The whole team's model spending, when a teammate used a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    model_spending: Option<String>,
    shutdown: ShutdownLine,
    /// The team's files: kept (`--keep`) or deleted.
    team_files_kept: bool,
    /// `--join`: this process joined a team its lead runs elsewhere (and
    /// left the team as it was).
    pub(super) joined: bool,
    /// `--adopt`: the teammates this process took over from hosts whose
    /// lease expired.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) adopted: Vec<String>,
    home: PathBuf,
    /// Where the guests' stdout and stderr went.
    logs: PathBuf,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskLine {
    id: String,
    subject: String,
    status: String,
    owner: Option<String>,
    /// Who owned it when the work ended, when the shutdown took it back.
    #[serde(skip_serializing_if = "Option::is_none")]
    unassigned_from: Option<String>,
    blocked_by: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct MateLine {
    name: String,
    agent_id: String,
    component: PathBuf,
    state: &'static str,
    failure: Option<String>,
    turns: u64,
    /// Ids of the completed tasks it owns.
    completed_tasks: Vec<String>,
    /// Its model use, when it used a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<crate::store::ModelUsage>,
    /// What its network proxy carried and refused, when it had a network
    /// and used it (`{name}.network.json` beside its log).
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<crate::network::Usage>,
}

#[derive(Debug, Serialize)]
struct ShutdownLine {
    stopped: Vec<String>,
    killed: Vec<String>,
}

impl Summary {
    /// The summary of a run the library finished ([`crate::run::Run::finish`]):
    /// what it read before the team's files went, and its problems.
    pub(super) fn of_run(
        team: &Team,
        m: &Manifest,
        f: crate::run::Finished,
        timings: Timings,
        home: &Path,
    ) -> Summary {
        let mut summary = Summary::assemble(
            team.name(),
            m,
            &f.ended,
            &f.tasks,
            &f.teammates,
            f.shutdown,
            f.messages,
            timings,
            home,
            f.kept,
            &f.usage,
            f.problems,
        );
        for t in &mut summary.tasks {
            t.unassigned_from = f.unassigned.get(&t.id).cloned();
        }
        summary.decisions = super::decisions::Decisions::new(f.decisions);
        summary.turn_failures = f.turn_failures;
        summary.adopted = f.adopted;
        summary
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        team: &str,
        m: &Manifest,
        outcome: &Ended,
        tasks: &[Task],
        teammates: &[TeammateInfo],
        shutdown: ShutdownReport,
        messages: MessageCounts,
        timings: Timings,
        home: &Path,
        kept: bool,
        usage: &BTreeMap<String, crate::store::ModelUsage>,
        problems: Vec<String>,
    ) -> Summary {
        let tasks: Vec<TaskLine> = tasks
            .iter()
            .map(|t| TaskLine {
                id: t.id.clone(),
                subject: t.subject.clone(),
                status: t.status.as_str().to_string(),
                owner: t.owner.clone(),
                unassigned_from: None,
                blocked_by: t.blocked_by.clone(),
            })
            .collect();
        let teammates: Vec<MateLine> = teammates
            .iter()
            .map(|t| MateLine {
                name: t.name.clone(),
                agent_id: t.agent_id.clone(),
                component: component_of(m, t),
                state: t.state.as_str(),
                failure: match &t.state {
                    TeammateState::Failed(why) => Some(why.clone()),
                    _ => None,
                },
                turns: t.turns,
                completed_tasks: tasks
                    .iter()
                    .filter(|k| k.status == "completed" && k.owner.as_deref() == Some(&t.name))
                    .map(|k| k.id.clone())
                    .collect(),
                model: crate::store::names::agent_file_stem(&t.name)
                    .ok()
                    .and_then(|stem| usage.get(&stem).cloned()),
                network: network_record(home, team, &t.name),
            })
            .collect();
        let error = if problems.is_empty() {
            None
        } else {
            Some(problems.join("; "))
        };
        Summary {
            team: team.to_string(),
            ok: error.is_none(),
            outcome: outcome.name(),
            error,
            elapsed_ms: timings.start.elapsed().as_millis() as u64,
            work_ms: timings.work.as_millis() as u64,
            spawn_ms: timings.spawn.as_millis() as u64,
            shutdown_ms: timings.shutdown.as_millis() as u64,
            tasks,
            teammates,
            messages,
            decisions: Default::default(),
            turn_failures: Default::default(),
            model_spending: crate::status::describe_team_spending(usage),
            shutdown: ShutdownLine {
                stopped: shutdown.stopped,
                killed: shutdown.killed,
            },
            team_files_kept: kept,
            joined: false,
            adopted: Vec::new(),
            home: home.to_path_buf(),
            logs: crate::home::Home::new(home).team_logs(team),
        }
    }

    pub(super) fn human(&self) -> String {
        let done = self
            .tasks
            .iter()
            .filter(|t| t.status == "completed")
            .count();
        let mut s = format!(
            "\n{}: {done}/{} task(s) completed by {} teammate(s) in {:.2}s (work {:.2}s, shutdown {:.2}s)\n",
            self.team,
            self.tasks.len(),
            self.teammates.len(),
            self.elapsed_ms as f64 / 1000.0,
            self.work_ms as f64 / 1000.0,
            self.shutdown_ms as f64 / 1000.0,
        );
        let w = self
            .teammates
            .iter()
            .map(|t| t.name.len())
            .chain([5])
            .max()
            .unwrap_or(5);
        if !self.tasks.is_empty() {
            s += "\ntasks\n";
        }
        for t in &self.tasks {
            let blocked = if t.blocked_by.is_empty() {
                String::new()
            } else {
                format!("  (after #{})", t.blocked_by.join(", #"))
            };
            let given_back = t
                .unassigned_from
                .as_deref()
                .map(|o| format!("  ({o}'s when the work ended; given back at its shutdown)"))
                .unwrap_or_default();
            let line = format!(
                "  #{:<3} {:<11} {:<w$}  {}{blocked}{given_back}",
                t.id,
                t.status,
                t.owner.as_deref().unwrap_or("-"),
                t.subject
            );
            push_line(&mut s, line);
        }
        s += "\nteammates\n";
        for t in &self.teammates {
            let tasks = if t.completed_tasks.is_empty() {
                "no task".to_string()
            } else {
                format!("task(s) #{}", t.completed_tasks.join(", #"))
            };
            let failure = t
                .failure
                .as_deref()
                .map(|f| format!(": {}", reason_line(f)))
                .unwrap_or_default();
            let line = format!(
                "  {:<w$}  {:>3} turn(s)  {:<10} {tasks}{failure}",
                t.name, t.turns, t.state
            );
            push_line(&mut s, line);
            if let Some(n) = &t.network {
                push_line(&mut s, format!("  {:<w$}  network: {}", "", n.describe()));
            }
            if let Some(u) = &t.model {
                push_line(
                    &mut s,
                    format!(
                        "  {:<w$}  model: {}",
                        "",
                        crate::status::describe_model_usage(u)
                    ),
                );
            }
        }
        if let Some(team) = &self.model_spending {
            push_line(&mut s, format!("  {:<w$}  model: {team}", "whole team"));
        }
        let drifts = &self.turn_failures.replay_drifts;
        // A drifted teammate's failed turns are its drift's doing: shown once.
        for f in self
            .turn_failures
            .failed_turns
            .iter()
            .filter(|f| !drifts.iter().any(|d| d.teammate == f.teammate))
        {
            push_line(
                &mut s,
                format!(
                    "  {:<w$}  {} failed turn(s), the first: {}",
                    f.teammate,
                    f.count,
                    reason_line(&f.first_reason)
                ),
            );
        }
        for d in drifts {
            push_line(
                &mut s,
                format!(
                    "  {:<w$}  replay drift: {}",
                    d.teammate,
                    reason_line(&d.difference)
                ),
            );
        }
        let mc = &self.messages;
        let kinds: Vec<String> = mc.by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
        // A malformed message's `type` is the teammate's: `push_line`.
        s.push('\n');
        push_line(
            &mut s,
            format!(
            "messages: {} ({} to the lead, {} from the lead, {}{} between teammates, {} unread): {}",
            mc.total,
            mc.to_lead,
            mc.from_lead,
            if mc.from_host > 0 {
                format!("{} from the host to teammates, ", mc.from_host)
            } else {
                String::new()
            },
            mc.between_teammates,
            mc.unread,
            kinds.join(", ")
        ),
        );
        self.decisions.human(&mut s);
        s += &format!(
            "shutdown: {} stopped, {} killed\n",
            self.shutdown.stopped.len(),
            self.shutdown.killed.len()
        );
        if !self.adopted.is_empty() {
            s += &format!(
                "adopted from hosts whose lease expired: {}\n",
                self.adopted.join(", ")
            );
        }
        s += &if self.joined {
            "the team is its lead's: left as it is\n".to_string()
        } else if self.team_files_kept {
            format!("team files kept under {}\n", self.home.display())
        } else {
            "team files deleted (--keep keeps them)\n".to_string()
        };
        s += &format!("guest logs: {}\n", self.logs.display());
        s
    }
}

/// The component teammate `t` runs: its `[[teammate]]` entry's, the
/// `[lead]`'s for a led team's lead, else (a teammate its lead spawned)
/// empty: which catalogue entry it came from is the lead's record.
fn component_of(m: &Manifest, t: &TeammateInfo) -> PathBuf {
    let lead = m
        .lead
        .as_ref()
        .filter(|_| t.name == crate::store::config::LEAD_NAME)
        .map(|l| l.component.clone());
    m.teammates
        .iter()
        .find(|s| s.name == t.name)
        .map(|s| s.component.clone())
        .or(lead)
        .unwrap_or_default()
}

/// What teammate `name`'s proxy kept beside its log, if it had a network
/// and ran a command with it (a record that does not read is left out).
fn network_record(home: &Path, team: &str, name: &str) -> Option<crate::network::Usage> {
    let log = crate::home::Home::new(home).teammate_log(team, name);
    let bytes = std::fs::read(crate::runtime::network_record_path(&log)).ok()?;
    serde_json::from_slice(&bytes).ok()
}
