//! `teams/{team}/history/{agent}.jsonl`: consumed messages, one JSON line
//! each. Appended with one `write` per batch, under the inbox's lock, and
//! never rewritten; a reader can resume where it stopped ([`read_since`]).

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::store::backend::{HistoryChunk, HistoryCursor};
use crate::store::InboxMessage;

/// Appends already-stamped entries as JSON lines with one `write` call, and
/// syncs them.
pub(super) fn append(path: &Path, entries: &[InboxMessage]) -> Result<()> {
    append_with(path, entries, true)
}

/// [`append`] without the sync: for records that were never in an inbox
/// (nothing consumed can be lost with them). One `O_APPEND` write, so lines
/// of concurrent appenders never interleave, lock or not.
pub(super) fn append_relaxed(path: &Path, entries: &[InboxMessage]) -> Result<()> {
    append_with(path, entries, false)
}

fn append_with(path: &Path, entries: &[InboxMessage], sync: bool) -> Result<()> {
    let mut buf = Vec::new();
    for e in entries {
        serde_json::to_writer(&mut buf, e).map_err(|e| Error::Encode(e.to_string()))?;
        buf.push(b'\n');
    }
    let open = || OpenOptions::new().create(true).append(true).open(path);
    let mut f = match open() {
        // Only the history directory itself: inside a team directory that
        // is gone (deleted), this fails instead of bringing it back.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = path.parent().unwrap_or(Path::new("."));
            match std::fs::create_dir(parent) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io("create", parent, e)),
            }
            open()
        }
        other => other,
    }
    .map_err(|e| Error::io("open", path, e))?;
    f.write_all(&buf)
        .and_then(|()| if sync { f.sync_data() } else { Ok(()) })
        .map_err(|e| Error::io("append", path, e))
}

/// The entries after `cursor` (epoch = inode, offset = bytes read). When
/// the file is another file (its inode changed) or shorter than what was
/// read, it is read whole again and the chunk says so. A line still being
/// written (no newline yet) is left for the next read.
pub(super) fn read_since(path: &Path, cursor: HistoryCursor) -> Result<HistoryChunk> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(HistoryChunk {
                restarted: cursor != HistoryCursor::default(),
                entries: Vec::new(),
                cursor: HistoryCursor::default(),
            })
        }
        Err(e) => return Err(Error::io("open", path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io("stat", path, e))?;
    let mut from = cursor;
    let restarted = from.epoch != meta.ino() || meta.len() < from.offset;
    if restarted {
        from = HistoryCursor {
            epoch: meta.ino(),
            offset: 0,
        };
    }
    let mut entries = Vec::new();
    if meta.len() > from.offset {
        file.seek(SeekFrom::Start(from.offset))
            .map_err(|e| Error::io("seek", path, e))?;
        let mut new = Vec::with_capacity((meta.len() - from.offset) as usize);
        file.read_to_end(&mut new)
            .map_err(|e| Error::io("read", path, e))?;
        // Only whole lines: a line still being written waits.
        let whole = new.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        entries = parse(&String::from_utf8_lossy(&new[..whole]), path);
        from.offset += whole as u64;
    }
    Ok(HistoryChunk {
        restarted: restarted && cursor != HistoryCursor::default(),
        entries,
        cursor: from,
    })
}

/// How much of a history's end [`last_batch`] reads first; it reads more
/// (doubling) only while the batch reaches the start of what it read.
const TAIL_FIRST: u64 = 16 << 10;

/// The most of a history's end [`last_batch`] reads: more than any one
/// take's batch (an inbox is bounded, and a batch is what one take found).
const TAIL_MAX: u64 = 1 << 20;

/// The entries of the last take: the trailing lines that carry the same
/// `consumedAt` as the last line. A take appends what it consumes here
/// (synced) and then rewrites the inbox; when the process died between the
/// two, those entries are still in the inbox, and the next take must drop
/// them instead of handing them out again (see `take_from_inbox`). On every
/// take's path: it reads the file's last 16 KiB, more only for a larger
/// batch.
pub(super) fn last_batch(path: &Path) -> Result<Vec<InboxMessage>> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("open", path, e)),
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    let mut window = TAIL_FIRST;
    loop {
        let from = len.saturating_sub(window);
        file.seek(SeekFrom::Start(from))
            .map_err(|e| Error::io("seek", path, e))?;
        let mut tail = Vec::with_capacity((len - from) as usize);
        file.read_to_end(&mut tail)
            .map_err(|e| Error::io("read", path, e))?;
        let text = String::from_utf8_lossy(&tail);
        // Read from the middle of the file: its first line may be cut.
        let whole = if from == 0 {
            &text[..]
        } else {
            text.split_once('\n').map_or("", |(_, rest)| rest)
        };
        let (batch, ended) = trailing_batch(whole);
        if ended || from == 0 || window >= TAIL_MAX {
            return Ok(batch);
        }
        window *= 2;
    }
}

/// The trailing lines of `text` stamped with its last line's `consumedAt`,
/// and whether a line before them ended the batch (else it may go on
/// before `text`).
fn trailing_batch(text: &str) -> (Vec<InboxMessage>, bool) {
    let stamp = |m: &InboxMessage| m.extra.get("consumedAt").cloned();
    let mut batch: Vec<InboxMessage> = Vec::new();
    for line in text.lines().rev().filter(|l| !l.trim().is_empty()) {
        let Ok(m) = serde_json::from_str::<InboxMessage>(line) else {
            return (batch, true);
        };
        match batch.first().map(stamp) {
            Some(at) if at != stamp(&m) || at.is_none() => return (batch, true),
            _ => batch.push(m),
        }
    }
    (batch, false)
}

/// The entries of history text (JSON lines) read from `path`; a bad line is
/// logged and skipped, never fatal.
fn parse(text: &str, path: &Path) -> Vec<InboxMessage> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .filter_map(|(i, l)| match serde_json::from_str(l) {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::warn!(file = %path.display(), line = i + 1, error = %e, "skipping bad history line");
                None
            }
        })
        .collect()
}
