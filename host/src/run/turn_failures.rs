//! What went wrong inside a run whose teammates all came back: the turns
//! that failed and the replays that drifted from their cassettes. A team with
//! no tasks "completes" as soon as every teammate is idle, so without this a
//! teammate whose only turn failed left `teamhost run` exiting 0.
//!
//! Both are read from the store, so they hold whatever backend ran the
//! teammate (in-process, a child process, a tmux pane):
//!
//! | what | where it is read | fails the run |
//! |---|---|---|
//! | a failed turn | the runner's `idle_notification` with `idleReason: "failed"` in the lead's inbox or history, stamped after the run began | unless the plan allows them (`--allow-failed-turns`) |
//! | a replay drift | the teammate's usage record: `replay_drift`, the first call its cassette could not answer | always: a replay that no longer follows its recording proves nothing |
//!
//! A trap ends its teammate (`failed`), which the summary counts already.

use crate::protocol::{Parsed, ProtocolMessage};
use crate::store::Team;

use crate::protocol::describe::reason_line;

/// The failed turns and replay drifts of one run, by teammate.
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnFailures {
    /// Teammates with at least one failed turn, in the order of their first.
    pub failed_turns: Vec<FailedTurns>,
    /// Teammates whose replay drifted: the first difference each.
    pub replay_drifts: Vec<ReplayDrift>,
}

/// One teammate's failed turns.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedTurns {
    pub teammate: String,
    pub count: usize,
    /// The first failure's reason, as the runner reported it.
    pub first_reason: String,
}

/// One teammate's replay drift.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayDrift {
    pub teammate: String,
    /// What the cassette said: which request, which file, the first
    /// difference.
    pub difference: String,
}

impl TurnFailures {
    /// Reads them from `team` (before its files are deleted): failure
    /// notifications to `lead` stamped at or after `since_ms` (a resumed
    /// team's earlier lives are not this run's), and every usage record's
    /// drift.
    pub fn read(team: &Team, lead: &str, since_ms: u64) -> crate::Result<TurnFailures> {
        let mut out = TurnFailures::default();
        let since = crate::protocol::time::timestamp_from_ms(since_ms)
            .and_then(|t| crate::protocol::time::parse_timestamp(&t));
        let mut mail = team.history(lead)?;
        mail.extend(team.unread(lead)?);
        for m in mail {
            let Parsed::Protocol(ProtocolMessage::IdleNotification(idle)) =
                ProtocolMessage::parse(&m.text)
            else {
                continue;
            };
            // The envelope's sender is the one the store vouches for; a
            // notification that names another teammate is not counted.
            if idle.idle_reason.as_deref() != Some("failed") || idle.from != m.from {
                continue;
            }
            let at = crate::protocol::time::parse_timestamp(&m.timestamp);
            if let (Some(since), Some(at)) = (since, at) {
                if at < since {
                    continue;
                }
            }
            match out
                .failed_turns
                .iter_mut()
                .find(|f| f.teammate == idle.from)
            {
                Some(f) => f.count += 1,
                None => out.failed_turns.push(FailedTurns {
                    teammate: idle.from.clone(),
                    count: 1,
                    first_reason: idle
                        .failure_reason
                        .clone()
                        .unwrap_or_else(|| "no reason given".into()),
                }),
            }
        }
        for (teammate, u) in team.model_usage()? {
            if let Some(difference) = u.replay_drift {
                out.replay_drifts.push(ReplayDrift {
                    teammate,
                    difference,
                });
            }
        }
        Ok(out)
    }

    /// The problems that fail the run: every drift, and the failed turns
    /// unless they are `allowed` (`--allow-failed-turns`). Teammates named in
    /// `already` (those that ended `failed`, whose reason the summary gives)
    /// and those that drifted are left out of the failed turns.
    pub fn problems(&self, allowed: bool, already: &[&str]) -> Vec<String> {
        let mut problems = Vec::new();
        for d in &self.replay_drifts {
            problems.push(format!(
                "teammate {}'s replay drifted from its cassette: {} (re-record the cassette if the change is meant, else fix what changed the request)",
                d.teammate,
                reason_line(&d.difference)
            ));
        }
        if allowed {
            return problems;
        }
        for f in &self.failed_turns {
            // A drift or a failed end already says why.
            let drifted = self.replay_drifts.iter().any(|d| d.teammate == f.teammate);
            if drifted || already.contains(&f.teammate.as_str()) {
                continue;
            }
            problems.push(format!(
                "teammate {}: {} turn(s) failed, the first: {} (--allow-failed-turns if the run expects it)",
                f.teammate,
                f.count,
                reason_line(&f.first_reason)
            ));
        }
        problems
    }
}
