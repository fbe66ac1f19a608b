//! Record and replay at the `model` boundary: cassettes.
//!
//! A cassette holds what one teammate asked the model and what it answered,
//! as the host's own types ([`super::types`]): no HTTP, no header, no key,
//! no provider URL. A run recorded against one provider replays under any
//! configuration, with no provider and no key at all.
//!
//! # Layout
//!
//! `{cassettes}/{team}/{teammate}.jsonl`, JSON Lines. The first line is a
//! header `{"v":1,"team":…,"teammate":…,"recorded_with":{"provider":…,"model":…},"normalizers":[…]}`;
//! then one line per answered call:
//! `{"conv":"9f2c41d0e1b7a3c5","pos":3,"req_sha256":"…","request":{…},"response":{…},"latency_ms":12}`.
//!
//! # Matching
//!
//! A call's key is `(conv, pos)`: `conv` is the first 16 hex digits of the
//! SHA-256 of the normalised system prompt and first user message, `pos`
//! the number of assistant messages in the request. The key does not depend
//! on timing or on other teammates, and a retried call has the same one.
//! A key recorded several times (a conversation started again with the
//! same words) is answered in recorded order, then with its last answer;
//! when the next answer in order does not match but another recorded for
//! the key does (replay-or-record appended it after a drift), that one is
//! served, so replay-or-record converges instead of appending every run.
//!
//! `req_sha256` is the SHA-256 of the whole normalised request. On replay
//! a different hash is **drift**: the agent now asks something else than
//! when it was recorded. Strict `replay` refuses the call with
//! `not-recorded`, naming the first JSON path that differs; `replay-lenient`
//! logs a warning and serves the recorded answer.
//!
//! A served answer's protocol request ids (a lead answering a plan or a
//! permission request) are rebound to the ids the live run made:
//! [`super::replay_ids`].
//!
//! # Normalizers
//!
//! Before hashing, values that change from run to run whatever the agent
//! does are replaced in the request's JSON text: ISO-8601 timestamps
//! (`<time>`), UUIDs (`<uuid>`), 13-digit epoch-millisecond numbers
//! (`<ms>`, as in protocol request ids like `shutdown-1764…@worker`),
//! temporary directory names made by the `tempfile` crate (`<tmp>`) and a
//! sub-agent's run time in the `Agent` tool's results (`duration_ms: <n>`).
//!
//! # Modes
//!
//! | mode | provider | cassette |
//! |---|---|---|
//! | `live` | called | none |
//! | `record` | called | written anew at the teammate's first call, one line per answer |
//! | `replay` | never | read; a missing key or drift is `not-recorded` |
//! | `replay-lenient` | never | read; drift is a warning |
//! | `replay-or-record` | on a miss or drift | read; misses appended |
//!
//! Each line is written with one `write` and flushed, so a crash loses at
//! most the exchange being written; a line cut short by a crash is skipped
//! with a warning when the cassette is read (an append first ends it), any
//! other bad line is an error naming the file and the line. The cassette directory belongs
//! to the host: the CLI refuses one inside a teammate's directory.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use regex::Regex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::types::{ContentBlock, Request, Response, Role};

/// Record/replay mode (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CassetteMode {
    /// Call the provider; no cassette.
    #[default]
    Live,
    /// Call the provider and write cassettes anew.
    Record,
    /// Answer from cassettes only; drift fails.
    Replay,
    /// Answer from cassettes only; drift is a warning.
    ReplayLenient,
    /// Answer from cassettes, call the provider for what is missing and
    /// append it.
    ReplayOrRecord,
}

impl CassetteMode {
    const NAMES: [(&'static str, CassetteMode); 5] = [
        ("live", CassetteMode::Live),
        ("record", CassetteMode::Record),
        ("replay", CassetteMode::Replay),
        ("replay-lenient", CassetteMode::ReplayLenient),
        ("replay-or-record", CassetteMode::ReplayOrRecord),
    ];

    /// Whether this mode reads cassettes.
    pub fn replays(self) -> bool {
        matches!(
            self,
            CassetteMode::Replay | CassetteMode::ReplayLenient | CassetteMode::ReplayOrRecord
        )
    }

    /// Whether this mode may call the provider.
    pub fn calls_provider(self) -> bool {
        matches!(
            self,
            CassetteMode::Live | CassetteMode::Record | CassetteMode::ReplayOrRecord
        )
    }
}

impl std::str::FromStr for CassetteMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CassetteMode::NAMES
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                format!(
                    "unknown model mode {s:?}: use one of {}",
                    CassetteMode::NAMES.map(|(n, _)| n).join(", ")
                )
            })
    }
}

impl std::fmt::Display for CassetteMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = CassetteMode::NAMES
            .iter()
            .find(|(_, m)| m == self)
            .map_or("live", |(n, _)| n);
        f.write_str(name)
    }
}

/// The first line of a cassette.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    v: u32,
    team: String,
    teammate: String,
    recorded_with: RecordedWith,
    #[serde(default)]
    normalizers: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RecordedWith {
    provider: String,
    model: String,
}

/// One recorded exchange.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    conv: String,
    pos: u32,
    req_sha256: String,
    request: Request,
    response: Response,
    #[serde(default)]
    latency_ms: u64,
}

/// What a cassette says about a request.
#[derive(Debug)]
pub enum Lookup {
    /// Recorded, and the request is the same.
    Hit(Response),
    /// Recorded, but the request changed: where it first differs, and the
    /// recorded answer.
    Drift {
        /// A description of the first difference.
        difference: String,
        /// What was recorded.
        recorded: Response,
    },
    /// Not recorded; the text says which key was missing.
    Miss(String),
}

/// One teammate's cassette.
#[derive(Debug)]
pub struct Cassette {
    path: PathBuf,
    team: String,
    teammate: String,
    mode: CassetteMode,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Recorded entries by key, with how many of them were served.
    entries: HashMap<(String, u32), (Vec<Entry>, usize)>,
    /// The file being written (record modes), opened at the first write.
    writer: Option<File>,
}

fn names_ok(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

impl Cassette {
    /// The cassette of `teammate` in `team` under `dir`, read now when the
    /// mode replays. A replaying mode with no file yet starts empty (strict
    /// replay then answers every call `not-recorded`, naming the file).
    pub fn open(
        dir: &Path,
        team: &str,
        teammate: &str,
        mode: CassetteMode,
    ) -> crate::Result<Cassette> {
        if !names_ok(team) || !names_ok(teammate) {
            return Err(crate::Error::Cassette(format!(
                "cannot keep a cassette for {team:?}/{teammate:?}: names must not be empty or hold path separators"
            )));
        }
        let path = dir.join(team).join(format!("{teammate}.jsonl"));
        let mut state = State::default();
        if mode.replays() {
            match std::fs::read_to_string(&path) {
                Ok(text) => state.entries = parse(&text, &path)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(crate::Error::Cassette(format!(
                        "cannot read the cassette {}: {e}",
                        path.display()
                    )))
                }
            }
        }
        Ok(Cassette {
            path,
            team: team.to_string(),
            teammate: teammate.to_string(),
            mode,
            state: Mutex::new(state),
        })
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the cassette holds for `request`.
    pub fn lookup(&self, request: &Request) -> Lookup {
        let (conv, pos) = key(request);
        let mut state = self.lock();
        let Some((entries, served)) = state.entries.get_mut(&(conv.clone(), pos)) else {
            return Lookup::Miss(format!(
                "no recorded answer for {} at conversation {conv} position {pos} in {} (re-record with --model-mode record or replay-or-record)",
                self.teammate,
                self.path.display()
            ));
        };
        let hash = request_hash(request);
        let next = (*served).min(entries.len() - 1);
        *served += 1;
        // The next recorded answer for this key, when it matches; else any
        // that matches (replay-or-record appended it after a drift).
        if let Some(entry) = std::iter::once(&entries[next])
            .chain(entries.iter())
            .find(|e| e.req_sha256 == hash)
        {
            return Lookup::Hit(entry.response.clone());
        }
        let entry = &entries[next];
        Lookup::Drift {
            difference: format!(
                "drift at {}/{conv}/{pos}: the request differs from the recording in {}: {}",
                self.teammate,
                self.path.display(),
                first_difference(&entry.request, request)
            ),
            recorded: entry.response.clone(),
        }
    }

    /// Appends an answered call (record modes). Errors name the file.
    pub fn record(
        &self,
        provider: &str,
        request: &Request,
        response: &Response,
        latency_ms: u64,
    ) -> crate::Result<()> {
        let (conv, pos) = key(request);
        let entry = Entry {
            conv,
            pos,
            req_sha256: request_hash(request),
            request: request.clone(),
            response: response.clone(),
            latency_ms,
        };
        let mut line =
            serde_json::to_string(&entry).map_err(|e| crate::Error::Encode(e.to_string()))?;
        line.push('\n');
        let mut state = self.lock();
        if state.writer.is_none() {
            state.writer = Some(self.start_file(provider, &response.model)?);
        }
        let writer = state.writer.as_mut().expect("opened above");
        writer
            .write_all(line.as_bytes())
            .and_then(|()| writer.flush())
            .map_err(|e| {
                crate::Error::Cassette(format!(
                    "cannot write the cassette {}: {e}",
                    self.path.display()
                ))
            })?;
        let slot = state
            .entries
            .entry((entry.conv.clone(), entry.pos))
            .or_default();
        slot.0.push(entry);
        Ok(())
    }

    /// Opens the file for writing: anew in `record`, appended to otherwise
    /// (with a header when it is new).
    fn start_file(&self, provider: &str, model: &str) -> crate::Result<File> {
        let fail = |e: std::io::Error| {
            crate::Error::Cassette(format!(
                "cannot write the cassette {}: {e}",
                self.path.display()
            ))
        };
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent).map_err(fail)?;
        }
        let fresh = self.mode == CassetteMode::Record || !self.path.exists();
        let mut file = if fresh {
            File::create(&self.path).map_err(fail)?
        } else {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .append(true)
                .open(&self.path)
                .map_err(fail)?;
            // A last line cut short by a crash: end it, so the next line
            // starts on its own (the torn one is skipped on reading).
            let len = file.metadata().map_err(fail)?.len();
            if len > 0 {
                use std::io::{Read, Seek, SeekFrom};
                let mut last = [0u8; 1];
                file.seek(SeekFrom::Start(len - 1)).map_err(fail)?;
                file.read_exact(&mut last).map_err(fail)?;
                if last[0] != b'\n' {
                    file.write_all(b"\n").map_err(fail)?;
                }
            }
            file
        };
        if fresh {
            let header = Header {
                v: 1,
                team: self.team.clone(),
                teammate: self.teammate.clone(),
                recorded_with: RecordedWith {
                    provider: provider.to_string(),
                    model: model.to_string(),
                },
                normalizers: NORMALIZERS
                    .iter()
                    .map(|(name, _)| name.to_string())
                    .collect(),
            };
            let mut line =
                serde_json::to_string(&header).map_err(|e| crate::Error::Encode(e.to_string()))?;
            line.push('\n');
            file.write_all(line.as_bytes()).map_err(fail)?;
        }
        Ok(file)
    }
}

type Entries = HashMap<(String, u32), (Vec<Entry>, usize)>;

fn parse(text: &str, path: &Path) -> crate::Result<Entries> {
    let mut entries = Entries::new();
    let lines: Vec<&str> = text.split('\n').collect();
    let complete = text.ends_with('\n');
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let last_cut_short = i == lines.len() - 1 && !complete;
        let bad = |e: serde_json::Error| {
            crate::Error::Cassette(format!(
                "the cassette {} is corrupt at line {}: {e}; re-record it (--model-mode record) or remove that line",
                path.display(),
                i + 1
            ))
        };
        if i == 0 {
            let header: Header = serde_json::from_str(line).map_err(bad)?;
            if header.v != 1 {
                return Err(crate::Error::Cassette(format!(
                    "the cassette {} is version {}; this teamhost reads version 1",
                    path.display(),
                    header.v
                )));
            }
            continue;
        }
        match serde_json::from_str::<Entry>(line) {
            Ok(entry) => entries
                .entry((entry.conv.clone(), entry.pos))
                .or_default()
                .0
                .push(entry),
            // Cut short by a crash: the last line, or one that a later
            // append ended (an unfinished JSON document).
            Err(e) if last_cut_short || e.is_eof() => {
                tracing::warn!(cassette = %path.display(), line = i + 1, error = %e, "skipping a last cassette line cut short");
            }
            Err(e) => return Err(bad(e)),
        }
    }
    Ok(entries)
}

/// The normalizers, by name, applied in order to a request's JSON text.
static NORMALIZERS: [(&str, &str); 5] = [
    (
        "iso-8601-time",
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?",
    ),
    (
        "uuid",
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    ),
    ("epoch-ms", r"\b\d{13}\b"),
    ("tempfile-dir", r"\.tmp[A-Za-z0-9]{6}"),
    // A sub-agent's run time in the Agent tool's usage trailer.
    ("duration-ms", r"duration_ms: \d+"),
];
const REPLACEMENTS: [&str; 5] = ["<time>", "<uuid>", "<ms>", "<tmp>", "duration_ms: <n>"];

fn normalizers() -> &'static [Regex] {
    static COMPILED: OnceLock<Vec<Regex>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        NORMALIZERS
            .iter()
            .map(|(_, re)| Regex::new(re).expect("normalizer regex"))
            .collect()
    })
}

/// `text` with run-dependent values replaced.
pub fn normalize(text: &str) -> String {
    let mut out = text.to_string();
    for (re, with) in normalizers().iter().zip(REPLACEMENTS) {
        if re.is_match(&out) {
            out = re.replace_all(&out, with).into_owned();
        }
    }
    out
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A request's key: conversation fingerprint and position.
pub fn key(request: &Request) -> (String, u32) {
    let mut head = normalize(request.system.as_deref().unwrap_or(""));
    head.push('\0');
    if let Some(first) = request.messages.iter().find(|m| m.role == Role::User) {
        for block in &first.content {
            if let ContentBlock::Text(t) = block {
                head.push_str(&normalize(t));
                head.push('\n');
            }
        }
    }
    let pos = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    (sha256_hex(&head)[..16].to_string(), pos as u32)
}

fn normalized_json(request: &Request) -> String {
    normalize(&serde_json::to_string(request).unwrap_or_default())
}

/// The SHA-256 of the normalised request.
pub fn request_hash(request: &Request) -> String {
    sha256_hex(&normalized_json(request))
}

/// Where two requests first differ, as `path: recorded … now …`.
fn first_difference(recorded: &Request, now: &Request) -> String {
    let parse = |r: &Request| {
        serde_json::from_str::<serde_json::Value>(&normalized_json(r)).unwrap_or_default()
    };
    let (a, b) = (parse(recorded), parse(now));
    match diff(&a, &b, String::from("request")) {
        Some(d) => d,
        None => "no difference after normalising (the recorded hash is stale)".into(),
    }
}

fn short(v: Option<&serde_json::Value>) -> String {
    let Some(v) = v else {
        return "nothing".into();
    };
    let text = v.to_string();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

fn diff(a: &serde_json::Value, b: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => diff(p, q, format!("{path}.{k}")),
                (p, q) => Some(format!(
                    "{path}.{k}: recorded {}, now {}",
                    short(p),
                    short(q)
                )),
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            let common = x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| diff(p, q, format!("{path}[{i}]")));
            common.or_else(|| {
                (x.len() != y.len())
                    .then(|| format!("{path}: recorded {} items, now {}", x.len(), y.len()))
            })
        }
        _ if a == b => None,
        _ => Some(format!(
            "{path}: recorded {}, now {}",
            short(Some(a)),
            short(Some(b))
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{Message, StopReason, Usage};

    fn request(first: &str, later: &[&str]) -> Request {
        let mut messages = vec![Message::user(first)];
        for text in later {
            messages.push(Message::assistant("ok"));
            messages.push(Message::user(*text));
        }
        Request {
            system: Some("sys".into()),
            ..Request::new(messages)
        }
    }

    fn response(text: &str) -> Response {
        Response {
            id: "msg".into(),
            model: "m".into(),
            content: vec![ContentBlock::Text(text.into())],
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        }
    }

    #[test]
    fn the_key_ignores_timestamps_ids_and_temp_dirs() {
        let a = request("at 2026-11-24T06:30:00.123Z req shutdown-1764000000000@w id 123e4567-e89b-12d3-a456-426614174000 in /tmp/.tmpAbC123", &[]);
        let b = request("at 2026-11-25T07:00:01Z req shutdown-1764999999999@w id 00000000-0000-0000-0000-000000000000 in /tmp/.tmpXyZ789", &[]);
        assert_eq!(key(&a), key(&b));
        assert_eq!(request_hash(&a), request_hash(&b));
        assert_ne!(key(&a).0, key(&request("something else", &[])).0);
        assert_eq!(key(&request("x", &["y", "z"])).1, 2);
    }

    #[test]
    fn recorded_answers_replay_and_drift_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Cassette::open(dir.path(), "t", "w", CassetteMode::Record).unwrap();
        rec.record("scripted", &request("go", &[]), &response("first"), 1)
            .unwrap();
        rec.record(
            "scripted",
            &request("go", &["more"]),
            &response("second"),
            1,
        )
        .unwrap();
        let play = Cassette::open(dir.path(), "t", "w", CassetteMode::Replay).unwrap();
        assert!(
            matches!(play.lookup(&request("go", &["more"])), Lookup::Hit(r) if r == response("second"))
        );
        match play.lookup(&request("go", &["less"])) {
            Lookup::Drift { difference, .. } => {
                assert!(
                    difference.contains("request.messages[2].content[0].text"),
                    "{difference}"
                );
                assert!(
                    difference.contains("\"more\"") && difference.contains("\"less\""),
                    "{difference}"
                );
            }
            other => panic!("expected drift, got {other:?}"),
        }
        assert!(
            matches!(play.lookup(&request("other", &[])), Lookup::Miss(m) if m.contains("w.jsonl"))
        );
    }

    #[test]
    fn a_corrupt_line_is_an_error_naming_it_but_a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Cassette::open(dir.path(), "t", "w", CassetteMode::Record).unwrap();
        rec.record("scripted", &request("go", &[]), &response("first"), 1)
            .unwrap();
        let path = rec.path().to_path_buf();
        let good = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{good}{{\"conv\":\"x\"")).unwrap();
        let torn = Cassette::open(dir.path(), "t", "w", CassetteMode::Replay).unwrap();
        assert!(matches!(torn.lookup(&request("go", &[])), Lookup::Hit(_)));
        std::fs::write(&path, format!("{good}not json\n")).unwrap();
        let err = Cassette::open(dir.path(), "t", "w", CassetteMode::Replay)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3") && err.contains("w.jsonl"), "{err}");
    }

    #[test]
    fn names_with_separators_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Cassette::open(dir.path(), "t", "../x", CassetteMode::Record).is_err());
        assert!(Cassette::open(dir.path(), "..", "x", CassetteMode::Record).is_err());
    }

    #[test]
    fn modes_parse_and_print_their_cli_names() {
        for name in [
            "live",
            "record",
            "replay",
            "replay-lenient",
            "replay-or-record",
        ] {
            assert_eq!(name.parse::<CassetteMode>().unwrap().to_string(), name);
        }
        assert!("replay_or_record"
            .parse::<CassetteMode>()
            .unwrap_err()
            .contains("replay-or-record"));
    }

    #[test]
    fn replay_or_record_converges_after_a_drift_and_survives_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Cassette::open(dir.path(), "t", "w", CassetteMode::Record).unwrap();
        rec.record(
            "scripted",
            &request("go", &["old"]),
            &response("old answer"),
            1,
        )
        .unwrap();
        let path = rec.path().to_path_buf();
        // A crash cut the file mid-line.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}{{\"conv\":\"cut")).unwrap();

        // The request drifted: replay-or-record appends the new answer…
        let ror = Cassette::open(dir.path(), "t", "w", CassetteMode::ReplayOrRecord).unwrap();
        assert!(matches!(
            ror.lookup(&request("go", &["new"])),
            Lookup::Drift { .. }
        ));
        ror.record(
            "scripted",
            &request("go", &["new"]),
            &response("new answer"),
            1,
        )
        .unwrap();
        // …and the next run finds it, whatever order the entries are in.
        let again = Cassette::open(dir.path(), "t", "w", CassetteMode::Replay).unwrap();
        assert!(
            matches!(again.lookup(&request("go", &["new"])), Lookup::Hit(r) if r == response("new answer"))
        );
        assert!(
            matches!(again.lookup(&request("go", &["old"])), Lookup::Hit(r) if r == response("old answer"))
        );
    }
}
