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

    /// A write reached a team whose directory is gone: it was deleted while
    /// the writer still held it (a late message, a usage record, a task).
    /// Nothing is written, and the team's directory is not made again.
    #[error(
        "team {team:?} was deleted ({path} is gone): the write is dropped rather than bringing the team back; create the team again (`teamhost team create {team}`, `teamhost run`) to use it"
    )]
    TeamDeleted {
        /// Sanitised team name.
        team: String,
        /// The team's directory.
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

    // What was one `Invalid(String)` for every refusal is split by the part
    // that failed. Each keeps its text as it was (`{0}`), and a teammate's
    // store call reads every one of them as the WIT `invalid` case
    // ([`crate::runtime::GuestError`]).
    /// A request that breaks a rule of the team's store: an empty task
    /// subject, a task that would depend on itself, a task id that is not a
    /// number, a saved state over its size, an update a caller refused.
    #[error("{0}")]
    StoreRule(String),

    /// A value could not be written as JSON (a task, a message, a record).
    #[error("{0}")]
    Encode(String),

    /// A host thread or blocking task panicked or could not start: a host
    /// bug or an exhausted machine, never the caller's input. The text says
    /// what was being done.
    #[error("{0}")]
    HostTask(String),

    /// The machine-local home cannot be found or used (no `$HOME`, a part
    /// of its path is a file).
    #[error("{0}")]
    Home(String),

    /// A team store URL (`nats://…`) is malformed. The text never repeats
    /// its credentials.
    #[error("{0}")]
    StoreUrl(String),

    /// A NATS store's deployment settings (TLS files, credentials file,
    /// NKey seed) are unusable. The text names the setting (flag and
    /// environment variable) and the file, never what is in it.
    #[error("{0}")]
    StoreSettings(String),

    /// A team's files cannot be watched for changes (the inotify limits).
    #[error("{0}")]
    FileWatch(String),

    /// A git worktree could not be made, reused or inspected (not a
    /// repository, a leftover with changes, no record of the parent's).
    #[error("{0}")]
    Worktree(String),

    /// A permission or plan request cannot be answered as asked (no such
    /// request, the other kind of request, a bad mode).
    #[error("{0}")]
    Approval(String),

    /// The model access is misconfigured: the model config or script file,
    /// the provider's base URL, the model mode, a teammate's model policy.
    #[error("{0}")]
    ModelSetup(String),

    /// A model cassette cannot be kept, read or written (a bad name, a
    /// corrupt line, another version).
    #[error("{0}")]
    Cassette(String),

    /// A call named a teammate this host does not run (or no longer runs),
    /// or one it already runs, or asked it for what its backend cannot do.
    #[error("{0}")]
    HostedTeammate(String),

    /// A spawn request cannot be run: its directory, mode, tool rules or
    /// layout (a component inside another teammate's directory), or its
    /// component changed since it was spawned.
    #[error("{0}")]
    Spawn(String),

    /// A teammate backend (process, tmux) could not reach the team or
    /// start, place or stop the teammate.
    #[error("{0}")]
    Backend(String),

    /// The live view (`teamhost watch`, the TUI) could not show the team.
    #[error("{0}")]
    LiveView(String),

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

    /// This host's lease on a team was taken over by another host (it was
    /// paused, cut off, or thought dead): its copies of the teammates stop
    /// before they write again, and every write it tries is refused with
    /// this. `by` is the adopting host's id.
    #[error("team {team}: this host's lease was taken over by host {by}; its teammates were stopped here and run there now")]
    LeaseLost {
        /// The team.
        team: String,
        /// The host that took the teammates over.
        by: String,
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
