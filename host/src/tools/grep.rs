//! `Grep`: search file contents with a regular expression (the `regex`
//! crate's syntax, as ripgrep's), under `path` (a file or a directory,
//! default the capability directory), walked as Glob walks ([`super::glob`]:
//! no symlinks, no `.git`, the caller's `keep` predicate applied).
//!
//! | input | effect |
//! |---|---|
//! | `output_mode` | `files_with_matches` (default): the files, one per line; `content`: the matching lines; `count`: `file:N` matching lines per file |
//! | `-i` | case-insensitive |
//! | `-n` | in `content`, number the lines (default **true**, as the reference's Grep) |
//! | `-A` / `-B` / `-C` | in `content`, lines of context after / before / around (`-A`, `-B` win over `-C`) |
//! | `glob` | only files matching it: a pattern without `/` matches the file name at any depth, one with `/` the path under `path` |
//! | `type` | only files of a ripgrep type: see [`TYPES`] |
//! | `head_limit` | at most this many output lines (`content`) or entries |
//! | `multiline` | `.` matches newlines and a match may span lines; every line it touches is a matching line |
//!
//! `content` lines are ripgrep's: `path:12:text` for a match, `path-13-text`
//! for context, `--` between groups. Binary files (a NUL in the first 8 KiB
//! or not UTF-8) and files over `max_file_bytes` are skipped and counted.
//! The output stops at `max_output_bytes` of text or `max_results` entries,
//! and the search stops with it (`truncated`).
//!
//! Host memory per call is bounded: one file at a time, at most
//! `max_file_bytes` of it, and a file of more than [`MAX_FILE_LINES`] lines
//! is skipped as too big (its line index would cost more than the text).

use std::io::Read as _;
use std::ops::ControlFlow;
use std::path::Path;

use regex::{Regex, RegexBuilder};

use crate::sandbox::GrepInput;

use super::glob::{name_matches_glob, GlobPattern};
use super::read::cut_line;
use super::{show, ToolBox, ToolError};

/// Grep's `output_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrepMode {
    /// `content`: matching lines, with context.
    Content,
    /// `files_with_matches`: file paths.
    FilesWithMatches,
    /// `count`: matching lines per file.
    Count,
}

/// What Grep returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepOutput {
    /// The mode the text is in.
    pub mode: GrepMode,
    /// The result, one entry per line, as described in the module docs.
    pub text: String,
    /// The files with a match, relative to the capability directory, in
    /// path order (those the output reached).
    pub files: Vec<String>,
    /// Matching lines found before the output was cut.
    pub matches: u64,
    /// Files not searched: binary, not UTF-8, or over `max_file_bytes`.
    pub skipped: u64,
    /// The output was cut (`head_limit`, `max_output_bytes`, `max_results`,
    /// or the walk's `max_walk_entries`).
    pub truncated: bool,
}

/// The ripgrep file types `type` accepts, and their file-name globs.
pub const TYPES: &[(&str, &str)] = &[
    ("c", "*.{c,h}"),
    ("cpp", "*.{cc,cpp,cxx,hh,hpp,hxx,h}"),
    ("css", "*.{css,scss}"),
    ("go", "*.go"),
    ("html", "*.{htm,html}"),
    ("java", "*.java"),
    ("js", "*.{js,jsx,mjs,cjs}"),
    ("json", "*.json"),
    ("md", "*.{md,markdown}"),
    ("py", "*.{py,pyi}"),
    ("rust", "*.rs"),
    ("sh", "*.{sh,bash,zsh}"),
    ("toml", "*.toml"),
    ("ts", "*.{ts,tsx,mts,cts}"),
    ("txt", "*.txt"),
    ("wit", "*.wit"),
    ("yaml", "*.{yaml,yml}"),
];

/// Bytes examined for a NUL to call a file binary.
const SNIFF: usize = 8 * 1024;

/// Most lines a searched file may have; one with more is skipped and counted.
pub const MAX_FILE_LINES: usize = 1 << 20;

/// One search's settings, resolved from the input.
struct Search<'a> {
    tb: &'a ToolBox,
    re: Regex,
    multiline: bool,
    mode: GrepMode,
    numbers: bool,
    before: usize,
    after: usize,
    head: usize,
    out: GrepOutput,
    lines_out: usize,
}

impl ToolBox {
    /// Searches as `input` says, skipping what `keep` drops (see the module
    /// docs).
    pub fn grep(
        &self,
        input: &GrepInput,
        keep: &dyn Fn(&Path) -> bool,
    ) -> Result<GrepOutput, ToolError> {
        let root = self.relative(input.path.as_deref().unwrap_or("."))?;
        let mode = match input.output_mode.as_deref() {
            None | Some("files_with_matches") => GrepMode::FilesWithMatches,
            Some("content") => GrepMode::Content,
            Some("count") => GrepMode::Count,
            Some(other) => {
                return Err(ToolError::Invalid(format!(
                    "output_mode {other:?}: use content, files_with_matches or count"
                )))
            }
        };
        let multiline = input.multiline.unwrap_or(false);
        let re = RegexBuilder::new(&input.pattern)
            .case_insensitive(input.case_insensitive.unwrap_or(false))
            .multi_line(true)
            .dot_matches_new_line(multiline)
            .build()
            .map_err(|e| ToolError::Invalid(format!("invalid regex: {e}")))?;
        let glob = input
            .glob
            .as_deref()
            .map(GlobPattern::parse)
            .transpose()
            .map_err(ToolError::Invalid)?;
        let kind = match input.file_type.as_deref() {
            None => None,
            Some(t) => Some(
                TYPES
                    .iter()
                    .find(|(name, _)| *name == t)
                    .and_then(|(_, g)| GlobPattern::parse(g).ok())
                    .ok_or_else(|| {
                        let known: Vec<_> = TYPES.iter().map(|(n, _)| *n).collect();
                        ToolError::Invalid(format!(
                            "unknown type {t:?}; known: {}",
                            known.join(", ")
                        ))
                    })?,
            ),
        };
        let context = input.context.unwrap_or(0);
        let mut search = Search {
            tb: self,
            re,
            multiline,
            mode,
            numbers: input.line_numbers.unwrap_or(true),
            before: clamp(input.before.unwrap_or(context)),
            after: clamp(input.after.unwrap_or(context)),
            head: input.head_limit.map_or(usize::MAX, clamp),
            out: GrepOutput {
                mode,
                text: String::new(),
                files: Vec::new(),
                matches: 0,
                skipped: 0,
                truncated: false,
            },
            lines_out: 0,
        };
        let walked = self.walk(&root, keep, &mut |rel| {
            let wanted = |pattern: &GlobPattern| {
                if pattern.has_dirs() {
                    pattern.matches_path(rel.strip_prefix(&root).unwrap_or(rel))
                } else {
                    rel.file_name()
                        .is_some_and(|n| name_matches_glob(pattern, &n.to_string_lossy()))
                }
            };
            if glob.as_ref().is_some_and(|g| !wanted(g))
                || kind.as_ref().is_some_and(|k| !wanted(k))
            {
                return ControlFlow::Continue(());
            }
            search.file(rel, rel == root)
        })?;
        let mut out = search.out;
        out.truncated |= walked.exhausted;
        Ok(out)
    }
}

fn clamp(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl Search<'_> {
    /// Searches one file; `Break` when the output is full.
    fn file(&mut self, rel: &Path, is_root: bool) -> ControlFlow<()> {
        let Some(text) = self.load(rel, is_root) else {
            return ControlFlow::Continue(());
        };
        let lines: Vec<&str> = text.lines().collect();
        let matched = self.matching_lines(&text, &lines);
        let count = matched.iter().filter(|&&m| m).count();
        if count == 0 {
            return ControlFlow::Continue(());
        }
        let shown = show(rel);
        match self.mode {
            GrepMode::FilesWithMatches => {
                self.out.matches += count as u64;
                self.entry(&shown, shown.clone())
            }
            GrepMode::Count => {
                self.out.matches += count as u64;
                self.entry(&shown, format!("{shown}:{count}"))
            }
            GrepMode::Content => self.content(&shown, &lines, &matched),
        }
    }

    /// The file's text, or `None` (and counted as skipped) when it is a
    /// symlink, unreadable, too big or binary.
    fn load(&mut self, rel: &Path, is_root: bool) -> Option<String> {
        let dir = self.tb.dir.get().ok()?;
        let meta = dir.symlink_metadata(rel).ok()?;
        if meta.is_symlink() && !is_root {
            return None;
        }
        // Read one byte past the limit: the file may grow after a size check.
        let max = self.tb.limits.max_file_bytes;
        let mut bytes = Vec::new();
        let file = self.tb.open_regular("grep", rel).ok()?;
        if file.metadata().map_or(true, |m| m.len() > max) {
            self.out.skipped += 1;
            return None;
        }
        file.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .ok()?;
        if bytes.len() as u64 > max {
            self.out.skipped += 1;
            return None;
        }
        if bytes.iter().take(SNIFF).any(|&b| b == 0)
            || bytes.iter().filter(|&&b| b == b'\n').count() >= MAX_FILE_LINES
        {
            self.out.skipped += 1;
            return None;
        }
        String::from_utf8(bytes)
            .inspect_err(|_| self.out.skipped += 1)
            .ok()
    }

    /// Which lines match: per line, or (multiline) every line a match
    /// touches.
    fn matching_lines(&self, text: &str, lines: &[&str]) -> Vec<bool> {
        let mut matched = vec![false; lines.len()];
        if !self.multiline {
            for (m, line) in matched.iter_mut().zip(lines) {
                *m = self.re.is_match(line);
            }
            return matched;
        }
        let starts: Vec<usize> = lines
            .iter()
            .map(|l| l.as_ptr() as usize - text.as_ptr() as usize)
            .collect();
        let line_of = |at: usize| starts.partition_point(|&s| s <= at).saturating_sub(1);
        for found in self.re.find_iter(text) {
            let first = line_of(found.start());
            let last = line_of(found.end().saturating_sub(1).max(found.start()));
            for m in matched.iter_mut().take(last + 1).skip(first) {
                *m = true;
            }
        }
        matched
    }

    /// One `files_with_matches` or `count` entry.
    fn entry(&mut self, shown: &str, line: String) -> ControlFlow<()> {
        if self.out.files.len() >= self.head.min(self.tb.limits.max_results) {
            self.out.truncated = true;
            return ControlFlow::Break(());
        }
        self.push(&line)?;
        self.out.files.push(shown.to_owned());
        ControlFlow::Continue(())
    }

    /// `content` lines for one file, with context and `--` separators.
    fn content(&mut self, shown: &str, lines: &[&str], matched: &[bool]) -> ControlFlow<()> {
        self.out.files.push(shown.to_owned());
        let context = self.before > 0 || self.after > 0;
        let mut printed: Option<usize> = None;
        for (i, _) in matched.iter().enumerate().filter(|(_, &m)| m) {
            let mut from = i.saturating_sub(self.before);
            let to = i.saturating_add(self.after).min(lines.len() - 1);
            match printed {
                Some(last) if to <= last => continue,
                Some(last) => {
                    if context && from > last + 1 {
                        self.line("--")?;
                    }
                    from = from.max(last + 1);
                }
                None if context && self.lines_out > 0 => self.line("--")?,
                None => {}
            }
            for (j, text) in lines.iter().enumerate().take(to + 1).skip(from) {
                let sep = if matched[j] { ':' } else { '-' };
                let text = cut_line(text, self.tb.limits.max_line_chars);
                let line = if self.numbers {
                    format!("{shown}{sep}{}{sep}{text}", j + 1)
                } else {
                    format!("{shown}{sep}{text}")
                };
                self.line(&line)?;
                if matched[j] {
                    self.out.matches += 1;
                }
            }
            printed = Some(to);
        }
        ControlFlow::Continue(())
    }

    /// One `content` line, within `head_limit`.
    fn line(&mut self, line: &str) -> ControlFlow<()> {
        if self.lines_out >= self.head {
            self.out.truncated = true;
            return ControlFlow::Break(());
        }
        self.push(line)?;
        self.lines_out += 1;
        ControlFlow::Continue(())
    }

    /// Appends a line to the text, within `max_output_bytes`.
    fn push(&mut self, line: &str) -> ControlFlow<()> {
        if self.out.text.len() + line.len() + 1 > self.tb.limits.max_output_bytes {
            self.out.truncated = true;
            return ControlFlow::Break(());
        }
        self.out.text.push_str(line);
        self.out.text.push('\n');
        ControlFlow::Continue(())
    }
}
