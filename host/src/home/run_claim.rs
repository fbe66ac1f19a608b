//! The run's claim on a team: `{home}/kept/{team}/host.json`, written by
//! `teamhost run` when it creates or resumes the team, so that every
//! command that would delete or take over the team refuses while that host
//! lives (`backends::live_host` reads it, with the spawn and process
//! records).

use serde::{Deserialize, Serialize};

use super::Home;
use crate::durable::{read_json, write_json};
use crate::error::Result;

/// The record `teamhost run` keeps of itself for the team it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostRecord {
    /// The host's process.
    pub host_pid: u32,
    /// Its start time (`/proc/{pid}/stat`), naming it for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_start_time: Option<u64>,
    /// Unix milliseconds.
    pub claimed_at: u64,
}

/// Records this process as the host running `team` (`teamhost run`, when
/// it has created or resumes it): from now on `live_host::find`, in any
/// other process, names it until it ends. Blocking.
pub fn claim(home: &Home, team: &str) -> Result<()> {
    let me = std::process::id();
    write_json(
        &home.run_claim(team),
        &HostRecord {
            host_pid: me,
            host_start_time: super::process::own_start_time(),
            claimed_at: crate::protocol::time::now_ms(),
        },
    )
}

/// The claim on `team`, if there is one; one that does not parse is
/// [`crate::Error::Corrupt`] (left where it is).
pub fn read(home: &Home, team: &str) -> Result<Option<HostRecord>> {
    read_json::<HostRecord>(&home.run_claim(team))
}
