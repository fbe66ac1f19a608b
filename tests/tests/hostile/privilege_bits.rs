//! Hostile tests: nothing a teammate leaves in its directory carries
//! privilege. Bash runs as the host's user (root here) and owns what it
//! makes, so it tries every way to leave a set-uid or set-gid file (`chmod`,
//! `install -m`, `cp -p` of a set-uid binary, `tar x` of a set-uid entry, a
//! creating `open` with mode 04755) or a file capability (`setcap`,
//! `setxattr`); none stays, and honest `chmod` still works. Bash holds no
//! capability and cannot get one back. A set-id file that got there anyway
//! (the user's) loses its bits at the next walk, and a hard link to one
//! elsewhere is never `chmod`ed nor written through.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::sandbox_support::{all, hostile_request, step, wait_done, Arena};

/// Every regular file below `root` (symlinks not followed).
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let meta = entry.path().symlink_metadata().unwrap();
        if meta.is_dir() {
            out.extend(files(&entry.path()));
        } else if meta.is_file() {
            out.push(entry.path());
        }
    }
    out
}

fn mode(path: &Path) -> u32 {
    path.symlink_metadata().unwrap().permissions().mode() & 0o7777
}

/// Does `path` carry a file capability (`security.capability`)?
fn has_capability(path: &Path) -> bool {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a size query (null buffer, size 0) on a NUL-terminated path.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            c"security.capability".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    n >= 0
}

/// `path` run as uid and gid 65534 (`setpriv`): its output.
fn run_as_nobody(path: &Path) -> String {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(path)
        .output()
        .expect("setpriv runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Lets every user through the directories from `top` down to `dir`, so
/// that `setpriv` as nobody can reach a file there.
fn open_path(top: &Path, dir: &Path) {
    let mut at = dir.to_path_buf();
    loop {
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755)).unwrap();
        if at == top || !at.pop() {
            break;
        }
    }
}

/// Whether this process is root (the case the issue reproduces).
fn root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_cannot_leave_a_set_id_file_or_a_file_capability_and_honest_chmod_works() {
    let a = Arena::new("setid-bash").await;
    let dir = a.dir("setid");
    // A tar with a set-uid entry, made outside the teammate (by the test).
    let staging = a.f.tmp.path().join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::copy("/usr/bin/id", staging.join("tarred")).unwrap();
    std::fs::set_permissions(
        staging.join("tarred"),
        std::fs::Permissions::from_mode(0o4755),
    )
    .unwrap();
    let tarred = Command::new("tar")
        .arg("-C")
        .arg(&staging)
        .arg("-cf")
        .arg(dir.join("suid.tar"))
        .arg("tarred")
        .status()
        .unwrap();
    assert!(tarred.success());

    let mut attempts = vec![
        "cp /usr/bin/id x && chmod 4755 x",
        "chmod u+s x",
        "chmod g+s x",
        "install -m 4755 /usr/bin/id installed",
        "python3 -c \"import os; os.open('made', os.O_CREAT | os.O_WRONLY, 0o4755)\"",
        "tar -xpf suid.tar",
        "python3 -c \"import os; os.setxattr('x', 'security.capability', b'\\\\x01\\\\x00\\\\x00\\\\x02' + bytes(16))\"",
    ];
    // A set-uid system binary, and `setcap` (not on Bash's PATH: sbin).
    if std::fs::metadata("/usr/bin/passwd").is_ok_and(|m| m.permissions().mode() & 0o4000 != 0) {
        attempts.push("cp -p /usr/bin/passwd passwd-copy");
    }
    if Path::new("/usr/sbin/setcap").exists() {
        attempts.push("/usr/sbin/setcap cap_setuid+ep x");
    }
    // A file with an extended attribute: `cp -a` still copies it (the
    // attribute is not supported, as on a file system without them).
    std::fs::write(dir.join("with-attr"), "attr").unwrap();
    let c = std::ffi::CString::new(dir.join("with-attr").into_os_string().into_encoded_bytes())
        .unwrap();
    // SAFETY: NUL-terminated strings and a 1-byte value.
    unsafe { libc::setxattr(c.as_ptr(), c"user.k".as_ptr(), b"v".as_ptr().cast(), 1, 0) };
    let honest = "chmod 755 x && chmod +x x && chmod 700 x && chmod u+rwx,go+rx x && cp -a /usr/bin/id copied-a && cp -a with-attr with-attr-copy && mkdir -m 755 sub && echo honest-ok";
    let prompt: String = attempts
        .iter()
        .chain([&honest])
        .map(|c| format!("bash-run {c}\n"))
        .collect();
    let name = a
        .spawn(hostile_request("setid", &prompt, &dir, "bypassPermissions"))
        .await;
    let got = wait_done(&a.f, &name, "bash-run", attempts.len() + 1).await;
    let runs = all(&got, "bash-run");
    assert_eq!(runs.len(), attempts.len() + 1, "{got:#?}");
    for (attempt, run) in attempts.iter().zip(&runs) {
        assert!(run.ok(), "{attempt}: {run:?}");
        assert_ne!(run.exit_code(), Some(0), "{attempt} succeeded: {run:?}");
        assert!(
            run.detail.contains("not permitted")
                || run.detail.contains("Operation not supported")
                || run.detail.contains("PermissionError"),
            "{attempt} should have been refused by the kernel: {run:?}"
        );
    }
    let last = runs.last().unwrap();
    assert!(last.detail.contains("honest-ok"), "{last:?}");

    // Nothing in the directory is set-id or carries a capability, whatever
    // the commands above left.
    for file in files(&dir) {
        assert_eq!(mode(&file) & 0o6000, 0, "{} is set-id", file.display());
        assert!(
            !has_capability(&file),
            "{} has a capability",
            file.display()
        );
    }
    assert_eq!(mode(&dir.join("x")), 0o755, "honest chmod took effect");
    assert!(dir.join("copied-a").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("with-attr-copy")).unwrap(),
        "attr"
    );

    // And nobody becomes root through what is there. The control: the same
    // binary made set-uid by the test itself does give euid 0.
    if root() && Command::new("setpriv").arg("--version").output().is_ok() {
        open_path(a.f.tmp.path(), &dir);
        open_path(a.f.tmp.path(), &staging);
        let control = run_as_nobody(&staging.join("tarred"));
        assert!(control.contains("euid=0"), "the control: {control}");
        let got = run_as_nobody(&dir.join("x"));
        assert!(got.contains("uid=65534"), "{got}");
        assert!(!got.contains("euid=0"), "{got}");
    }
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_holds_no_capability_and_cannot_get_one_back() {
    let a = Arena::new("setid-caps").await;
    // Bounding and ambient sets, securebits, and the effective, permitted
    // and inheritable sets (capget), through ctypes.
    let script = "import ctypes; l = ctypes.CDLL(None); \
                  b = sum(l.prctl(23, i, 0, 0, 0) == 1 for i in range(64)); \
                  m = sum(l.prctl(47, 1, i, 0, 0) == 1 for i in range(64)); \
                  s = l.prctl(27, 0, 0, 0, 0); \
                  h = (ctypes.c_uint32 * 2)(0x20080522, 0); d = (ctypes.c_uint32 * 6)(); \
                  r = l.capget(h, d); \
                  print('bounding=%d ambient=%d securebits=%d capget=%d sets=%s' % (b, m, s, r, list(d)))";
    let got = a
        .attack(
            "caps",
            "bypassPermissions",
            &format!("bash-run python3 -c \"{script}\""),
        )
        .await;
    let run = step(&got, "bash-run");
    assert_eq!(run.exit_code(), Some(0), "{run:?}");
    assert!(
        run.detail
            .contains("bounding=0 ambient=0 securebits=239 capget=0 sets=[0, 0, 0, 0, 0, 0]")
            || (!root() && run.detail.contains("ambient=0 ")),
        "{run:?}"
    );
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_id_file_that_got_there_anyway_loses_its_bits_and_a_hard_link_is_never_touched() {
    let a = Arena::new("setid-backstop").await;
    let dir = a.dir("backstop");
    // The user's own set-uid file in the teammate's directory, and a hard
    // link to a set-uid file elsewhere (as a linked-in system binary would
    // be).
    std::fs::copy("/usr/bin/id", dir.join("users-suid")).unwrap();
    std::fs::set_permissions(
        dir.join("users-suid"),
        std::fs::Permissions::from_mode(0o4750),
    )
    .unwrap();
    let outside = a.f.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("system-binary"), "untouched").unwrap();
    std::fs::set_permissions(
        outside.join("system-binary"),
        std::fs::Permissions::from_mode(0o4755),
    )
    .unwrap();
    std::fs::hard_link(outside.join("system-binary"), dir.join("linked")).unwrap();
    std::fs::write(dir.join("writable-suid"), "old").unwrap();
    std::fs::set_permissions(
        dir.join("writable-suid"),
        std::fs::Permissions::from_mode(0o6755),
    )
    .unwrap();

    // The guest writes through its own WASI open to the hard link (refused:
    // the bits are not cleared there, and the write would reach the file
    // elsewhere), and to the user's set-id file (its bits go first); then
    // a Bash call, after which the walk runs.
    let prompt = "special fs-write linked\nspecial fs-write writable-suid\nbash-run true";
    let name = a
        .spawn(hostile_request(
            "backstop",
            prompt,
            &dir,
            "bypassPermissions",
        ))
        .await;
    let got = wait_done(&a.f, &name, "bash-run", 1).await;
    let writes = all(&got, "special/fs-write");
    assert_eq!(writes.len(), 2, "{got:#?}");
    assert!(
        !writes[0].ok(),
        "writing through the hard link: {:?}",
        writes[0]
    );
    assert!(writes[1].ok(), "{:?}", writes[1]);

    assert_eq!(
        std::fs::read_to_string(outside.join("system-binary")).unwrap(),
        "untouched"
    );
    assert_eq!(mode(&outside.join("system-binary")), 0o4755);
    assert!(
        !dir.join("linked").exists(),
        "the hard link's name in the directory goes"
    );
    assert_eq!(mode(&dir.join("users-suid")), 0o750);
    assert_eq!(mode(&dir.join("writable-suid")), 0o755);
    assert_eq!(
        std::fs::read_to_string(dir.join("writable-suid")).unwrap(),
        "xld"
    );
    a.assert_contained().await;
}
