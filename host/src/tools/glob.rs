//! `Glob`: the files under a directory whose paths match a glob, and the
//! matcher and directory walk that Grep shares.
//!
//! # Patterns
//!
//! Matched against the path relative to the search directory (`path`,
//! default the capability directory), segment by segment:
//!
//! | syntax | matches |
//! |---|---|
//! | `*` | any run of characters within one segment, dot files included |
//! | `?` | one character |
//! | `[abc]`, `[a-z]`, `[!a-z]` (or `[^a-z]`) | one character of (not of) the class |
//! | `{rs,toml}` | either alternative (nesting allowed, at most 256 expansions) |
//! | a whole `**` segment | any number of segments, zero included |
//! | `\x` | `x` literally |
//!
//! An absolute pattern must lie in the capability directory. `..` in a
//! pattern is refused: to search elsewhere, give `path`.
//!
//! # The walk
//!
//! Through the [`Dir`] only; symlinks are never followed (a symlink is
//! listed by name, never entered), `.git` directories are not entered, and
//! the walk stops after `max_walk_entries` entries (counted across the
//! whole walk, and no directory's listing is held beyond what is left of
//! them) and 128 levels down. The caller's `keep`
//! predicate sees every path (relative to the capability directory) before
//! it is used: a file it drops is skipped, a directory it drops is not
//! entered. This is where the policy's [`denies_file`] applies.
//!
//! Glob returns files (and symlinks), not directories, sorted by path, at
//! most `max_results` of them.
//!
//! [`denies_file`]: crate::sandbox::ToolRules::denies_file

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use crate::sandbox::GlobInput;

use super::{cap_path, show, ToolBox, ToolError};

/// What Glob returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobOutput {
    /// Matching files, relative to the capability directory, sorted.
    pub paths: Vec<String>,
    /// More matched than `max_results`, or the walk hit `max_walk_entries`.
    pub truncated: bool,
}

impl ToolBox {
    /// Lists the files matching `input` that `keep` keeps (see the module
    /// docs).
    pub fn glob(
        &self,
        input: &GlobInput,
        keep: &dyn Fn(&Path) -> bool,
    ) -> Result<GlobOutput, ToolError> {
        let (base, pattern) = if input.pattern.starts_with('/') {
            // The pattern's own directory replaces `path`.
            (PathBuf::new(), self.relative(&input.pattern)?)
        } else {
            let base = self.relative(input.path.as_deref().unwrap_or("."))?;
            (base, PathBuf::from(&input.pattern))
        };
        let pattern = GlobPattern::parse(&pattern.to_string_lossy()).map_err(ToolError::Invalid)?;
        let start = base.join(pattern.literal_prefix());
        if start != base {
            // `path` must exist; the pattern's own directories need not.
            let dir = self.dir.get()?;
            dir.metadata(cap_path(&base))
                .map_err(|e| ToolError::io("search", &base, e))?;
            if !dir.exists(&start) {
                return Ok(GlobOutput {
                    paths: Vec::new(),
                    truncated: false,
                });
            }
        }

        let mut found: Vec<PathBuf> = Vec::new();
        let mut truncated = false;
        let walked = self.walk(&start, keep, &mut |rel| {
            let under = rel.strip_prefix(&base).unwrap_or(rel);
            if pattern.matches_path(under) {
                if found.len() == self.limits.max_results {
                    truncated = true;
                    return ControlFlow::Break(());
                }
                found.push(rel.to_path_buf());
            }
            ControlFlow::Continue(())
        })?;
        found.sort();
        Ok(GlobOutput {
            paths: found.iter().map(|p| show(p)).collect(),
            truncated: truncated || walked.exhausted,
        })
    }

    /// Visits the files at or under `start` (relative to the capability
    /// directory) in path order, as the module docs describe. A `start`
    /// that does not exist is [`ToolError::NotFound`].
    pub(crate) fn walk(
        &self,
        start: &Path,
        keep: &dyn Fn(&Path) -> bool,
        visit: &mut dyn FnMut(&Path) -> ControlFlow<()>,
    ) -> Result<Walked, ToolError> {
        let mut walked = Walked {
            budget: self.limits.max_walk_entries,
            exhausted: false,
        };
        let root = self.dir.get()?;
        let meta = root
            .metadata(cap_path(start))
            .map_err(|e| ToolError::io("search", start, e))?;
        if !meta.is_dir() {
            if keep(start) {
                let _ = visit(start);
            }
            return Ok(walked);
        }
        let dir = root
            .open_dir(cap_path(start))
            .map_err(|e| ToolError::io("search", start, e))?;
        let mut rel = start.to_path_buf();
        let _ = walk_dir(&dir, &mut rel, 0, keep, visit, &mut walked);
        Ok(walked)
    }
}

/// How a walk ended.
#[derive(Debug)]
pub(crate) struct Walked {
    budget: usize,
    /// It stopped at `max_walk_entries`.
    pub(crate) exhausted: bool,
}

/// Deeper than this the walk does not go (each level holds a descriptor).
const MAX_DEPTH: usize = 128;

fn walk_dir(
    dir: &Dir,
    rel: &mut PathBuf,
    depth: usize,
    keep: &dyn Fn(&Path) -> bool,
    visit: &mut dyn FnMut(&Path) -> ControlFlow<()>,
    walked: &mut Walked,
) -> ControlFlow<()> {
    let Ok(entries) = dir.entries() else {
        return ControlFlow::Continue(());
    };
    // Never more than the budget left (plus one, to tell a directory that
    // has more): a directory of a million entries costs no more memory than
    // the budget, and the walk then stops there.
    let mut entries: Vec<_> = entries
        .take(walked.budget.saturating_add(1))
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in entries {
        if walked.budget == 0 {
            walked.exhausted = true;
            return ControlFlow::Break(());
        }
        walked.budget -= 1;
        rel.push(&name);
        let flow = if kind.is_dir() {
            if name != ".git" && depth < MAX_DEPTH && keep(rel) {
                match dir.open_dir(&name) {
                    Ok(sub) => walk_dir(&sub, rel, depth + 1, keep, visit, walked),
                    Err(_) => ControlFlow::Continue(()),
                }
            } else {
                ControlFlow::Continue(())
            }
        } else if keep(rel) {
            visit(rel)
        } else {
            ControlFlow::Continue(())
        };
        rel.pop();
        flow?;
    }
    ControlFlow::Continue(())
}

/// A compiled glob: its brace expansions, each a list of segments.
#[derive(Debug, Clone)]
pub(crate) struct GlobPattern {
    alternatives: Vec<Vec<Seg>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    /// `**`
    Any,
    Name(Vec<Tok>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Lit(char),
    Star,
    One,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Most brace expansions one pattern may produce.
const MAX_EXPANSIONS: usize = 256;

impl GlobPattern {
    /// Compiles `pattern` (see the module docs), or says why not.
    pub(crate) fn parse(pattern: &str) -> Result<GlobPattern, String> {
        if pattern.is_empty() {
            return Err("the glob pattern is empty".to_owned());
        }
        let mut expanded = Vec::new();
        expand(pattern, &mut expanded)?;
        let mut alternatives = Vec::new();
        for alt in expanded {
            let mut segs = Vec::new();
            for seg in alt.split('/') {
                match seg {
                    "" | "." => {}
                    ".." => {
                        return Err(format!(
                            "{pattern:?}: a glob cannot climb with `..`; give `path` instead"
                        ))
                    }
                    "**" => segs.push(Seg::Any),
                    name => segs.push(Seg::Name(tokens(name))),
                }
            }
            alternatives.push(segs);
        }
        Ok(GlobPattern { alternatives })
    }

    /// Does some alternative match all of `path`?
    pub(crate) fn matches_path(&self, path: &Path) -> bool {
        let names: Vec<String> = path
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.alternatives
            .iter()
            .any(|alt| match_segments(alt, &names))
    }

    /// Does the pattern contain a `/` (match whole relative paths) rather than
    /// being one segment (match file names at any depth)?
    pub(crate) fn has_dirs(&self) -> bool {
        self.alternatives.iter().any(|alt| alt.len() > 1)
    }

    /// The leading segments every alternative shares that have no wildcard:
    /// the walk can start there. Never the whole of a one-alternative
    /// pattern's last segment, so a literal pattern still walks its parent.
    pub(crate) fn literal_prefix(&self) -> PathBuf {
        let mut prefix = PathBuf::new();
        let Some(first) = self.alternatives.first() else {
            return prefix;
        };
        for (i, seg) in first.iter().enumerate() {
            let Some(name) = literal(seg) else { break };
            let shared = self
                .alternatives
                .iter()
                .all(|alt| alt.len() > i + 1 && alt.get(i) == Some(seg));
            if !shared || i + 1 == first.len() {
                break;
            }
            prefix.push(name);
        }
        prefix
    }
}

fn literal(seg: &Seg) -> Option<String> {
    match seg {
        Seg::Any => None,
        Seg::Name(toks) => toks
            .iter()
            .map(|t| match t {
                Tok::Lit(c) => Some(*c),
                Tok::Star | Tok::One | Tok::Class { .. } => None,
            })
            .collect(),
    }
}

/// Brace expansion of `pattern` into `out`.
fn expand(pattern: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some((open, close)) = find_braces(pattern) else {
        if out.len() == MAX_EXPANSIONS {
            return Err(format!(
                "{pattern:?} expands to more than {MAX_EXPANSIONS} patterns"
            ));
        }
        out.push(pattern.to_owned());
        return Ok(());
    };
    let (head, body, tail) = (
        &pattern[..open],
        &pattern[open + 1..close],
        &pattern[close + 1..],
    );
    for alt in split_top(body) {
        expand(&format!("{head}{alt}{tail}"), out)?;
    }
    Ok(())
}

/// Byte offsets of the first `{` and its matching `}`, skipping escapes.
fn find_braces(pattern: &str) -> Option<(usize, usize)> {
    let mut open = None;
    let mut depth = 0usize;
    let mut chars = pattern.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '{' => {
                if depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return open.map(|o| (o, i));
                }
            }
            _ => {}
        }
    }
    None
}

/// `body` split at commas outside nested braces.
fn split_top(body: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
}

fn tokens(segment: &str) -> Vec<Tok> {
    let chars: Vec<char> = segment.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                if toks.last() != Some(&Tok::Star) {
                    toks.push(Tok::Star);
                }
            }
            '?' => toks.push(Tok::One),
            '\\' if i + 1 < chars.len() => {
                i += 1;
                toks.push(Tok::Lit(chars[i]));
            }
            '[' => match class(&chars[i + 1..]) {
                Some((tok, used)) => {
                    toks.push(tok);
                    i += used;
                }
                None => toks.push(Tok::Lit('[')),
            },
            c => toks.push(Tok::Lit(c)),
        }
        i += 1;
    }
    toks
}

/// A class after its `[`: the token and how many characters it used
/// (through the `]`), or `None` when unclosed.
fn class(rest: &[char]) -> Option<(Tok, usize)> {
    let negated = matches!(rest.first(), Some('!' | '^'));
    let mut i = usize::from(negated);
    let mut ranges = Vec::new();
    let mut first = true;
    while i < rest.len() {
        let c = rest[i];
        if c == ']' && !first {
            return Some((Tok::Class { negated, ranges }, i + 1));
        }
        first = false;
        if i + 2 < rest.len() && rest[i + 1] == '-' && rest[i + 2] != ']' {
            ranges.push((c, rest[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

/// Dynamic programming over (pattern, path) positions: many `**` cost no
/// backtracking blow-up.
fn match_segments(pattern: &[Seg], path: &[&str]) -> bool {
    let n = path.len();
    let mut next = vec![false; n + 1];
    next[n] = true;
    for seg in pattern.iter().rev() {
        let mut row = vec![false; n + 1];
        for j in (0..=n).rev() {
            row[j] = match seg {
                Seg::Any => next[j] || (j < n && row[j + 1]),
                Seg::Name(toks) => j < n && next[j + 1] && name_matches(toks, path[j]),
            };
        }
        next = row;
    }
    next[0]
}

/// One segment: the classic single-star backtracking, which is linear
/// enough for file names.
pub(crate) fn name_matches_glob(pattern: &GlobPattern, name: &str) -> bool {
    pattern.alternatives.iter().any(|alt| match alt.as_slice() {
        [Seg::Name(toks)] => name_matches(toks, name),
        [Seg::Any] => true,
        _ => false,
    })
}

fn name_matches(toks: &[Tok], name: &str) -> bool {
    let s: Vec<char> = name.chars().collect();
    let (mut ti, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        let step = match toks.get(ti) {
            Some(Tok::Star) => {
                star = Some((ti, si));
                ti += 1;
                continue;
            }
            Some(Tok::Lit(c)) => *c == s[si],
            Some(Tok::One) => true,
            Some(Tok::Class { negated, ranges }) => {
                ranges.iter().any(|&(lo, hi)| lo <= s[si] && s[si] <= hi) != *negated
            }
            None => false,
        };
        if step {
            ti += 1;
            si += 1;
        } else if let Some((st, ss)) = star {
            ti = st + 1;
            si = ss + 1;
            star = Some((st, ss + 1));
        } else {
            return false;
        }
    }
    toks[ti..].iter().all(|t| *t == Tok::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, path: &str) -> bool {
        GlobPattern::parse(pattern)
            .unwrap()
            .matches_path(Path::new(path))
    }

    #[test]
    fn globs_match_segments_classes_and_braces() {
        assert!(m("*.rs", "main.rs"));
        assert!(!m("*.rs", "src/main.rs"));
        assert!(m("**/*.rs", "main.rs"));
        assert!(m("src/**/*.rs", "src/a/b/c.rs"));
        assert!(m("*.{rs,toml}", "Cargo.toml"));
        assert!(m("{src,tests}/**/*.rs", "tests/x.rs"));
        assert!(m("f[0-9]?.txt", "f1a.txt"));
        assert!(!m("f[!0-9].txt", "f1.txt"));
        assert!(m("*", ".hidden"));
        assert!(m(r"a\*b", "a*b"));
        assert!(!m(r"a\*b", "axb"));
        assert!(GlobPattern::parse("*/../x").is_err());
    }

    #[test]
    fn the_walk_starts_below_the_literal_prefix() {
        let p = |s: &str| GlobPattern::parse(s).unwrap().literal_prefix();
        assert_eq!(p("src/**/*.rs"), PathBuf::from("src"));
        assert_eq!(p("src/main.rs"), PathBuf::from("src"));
        assert_eq!(p("{src,tests}/*.rs"), PathBuf::new());
        assert_eq!(p("a/{b,c}/d"), PathBuf::from("a"));
    }
}
