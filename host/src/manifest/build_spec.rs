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
//! comes from the person's manifest only; its `workdir` may not lie in a
//! directory a teammate can write, nor may its command name one, compared
//! by real path ([`BuildSpec::check`], `manifest/reachable.rs`), checked
//! with the manifest and again before the build runs; and the build runs
//! with those directories hidden (`cli/run/build.rs`). So nothing a
//! teammate writes is ever run or read as the build's instructions.
//!
//! | key | default | checked |
//! |---|---|---|
//! | `command` (or the string) | required | not empty |
//! | `workdir` | the manifest's directory | an existing directory, not in (by real path) a directory a teammate can write |
//! | (the command) | | names no path in a directory a teammate can write |
//! | `watch` | every file under `workdir` but build output | relative globs (`*`, `?`, `**`), no `..` |

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::reachable::Reachable;

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
    /// missing workdir, a workdir in (or through) a directory a teammate
    /// can write (`reachable`, compared by real path: `..` and links
    /// resolved), a command naming such a directory or a file in one, a
    /// glob that leaves the workdir.
    pub fn check(&self, who: &str, reachable: &Reachable, problems: &mut Vec<String>) {
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
        problems.extend(self.reach_problems(who, reachable));
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

    /// The problems of this build against the directories teammates can
    /// write: its workdir, and every path-like word of its command
    /// (resolved against the workdir), may not lie in one. Checked with
    /// the manifest and again just before the build runs, with the home.
    pub fn reach_problems(&self, who: &str, reachable: &Reachable) -> Vec<String> {
        let b = &self.0;
        let mut problems = Vec::new();
        if let Some(dir) = reachable.holding(&b.workdir) {
            problems.push(format!(
                "{who}: build.workdir {} lies in {}, a directory a teammate can write (compared by real path: '..' and links resolved): a build there could run what a teammate wrote; build from the project's own directory",
                b.workdir.display(),
                dir.display()
            ));
            // Its words would all be read in that directory: one problem.
            return problems;
        }
        for word in command_words(&b.command) {
            let path = b.workdir.join(expand_tilde(word));
            if let Some(dir) = reachable.holding(&path) {
                problems.push(format!(
                    "{who}: build command {:?} names {word:?}, in {}, a directory a teammate can write: the build must never run or read a teammate's file; build from the project's own files",
                    b.command,
                    dir.display()
                ));
            }
        }
        problems
    }

    /// Whether `rel` (a path relative to `workdir`, `/`-separated) is one
    /// of the watched sources: matches a `watch` glob, or any path without.
    pub fn watches(&self, rel: &str) -> bool {
        self.0.watch.is_empty() || self.0.watch.iter().any(|g| glob_matches(g, rel))
    }
}

/// The words of a shell command that could name a path: split at blanks
/// and at the shell's operators (`;`, `&`, `|`, `(`, `)`, `<`, `>`,
/// backquotes, `$(`), quotes dropped, and each word also cut at `=` and `:`
/// (`--manifest-path=work/x`, `PATH=a:b`). An option's word is also read
/// without its dashes and without its dashes and first letter, for a value
/// glued to a short option (`make -Cwork/x`). Over-inclusive on purpose: a
/// word that is no path names nothing a teammate can write.
pub fn command_words(command: &str) -> Vec<&str> {
    command
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ';' | '&' | '|' | '(' | ')' | '<' | '>' | '`' | '$' | '{' | '}'
                )
        })
        .flat_map(|w| w.split(['=', ':', ',']))
        .map(|w| w.trim_matches(|c| matches!(c, '\'' | '"' | '\\')))
        .flat_map(|w| {
            let bare = w.trim_start_matches('-');
            let glued = (bare.len() < w.len())
                .then(|| bare.char_indices().nth(1).map(|(i, _)| &bare[i..]))
                .flatten();
            [Some(bare), glued]
        })
        .flatten()
        .filter(|w| !w.is_empty())
        .collect()
}

/// `word` as the shell would read a leading `~/` (the user's home), else
/// as it is.
fn expand_tilde(word: &str) -> std::path::PathBuf {
    match (word.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(word),
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
        let mut reachable = Reachable::new();
        reachable.add(&work);
        let mut problems = Vec::new();
        spec.check("teammate \"bot\"", &reachable, &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("a teammate can write"), "{problems:?}");
        assert!(problems[1].contains("without '..'"), "{problems:?}");
    }

    /// `..`, a link and the command itself.
    #[test]
    fn a_workdir_through_dot_dot_or_a_link_and_a_command_naming_a_teammate_file_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("work/mallory")).unwrap();
        std::os::unix::fs::symlink(base.join("work/mallory"), base.join("tools")).unwrap();
        let mut reachable = Reachable::new();
        reachable.add(&base.join("work/mallory"));
        let problems = |command: &str, workdir: &str| {
            let mut spec = BuildSpec(BuildTable {
                command: command.into(),
                workdir: workdir.into(),
                watch: Vec::new(),
            });
            spec.resolve_paths(base);
            spec.reach_problems("t", &reachable)
        };
        assert_eq!(problems("make", "work/../work/mallory").len(), 1);
        assert_eq!(problems("make", "tools").len(), 1);
        assert_eq!(problems("make", "work/./mallory/").len(), 1);
        for command in [
            "sh work/mallory/build.sh",
            "cd work/mallory && sh build.sh",
            "sh ./work/../work/mallory/build.sh",
            "sh tools/build.sh",
            "cargo build --manifest-path=work/mallory/Cargo.toml",
            "PATH=work/mallory:$PATH make",
            "sh \"work/mallory/b.sh\"",
            "(cd work/mallory; make)",
            "make -Cwork/mallory",
            "git --git-dir=tools/.git log",
        ] {
            assert!(!problems(command, ".").is_empty(), "{command:?}");
        }
        assert!(problems("cargo build --release", ".").is_empty());
        assert!(problems("sh build.sh && cp target/x.wasm out/", ".").is_empty());
        // In work/, a bare name is resolved against the workdir too.
        assert!(!problems("sh mallory/build.sh", "work").is_empty());
    }
}
