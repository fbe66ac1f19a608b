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
//! lines of each log. A marker is for reading, not evidence: the guest
//! writes the rest of its log, and could print such a line too.
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

use clap::Args;

use super::output::write_stdout;
use super::team_state::TeamState;
use super::Output;
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
            let from = tail.map_or(0, |n| lines.len().saturating_sub(n));
            for line in &lines[from..] {
                let shown = printable_line(&strip_escapes(line)).into_owned();
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
    use super::strip_escapes;

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
