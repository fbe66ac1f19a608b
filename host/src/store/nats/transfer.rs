//! Copying a team between a NATS store and the reference's file layout
//! (`teamhost store export` / `import`), so a NATS team can be read with
//! the reference's tools, and a file team moved onto a server.
//!
//! What is copied: the config, every inbox's unread entries, every
//! history (entries as they were stamped, `consumedAt` kept), every task,
//! the highest task id ever used (`.highwatermark` on the file side, so an
//! id stays unused after the move), and the usage records. Plans are not:
//! their text is in the lead's approval requests. The target team must not
//! exist yet; the source is only read.

use std::io::Write;

use bytes::Bytes;

use super::NatsStore;
use crate::error::{Error, Result};
use crate::store::backend::HistoryCursor;
use crate::store::{FileStore, TeamStore};

/// What a transfer copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transferred {
    /// Agents whose inbox or history was copied.
    pub agents: Vec<String>,
    /// Unread entries copied.
    pub unread: usize,
    /// History entries copied.
    pub history: usize,
    /// Tasks copied.
    pub tasks: usize,
    /// The highest task id ever used.
    pub high: u64,
}

impl NatsStore {
    /// Writes `team` into `to`'s layout (its home). The team must not exist
    /// there.
    pub fn export_team(&self, team: &str, to: &FileStore) -> Result<Transferred> {
        let config = self
            .read_config(team)?
            .ok_or_else(|| self.not_found(team))?;
        to.create_team(team, &config)?;
        let paths = to.paths(team)?;
        let mut done = Transferred::default();
        for agent in self.agents_with_mail(team)? {
            let history = self
                .history_since(team, &agent, HistoryCursor::default())?
                .entries;
            if !history.is_empty() {
                let path = paths.history(&agent)?;
                let mut lines = Vec::new();
                for e in &history {
                    serde_json::to_writer(&mut lines, e)
                        .map_err(|e| Error::Encode(e.to_string()))?;
                    lines.push(b'\n');
                }
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
                }
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .and_then(|mut f| f.write_all(&lines).and_then(|()| f.sync_data()))
                    .map_err(|e| Error::io("write", &path, e))?;
            }
            let unread = self.read_inbox(team, &agent)?;
            if !unread.is_empty() {
                to.append_inbox(team, &agent, &unread)?;
            }
            done.unread += unread.len();
            done.history += history.len();
            done.agents.push(agent);
        }
        let tasks = self.list_tasks(team)?;
        done.high = self.task_high(team)?;
        copy_tasks(to, team, &tasks, done.high)?;
        done.tasks = tasks.len();
        for (agent, usage) in self.read_usage(team)? {
            to.write_usage(team, &agent, &usage)?;
        }
        Ok(done)
    }

    /// Reads `team` from `from`'s layout into this store. The team must not
    /// exist here.
    pub fn import_team(&self, team: &str, from: &FileStore) -> Result<Transferred> {
        let config = from.read_config(team)?.ok_or_else(|| Error::TeamNotFound {
            team: team.to_string(),
            path: from.config_location(team),
        })?;
        self.create_team(team, &config)?;
        let mut done = Transferred::default();
        for agent in from.agents_with_mail(team)? {
            let history = from
                .history_since(team, &agent, HistoryCursor::default())?
                .entries;
            if !history.is_empty() {
                self.import_history(team, &agent, &history)?;
            }
            let unread = from.read_inbox(team, &agent)?;
            if !unread.is_empty() {
                self.append_inbox(team, &agent, &unread)?;
            }
            done.unread += unread.len();
            done.history += history.len();
            done.agents.push(agent);
        }
        let tasks = from.list_tasks(team)?;
        let on_disk = std::fs::read_to_string(from.paths(team)?.highwatermark())
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let top = tasks
            .iter()
            .filter_map(|t| t.id.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        done.high = on_disk.max(top);
        copy_tasks(self, team, &tasks, done.high)?;
        done.tasks = tasks.len();
        for (agent, usage) in from.read_usage(team)? {
            self.write_usage(team, &agent, &usage)?;
        }
        Ok(done)
    }

    /// The highest task id ever used in `team`.
    pub fn task_high(&self, team: &str) -> Result<u64> {
        let n = self.names(team);
        let slot = super::kv::get(self.conn(), &n, "txn")
            .map_err(|f| self.conn().error("read the task ids", f))?;
        let high = slot
            .value
            .and_then(|raw: Bytes| serde_json::from_slice::<serde_json::Value>(&raw).ok())
            .and_then(|v| v["high"].as_u64())
            .unwrap_or(0);
        Ok(high)
    }

    fn not_found(&self, team: &str) -> Error {
        Error::TeamNotFound {
            team: team.to_string(),
            path: self.config_location(team),
        }
    }
}

/// Puts `tasks` into `to` in one pass, with `high` marked used.
fn copy_tasks(
    to: &dyn TeamStore,
    team: &str,
    tasks: &[crate::store::Task],
    high: u64,
) -> Result<()> {
    to.update_tasks(team, &mut |txn| {
        if high > 0 && !tasks.iter().any(|t| t.id == high.to_string()) {
            // Removing an absent id marks it used (the high-water mark).
            txn.remove(&high.to_string())?;
        }
        for t in tasks {
            txn.put(t)?;
        }
        Ok(())
    })
}
