//! The disk budget of a teammate's directory: how many bytes its files take,
//! measured by a bounded walk through the [`Dir`](cap_std::fs::Dir), and the
//! check Write and Edit make before they write.
//!
//! Sizes are apparent lengths (a sparse file counts at its length), symlinks
//! count as themselves and are never followed, and the walk visits at most
//! [`DiskBudget::entries`] entries: a directory with more is over budget too,
//! so a teammate cannot hide bytes behind a million empty files. A path too
//! deep for the OS to open is not entered (its bytes go uncounted).
//!
//! The walk is also where a set-uid or set-gid file is caught: it reads
//! every entry's metadata anyway, and runs after every Bash call and every
//! turn, so it clears the bits of each such regular file it meets
//! ([`super::setid`]).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use cap_std::fs::MetadataExt;

use super::{cap_path, setid, show, ToolBox, ToolError};

/// A directory's budget: bytes of files, and entries one measurement walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskBudget {
    /// Most bytes the files may take together (`disk_bytes`).
    pub bytes: u64,
    /// Most entries one measurement visits (`disk_walk_entries`).
    pub entries: usize,
}

/// What a measurement found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskUsage {
    /// Bytes of the files visited.
    pub bytes: u64,
    /// Entries visited.
    pub entries: usize,
    /// The walk stopped at its entry budget: there is more.
    pub incomplete: bool,
}

impl DiskBudget {
    /// Why `usage` breaks this budget, naming the limit; `None` within it.
    pub fn breach(&self, usage: &DiskUsage) -> Option<String> {
        if usage.incomplete {
            Some(format!(
                "disk limit: the teammate's directory has more than {} entries ([teammate.limits] disk_entries)",
                self.entries
            ))
        } else if usage.bytes > self.bytes {
            Some(format!(
                "disk limit: the teammate's directory holds {} bytes, more than {} ([teammate.limits] disk_mb)",
                usage.bytes, self.bytes
            ))
        } else {
            None
        }
    }
}

impl ToolBox {
    /// Measures the capability directory, visiting at most `max_entries`
    /// entries breadth first, and clears the set-id bits of every regular
    /// file it visits that has them ([`super::setid`]).
    pub fn disk_usage(&self, max_entries: usize) -> DiskUsage {
        let mut usage = DiskUsage {
            bytes: 0,
            entries: 0,
            incomplete: false,
        };
        let Ok(root) = self.dir.get() else {
            // The directory cannot be opened: nothing can be measured.
            usage.incomplete = true;
            return usage;
        };
        let mut queue: VecDeque<PathBuf> = VecDeque::from([PathBuf::new()]);
        while let Some(rel) = queue.pop_front() {
            let Ok(dir) = root.open_dir(cap_path(&rel)) else {
                continue;
            };
            let Ok(entries) = dir.entries() else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                if usage.entries == max_entries {
                    usage.incomplete = true;
                    return usage;
                }
                usage.entries += 1;
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    queue.push_back(rel.join(entry.file_name()));
                } else if let Ok(meta) = entry.metadata() {
                    usage.bytes = usage.bytes.saturating_add(meta.len());
                    if meta.is_file() && meta.mode() & setid::SET_ID != 0 {
                        let name = PathBuf::from(entry.file_name());
                        setid::clear(&dir, &name, &rel.join(&name));
                    }
                }
            }
        }
        usage
    }

    /// Refuses in advance a write that would leave the directory over
    /// `budget`: `rel` (relative to the directory) is to hold `new_len`
    /// bytes in place of what it holds now.
    pub(crate) fn check_disk(
        &self,
        rel: &Path,
        new_len: u64,
        budget: &DiskBudget,
    ) -> Result<(), ToolError> {
        let usage = self.disk_usage(budget.entries);
        let old = self
            .dir
            .get()?
            .symlink_metadata(cap_path(rel))
            .map_or(0, |m| if m.is_file() { m.len() } else { 0 });
        let after = DiskUsage {
            bytes: usage.bytes.saturating_sub(old).saturating_add(new_len),
            ..usage
        };
        match budget.breach(&after) {
            None => Ok(()),
            Some(why) => Err(ToolError::TooLarge(format!(
                "nothing was written: {new_len} bytes in {} would put the directory over its \
                 budget ({why})",
                show(rel)
            ))),
        }
    }
}
