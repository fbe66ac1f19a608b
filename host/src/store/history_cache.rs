//! Reading histories again and again, cheaply: a [`HistoryCache`] keeps the
//! entries of each `history/{agent}.jsonl` it has read and, next time, parses
//! only what was appended since. For a reader that looks often (the live
//! view reads the lead's history on every change), the cost of a look is the
//! new messages, not the whole history of a long-lived team.
//!
//! A history file is append-only: one `write` per append, under the inbox
//! lock. The cache trusts that and checks it: when the file is another file
//! (its inode changed) or shorter than what was read, it reads it whole
//! again. A line still being written (no newline yet) is left for the next
//! read.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use super::mailbox::{parse_history, InboxMessage};
use super::Team;
use crate::error::{Error, Result};

/// What was read of one history file.
#[derive(Debug, Default)]
struct Cached {
    inode: u64,
    /// Bytes parsed so far (always at a line end).
    offset: u64,
    entries: Vec<InboxMessage>,
}

/// Parsed histories, kept between reads. Not shared: one reader owns it.
#[derive(Debug, Default)]
pub struct HistoryCache {
    files: HashMap<PathBuf, Cached>,
}

impl HistoryCache {
    /// An empty cache.
    pub fn new() -> HistoryCache {
        HistoryCache::default()
    }

    /// `agent`'s history in `team`, oldest first: the same entries as
    /// [`Team::history`], parsing only what was appended since the last call.
    pub fn history(&mut self, team: &Team, agent: &str) -> Result<&[InboxMessage]> {
        let path = team.paths().history(agent)?;
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.files.remove(&path);
                return Ok(&[]);
            }
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let meta = file.metadata().map_err(|e| Error::io("stat", &path, e))?;
        let cached = self.files.entry(path.clone()).or_default();
        if cached.inode != meta.ino() || meta.len() < cached.offset {
            *cached = Cached {
                inode: meta.ino(),
                ..Cached::default()
            };
        }
        if meta.len() > cached.offset {
            file.seek(SeekFrom::Start(cached.offset))
                .map_err(|e| Error::io("seek", &path, e))?;
            let mut new = Vec::with_capacity((meta.len() - cached.offset) as usize);
            file.read_to_end(&mut new)
                .map_err(|e| Error::io("read", &path, e))?;
            // Only whole lines: a line still being written waits.
            let whole = new.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let text = String::from_utf8_lossy(&new[..whole]);
            cached.entries.extend(parse_history(&text, &path));
            cached.offset += whole as u64;
        }
        Ok(&cached.entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_team, OutgoingMessage};

    fn team() -> (tempfile::TempDir, Team) {
        test_team(&["a"])
    }

    #[test]
    fn it_reads_what_was_appended_and_agrees_with_a_full_read() {
        let (_tmp, team) = team();
        let mut cache = HistoryCache::new();
        assert!(cache.history(&team, "a").unwrap().is_empty());
        for round in 0..3 {
            for i in 0..4 {
                team.send(
                    "a",
                    OutgoingMessage::new("team-lead", format!("{round}.{i}")),
                )
                .unwrap();
            }
            team.take_unread("a").unwrap();
            let cached: Vec<String> = cache
                .history(&team, "a")
                .unwrap()
                .iter()
                .map(|m| m.text.clone())
                .collect();
            let full: Vec<String> = team
                .history("a")
                .unwrap()
                .into_iter()
                .map(|m| m.text)
                .collect();
            assert_eq!(cached, full);
            assert_eq!(cached.len(), (round + 1) * 4);
        }
    }

    #[test]
    fn a_half_written_line_waits_and_a_replaced_file_is_read_again() {
        let (_tmp, team) = team();
        team.send("a", OutgoingMessage::new("team-lead", "one"))
            .unwrap();
        team.take_unread("a").unwrap();
        let path = team.paths().history("a").unwrap();
        let whole = std::fs::read_to_string(&path).unwrap();
        let line = whole.lines().next().unwrap().to_string();
        let mut cache = HistoryCache::new();
        assert_eq!(cache.history(&team, "a").unwrap().len(), 1);

        // A writer caught mid-line: nothing new until the newline is there.
        let (head, tail) = line.split_at(line.len() / 2);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, head.as_bytes()).unwrap();
        assert_eq!(cache.history(&team, "a").unwrap().len(), 1);
        std::io::Write::write_all(&mut f, format!("{tail}\n").as_bytes()).unwrap();
        assert_eq!(cache.history(&team, "a").unwrap().len(), 2);

        // Replaced by a shorter file (another inode): read whole again.
        let tmp = path.with_extension("new");
        std::fs::write(&tmp, format!("{line}\n")).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(cache.history(&team, "a").unwrap().len(), 1);
        std::fs::remove_file(&path).unwrap();
        assert!(cache.history(&team, "a").unwrap().is_empty());
    }
}
