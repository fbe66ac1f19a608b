//! Hostile tests: no special file holds a host thread. Bash cannot make a
//! FIFO, socket or device node in its directory, nor move or link one in;
//! and one that is there anyway (the user's, planted by the test) is
//! refused at once by the guest's own WASI opens and by every tool, so the
//! turn ends promptly and the host goes on.

use std::ffi::CString;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::sandbox_support::{all, hostile_request, step, wait_done, Arena};

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Makes a character device like `/dev/null` at `path`, where the test may
/// (root); false where it may not.
fn mknod_null(path: &Path) -> bool {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; makedev of integers.
    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) == 0 }
}

/// The special files below `root` (symlinks not followed).
fn special_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let t = entry.path().symlink_metadata().unwrap().file_type();
        if t.is_dir() {
            out.extend(special_files(&entry.path()));
        } else if t.is_fifo() || t.is_socket() || t.is_char_device() || t.is_block_device() {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_cannot_make_a_special_file_nor_move_or_link_one_in() {
    let a = Arena::new("special-bash").await;
    let dir = a.dir("maker");
    // The user's FIFO, in the directory, and another outside it.
    mkfifo(&dir.join("users-fifo"));
    let outside = a.f.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    mkfifo(&outside.join("fifo"));
    std::fs::create_dir(dir.join("sub")).unwrap();

    let attempts = [
        "mkfifo f".to_string(),
        "mknod p0 p".to_string(),
        "mknod c0 c 1 3".to_string(),
        "python3 -c \"import os; os.mkfifo('g')\"".to_string(),
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('sock')\""
            .to_string(),
        "mv users-fifo sub/moved".to_string(),
        "ln users-fifo linked".to_string(),
        format!("mv {} here", outside.join("fifo").display()),
        format!("ln {} here2", outside.join("fifo").display()),
    ];
    let prompt: String = attempts.iter().map(|c| format!("bash-run {c}\n")).collect();
    let name = a
        .spawn(hostile_request("maker", &prompt, &dir, "bypassPermissions"))
        .await;
    let got = wait_done(&a.f, &name, "bash-run", attempts.len()).await;
    let runs = all(&got, "bash-run");
    assert_eq!(runs.len(), attempts.len(), "{got:#?}");
    for (attempt, run) in attempts.iter().zip(&runs) {
        assert!(run.ok(), "{attempt}: {run:?}");
        assert_ne!(run.exit_code(), Some(0), "{attempt} succeeded: {run:?}");
    }
    // The socket was refused before any file: `socket()` itself.
    assert!(runs[4].detail.contains("PermissionError"), "{:?}", runs[4]);
    assert_eq!(special_files(&dir), ["users-fifo"]);
    assert!(outside.join("fifo").exists());
    a.assert_contained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_or_device_in_the_directory_is_refused_at_once_by_wasi_and_every_tool() {
    let a = Arena::new("special-open").await;
    let dir = a.dir("opener");
    mkfifo(&dir.join("pipe"));
    std::os::unix::fs::symlink("pipe", dir.join("to-pipe")).unwrap();
    std::fs::write(dir.join("text.txt"), "a line\n").unwrap();
    let device = mknod_null(&dir.join("null"));

    let mut commands = vec![
        "special fs-read pipe",
        "special fs-write pipe",
        "special fs-create pipe",
        "special fs-open-dir pipe",
        "special fs-read to-pipe",
        "special tools pipe",
        "special tools to-pipe",
        "special fs-read text.txt",
    ];
    if device {
        commands.push("special fs-read null");
    }
    let prompt = commands.join("\n");
    // Read-write (bypassPermissions): the guest may open to write, so the
    // write and create opens reach the guard.
    let name = a
        .spawn(hostile_request(
            "opener",
            &prompt,
            &dir,
            "bypassPermissions",
        ))
        .await;
    let got = wait_done(&a.f, &name, "special", commands.len()).await;

    let reads = all(&got, "special/fs-read");
    assert_eq!(reads.len(), if device { 4 } else { 3 }, "{got:#?}");
    for (i, read) in reads.iter().enumerate() {
        if i == 2 {
            assert!(read.ok(), "a regular file still opens: {read:?}");
            continue;
        }
        assert!(!read.ok(), "{read:?}");
        assert!(read.detail.contains("PermissionDenied"), "{read:?}");
    }
    for what in [
        "special/fs-write",
        "special/fs-create",
        "special/fs-open-dir",
    ] {
        let s = step(&got, what);
        assert!(!s.ok(), "{s:?}");
    }
    for what in [
        "special/tool-read",
        "special/tool-edit",
        "special/tool-write",
    ] {
        let both = all(&got, what);
        assert_eq!(both.len(), 2, "{got:#?}");
        for s in both {
            assert!(!s.ok(), "{s:?}");
            assert!(
                s.detail.contains("FIFO") || s.detail.contains("not a regular file"),
                "{s:?}"
            );
        }
    }
    // Grep skips it and Glob lists it: neither opens it.
    let grep = step(&got, "special/tool-grep");
    assert!(grep.ok() && grep.detail.contains("text.txt"), "{grep:?}");
    let glob = step(&got, "special/tool-glob");
    assert!(glob.ok() && glob.detail.contains("pipe"), "{glob:?}");
    // Write replaced nothing: the FIFO is still the user's FIFO.
    let t = dir.join("pipe").symlink_metadata().unwrap().file_type();
    assert!(t.is_fifo());
    a.assert_contained().await;
}
