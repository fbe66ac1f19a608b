//! The manifest's build, run with every directory a teammate can write
//! hidden: in a mount namespace of its own, each such directory is covered
//! by an empty read-only tmpfs, so the build cannot run or read a file a
//! teammate wrote, however its command reaches the directory
//! (`cli/run/build.rs` has the checks made before).
//!
//! Making a mount namespace needs `CAP_SYS_ADMIN` (root, as on CI). Where
//! the host lacks it, [`hider`] says so and the build runs without one: the
//! real-path checks of the workdir and the command still hold.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// How the build's view of the teammates' directories is made.
pub(super) enum Hider {
    /// A mount namespace hides these directories (real paths, existing).
    Namespace(Vec<CString>),
    /// No mount namespace can be made here; why.
    Unavailable(String),
}

/// The hider for `dirs` (real paths): a namespace when this host can make
/// one (tried once, in a child that runs `true`).
pub(super) fn hider<'a>(dirs: impl Iterator<Item = &'a Path>) -> Hider {
    let dirs: Vec<CString> = dirs
        .filter(|d| d.is_dir())
        .filter_map(|d| CString::new(d.as_os_str().as_bytes()).ok())
        .collect();
    let mut probe = Command::new("true");
    probe
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure calls only async-signal-safe system calls.
    unsafe {
        probe.pre_exec(private_namespace);
    }
    match probe.status() {
        Ok(s) if s.success() => Hider::Namespace(dirs),
        Ok(s) => Hider::Unavailable(format!("the probe ended with {s}")),
        Err(e) => Hider::Unavailable(e.to_string()),
    }
}

impl Hider {
    /// Sets `command` up to run with the directories hidden (nothing for
    /// [`Hider::Unavailable`]).
    pub(super) fn apply(&self, command: &mut Command) {
        if let Hider::Namespace(dirs) = self {
            let dirs = dirs.clone();
            // SAFETY: between fork and exec the closure calls only
            // `unshare` and `mount` on strings made before the fork.
            unsafe {
                command.pre_exec(move || {
                    private_namespace()?;
                    for d in &dirs {
                        cover(d)?;
                    }
                    Ok(())
                });
            }
        }
    }

    /// Words for the build's line: what the build sees of the teammates'
    /// directories.
    pub(super) fn describe(&self) -> String {
        match self {
            Hider::Namespace(dirs) => format!(
                "{} teammate director{} hidden",
                dirs.len(),
                if dirs.len() == 1 { "y" } else { "ies" }
            ),
            Hider::Unavailable(why) => format!(
                "teammate directories not hidden: no mount namespace here ({why}); the real-path checks still hold"
            ),
        }
    }
}

/// A mount namespace of this process's own, whose mounts do not travel
/// back to the host's.
fn private_namespace() -> io::Result<()> {
    // SAFETY: plain system calls with valid constant arguments.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Covers `dir` with an empty, read-only tmpfs.
fn cover(dir: &CString) -> io::Result<()> {
    // SAFETY: `dir` is a valid C string; the others are constants.
    let rc = unsafe {
        libc::mount(
            c"teamhost-hidden".as_ptr(),
            dir.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"size=4k,mode=0555".as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
