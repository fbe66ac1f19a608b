//! The layout check: nothing the host trusts lies where a teammate can write.
//!
//! A teammate can write every file of its directory. So that directory must
//! not contain the manifest, any component of the team, the teamhost home
//! (team configs, inboxes, tasks, settings) or the component cache (native
//! code the host maps and runs); otherwise a teammate could change what the
//! host runs or reads next. Paths are compared canonically (symlinks and `..`
//! resolved); a path that does not exist yet counts by its nearest existing
//! ancestor, so a home created later inside a teammate's directory is caught
//! too. The one place inside the home a teammate may work is its own
//! worktree, `{home}/worktrees/{team}/{name}` (see [`crate::worktree`]),
//! which holds nothing the host reads as configuration; the folders above
//! it hold the host's records of every worktree and are refused.
//!
//! [`check`] is called by [`Host::spawn`](crate::embed::Host::spawn) for every
//! teammate (so embedders get it too) and by `teamhost run` for the whole
//! manifest before anything starts.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute and canonical: symlinks and `..` resolved through its
/// nearest existing ancestor, the components that do not exist yet appended.
pub fn canonical(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut existing = absolute.as_path();
    let mut rest: Vec<Component> = Vec::new();
    loop {
        if let Ok(found) = resolve(existing) {
            let mut out = found;
            for c in rest.iter().rev() {
                match c {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// The canonical form of `path`, which must exist, as the kernel names
/// the file it opens: one path walk where `realpath` reads each component
/// as a link, a path walk from the root each (a spawn checks about a dozen
/// paths ten components deep). The name comes from `/proc/self/fd`, which
/// the kernel writes from the file it opened; where that name is not a
/// plain absolute path (no `/proc`, a file removed meanwhile, a root
/// outside this process's) it is asked of `realpath` as before.
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)?;
    let named = std::fs::read_link(format!("/proc/self/fd/{}", opened.as_raw_fd()));
    match named {
        Ok(name)
            if name.is_absolute()
                && !name.as_os_str().as_encoded_bytes().ends_with(b" (deleted)") =>
        {
            Ok(name)
        }
        _ => std::fs::canonicalize(path),
    }
}

/// Whether `path` is `dir` or lies below it, compared canonically.
pub fn is_within(path: &Path, dir: &Path) -> bool {
    canonical(path).starts_with(canonical(dir))
}

/// What a protected path is, as errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The team manifest (`team.toml`).
    Manifest,
    /// A teammate component (`.wasm`).
    Component,
    /// The teamhost home.
    Home,
    /// The precompiled component cache.
    Cache,
    /// The model cassettes (recorded model answers replayed to teammates).
    Cassettes,
    /// The host's model config (providers, credentials).
    ModelConfig,
    /// A NATS store's TLS or credentials file (`--store-ca`, `--store-creds`, …).
    StoreSettings,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Manifest => "manifest",
            Kind::Component => "component",
            Kind::Home => "teamhost home",
            Kind::Cache => "component cache",
            Kind::Cassettes => "model cassette directory",
            Kind::ModelConfig => "model config file",
            Kind::StoreSettings => "store TLS or credentials file",
        })
    }
}

/// One path the host trusts, with what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    /// What the path is.
    pub kind: Kind,
    /// The path, as given (errors show it so).
    pub path: PathBuf,
    /// For a home: the folder of its teammates' worktrees, the one place
    /// inside it a teammate may work in (one worktree each). `None` for
    /// everything else, and for a home given without it (no exception).
    worktrees: Option<PathBuf>,
}

impl Protected {
    /// `path`, protected as `kind`.
    pub fn new(kind: Kind, path: impl AsRef<Path>) -> Self {
        Protected {
            kind,
            path: path.as_ref().to_path_buf(),
            worktrees: None,
        }
    }

    /// The teamhost home `home`, whose teammates' worktrees lie in
    /// `worktrees` (`{home}/worktrees`: the home's layout says where, see
    /// `Home::protected_paths`): a directory inside the home is refused
    /// unless it is one teammate's worktree, `{worktrees}/{team}/{name}`.
    pub fn home(home: impl AsRef<Path>, worktrees: impl AsRef<Path>) -> Self {
        Protected {
            worktrees: Some(worktrees.as_ref().to_path_buf()),
            ..Protected::new(Kind::Home, home)
        }
    }
}

/// Checks that `teammate`'s directory `dir` contains none of `protected`,
/// and that it is not inside a protected home (except one teammate's
/// worktree, `{home}/worktrees/{team}/{name}`). The error names both paths and how to fix the layout.
pub fn check(teammate: &str, dir: &Path, protected: &[Protected]) -> Result<(), String> {
    Checker::new(protected).check(teammate, dir)
}

/// [`check`] for many teammates against one list: every protected path is
/// resolved once, each teammate's directory once, and the rest is compared
/// in memory (a thousand teammates cost a thousand resolutions, not a
/// million).
#[derive(Debug, Clone)]
pub struct Checker {
    /// Each protected path with its canonical form (duplicates dropped).
    protected: Vec<Resolved>,
}

/// A protected path with its canonical form, and for a home that of its
/// worktrees' folder.
#[derive(Debug, Clone)]
struct Resolved {
    protected: Protected,
    canonical: PathBuf,
    worktrees: Option<PathBuf>,
}

impl Resolved {
    fn of(p: &Protected) -> Resolved {
        Resolved {
            protected: p.clone(),
            canonical: canonical(&p.path),
            worktrees: p.worktrees.as_deref().map(canonical),
        }
    }
}

impl Checker {
    /// Resolves `protected` once.
    pub fn new(protected: &[Protected]) -> Checker {
        let mut seen = std::collections::HashSet::new();
        let protected = protected
            .iter()
            .filter(|p| seen.insert((p.kind, p.path.clone())))
            .map(Resolved::of)
            .collect();
        Checker { protected }
    }

    /// [`check`] for one teammate.
    pub fn check(&self, teammate: &str, dir: &Path) -> Result<(), String> {
        self.check_also(teammate, dir, &[])
    }

    /// [`Checker::check`] against these paths and `also` (resolved now):
    /// the directory is resolved once for all of them.
    pub fn check_also(&self, teammate: &str, dir: &Path, also: &[Protected]) -> Result<(), String> {
        let dir_c = canonical(dir);
        let also: Vec<Resolved> = also.iter().map(Resolved::of).collect();
        for r in self.protected.iter().chain(&also) {
            let (p, path_c) = (&r.protected, &r.canonical);
            if path_c.starts_with(&dir_c) {
                return Err(format!(
                    "unsafe layout: {teammate}'s directory {} contains the {} {}; a teammate can write everything in its directory, so it could change what the host runs or reads. Move the {} out of {}, or give {teammate} a directory of its own that holds nothing else (for example work/{teammate} beside the manifest)",
                    dir.display(),
                    p.kind,
                    p.path.display(),
                    p.kind,
                    dir.display(),
                ));
            }
            let in_a_worktree = r
                .worktrees
                .as_deref()
                .is_some_and(|w| in_a_worktree(&dir_c, w));
            if p.kind == Kind::Home && dir_c.starts_with(path_c) && !in_a_worktree {
                return Err(format!(
                    "unsafe layout: {teammate}'s directory {} is inside the teamhost home {}, which holds the team's configuration, inboxes and tasks; give {teammate} a directory outside the home",
                    dir.display(),
                    p.path.display(),
                ));
            }
        }
        Ok(())
    }
}

/// Whether `dir_c` (canonical) is one teammate's worktree of the home (or
/// inside one): `{worktrees}/{team}/{name}/…`, `worktrees_c` being the
/// folder's canonical path. Not `worktrees` or a team's folder of
/// worktrees, which hold every teammate's worktree and the host's records
/// of them (see [`crate::worktree`]).
fn in_a_worktree(dir_c: &Path, worktrees_c: &Path) -> bool {
    dir_c
        .strip_prefix(worktrees_c)
        .is_ok_and(|rest| rest.components().count() >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_does_not_exist_counts_by_its_canonical_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
        let later = tmp.path().join("link").join("not-yet").join("home");
        assert!(is_within(&later, &real));
        assert!(is_within(&real.join("a").join("..").join("b"), &real));
        assert!(!is_within(&real.join("..").join("other"), &real));
    }

    #[test]
    fn the_kernels_name_for_a_path_is_realpaths() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir_all(real.join("inner")).unwrap();
        std::fs::write(real.join("file"), "x").unwrap();
        // A name the kernel's own "removed" mark would end with.
        std::fs::write(real.join("odd (deleted)"), "x").unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
        std::os::unix::fs::symlink("../file", real.join("inner").join("rel")).unwrap();
        let link = tmp.path().join("link");
        for path in [
            link.clone(),
            link.join("file"),
            link.join("inner").join("..").join("file"),
            link.join("inner").join("rel"),
            link.join("odd (deleted)"),
            tmp.path().join(".").join("real"),
        ] {
            assert_eq!(
                resolve(&path).unwrap(),
                std::fs::canonicalize(&path).unwrap(),
                "{}",
                path.display()
            );
        }
        for missing in [link.join("nope"), real.join("file").join("below")] {
            assert!(resolve(&missing).is_err(), "{}", missing.display());
        }
    }

    #[test]
    fn each_trusted_path_inside_the_directory_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("project");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("team.toml");
        let e = check("worker", &dir, &[Protected::new(Kind::Manifest, &manifest)]).unwrap_err();
        assert!(e.contains(&dir.display().to_string()), "{e}");
        assert!(e.contains(&manifest.display().to_string()), "{e}");
        assert!(e.contains("Move the manifest out"), "{e}");
        let outside = tmp.path().join("team.toml");
        // What `Home::protected_paths` gives for a home at `home`.
        let mut ok = vec![
            Protected::home(&home, home.join("worktrees")),
            Protected::new(Kind::Cache, home.join("cache").join("components")),
        ];
        ok.push(Protected::new(Kind::Manifest, &outside));
        assert!(check("worker", &dir, &ok).is_ok());
        let e = check("worker", &home.join("teams"), &ok).unwrap_err();
        assert!(e.contains("inside the teamhost home"), "{e}");
        assert!(check("worker", &home.join("worktrees").join("t").join("w"), &ok).is_ok());
        // Not the folder of a team's worktrees: it holds the host's records.
        for above in [home.join("worktrees"), home.join("worktrees").join("t")] {
            let e = check("worker", &above, &ok).unwrap_err();
            assert!(e.contains("inside the teamhost home"), "{e}");
        }
        let e = check("worker", tmp.path(), &ok).unwrap_err();
        assert!(e.contains("contains the teamhost home"), "{e}");
    }
}
