//! Call paths, normalised lexically: a [`ResolvedPath`] is a path a tool
//! call names (absolute, or relative to the capability directory) with `.`
//! and `..` worked out against an [`Anchor`], remembering whether a `..`
//! ever stepped outside. Nothing here touches the filesystem.

/// A directory given by the host (the capability directory, the plan file),
/// normalised lexically once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Anchor {
    rooted: bool,
    comps: Vec<String>,
}

impl Anchor {
    pub(crate) fn new(path: &str) -> Anchor {
        let mut comps: Vec<String> = Vec::new();
        for seg in path.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    comps.pop();
                }
                name => comps.push(name.to_owned()),
            }
        }
        Anchor {
            rooted: path.starts_with('/'),
            comps,
        }
    }

    fn contains(&self, rooted: bool, comps: &[String]) -> bool {
        rooted == self.rooted && comps.starts_with(&self.comps)
    }
}

/// A call's path, normalised lexically against the capability directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    pub(super) rooted: bool,
    pub(super) comps: Vec<String>,
    /// Components of the capability directory, when the path is inside it.
    inside: Option<usize>,
    escaped: bool,
}

impl ResolvedPath {
    /// `raw` (absolute, or relative to `cap`) normalised: `.` dropped, `..`
    /// pops a segment (and stays at `/` at the root). Any `..` step that
    /// lands outside `cap` marks the path as escaped.
    pub(crate) fn resolve(cap: &Anchor, raw: &str) -> ResolvedPath {
        let (rooted, mut comps) = if raw.starts_with('/') {
            (true, Vec::new())
        } else {
            (cap.rooted, cap.comps.clone())
        };
        let mut escaped = false;
        for seg in raw.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    comps.pop();
                    if !cap.contains(rooted, &comps) {
                        escaped = true;
                    }
                }
                name => comps.push(name.to_owned()),
            }
        }
        let inside = cap.contains(rooted, &comps).then_some(cap.comps.len());
        ResolvedPath {
            rooted,
            comps,
            inside,
            escaped,
        }
    }

    /// Glob's and Grep's search root: `path` (default: the capability
    /// directory) joined with the pattern's leading segments that have no
    /// wildcard. An absolute pattern ignores `path`. A `..` after a wildcard
    /// marks the result as escaped.
    pub(crate) fn resolve_search(
        cap: &Anchor,
        path: Option<&str>,
        pattern: Option<&str>,
    ) -> ResolvedPath {
        let mut joined = path.unwrap_or("").to_owned();
        let mut wild_dotdot = false;
        if let Some(pattern) = pattern {
            if pattern.starts_with('/') {
                joined = "/".to_owned();
            }
            let mut wild = false;
            for seg in pattern.split('/') {
                wild = wild || seg.contains(['*', '?', '[', '{']);
                if wild {
                    wild_dotdot = wild_dotdot || seg == "..";
                } else if !seg.is_empty() {
                    if !joined.is_empty() && !joined.ends_with('/') {
                        joined.push('/');
                    }
                    joined.push_str(seg);
                }
            }
        }
        let mut resolved = ResolvedPath::resolve(cap, &joined);
        if wild_dotdot {
            resolved.escaped = true;
        }
        resolved
    }

    /// A path the host chose (the plan file): its `..` are the host's
    /// business, not an escape.
    pub(crate) fn host_given(mut self) -> ResolvedPath {
        self.escaped = false;
        self
    }

    /// The same file as `other`, by normalised path, and neither escaped.
    pub(crate) fn same_file(&self, other: &ResolvedPath) -> bool {
        !self.escaped && !other.escaped && self.rooted == other.rooted && self.comps == other.comps
    }

    /// Inside the capability directory, and no `..` ever left it.
    pub fn is_inside(&self) -> bool {
        self.inside.is_some() && !self.escaped
    }

    /// A `..` stepped outside the capability directory.
    pub fn escapes(&self) -> bool {
        self.escaped
    }

    /// The normalised absolute path (`/cap/src/main.rs`).
    pub fn absolute(&self) -> String {
        join(self.rooted, &self.comps)
    }

    /// Relative to the capability directory (`src/main.rs`, `.` for the
    /// directory itself), when inside it.
    pub fn relative(&self) -> Option<String> {
        let rel = self.relative_components()?;
        Some(if rel.is_empty() {
            ".".to_owned()
        } else {
            rel.join("/")
        })
    }

    /// Relative when inside, absolute otherwise.
    pub fn display(&self) -> String {
        match self.relative() {
            Some(rel) if !self.escaped => rel,
            Some(_) | None => self.absolute(),
        }
    }

    pub(super) fn relative_components(&self) -> Option<Vec<&str>> {
        let start = self.inside?;
        Some(self.comps[start..].iter().map(String::as_str).collect())
    }
}

fn join(rooted: bool, comps: &[String]) -> String {
    let body = comps.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ctx, rule};
    use super::super::{Subject, ToolName};
    use super::*;

    #[test]
    fn paths_are_normalised_lexically_against_the_capability_directory() {
        let c = ctx();
        let p = c.resolve("./src/./a/../b.rs");
        assert_eq!(p.absolute(), "/work/cap/src/b.rs");
        assert_eq!(p.relative().as_deref(), Some("src/b.rs"));
        assert!(p.is_inside());
        assert!(!p.escapes());
        assert_eq!(c.resolve("").relative().as_deref(), Some("."));
        assert_eq!(c.resolve("/work/cap//x/").display(), "x");
        assert_eq!(c.resolve("/").absolute(), "/");
        assert_eq!(c.resolve("/../../etc").absolute(), "/etc");
    }

    #[test]
    fn dot_dot_out_of_the_directory_escapes() {
        let c = ctx();
        for raw in ["../x", "src/../../x", "/work/cap/../x", "a/b/../../../x"] {
            let p = c.resolve(raw);
            assert!(p.escapes(), "{raw}");
            assert!(!p.is_inside(), "{raw}");
        }
        // Leaving and coming back still counts.
        let back = c.resolve("../cap/a.rs");
        assert_eq!(back.absolute(), "/work/cap/a.rs");
        assert!(back.escapes());
        assert!(!back.is_inside());
        // An absolute path outside is outside, not escaped.
        let etc = c.resolve("/etc/passwd");
        assert!(!etc.escapes());
        assert!(!etc.is_inside());
        assert_eq!(etc.display(), "/etc/passwd");
    }

    #[test]
    fn an_escaping_path_never_matches_an_allow_rule_but_still_matches_a_deny_rule() {
        let c = ctx();
        let p = c.resolve("src/../../cap/src/a.rs");
        let subject = Subject::Path {
            tool: ToolName::Read,
            path: &p,
        };
        for text in ["Read", "Read(src/**)", "Read(//work/**)", "Read(~/**)"] {
            let r = rule(text);
            assert!(!r.matches(&subject, true), "{text} allowed an escape");
        }
        let etc = c.resolve("../../etc/passwd");
        let subject = Subject::Path {
            tool: ToolName::Read,
            path: &etc,
        };
        assert!(rule("Read(//etc/**)").matches(&subject, false));
        assert!(rule("Read").matches(&subject, false));
    }

    #[test]
    fn glob_and_grep_are_judged_on_the_directory_they_search() {
        let cap = Anchor::new("/work/cap");
        let s = |path: Option<&str>, pattern: &str| {
            ResolvedPath::resolve_search(&cap, path, Some(pattern))
        };
        assert_eq!(s(None, "src/**/*.rs").display(), "src");
        assert_eq!(s(Some("lib"), "*.rs").display(), "lib");
        assert_eq!(s(None, "**/*.rs").display(), ".");
        assert_eq!(s(Some("x"), "/etc/*").display(), "/etc");
        assert!(s(None, "../*").escapes());
        assert!(s(None, "*/../../x").escapes());
        assert!(!s(None, "src/*/x").escapes());
        assert_eq!(
            ResolvedPath::resolve_search(&cap, Some("docs"), None).display(),
            "docs"
        );
    }
}
