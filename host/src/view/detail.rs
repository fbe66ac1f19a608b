//! One teammate in detail, for the view's teammate screen: its turn in
//! progress, its recent turns (the messages it took, from its mailbox
//! history in the store), its recent tool calls (the model conversation the
//! home keeps, `kept/{team}/{stem}.conversation.json`) and the tail of its
//! log (`logs/{team}/{name}.log`), and what its network proxy reached
//! (`logs/{team}/{name}.network.json`). Read only from what the host already
//! records; everything the teammate wrote is made printable, one line each,
//! here, so no escape sequence of its reaches the terminal.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::home::{kept, Home, Kept};
use crate::protocol::describe::{describe, printable_line};
use crate::store::{HistoryCache, InboxMessage, Team};

use super::board::clock;

/// How many recent turns and tool calls are kept.
const RECENT: usize = 12;
/// How many lines of the log's tail are kept.
const LOG_LINES: usize = 60;
/// How much of the log's end is read for its tail.
const LOG_TAIL_BYTES: u64 = 64 * 1024;
/// A tool call's input is cut after this many characters.
const INPUT_MAX: usize = 120;

/// What the teammate screen shows of one teammate; every text printable.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Detail {
    /// Member name.
    pub name: String,
    /// The message its turn in progress handles (`HH:MM:SS from: what`) and
    /// when that turn started; `None` between turns.
    pub turn: Option<(String, Option<SystemTime>)>,
    /// The messages it took, newest first (`HH:MM:SS from: what`).
    pub turns: Vec<String>,
    /// Its model's latest tool calls, newest first (`Name input`); empty
    /// for a teammate that uses no model.
    pub tools: Vec<String>,
    /// The last lines of its log, oldest first.
    pub log: Vec<String>,
    /// What its network proxy reached and refused (one line), when it has
    /// a network and used it (`{name}.network.json` beside its log).
    pub network: Option<String>,
    /// Where its log is.
    pub log_path: Option<PathBuf>,
    /// What could not be read, said once each.
    pub problems: Vec<String>,
}

impl Detail {
    /// Reads what is recorded of `name` in `team`; the home's parts (turn,
    /// tool calls, log) only with a `home`. A part that cannot be read is
    /// named in [`Detail::problems`], the rest still shows.
    pub fn read(team: &Team, home: Option<&Home>, name: &str, cache: &mut HistoryCache) -> Detail {
        let mut d = Detail {
            name: printable_line(name).into_owned(),
            ..Detail::default()
        };
        match cache.history(team, name) {
            Ok(history) => {
                d.turns = history
                    .iter()
                    .rev()
                    .take(RECENT)
                    .map(message_line)
                    .collect()
            }
            Err(e) => d.problems.push(format!("messages: {e}")),
        }
        let Some(home) = home else {
            return d;
        };
        if let Ok(path) = home.kept(team.name(), name, Kept::Turn) {
            d.turn = read_turn(&path);
        }
        match kept::conversation(home, team.name(), name) {
            Ok(path) => match tool_calls(&path) {
                Ok(calls) => d.tools = calls,
                Err(e) => d.problems.push(e),
            },
            Err(e) => d.problems.push(format!("tool calls: {e}")),
        }
        let log = home.teammate_log(team.name(), name);
        match log_tail(&log) {
            Ok(lines) => d.log = lines,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => d.problems.push(format!("log {}: {e}", log.display())),
        }
        let record = crate::network::usage_record_path(&log);
        if let Ok(bytes) = std::fs::read(&record) {
            match serde_json::from_slice::<crate::network::Usage>(&bytes) {
                // Hosts a teammate asked for are its words: made printable.
                Ok(u) => d.network = Some(printable_line(&u.describe()).into_owned()),
                Err(e) => d.problems.push(format!("network record: {e}")),
            }
        }
        d.log_path = Some(log);
        d
    }
}

/// `HH:MM:SS from: what` of a message, on one printable line.
fn message_line(m: &InboxMessage) -> String {
    format!(
        "{} {}: {}",
        clock(&m.timestamp),
        printable_line(&m.from),
        describe(&m.text)
    )
}

/// The turn journal's message and when it was written.
fn read_turn(path: &Path) -> Option<(String, Option<SystemTime>)> {
    let bytes = std::fs::read(path).ok()?;
    let started = std::fs::metadata(path).ok().and_then(|m| m.modified().ok());
    let msg: InboxMessage = serde_json::from_slice(&bytes).ok()?;
    Some((message_line(&msg), started))
}

/// The tool calls of the kept model conversation, newest first. The
/// conversation is read as plain JSON (`messages[].content[]`, a call being
/// `{"tool-use": {"name", "input"}}`), so the view needs nothing of the
/// model module.
fn tool_calls(path: &Path) -> Result<Vec<String>, String> {
    // A checking read: the conversation is rewritten in place over its
    // spare (`durable::stage_in_spare`) while the teammate runs.
    let doc: serde_json::Value = match crate::durable::read_json(path) {
        Ok(Some(doc)) => doc,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(format!("tool calls: {e}")),
    };
    let calls = doc["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter_map(|block| {
            let call = block.get("tool-use")?;
            let name = call["name"].as_str().unwrap_or("?");
            let input = call["input"].as_str().unwrap_or("");
            let input: String = input.split_whitespace().collect::<Vec<_>>().join(" ");
            let input = match input.char_indices().nth(INPUT_MAX) {
                Some((cut, _)) => format!("{} …", &input[..cut]),
                None => input,
            };
            Some(format!(
                "{} {}",
                printable_line(name),
                printable_line(&input)
            ))
        })
        .collect::<Vec<_>>();
    Ok(calls.into_iter().rev().take(RECENT).collect())
}

/// The last [`LOG_LINES`] lines of the file at `path`, each printable.
fn log_tail(path: &Path) -> std::io::Result<Vec<String>> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(LOG_TAIL_BYTES);
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    f.take(LOG_TAIL_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if start > 0 && lines.len() > 1 {
        lines.remove(0); // cut in the middle
    }
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let from = lines.len().saturating_sub(LOG_LINES);
    Ok(lines[from..]
        .iter()
        .map(|l| printable_line(l.strip_suffix('\r').unwrap_or(l)).into_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_team, OutgoingMessage};

    #[test]
    fn a_teammates_detail_shows_its_turns_tool_calls_and_log_without_its_escapes() {
        let (tmp, team) = test_team(&["alice"]);
        let home = Home::new(tmp.path().join("home"));
        team.send(
            "alice",
            OutgoingMessage::new("team-lead", "count \x1b[2Jthe words"),
        )
        .unwrap();
        team.take_unread("alice").unwrap();
        let log = home.teammate_log(team.name(), "alice");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(&log, "line one\n\x1b]0;owned\x07 line two\nlast line\n").unwrap();
        let conv = kept::conversation(&home, team.name(), "alice").unwrap();
        std::fs::create_dir_all(conv.parent().unwrap()).unwrap();
        std::fs::write(
            &conv,
            r#"{"version":1,"messages":[{"role":"assistant","content":[{"text":"hm"},{"tool-use":{"id":"t1","name":"Read","input":"{\"path\":\"a.txt\"}"}},{"tool-use":{"id":"t2","name":"Bash","input":"ls\u001b[31m"}}]}]}"#,
        )
        .unwrap();

        let d = Detail::read(&team, Some(&home), "alice", &mut HistoryCache::new());
        assert_eq!(d.problems, Vec::<String>::new());
        assert_eq!(d.turns.len(), 1, "{d:?}");
        assert!(
            d.turns[0].ends_with(r"team-lead: count \u{1b}[2Jthe words"),
            "{d:?}"
        );
        assert_eq!(d.tools[0], r"Bash ls\u{1b}[31m", "newest first, escaped");
        assert_eq!(d.tools[1], r#"Read {"path":"a.txt"}"#);
        assert_eq!(d.log.len(), 3);
        assert_eq!(d.log[2], "last line");
        let all = format!("{d:?}{}", d.log.join("\n"));
        assert!(
            !d.log.concat().contains('\x1b') && !d.tools.concat().contains('\x1b'),
            "{all}"
        );
        assert_eq!(d.turn, None, "no turn in progress");
        assert_eq!(d.network, None, "no network record, no line");

        // What its proxy kept beside the log, one printable line.
        let record = crate::network::usage_record_path(&log);
        std::fs::write(
            &record,
            r#"{"bytesOut":10,"bytesIn":20,"connections":2,"reached":{"pkgs.test:443":2},"refused":{"evil.test:443":"a denied host \u001b[2J"}}"#,
        )
        .unwrap();
        let d = Detail::read(&team, Some(&home), "alice", &mut HistoryCache::new());
        let net = d.network.expect("the record is read");
        assert!(
            net.starts_with("reached pkgs.test:443 ×2; refused evil.test:443 (a denied host"),
            "{net}"
        );
        assert!(!net.contains('\x1b'), "{net}");
    }

    #[test]
    fn a_long_log_shows_only_its_last_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.log");
        let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let tail = log_tail(&path).unwrap();
        assert_eq!(tail.len(), LOG_LINES);
        assert_eq!(tail.last().unwrap(), "line 19999");
    }
}
