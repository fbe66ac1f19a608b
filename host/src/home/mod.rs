//! The machine-local home: the directory `teamhost` keeps everything of
//! this machine in (`--home`, `$TEAMHOST_HOME`, `~/.teamhost`). [`Home`]
//! owns its layout (`layout.rs`: the one place that spells a path under it)
//! and the records the host keeps there. The team store's files
//! (`teams/`, `tasks/`) lie under it too, but are the file store's
//! (`store/files/paths.rs`); everything else under the home is here:
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`Home`]: where it is (`resolve`), whether it can be used |
//! | `layout.rs` | every path under the home: [`Kept`] files, cache, logs, worktrees, records, counts |
//! | `spawn_record.rs` | how a teammate was spawned, to spawn it again on resume (`{name}.spawn.json`) |
//! | `lead_record.rs` | a lead component's seat (formed, spawns, purse, refusals), to resume a led team (`.lead.json`) |
//! | `process.rs` | which process wrote a record (pid and start time), and whether it still runs |
//! | `lead_keys.rs` | the lead's private keys for its keyed teammates (`lead-keys/{team}/`, 0600), [`lead_keys::HomeKeyring`] |
//! | `started.rs` | process records: every teammate process teamhost started (`started/{team}/`) |
//! | `run_claim.rs` | the run's claim on a team (`kept/{team}/host.json`) |
//! | `subagent_counts.rs` | a teammate's sub-agent counts (`subagents/{team}/`), for status and the view |
//! | `decisions.rs` | who decided each permission request and plan, escalations, and the team's approval routes (`decisions/{team}/`) |
//! | `kept.rs` | what a team keeps to be resumed: turn journal, task note, claims, life-long spending, saved state; forgetting a teammate's life, a team's |
//!
//! Writes go through [`crate::durable`]. The home uses the store only for
//! names (a member's file stem) and the message type a turn journal keeps.

pub mod decisions;
pub mod kept;
mod layout;
pub mod lead_keys;
pub mod lead_record;
pub mod process;
pub mod run_claim;
pub mod spawn_record;
pub mod started;
pub mod subagent_counts;

use std::path::{Path, PathBuf};

pub use self::layout::Kept;
use crate::error::{Error, Result};

/// The environment variable naming teamhost's home directory.
pub const HOME_ENV: &str = "TEAMHOST_HOME";

/// Root of a teamhost (or Claude Code) home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// Uses `root` as the home directory as is (it need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Home { root: root.into() }
    }

    /// Resolves the home: `flag` (from `--home`), else `$TEAMHOST_HOME`, else
    /// `~/.teamhost`. Fails only when none is set and `$HOME` is unknown.
    pub fn resolve(flag: Option<&Path>) -> Result<Self> {
        if let Some(dir) = flag {
            return Ok(Home::new(dir));
        }
        if let Some(dir) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
            return Ok(Home::new(dir));
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => Ok(Home::new(PathBuf::from(h).join(".teamhost"))),
            None => Err(Error::Home(
                "cannot find a home directory: pass --home DIR or set TEAMHOST_HOME".into(),
            )),
        }
    }

    /// Fails when the home cannot be a directory: a part of its path that
    /// exists is a file (`--home /tmp/somefile/home`), or the home (or the
    /// nearest part of its path that exists) cannot be written to. Naming that part, not
    /// whatever later read or write of a team would fail on. A home that
    /// does not exist yet is fine (it is made on the first write).
    pub fn check_usable(&self) -> Result<()> {
        for part in self.root.ancestors().filter(|p| !p.as_os_str().is_empty()) {
            match std::fs::metadata(part) {
                Ok(m) if m.is_dir() => return self.check_writable(part),
                Ok(_) => {
                    return Err(Error::Home(format!(
                        "the home {} cannot be used: {} is a file, not a directory (every existing part of the home's path must be a directory; pass --home DIR or set {HOME_ENV})",
                        self.root.display(),
                        part.display()
                    )))
                }
                // Not there yet (or under a file, which a shorter part shows).
                Err(_) => continue,
            }
        }
        Ok(())
    }

    /// Fails when the home cannot be written to: `existing` (the home, or
    /// the nearest part of its path that exists) is on a read-only file
    /// system or someone else's, or the home cannot be made under it (a
    /// probe: the missing directories are made and removed again). Names
    /// the home and how to choose another.
    fn check_writable(&self, existing: &Path) -> Result<()> {
        let refused = if existing == self.root {
            writable(existing).err()
        } else {
            match std::fs::create_dir_all(&self.root) {
                Ok(()) => {
                    // Leave nothing behind: the home is made on its first write.
                    for made in self.root.ancestors().take_while(|p| *p != existing) {
                        let _ = std::fs::remove_dir(made);
                    }
                    None
                }
                Err(e) => Some(e),
            }
        };
        match refused {
            None => Ok(()),
            Some(why) => Err(Error::Home(format!(
                "the home {} cannot be used: it cannot be written to ({why}); pass --home DIR or set {HOME_ENV} to a directory you can write",
                self.root.display()
            ))),
        }
    }

    /// The home directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Whether this process may write into the directory `dir`.
fn writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c_dir` is a valid NUL-terminated path for the call's
    // duration; `access` reads it and keeps nothing.
    match unsafe { libc::access(c_dir.as_ptr(), libc::W_OK | libc::X_OK) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

impl Home {
    /// Forgets what the home keeps of `team` beyond the store, for a team
    /// deleted for good: what it kept to be resumed ([`kept::forget_team`]),
    /// then its teammates' sub-agent counts and the lead's keys for them.
    /// Process records and worktrees
    /// are not touched: stopping those processes and cleaning those
    /// worktrees is the teardown's (`backends::teardown`). Blocking.
    pub fn forget_team(&self, team: &str) -> Result<()> {
        kept::forget_team(self, team)?;
        lead_keys::forget_team(self, team)?;
        let counters = self.subagents_dir(team);
        match std::fs::remove_dir_all(&counters) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("remove", counters, e))
            }
            _ => Ok(()),
        }
    }
}

impl AsRef<Path> for Home {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_flag_wins_over_environment() {
        let h = Home::resolve(Some(Path::new("/x"))).unwrap();
        assert_eq!(h.root(), Path::new("/x"));
    }
}
