//! The kernel confinement `Bash` runs under: a Landlock rule set built once
//! in the host (at [`ToolBox::open`](super::ToolBox::open)) and applied by
//! each child between `fork` and `exec` (`enter`).
//!
//! # The rule set
//!
//! Handled: every filesystem right of Landlock ABI 6 (the newest teamhost
//! asks for), TCP bind and connect (ABI ≥ 4), and the abstract-socket and
//! signal scopes (ABI ≥ 6). Whatever is handled and not granted below is
//! denied.
//!
//! | path | granted |
//! |---|---|
//! | the capability directory | everything: read, write, create, remove, rename, execute, truncate |
//! | `/usr`, `/bin`, `/sbin`, `/lib`, `/lib32`, `/lib64`, `/libx32` | read and execute (merged-`/usr` links resolve to `/usr`) |
//! | [`ETC`]: the loader cache, users and groups, time zone, `gitconfig`, … | read (not all of `/etc`: it holds `shadow` and keys, and the host may run as root) |
//! | `/dev/null` | read, write, truncate (`> /dev/null`) |
//! | `/dev/zero`, `/dev/random`, `/dev/urandom` | read |
//! | TCP ports | none: no `bind`, no `connect` (ABI ≥ 4; UDP and Unix sockets are not covered by Landlock) |
//! | processes outside the sandbox | no signals, no abstract Unix sockets (ABI ≥ 6) |
//!
//! Nothing else: not `/tmp`, not `/proc`, not `/home`, not `/dev/tty`.
//! Programs that need a temporary directory must be given one inside the
//! capability directory (`TMPDIR=.tmp`).
//!
//! Besides Landlock, the child sets `no_new_privs` (no setuid gains, which
//! Landlock needs anyway) and drops every capability, so a host running as
//! root does not hand root's powers (modules, mounts, raw sockets, ignoring
//! file modes) to a teammate.
//!
//! # When the kernel offers less
//!
//! ABI 3 (Linux 6.2) is the minimum for [`Confinement::Required`]: below
//! it Landlock cannot stop `truncate` of a file outside the directory, so
//! the confinement would be partial. Without it, Bash is refused outside
//! `bypassPermissions` ([`ToolError::Unconfined`](super::ToolError)); in
//! `bypassPermissions` it runs with whatever there is, and says so
//! ([`Enforcement`]).
//!
//! [`Confinement::Required`]: super::Confinement::Required

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use cap_std::fs::Dir;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetError, Scope, ABI,
};

/// The newest Landlock ABI whose rights teamhost asks for.
const TARGET: ABI = ABI::V6;

/// The least kernel ABI that confines fully (see the module docs).
pub const MIN_ABI: i32 = 3;

/// System trees granted read and execute.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What of `/etc` is readable: what the loader, `id`, `date` and `git`
/// read. Missing entries are skipped.
pub const ETC: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/alternatives",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/gitconfig",
    "/etc/mime.types",
    "/etc/magic",
];

/// How Bash was (or would be) confined on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enforcement {
    /// Landlock confines the process to the capability directory.
    Landlock {
        /// The kernel's Landlock ABI.
        abi: i32,
        /// TCP bind and connect are blocked too (ABI ≥ 4).
        network: bool,
        /// Signals and abstract sockets cannot leave the sandbox (ABI ≥ 6).
        scoped: bool,
    },
    /// No kernel confinement: why.
    Unconfined {
        /// A sentence for the teammate and the log.
        reason: String,
    },
}

/// The prepared rule set (its descriptor), or why there is none.
#[derive(Debug)]
pub(crate) struct Landlock {
    ruleset: Option<OwnedFd>,
    enforcement: Enforcement,
}

impl Landlock {
    /// Probes the kernel and builds the rule set for `dir`.
    pub(crate) fn prepare(dir: &Dir) -> Landlock {
        let abi = kernel_abi();
        if abi < MIN_ABI {
            let reason = if abi <= 0 {
                "the kernel offers no Landlock (not built in, or not enabled at boot)".to_owned()
            } else {
                format!(
                    "the kernel offers Landlock ABI {abi} only, and teamhost needs ABI \
                     {MIN_ABI} (Linux 6.2) to confine a process fully"
                )
            };
            return Landlock::unconfined(reason);
        }
        match build(dir, abi) {
            Ok(created) => Landlock {
                ruleset: created.into(),
                enforcement: Enforcement::Landlock {
                    abi,
                    network: abi >= 4,
                    scoped: abi >= 6,
                },
            },
            Err(e) => Landlock::unconfined(format!("building the Landlock rule set failed: {e}")),
        }
    }

    fn unconfined(reason: String) -> Landlock {
        Landlock {
            ruleset: None,
            enforcement: Enforcement::Unconfined { reason },
        }
    }

    /// What a child gets.
    pub(crate) fn enforcement(&self) -> Enforcement {
        self.enforcement.clone()
    }

    /// The rule set's descriptor, for [`enter`].
    pub(crate) fn raw_fd(&self) -> Option<RawFd> {
        self.ruleset.as_ref().map(AsRawFd::as_raw_fd)
    }
}

fn build(dir: &Dir, abi: i32) -> Result<RulesetCreated, RulesetError> {
    let all = AccessFs::from_all(TARGET);
    let read = AccessFs::from_read(TARGET);
    let mut ruleset = Ruleset::default().handle_access(all)?;
    if abi >= 4 {
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET))?;
    }
    if abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(TARGET))?;
    }
    let mut created = ruleset
        .create()?
        .add_rule(PathBeneath::new(dir.as_fd(), all))?;
    let file = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let devices: [(&str, BitFlags<AccessFs>); 4] = [
        ("/dev/null", file),
        ("/dev/zero", AccessFs::ReadFile.into()),
        ("/dev/random", AccessFs::ReadFile.into()),
        ("/dev/urandom", AccessFs::ReadFile.into()),
    ];
    let system = SYSTEM.iter().chain(ETC).map(|p| (*p, read));
    for (path, access) in system.chain(devices) {
        let Ok(fd) = PathFd::new(path) else { continue };
        // Directory-only rights (listing) do not apply to a file.
        let access = if Path::new(path).is_dir() {
            access
        } else {
            access & AccessFs::from_file(TARGET)
        };
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    Ok(created)
}

/// The kernel's Landlock ABI version, 0 when it has none.
pub fn kernel_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call
    // reads and writes no memory; it only returns the ABI (or -1).
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// Runs in the child between `fork` and `exec`: `cd` into the capability
/// directory, set `no_new_privs`, move the command into a PID namespace of its
/// own where the kernel allows it ([`enter_pid_namespace`]), drop every
/// capability, then enter the Landlock domain when `ruleset` is given.
///
/// The host is multithreaded, so after `fork` only async-signal-safe calls
/// are sound: another thread may have held the allocator's lock at the
/// moment of the fork, and the child has a copy of that locked lock and no
/// thread to release it. Everything here is therefore a raw system call on
/// integers and stack memory (no allocation, no lock, no `landlock` crate
/// call: its `restrict_self` consumes a value whose drop and error paths are
/// not documented as allocation-free). The rule set itself, which needs
/// allocation and path lookups, was built in the parent.
pub(crate) fn enter(dir: RawFd, ruleset: Option<RawFd>) -> io::Result<()> {
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

    let check = |r: libc::c_long| {
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY: each call is a plain system call on a descriptor the parent
    // keeps open for the duration of the spawn, or on structures on this
    // stack frame of the sizes the kernel expects.
    unsafe {
        check(libc::fchdir(dir).into())?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into())?;
        enter_pid_namespace()?;
        let header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()))?;
        if let Some(fd) = ruleset {
            check(libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32))?;
        }
    }
    Ok(())
}

/// Makes the shell the init of a new PID namespace, so that when it exits —
/// or the timeout kills its process group — the kernel kills every process
/// left in the namespace, including ones that left the group with `setsid`.
///
/// `unshare(CLONE_NEWPID)` only affects children, so this forks once more:
/// the current process stays behind as a plain waiter (it closes every
/// descriptor and runs no command, only `close_range`, `waitpid` and `_exit`,
/// all async-signal-safe) and exits with the shell's status; the child, pid 1 of the namespace, returns and goes on to
/// `exec` the shell. Where the kernel refuses the namespace (no
/// `CAP_SYS_ADMIN` and no user namespaces), the command runs without one, as
/// before: its process group is still killed, a `setsid` child can outlive it.
///
/// # Safety
///
/// Call only between `fork` and `exec` (see [`enter`]).
unsafe fn enter_pid_namespace() -> io::Result<()> {
    // SAFETY: raw system calls on integers and a stack variable; this process
    // is single-threaded (a fresh fork) and never returns from the waiting
    // branch.
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            return Ok(()); // not permitted here: carry on without a namespace
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            return Ok(()); // pid 1 of the new namespace: exec the shell
        }
        // The waiter holds no descriptor: not the pipes (the host sees their
        // end when the command's processes close them) and above all not the
        // close-on-exec pipe through which `Command::spawn` learns that the
        // exec happened — this process never execs, so holding it would keep
        // `spawn` waiting for as long as the command runs.
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..4096 {
                libc::close(fd);
            }
        }
        let mut status: libc::c_int = 0;
        loop {
            let r = libc::waitpid(pid, &mut status, 0);
            if r == pid {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        // Killed by a signal: die of the same one, so the host sees it.
        let sig = libc::WTERMSIG(status);
        libc::signal(sig, libc::SIG_DFL);
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}
