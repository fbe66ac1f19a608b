//! The seccomp filter `Bash` runs under: the system calls through which a
//! confined process could reach what Landlock does not cover.
//!
//! Landlock confines paths, TCP ports, signals and abstract Unix sockets. It
//! does not stop a process from connecting to a **pathname Unix socket** (a
//! tmux server, Docker, D-Bus, an ssh agent: each a way to run commands as
//! the host's user), from sending **UDP**, or from using kernel interfaces
//! that side-step its checks. The filter below refuses those calls with an
//! error (never a kill, so programs that probe for them carry on):
//!
//! | system calls | answer | why |
//! |---|---|---|
//! | `socket` | `EACCES` | no new socket of any family: no Unix socket to a host service, no UDP, no netlink, no TCP even where Landlock's ABI is too old to stop it |
//! | `socketpair`, unless `SOCK_STREAM` | `EACCES` | a stream pair reaches nobody; a datagram pair can `sendto` a named socket |
//! | `io_uring_setup`, `io_uring_enter`, `io_uring_register` | `ENOSYS` | io_uring runs socket and file operations that this filter never sees |
//! | `clone` with a namespace flag, `clone3`, `unshare`, `setns` | `EPERM` (`clone3`: `ENOSYS`, so the C library falls back to `clone`) | a user namespace hands back capabilities |
//! | `mount`, `umount2`, `pivot_root`, `chroot`, the new mount API (`open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`) | `EPERM` | the mount table is the host's view of the files |
//! | `bpf`, `perf_event_open`, `userfaultfd`, `syslog` | `EPERM` | kernel interfaces a tool never needs, and a known source of escapes and host details |
//! | `keyctl`, `add_key`, `request_key` | `EPERM` | the kernel keyrings are shared with the host's user |
//! | System V IPC (`shmget`, `shmat`, `shmctl`, `shmdt`, `msgget`, `msgsnd`, `msgrcv`, `msgctl`, `semget`, `semop`, `semtimedop`, `semctl`) | `EPERM` | shared memory and queues of the host's processes |
//! | any system call of another ABI (x32 on x86-64) or architecture | `ENOSYS` / killed | the numbers above would not mean the same calls |
//!
//! Everything else is allowed. The filter is built in the host and installed
//! by the child as the last step before `exec` ([`install`]); `no_new_privs`
//! is already set by then, so no privilege is needed. Linux x86-64 and
//! AArch64 only; elsewhere [`supported`] is false and Bash is treated as
//! unconfined.

use std::io;

/// Is there a filter for this architecture, and does the kernel run seccomp
/// filters?
pub fn supported() -> bool {
    if ARCH.is_none() {
        return false;
    }
    // SAFETY: PR_GET_SECCOMP takes no pointer; -1 (EINVAL) means the kernel
    // was built without seccomp.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

#[cfg(target_arch = "x86_64")]
const ARCH: Option<u32> = Some(0xC000_003E); // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const ARCH: Option<u32> = Some(0xC000_00B7); // AUDIT_ARCH_AARCH64
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH: Option<u32> = None;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH_OFFSET: u32 = 4;
/// The low 32 bits of argument `i` (little-endian on both architectures).
const fn arg_low(i: u32) -> u32 {
    16 + 8 * i
}

/// `CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
/// CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME`.
const NAMESPACE_FLAGS: u32 = 0x0002_0000
    | 0x0200_0000
    | 0x0400_0000
    | 0x0800_0000
    | 0x1000_0000
    | 0x2000_0000
    | 0x4000_0000
    | 0x0000_0080;

/// The compiled filter, ready for [`install`].
#[derive(Debug)]
pub(crate) struct Filter {
    program: Vec<libc::sock_filter>,
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

fn ret(action: u32) -> libc::sock_filter {
    stmt(libc::BPF_RET | libc::BPF_K, action)
}

fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

fn nr(call: libc::c_long) -> u32 {
    call as u32
}

impl Filter {
    /// Builds the filter for this architecture; `None` where there is none.
    pub(crate) fn build() -> Option<Filter> {
        let arch = ARCH?;
        use libc::{BPF_ABS, BPF_ALU, BPF_AND, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_W};
        let load = |offset| stmt(BPF_LD | BPF_W | BPF_ABS, offset);
        let mut p = vec![
            load(ARCH_OFFSET),
            jump(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
            ret(libc::SECCOMP_RET_KILL_PROCESS),
            load(NR),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            // x32 system calls share numbers with a high bit set.
            p.push(jump(BPF_JMP | BPF_JSET | BPF_K, 0x4000_0000, 0, 1));
            p.push(ret(errno(libc::ENOSYS)));
        }
        let refused: &[(libc::c_long, i32)] = &[
            (libc::SYS_socket, libc::EACCES),
            (libc::SYS_io_uring_setup, libc::ENOSYS),
            (libc::SYS_io_uring_enter, libc::ENOSYS),
            (libc::SYS_io_uring_register, libc::ENOSYS),
            (libc::SYS_clone3, libc::ENOSYS),
            (libc::SYS_unshare, libc::EPERM),
            (libc::SYS_setns, libc::EPERM),
            (libc::SYS_mount, libc::EPERM),
            (libc::SYS_umount2, libc::EPERM),
            (libc::SYS_pivot_root, libc::EPERM),
            (libc::SYS_chroot, libc::EPERM),
            (libc::SYS_open_tree, libc::EPERM),
            (libc::SYS_move_mount, libc::EPERM),
            (libc::SYS_fsopen, libc::EPERM),
            (libc::SYS_fsconfig, libc::EPERM),
            (libc::SYS_fsmount, libc::EPERM),
            (libc::SYS_fspick, libc::EPERM),
            (libc::SYS_mount_setattr, libc::EPERM),
            (libc::SYS_bpf, libc::EPERM),
            (libc::SYS_perf_event_open, libc::EPERM),
            (libc::SYS_userfaultfd, libc::EPERM),
            (libc::SYS_syslog, libc::EPERM),
            (libc::SYS_keyctl, libc::EPERM),
            (libc::SYS_add_key, libc::EPERM),
            (libc::SYS_request_key, libc::EPERM),
            (libc::SYS_shmget, libc::EPERM),
            (libc::SYS_shmat, libc::EPERM),
            (libc::SYS_shmctl, libc::EPERM),
            (libc::SYS_shmdt, libc::EPERM),
            (libc::SYS_msgget, libc::EPERM),
            (libc::SYS_msgsnd, libc::EPERM),
            (libc::SYS_msgrcv, libc::EPERM),
            (libc::SYS_msgctl, libc::EPERM),
            (libc::SYS_semget, libc::EPERM),
            (libc::SYS_semop, libc::EPERM),
            (libc::SYS_semtimedop, libc::EPERM),
            (libc::SYS_semctl, libc::EPERM),
        ];
        for &(call, e) in refused {
            p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr(call), 0, 1));
            p.push(ret(errno(e)));
        }
        // socketpair: only SOCK_STREAM (the type's low bits; the rest are
        // SOCK_NONBLOCK / SOCK_CLOEXEC).
        p.extend([
            jump(BPF_JMP | BPF_JEQ | BPF_K, nr(libc::SYS_socketpair), 0, 4),
            load(arg_low(1)),
            stmt(BPF_ALU | BPF_AND | BPF_K, 0xf),
            jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SOCK_STREAM as u32, 1, 0),
            ret(errno(libc::EACCES)),
            ret(libc::SECCOMP_RET_ALLOW),
        ]);
        // clone: its flags are the first argument on both architectures.
        p.extend([
            jump(BPF_JMP | BPF_JEQ | BPF_K, nr(libc::SYS_clone), 0, 3),
            load(arg_low(0)),
            jump(BPF_JMP | BPF_JSET | BPF_K, NAMESPACE_FLAGS, 0, 1),
            ret(errno(libc::EPERM)),
            ret(libc::SECCOMP_RET_ALLOW),
        ]);
        p.push(ret(libc::SECCOMP_RET_ALLOW));
        Some(Filter { program: p })
    }

    /// How many instructions the filter has (the kernel takes at most 4,096).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.program.len()
    }

    /// The `sock_fprog` for [`install`]; valid while `self` lives.
    pub(crate) fn prog(&self) -> libc::sock_fprog {
        libc::sock_fprog {
            len: self.program.len() as u16,
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        }
    }
}

/// Installs `prog` on the calling process. Async-signal-safe (one `prctl`).
///
/// # Safety
///
/// Call only between `fork` and `exec`, after `PR_SET_NO_NEW_PRIVS`, with a
/// `prog` whose instructions outlive the call.
pub(crate) unsafe fn install(prog: &libc::sock_fprog) -> io::Result<()> {
    // SAFETY: the kernel copies the program during the call.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            prog as *const libc::sock_fprog,
            0,
            0,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_fits_the_kernels_limit_and_ends_by_allowing() {
        let f = Filter::build().expect("x86-64 or AArch64");
        assert!(f.len() < 4096);
        let last = f.program.last().unwrap();
        assert_eq!(last.k, libc::SECCOMP_RET_ALLOW);
    }

    /// A forked child installs the filter and tries each refused call; the
    /// parent reads the answers through a pipe. Real kernel, no mocks.
    #[test]
    fn a_filtered_process_cannot_open_unix_or_udp_sockets_but_can_make_a_stream_pair() {
        if !supported() {
            eprintln!("seccomp is not supported here; nothing to test");
            return;
        }
        let filter = Filter::build().unwrap();
        let prog = filter.prog();
        let mut fds = [0; 2];
        // SAFETY: plain pipe/fork/exit; the child only makes system calls.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if install(&prog).is_err() {
                    libc::_exit(90);
                }
                let unix = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                let unix_errno = *libc::__errno_location();
                let udp = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
                let mut pair = [0; 2];
                let stream =
                    libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, pair.as_mut_ptr());
                let dgram = libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, pair.as_mut_ptr());
                let ns = libc::unshare(libc::CLONE_NEWUSER);
                let out: [i32; 6] = [unix, unix_errno, udp, stream, dgram, ns];
                libc::write(fds[1], out.as_ptr().cast(), std::mem::size_of_val(&out));
                libc::_exit(0);
            }
            libc::close(fds[1]);
            let mut out = [0i32; 6];
            let n = libc::read(fds[0], out.as_mut_ptr().cast(), std::mem::size_of_val(&out));
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert_eq!(
                n as usize,
                std::mem::size_of_val(&out),
                "child status {status}"
            );
            assert_eq!(out[0], -1, "AF_UNIX socket refused");
            assert_eq!(out[1], libc::EACCES);
            assert_eq!(out[2], -1, "UDP socket refused");
            assert_eq!(out[3], 0, "a stream socketpair is allowed");
            assert_eq!(out[4], -1, "a datagram socketpair is refused");
            assert_eq!(out[5], -1, "no new user namespace");
        }
    }
}
