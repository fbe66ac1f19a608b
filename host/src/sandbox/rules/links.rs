//! Where a call's path really leads: [`follow`] walks a path inside the
//! capability directory one component at a time, following every symbolic
//! link on the way (the last component included), and reports the path the
//! links lead to, relative to the directory, or the link that leads out of
//! it. This is the only code in the rules that touches the filesystem; the
//! engine ([`decide_on_disk`](crate::sandbox::policy::decide_on_disk)) stays
//! pure and is handed the result as an [`OnDisk`].
//!
//! A component that does not exist ends the lookup: the rest of the path is
//! taken as spelled (a Write of a new file is judged by its deepest existing
//! parent, with the links in that parent followed). More than
//! [`MAX_LINKS`] links on one path is reported as a loop.
//!
//! The result is advisory: the teammate can swap a link between this lookup
//! and the tool call. The tools open every path through cap-std, which
//! refuses to follow a link out of the directory, so a swapped link can only
//! send the call to another path inside the directory.

use std::collections::VecDeque;
use std::path::{Component, Path};

/// How many symbolic links one lookup follows before calling it a loop
/// (Linux's own limit for one path is 40).
pub const MAX_LINKS: usize = 40;

/// What the filesystem said about a file call's path, looked up before the
/// call is decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnDisk {
    /// Not looked up (a call with no path, a path outside the directory, or
    /// a caller that decides on the spelling alone): rules see the path as
    /// spelled.
    NotLooked,
    /// Following the links inside the directory leads here: a path relative
    /// to the capability directory (`.` for the directory itself), plain
    /// names only.
    Inside(String),
    /// The link `link` (relative to the directory) points at `target`, which
    /// is outside the directory.
    LeadsOut {
        /// The link, relative to the capability directory.
        link: String,
        /// What the link says, as written in it.
        target: String,
    },
    /// More than [`MAX_LINKS`] links on the way (the links loop); `link` is
    /// the last one followed.
    Loop {
        /// The last link followed, relative to the capability directory.
        link: String,
    },
}

/// Follows `rel` (components relative to `root`, already normalised: no
/// `.` or `..`) through the symbolic links inside `root`. `root` is the
/// capability directory as the host bound it (absolute). Errors other than
/// "not found" (a component that is a file, a permission error) also end the
/// lookup, leaving the rest as spelled: the tool call will fail on them.
pub fn follow(root: &Path, rel: &[&str]) -> OnDisk {
    let mut todo: VecDeque<String> = rel.iter().map(|s| (*s).to_owned()).collect();
    let mut done: Vec<String> = Vec::new();
    let mut links = 0usize;
    let mut last_link: Option<(String, String)> = None;
    let mut missing = false;
    while let Some(seg) = todo.pop_front() {
        match seg.as_str() {
            "" | "." => continue,
            ".." => {
                if done.pop().is_none() {
                    let (link, target) = last_link.unwrap_or_default();
                    return OnDisk::LeadsOut { link, target };
                }
                continue;
            }
            _ => done.push(seg),
        }
        if missing {
            continue;
        }
        let here = root.join(done.join("/"));
        let meta = match std::fs::symlink_metadata(&here) {
            Ok(meta) => meta,
            // Not found, not a directory, not readable: the rest is as spelled.
            Err(_) => {
                missing = true;
                continue;
            }
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        let link = done.join("/");
        links += 1;
        if links > MAX_LINKS {
            return OnDisk::Loop { link };
        }
        let Ok(target) = std::fs::read_link(&here) else {
            missing = true;
            continue;
        };
        let shown = target.to_string_lossy().into_owned();
        done.pop();
        let rest: &Path = if target.is_absolute() {
            match target.strip_prefix(root) {
                Ok(rest) => {
                    done.clear();
                    rest
                }
                Err(_) => {
                    return OnDisk::LeadsOut {
                        link,
                        target: shown,
                    }
                }
            }
        } else {
            &target
        };
        for comp in rest.components().rev() {
            let name = match comp {
                Component::Normal(name) => name.to_string_lossy().into_owned(),
                Component::ParentDir => "..".to_owned(),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => continue,
            };
            todo.push_front(name);
        }
        last_link = Some((link, shown));
    }
    OnDisk::Inside(if done.is_empty() {
        ".".to_owned()
    } else {
        done.join("/")
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["secrets", "src", "other", "a/b"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("secrets/key"), "k").unwrap();
        dir
    }

    fn at(dir: &tempfile::TempDir, rel: &str) -> OnDisk {
        let comps: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
        follow(dir.path(), &comps)
    }

    fn inside(rel: &str) -> OnDisk {
        OnDisk::Inside(rel.to_owned())
    }

    #[test]
    fn a_path_with_no_links_is_itself() {
        let dir = tree();
        assert_eq!(at(&dir, "secrets/key"), inside("secrets/key"));
        assert_eq!(at(&dir, ""), inside("."));
        assert_eq!(at(&dir, "src/new.rs"), inside("src/new.rs"));
    }

    #[test]
    fn a_link_to_a_directory_inside_leads_into_it() {
        let dir = tree();
        symlink("secrets", dir.path().join("peek")).unwrap();
        assert_eq!(at(&dir, "peek/key"), inside("secrets/key"));
        assert_eq!(at(&dir, "peek"), inside("secrets"));
    }

    #[test]
    fn a_dot_dot_inside_a_link_target_that_stays_inside_is_followed() {
        let dir = tree();
        symlink("../other", dir.path().join("src/out")).unwrap();
        assert_eq!(at(&dir, "src/out/x.rs"), inside("other/x.rs"));
        symlink("../../secrets/./key", dir.path().join("a/b/k")).unwrap();
        assert_eq!(at(&dir, "a/b/k"), inside("secrets/key"));
    }

    #[test]
    fn a_new_file_under_a_linked_directory_is_judged_by_where_the_link_leads() {
        let dir = tree();
        symlink("secrets", dir.path().join("peek")).unwrap();
        assert_eq!(
            at(&dir, "peek/new/deeper.txt"),
            inside("secrets/new/deeper.txt")
        );
    }

    #[test]
    fn a_dangling_link_leads_to_the_path_it_names() {
        let dir = tree();
        symlink("secrets/not-yet", dir.path().join("dangling")).unwrap();
        assert_eq!(at(&dir, "dangling"), inside("secrets/not-yet"));
    }

    #[test]
    fn links_out_of_the_directory_lead_out() {
        let dir = tree();
        symlink("/etc", dir.path().join("etc")).unwrap();
        symlink("../../..", dir.path().join("a/up")).unwrap();
        assert_eq!(
            at(&dir, "etc/passwd"),
            OnDisk::LeadsOut {
                link: "etc".into(),
                target: "/etc".into()
            }
        );
        assert!(matches!(at(&dir, "a/up/x"), OnDisk::LeadsOut { link, .. } if link == "a/up"));
        // A dangling link out leads out too.
        symlink("/nonexistent/x", dir.path().join("gone")).unwrap();
        assert!(matches!(at(&dir, "gone"), OnDisk::LeadsOut { .. }));
    }

    #[test]
    fn an_absolute_link_back_into_the_directory_stays_inside() {
        let dir = tree();
        let target = dir.path().join("secrets");
        symlink(&target, dir.path().join("abs")).unwrap();
        assert_eq!(at(&dir, "abs/key"), inside("secrets/key"));
    }

    #[test]
    fn links_that_loop_are_reported_as_a_loop() {
        let dir = tree();
        symlink("b", dir.path().join("a1")).unwrap();
        symlink("a1", dir.path().join("b")).unwrap();
        assert!(matches!(at(&dir, "a1/x"), OnDisk::Loop { .. }));
        symlink("self", dir.path().join("self")).unwrap();
        assert!(matches!(at(&dir, "self"), OnDisk::Loop { .. }));
    }
}
