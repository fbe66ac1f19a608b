//! What the host keeps on this machine so that a team outlives it: one
//! directory per team, `{home}/kept/{team}/`, with per teammate (by its file
//! stem, [`agent_file_stem`](crate::store::names::agent_file_stem); the
//! paths are [`Home::kept`]):
//!
//! | file | written | read |
//! |---|---|---|
//! | `{name}.spawn.json` | when the host spawns it (`home::spawn_record`) | `teamhost run --resume` / `Host::resume`: how to bring it back |
//! | `{name}.conversation.json` | after each of its model calls (the model module's `Transcript`) | `model.history` in its next life |
//! | `{name}.turn.json` | while a turn handles a message, until its idle notification is stored ([`TurnJournal`]; written beside the message's take, removed beside the notification, on the blocking pool) | resume: that message is delivered again |
//! | `{name}.task.json` | from the claim of a task until the lead has been told how the turn on it ended ([`TaskNote`]; in the claim's and the report's blocking tasks) | resume: a completion the cut turn made is reported to the lead |
//! | `{name}.claims.json` | when it claims a task through the host: its runner's claim, its own `tasks.claim`, its own `tasks.update` making it the owner of a task in progress ([`ClaimLedger`]); a task it completes, gives up or hands on leaves it | resume: only a task listed here is handed back to it as its own |
//! | `{name}.spent.json` | after each of its turns that spent something counted over its life ([`SpentRecord`]) | resume: its tree's life-long budgets go on from there instead of from zero |
//! | `{name}.state` | `state.save` ([`SavedState`]) | `state.load` |
//! | `.lead.json` (the team's lead component's) | when a lead component starts, and each time its seat changes: formed, a spawn, a budget given, a shutdown asked, a refusal (`home::lead_record`) | `teamhost run --resume` of a led team: the seat goes on from there |
//! | `host.json` (the team's, not a teammate's) | `teamhost run` when it creates or resumes the team (`backends::live_host::claim`) | every command that would delete or take over the team: it refuses while that host lives |
//!
//! The home is the host's: no teammate's directory may lie in it (see
//! the `layout` module), so nothing here can be written by a teammate except
//! through the host (its conversation, its saved state, each bounded in
//! size and only its own). A spawn record names the component by path and
//! SHA-256: a component changed since the spawn is refused at resume, so a
//! file swapped in meanwhile never runs under the teammate's name.
//!
//! A teammate's instance that is not resumed clears its name's files
//! ([`clear_life`]) before it starts, so a teammate spawned again under a
//! name used before starts with nothing; a resume keeps them; deleting the
//! team removes the directory.

use std::path::{Path, PathBuf};

use super::{Home, Kept};
use crate::error::{Error, Result};
use crate::store::InboxMessage;

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", path, e)),
        _ => Ok(()),
    }
}

/// Forgets everything kept of `name` (a teammate that left the team).
pub fn forget(home: &Home, team: &str, name: &str) -> Result<()> {
    clear_life(home, team, name)?;
    remove(&home.kept(team, name, Kept::Spawn)?)
}

/// Removes the team's directory (the team is deleted).
pub fn forget_team(home: &Home, team: &str) -> Result<()> {
    let d = home.kept_dir(team);
    match std::fs::remove_dir_all(&d) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", d, e)),
        _ => Ok(()),
    }
}

/// Where `name`'s conversation is kept (read and written by the model module's `Transcript`).
pub fn conversation(home: &Home, team: &str, name: &str) -> Result<PathBuf> {
    home.kept(team, name, Kept::Conversation)
}

/// Clears what an earlier life of `name` left (its conversation, turn
/// journal, task note, claims, life-long spending and saved state): a
/// teammate that is not resumed starts afresh, even under a name used
/// before. Its spawn record stays.
///
/// Every fresh spawn makes these seven removals, of files that as a rule do
/// not exist; they are made relative to the directory, opened once, so
/// each looks up one name instead of walking the whole path again.
pub fn clear_life(home: &Home, team: &str, name: &str) -> Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let paths = Kept::LIFE
        .into_iter()
        .map(|which| Ok((which, home.kept(team, name, which)?)))
        .collect::<Result<Vec<_>>>()?;
    let dir_path = home.kept_dir(team);
    let dir = match std::fs::File::open(&dir_path) {
        Ok(dir) => dir,
        // No directory: nothing kept to clear.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("open", &dir_path, e)),
    };
    let remove_at = |path: &Path| -> Result<()> {
        let file = path.file_name().unwrap_or_default().as_bytes();
        let c_file = std::ffi::CString::new(file)
            .map_err(|e| Error::io("remove", path, std::io::Error::other(e)))?;
        // SAFETY: a NUL-terminated name relative to a directory we hold.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), c_file.as_ptr(), 0) } == 0 {
            return Ok(());
        }
        match std::io::Error::last_os_error() {
            e if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            e => Err(Error::io("remove", path, e)),
        }
    };
    for (which, path) in paths {
        if which == Kept::Conversation {
            // The conversation before last, kept as the next write's spare.
            remove_at(&crate::durable::spare_path(&path))?;
        }
        remove_at(&path)?;
    }
    Ok(())
}

/// The message a teammate's turn is handling, kept until the turn ends: if
/// the host dies in between, resume delivers it again (at least once).
/// Written without a sync: it survives the host process dying (the usual
/// crash), not the machine losing power.
#[derive(Debug, Clone)]
pub struct TurnJournal {
    path: PathBuf,
}

impl TurnJournal {
    /// `name`'s journal in `team`.
    pub fn of(home: &Home, team: &str, name: &str) -> Result<TurnJournal> {
        Ok(TurnJournal {
            path: home.kept(team, name, Kept::Turn)?,
        })
    }

    /// Notes that a turn handles `msg`.
    pub fn open(&self, msg: &InboxMessage) -> Result<()> {
        crate::durable::write_json_relaxed(&self.path, msg)
    }

    /// The turn ended: nothing to deliver again.
    pub fn close(&self) -> Result<()> {
        remove(&self.path)
    }

    /// The message of a turn that never ended, if any (and removes the note).
    pub fn take_interrupted(&self) -> Result<Option<InboxMessage>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &self.path, e)),
        };
        let msg = serde_json::from_slice(&bytes).ok();
        if msg.is_none() {
            tracing::warn!(path = %self.path.display(), "unreadable turn journal ignored");
        }
        remove(&self.path)?;
        Ok(msg)
    }
}

/// The task a teammate's turn works on, noted from its claim until the
/// lead has been told how the turn ended (the idle notification naming it).
/// A host that dies in between may leave the task completed by the guest
/// and never reported: resume then reports it (see `Host::resume`). Written
/// without a sync, like [`TurnJournal`].
#[derive(Debug, Clone)]
pub struct TaskNote {
    path: PathBuf,
}

/// What a [`TaskNote`] holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct TaskNoted {
    task: String,
}

impl TaskNote {
    /// `name`'s note in `team`.
    pub fn of(home: &Home, team: &str, name: &str) -> Result<TaskNote> {
        Ok(TaskNote {
            path: home.kept(team, name, Kept::Task)?,
        })
    }

    /// Notes that a turn works on task `id`.
    pub fn open(&self, id: &str) -> Result<()> {
        crate::durable::write_json_relaxed(
            &self.path,
            &TaskNoted {
                task: id.to_owned(),
            },
        )
    }

    /// The lead has been told: nothing left to report.
    pub fn close(&self) -> Result<()> {
        remove(&self.path)
    }

    /// The task of a turn whose end was never reported, if any (and removes
    /// the note).
    pub fn take_interrupted(&self) -> Result<Option<String>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &self.path, e)),
        };
        let noted = serde_json::from_slice::<TaskNoted>(&bytes).ok();
        if noted.is_none() {
            tracing::warn!(path = %self.path.display(), "unreadable task note ignored");
        }
        remove(&self.path)?;
        Ok(noted.map(|n| n.task))
    }
}

/// The tasks a teammate claimed through this host and still holds: the
/// host's own record of what is its work, written only by the host when the
/// teammate itself claims (never from the task list, which every member of
/// the team can write: a peer may set any task `in_progress` with any
/// owner). Resume hands a task back only when it is listed here. Written
/// without a sync, like [`TaskNote`]; at most [`MAX_CLAIMS`] ids, the
/// oldest dropped first.
#[derive(Debug, Clone)]
pub struct ClaimLedger {
    path: PathBuf,
}

/// The most task ids a [`ClaimLedger`] keeps (a teammate works on one task
/// at a time; the rest is slack for ones it left in progress).
pub const MAX_CLAIMS: usize = 32;

/// What a [`ClaimLedger`] holds.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Claims {
    tasks: Vec<String>,
}

impl ClaimLedger {
    /// `name`'s ledger in `team`.
    pub fn of(home: &Home, team: &str, name: &str) -> Result<ClaimLedger> {
        Ok(ClaimLedger {
            path: home.kept(team, name, Kept::Claims)?,
        })
    }

    fn read(&self) -> Result<Claims> {
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                tracing::warn!(path = %self.path.display(), "unreadable claim ledger ignored");
                Claims::default()
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Claims::default()),
            Err(e) => Err(Error::io("read", &self.path, e)),
        }
    }

    /// The teammate claimed task `id` itself.
    pub fn claimed(&self, id: &str) -> Result<()> {
        let mut c = self.read()?;
        c.tasks.retain(|t| t != id);
        c.tasks.push(id.to_owned());
        let over = c.tasks.len().saturating_sub(MAX_CLAIMS);
        c.tasks.drain(..over);
        crate::durable::write_json_relaxed(&self.path, &c)
    }

    /// The teammate completed, gave up or handed on task `id` (nothing is
    /// written when it was not listed).
    pub fn released(&self, id: &str) -> Result<()> {
        let mut c = self.read()?;
        let before = c.tasks.len();
        c.tasks.retain(|t| t != id);
        if c.tasks.len() == before {
            return Ok(());
        }
        crate::durable::write_json_relaxed(&self.path, &c)
    }

    /// Whether the teammate claimed task `id` itself and has not let it go.
    pub fn holds(&self, id: &str) -> Result<bool> {
        Ok(self.read()?.tasks.iter().any(|t| t == id))
    }
}

/// What a teammate and everything it started spent of the budgets that
/// accumulate over its life (`sandbox::limits`, scope *life*).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LifeSpent {
    /// Sub-agents started.
    pub subagents: u32,
    /// Direct messages sent.
    pub messages: u32,
    /// Broadcasts sent.
    pub broadcasts: u32,
    /// Tasks created.
    pub tasks: u32,
    /// Bytes written into the team's store.
    pub team_bytes: u64,
    /// `state.save` and `state.clear` calls.
    pub state_saves: u32,
}

/// Where a teammate's [`LifeSpent`] is kept between its host's lives, so
/// that a crash and a resume do not give it its life-long budgets afresh.
/// Written after each turn that spent something (not synced, like
/// [`TurnJournal`]): a crash loses at most what the cut turn spent, which
/// the per-turn limits bound.
#[derive(Debug, Clone)]
pub struct SpentRecord {
    path: PathBuf,
}

impl SpentRecord {
    /// `name`'s record in `team`.
    pub fn of(home: &Home, team: &str, name: &str) -> Result<SpentRecord> {
        Ok(SpentRecord {
            path: home.kept(team, name, Kept::Spent)?,
        })
    }

    /// What was kept, if anything. The file is the host's (the home is
    /// never a teammate's to write); one that does not parse is reported
    /// and read as nothing spent.
    pub fn load(&self) -> Result<Option<LifeSpent>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &self.path, e)),
        };
        match serde_json::from_slice(&bytes) {
            Ok(s) => Ok(Some(s)),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "unreadable record of a teammate's spending ignored");
                Ok(None)
            }
        }
    }

    /// Keeps `spent`.
    pub fn save(&self, spent: &LifeSpent) -> Result<()> {
        crate::durable::write_json_relaxed(&self.path, spent)
    }
}

/// The most a teammate may save with `state.save`, in bytes (64 KiB).
pub const MAX_SAVED_STATE: usize = 64 << 10;

/// A teammate's own small saved state (`teamhost:agent/state`), bytes the
/// host keeps for it across a host restart. Synced on save.
#[derive(Debug, Clone)]
pub struct SavedState {
    path: PathBuf,
}

impl SavedState {
    /// `name`'s saved state in `team`.
    pub fn of(home: &Home, team: &str, name: &str) -> Result<SavedState> {
        Ok(SavedState {
            path: home.kept(team, name, Kept::State)?,
        })
    }

    /// Replaces the saved state. More than [`MAX_SAVED_STATE`] bytes is
    /// refused, and what was saved before stays.
    pub fn save(&self, bytes: &[u8]) -> Result<()> {
        if bytes.len() > MAX_SAVED_STATE {
            return Err(Error::StoreRule(format!(
                "the state is {} bytes; a teammate may save at most {MAX_SAVED_STATE}: keep large data in files of its directory and save only where it is",
                bytes.len()
            )));
        }
        crate::durable::write_atomic(&self.path, bytes)
    }

    /// What was saved last, if anything.
    pub fn load(&self) -> Result<Option<Vec<u8>>> {
        match std::fs::read(&self.path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", &self.path, e)),
        }
    }

    /// Forgets it.
    pub fn clear(&self) -> Result<()> {
        remove(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_state_is_bounded_and_a_refused_save_keeps_the_old() {
        let tmp = tempfile::tempdir().unwrap();
        let s = SavedState::of(&Home::new(tmp.path()), "t", "w").unwrap();
        assert_eq!(s.load().unwrap(), None);
        s.save(b"step 3").unwrap();
        let e = s.save(&vec![0u8; MAX_SAVED_STATE + 1]).unwrap_err();
        assert!(e.to_string().contains("at most 65536"), "{e}");
        assert_eq!(s.load().unwrap().as_deref(), Some(&b"step 3"[..]));
        s.save(&vec![7u8; MAX_SAVED_STATE]).unwrap();
        assert_eq!(s.load().unwrap().unwrap().len(), MAX_SAVED_STATE);
    }

    #[test]
    fn an_interrupted_turn_is_given_back_once() {
        let tmp = tempfile::tempdir().unwrap();
        let j = TurnJournal::of(&Home::new(tmp.path()), "t", "w").unwrap();
        let msg = crate::store::OutgoingMessage::new("team-lead", "do it").into_entry();
        j.open(&msg).unwrap();
        assert_eq!(
            j.take_interrupted().unwrap().map(|m| m.text),
            Some("do it".into())
        );
        assert!(j.take_interrupted().unwrap().is_none());
        j.open(&msg).unwrap();
        j.close().unwrap();
        assert!(j.take_interrupted().unwrap().is_none());
    }

    #[test]
    fn spending_is_kept_for_a_resume_and_forgotten_by_a_fresh_life() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path());
        let r = SpentRecord::of(&home, "t", "w").unwrap();
        assert_eq!(r.load().unwrap(), None);
        let spent = LifeSpent {
            subagents: 3,
            messages: 7,
            team_bytes: 1 << 20,
            ..LifeSpent::default()
        };
        r.save(&spent).unwrap();
        assert_eq!(r.load().unwrap(), Some(spent));
        clear_life(&home, "t", "w").unwrap();
        assert_eq!(r.load().unwrap(), None);
    }

    #[test]
    fn a_fresh_life_forgets_the_conversation_and_its_spare() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path());
        let path = conversation(&home, "t", "w").unwrap();
        for v in ["[1]", "[2]"] {
            crate::durable::stage_in_spare(&path, v.as_bytes())
                .unwrap()
                .commit()
                .unwrap();
        }
        assert!(crate::durable::spare_path(&path).exists());
        clear_life(&home, "t", "w").unwrap();
        assert!(!path.exists());
        assert!(!crate::durable::spare_path(&path).exists());
    }

    #[test]
    fn a_claim_ledger_lists_only_what_was_claimed_and_not_let_go() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path());
        let l = ClaimLedger::of(&home, "t", "w").unwrap();
        assert!(!l.holds("1").unwrap());
        l.claimed("1").unwrap();
        l.claimed("2").unwrap();
        l.claimed("1").unwrap();
        assert!(l.holds("1").unwrap() && l.holds("2").unwrap());
        l.released("1").unwrap();
        assert!(!l.holds("1").unwrap() && l.holds("2").unwrap());
        for i in 0..(MAX_CLAIMS + 5) {
            l.claimed(&format!("n{i}")).unwrap();
        }
        assert!(!l.holds("2").unwrap(), "the oldest went first");
        assert!(l.holds(&format!("n{}", MAX_CLAIMS + 4)).unwrap());
        // Unreadable: as if empty, and the next claim rewrites it.
        std::fs::write(home.kept("t", "w", Kept::Claims).unwrap(), b"{oops").unwrap();
        assert!(!l.holds("n40").unwrap());
        l.claimed("9").unwrap();
        assert!(l.holds("9").unwrap());
        // A fresh life under the same name starts without claims.
        clear_life(&home, "t", "w").unwrap();
        assert!(!l.holds("9").unwrap());
    }

    #[test]
    fn a_task_note_is_given_back_once_and_a_closed_one_never() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path());
        let n = TaskNote::of(&home, "t", "w").unwrap();
        assert_eq!(n.take_interrupted().unwrap(), None);
        n.open("7").unwrap();
        assert_eq!(n.take_interrupted().unwrap().as_deref(), Some("7"));
        assert_eq!(n.take_interrupted().unwrap(), None);
        n.open("8").unwrap();
        n.close().unwrap();
        assert_eq!(n.take_interrupted().unwrap(), None);
        // A fresh life under the same name starts without it.
        n.open("9").unwrap();
        clear_life(&home, "t", "w").unwrap();
        assert_eq!(n.take_interrupted().unwrap(), None);
    }
}
