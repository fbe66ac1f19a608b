//! `special …`: special files (a FIFO, socket or device node) in the
//! guest's directory, which must never hold a host thread. One command word,
//! `special`, then a sub-command:
//!
//! | sub-command | what it tries |
//! |---|---|
//! | `fs-read PATH` | `std::fs::read(PATH)`: the guest's own WASI open, to read |
//! | `fs-write PATH` | opens PATH to write (no create) with `std::fs` and writes a byte |
//! | `fs-create PATH` | `std::fs::File::create(PATH)` (create and truncate) |
//! | `fs-open-dir PATH` | `std::fs::read_dir(PATH)` |
//! | `tools PATH` | `tools.read`, `tools.edit`, `tools.write` of PATH, then `tools.grep` and `tools.glob` over the whole directory |

use std::io::Write as _;

use super::{fs, report, tool, tools};

/// Runs `special ARGS…`.
pub fn run(args: &[&str]) {
    match args {
        ["fs-read", path] => fs("special/fs-read", std::fs::read(path), |b| {
            format!("read {} bytes", b.len())
        }),
        ["fs-write", path] => {
            let r = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(b"x"));
            fs("special/fs-write", r, |_| "wrote 1 byte".into());
        }
        ["fs-create", path] => {
            let r = std::fs::File::create(path).and_then(|mut f| f.write_all(b"x"));
            fs("special/fs-create", r, |_| "created".into());
        }
        ["fs-open-dir", path] => fs(
            "special/fs-open-dir",
            std::fs::read_dir(path).map(|d| d.count()),
            |n| format!("{n} entries"),
        ),
        ["tools", path] => {
            tool("special/tool-read", tools::read(path, None, None), |o| {
                format!("{} lines", o.lines)
            });
            tool(
                "special/tool-edit",
                tools::edit(path, "a", "b", false),
                |n| format!("{n} replaced"),
            );
            tool("special/tool-write", tools::write(path, "x"), |_| {
                "wrote".into()
            });
            let r = tools::grep(".", None, None, tools::GrepMode::FilesWithMatches, false);
            tool("special/tool-grep", r, |o| format!("files={:?}", o.files));
            tool("special/tool-glob", tools::glob("**/*", None), |paths| {
                format!("paths={paths:?}")
            });
        }
        _ => report(
            "special",
            false,
            format!("unknown special command {args:?}"),
        ),
    }
}
