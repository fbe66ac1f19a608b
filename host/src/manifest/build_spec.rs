//! `teammate.build`: how the person builds a teammate's component, as Spin's
//! `[component.build]`. Either a command alone, or a table:
//!
//! ```toml
//! build = "cargo build --release"
//! # or
//! [teammate.build]
//! command = "./build"             # required: run by `sh -c` in workdir
//! workdir = "."                   # default: the manifest's directory
//! watch = ["src/**/*.rs", "Cargo.toml"]  # default: every file under workdir
//! ```
//!
//! `teamhost run` runs the command before anything starts when the component
//! is missing or older than its sources (`cli/run/build.rs`). The command
//! comes from the person's manifest only, and its `workdir` may not lie in a
//! teammate's directory ([`BuildSpec::check`]), so nothing a teammate writes
//! is ever run or read as the build's instructions.
//!
//! | key | default | checked |
//! |---|---|---|
//! | `command` (or the string) | required | not empty |
//! | `workdir` | the manifest's directory | an existing directory, not inside a teammate's directory |
//! | `watch` | every file under `workdir` but build output | relative globs (`*`, `?`, `**`), no `..` |

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// A teammate's build. Paths are absolute once the manifest is parsed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildTable {
    /// The shell command (`sh -c`), run in [`workdir`](Self::workdir).
    pub command: String,
    /// Where it runs. Default (empty): the manifest's directory.
    #[serde(default)]
    pub workdir: PathBuf,
    /// Globs, relative to `workdir`, of the files the component is built
    /// from. Default (empty): every file under `workdir` but build output.
    #[serde(default)]
    pub watch: Vec<String>,
}

/// `teammate.build`: a command string or a [`BuildTable`].
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSpec(pub BuildTable);

impl<'de> Deserialize<'de> for BuildSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = BuildSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a command (build = \"cargo build --release\") or a table with command, workdir and watch")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<BuildSpec, E> {
                Ok(BuildSpec(BuildTable {
                    command: v.to_string(),
                    workdir: PathBuf::new(),
                    watch: Vec::new(),
                }))
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<BuildSpec, M::Error> {
                BuildTable::deserialize(de::value::MapAccessDeserializer::new(map)).map(BuildSpec)
            }
        }
        d.deserialize_any(Either)
    }
}

impl BuildSpec {
    /// Makes `workdir` absolute: `base` joined to it (`base` when empty).
    pub fn resolve_paths(&mut self, base: &Path) {
        self.0.workdir = base.join(&self.0.workdir).components().collect();
    }

    /// The problems of this build, for teammate `who`: an empty command, a
    /// missing workdir, a workdir inside one of the teammates' directories
    /// `teammate_dirs` (a teammate could rewrite what the build reads), a
    /// glob that leaves the workdir.
    pub fn check(&self, who: &str, teammate_dirs: &[&Path], problems: &mut Vec<String>) {
        let b = &self.0;
        if b.command.trim().is_empty() {
            problems.push(format!(
                "{who}: build command is empty; give the command that builds the component, like build = \"cargo build --release\""
            ));
        }
        if !b.workdir.is_dir() {
            problems.push(format!(
                "{who}: build.workdir {} is not a directory; fix the path (relative to the manifest's directory)",
                b.workdir.display()
            ));
        }
        if let Some(dir) = teammate_dirs.iter().find(|d| b.workdir.starts_with(d)) {
            problems.push(format!(
                "{who}: build.workdir {} lies in the teammate directory {}, which a teammate can write: a build there could run what a teammate wrote; build from the project's own directory",
                b.workdir.display(),
                dir.display()
            ));
        }
        for glob in &b.watch {
            let p = Path::new(glob);
            if glob.is_empty()
                || p.is_absolute()
                || p.components().any(|c| c == Component::ParentDir)
            {
                problems.push(format!(
                    "{who}: build.watch {glob:?} must be a glob relative to build.workdir, without '..' (like \"src/**/*.rs\")"
                ));
            }
        }
    }

    /// Whether `rel` (a path relative to `workdir`, `/`-separated) is one
    /// of the watched sources: matches a `watch` glob, or any path without.
    pub fn watches(&self, rel: &str) -> bool {
        self.0.watch.is_empty() || self.0.watch.iter().any(|g| glob_matches(g, rel))
    }
}

/// Whether `path` matches `glob`: `*` and `?` within one path segment, `**`
/// across segments (`src/**/*.rs` matches `src/a.rs` and `src/a/b.rs`).
pub fn glob_matches(glob: &str, path: &str) -> bool {
    let mut re = String::from("^");
    let mut rest = glob;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("**/") {
            re.push_str("(?:.*/)?");
            rest = r;
            continue;
        }
        if let Some(r) = rest.strip_prefix("**") {
            re.push_str(".*");
            rest = r;
            continue;
        }
        match c {
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        rest = &rest[c.len_utf8()..];
    }
    re.push('$');
    regex::Regex::new(&re).is_ok_and(|r| r.is_match(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_within_and_across_segments() {
        assert!(glob_matches("src/**/*.rs", "src/lib.rs"));
        assert!(glob_matches("src/**/*.rs", "src/a/b.rs"));
        assert!(!glob_matches("src/**/*.rs", "tests/a.rs"));
        assert!(glob_matches("*.py", "app.py"));
        assert!(!glob_matches("*.py", "lib/app.py"));
        assert!(glob_matches("Cargo.toml", "Cargo.toml"));
        assert!(!glob_matches("Cargo.toml", "Cargo.tom"));
        assert!(glob_matches("a?c.txt", "abc.txt"));
        assert!(!glob_matches("a.c", "abc"), "a dot is a dot");
    }

    #[test]
    fn a_build_is_a_command_or_a_table_and_unknown_keys_are_errors() {
        #[derive(Deserialize)]
        struct T {
            build: BuildSpec,
        }
        let s: T = toml::from_str("build = \"make\"").unwrap();
        assert_eq!(s.build.0.command, "make");
        let t: T = toml::from_str("[build]\ncommand = \"./build\"\nwatch = [\"*.py\"]").unwrap();
        assert_eq!(t.build.0.watch, ["*.py"]);
        let e = toml::from_str::<T>("[build]\ncommand = \"x\"\nwork_dir = \".\"")
            .err()
            .unwrap();
        assert!(e.to_string().contains("work_dir"), "{e}");
    }

    #[test]
    fn a_workdir_in_a_teammate_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        std::fs::create_dir_all(work.join("bot")).unwrap();
        let mut spec: BuildSpec = BuildSpec(BuildTable {
            command: "make".into(),
            workdir: "work/bot".into(),
            watch: vec!["../x".into()],
        });
        spec.resolve_paths(tmp.path());
        let mut problems = Vec::new();
        spec.check("teammate \"bot\"", &[&work], &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("teammate directory"), "{problems:?}");
        assert!(problems[1].contains("without '..'"), "{problems:?}");
    }
}
