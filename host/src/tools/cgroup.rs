//! A control group per `Bash` call, so the command's whole process tree is
//! held to a process count and a memory size, whatever it forks.
//!
//! | host | controllers used | where the group is made |
//! |---|---|---|
//! | cgroup v2 with `pids` and `memory` enabled below the host's own group | `pids.max`, `memory.max` (+ `memory.swap.max = 0`) | `{host's group}/teamhost-bash-{pid}-{n}` |
//! | cgroup v1 (or hybrid) with writable `pids` / `memory` hierarchies | `pids.max`, `memory.limit_in_bytes` | `{hierarchy}/{host's group}/teamhost-bash-{pid}-{n}`, in each hierarchy found |
//! | neither (no cgroup file system, not writable, not delegated) | none: see [`super::confine`] for the rlimits that still apply | — |
//!
//! The host makes the group and opens its `cgroup.procs` before the fork; the
//! child writes `0` to it (the kernel reads `0` as "the writer") before it
//! forks anything, so nothing it starts is ever outside the group. The group
//! is removed when the call ends; by then the command's PID namespace (or
//! process group) has been killed. A group that cannot be removed (a process
//! still exiting) is left with its name, which carries the host's pid.
//!
//! Detection runs once per process ([`Hierarchies::detect`]) and only reads
//! `/proc/self/mountinfo` and `/proc/self/cgroup`.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Which cgroup mechanism bounds a Bash call's process tree here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupKind {
    /// The unified hierarchy (cgroup v2).
    V2,
    /// Separate `pids` and/or `memory` hierarchies (cgroup v1).
    V1 {
        /// A `pids` hierarchy is used.
        pids: bool,
        /// A `memory` hierarchy is used.
        memory: bool,
    },
}

/// The parent groups new Bash groups are made in, found once.
#[derive(Debug, Clone)]
enum Hierarchies {
    V2(PathBuf),
    V1 {
        pids: Option<PathBuf>,
        memory: Option<PathBuf>,
    },
    None(String),
}

impl Hierarchies {
    fn get() -> &'static Hierarchies {
        static FOUND: OnceLock<Hierarchies> = OnceLock::new();
        FOUND.get_or_init(Hierarchies::detect)
    }

    fn detect() -> Hierarchies {
        let (Ok(mountinfo), Ok(own)) = (
            fs::read_to_string("/proc/self/mountinfo"),
            fs::read_to_string("/proc/self/cgroup"),
        ) else {
            return Hierarchies::None(
                "/proc/self/mountinfo or /proc/self/cgroup is unreadable".into(),
            );
        };
        // A v1 hierarchy: a `cgroup` mount whose super options name the
        // controller, and this process's path in it from /proc/self/cgroup.
        let v1 = |controller: &str| -> Option<PathBuf> {
            let mount = mountinfo.lines().find_map(|line| {
                let (left, right) = line.split_once(" - ")?;
                let mut r = right.split_whitespace();
                let (fstype, _src, opts) = (r.next()?, r.next()?, r.next()?);
                (fstype == "cgroup" && opts.split(',').any(|o| o == controller))
                    .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
            })?;
            let path = own.lines().find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_id, list, path) = (parts.next()?, parts.next()?, parts.next()?);
                list.split(',').any(|c| c == controller).then_some(path)
            })?;
            let dir = mount.join(path.trim_start_matches('/'));
            writable_group(&dir).then_some(dir)
        };
        let pids = v1("pids");
        let memory = v1("memory");
        if pids.is_some() || memory.is_some() {
            return Hierarchies::V1 { pids, memory };
        }
        // v2: a `cgroup2` mount, this process's `0::` path, and both
        // controllers enabled for its children.
        let v2 = mountinfo.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        });
        let own_v2 = own.lines().find_map(|l| l.strip_prefix("0::"));
        if let (Some(mount), Some(path)) = (v2, own_v2) {
            let dir = mount.join(path.trim_start_matches('/'));
            let enabled =
                fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
            let has = |c: &str| enabled.split_whitespace().any(|e| e == c);
            if has("pids") && has("memory") && writable_group(&dir) {
                return Hierarchies::V2(dir);
            }
            return Hierarchies::None(format!(
                "cgroup v2 at {} does not delegate the pids and memory controllers to teamhost",
                dir.display()
            ));
        }
        Hierarchies::None("no cgroup hierarchy with pids or memory is mounted".into())
    }
}

/// Can a group be made under `dir`? Probed by making and removing one.
fn writable_group(dir: &Path) -> bool {
    let probe = dir.join(format!("teamhost-probe-{}", std::process::id()));
    match fs::create_dir(&probe) {
        Ok(()) => {
            let _ = fs::remove_dir(&probe);
            true
        }
        Err(_) => false,
    }
}

/// What bounds a Bash call's process tree on this host: the cgroup
/// mechanism, or why there is none.
pub fn kind() -> Result<CgroupKind, String> {
    match Hierarchies::get() {
        Hierarchies::V2(_) => Ok(CgroupKind::V2),
        Hierarchies::V1 { pids, memory } => Ok(CgroupKind::V1 {
            pids: pids.is_some(),
            memory: memory.is_some(),
        }),
        Hierarchies::None(why) => Err(why.clone()),
    }
}

/// The bounds one call's group gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// Most processes (threads included) alive at once.
    pub pids: u64,
    /// Most memory the whole tree may hold, in bytes.
    pub memory_bytes: u64,
}

/// One call's group(s): removed on drop.
#[derive(Debug)]
pub(crate) struct CallGroup {
    dirs: Vec<PathBuf>,
    procs: Vec<OwnedFd>,
    memory: bool,
}

impl CallGroup {
    /// Makes the group(s) for one call with `limits`, or `Ok(None)` where
    /// this host has no usable cgroup hierarchy.
    pub(crate) fn create(limits: TreeLimits) -> io::Result<Option<CallGroup>> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "teamhost-bash-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = CallGroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            memory: false,
        };
        match Hierarchies::get() {
            Hierarchies::None(_) => return Ok(None),
            Hierarchies::V2(parent) => {
                let dir = group.make(parent, &name)?;
                write(&dir, "pids.max", limits.pids)?;
                write(&dir, "memory.max", limits.memory_bytes)?;
                group.memory = true;
                // Without swap the memory bound is a real one; a kernel
                // without swap accounting has no such file.
                let _ = write(&dir, "memory.swap.max", 0);
            }
            Hierarchies::V1 { pids, memory } => {
                if let Some(parent) = pids {
                    let dir = group.make(parent, &name)?;
                    write(&dir, "pids.max", limits.pids)?;
                }
                if let Some(parent) = memory {
                    let dir = group.make(parent, &name)?;
                    write(&dir, "memory.limit_in_bytes", limits.memory_bytes)?;
                    group.memory = true;
                    let _ = write(&dir, "memory.memsw.limit_in_bytes", limits.memory_bytes);
                }
            }
        }
        Ok(Some(group))
    }

    fn make(&mut self, parent: &Path, name: &str) -> io::Result<PathBuf> {
        let dir = parent.join(name);
        fs::create_dir(&dir)?;
        self.dirs.push(dir.clone());
        let procs = OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))?;
        self.procs.push(procs.into());
        Ok(dir)
    }

    /// Does a memory controller bound the tree?
    pub(crate) fn bounds_memory(&self) -> bool {
        self.memory
    }

    /// The `cgroup.procs` descriptors the child writes `0` to.
    pub(crate) fn procs_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }
}

impl Drop for CallGroup {
    fn drop(&mut self) {
        self.procs.clear();
        for dir in self.dirs.iter().rev() {
            // A process may still be exiting: its group empties within
            // microseconds. Try a few times, then leave it.
            for attempt in 0..50 {
                match fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 49 => {
                        std::thread::yield_now();
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    Err(e) => {
                        tracing::warn!(group = %dir.display(), error = %e, "could not remove a Bash call's cgroup");
                        break;
                    }
                }
            }
        }
    }
}

fn write(dir: &Path, file: &str, value: u64) -> io::Result<()> {
    fs::write(dir.join(file), value.to_string()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("write {} to {}: {e}", value, dir.join(file).display()),
        )
    })
}

/// Joins the group(s): writes `0` (this process) to each `cgroup.procs`.
/// Async-signal-safe: one `write` per descriptor.
///
/// # Safety
///
/// Call only between `fork` and `exec`, with descriptors the parent keeps
/// open for the spawn.
pub(crate) unsafe fn join(procs: &[RawFd]) -> io::Result<()> {
    for &fd in procs {
        // SAFETY: a write of one byte from a static buffer.
        let r = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        if r != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
