//! A write never brings a deleted team back. Deleting a team removes its
//! directory whole; a writer that still holds the team (a late message, a
//! usage record, a plan, a task) must fail then, not make the directory
//! again: a team dir without `config.json` shows up in listings and confuses
//! every reader. So nothing under a team's files makes more than one level of
//! directory (`mkdir`, never `mkdir -p`): inside a team directory that is
//! gone, that `mkdir` fails with `ENOENT` at the moment of the write, and the
//! writer gets [`Error::TeamDeleted`]. Only creating the team makes its
//! directory.

use std::io::ErrorKind;
use std::path::Path;

use super::paths::TeamPaths;
use crate::error::{Error, Result};

/// [`Error::TeamDeleted`] for the team of `paths`.
pub(super) fn deleted(paths: &TeamPaths) -> Error {
    Error::TeamDeleted {
        team: paths.name().to_string(),
        path: paths.team_dir().to_path_buf(),
    }
}

/// `e`, or [`Error::TeamDeleted`] when the team's directory is gone (a write
/// that failed because its team was deleted under it).
pub(super) fn or_deleted(paths: &TeamPaths, e: Error) -> Error {
    match paths.team_dir().exists() {
        true => e,
        false => deleted(paths),
    }
}

/// Makes `dir`, a directory right inside the team's directory, when it is
/// missing; never the team's directory itself. A `stat` first: a `mkdir`
/// that finds the directory there still takes its parent's lock, which
/// every file made or renamed in the team's directory waits on.
pub(super) fn subdir(paths: &TeamPaths, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(deleted(paths)),
        Err(e) => Err(Error::io("create", dir, e)),
    }
}
