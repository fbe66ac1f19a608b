//! No set-uid or set-gid file stays in a teammate's directory.
//!
//! Bash runs as the host's user (often root), and the owner of a file may
//! set its set-uid bit without any capability: a set-uid-root binary left in
//! the directory would be root for every local user afterwards. The seccomp
//! filter refuses the bits where Bash asks for them ([`super::seccomp`]);
//! this is the backstop for a bit that got there anyway (the user's own
//! file, a kernel without the filter, Bash in `bypassPermissions` on a
//! machine without seccomp). The disk walk ([`super::usage`]), which runs
//! after every Bash call and every turn and already reads every entry's
//! metadata, calls [`clear`] on each regular file that has one of the bits.
//!
//! | the file | what is done |
//! |---|---|
//! | one name (link count 1) | opened without following a symlink, checked on the open descriptor, then `fchmod` without `S_ISUID` and `S_ISGID` |
//! | more than one name (a hard link to a file elsewhere) | never `chmod`ed (it may be a file outside the directory, a system binary even): this name is removed, if it still names that file |
//! | one the host cannot open or change (a host that is not root, another user's file) | left as it is, logged: the only name of someone's file is never removed, and what the host cannot change Bash (the same user, without capabilities) cannot write either; a write by anyone but its owner clears the bits anyway (the kernel does, for a writer without `CAP_FSETID`) |
//!
//! Each is logged (`warn`). Directories keep their set-gid bit: it only
//! makes new entries inherit the directory's group, and grants nothing.
//! File capabilities (`security.capability`) are not looked for: setting
//! one needs `CAP_SETFCAP`, which Bash never has (every capability is
//! dropped and no user namespace can be made), and the filter refuses every
//! `setxattr` besides.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use cap_primitives::fs::FollowSymlinks;
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};

use super::show;

/// `S_ISUID | S_ISGID`.
pub const SET_ID: u32 = 0o6000;

/// What [`clear`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleared {
    /// The bits were cleared; the file keeps its other permissions.
    Bits,
    /// The name was removed (a hard-linked file: its content stays with its
    /// other names).
    Removed,
    /// Nothing was needed (the file changed since it was looked at), or
    /// nothing could be done (logged).
    Nothing,
}

/// Clears the set-id bits of the regular file `name` in `dir` (`rel` is its
/// path in the teammate's directory, for the log); see the module docs.
pub fn clear(dir: &Dir, name: &Path, rel: &Path) -> Cleared {
    match clear_bits(dir, name) {
        Ok(Some((before, after))) => {
            tracing::warn!(
                "cleared the set-uid/set-gid bits of {} in a teammate's directory (mode {before:o} -> {after:o})",
                show(rel)
            );
            Cleared::Bits
        }
        Ok(None) => Cleared::Nothing,
        Err(Refusal::Linked(why)) => remove(dir, name, rel, &why),
        Err(Refusal::Untouchable(why)) => {
            tracing::warn!(
                "a set-uid/set-gid file in a teammate's directory is left as it is: {} ({why})",
                show(rel)
            );
            Cleared::Nothing
        }
    }
}

/// Why [`clear_bits`] did not clear the bits.
enum Refusal {
    /// More than one name: this one goes instead.
    Linked(String),
    /// The host cannot open or change it: it stays.
    Untouchable(String),
}

/// Opens `name` (no symlink followed, non-blocking) and clears its bits on
/// the descriptor: `Some((before, after))`, `None` when it no longer has
/// them or is no longer a regular file, a [`Refusal`] otherwise.
fn clear_bits(dir: &Dir, name: &Path) -> Result<Option<(u32, u32)>, Refusal> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        ._cap_fs_ext_follow(FollowSymlinks::No);
    let file = dir
        .open_with(name, &options)
        .map_err(|e| Refusal::Untouchable(format!("it cannot be opened ({e})")))?;
    let meta = file
        .metadata()
        .map_err(|e| Refusal::Untouchable(format!("it cannot be inspected ({e})")))?;
    let mode = meta.mode();
    if !meta.is_file() || mode & SET_ID == 0 {
        return Ok(None);
    }
    if meta.nlink() > 1 {
        return Err(Refusal::Linked(format!(
            "it has {} names (a hard link may lead outside the directory)",
            meta.nlink()
        )));
    }
    let after = mode & 0o7777 & !SET_ID;
    // SAFETY: fchmod on a descriptor this function owns.
    if unsafe { libc::fchmod(file.as_raw_fd(), after) } != 0 {
        return Err(Refusal::Untouchable(format!(
            "its mode cannot be changed ({})",
            io::Error::last_os_error()
        )));
    }
    Ok(Some((mode & 0o7777, after)))
}

/// Removes `name` when it still is a set-id regular file; logs either way.
fn remove(dir: &Dir, name: &Path, rel: &Path, why: &str) -> Cleared {
    let still = dir
        .symlink_metadata(name)
        .is_ok_and(|m| m.is_file() && m.mode() & SET_ID != 0);
    if !still {
        return Cleared::Nothing;
    }
    match dir.remove_file(name) {
        Ok(()) => {
            tracing::warn!(
                "removed {} from a teammate's directory: a set-uid/set-gid file whose bits could \
                 not be cleared, because {why}",
                show(rel)
            );
            Cleared::Removed
        }
        Err(e) => {
            tracing::error!(
                "{} in a teammate's directory is set-uid/set-gid, its bits could not be cleared \
                 ({why}) and it could not be removed ({e})",
                show(rel)
            );
            Cleared::Nothing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    #[test]
    fn a_set_uid_file_keeps_its_content_and_other_bits_and_loses_set_id() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("x");
        std::fs::write(&file, "payload").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o6755)).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        assert_eq!(clear(&dir, Path::new("x"), Path::new("x")), Cleared::Bits);
        assert_eq!(mode(&file), 0o755);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "payload");
    }

    #[test]
    fn a_hard_linked_set_uid_file_is_never_chmoded_its_name_here_goes() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(tmp.path().join("dir")).unwrap();
        std::fs::write(&outside, "system binary").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o4755)).unwrap();
        std::fs::hard_link(&outside, tmp.path().join("dir/link")).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path().join("dir"), ambient_authority()).unwrap();
        assert_eq!(
            clear(&dir, Path::new("link"), Path::new("link")),
            Cleared::Removed
        );
        assert_eq!(mode(&outside), 0o4755, "the other name's file is untouched");
        assert!(!tmp.path().join("dir/link").exists());
    }

    #[test]
    fn a_symlink_to_a_set_uid_file_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "x").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o4755)).unwrap();
        std::os::unix::fs::symlink(&target, tmp.path().join("link")).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        // The walk never hands a symlink over, but a name swapped for one
        // between the walk's look and this call must not be followed.
        clear(&dir, Path::new("link"), Path::new("link"));
        assert_eq!(mode(&target), 0o4755);
        assert!(tmp.path().join("link").symlink_metadata().is_ok());
    }
}
