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
//! | `socket` | `EACCES` | no new socket of any family: no Unix socket to a host service, no UDP, no netlink, no TCP even where Landlock's ABI is too old to stop it. A teammate with a network ([`super::netns`]): TCP sockets only (`AF_INET`/`AF_INET6`, `SOCK_STREAM`, TCP), so no UDP, DNS, raw or packet socket |
//! | `socketpair`, unless `SOCK_STREAM` | `EACCES` | a stream pair reaches nobody; a datagram pair can `sendto` a named socket |
//! | `io_uring_setup`, `io_uring_enter`, `io_uring_register` | `ENOSYS` | io_uring runs socket and file operations that this filter never sees |
//! | `clone` with a namespace flag, `clone3`, `unshare`, `setns` | `EPERM` (`clone3`: `ENOSYS`, so the C library falls back to `clone`) | a user namespace hands back capabilities |
//! | `mount`, `umount2`, `pivot_root`, `chroot`, the new mount API (`open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`) | `EPERM` | the mount table is the host's view of the files |
//! | `bpf`, `perf_event_open`, `userfaultfd`, `syslog` | `EPERM` | kernel interfaces a tool never needs, and a known source of escapes and host details |
//! | `keyctl`, `add_key`, `request_key` | `EPERM` | the kernel keyrings are shared with the host's user |
//! | System V IPC (`shmget`, `shmat`, `shmctl`, `shmdt`, `msgget`, `msgsnd`, `msgrcv`, `msgctl`, `semget`, `semop`, `semtimedop`, `semctl`) | `EPERM` | shared memory and queues of the host's processes |
//! | `chmod`, `fchmod`, `fchmodat`, `fchmodat2` whose mode has `S_ISUID` or `S_ISGID` | `EPERM` | the owner needs no capability to make a file set-id, and Bash runs as the host's user (root, often): a set-uid-root file left in the directory is root for any local user afterwards |
//! | `open`, `openat`, `creat` that create (`O_CREAT`, `O_TMPFILE`) with a mode that has `S_ISUID` or `S_ISGID` | `EPERM` | the same bits, set at creation |
//! | `openat2` | `ENOSYS` | its mode lies in a structure a filter cannot read; callers fall back to `openat` |
//! | `mknod`, `mknodat` | `EPERM` | no special file at all: a FIFO, socket or device node in the directory can hold a host thread that opens it (Landlock refuses them too, see [`super::confine`]) |
//! | `setxattr`, `lsetxattr`, `fsetxattr`, `setxattrat` | `EOPNOTSUPP` | file capabilities (`security.capability`); also ACLs and `user.` attributes, which Bash is then told the file system does not support (`cp -a` copies the file and goes on) |
//! | any system call of another ABI (x32 on x86-64) or architecture | `ENOSYS` / killed | the numbers above would not mean the same calls |
//!
//! A set-id file can still reach the directory some other way (the user put
//! it there, or a kernel without this filter): the disk walk after every
//! Bash call and every turn clears the bits ([`super::setid`]).
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

/// `S_ISUID | S_ISGID`.
const SET_ID: u32 = 0o6000;

/// `O_CREAT | __O_TMPFILE` (the same on both architectures): an open that
/// makes a file, and so applies its mode.
const CREATES: u32 = 0o100 | 0o20000000;

/// `fchmodat2` (Linux 6.6), the same number on both architectures.
const SYS_FCHMODAT2: libc::c_long = 452;

/// `setxattrat` (Linux 6.13), the same number on both architectures.
const SYS_SETXATTRAT: libc::c_long = 463;

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

/// `body` for system call `call` only: any other call jumps over it (the
/// accumulator still holds the call's number). `body` must end in a return.
fn only(call: libc::c_long, body: Vec<libc::sock_filter>) -> Vec<libc::sock_filter> {
    use libc::{BPF_JEQ, BPF_JMP, BPF_K};
    let skip = u8::try_from(body.len()).expect("a short block");
    let mut block = vec![jump(BPF_JMP | BPF_JEQ | BPF_K, nr(call), 0, skip)];
    block.extend(body);
    block
}

/// `call` with a bit of `mask` in argument `arg` fails with `e`; without,
/// it is allowed.
fn refuse_bits(call: libc::c_long, arg: u32, mask: u32, e: i32) -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_W};
    only(
        call,
        vec![
            stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(arg)),
            jump(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1),
            ret(errno(e)),
            ret(libc::SECCOMP_RET_ALLOW),
        ],
    )
}

/// An open (`call`, flags in argument `flags`, mode in `mode`) that creates
/// a file with a set-id bit fails with `EPERM`; any other is allowed.
fn refuse_set_id_create(call: libc::c_long, flags: u32, mode: u32) -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_W};
    only(
        call,
        vec![
            stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(flags)),
            // Not creating: the mode is not even read by the kernel.
            jump(BPF_JMP | BPF_JSET | BPF_K, CREATES, 0, 3),
            stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(mode)),
            jump(BPF_JMP | BPF_JSET | BPF_K, SET_ID, 0, 1),
            ret(errno(libc::EPERM)),
            ret(libc::SECCOMP_RET_ALLOW),
        ],
    )
}

/// The rules on the system calls that apply a mode, for this architecture.
fn mode_rules() -> Vec<Vec<libc::sock_filter>> {
    let rules = vec![
        refuse_bits(libc::SYS_fchmod, 1, SET_ID, libc::EPERM),
        refuse_bits(libc::SYS_fchmodat, 2, SET_ID, libc::EPERM),
        refuse_bits(SYS_FCHMODAT2, 2, SET_ID, libc::EPERM),
        refuse_set_id_create(libc::SYS_openat, 2, 3),
    ];
    // The calls AArch64 never had (its C library uses the `*at` forms).
    #[cfg(target_arch = "x86_64")]
    let legacy = vec![
        refuse_bits(libc::SYS_chmod, 1, SET_ID, libc::EPERM),
        // creat(path, mode) always creates.
        refuse_bits(libc::SYS_creat, 1, SET_ID, libc::EPERM),
        refuse_set_id_create(libc::SYS_open, 1, 2),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let legacy = Vec::new();
    rules.into_iter().chain(legacy).collect()
}

/// Calls refused whatever their arguments, beyond the table in
/// [`Filter::build`]: special files, `openat2`, extended attributes.
fn file_refusals() -> Vec<(libc::c_long, i32)> {
    let refused = vec![
        (libc::SYS_openat2, libc::ENOSYS),
        (libc::SYS_mknodat, libc::EPERM),
        (libc::SYS_setxattr, libc::EOPNOTSUPP),
        (libc::SYS_lsetxattr, libc::EOPNOTSUPP),
        (libc::SYS_fsetxattr, libc::EOPNOTSUPP),
        (SYS_SETXATTRAT, libc::EOPNOTSUPP),
    ];
    #[cfg(target_arch = "x86_64")]
    let legacy = vec![(libc::SYS_mknod, libc::EPERM)];
    #[cfg(not(target_arch = "x86_64"))]
    let legacy = Vec::new();
    refused.into_iter().chain(legacy).collect()
}

impl Filter {
    /// Builds the filter for this architecture; `None` where there is none.
    /// `tcp`: a Bash call with a network (it runs in the teammate's network
    /// namespace, [`super::netns`]) may open TCP sockets — `AF_INET` or
    /// `AF_INET6`, `SOCK_STREAM`, protocol 0 or `IPPROTO_TCP` (not SCTP or
    /// MPTCP, which Landlock's port rules do not cover); every other socket
    /// is refused as without it.
    pub(crate) fn build(tcp: bool) -> Option<Filter> {
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
        if tcp {
            p.extend(only(
                libc::SYS_socket,
                vec![
                    load(arg_low(0)),
                    jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_INET as u32, 1, 0),
                    jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_INET6 as u32, 0, 6),
                    load(arg_low(1)),
                    stmt(BPF_ALU | BPF_AND | BPF_K, 0xf),
                    jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SOCK_STREAM as u32, 0, 3),
                    load(arg_low(2)),
                    jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),
                    jump(BPF_JMP | BPF_JEQ | BPF_K, libc::IPPROTO_TCP as u32, 1, 0),
                    ret(errno(libc::EACCES)),
                    ret(libc::SECCOMP_RET_ALLOW),
                ],
            ));
        } else {
            p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr(libc::SYS_socket), 0, 1));
            p.push(ret(errno(libc::EACCES)));
        }
        let refused: &[(libc::c_long, i32)] = &[
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
        for &(call, e) in refused.iter().chain(&file_refusals()) {
            p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr(call), 0, 1));
            p.push(ret(errno(e)));
        }
        // socketpair: only SOCK_STREAM (the type's low bits; the rest are
        // SOCK_NONBLOCK / SOCK_CLOEXEC).
        p.extend(only(
            libc::SYS_socketpair,
            vec![
                load(arg_low(1)),
                stmt(BPF_ALU | BPF_AND | BPF_K, 0xf),
                jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SOCK_STREAM as u32, 1, 0),
                ret(errno(libc::EACCES)),
                ret(libc::SECCOMP_RET_ALLOW),
            ],
        ));
        // clone: its flags are the first argument on both architectures.
        p.extend(refuse_bits(
            libc::SYS_clone,
            0,
            NAMESPACE_FLAGS,
            libc::EPERM,
        ));
        for rule in mode_rules() {
            p.extend(rule);
        }
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
        let f = Filter::build(false).expect("x86-64 or AArch64");
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
        let filter = Filter::build(false).unwrap();
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

    /// What a filtered child gets from `calls` (run after the filter is
    /// installed): each call's result, or `-errno`.
    fn in_filtered_child<const N: usize>(calls: impl FnOnce() -> [i64; N]) -> [i64; N] {
        in_child_under(false, calls)
    }

    /// The TCP variant lets a child open TCP sockets of both families and
    /// nothing else: no UDP (so no DNS), no raw or packet socket, no SCTP
    /// or MPTCP, no Unix socket.
    #[test]
    fn the_tcp_variant_opens_tcp_sockets_only() {
        if !supported() {
            eprintln!("seccomp is not supported here; nothing to test");
            return;
        }
        let got = in_child_under(true, || {
            let try_socket = |family: i32, kind: i32, protocol: i32| {
                // SAFETY: socket takes integers; the descriptor is left to
                // the child's exit.
                let r = unsafe { libc::socket(family, kind, protocol) };
                if r < 0 {
                    -(unsafe { *libc::__errno_location() }) as i64
                } else {
                    0
                }
            };
            [
                try_socket(libc::AF_INET, libc::SOCK_STREAM, 0),
                try_socket(
                    libc::AF_INET6,
                    libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                    libc::IPPROTO_TCP,
                ),
                try_socket(libc::AF_INET, libc::SOCK_DGRAM, 0),
                try_socket(libc::AF_INET6, libc::SOCK_DGRAM, 0),
                try_socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP),
                try_socket(libc::AF_PACKET, libc::SOCK_RAW, 0),
                try_socket(libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_SCTP),
                try_socket(libc::AF_INET, libc::SOCK_STREAM, 262), // IPPROTO_MPTCP
                try_socket(libc::AF_UNIX, libc::SOCK_STREAM, 0),
                try_socket(libc::AF_NETLINK, libc::SOCK_RAW, 0),
            ]
        });
        let refused = -(libc::EACCES as i64);
        assert_eq!(
            got,
            [0, 0, refused, refused, refused, refused, refused, refused, refused, refused]
        );
    }

    fn in_child_under<const N: usize>(tcp: bool, calls: impl FnOnce() -> [i64; N]) -> [i64; N] {
        let filter = Filter::build(tcp).unwrap();
        let prog = filter.prog();
        let mut fds = [0; 2];
        // SAFETY: plain pipe/fork/exit; the child makes system calls only
        // (no allocation) and writes the answers.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if install(&prog).is_err() {
                    libc::_exit(90);
                }
                let out = calls();
                libc::write(fds[1], out.as_ptr().cast(), N * 8);
                libc::_exit(0);
            }
            libc::close(fds[1]);
            let mut out = [0i64; N];
            let n = libc::read(fds[0], out.as_mut_ptr().cast(), N * 8);
            libc::close(fds[0]);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert_eq!(n as usize, N * 8, "child status {status}");
            out
        }
    }

    /// `r` of a system call, or `-errno`.
    fn answer(r: i64) -> i64 {
        if r < 0 {
            // SAFETY: reads this thread's errno.
            -i64::from(unsafe { *libc::__errno_location() })
        } else {
            r
        }
    }

    #[test]
    fn a_filtered_process_cannot_make_a_set_id_file_a_special_file_or_a_file_capability() {
        if !supported() {
            eprintln!("seccomp is not supported here; nothing to test");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        let out = in_filtered_child(|| unsafe {
            let at = libc::open(d.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            let create = libc::O_CREAT | libc::O_WRONLY;
            let setuid = libc::openat(at, c"setuid".as_ptr(), create, 0o4755);
            let setuid = answer(setuid.into());
            let setgid = answer(libc::openat(at, c"setgid".as_ptr(), create, 0o2755).into());
            let plain = libc::openat(at, c"plain".as_ptr(), create, 0o755);
            let plain_ok = answer(plain.into()).min(0);
            // An open that does not create ignores the mode argument.
            let reopen = libc::openat(at, c"plain".as_ptr(), libc::O_RDONLY, 0o4755);
            let reopen_ok = answer(reopen.into()).min(0);
            let fchmod_suid = answer(libc::fchmod(plain, 0o4755).into());
            let fchmod_x = answer(libc::fchmod(plain, 0o700).into());
            let chmodat = answer(libc::fchmodat(at, c"plain".as_ptr(), 0o2755, 0).into());
            let chmodat2 = answer(libc::syscall(
                SYS_FCHMODAT2,
                at,
                c"plain".as_ptr(),
                0o4700,
                0,
            ));
            let fifo = answer(libc::mkfifoat(at, c"fifo".as_ptr(), 0o644).into());
            let node = libc::mknodat(at, c"node".as_ptr(), libc::S_IFREG | 0o644, 0);
            let node = answer(node.into());
            let xattr = libc::fsetxattr(
                plain,
                c"security.capability".as_ptr(),
                [0u8; 20].as_ptr().cast(),
                20,
                0,
            );
            let xattr = answer(xattr.into());
            let openat2 = answer(libc::syscall(
                libc::SYS_openat2,
                at,
                c"plain".as_ptr(),
                0,
                0,
            ));
            let clone = libc::syscall(
                libc::SYS_clone,
                libc::CLONE_NEWUSER | libc::SIGCHLD,
                0usize,
                0usize,
                0usize,
                0usize,
            );
            if clone == 0 {
                libc::_exit(0);
            }
            let clone = answer(clone).min(0);
            [
                setuid,
                setgid,
                plain_ok,
                reopen_ok,
                fchmod_suid,
                fchmod_x,
                chmodat,
                chmodat2,
                fifo,
                node,
                xattr,
                openat2,
                clone,
            ]
        });
        let eperm = -i64::from(libc::EPERM);
        assert_eq!(out[0], eperm, "open(O_CREAT, 04755)");
        assert_eq!(out[1], eperm, "open(O_CREAT, 02755)");
        assert_eq!(out[2], 0, "open(O_CREAT, 0755) is allowed");
        assert_eq!(out[3], 0, "an open that does not create is allowed");
        assert_eq!(out[4], eperm, "fchmod 04755");
        assert_eq!(out[5], 0, "fchmod 0700 is allowed");
        assert_eq!(out[6], eperm, "fchmodat 02755");
        assert_eq!(out[7], eperm, "fchmodat2 04700");
        assert_eq!(out[8], eperm, "mkfifo");
        assert_eq!(out[9], eperm, "mknod of a regular file");
        assert_eq!(out[10], -i64::from(libc::EOPNOTSUPP), "fsetxattr");
        assert_eq!(out[11], -i64::from(libc::ENOSYS), "openat2");
        assert_eq!(out[12], eperm, "clone into a new user namespace");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("plain"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o700);
        assert!(!dir.path().join("setuid").exists());
        assert!(!dir.path().join("fifo").exists());
    }
}
