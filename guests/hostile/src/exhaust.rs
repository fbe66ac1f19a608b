//! `exhaust …`: attacks on the host's resources (class 6) and probes for
//! host details in what the host answers (class 7). One command word,
//! `exhaust`, then a sub-command:
//!
//! | sub-command | what it tries |
//! |---|---|
//! | `open-many N` | opens `open-me.txt` N times with `std::fs`, holding every descriptor (the descriptor cap must trap it) |
//! | `print MIB` | writes MIB MiB to stdout in 64 KiB chunks, then reports (the log cap must cut the log, never the guest) |
//! | `fill PATH MIB` | writes a file of MIB MiB with `std::fs` (WASI), straight past any tool |
//! | `tool-fill PATH KIB` | `tools.write` of KIB KiB (the disk budget must refuse it in advance) |
//! | `touch PREFIX N` | creates N empty files `PREFIX-0`… with `std::fs` (no byte written: the entry budget must still hold) |
//! | `mkdirs PREFIX N` | creates N directories `PREFIX-0`… with `std::fs` |
//! | `links PATH N` | makes N hard links `PATH-0`… to `PATH` with `std::fs` (no byte written, yet a walk sees the file's bytes once per name) |
//! | `read PATH` | `tools.read(PATH)`: reports the size of what came back, `truncated` and `next-offset` |
//! | `grep PATTERN` | `tools.grep` over the directory: reports the size of the text, the files and `truncated` |
//! | `deep N` | recurses N calls deep on the native stack (small frames), then reports: the stack a later turn runs on must still work |
//! | `recurse` | recurses until the native stack runs out (wasmtime's stack limit must trap it, never crash the host) |
//! | `random N` / `insecure-random N` | asks `wasi:random` (`get-random-bytes` / `get-insecure-random-bytes`) for N bytes in one call: past the host's fixed bound it must trap ("random limit"), never make the host build N bytes |
//! | `leak-sweep` | every failing call it can think of (missing, outside, denied, malformed), plus `tools.available`: each reported in full, for the test to search for host paths |

use std::io::Write as _;

use super::{fs, report, tool, tools};

/// Runs `exhaust ARGS…`.
pub fn run(args: &[&str]) {
    match args {
        ["open-many", n] => open_many(n.parse().unwrap_or(100_000)),
        ["print", mib] => print(mib.parse().unwrap_or(100)),
        ["fill", path, mib] => {
            let mib: usize = mib.parse().unwrap_or(1);
            report("exhaust/start", true, format!("fill {path} {mib} MiB"));
            let chunk = vec![b'x'; 1 << 20];
            let written = std::fs::File::create(path).and_then(|mut f| {
                for _ in 0..mib {
                    f.write_all(&chunk)?;
                }
                Ok(mib)
            });
            fs("exhaust/fill", written, |n| format!("wrote {n} MiB"));
        }
        ["tool-fill", path, kib] => {
            let kib: usize = kib.parse().unwrap_or(1);
            let r = tools::write(path, &"y".repeat(kib << 10));
            tool("exhaust/tool-fill", r, |_| format!("wrote {kib} KiB"));
        }
        ["touch", prefix, n] => made("exhaust/touch", n, |i| {
            std::fs::File::create(format!("{prefix}-{i}")).map(drop)
        }),
        ["mkdirs", prefix, n] => made("exhaust/mkdirs", n, |i| {
            std::fs::create_dir(format!("{prefix}-{i}"))
        }),
        ["links", path, n] => made("exhaust/links", n, |i| {
            std::fs::hard_link(path, format!("{path}-{i}"))
        }),
        ["read", path] => {
            let r = tools::read(path, None, None);
            tool("exhaust/read", r, |o| {
                format!(
                    "bytes={} lines={} truncated={} next-offset={:?} start={}",
                    o.content.len(),
                    o.lines,
                    o.truncated,
                    o.next_offset,
                    o.content.chars().take(20).collect::<String>()
                )
            });
        }
        ["grep", pattern] => {
            let r = tools::grep(pattern, None, None, tools::GrepMode::Content, false);
            tool("exhaust/grep", r, |o| {
                format!(
                    "bytes={} files={} truncated={}",
                    o.text.len(),
                    o.files.join(","),
                    o.truncated
                )
            });
        }
        ["deep", n] => {
            let n: u32 = n.parse().unwrap_or(100);
            let reached = dive(n);
            report("exhaust/deep", true, format!("reached {reached}"));
        }
        ["recurse"] => {
            report("exhaust/start", true, "recursing without end");
            let reached = dive(u32::MAX);
            report("exhaust/recurse", true, format!("returned from {reached}?"));
        }
        ["random", n] => random("exhaust/random", n, |len| {
            crate::wasi::random::random::get_random_bytes(len)
        }),
        ["insecure-random", n] => random("exhaust/insecure-random", n, |len| {
            crate::wasi::random::insecure::get_insecure_random_bytes(len)
        }),
        ["leak-sweep"] => leak_sweep(),
        _ => report(
            "exhaust",
            false,
            "usage: open-many N | print MIB | fill PATH MIB | tool-fill PATH KIB | touch PREFIX N | \
             mkdirs PREFIX N | links PATH N | read PATH | grep PATTERN | deep N | recurse | \
             random N | insecure-random N | leak-sweep",
        ),
    }
}

/// Asks `draw` for `n` random bytes in one call (reported first, as the
/// start, since a call past the bound traps), then reports how many came
/// back and how many distinct byte values they hold.
fn random(step: &str, n: &str, draw: impl Fn(u64) -> Vec<u8>) {
    let n: u64 = n.parse().unwrap_or(1 << 20);
    report("exhaust/start", true, format!("{step} {n}"));
    let bytes = draw(n);
    let mut seen = [false; 256];
    for b in &bytes {
        seen[*b as usize] = true;
    }
    let distinct = seen.iter().filter(|s| **s).count();
    report(
        step,
        bytes.len() as u64 == n,
        format!("{} bytes, {distinct} distinct values", bytes.len()),
    );
}

/// Makes `n` entries with `make` (given 0, 1, …), stopping at the first
/// error; reports how many were made and that error.
fn made(step: &str, n: &str, make: impl Fn(usize) -> std::io::Result<()>) {
    let n: usize = n.parse().unwrap_or(1);
    let mut done = 0;
    let mut error = String::new();
    for i in 0..n {
        match make(i) {
            Ok(()) => done += 1,
            Err(e) => {
                error = format!(" (then: {e})");
                break;
            }
        }
    }
    report(step, done == n, format!("made {done} of {n}{error}"));
}

/// Recurses `left` calls deep (not a loop: each call adds to the result
/// after it returns); returns the depth. Small frames, so the native stack
/// runs out, not the shadow stack in linear memory.
#[inline(never)]
fn dive(left: u32) -> u32 {
    if std::hint::black_box(left) == 0 {
        return 0;
    }
    std::hint::black_box(1) + dive(left - 1)
}

/// Opens one file again and again, keeping every descriptor.
fn open_many(n: usize) {
    report(
        "exhaust/start",
        true,
        format!("opening open-me.txt {n} times"),
    );
    let mut held = Vec::new();
    for i in 0..n {
        match std::fs::File::open("open-me.txt") {
            Ok(f) => held.push(f),
            Err(e) => {
                report(
                    "exhaust/open-many",
                    false,
                    format!("io {:?} after {i}: {e}", e.kind()),
                );
                return;
            }
        }
    }
    report("exhaust/open-many", true, format!("held {}", held.len()));
}

/// Floods stdout.
fn print(mib: usize) {
    report("exhaust/start", true, format!("printing {mib} MiB"));
    let chunk = vec![b'z'; 64 << 10];
    let mut out = std::io::stdout().lock();
    let mut failed = None;
    for _ in 0..mib * 16 {
        if let Err(e) = out.write_all(&chunk) {
            failed = Some(e);
            break;
        }
    }
    let _ = out.flush();
    drop(out);
    match failed {
        None => report("exhaust/print", true, format!("printed {mib} MiB")),
        Some(e) => report("exhaust/print", false, format!("io {:?}: {e}", e.kind())),
    }
}

/// Failing calls of every kind; each answer reported whole.
fn leak_sweep() {
    for info in tools::available() {
        report(
            &format!("exhaust/available/{}", info.name),
            true,
            info.reason,
        );
    }
    let reads = [
        "missing.txt",
        "no/such/dir/file.txt",
        "../outside.txt",
        "../../../../etc/shadow",
        "/etc/shadow",
        "/",
        ".",
        "link",
        "link/secret.txt",
        "bad\0name",
    ];
    for (i, path) in reads.iter().enumerate() {
        let r = tools::read(path, None, None);
        tool(&format!("exhaust/read-{i}"), r, |o| o.content.clone());
    }
    let r = tools::write("../outside.txt", "x");
    tool("exhaust/write-outside", r, |_| "written".into());
    let r = tools::write("inside.txt", "x");
    tool("exhaust/write-inside", r, |_| "written".into());
    let r = tools::write("/tmp/x.txt", "x");
    tool("exhaust/write-tmp", r, |_| "written".into());
    let r = tools::edit("missing.txt", "a", "b", false);
    tool("exhaust/edit-missing", r, |n| format!("{n}"));
    let r = tools::edit(".", "a", "b", false);
    tool("exhaust/edit-dir", r, |n| format!("{n}"));
    let r = tools::glob("[", None);
    tool("exhaust/glob-bad", r, |p| p.join(","));
    let r = tools::glob("*", Some("/etc"));
    tool("exhaust/glob-outside", r, |p| p.join(","));
    let r = tools::glob("*", Some("missing"));
    tool("exhaust/glob-missing", r, |p| p.join(","));
    let r = tools::glob("../*", None);
    tool("exhaust/glob-dotdot", r, |p| p.join(","));
    let r = tools::grep("(", None, None, tools::GrepMode::Content, false);
    tool("exhaust/grep-bad", r, |o| o.text.clone());
    let r = tools::grep("x", Some("/"), None, tools::GrepMode::Content, false);
    tool("exhaust/grep-root", r, |o| o.text.clone());
    let r = tools::grep("x", Some("missing"), None, tools::GrepMode::Content, false);
    tool("exhaust/grep-missing", r, |o| o.text.clone());
    let r = tools::bash("pwd", None);
    tool("exhaust/bash", r, |o| format!("{} {}", o.stdout, o.stderr));
    fs(
        "exhaust/fs-read-missing",
        std::fs::read_to_string("missing.txt"),
        |s| s.clone(),
    );
    fs("exhaust/fs-cwd", std::env::current_dir(), |p| {
        p.display().to_string()
    });
}
