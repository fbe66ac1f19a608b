//! Fetches recorded and replayed, as model calls are in cassettes
//! (`model/cassette.rs`): a replayed run needs no network.
//!
//! # Layout
//!
//! `{cassettes}/{team}/fetch/{teammate}.jsonl` ([`FetchTape::path_for`]),
//! beside the teammate's model cassette `{cassettes}/{team}/{teammate}.jsonl`,
//! JSON Lines. The first line is a header `{"v":1,"kind":"fetch"}`; then
//! one line per fetch: `{"url":…,"outcome":{"fetched":{…}},"latency_ms":12}`
//! or `{"url":…,"outcome":{"failed":{"Refused":{…}}},"latency_ms":0}`: a
//! refusal is recorded and replayed as one.
//!
//! # Matching
//!
//! By the URL as the teammate gave it. A URL fetched several times is
//! answered in recorded order, then with its last answer. A replayed fetch
//! asks no rule, no question and no network: the run is replayed as it was
//! recorded.
//!
//! Each line is written with one `write` and flushed; a last line cut short
//! by a crash is skipped when the tape is read (an append first ends it),
//! any other bad line is an error naming the file and the line.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{FetchError, Fetched};

/// How a [`FetchTape`] is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapeMode {
    /// Fetch from the network and write the tape anew.
    Record,
    /// Answer from the tape only; a URL it lacks is
    /// [`FetchError::NotRecorded`].
    Replay,
    /// Answer from the tape; fetch what it lacks and append it.
    ReplayOrRecord,
}

impl TapeMode {
    /// Whether this mode reads the tape.
    pub fn replays(self) -> bool {
        matches!(self, TapeMode::Replay | TapeMode::ReplayOrRecord)
    }

    /// Whether this mode fetches from the network and writes the tape.
    pub fn records(self) -> bool {
        matches!(self, TapeMode::Record | TapeMode::ReplayOrRecord)
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    v: u32,
    kind: String,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Fetched(Fetched),
    Failed(FetchError),
}

#[derive(Serialize, Deserialize)]
struct Entry {
    url: String,
    outcome: Outcome,
    #[serde(default)]
    latency_ms: u64,
}

#[derive(Default)]
struct State {
    /// Recorded outcomes by URL, with how many were served.
    entries: HashMap<String, (Vec<Outcome>, usize)>,
    /// The file being written, opened at the first write.
    writer: Option<File>,
}

/// One teammate's tape of fetches (see the module docs).
pub struct FetchTape {
    path: PathBuf,
    mode: TapeMode,
    state: Mutex<State>,
}

impl FetchTape {
    /// Where the tape of `teammate` in `team` lies under the cassette
    /// directory `cassettes`; `Err` when a name is empty or holds a path
    /// separator.
    pub fn path_for(cassettes: &Path, team: &str, teammate: &str) -> Result<PathBuf, String> {
        let ok = |n: &str| !n.is_empty() && n != "." && n != ".." && !n.contains(['/', '\\', '\0']);
        if !ok(team) || !ok(teammate) {
            return Err(format!(
                "cannot keep a fetch tape for {team:?}/{teammate:?}: names must not be empty or hold path separators"
            ));
        }
        Ok(cassettes
            .join(team)
            .join("fetch")
            .join(format!("{teammate}.jsonl")))
    }

    /// The tape at `path`, read now when `mode` replays (no file yet: an
    /// empty tape). Errors name the file.
    pub fn open(path: PathBuf, mode: TapeMode) -> Result<FetchTape, String> {
        let mut state = State::default();
        if mode.replays() {
            match std::fs::read_to_string(&path) {
                Ok(text) => state.entries = parse(&text, &path)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(format!(
                        "cannot read the fetch tape {}: {e}",
                        path.display()
                    ))
                }
            }
        }
        Ok(FetchTape {
            path,
            mode,
            state: Mutex::new(state),
        })
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its mode.
    pub fn mode(&self) -> TapeMode {
        self.mode
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The recorded outcome of fetching `url` (replaying modes), the next
    /// in recorded order.
    pub(super) fn lookup(&self, url: &str) -> Option<Result<Fetched, FetchError>> {
        if !self.mode.replays() {
            return None;
        }
        let mut state = self.lock();
        let (outcomes, served) = state.entries.get_mut(url)?;
        let next = (*served).min(outcomes.len() - 1);
        *served += 1;
        Some(match outcomes[next].clone() {
            Outcome::Fetched(f) => Ok(f),
            Outcome::Failed(e) => Err(e),
        })
    }

    /// The error for a URL the tape lacks.
    pub(super) fn not_recorded(&self, url: &str) -> FetchError {
        FetchError::NotRecorded(format!(
            "no recorded fetch of {url} in {} (re-record with --model-mode record or replay-or-record)",
            self.path.display()
        ))
    }

    /// Appends a fetch (recording modes). Errors name the file.
    pub(super) fn record(
        &self,
        url: &str,
        outcome: &Result<Fetched, FetchError>,
        latency: Duration,
    ) -> Result<(), FetchError> {
        if !self.mode.records() {
            return Ok(());
        }
        let outcome = match outcome {
            Ok(f) => Outcome::Fetched(f.clone()),
            Err(e) => Outcome::Failed(e.clone()),
        };
        let entry = Entry {
            url: url.to_string(),
            outcome,
            latency_ms: latency.as_millis() as u64,
        };
        let fail = |e: String| {
            FetchError::Tape(format!(
                "cannot write the fetch tape {}: {e}",
                self.path.display()
            ))
        };
        let mut line = serde_json::to_string(&entry).map_err(|e| fail(e.to_string()))?;
        line.push('\n');
        let mut state = self.lock();
        if state.writer.is_none() {
            state.writer = Some(self.start_file().map_err(|e| fail(e.to_string()))?);
        }
        let writer = state.writer.as_mut().expect("opened above");
        writer
            .write_all(line.as_bytes())
            .and_then(|()| writer.flush())
            .map_err(|e| fail(e.to_string()))?;
        state
            .entries
            .entry(entry.url)
            .or_default()
            .0
            .push(entry.outcome);
        Ok(())
    }

    /// Opens the file: anew in `Record`, appended to otherwise (a last
    /// line cut short ended first; a header when it is new).
    fn start_file(&self) -> std::io::Result<File> {
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let fresh = self.mode == TapeMode::Record || !self.path.exists();
        if fresh {
            let mut file = File::create(&self.path)?;
            let header = serde_json::to_string(&Header {
                v: 1,
                kind: "fetch".into(),
            })?;
            file.write_all(format!("{header}\n").as_bytes())?;
            return Ok(file);
        }
        let mut file = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        let text = std::fs::read(&self.path)?;
        if text.last().is_some_and(|b| *b != b'\n') {
            file.write_all(b"\n")?;
        }
        Ok(file)
    }
}

type Entries = HashMap<String, (Vec<Outcome>, usize)>;

fn parse(text: &str, path: &Path) -> Result<Entries, String> {
    let mut entries = Entries::new();
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |e: serde_json::Error| {
            format!(
                "the fetch tape {} is corrupt at line {}: {e}; re-record it or remove that line",
                path.display(),
                i + 1
            )
        };
        if i == 0 {
            let header: Header = serde_json::from_str(line).map_err(bad)?;
            if header.v != 1 || header.kind != "fetch" {
                return Err(format!(
                    "{} is not a fetch tape of version 1 (kind {:?}, version {})",
                    path.display(),
                    header.kind,
                    header.v
                ));
            }
            continue;
        }
        match serde_json::from_str::<Entry>(line) {
            Ok(entry) => entries.entry(entry.url).or_default().0.push(entry.outcome),
            Err(e) if e.is_eof() => {
                tracing::warn!(tape = %path.display(), line = i + 1, error = %e, "skipping a fetch tape line cut short");
            }
            Err(e) => return Err(bad(e)),
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> Fetched {
        Fetched {
            url: "http://a.test/".into(),
            status: 200,
            content_type: "text/plain".into(),
            text: text.into(),
            bytes: text.len() as u64,
            truncated: false,
            redirects: vec![],
        }
    }

    #[test]
    fn a_tape_replays_in_recorded_order_then_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = FetchTape::path_for(dir.path(), "team", "worker").unwrap();
        let tape = FetchTape::open(path.clone(), TapeMode::Record).unwrap();
        let d = Duration::ZERO;
        tape.record("http://a.test/", &Ok(page("one")), d).unwrap();
        tape.record("http://a.test/", &Ok(page("two")), d).unwrap();
        let refused = FetchError::Refused {
            url: "http://b.test/".into(),
            from: None,
            why: "no".into(),
        };
        tape.record("http://b.test/", &Err(refused.clone()), d)
            .unwrap();
        let tape = FetchTape::open(path, TapeMode::Replay).unwrap();
        let text = |r: Option<Result<Fetched, FetchError>>| r.unwrap().unwrap().text;
        assert_eq!(text(tape.lookup("http://a.test/")), "one");
        assert_eq!(text(tape.lookup("http://a.test/")), "two");
        assert_eq!(text(tape.lookup("http://a.test/")), "two");
        assert_eq!(tape.lookup("http://b.test/"), Some(Err(refused)));
        assert!(tape.lookup("http://c.test/").is_none());
    }

    #[test]
    fn a_line_cut_short_is_skipped_and_another_bad_line_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let good = serde_json::to_string(&Entry {
            url: "http://a.test/".into(),
            outcome: Outcome::Fetched(page("one")),
            latency_ms: 1,
        })
        .unwrap();
        std::fs::write(
            &path,
            format!("{{\"v\":1,\"kind\":\"fetch\"}}\n{good}\n{{\"url\":\"x"),
        )
        .unwrap();
        let tape = FetchTape::open(path.clone(), TapeMode::Replay).unwrap();
        assert!(tape.lookup("http://a.test/").is_some());
        std::fs::write(
            &path,
            format!("{{\"v\":1,\"kind\":\"fetch\"}}\nnot json\n{good}\n"),
        )
        .unwrap();
        let err = FetchTape::open(path, TapeMode::Replay).err().unwrap();
        assert!(err.contains("line 2"), "{err}");
        assert!(FetchTape::path_for(dir.path(), "a/b", "w").is_err());
    }
}
