//! The kernel confinement `Bash` runs under: a Landlock rule set built once
//! in the host (at [`ToolBox::open`](super::ToolBox::open)), a seccomp filter
//! ([`super::seccomp`]), a control group per call ([`super::cgroup`]),
//! resource limits and namespaces, all applied by each child between `fork`
//! and `exec` ([`enter`], which lists the order).
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
//! | the capability directory | read, write, create, remove, rename, execute, truncate: everything but making (or renaming, or linking in) a FIFO, a socket or a device node |
//! | `/usr`, `/bin`, `/sbin`, `/lib`, `/lib32`, `/lib64`, `/libx32` | read and execute (merged-`/usr` links resolve to `/usr`) |
//! | [`ETC`]: the loader cache, users and groups, time zone, `gitconfig`, … | read (not all of `/etc`: it holds `shadow` and keys, and the host may run as root) |
//! | `/dev/null` | read, write, truncate (`> /dev/null`) |
//! | `/dev/zero`, `/dev/random`, `/dev/urandom` | read |
//! | TCP ports | none: no `bind`, no `connect` (ABI ≥ 4); a teammate with a network: `connect` to [`super::netns::PROXY_PORT`] only, in a namespace where only its proxy listens |
//! | processes outside the sandbox | no signals, no abstract Unix sockets (ABI ≥ 6) |
//!
//! Nothing else: not the host's `/tmp`, not `/proc`, not `/home`, not
//! `/dev/tty`.
//!
//! # Beside Landlock
//!
//! | what | mechanism | where it is missing |
//! |---|---|---|
//! | Unix sockets by path, UDP, netlink, io_uring, new namespaces, mounts, keyrings, System V IPC | the seccomp filter of [`super::seccomp`] | Bash is unconfined: refused outside `bypassPermissions` |
//! | root's powers | `no_new_privs`; every capability dropped: effective, permitted, inheritable, ambient and the bounding set; the securebits `NOROOT`, `NO_SETUID_FIXUP`, `KEEP_CAPS` and `NO_CAP_AMBIENT_RAISE` set and locked, so no `exec` as uid 0 gives any back | a host without `CAP_SETPCAP` (not root) cannot drop the bounding set or set the securebits; its Bash has no capability to begin with, and `no_new_privs` keeps it so |
//! | set-uid and set-gid files (the owner sets the bits without any capability) | the filter refuses the bits in `chmod` and in creating opens; the disk walk clears what got there anyway ([`super::setid`]) | — |
//! | special files (a FIFO, socket or device node holds whoever opens it) | not granted in the directory (above); the filter refuses `mknod` | — |
//! | descriptors the host holds (lock files, sockets, the rule set) | every descriptor above 2 is close-on-exec | — |
//! | processes that outlive the call (`setsid`, double fork) | a PID namespace: the kernel kills them with the shell | only the process group is killed (needs `CAP_SYS_ADMIN`) |
//! | processes that outlive the host (killed, crashed, or gone mid-call) | the parent-death signal: the whole call tree dies with the host (see [below](#when-the-host-dies)); the next host to start removes the call's group ([`super::cgroup`]) | the shell dies with the host; what it started lives on, confined and in the call's group, until it ends, `RLIMIT_CPU` stops it, or the next host start kills it with the group |
//! | host paths in `pwd`, `$HOME`, `$TMPDIR` | a mount namespace: the directory is bind-mounted at [`VIRTUAL_ROOT`] (`/tmp`) | the command sees the host path of its directory |
//! | host System V IPC | an IPC namespace, and the filter | the filter alone |
//! | process count, memory of the tree | a control group per call ([`super::cgroup`]): `bash_processes`, `bash_memory_bytes` | no process bound; memory per process (`RLIMIT_AS`) |
//! | CPU, file size, descriptors, core dumps | `RLIMIT_CPU`, `RLIMIT_FSIZE`, `RLIMIT_NOFILE`, `RLIMIT_CORE = 0`, per process | — |
//! | wall time | the call's timeout kills the process group (and the namespace); the host's death kills the tree | without namespaces, see the row on the host above |
//!
//! # When the host dies
//!
//! Nothing a host starts for Bash outlives it, however it ends: a host that
//! is `SIGKILL`ed runs no code, so the kernel must do it. Each process of the
//! call's chain gets `PR_SET_PDEATHSIG(SIGKILL)`, the signal the kernel sends
//! a process when its parent thread ends:
//!
//! | process | its parent | set where |
//! |---|---|---|
//! | the child the host forks (the waiter with namespaces, else the shell) | the host thread that runs the call | first thing in `enter`, then `getppid()` must still be the host's pid, taken before the fork (`ChildPlan::host_pid`); if the host died before the `prctl`, no signal would come, so the child exits there |
//! | pid 1 of the call's PID namespace (the shell) | the waiter | right after the waiter's fork, in `enter_namespaces`; `getppid()` is 0 there (the parent is outside the namespace), so the waiter's death is seen on a pipe instead: the waiter holds its write end, and the child exits if the pipe has hung up after its `prctl` |
//!
//! The host dies → the waiter gets `SIGKILL` → pid 1 gets `SIGKILL` (a
//! signal from an ancestor namespace reaches a namespace's init) → the kernel
//! kills every process left in the namespace, `setsid` and double forks
//! included. The signal survives the rest of `enter` and the `exec`: it is
//! cleared only by an `exec` that gains privileges (never: `no_new_privs`)
//! and by credentials that change ids or gain capabilities (dropping them
//! does not).
//!
//! The parent is a *thread*, so the signal would also come if the spawning
//! thread ended while the host lived on. It does not:
//! [`ToolBox::bash`](super::ToolBox::bash) is synchronous, and the thread
//! that spawns the shell (a blocking-pool thread of the runtime) is the one
//! that pumps its output and reaps it, and returns only after that (or
//! unwinds through the guard that kills and reaps it); a blocking-pool
//! thread ends only between tasks. So the signal comes exactly when the host
//! process dies, or when it exits normally while a call runs.
//!
//! Why the parent-death signal: a killed host runs no cleanup, so only the
//! kernel can act at that moment. A subreaper adopts orphans but kills
//! nothing; a supervisor process per host could itself be killed; neither
//! cgroup version kills a group when the process that made it dies. The
//! groups the kernel does leave behind (empty, or holding what only the
//! shell's death did not reach) are removed by the next host to start
//! ([`super::cgroup::sweep_dead_hosts`]).
//!
//! Without namespaces (no `CAP_SYS_ADMIN`) only the shell has the signal: it
//! is cleared in every child at `fork`, and the shell is `/bin/sh`, which
//! cannot be asked to pass it on. What the shell started (and whatever left
//! its process group) lives on after the host dies, still under Landlock,
//! seccomp and its rlimits, and in the call's control group where there is
//! one: it runs until it ends, `RLIMIT_CPU` stops it, or a later host start
//! kills it there ([`super::cgroup::sweep_dead_hosts`]). Where there is no
//! group either, nothing reaches it.
//!
//! # When the kernel offers less
//!
//! ABI 3 (Linux 6.2) is the minimum for [`Confinement::Required`]: below
//! it Landlock cannot stop `truncate` of a file outside the directory, so
//! the confinement would be partial. A kernel without seccomp filters is
//! treated the same way. Without either, Bash is refused outside
//! `bypassPermissions` ([`ToolError::Unconfined`](super::ToolError)); in
//! `bypassPermissions` it runs with whatever there is, and says so
//! ([`Enforcement`]).
//!
//! [`Confinement::Required`]: super::Confinement::Required

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use super::cgroup::{self, CgroupKind};
use super::seccomp::{self, Filter};
use cap_std::fs::Dir;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
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

/// What of `/etc` is readable: what the loader, `id`, `date`, `git` and
/// installers read, and the public CA certificates. Missing entries are
/// skipped.
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
    // The distribution's name, which pip and other installers read to
    // describe the platform (no secret in them).
    "/etc/debian_version",
    "/etc/os-release",
    "/etc/lsb-release",
    // The public CA certificates, for HTTPS through the proxy (not
    // `/etc/ssl/private`).
    "/etc/ssl/certs",
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
        /// The seccomp filter of [`super::seccomp`] closes Unix sockets,
        /// UDP and the other channels Landlock does not cover.
        seccomp: bool,
        /// The command runs in PID, mount and IPC namespaces of its own and
        /// sees its directory at [`VIRTUAL_ROOT`] (needs `CAP_SYS_ADMIN`).
        namespaces: bool,
        /// The control group bounding its process tree, or why none does.
        cgroup: Result<CgroupKind, String>,
    },
    /// No kernel confinement: why.
    Unconfined {
        /// A sentence for the teammate and the log.
        reason: String,
    },
}

/// The rule set (its descriptor), built for the teammate's directory at its
/// first Bash call — most teammates never run Bash, and a rule set is a
/// descriptor and kernel memory held for the teammate's life — or why there
/// is none.
#[derive(Debug)]
pub(crate) struct Landlock {
    /// Built on first use; `Err`: why building failed.
    ruleset: std::sync::OnceLock<Result<OwnedFd, String>>,
    /// The same with TCP connect to [`super::netns::PROXY_PORT`] granted,
    /// for the calls of a teammate with a network.
    networked: std::sync::OnceLock<Result<OwnedFd, String>>,
    /// What the kernel offers, as probed when the tool box opened.
    probed: Enforcement,
}

impl Landlock {
    /// Probes the kernel (cheap; the rule set waits for [`Self::ready`]).
    pub(crate) fn prepare() -> Landlock {
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
        if filter().is_none() {
            return Landlock::unconfined(
                "the kernel runs no seccomp filters (or teamhost has none for this \
                 architecture), which Bash needs to keep Unix sockets and UDP closed"
                    .to_owned(),
            );
        }
        Landlock {
            ruleset: std::sync::OnceLock::new(),
            networked: std::sync::OnceLock::new(),
            probed: Enforcement::Landlock {
                abi,
                network: abi >= 4,
                scoped: abi >= 6,
                seccomp: true,
                namespaces: namespaces(),
                cgroup: cgroup::kind(),
            },
        }
    }

    fn unconfined(reason: String) -> Landlock {
        Landlock {
            ruleset: std::sync::OnceLock::new(),
            networked: std::sync::OnceLock::new(),
            probed: Enforcement::Unconfined { reason },
        }
    }

    /// What a child gets, as far as known (the rule set may still fail to
    /// build at the first Bash call; [`Self::ready`] then says so).
    pub(crate) fn enforcement(&self) -> Enforcement {
        match (&self.probed, self.ruleset.get()) {
            (Enforcement::Landlock { .. }, Some(Err(reason))) => Enforcement::Unconfined {
                reason: reason.clone(),
            },
            (probed, _) => probed.clone(),
        }
    }

    /// Builds the rule set for `dir` if it is not built yet, and returns
    /// what a child gets with its descriptor (none when unconfined).
    /// `networked`: the variant that may connect to the proxy's port in
    /// the teammate's network namespace.
    pub(crate) fn ready(&self, dir: &Dir, networked: bool) -> (Enforcement, Option<RawFd>) {
        let Enforcement::Landlock { abi, .. } = self.probed else {
            return (self.probed.clone(), None);
        };
        let (cell, port) = match networked {
            true => (&self.networked, Some(super::netns::PROXY_PORT)),
            false => (&self.ruleset, None),
        };
        let built = cell.get_or_init(|| {
            build(dir, abi, port)
                .map(|created| {
                    let fd: Option<OwnedFd> = created.into();
                    fd.ok_or_else(|| "the kernel made no Landlock rule set".to_owned())
                })
                .map_err(|e| format!("building the Landlock rule set failed: {e}"))
                .and_then(|r| r)
        });
        match built {
            Ok(fd) => (self.probed.clone(), Some(fd.as_raw_fd())),
            Err(reason) => (
                Enforcement::Unconfined {
                    reason: reason.clone(),
                },
                None,
            ),
        }
    }
}

fn build(dir: &Dir, abi: i32, port: Option<u16>) -> Result<RulesetCreated, RulesetError> {
    let all = AccessFs::from_all(TARGET);
    let read = AccessFs::from_read(TARGET);
    let mut ruleset = Ruleset::default().handle_access(all)?;
    if abi >= 4 {
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET))?;
    }
    if abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(TARGET))?;
    }
    // No special file: a FIFO, socket or device node made (or renamed or
    // linked) into the directory could hold a host thread that opens it.
    let special =
        AccessFs::MakeFifo | AccessFs::MakeSock | AccessFs::MakeChar | AccessFs::MakeBlock;
    let mut created = ruleset
        .create()?
        .add_rule(PathBeneath::new(dir.as_fd(), all & !special))?;
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
    if let (Some(port), true) = (port, abi >= 4) {
        created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
    }
    Ok(created)
}

/// The kernel's Landlock ABI version, 0 when it has none. Asked of the
/// kernel once per process (every teammate's tools ask it).
pub fn kernel_abi() -> i32 {
    static ABI: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *ABI.get_or_init(ask_kernel_abi)
}

fn ask_kernel_abi() -> i32 {
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

/// Where a namespaced Bash sees its capability directory: its working
/// directory, `$HOME` and `$TMPDIR`. The host's `/tmp` is hidden behind it, so
/// sockets and files there cannot even be named.
pub const VIRTUAL_ROOT: &str = "/tmp";

/// The seccomp filter, built once per process; `None` where seccomp or a
/// filter for this architecture is missing.
pub(crate) fn filter() -> Option<&'static Filter> {
    static FILTER: std::sync::OnceLock<Option<Filter>> = std::sync::OnceLock::new();
    FILTER
        .get_or_init(|| seccomp::supported().then(|| Filter::build(false)).flatten())
        .as_ref()
}

/// [`filter`] for a Bash call with a network: TCP sockets allowed
/// ([`Filter::build`]).
pub(crate) fn filter_tcp() -> Option<&'static Filter> {
    static FILTER: std::sync::OnceLock<Option<Filter>> = std::sync::OnceLock::new();
    FILTER
        .get_or_init(|| seccomp::supported().then(|| Filter::build(true)).flatten())
        .as_ref()
}

/// The namespaces [`enter`] asks for.
const NAMESPACES: libc::c_int = libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC;

/// Can this process give a child PID, mount and IPC namespaces of its own
/// (and make its mounts private)? Asked once, by a forked probe that tries.
pub fn namespaces() -> bool {
    static CAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CAN.get_or_init(|| {
        // SAFETY: the child makes raw system calls only and exits.
        unsafe {
            let pid = libc::fork();
            if pid < 0 {
                return false;
            }
            if pid == 0 {
                let ok = libc::unshare(NAMESPACES) == 0 && private_mounts() == 0;
                libc::_exit(if ok { 0 } else { 1 });
            }
            let mut status = 0;
            while libc::waitpid(pid, &mut status, 0) < 0 {
                if *libc::__errno_location() != libc::EINTR {
                    return false;
                }
            }
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    })
}

/// `mount --make-rprivate /`: mounts made after this stay in this namespace.
///
/// # Safety
///
/// Async-signal-safe; changes the calling process's mount namespace.
unsafe fn private_mounts() -> libc::c_int {
    // SAFETY: static C strings and null pointers, as mount(2) allows.
    unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    }
}

/// Everything the child needs between `fork` and `exec`, prepared by the
/// host: integers, descriptors and pointers into memory the host keeps alive
/// until the spawn returns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildPlan {
    /// The host's pid, taken before the fork: the child's parent, as long
    /// as the host lives (see [When the host dies](self#when-the-host-dies)).
    pub host_pid: libc::pid_t,
    /// The capability directory, open.
    pub dir: RawFd,
    /// Its canonical path, NUL-terminated (for the bind mount).
    pub dir_path: *const libc::c_char,
    /// The Landlock rule set, when there is one.
    pub ruleset: Option<RawFd>,
    /// Give the command namespaces of its own and show it its directory at
    /// [`VIRTUAL_ROOT`] (only when [`namespaces`] said it can).
    pub namespaces: bool,
    /// `cgroup.procs` of the call's group(s), at most two.
    pub cgroup_procs: [RawFd; 2],
    /// How many of `cgroup_procs` are set.
    pub cgroups: usize,
    /// The seccomp filter, when there is one.
    pub seccomp: Option<libc::sock_fprog>,
    /// The teammate's network namespace to join ([`super::netns`]), or -1.
    pub netns: RawFd,
    /// Resource limits, `(resource, soft, hard)`; unused entries have
    /// resource `-1`.
    pub rlimits: [(i32, u64, u64); 6],
}

// SAFETY: the raw pointers are read only by the forked child, and point into
// memory (a CString, the static filter) that outlives the spawn.
unsafe impl Send for ChildPlan {}
// SAFETY: as above; nothing writes through them.
unsafe impl Sync for ChildPlan {}

/// Runs in the child between `fork` and `exec`, in this order:
///
/// 0. die with the host: the parent-death signal, then the check that the
///    host did not die before it was set (see
///    [When the host dies](self#when-the-host-dies));
/// 1. `cd` into the capability directory; `no_new_privs`;
/// 2. the resource limits ([`ChildPlan::rlimits`]);
/// 3. join the call's control group(s), before anything can fork; join
///    the teammate's network namespace when it has a network
///    ([`ChildPlan::netns`]);
/// 4. PID, mount and IPC namespaces of its own where the kernel allows it
///    ([`enter_namespaces`]), with the directory bind-mounted at
///    [`VIRTUAL_ROOT`];
/// 5. drop every capability: the bounding and ambient sets and the
///    securebits first ([`drop_bounding_and_lock`]), then the rest (`capset`);
/// 6. enter the Landlock domain;
/// 7. mark every descriptor above 2 close-on-exec, so the command inherits
///    nothing the host holds (its lock files, sockets, the rule set);
/// 8. install the seccomp filter, last, so the steps above are not filtered.
///
/// The host is multithreaded, so after `fork` only async-signal-safe calls
/// are sound: another thread may have held the allocator's lock at the
/// moment of the fork, and the child has a copy of that locked lock and no
/// thread to release it. Everything here is therefore a raw system call on
/// integers and memory prepared by the parent (no allocation, no lock, no
/// `landlock` crate call: its `restrict_self` consumes a value whose drop and
/// error paths are not documented as allocation-free).
pub(crate) fn enter(plan: &ChildPlan) -> io::Result<()> {
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
    // stack frame (or prepared by the parent) of the sizes the kernel expects.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong).into())?;
        if libc::getppid() != plan.host_pid {
            // The host died before the line above: no signal will come.
            libc::_exit(127);
        }
        check(libc::fchdir(plan.dir).into())?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into())?;
        for &(resource, soft, hard) in &plan.rlimits {
            if resource < 0 {
                continue;
            }
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            check(libc::setrlimit(resource as _, &limit).into())?;
        }
        super::cgroup::join(&plan.cgroup_procs[..plan.cgroups])?;
        if plan.netns >= 0 {
            check(libc::setns(plan.netns, libc::CLONE_NEWNET).into())?;
        }
        if plan.namespaces {
            enter_namespaces(plan.dir_path)?;
        }
        drop_bounding_and_lock()?;
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
        if let Some(fd) = plan.ruleset {
            check(libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32))?;
        }
        cloexec_above_stdio()?;
        if let Some(prog) = &plan.seccomp {
            seccomp::install(prog)?;
        }
    }
    Ok(())
}

/// The part of dropping privileges that needs `CAP_SETPCAP`, done while
/// the child still has it (the `capset` to nothing comes after): the
/// bounding set emptied, the ambient set cleared, and the securebits set
/// and locked so that no `exec` as uid 0 grants capabilities again
/// (`NOROOT`), no uid change adjusts them (`NO_SETUID_FIXUP`), and none can
/// be kept across one (`KEEP_CAPS` locked off) or raised into the ambient
/// set (`NO_CAP_AMBIENT_RAISE`).
///
/// A host without `CAP_SETPCAP` gets `EPERM` here, which is fine: its child
/// has no capability to lose, and `no_new_privs` keeps it that way.
///
/// # Safety
///
/// Async-signal-safe; call between `fork` and `exec`.
unsafe fn drop_bounding_and_lock() -> io::Result<()> {
    const SECUREBITS: libc::c_ulong = (libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)
        as libc::c_ulong;
    let fine = |r: libc::c_int| {
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        // EPERM: no CAP_SETPCAP (see above); EINVAL: a capability number
        // past the kernel's last.
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EINVAL) => Ok(()),
            _ => Err(e),
        }
    };
    // SAFETY: integer-only prctl calls.
    unsafe {
        fine(libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) == 1 {
                fine(libc::prctl(
                    libc::PR_CAPBSET_DROP,
                    cap as libc::c_ulong,
                    0,
                    0,
                    0,
                ))?;
            }
        }
        fine(libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0))?;
    }
    Ok(())
}

/// Marks every descriptor above 2 close-on-exec (`close_range`, Linux 5.11;
/// older kernels get `fcntl` on each descriptor below the soft limit).
///
/// # Safety
///
/// Async-signal-safe; call between `fork` and `exec`.
unsafe fn cloexec_above_stdio() -> io::Result<()> {
    // SAFETY: integer-only system calls.
    unsafe {
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) == 0
        {
            return Ok(());
        }
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        let top = limit.rlim_cur.min(1 << 20) as libc::c_int;
        for fd in 3..top {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

/// Gives the command PID, mount and IPC namespaces of its own:
///
/// - **PID**: the shell is the init of a new PID namespace, so that when it
///   exits — or the timeout kills its process group — the kernel kills every
///   process left in the namespace, including ones that left the group with
///   `setsid`;
/// - **mount**: mounts are made private, then the capability directory is
///   bind-mounted over [`VIRTUAL_ROOT`] and entered there, so `pwd`, `$HOME`
///   and `$TMPDIR` name no host path, and the host's `/tmp` (tmux and other
///   sockets) is out of sight;
/// - **IPC**: System V objects of the host are out of reach.
///
/// `unshare(CLONE_NEWPID)` only affects children, so this forks once more:
/// the current process stays behind as a plain waiter (it closes every
/// descriptor but one and runs no command, only `close_range`, `waitpid` and
/// `_exit`, all async-signal-safe) and exits with the shell's status; the
/// child, pid 1 of the namespace, sets its parent-death signal, checks that
/// the waiter still lives (the one descriptor the waiter keeps is the write
/// end of a pipe whose read end the child polls: the waiter's death hangs it
/// up), returns and goes on to `exec` the shell. So the waiter dies with the
/// host and the namespace with the waiter (see
/// [When the host dies](self#when-the-host-dies)). Only called when
/// [`namespaces`] found that the kernel allows all three.
///
/// # Safety
///
/// Call only between `fork` and `exec` (see [`enter`]), with `dir_path` a
/// NUL-terminated path that outlives the call.
unsafe fn enter_namespaces(dir_path: *const libc::c_char) -> io::Result<()> {
    let check = |r: libc::c_int| {
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY: raw system calls on integers, static strings and the parent's
    // path; this process is single-threaded (a fresh fork) and never returns
    // from the waiting branch.
    unsafe {
        check(libc::unshare(NAMESPACES))?;
        check(private_mounts())?;
        check(libc::mount(
            dir_path,
            c"/tmp".as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ))?;
        check(libc::chdir(c"/tmp".as_ptr()))?;
        // The waiter keeps `alive[1]` open for as long as it lives.
        let mut alive: [libc::c_int; 2] = [-1; 2];
        check(libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC))?;
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // pid 1 of the new namespace: die with the waiter, then exec the
            // shell.
            libc::close(alive[1]);
            check(libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
            ))?;
            // Had the waiter died before the line above, no signal would
            // come: its end of the pipe closed with it, so the pipe has hung
            // up (`getppid` cannot tell: it is 0 in the new namespace).
            let mut hung_up = libc::pollfd {
                fd: alive[0],
                events: libc::POLLIN,
                revents: 0,
            };
            loop {
                match libc::poll(&mut hung_up, 1, 0) {
                    0 => break,
                    r if r < 0 && *libc::__errno_location() == libc::EINTR => continue,
                    _ => libc::_exit(127),
                }
            }
            libc::close(alive[0]);
            return Ok(());
        }
        // The waiter holds no descriptor but `alive[1]`: not the pipes (the
        // host sees their end when the command's processes close them) and
        // above all not the close-on-exec pipe through which
        // `Command::spawn` learns that the exec happened — this process never
        // execs, so holding it would keep `spawn` waiting for as long as the
        // command runs. `alive[1]` is above 2 (stdio is open).
        let keep = alive[1] as u32;
        if libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32) != 0
            || libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) != 0
        {
            for fd in (0..4096).filter(|&fd| fd != alive[1]) {
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
