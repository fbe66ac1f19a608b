//! The directories a teammate can write, as the manifest's `build` must see
//! them: by their **real paths** (every `..` and link resolved), because a
//! lexical comparison takes `work/../work/mallory`, or a link to
//! `work/mallory`, for a directory of the project.
//!
//! | who | what it can write |
//! |---|---|
//! | a `[[teammate]]` without isolation | its `cwd` (default `work/{name}`) |
//! | the lead component | its `cwd` (default `work/team-lead`) |
//! | a teammate a lead spawns | its catalogue entry's `cwd`, else `work/{name}` for a name the lead picks: all of `work/` |
//! | every teammate | the home (`{home}`: worktrees, state, journals), added at run time |
//!
//! A path not yet made (a default `work/{name}`) is resolved through its
//! longest existing ancestor. Each directory is kept twice, lexically
//! normalised and real, and a path lies in it when either of its own two
//! forms does: a link a teammate plants inside its directory cannot make
//! a path that names the directory look like one outside it, and a link
//! to the directory cannot make one outside look inside.

use std::path::{Component, Path, PathBuf};

/// The directories teammates can write; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct Reachable {
    /// (as written, normalised; real)
    dirs: Vec<(PathBuf, PathBuf)>,
}

impl Reachable {
    /// No directory.
    pub fn new() -> Reachable {
        Reachable::default()
    }

    /// Adds `dir` (absolute, or relative to the current directory).
    pub fn add(&mut self, dir: &Path) {
        let lexical = normalise(&absolute(dir));
        let real = real_path(dir);
        if !self.dirs.iter().any(|(l, r)| *l == lexical && *r == real) {
            self.dirs.push((lexical, real));
        }
    }

    /// The teammate directory `path` lies in (or is), if any, by either
    /// form of both.
    pub fn holding(&self, path: &Path) -> Option<&Path> {
        let lexical = normalise(&absolute(path));
        let real = real_path(path);
        self.dirs
            .iter()
            .find(|(l, r)| {
                [&lexical, &real]
                    .iter()
                    .any(|p| p.starts_with(l) || p.starts_with(r))
            })
            .map(|(l, _)| l.as_path())
    }

    /// The real paths, for excluding or hiding them.
    pub fn real_dirs(&self) -> impl Iterator<Item = &Path> {
        self.dirs.iter().map(|(_, r)| r.as_path())
    }

    /// Whether `real`, a real path (no link in it), is one of the
    /// directories or lies in one.
    pub fn holds_real(&self, real: &Path) -> bool {
        self.dirs.iter().any(|(_, r)| real.starts_with(r))
    }
}

/// `path` made absolute against the current directory.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `path` with `.` dropped and `..` taken back lexically.
pub fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The real path of `path`: [`crate::layout::canonical`] (its nearest
/// existing ancestor canonicalised, links and `..` resolved by the kernel,
/// the rest appended).
pub fn real_path(path: &Path) -> PathBuf {
    crate::layout::canonical(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_links_are_seen_through() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("work/mallory")).unwrap();
        std::fs::create_dir_all(base.join("src")).unwrap();
        std::os::unix::fs::symlink(base.join("work/mallory"), base.join("alias")).unwrap();
        let mut r = Reachable::new();
        r.add(&base.join("work/mallory"));
        assert!(r.holding(&base.join("work/../work/mallory")).is_some());
        assert!(r.holding(&base.join("work/mallory/sub")).is_some());
        assert!(r.holding(&base.join("alias")).is_some(), "a link to it");
        assert!(r.holding(&base.join("alias/x/y")).is_some());
        assert!(r.holding(&base.join("src")).is_none());
        assert!(
            r.holding(&base.join("work")).is_none(),
            "a parent is not in it"
        );
        assert!(r.holding(&base.join("work/mallory2")).is_none());
    }

    #[test]
    fn a_link_inside_the_directory_does_not_take_a_path_out_of_it() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("work/mallory")).unwrap();
        std::fs::create_dir_all(base.join("src")).unwrap();
        // Mallory plants work/mallory/out -> ../../src.
        std::os::unix::fs::symlink(base.join("src"), base.join("work/mallory/out")).unwrap();
        let mut r = Reachable::new();
        r.add(&base.join("work/mallory"));
        assert!(
            r.holding(&base.join("work/mallory/out")).is_some(),
            "named through the teammate's directory: it can retarget the link"
        );
    }

    #[test]
    fn a_directory_not_made_yet_is_resolved_through_its_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        let mut r = Reachable::new();
        r.add(&base.join("link/work/bob"));
        let real = std::fs::canonicalize(base.join("real")).unwrap();
        assert!(r.holding(&real.join("work/bob/x")).is_some());
        assert!(r.holds_real(&real.join("work/bob")));
        assert!(!r.holds_real(&real.join("work")));
    }
}
