//! A teammate's network namespace: where its Bash calls run when it has a
//! network (issue 46). It holds `lo` and nothing else — no route out, no
//! resolver — and one listener, on `127.0.0.1:`[`PROXY_PORT`], that the
//! host accepts on and hands to the teammate's proxy
//! ([`crate::network::Proxy::serve_tcp`]).
//!
//! | what | how |
//! |---|---|
//! | the namespace | made on a short-lived thread of the host (`unshare(CLONE_NEWNET)` affects only the calling thread), kept alive by a descriptor of it ([`Netns::fd`]) and by the listener; freed by the kernel when both are closed and no process is left in it |
//! | `lo` | brought up there (`SIOCSIFFLAGS`), so `127.0.0.1` works inside |
//! | the listener | bound inside the namespace on that thread, so its only possible peers are processes in the namespace: the teammate's own Bash calls. No path names it, so another teammate (or anything else on the machine) cannot even try to reach it |
//! | a Bash call | the child joins the namespace between `fork` and `exec` (`setns`, [`super::confine::enter`]), before it drops its capabilities |
//!
//! Why not the Unix-socket bridge of the reference's sandbox runtime (a
//! relay process inside the namespace that connects to a proxy socket on
//! the host's file system): a socket with a path can be reached by whoever
//! can name it, and the relay would be code running after `fork` in a
//! multithreaded host. A listener made in the namespace needs neither: the
//! host itself accepts the namespace's connections.
//!
//! Needs `CAP_SYS_ADMIN` (as Bash's PID and mount namespaces do): without
//! it [`Netns::create`] fails and the teammate's Bash has no network.

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The port the proxy listens on inside every namespace (each namespace
/// has its own ports, so every teammate can use the same one).
pub const PROXY_PORT: u16 = 3128;

/// The proxy's address as a Bash command sees it.
pub const PROXY_ADDR: &str = "127.0.0.1:3128";

/// A network namespace with `lo` up (see the module docs).
#[derive(Debug)]
pub struct Netns {
    ns: OwnedFd,
}

impl Netns {
    /// Makes the namespace and its listener. The listener is blocking; the
    /// caller hands it to the proxy (which makes it non-blocking).
    pub fn create() -> io::Result<(Netns, TcpListener)> {
        std::thread::Builder::new()
            .name("teamhost-netns".into())
            .spawn(make)
            .map_err(|e| io::Error::other(format!("no thread to make the namespace on: {e}")))?
            .join()
            .map_err(|_| io::Error::other("the thread making the network namespace panicked"))?
    }

    /// The namespace's descriptor, for `setns` in a Bash call's child.
    pub fn fd(&self) -> RawFd {
        self.ns.as_raw_fd()
    }
}

/// On a thread of its own: the namespace, `lo`, the listener, and a
/// descriptor of the namespace. The thread ends right after; the namespace
/// lives on through what it returns.
fn make() -> io::Result<(Netns, TcpListener)> {
    // SAFETY: unshare takes flags only and changes this thread alone.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot make a network namespace (needs CAP_SYS_ADMIN): {e}"),
        ));
    }
    loopback_up()?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, PROXY_PORT))?;
    // SAFETY: a static path; the descriptor returned is new and ours.
    let fd = unsafe {
        libc::open(
            c"/proc/thread-self/ns/net".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let ns = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok((Netns { ns }, listener))
}

/// `ip link set lo up` in the calling thread's namespace.
fn loopback_up() -> io::Result<()> {
    /// `struct ifreq` with the flags member of its union (40 bytes).
    #[repr(C)]
    struct IfReq {
        name: [libc::c_char; libc::IFNAMSIZ],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    // SAFETY: a datagram socket to talk to the kernel, owned below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened, owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: 0,
        _pad: [0; 22],
    };
    for (d, s) in req.name.iter_mut().zip(b"lo") {
        *d = *s as libc::c_char;
    }
    // SAFETY: `req` is an ifreq-sized structure the kernel reads and writes.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) != 0 {
            return Err(io::Error::last_os_error());
        }
        req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A process in the namespace reaches the listener on 127.0.0.1, and
    /// the host's own 127.0.0.1 is another place: a listener on the host's
    /// loopback is not reachable from inside.
    #[test]
    fn the_namespace_reaches_its_listener_and_not_the_hosts_loopback() {
        if !super::super::confine::namespaces() {
            eprintln!("skipped: no CAP_SYS_ADMIN for namespaces");
            return;
        }
        let outside = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let outside_port = outside.local_addr().unwrap().port();
        let (ns, listener) = Netns::create().unwrap();
        let fd = ns.fd();
        let inside = std::thread::spawn(move || {
            // SAFETY: joins this thread only.
            assert_eq!(unsafe { libc::setns(fd, libc::CLONE_NEWNET) }, 0);
            let mut s = std::net::TcpStream::connect(PROXY_ADDR).unwrap();
            s.write_all(b"ping").unwrap();
            let host = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, outside_port));
            host.is_err()
        });
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = [0u8; 4];
        conn.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        assert!(
            inside.join().unwrap(),
            "the host's loopback must not be reachable from the namespace"
        );
    }
}
