//! Reading histories again and again, cheaply: a [`HistoryCache`] keeps the
//! entries of each history it has read and, next time, asks the store only
//! for what was appended since ([`TeamStore::history_since`] with the cursor
//! it kept). For a reader that looks often (the live view reads the lead's
//! history on every change), the cost of a look is the new messages, not the
//! whole history of a long-lived team.
//!
//! Histories are append-only. When the store says the history is not the
//! one the cursor was made on (the file store: another inode, or shorter than
//! what was read), the cache drops what it kept and starts over.
//!
//! [`TeamStore::history_since`]: super::TeamStore::history_since

use std::collections::HashMap;

use super::backend::HistoryCursor;
use super::mailbox::InboxMessage;
use super::Team;
use crate::error::Result;

/// What was read of one history.
#[derive(Debug, Default)]
struct Cached {
    cursor: HistoryCursor,
    entries: Vec<InboxMessage>,
}

/// Parsed histories, kept between reads. Not shared: one reader owns it.
#[derive(Debug, Default)]
pub struct HistoryCache {
    histories: HashMap<(String, String), Cached>,
    /// Which entries are kept (`None`: all).
    keep: Option<fn(&InboxMessage) -> bool>,
}

impl HistoryCache {
    /// An empty cache.
    pub fn new() -> HistoryCache {
        HistoryCache::default()
    }

    /// An empty cache that keeps only the entries `keep` selects: for a
    /// reader that looks for a few kinds of message in histories that grow
    /// for a whole run, what it holds is those, not every message.
    pub fn keeping(keep: fn(&InboxMessage) -> bool) -> HistoryCache {
        HistoryCache {
            keep: Some(keep),
            ..HistoryCache::default()
        }
    }

    /// `agent`'s history in `team`, oldest first: the same entries as
    /// [`Team::history`] (those the cache keeps, see [`Self::keeping`]),
    /// reading only what was appended since the last call.
    pub fn history(&mut self, team: &Team, agent: &str) -> Result<&[InboxMessage]> {
        let stem = super::names::agent_file_stem(agent)?;
        let cached = self
            .histories
            .entry((team.name().to_string(), stem))
            .or_default();
        let chunk = team
            .backend()
            .history_since(team.name(), agent, cached.cursor)?;
        if chunk.restarted {
            cached.entries.clear();
        }
        match self.keep {
            Some(keep) => cached
                .entries
                .extend(chunk.entries.into_iter().filter(keep)),
            None => cached.entries.extend(chunk.entries),
        }
        cached.cursor = chunk.cursor;
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
    fn a_keeping_cache_holds_only_what_it_keeps_of_each_new_read() {
        let (_tmp, team) = team();
        let mut cache = HistoryCache::keeping(|m| m.text.starts_with("keep"));
        for round in 0..3 {
            for text in ["keep 1", "drop", "keep 2"] {
                team.send(
                    "a",
                    OutgoingMessage::new("team-lead", format!("{text} {round}")),
                )
                .unwrap();
            }
            team.take_unread("a").unwrap();
            let kept: Vec<String> = cache
                .history(&team, "a")
                .unwrap()
                .iter()
                .map(|m| m.text.clone())
                .collect();
            let wanted: Vec<String> = team
                .history("a")
                .unwrap()
                .into_iter()
                .map(|m| m.text)
                .filter(|t| t.starts_with("keep"))
                .collect();
            assert_eq!(kept, wanted);
            assert_eq!(kept.len(), (round + 1) * 2);
        }
    }

    #[test]
    fn a_half_written_line_waits_and_a_replaced_file_is_read_again() {
        let (_tmp, team) = team();
        team.send("a", OutgoingMessage::new("team-lead", "one"))
            .unwrap();
        team.take_unread("a").unwrap();
        let path = team.file_paths().unwrap().history("a").unwrap();
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
