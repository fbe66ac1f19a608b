//! Path specifiers: a rule's parentheses parsed into a [`PathPattern`]
//! (where it is rooted, its segments), and its glob matched against a call's
//! [`ResolvedPath`] one segment at a time. The syntax is in the `# Paths`
//! section of the [module docs](super).

use super::paths::ResolvedPath;
use super::RuleProblem;

/// A parsed path glob: where it is rooted and its segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    base: PathBase,
    anchored: bool,
    segments: Vec<String>,
    /// `**` first when unanchored, `**` last (a directory covers its
    /// contents): what [`match_segments`] runs.
    effective: Vec<Seg>,
}

/// Where a path glob is rooted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathBase {
    /// The capability directory (`~/`, `/`, `./`, or nothing).
    CapabilityDir,
    /// The filesystem root (`//`).
    FilesystemRoot,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// `**`
    Any,
    /// One segment, with `*` and `?`.
    Glob(String),
}

impl PathPattern {
    /// Where it is rooted.
    pub fn base(&self) -> PathBase {
        self.base
    }

    /// False for a bare name like `*.rs`, which matches at any depth.
    pub fn is_anchored(&self) -> bool {
        self.anchored
    }

    /// The glob's segments below its base.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// Does the glob cover `path`? `for_allow`: a path that climbed out
    /// through `..` never matches.
    pub(super) fn covers(&self, path: &ResolvedPath, for_allow: bool) -> bool {
        if for_allow && path.escapes() {
            return false;
        }
        let comps: Vec<&str> = match self.base {
            PathBase::CapabilityDir => match path.relative_components() {
                Some(rel) => rel,
                None => return false,
            },
            PathBase::FilesystemRoot => {
                if !path.rooted {
                    return false;
                }
                path.comps.iter().map(String::as_str).collect()
            }
        };
        match_segments(&self.effective, &comps)
    }
}

pub(super) fn parse_path_spec(spec: &str) -> Result<PathPattern, RuleProblem> {
    let (base, rest, rooted) = if let Some(rest) = spec.strip_prefix("//") {
        (PathBase::FilesystemRoot, rest, true)
    } else if spec == "~" {
        (PathBase::CapabilityDir, "", true)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        (PathBase::CapabilityDir, rest, true)
    } else if spec.starts_with('~') {
        return Err(RuleProblem::OtherUsersHome);
    } else if let Some(rest) = spec.strip_prefix("./") {
        (PathBase::CapabilityDir, rest, true)
    } else if let Some(rest) = spec.strip_prefix('/') {
        (PathBase::CapabilityDir, rest, true)
    } else {
        (PathBase::CapabilityDir, spec, false)
    };
    let rest = rest.trim_end_matches('/');
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .map(str::to_owned)
        .collect();
    if segments.iter().any(|s| s == "..") {
        return Err(RuleProblem::ClimbsOut);
    }
    let anchored = rooted || rest.contains('/') || segments.is_empty();
    let mut effective = Vec::with_capacity(segments.len() + 2);
    if !anchored {
        effective.push(Seg::Any);
    }
    effective.extend(segments.iter().map(|s| {
        if s == "**" {
            Seg::Any
        } else {
            Seg::Glob(s.clone())
        }
    }));
    effective.push(Seg::Any);
    Ok(PathPattern {
        base,
        anchored,
        segments,
        effective,
    })
}

/// Does the segment glob match the path's segments? Dynamic programming over
/// (pattern, path) positions, so many `**` cost no backtracking blow-up.
fn match_segments(pattern: &[Seg], path: &[&str]) -> bool {
    let (np, ns) = (pattern.len(), path.len());
    // row[j]: pattern[i..] matches path[j..], for the current i.
    let mut next = vec![false; ns + 1];
    next[ns] = true;
    for i in (0..np).rev() {
        let mut row = vec![false; ns + 1];
        for j in (0..=ns).rev() {
            row[j] = match &pattern[i] {
                Seg::Any => next[j] || (j < ns && row[j + 1]),
                Seg::Glob(glob) => j < ns && next[j + 1] && segment_matches(glob, path[j]),
            };
        }
        next = row;
    }
    next[0]
}

/// `*` (any run of characters) and `?` (one character) within one segment.
fn segment_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ctx, rule};
    use super::super::{Subject, ToolName};
    use super::*;

    fn path_rule_matches(rule_text: &str, tool: ToolName, path: &str) -> bool {
        let path = ctx().resolve(path);
        rule(rule_text).matches(&Subject::Path { tool, path: &path }, true)
    }

    #[test]
    fn star_stays_within_a_segment_and_double_star_crosses_segments() {
        assert!(segment_matches("*.rs", "main.rs"));
        assert!(segment_matches("*.rs", ".rs"));
        assert!(!segment_matches("*.rs", "main.rsx"));
        assert!(segment_matches("?.rs", "a.rs"));
        assert!(!segment_matches("?.rs", "ab.rs"));
        assert!(segment_matches("a*b*c", "axxbyyc"));
        assert!(!segment_matches("a*b*c", "axxbyy"));
        assert!(segment_matches("*", ".env"));
        let glob = |s: &str| {
            s.split('/')
                .map(|x| {
                    if x == "**" {
                        Seg::Any
                    } else {
                        Seg::Glob(x.into())
                    }
                })
                .collect::<Vec<_>>()
        };
        assert!(match_segments(&glob("src/*.rs"), &["src", "main.rs"]));
        assert!(!match_segments(&glob("src/*.rs"), &["src", "a", "main.rs"]));
        assert!(match_segments(
            &glob("src/**/*.rs"),
            &["src", "a", "b", "main.rs"]
        ));
        assert!(match_segments(&glob("src/**/*.rs"), &["src", "main.rs"]));
        assert!(match_segments(&glob("**"), &[]));
        assert!(match_segments(
            &glob("**/**/**/**/**/x"),
            &["a", "b", "c", "d", "e", "f", "g", "h", "x"]
        ));
        assert!(!match_segments(
            &glob("**/**/**/**/**/x"),
            &["a", "b", "c", "d", "e", "f", "g", "h", "y"]
        ));
    }

    #[test]
    fn edit_src_globstar_matches_files_under_src_only() {
        assert!(path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "src/main.rs"
        ));
        assert!(path_rule_matches(
            "Edit(src/**)",
            ToolName::Write,
            "src/a/b/c.rs"
        ));
        assert!(path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "/work/cap/src/lib.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "lib/src/x.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(src/**)",
            ToolName::Edit,
            "srcx/a.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(src/**)",
            ToolName::Read,
            "src/a.rs"
        ));
    }

    #[test]
    fn a_bare_name_glob_matches_at_any_depth() {
        assert!(path_rule_matches("Edit(*.rs)", ToolName::Edit, "main.rs"));
        assert!(path_rule_matches(
            "Edit(*.rs)",
            ToolName::Edit,
            "src/deep/x.rs"
        ));
        assert!(!path_rule_matches(
            "Edit(*.rs)",
            ToolName::Edit,
            "src/x.toml"
        ));
        assert!(path_rule_matches(
            "Read(.env)",
            ToolName::Read,
            "config/.env"
        ));
        assert!(!path_rule_matches(
            "Read(./.env)",
            ToolName::Read,
            "config/.env"
        ));
        assert!(path_rule_matches("Read(./.env)", ToolName::Read, ".env"));
    }

    #[test]
    fn a_rule_naming_a_directory_covers_everything_under_it() {
        assert!(path_rule_matches("Edit(src)", ToolName::Edit, "src/a/b.rs"));
        assert!(path_rule_matches(
            "Edit(src/)",
            ToolName::Edit,
            "src/a/b.rs"
        ));
        assert!(path_rule_matches(
            "Read(secrets)",
            ToolName::Read,
            "x/secrets/key"
        ));
    }

    #[test]
    fn tilde_is_the_capability_directory() {
        assert!(path_rule_matches("Read(~/**)", ToolName::Read, "a.txt"));
        assert!(path_rule_matches(
            "Read(~/**)",
            ToolName::Read,
            "/work/cap/x/y"
        ));
        assert!(path_rule_matches("Read(~/**)", ToolName::Grep, "."));
        assert!(path_rule_matches("Read(~)", ToolName::Read, "x"));
        assert!(path_rule_matches(
            "Read(~/docs/*.md)",
            ToolName::Read,
            "docs/a.md"
        ));
        assert!(!path_rule_matches(
            "Read(~/**)",
            ToolName::Read,
            "/home/me/.bashrc"
        ));
        assert!(!path_rule_matches(
            "Read(~/**)",
            ToolName::Read,
            "/work/other"
        ));
        // `~` in a call path is an ordinary name.
        assert!(!path_rule_matches(
            "Read(~/a.txt)",
            ToolName::Read,
            "~/b.txt"
        ));
        assert!(path_rule_matches("Read(~/**)", ToolName::Read, "~/b.txt"));
    }

    #[test]
    fn a_leading_slash_is_the_capability_directory_and_a_double_slash_the_root() {
        assert!(path_rule_matches(
            "Edit(/docs/**)",
            ToolName::Edit,
            "docs/a.md"
        ));
        assert!(!path_rule_matches(
            "Edit(/docs/**)",
            ToolName::Edit,
            "/docs/a.md"
        ));
        assert!(path_rule_matches(
            "Read(//tmp/**)",
            ToolName::Read,
            "/tmp/x/y"
        ));
        assert!(!path_rule_matches(
            "Read(//tmp/**)",
            ToolName::Read,
            "tmp/x"
        ));
        assert!(path_rule_matches(
            "Read(//work/cap/src/**)",
            ToolName::Read,
            "src/a.rs"
        ));
    }
}
