//! A teammate's model seat: its client of the host's broker (keeping its
//! conversation in `{home}/kept/{team}/{name}.conversation.json`, for
//! `model.history` after a resume), the sink that
//! reports each call to the host's event channel, and the recorder of its
//! usage file (`teams/{team}/usage/{name}.json`).
//!
//! The record is kept in memory and written off the call's path by one
//! writer task per teammate, at most every 100 ms (a burst of calls costs a
//! few writes, and a call never waits for the disk). When the teammate's
//! runner ends, the recorder's `finish` writes the final figures before the
//! teammate counts as gone, so `status`, `run`'s summary and a test reading
//! the file after a shutdown see every call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::SpawnEnv;
use crate::error::Result;
use crate::model::ModelCallEvent;
use crate::store::{ModelUsage, Team};
use crate::teammate::SpawnRequest;

/// Keeps one teammate's usage record up to date.
struct UsageRecorder {
    name: String,
    closing: tokio::sync::watch::Sender<bool>,
    writer: tokio::task::JoinHandle<()>,
}

impl UsageRecorder {
    /// Stops the writer and writes the last figures (if the teammate made
    /// any call), waiting for the write.
    async fn finish(self) {
        let _ = self.closing.send(true);
        if let Err(e) = self.writer.await {
            tracing::warn!(teammate = %self.name, error = %e, "model usage writer failed");
        }
    }
}

/// The seat of teammate `name` spawned by `req`; with a model policy, its
/// recorder's last write runs when the teammate ends.
pub(crate) fn model_seat(
    env: &SpawnEnv<'_>,
    team: &Team,
    name: &str,
    req: &SpawnRequest,
    resumed: bool,
) -> Result<crate::runtime::ModelSeat> {
    let transcript = crate::model::Transcript::at(crate::home::kept::conversation(
        &env.home,
        team.name(),
        name,
    )?);
    // The team's purse: on the team's account in its config, shared by
    // every process of the team; a new account counts what every teammate
    // spent before (a resumed team's budget is for its whole life).
    // A teammate without a model policy makes no call: no purse to open
    // (and no config to read on its spawn).
    if req.settings.model_policy.is_some() {
        super::team_account::open(env.models.hub(), team)?;
    }
    let client = env.models.hub().client_keeping(
        team.name(),
        name,
        req.settings.model_policy.clone(),
        Some(transcript),
    )?;
    // A resumed teammate's budgets count what its earlier life spent, as
    // its usage record says.
    let earlier = if resumed && client.enabled() {
        team.model_usage()?.remove(name)
    } else {
        None
    };
    if let Some(u) = &earlier {
        let usage = crate::model::Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_write_tokens: u.cache_write_tokens,
        };
        client.carry_over(u.calls, &usage, u.cost_microdollars);
    }
    if !client.enabled() {
        return Ok(crate::runtime::ModelSeat {
            client,
            sink: None,
            clock: Default::default(),
            at_end: None,
        });
    }
    let usage: Arc<Mutex<Option<ModelUsage>>> = Arc::new(Mutex::new(earlier));
    let changed = Arc::new(Notify::new());
    let (closing, closing_rx) = tokio::sync::watch::channel(false);
    let writer = tokio::spawn(write_changes(
        team.clone(),
        name.to_string(),
        usage.clone(),
        changed.clone(),
        closing_rx,
    ));
    let events = env.events.clone();
    let (team_name, teammate) = (team.name().to_string(), name.to_string());
    let record = usage.clone();
    let sink: crate::model::ModelCallSink = Arc::new(move |call| {
        {
            let mut u = record.lock().unwrap_or_else(|p| p.into_inner());
            record_call(u.get_or_insert_with(ModelUsage::default), &call);
        }
        changed.notify_one();
        let _ = events.send(crate::teammate::Event::Model {
            team: team_name.clone(),
            name: teammate.clone(),
            call,
        });
    });
    let recorder = UsageRecorder {
        name: name.to_string(),
        closing,
        writer,
    };
    // At its end, what this process claimed of the team's budget and did
    // not spend goes back to the team (off the executor: a store write).
    let (hub, account_team) = (env.models.hub().clone(), team.name().to_string());
    let at_end = move || async move {
        recorder.finish().await;
        let settle = move || hub.settle_team_account(&account_team);
        let _ = crate::blocking::run("handing back the team budget's rest", settle).await;
    };
    Ok(crate::runtime::ModelSeat {
        client,
        sink: Some(sink),
        clock: Default::default(),
        at_end: Some(crate::model::AtEnd::new(at_end)),
    })
}

/// Folds one model call event into the teammate's usage record (its
/// figures are the meter's totals, so the latest event alone brings a stale
/// record up to date).
pub(crate) fn record_call(u: &mut ModelUsage, call: &ModelCallEvent) {
    let now = crate::protocol::time::timestamp_now();
    let spend = match call {
        ModelCallEvent::Started { .. } => {
            u.waiting_since = Some(now.clone());
            u.updated_at = now;
            return;
        }
        ModelCallEvent::Finished { spend, .. } => {
            u.last_error = None;
            spend
        }
        ModelCallEvent::Failed {
            error,
            not_recorded,
            spend,
        } => {
            if *not_recorded && u.replay_drift.is_none() {
                u.replay_drift = Some(error.clone());
            }
            u.last_error = Some(error.clone());
            spend
        }
    };
    u.waiting_since = None;
    u.calls = spend.calls;
    u.input_tokens = spend.usage.input_tokens;
    u.output_tokens = spend.usage.output_tokens;
    u.cache_read_tokens = spend.usage.cache_read_tokens;
    u.cache_write_tokens = spend.usage.cache_write_tokens;
    u.cost_microdollars = spend.cost_microdollars;
    u.estimated_calls = spend.estimated_calls;
    u.tokens_left = spend.tokens_left;
    u.cost_left_microdollars = spend.cost_left_microdollars;
    u.cost_budget_microdollars = spend.budget_microdollars;
    u.team_budget_microdollars = spend.team_budget_microdollars;
    u.given_microdollars = spend.given_microdollars;
    u.updated_at = now;
}

/// Writes the record each time it changed, at most every 100 ms; when
/// told to close, writes the last state and ends (dropped unasked, it
/// just ends). One task does every write, so an older state never lands
/// after a newer one.
async fn write_changes(
    team: Team,
    name: String,
    usage: Arc<Mutex<Option<ModelUsage>>>,
    changed: Arc<Notify>,
    mut closing: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        // Told to close: one last write. Dropped unasked (the teammate's
        // task was aborted): no write, the team may be going away.
        let closed = tokio::select! {
            _ = changed.notified() => false,
            r = closing.changed() => {
                if r.is_err() {
                    return;
                }
                *closing.borrow()
            }
        };
        let now = usage.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(now) = now {
            write(team.clone(), name.clone(), now).await;
        }
        if closed {
            return;
        }
        let closed = tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => false,
            r = closing.changed() => {
                if r.is_err() {
                    return;
                }
                *closing.borrow()
            }
        };
        if closed {
            let now = usage.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(now) = now {
                write(team.clone(), name.clone(), now).await;
            }
            return;
        }
    }
}

async fn write(team: Team, name: String, usage: ModelUsage) {
    let who = name.clone();
    let written = crate::blocking::try_run("the model usage record", move || {
        team.write_model_usage(&who, &usage)
    });
    match written.await {
        Ok(()) => {}
        // A lead's last calls come after it deleted its team: there is no
        // record left to write (its run's summary has the figures).
        Err(e @ crate::Error::TeamDeleted { .. }) => {
            tracing::debug!(teammate = %name, error = %e, "model usage record not written: the team is deleted")
        }
        Err(e) => tracing::warn!(teammate = %name, error = %e, "model usage record not written"),
    }
}
