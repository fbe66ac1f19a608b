//! The directory index against the comparison it replaced: by path
//! components, every teammate of the team, through puts and takes.

use std::path::Path;

use super::*;

/// The directories of every kind a teammate could be recorded with:
/// canonical ones, and every way of writing one that is not.
const DIRS: &[&str] = &[
    "/",
    "/w",
    "/w/",
    "/w/a",
    "/w/a/",
    "/w//a",
    "/w/./a",
    "/w/a/.",
    "/w/.",
    "/w/.hidden",
    "/w/.hidden/",
    "/w/a/..",
    "/w/ab",
    "/x",
    ".",
    "./w",
    "w/a",
    "w",
    "",
];

const PATHS: &[&str] = &[
    "/w/a/c.wasm",
    "/w/.hidden/c.wasm",
    "/c.wasm",
    "/w/ab/c.wasm",
    "/w/a",
    "w/a/c.wasm",
    "/w//a/c.wasm",
    "/w/./a/c.wasm",
];

/// A teammate record with only what the index reads: its directory.
fn spawned(dir: &str) -> Spawned {
    Spawned::for_index_tests(dir)
}

/// What the old check compared: every teammate of `team` but `except`,
/// by path components.
fn compared(running: &Running, team: &str, path: &Path, except: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = running
        .iter()
        .filter(|((t, n), _)| t == team && n != except)
        .filter_map(|((_, n), s)| Some((n.clone(), s.member.cwd.clone()?)))
        .filter(|(_, dir)| path.starts_with(dir))
        .collect();
    found.sort();
    found
}

fn held(running: &Running, team: &str, path: &Path, except: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = running
        .holding(team, path, except)
        .into_iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    found.sort();
    found
}

#[tokio::test]
async fn the_index_finds_what_comparing_every_directory_found() {
    let mut running = Running::default();
    for (i, dir) in DIRS.iter().enumerate() {
        running.insert(("t".into(), format!("m{i}")), spawned(dir));
        // Another team's teammates in the same directories never count.
        running.insert(("u".into(), format!("m{i}")), spawned(dir));
    }
    let check = |running: &Running, step: &str| {
        for path in PATHS {
            for except in ["", "m1", "m3"] {
                let path = Path::new(path);
                assert_eq!(
                    held(running, "t", path, except),
                    compared(running, "t", path, except),
                    "{step}: {} except {except:?}",
                    path.display()
                );
            }
        }
    };
    check(&running, "all in");
    assert!(!held(&running, "t", Path::new("/w/a/c.wasm"), "").is_empty());
    // Taken out, one by one and by `retain`; put back under a name taken.
    running.remove(&("t".into(), "m3".into()));
    check(&running, "m3 out");
    running.retain(|(_, n), _| n != "m0" && n != "m5");
    check(&running, "m0 and m5 out");
    running.insert(("t".into(), "m1".into()), spawned("/x"));
    check(&running, "m1 moved");
    // A killed teammate's new state: the only change made in place.
    let killed = tokio::sync::watch::channel(crate::teammate::TeammateState::Killed).1;
    assert!(running.set_state(&("t".into(), "m2".into()), killed.clone()));
    assert!(!running.set_state(&("t".into(), "nobody".into()), killed));
    assert!(running[&("t".to_string(), "m2".to_string())]
        .state
        .borrow()
        .is_finished());
    check(&running, "m2 killed");
    running.retain(|_, _| false);
    assert!(running.dirs.is_empty() && running.recorded.is_empty() && running.crooked.is_empty());
    check(&running, "none");
}

#[test]
fn canonical_paths_are_plain_and_crooked_ones_are_not() {
    for p in ["/", "/w", "/w/a", "/w/.hidden", "/w/a/..", "w/a"] {
        assert!(plain(p), "{p}");
    }
    for p in ["", "/w/", "/w//a", "/w/./a", "/w/a/.", ".", "./w"] {
        assert!(!plain(p), "{p}");
    }
}
