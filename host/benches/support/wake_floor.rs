//! The floor under a cross-process wake-up on this machine, measured in
//! the same run as teamhost's: the least any file-based mailbox can do.
//! A writer makes a new file, writes a message, `fdatasync`s it and
//! renames it into place; a reader in another process blocked in
//! inotify (`IN_MOVED_TO`) wakes, reads the file whole and parses it.
//! teamhost's wake-up does that and more (a lock, a membership check, a
//! signature, the runner's turn); its median over the floor's is the
//! figure that stays comparable from one day's disk to the next.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use super::writers::now_us;

/// The file the floor's writer replaces.
const FILE: &str = "inbox.json";

/// The reader's side (`SCALE_ROLE=floor`, `SCALE_DIR`): prints `ready`,
/// then for each new version of the file renamed into the directory, the
/// time (µs since the epoch) at which it was read and parsed.
pub fn reader_role() {
    let dir = PathBuf::from(std::env::var("SCALE_DIR").expect("SCALE_DIR"));
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain system calls on a descriptor this function owns and a
    // NUL-terminated path that outlives the call.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
    assert!(fd >= 0, "inotify_init1");
    let wd = unsafe { libc::inotify_add_watch(fd, c_dir.as_ptr(), libc::IN_MOVED_TO) };
    assert!(wd >= 0, "inotify_add_watch");
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    let mut events = [0u8; 4096];
    loop {
        // SAFETY: `events` is a writable buffer of the length given.
        let n = unsafe { libc::read(fd, events.as_mut_ptr().cast(), events.len()) };
        if n <= 0 {
            return;
        }
        let mut named = false;
        let mut at = 0usize;
        let header = std::mem::size_of::<libc::inotify_event>();
        while at + header <= n as usize {
            // SAFETY: the kernel wrote whole events; read unaligned.
            let ev: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(events[at..].as_ptr().cast()) };
            let name = &events[at + header..at + header + ev.len as usize];
            named |= name.split(|b| *b == 0).next() == Some(FILE.as_bytes());
            at += header + ev.len as usize;
        }
        if named {
            let mut bytes = Vec::new();
            std::fs::File::open(dir.join(FILE))
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .unwrap();
            let parsed: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            assert!(parsed.is_array());
            writeln!(out, "{}", now_us()).unwrap();
            out.flush().unwrap();
        }
    }
}

/// The writer's side and its reader process.
pub struct Floor {
    dir: PathBuf,
    child: Child,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    round: u64,
}

impl Floor {
    /// Starts the reader (this benchmark's own binary in the `floor`
    /// role) on a fresh directory under `base`, and waits until it watches.
    pub fn start(base: &Path) -> Floor {
        let dir = tempfile::tempdir_in(base).unwrap().keep();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("SCALE_ROLE", "floor")
            .env("SCALE_DIR", &dir)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        Floor {
            dir,
            child,
            lines,
            round: 0,
        }
    }

    /// One wake-up: µs from the start of the write to the reader having
    /// parsed the new version.
    pub fn sample(&mut self) -> u64 {
        self.round += 1;
        let body = format!(
            "[\n  {{\n    \"from\": \"team-lead\",\n    \"text\": \"m{}\",\n    \"timestamp\": \"2026-11-30T00:00:00.000Z\",\n    \"read\": false\n  }}\n]",
            self.round
        );
        let tmp = self.dir.join(format!("{FILE}.tmp.{}", self.round));
        let sent = now_us();
        let mut f = std::fs::File::create(&tmp).unwrap();
        f.write_all(body.as_bytes()).unwrap();
        f.sync_data().unwrap();
        std::fs::rename(&tmp, self.dir.join(FILE)).unwrap();
        let read: u64 = self.lines.next().unwrap().unwrap().parse().unwrap();
        read.saturating_sub(sent)
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
