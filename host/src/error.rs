//! The error type at teamhost's public boundary.
//!
//! Every variant says which part failed and carries what a person needs to act:
//! the offending name or path, and (through `Display`) a hint at the fix.

use std::path::PathBuf;
use std::time::Duration;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the library can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A team, agent or task name was refused before touching the disk.
    #[error("invalid {kind} name {name:?}: {reason}")]
    InvalidName {
        /// `"team"` or `"agent"`.
        kind: &'static str,
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: String,
    },

    /// No `config.json` for this team under the home directory.
    #[error(
        "team {team:?} does not exist (no {path}); create it with `teamhost team create {team}`"
    )]
    TeamNotFound {
        /// Sanitised team name.
        team: String,
        /// The config path that was looked for.
        path: PathBuf,
    },

    /// `create` found a team already there.
    #[error("team {team:?} already exists at {path}; pick another name or delete it first")]
    TeamExists {
        /// Sanitised team name.
        team: String,
        /// Its config path.
        path: PathBuf,
    },

    /// A team delete was refused because teammates are still registered.
    #[error(
        "team {team:?} still has members {members:?}; shut them down first or delete with --force"
    )]
    TeamNotEmpty {
        /// Sanitised team name.
        team: String,
        /// Members other than the lead.
        members: Vec<String>,
    },

    /// A command that would delete or take over a team was refused: a live
    /// teamhost host on this machine runs it
    /// ([`crate::backends::live_host`]).
    #[error("{message}")]
    TeamRunning {
        /// Sanitised team name.
        team: String,
        /// The host's process.
        pid: u32,
        /// Who runs it, since when, and how to stop it.
        message: String,
    },

    /// A message or operation named an agent that is not in the team.
    #[error("{name:?} is not a member of team {team:?}; members are: {}", members.join(", "))]
    MemberNotFound {
        /// Sanitised team name.
        team: String,
        /// The name that was not found.
        name: String,
        /// Current member names.
        members: Vec<String>,
    },

    /// A task id that has no file.
    #[error("task #{id} does not exist in team {team:?}; `teamhost task list --team {team}` shows the tasks")]
    TaskNotFound {
        /// Sanitised team name.
        team: String,
        /// The task id.
        id: String,
    },

    /// A request that is well-formed JSON but breaks a rule of the store
    /// (changing a task id, a dependency on itself, …).
    #[error("{0}")]
    Invalid(String),

    /// A JSON file could not be parsed. When `moved_to` is set the file was moved
    /// aside there and a fresh one was started; nothing was overwritten.
    #[error("{path} is not valid JSON ({source}){}", match moved_to {
        Some(to) => format!("; it was moved aside to {} and a fresh file started", to.display()),
        None => "; fix or remove it (the next teamhost write moves it aside)".to_string(),
    })]
    Corrupt {
        /// The corrupt file.
        path: PathBuf,
        /// Where it was moved, if it was.
        moved_to: Option<PathBuf>,
        /// The parse error.
        source: serde_json::Error,
    },

    /// A lock could not be taken within the wait bound.
    #[error("timed out after {waited:?} waiting for the lock on {path} ({holder}); if no process is using the team, remove {lock_dir}")]
    LockTimeout {
        /// The file being locked.
        path: PathBuf,
        /// The lock directory (reference convention).
        lock_dir: PathBuf,
        /// How long we waited.
        waited: Duration,
        /// Who seemed to hold it.
        holder: String,
    },

    /// A team store on a server (NATS) could not be reached, or refused a
    /// request. `store` is its URL without credentials; `message` says what
    /// was being done, what happened and what to check.
    #[error("team store {store}: {message}")]
    StoreUnavailable {
        /// The store, as shown (`nats://HOST:PORT/PREFIX`).
        store: String,
        /// What failed and what to do.
        message: String,
    },

    /// A component could not be loaded, linked or started.
    #[error("component {path}: {message}")]
    Component {
        /// The component file.
        path: PathBuf,
        /// What went wrong, with its causes.
        message: String,
    },

    /// An I/O operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done (`"read"`, `"write"`, `"rename"`, …).
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with the operation and path it concerns.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
