//! A control group per `Bash` call, so the command's whole process tree is
//! held to a process count and a memory size, whatever it forks.
//!
//! | host | controllers used | where the group is made |
//! |---|---|---|
//! | cgroup v2 with `pids` and `memory` enabled below the host's own group | `pids.max`, `memory.max` (+ `memory.swap.max = 0`) | `{host's group}/teamhost-bash-{pid}-{start}-{n}` |
//! | cgroup v1 (or hybrid) with writable `pids` / `memory` hierarchies | `pids.max`, `memory.limit_in_bytes` | `{hierarchy}/{host's group}/teamhost-bash-{pid}-{start}-{n}`, in each hierarchy found |
//! | neither (no cgroup file system, not writable, not delegated) | none: see [`super::confine`] for the rlimits that still apply | — |
//!
//! The host makes the group and opens its `cgroup.procs` before the fork; the
//! child writes `0` to it (the kernel reads `0` as "the writer") before it
//! forks anything, so nothing it starts is ever outside the group. The group
//! is removed when the call ends; by then the command's PID namespace (or
//! process group) has been killed.
//!
//! # Groups a dead host left
//!
//! A host that is killed (`SIGKILL`, a crash) removes nothing: its call
//! trees die with it ([`super::confine`], the parent-death signal), but their
//! empty groups stay; without namespaces, processes the shell started may
//! even live on in them. So the name says whose group it is: `{pid}` and
//! `{start}`, the host's pid and its start time (field 22 of
//! `/proc/{pid}/stat`, clock ticks after boot), then `{n}`, the call's
//! number in that host. The pid alone would not do: pids are reused, within
//! seconds where `pid_max` is 32768, and a group of a live host must never
//! be touched.
//!
//! [`sweep_dead_hosts`] — run when a host starts
//! ([`Host`](crate::embed::Host), once per process) and when it resumes a
//! team — goes through the groups under this host's own group (where its
//! calls' groups are made, so where a host started the same way left its
//! own; groups under another group wait for a host started there) and, for
//! each whose host is gone, kills every process still in it and removes it:
//!
//! | name | its host is gone when |
//! |---|---|
//! | `teamhost-bash-{pid}-{start}-{n}` | no process `{pid}` runs, or it is a zombie, or it started at another time than `{start}` (the pid was reused) |
//! | `teamhost-bash-{pid}-{n}` (before start times were in the name) | no process `{pid}` runs, or it is a zombie (a reused pid keeps the group: it might be the live host's) |
//! | `teamhost-probe-{pid}` (the probe of `Hierarchies::detect`) | the same |
//!
//! Each member is killed through a pidfd opened while it is still listed in
//! the group, so a pid reused by a process outside the group is never
//! signalled (`cgroup.kill`, one write, where cgroup v2 has it). This
//! assumes that hosts sharing a group see one another's pids, i.e. share a
//! PID namespace: the usual case, as containers have their own group.
//!
//! Detection runs once per process ([`Hierarchies::detect`]) and only reads
//! `/proc/self/mountinfo` and `/proc/self/cgroup`.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
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
        let name = call_name(SEQ.fetch_add(1, Ordering::Relaxed));
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
            if let Err(e) = remove(dir) {
                tracing::warn!(group = %dir.display(), error = %e, "could not remove a Bash call's cgroup");
            }
        }
    }
}

/// Removes an empty group. A process may still be exiting: its group
/// empties within microseconds, so `EBUSY` is tried again a few times
/// (about 50 ms in all). A group already gone is removed.
fn remove(dir: &Path) -> io::Result<()> {
    for attempt in 0..50 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 49 => {
                std::thread::yield_now();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The name of this host's `n`th call group (see the module docs).
fn call_name(n: u64) -> String {
    let pid = std::process::id();
    match own_start() {
        Some(start) => format!("teamhost-bash-{pid}-{start}-{n}"),
        // No readable /proc/self/stat: then detection found no hierarchy
        // either (it reads /proc too), and no group is made.
        None => format!("teamhost-bash-{pid}-{n}"),
    }
}

/// This process's start time, read once.
fn own_start() -> Option<u64> {
    static START: OnceLock<Option<u64>> = OnceLock::new();
    *START.get_or_init(|| start_time(std::process::id()))
}

/// When process `pid` started (clock ticks after boot), or `None` when no
/// such process runs: none has the pid, or it is a zombie (it has exited;
/// only its parent has not reaped it yet).
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so
    // the fields are counted from the last `)`.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?; // field 3
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(18)?.parse().ok() // field 22
}

/// The host a group's name names, `(pid, start time if named)`, or `None`
/// for a group that is not a teamhost host's.
fn owner(name: &str) -> Option<(u32, Option<u64>)> {
    if let Some(pid) = name.strip_prefix("teamhost-probe-") {
        return Some((pid.parse().ok()?, None));
    }
    let rest = name.strip_prefix("teamhost-bash-")?;
    let numbers: Vec<u64> = rest
        .split('-')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match numbers[..] {
        [pid, start, _n] => Some((u32::try_from(pid).ok()?, Some(start))),
        [pid, _n] => Some((u32::try_from(pid).ok()?, None)),
        _ => None,
    }
}

/// Is the host named `(pid, start)` gone (see the module docs' table)?
fn host_gone(pid: u32, start: Option<u64>) -> bool {
    match start {
        Some(start) => start_time(pid) != Some(start),
        None => start_time(pid).is_none(),
    }
}

/// Kills what is left in the groups of hosts that are gone and removes the
/// groups (see the module docs). Groups of live hosts, this one's included,
/// are never touched. Returns how many groups were removed; one that cannot
/// be removed is logged and left for the next sweep. Safe to call at any
/// time and from several hosts at once.
pub fn sweep_dead_hosts() -> usize {
    let parents: Vec<&Path> = match Hierarchies::get() {
        Hierarchies::V2(parent) => vec![parent],
        Hierarchies::V1 { pids, memory } => pids
            .iter()
            .chain(memory.iter())
            .map(PathBuf::as_path)
            .collect(),
        Hierarchies::None(_) => Vec::new(),
    };
    sweep(&parents)
}

/// [`sweep_dead_hosts`] over the groups in `parents`.
fn sweep(parents: &[&Path]) -> usize {
    let mut removed = 0;
    for parent in parents {
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some((pid, start)) = name.to_str().and_then(owner) else {
                continue;
            };
            if !host_gone(pid, start) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let dir = entry.path();
            kill_members(&dir);
            match remove(&dir) {
                Ok(()) => {
                    removed += 1;
                    tracing::info!(group = %dir.display(), host_pid = pid, "removed the Bash cgroup of a host that is gone");
                }
                Err(e) => {
                    tracing::warn!(group = %dir.display(), error = %e, "could not remove the Bash cgroup of a host that is gone")
                }
            }
        }
    }
    removed
}

/// The processes in group `dir` (as this process's PID namespace numbers
/// them; one it cannot see is listed as 0 and left out).
fn members(dir: &Path) -> Vec<libc::pid_t> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|&pid: &libc::pid_t| pid > 0)
        .collect()
}

/// `SIGKILL` to every process in group `dir`, again until it is empty (a
/// member may fork meanwhile; the group's `pids.max` bounds how often).
fn kill_members(dir: &Path) {
    // cgroup v2 (Linux 5.14): one write kills the whole group. Opened
    // without `create`: a directory that is no group gets no such file.
    let killed = OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.kill"))
        .and_then(|mut f| io::Write::write_all(&mut f, b"1"))
        .is_ok();
    for _ in 0..100 {
        let pids = members(dir);
        if pids.is_empty() {
            return;
        }
        if !killed {
            for pid in pids {
                kill_member(dir, pid);
            }
        }
        std::thread::yield_now();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `SIGKILL` to `pid`, a member of group `dir` a moment ago: through a
/// pidfd opened first and used only if `pid` is still listed in the group,
/// so the signal reaches that member, never a process that took its pid
/// after it exited. Kernels without pidfds (before 5.3) get a plain `kill`.
fn kill_member(dir: &Path, pid: libc::pid_t) {
    if pid <= 0 || pid as u32 == std::process::id() {
        return; // `kill(0)` would be this process's own group
    }
    // SAFETY: pidfd_open takes a pid and flags; a descriptor it returns is
    // ours to own.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        if io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            // SAFETY: kill takes integers only.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        return; // ESRCH: already gone
    }
    // SAFETY: `raw` is a new descriptor nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(raw as RawFd) };
    if members(dir).contains(&pid) {
        // SAFETY: a live pidfd, a signal number, no siginfo, no flags.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            );
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process has: above every `pid_max` (at most 2^22).
    const NO_PID: u32 = 4_000_000_000;

    #[test]
    fn a_group_name_says_which_host_made_it() {
        assert_eq!(owner("teamhost-bash-42-9001-3"), Some((42, Some(9001))));
        assert_eq!(owner("teamhost-bash-42-3"), Some((42, None)));
        assert_eq!(owner("teamhost-probe-42"), Some((42, None)));
        for other in [
            "teamhost-bash-",
            "teamhost-bash-42",
            "teamhost-bash-42-1-2-3",
            "teamhost-bash-x-1",
            "teamhost-bash-99999999999-1-1",
            "user.slice",
            "teamhost-probe-",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
        let own = std::process::id();
        let name = call_name(5);
        let start = own_start().expect("this process's start time");
        assert_eq!(name, format!("teamhost-bash-{own}-{start}-5"));
        assert_eq!(owner(&name), Some((own, Some(start))));
        assert!(!host_gone(own, Some(start)));
    }

    #[test]
    fn a_sweep_removes_the_groups_of_hosts_that_are_gone_and_no_other() {
        let own = std::process::id();
        let start = own_start().unwrap();
        let parent = tempfile::tempdir().unwrap();
        let gone = [
            format!("teamhost-bash-{NO_PID}-{start}-0"),
            format!("teamhost-bash-{NO_PID}-3"),
            // This pid, another start: a dead host whose pid was reused.
            format!("teamhost-bash-{own}-{}-1", start + 1),
            format!("teamhost-probe-{NO_PID}"),
        ];
        let kept = [
            format!("teamhost-bash-{own}-{start}-0"),
            // The old form with a live pid: maybe this host's, so kept.
            format!("teamhost-bash-{own}-2"),
            format!("teamhost-probe-{own}"),
            format!("someone-else-{NO_PID}"),
        ];
        for name in gone.iter().chain(&kept) {
            fs::create_dir(parent.path().join(name)).unwrap();
        }
        // A file is no group.
        fs::write(parent.path().join(format!("teamhost-bash-{NO_PID}-9")), "").unwrap();
        assert_eq!(sweep(&[parent.path()]), gone.len());
        for name in &gone {
            assert!(!parent.path().join(name).exists(), "{name} removed");
        }
        for name in &kept {
            assert!(parent.path().join(name).is_dir(), "{name} kept");
        }
        assert!(parent
            .path()
            .join(format!("teamhost-bash-{NO_PID}-9"))
            .is_file());
    }

    #[test]
    fn a_sweep_kills_what_still_runs_in_a_dead_hosts_group() {
        let parent = match Hierarchies::get() {
            Hierarchies::V2(parent) => parent.clone(),
            Hierarchies::V1 {
                pids: Some(parent), ..
            }
            | Hierarchies::V1 {
                memory: Some(parent),
                ..
            } => parent.clone(),
            other => {
                eprintln!("skipped: no usable cgroup hierarchy here ({other:?})");
                return;
            }
        };
        // A group as a killed host would have left it, with a process in it.
        let dir = parent.join(format!("teamhost-bash-{NO_PID}-1-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        fs::write(dir.join("cgroup.procs"), child.id().to_string()).unwrap();
        assert_eq!(members(&dir), vec![child.id() as libc::pid_t]);
        assert!(sweep_dead_hosts() >= 1);
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
        assert!(!dir.exists(), "the group is removed");
    }
}
