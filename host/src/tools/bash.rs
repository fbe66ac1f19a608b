//! `Bash`: `/bin/sh -c command` as a host process, confined to the
//! capability directory.
//!
//! | aspect | what the child gets |
//! |---|---|
//! | working directory | the capability directory, seen at [`confine::VIRTUAL_ROOT`] (`/tmp`) where the host can give the command a mount namespace, else at its host path |
//! | stdin | `/dev/null` |
//! | environment | only `PATH=/usr/local/bin:/usr/bin:/bin`, `HOME` and `TMPDIR` = the directory as the command sees it, `PWD` with a mount namespace, `LANG=C.UTF-8`; with a network, the proxy in `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (`socks5h://`) and their lower-case spellings |
//! | network | none (Landlock refuses TCP, the seccomp filter every other socket); a teammate with a network ([`ToolBox::attach_network`]): its own network namespace, where only its proxy listens ([`super::netns`]) |
//! | descriptors | stdin, stdout, stderr; everything else the host holds is closed at `exec` |
//! | bounds | a control group per call (processes, memory of the tree) and per-process rlimits: see [`ToolLimits`](super::ToolLimits) |
//! | process group | its own; on timeout, and when the shell exits, the whole group is killed (`SIGKILL`): nothing the command starts outlives the call |
//! | the host's death | the call's tree dies with the host (the parent-death signal, see [`confine`](super::confine#when-the-host-dies)): this function spawns, pumps and reaps on the one calling thread, which is what that signal needs |
//! | a watch | [`ToolBox::bash_watched`]: the caller's check runs every so often while the command runs (the disk budget of the teammate's tree); a reason kills the group at once |
//! | timeout | the input's `timeout` in ms, default `bash_timeout` (120 s), at most `max_bash_timeout` (600 s; longer is clamped) |
//! | output | stdout and stderr read together (a chatty child cannot block on a full pipe), each kept up to `max_output_bytes`, the rest read and dropped (`truncated`) |
//! | privileges | the host's uid; `no_new_privs`, every capability set emptied (bounding and ambient too), securebits locked; no set-id bits, file capabilities or special files (see [`super::confine`]) |
//! | confinement | Landlock, seccomp, namespaces: see [`super::confine`] |
//!
//! [`Confinement::Required`] (every mode but `bypassPermissions`) refuses to
//! run without Landlock ([`ToolError::Unconfined`]);
//! [`Confinement::BestEffort`] runs anyway and reports what it got in
//! [`BashOutput::enforcement`].
//!
//! Output is decoded as UTF-8, invalid bytes replaced.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sandbox::BashInput;

use super::cgroup::{CallGroup, TreeLimits};
use super::confine::{self, ChildPlan, Enforcement};
use super::{ToolBox, ToolError};

pub use crate::sandbox::Confinement;

/// What Bash returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BashOutput {
    /// Standard output, at most `max_output_bytes`.
    pub stdout: String,
    /// Standard error, at most `max_output_bytes`.
    pub stderr: String,
    /// The shell's exit code; `None` when a signal ended it (a timeout too).
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, if one did.
    pub signal: Option<i32>,
    /// The timeout fired and the process group was killed.
    pub timed_out: bool,
    /// stdout or stderr was cut at `max_output_bytes`.
    pub truncated: bool,
    /// The shell's pid, which was also its process group's id. By the time
    /// this is returned the shell is reaped and the whole group has been
    /// sent `SIGKILL` (its other members die as the kernel delivers it).
    pub pid: u32,
    /// The confinement the process ran under.
    pub enforcement: Enforcement,
    /// Why a [`Watch`] stopped the call (its process group killed), if one
    /// did.
    pub stopped: Option<String>,
}

/// What a caller checks while a Bash call runs ([`ToolBox::bash_watched`]):
/// `check` is called about every `every` (on the calling thread, between
/// reads of the output); when it returns a reason the whole process group
/// is killed and the call returns with [`BashOutput::stopped`] set.
pub struct Watch<'a> {
    /// How often to check.
    pub every: Duration,
    /// The check; `Some(reason)` stops the call.
    pub check: &'a mut dyn FnMut() -> Option<String>,
    /// A lower `RLIMIT_FSIZE` for this call's processes than
    /// `bash_max_file_bytes` (what is left of a budget), if any.
    pub max_file_bytes: Option<u64>,
}

/// `PATH` in the child.
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What a command with a network is told about the proxy: HTTP and HTTPS
/// through it (`CONNECT`), everything else through its SOCKS5 side with
/// names resolved by the proxy (`socks5h`: there is no resolver inside).
/// Both spellings, as programs read one or the other; no `NO_PROXY`.
fn proxy_env() -> [(&'static str, String); 6] {
    let http = format!("http://{}", super::netns::PROXY_ADDR);
    let socks = format!("socks5h://{}", super::netns::PROXY_ADDR);
    [
        ("HTTP_PROXY", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("ALL_PROXY", socks.clone()),
        ("http_proxy", http.clone()),
        ("https_proxy", http),
        ("all_proxy", socks),
    ]
}

/// How long the pipes may stay open after the group was killed (a process
/// that left the group with `setsid` can hold them).
const GRACE: Duration = Duration::from_secs(1);

impl ToolBox {
    /// Runs `input.command` (see the module docs).
    pub fn bash(
        &self,
        input: &BashInput,
        confinement: Confinement,
    ) -> Result<BashOutput, ToolError> {
        self.bash_watched(input, confinement, None)
    }

    /// [`bash`](Self::bash), checking `watch` while the command runs.
    pub fn bash_watched(
        &self,
        input: &BashInput,
        confinement: Confinement,
        mut watch: Option<Watch<'_>>,
    ) -> Result<BashOutput, ToolError> {
        let dir = self.dir.get()?;
        let network = self.network.get();
        let (enforcement, ruleset) = self.landlock.ready(&dir, network.is_some());
        if let (Confinement::Required, Enforcement::Unconfined { reason }) =
            (confinement, &enforcement)
        {
            return Err(ToolError::Unconfined(format!(
                "{reason}; Bash runs only in bypassPermissions here"
            )));
        }
        if input.command.trim().is_empty() {
            return Err(ToolError::Invalid("the command is empty".to_owned()));
        }
        if input.command.contains('\0') {
            return Err(ToolError::Invalid("the command contains NUL".to_owned()));
        }
        let timeout = match input.timeout {
            None => self.limits.bash_timeout,
            Some(0) => {
                return Err(ToolError::Invalid(
                    "timeout must be a positive number of milliseconds".to_owned(),
                ))
            }
            Some(ms) => Duration::from_millis(ms).min(self.limits.max_bash_timeout),
        };

        let namespaced = matches!(
            enforcement,
            Enforcement::Landlock {
                namespaces: true,
                ..
            }
        );
        // What the command is told its directory is: the virtual root when
        // it runs in namespaces of its own, else (no CAP_SYS_ADMIN) the host
        // path, which it could learn from `pwd` anyway.
        let home: &std::path::Path = if namespaced {
            std::path::Path::new(confine::VIRTUAL_ROOT)
        } else {
            &self.root
        };
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(&input.command)
            .env_clear()
            .env("PATH", PATH)
            .env("HOME", home)
            .env("TMPDIR", home)
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if namespaced {
            // `enter` moves the command to the virtual root (it exists only
            // inside the command's mount namespace).
            cmd.env("PWD", confine::VIRTUAL_ROOT);
        }
        // A network only in namespaces (`attach_network` checks it).
        let network = network.filter(|_| namespaced);
        if network.is_some() {
            for (key, value) in proxy_env() {
                cmd.env(key, value);
            }
        }
        let confined = matches!(enforcement, Enforcement::Landlock { .. });
        let group = if confined {
            CallGroup::create(TreeLimits {
                pids: self.limits.bash_processes,
                memory_bytes: self.limits.bash_memory_bytes,
            })
            .map_err(|e| ToolError::Io {
                context: "make the command's control group".to_owned(),
                source: e,
            })?
        } else {
            None
        };
        let dir_path = CString::new(self.root.as_os_str().as_bytes()).map_err(|_| {
            ToolError::Invalid("the capability directory's path contains NUL".to_owned())
        })?;
        let mut plan = ChildPlan {
            // The child's parent is this thread, and it stays until the
            // shell is reaped below (`Running` reaps on every path): the
            // parent-death signal the child sets fires only when the host
            // itself dies.
            host_pid: std::process::id() as libc::pid_t,
            dir: dir.as_fd().as_raw_fd(),
            dir_path: dir_path.as_ptr(),
            ruleset,
            namespaces: namespaced,
            cgroup_procs: [-1; 2],
            cgroups: 0,
            seccomp: match (confined, network.is_some()) {
                (false, _) => None,
                (true, false) => confine::filter().map(|f| f.prog()),
                (true, true) => confine::filter_tcp().map(|f| f.prog()),
            },
            netns: network.map_or(-1, super::netns::Netns::fd),
            rlimits: self.rlimits(
                group.as_ref().is_some_and(CallGroup::bounds_memory),
                watch.as_ref().and_then(|w| w.max_file_bytes),
            ),
        };
        if let Some(group) = &group {
            for fd in group.procs_fds().into_iter().take(2) {
                plan.cgroup_procs[plan.cgroups] = fd;
                plan.cgroups += 1;
            }
        }
        // SAFETY: `enter` makes only async-signal-safe system calls (see its
        // docs); the descriptors and `dir_path` outlive the spawn, as `self`
        // and the locals above do.
        unsafe {
            cmd.pre_exec(move || confine::enter(&plan));
        }
        let child = cmd.spawn().map_err(|e| ToolError::Io {
            context: "start /bin/sh".to_owned(),
            source: e,
        })?;
        let mut running = Running::new(child);
        let io = |e| ToolError::Io {
            context: "run the command".to_owned(),
            source: e,
        };
        let (stdout, stderr, timed_out, stopped) = running
            .pump(
                Instant::now() + timeout,
                self.limits.max_output_bytes,
                watch.as_mut(),
            )
            .map_err(io)?;
        let status = running.reap().map_err(io)?;
        drop(group);
        Ok(BashOutput {
            truncated: stdout.truncated || stderr.truncated,
            stdout: String::from_utf8_lossy(&stdout.buf).into_owned(),
            stderr: String::from_utf8_lossy(&stderr.buf).into_owned(),
            exit_code: status.code(),
            signal: status.signal(),
            timed_out,
            pid: running.pid as u32,
            enforcement,
            stopped,
        })
    }
}

impl ToolBox {
    /// The resource limits of one Bash call's processes, each per process:
    /// CPU seconds (`cpu_per_turn`, `SIGXCPU` then `SIGKILL` a second
    /// later), file size, open files, no core dumps, and the address space
    /// (the teammate's memory) only when no memory cgroup bounds the tree.
    fn rlimits(&self, cgroup_bounds_memory: bool, file: Option<u64>) -> [(i32, u64, u64); 6] {
        let unused = (-1, 0, 0);
        let cpu = self.limits.bash_cpu.as_secs().max(1);
        let memory = if cgroup_bounds_memory {
            unused
        } else {
            let bytes = self.limits.bash_memory_bytes;
            (libc::RLIMIT_AS as i32, bytes, bytes)
        };
        let file = file.map_or(self.limits.bash_max_file_bytes, |f| {
            f.min(self.limits.bash_max_file_bytes)
        });
        [
            (libc::RLIMIT_CPU as i32, cpu, cpu + 1),
            (libc::RLIMIT_FSIZE as i32, file, file),
            (
                libc::RLIMIT_NOFILE as i32,
                self.limits.bash_open_files,
                self.limits.bash_open_files,
            ),
            (libc::RLIMIT_CORE as i32, 0, 0),
            memory,
            unused,
        ]
    }
}

/// One captured stream.
struct Capture {
    fd: Option<File>,
    buf: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl Capture {
    fn new(fd: Option<File>, cap: usize) -> Capture {
        Capture {
            fd,
            buf: Vec::new(),
            cap,
            truncated: false,
        }
    }

    fn raw(&self) -> Option<RawFd> {
        self.fd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Reads what is there (poll said so); closes at end of file.
    fn read_some(&mut self, scratch: &mut [u8]) -> io::Result<()> {
        let Some(fd) = &mut self.fd else {
            return Ok(());
        };
        let n = match fd.read(scratch) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        };
        if n == 0 {
            self.fd = None;
            return Ok(());
        }
        let room = self.cap.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&scratch[..n.min(room)]);
        self.truncated |= n > room;
        Ok(())
    }
}

/// A pipe end as a `File`, to read from.
fn file(pipe: impl Into<OwnedFd>) -> File {
    File::from(pipe.into())
}

/// The process groups of the Bash calls running now, by their shell's pid
/// (the group's id). A shell is listed from its start until just before it
/// is reaped: while listed its pid cannot have been reused.
static IN_FLIGHT: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn in_flight() -> std::sync::MutexGuard<'static, Vec<i32>> {
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kills the process group of every Bash call running in this process now
/// (SIGKILL), for a host about to exit without waiting for them (`teamhost
/// run`'s forced stop): a command in its own process group would otherwise
/// outlive the host. Each call then returns as if its command was killed.
/// Returns how many groups were signalled.
pub fn kill_in_flight() -> usize {
    let groups = in_flight();
    for pid in groups.iter() {
        // SAFETY: kill takes integers only.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    groups.len()
}

/// A started shell whose group is killed and which is reaped on every path,
/// panics included.
struct Running {
    child: Child,
    pid: i32,
    pidfd: Option<OwnedFd>,
    reaped: bool,
}

impl Running {
    fn new(child: Child) -> Running {
        let pid = child.id() as i32;
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor (or -1), which we then own.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw as RawFd) });
        in_flight().push(pid);
        Running {
            child,
            pid,
            pidfd,
            reaped: false,
        }
    }

    /// Leaves [`IN_FLIGHT`]: the shell is about to be reaped.
    fn unlist(&self) {
        in_flight().retain(|p| *p != self.pid);
    }

    /// `SIGKILL` to the whole process group. Only ever called before the
    /// shell (the group leader) is reaped, so the id cannot have been reused.
    fn kill_group(&self) {
        // SAFETY: kill takes integers only.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
    }

    /// Has the shell exited? Asked without reaping it (`WNOWAIT`), so its
    /// pid stays reserved and the group can still be killed by id.
    fn exited(&self) -> bool {
        // SAFETY: `info` is a zeroed siginfo_t the call writes into.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            r == 0 && info.si_pid() != 0
        }
    }

    /// Reads stdout and stderr until both close and the shell has exited,
    /// killing the group at the deadline, when the shell exits, or when
    /// `watch` says so (its reason returned last).
    fn pump(
        &mut self,
        deadline: Instant,
        cap: usize,
        mut watch: Option<&mut Watch<'_>>,
    ) -> io::Result<(Capture, Capture, bool, Option<String>)> {
        let mut out = Capture::new(self.child.stdout.take().map(file), cap);
        let mut err = Capture::new(self.child.stderr.take().map(file), cap);
        let mut scratch = vec![0u8; 64 * 1024];
        let mut timed_out = false;
        let mut exited = false;
        let mut stop: Option<Instant> = None;
        let mut stopped = None;
        let mut next_check = watch.as_ref().map(|w| Instant::now() + w.every);
        loop {
            if let (Some(at), Some(w)) = (next_check, watch.as_mut()) {
                if stopped.is_none() && !exited && Instant::now() >= at {
                    match (w.check)() {
                        Some(why) => {
                            stopped = Some(why);
                            self.kill_group();
                            stop = Some(Instant::now() + GRACE);
                            next_check = None;
                        }
                        None => next_check = Some(Instant::now() + w.every),
                    }
                }
            }
            if !exited && self.exited() {
                exited = true;
                self.kill_group();
                stop.get_or_insert(Instant::now() + GRACE);
            }
            let now = Instant::now();
            if !timed_out && !exited && now >= deadline {
                timed_out = true;
                self.kill_group();
                stop = Some(now + GRACE);
            }
            let open = out.fd.is_some() || err.fd.is_some();
            if (exited && !open) || stop.is_some_and(|s| now >= s) {
                break;
            }
            let until = match next_check {
                Some(at) if stop.is_none() => at.min(deadline),
                _ => stop.unwrap_or(deadline),
            };
            // Without a pidfd, look for the shell's exit every 10 ms.
            let tick = if self.pidfd.is_none() || exited {
                Duration::from_millis(10)
            } else {
                Duration::MAX
            };
            let wait = until.saturating_duration_since(now).min(tick);
            let pidfd = self.pidfd.as_ref().map(AsRawFd::as_raw_fd);
            let mut fds: Vec<libc::pollfd> = [out.raw(), err.raw(), pidfd]
                .into_iter()
                .flatten()
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            if exited {
                // The pidfd stays readable once the shell has exited.
                fds.retain(|p| Some(p.fd) != pidfd);
            }
            let ms = libc::c_int::try_from(wait.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
            // SAFETY: `fds` is a live array of `fds.len()` pollfd.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            for p in fds.iter().filter(|p| p.revents != 0) {
                for capture in [&mut out, &mut err] {
                    if capture.raw() == Some(p.fd) {
                        capture.read_some(&mut scratch)?;
                    }
                }
            }
        }
        Ok((out, err, timed_out, stopped))
    }

    /// Kills what is left of the group and reaps the shell.
    fn reap(&mut self) -> io::Result<std::process::ExitStatus> {
        self.unlist();
        self.kill_group();
        let status = self.child.wait()?;
        self.reaped = true;
        Ok(status)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            self.unlist();
            self.kill_group();
            let _ = self.child.wait();
        }
    }
}
