//! `teamhost logs [-f] TEAM [NAME]`: the teammates' logs the host writes
//! under the home (`{home}/logs/{team}/{name}.log`, see `home/layout.rs`),
//! like `docker logs`. One teammate's log as it is; several, each line
//! after `name | `, as `docker compose logs` does.
//!
//! A log holds what a guest printed: every line is stripped of terminal
//! escape sequences ([`strip_escapes`]) and the control characters left are
//! shown escaped, so nothing a teammate wrote can drive the terminal or
//! fake a line of another teammate.
//!
//! Each life of a teammate opens with a line the host writes
//! (`--- teamhost: NAME started|resumed TIME (host process PID) ---`), so
//! one run's lines are told from the next's. `--tail N` shows the last N
//! lines of each log. `--since TIME` (`10m`, `2h`, `1d`, or an RFC 3339
//! time) shows the lives that ran at or after TIME: the one in progress
//! then and every later one. A guest's lines carry no time of their own, so
//! a life is the finest grain: `--since` may show more than asked, never
//! less. A marker is for reading, not evidence: the guest writes the rest
//! of its log, and could print such a line too (it can hide or fake only
//! its own lines, which it writes anyway).
//!
//! `-f` follows (saying what, on stderr): new lines are printed as they are written (inotify
//! through `notify`, no polling) until the run that hosts the team ends
//! (its process, by pidfd) or Ctrl-C. A team no live host runs has nothing
//! more to follow: its logs are printed and the command ends, saying so.
//! A log name is never built from the argument: NAME is looked up among
//! the files in the team's log directory.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use chrono::{DateTime, Utc};
use clap::Args;

use super::output::write_stdout;
use super::team_state::TeamState;
use super::Output;
use crate::backends::assembly::LIFE_MARK;
use crate::backends::started::wait_exit;
use crate::home::process::{pidfd_open, runs};
use crate::home::Home;
use crate::protocol::describe::printable_line;
use crate::store::Store;

/// Arguments of `teamhost logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The team.
    team: String,
    /// One teammate (default: every teammate's log). A name that starts
    /// with `-` (teamhost gives none, Claude Code may) goes after `--`:
    /// `teamhost logs TEAM -- -rf`.
    name: Option<String>,
    /// Follow: print new lines until the team's run ends (or Ctrl-C).
    #[arg(short, long)]
    follow: bool,
    /// Only the last N lines of each log (then, with -f, what comes).
    #[arg(long, value_name = "N")]
    tail: Option<usize>,
    /// Only the lives of each teammate that ran at or after TIME: `30s`,
    /// `10m`, `2h`, `1d` ago, or an RFC 3339 time
    /// (`2026-11-30T10:00:00Z`). A life is the finest grain: the one in
    /// progress at TIME is shown whole.
    #[arg(long, value_name = "TIME", value_parser = parse_since)]
    since: Option<DateTime<Utc>>,
}

/// `--since`'s value: a duration ago (`30s`, `10m`, `2h`, `1d`) or an RFC
/// 3339 time.
fn parse_since(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let unit = text.chars().last().unwrap_or(' ');
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => 0,
    };
    let count: Option<i64> = text[..text.len() - unit.len_utf8().min(text.len())]
        .parse()
        .ok();
    match count {
        Some(n) if seconds > 0 && n >= 0 => Ok(Utc::now() - chrono::Duration::seconds(n * seconds)),
        _ => Err(format!(
            "{text:?} is not a time: give a duration ago (30s, 10m, 2h, 1d) or an RFC 3339 time (2026-11-30T10:00:00Z)"
        )),
    }
}

/// When the life a marker line opens started (`None` for any other line).
fn life_started(line: &str) -> Option<DateTime<Utc>> {
    let rest = line.strip_prefix(LIFE_MARK)?;
    let (before, _) = rest.rsplit_once(" (host process ")?;
    let (_, time) = before.rsplit_once(' ')?;
    DateTime::parse_from_rfc3339(time)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The index of the first line to show of `lines` for `--since`: the
/// marker of the last life that started at or before `since` (it was in
/// progress then), else the first line (every life started later, or
/// the log has no markers to tell).
fn since_start(lines: &[&str], since: DateTime<Utc>) -> usize {
    lines
        .iter()
        .rposition(|l| life_started(l).is_some_and(|t| t <= since))
        .unwrap_or(0)
}

pub(super) fn logs(home: &Home, store: &Store, out: &Output, a: LogsArgs) -> anyhow::Result<()> {
    if out.is_json() {
        anyhow::bail!("`teamhost logs` prints text only: leave out --json");
    }
    let team = store.team(&a.team)?;
    let dir = home.team_logs(team.name());
    let host = if a.follow {
        TeamState::of(home, &team)?.host.filter(|h| h.alive)
    } else {
        None
    };
    let mut logs = Logs::new(dir.clone(), a.name.clone());
    logs.tail = a.tail;
    logs.since = a.since;
    let found = logs.scan()?;
    if found == 0 && host.is_none() {
        if team.config().is_err() {
            anyhow::bail!(
                "no team {:?} and no logs of it in {}: `teamhost team list` lists the teams, `teamhost ps -a` the ones this machine ran",
                team.name(),
                dir.display()
            );
        }
        match &a.name {
            Some(n) => anyhow::bail!(
                "no log of {n:?} in {}; {}",
                dir.display(),
                logs.known_names()
            ),
            None => {
                eprintln!(
                    "teamhost logs: no logs of team {} yet in {}",
                    team.name(),
                    dir.display()
                );
                return Ok(());
            }
        }
    }
    logs.print_new(false)?;
    if !a.follow {
        return logs.print_new(true);
    }
    let Some(host) = host else {
        logs.print_new(true)?;
        eprintln!(
            "teamhost logs: no live host runs team {}: nothing more to follow",
            team.name()
        );
        return Ok(());
    };
    eprintln!(
        "teamhost logs: following {} of team {} ({}) until its host (process {}) ends; Ctrl-C stops",
        match &a.name {
            Some(n) => format!("{}'s log", printable_line(n)),
            None => "every teammate's log".to_string(),
        },
        team.name(),
        dir.display(),
        host.pid
    );
    follow(&mut logs, &dir, host.pid, host.start_time)
}

/// Why the follower wakes.
enum Wake {
    Changed,
    HostEnded,
}

/// Prints new lines as the logs grow until the host `pid` ends.
fn follow(logs: &mut Logs, dir: &Path, pid: u32, start: Option<u64>) -> anyhow::Result<()> {
    use notify::Watcher;
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let (tx, rx) = mpsc::channel();
    let changed = tx.clone();
    let mut watcher = notify::recommended_watcher(move |_event| {
        let _ = changed.send(Wake::Changed);
    })?;
    watcher.watch(dir, notify::RecursiveMode::NonRecursive)?;
    // The pidfd is opened before the start time is checked again: it then
    // names the recorded process, whatever happens to the pid.
    let fd = pidfd_open(pid).ok().filter(|_| runs(pid, start));
    match fd {
        None => {
            let _ = tx.send(Wake::HostEnded);
        }
        Some(fd) => {
            std::thread::spawn(move || {
                let _ = wait_exit(&fd, None);
                let _ = tx.send(Wake::HostEnded);
            });
        }
    }
    // What was written between the first read and the watch.
    logs.scan()?;
    logs.print_new(false)?;
    while let Ok(wake) = rx.recv() {
        logs.scan()?;
        match wake {
            Wake::Changed => logs.print_new(false)?,
            Wake::HostEnded => {
                logs.print_new(true)?;
                eprintln!("teamhost logs: the team's host (process {pid}) has ended");
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The logs of one team being read: by teammate, how far each was read
/// and the start of a line not finished yet.
struct Logs {
    dir: PathBuf,
    only: Option<String>,
    files: BTreeMap<String, Reading>,
    /// The next print shows only the last N lines of each log (`--tail`).
    tail: Option<usize>,
    /// The next print starts at the life in progress at this time
    /// (`--since`).
    since: Option<DateTime<Utc>>,
}

#[derive(Default)]
struct Reading {
    offset: u64,
    partial: Vec<u8>,
}

impl Logs {
    fn new(dir: PathBuf, only: Option<String>) -> Logs {
        Logs {
            dir,
            only,
            files: BTreeMap::new(),
            tail: None,
            since: None,
        }
    }

    /// Adds the logs that appeared; answers how many are read.
    fn scan(&mut self) -> anyhow::Result<usize> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self.files.len()),
            Err(e) => anyhow::bail!("cannot read {}: {e}", self.dir.display()),
        };
        for e in entries.flatten() {
            let file = e.file_name();
            let Some(name) = file.to_str().and_then(|f| f.strip_suffix(".log")) else {
                continue;
            };
            if self.only.as_deref().is_some_and(|o| o != name) {
                continue;
            }
            self.files.entry(name.to_string()).or_default();
        }
        Ok(self.files.len())
    }

    /// "its logs: a, b" or "it has no logs yet".
    fn known_names(&self) -> String {
        let mut all = Logs::new(self.dir.clone(), None);
        let _ = all.scan();
        if all.files.is_empty() {
            "the team has no logs yet".to_string()
        } else {
            format!(
                "the team's logs: {}",
                all.files
                    .keys()
                    .map(|n| printable_line(n).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }

    /// Prints the whole lines written since the last call; with `last`,
    /// an unfinished last line too.
    fn print_new(&mut self, last: bool) -> anyhow::Result<()> {
        // `--tail` shapes the first print only; what comes later is new.
        let tail = self.tail.take();
        let since = self.since.take();
        let prefix = self.only.is_none() && self.files.len() > 1;
        let width = self
            .files
            .keys()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(0);
        let mut text = String::new();
        for (name, r) in &mut self.files {
            let path = self.dir.join(format!("{name}.log"));
            let Ok(mut f) = std::fs::File::open(&path) else {
                continue;
            };
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len < r.offset {
                // Truncated or replaced: read it again from the start.
                r.offset = 0;
                r.partial.clear();
            }
            f.seek(SeekFrom::Start(r.offset))?;
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            r.offset += bytes.len() as u64;
            r.partial.extend_from_slice(&bytes);
            let cut = if last {
                r.partial.len()
            } else {
                r.partial
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1)
            };
            let done: Vec<u8> = r.partial.drain(..cut).collect();
            let done = String::from_utf8_lossy(&done);
            let lines: Vec<&str> = done.lines().collect();
            let lines = &lines[since.map_or(0, |t| since_start(&lines, t))..];
            let from = tail.map_or(0, |n| lines.len().saturating_sub(n));
            for line in &lines[from..] {
                let shown = printable_line(&strip_escapes(line)).into_owned();
                let shown = sandboxed_hint(&shown).map_or(shown, str::to_string);
                if prefix {
                    let name = printable_line(name);
                    text.push_str(&format!("{name:<width$} | {shown}\n"));
                } else {
                    text.push_str(&shown);
                    text.push('\n');
                }
            }
        }
        if text.is_empty() {
            return Ok(());
        }
        text.pop();
        write_stdout(&text)
    }
}

/// What a Rust guest's panic hint (`note: run with `RUST_BACKTRACE=1` …`)
/// is shown as: a guest has no environment to set, and the host names the
/// frames a guest crashed in itself, in the teammate's failure reason (when
/// the component keeps the names).
const SANDBOXED_BACKTRACE: &str = "note: (teamhost) RUST_BACKTRACE cannot reach a sandboxed guest: the panic's own line names its place, and the teammate's failure reason (`teamhost run`'s `failed:` line and summary) names its frames when the component keeps their names";

/// The line shown instead of `line` when it is Rust's backtrace hint.
fn sandboxed_hint(line: &str) -> Option<&'static str> {
    line.starts_with("note: run with `RUST_BACKTRACE=")
        .then_some(SANDBOXED_BACKTRACE)
}

/// `line` without its terminal escape sequences: CSI (`ESC [ … final`),
/// OSC, DCS, SOS, PM and APC strings (up to BEL or `ESC \`) and two-byte
/// `ESC x` sequences, and their 8-bit forms. Other control characters stay
/// (the caller escapes them visibly).
pub(super) fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let kind = match c {
            '\u{1b}' => match chars.next() {
                Some('[') => '[',
                Some(']' | 'P' | 'X' | '^' | '_') => ']',
                // `ESC ( B` and the like: intermediates, then a final byte.
                Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                    while chars
                        .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                        .is_some()
                    {}
                    chars.next();
                    continue;
                }
                // A two-byte sequence (or a lone ESC at the end).
                _ => continue,
            },
            '\u{9b}' => '[',
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => ']',
            c => {
                out.push(c);
                continue;
            }
        };
        if kind == '[' {
            // Parameters and intermediates, then one final byte.
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        } else {
            // A string, ended by BEL, ST (`ESC \`) or 8-bit ST.
            while let Some(c) = chars.next() {
                if c == '\u{7}' || c == '\u{9c}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_starts_at_the_life_in_progress_then() {
        let lines = [
            "before any marker",
            "--- teamhost: a started 2026-11-30T09:00:00.000Z (host process 1) ---",
            "one",
            "--- teamhost: a resumed 2026-11-30T10:00:00.000Z (host process 2) ---",
            "two",
        ];
        let at = |t: &str| since_start(&lines, parse_since(t).unwrap());
        assert_eq!(at("2026-11-30T08:00:00Z"), 0);
        assert_eq!(at("2026-11-30T09:00:00Z"), 1);
        assert_eq!(at("2026-11-30T09:59:59Z"), 1);
        assert_eq!(at("2026-11-30T11:00:00+01:00"), 3);
        assert!(parse_since("10m").unwrap() < Utc::now());
        for bad in ["", "m", "-1h", "10w", "yesterday"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rusts_backtrace_hint_is_replaced_by_where_the_frames_are() {
        let hint = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
        assert_eq!(sandboxed_hint(hint), Some(SANDBOXED_BACKTRACE));
        assert_eq!(sandboxed_hint("note: something else"), None);
    }

    #[test]
    fn escape_sequences_are_stripped_and_the_text_around_them_kept() {
        assert_eq!(strip_escapes("\u{1b}[31mred\u{1b}[0m ok"), "red ok");
        assert_eq!(
            strip_escapes("a\u{1b}]0;pwned title\u{7}b\u{1b}]8;;http://x\u{1b}\\c"),
            "abc"
        );
        assert_eq!(strip_escapes("x\u{1b}(By\u{9b}2Jz"), "xyz");
        assert_eq!(strip_escapes("tab\tand \r stay"), "tab\tand \r stay");
        assert_eq!(strip_escapes("lone \u{1b}"), "lone ");
    }
}
