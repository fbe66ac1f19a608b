//! Model usage per teammate (`teams/{team}/usage/{name}.json` in the file
//! store), and the plans teammates submit. Usage is written by
//! the host that runs the teammate after each of its model calls, read by
//! `teamhost status`, the live view and `run`'s summary (from any process).
//!
//! teamhost's own file: the reference has no such record (its
//! `idle_notification` carries no usage), so it lives beside, not inside,
//! the shared protocol files. The file store replaces it atomically but
//! does not sync it: a machine crash can lose the last
//! update, which loses only a display figure (budgets are enforced in the
//! host's memory, not from this file).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Team;
use crate::error::Result;

/// One teammate's model use, as its host last recorded it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    /// Completions made.
    pub calls: u64,
    /// Input tokens (not from or to the cache).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Cost at the host's prices, in millionths of a US dollar.
    pub cost_microdollars: u64,
    /// Calls whose provider reported no usage, counted at the host's
    /// estimate instead (the figures above include them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_calls: u64,
    /// Tokens left in its budget, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_left: Option<u64>,
    /// Money left in its budget (microdollars), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_left_microdollars: Option<u64>,
    /// Its cost budget (microdollars), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_budget_microdollars: Option<u64>,
    /// The team's cost budget (microdollars), when the team has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_budget_microdollars: Option<u64>,
    /// What a lead gave the teammates it spawned out of its cost budget
    /// (microdollars); 0, and left out, for a teammate.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub given_microdollars: u64,
    /// When a call it is waiting on started (ISO 8601), while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_since: Option<String>,
    /// The last call's error, when the last call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The first call a replay's cassette could not answer (the request
    /// drifted from the recording, or was never recorded), as the guest was
    /// told it: kept once set, so `teamhost run` fails on a drift even when
    /// the teammate went on (`not-recorded` in `wit/model.wit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_drift: Option<String>,
    /// When this record was written (ISO 8601).
    pub updated_at: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ModelUsage {
    /// Every token counted.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

impl Team {
    /// Replaces `agent`'s usage record (only while the team exists).
    pub fn write_model_usage(&self, agent: &str, usage: &ModelUsage) -> Result<()> {
        super::names::agent_file_stem(agent)?;
        self.backend().write_usage(self.name(), agent, usage)
    }

    /// Every usage record of the team, by agent file name. A record that
    /// does not parse is skipped with a warning (a display figure is never
    /// worth failing `status` for).
    pub fn model_usage(&self) -> Result<BTreeMap<String, ModelUsage>> {
        self.backend().read_usage(self.name())
    }

    /// Keeps a plan `agent` submitted for approval; returns where it is, as
    /// the approval request names it.
    pub fn write_plan(&self, agent: &str, plan: &str) -> Result<String> {
        super::names::agent_file_stem(agent)?;
        self.backend().write_plan(self.name(), agent, plan)
    }
}
