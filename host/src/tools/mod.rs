//! The tool executors: `Read`, `Write`, `Edit`, `Glob`, `Grep` and `Bash`
//! with the reference's inputs ([`crate::sandbox`]), run by the host **after**
//! [`crate::sandbox::decide`] allowed the call.
//!
//! The policy decides; this module contains. Whatever an allowed input says,
//! nothing here can touch a file outside the teammate's capability directory:
//!
//! - every path is normalised lexically first: an absolute path must lie in
//!   the directory (it is made relative), a `..` that climbs above it is
//!   refused with [`ToolError::Denied`];
//! - every file access then goes through one [`cap_std::fs::Dir`] opened once,
//!   at spawn ([`ToolBox::open`]), so a symlink or a `..` that leads out is
//!   refused by cap-std at the OS level as well;
//! - `Bash` runs a host process that the kernel confines to the directory
//!   (Landlock, see [`confine`]).
//!
//! The API is synchronous: the caller runs it on a blocking thread.
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`ToolBox`], [`ToolLimits`], [`ToolError`], path normalisation |
//! | [`read`] | `Read`: numbered lines, offset and limit, text only |
//! | [`write`](mod@write) | `Write`: parents created, atomic temp file + rename |
//! | [`edit`] | `Edit`: exactly one occurrence, or `replace_all` |
//! | [`glob`] | `Glob`, the glob matcher and the directory walk Grep shares |
//! | [`grep`] | `Grep`: the `regex` crate, three output modes, context lines |
//! | [`bash`] | `Bash`: `/bin/sh -c` in a scrubbed, timed, capped process group |
//! | [`confine`] | what `Bash` runs under: Landlock, namespaces, rlimits, the order of it all |
//! | [`netns`] | a teammate's network namespace: only `lo`, and the listener its proxy serves |
//! | [`seccomp`] | the system calls `Bash` may not make (sockets, io_uring, namespaces, …) |
//! | [`cgroup`] | a control group per `Bash` call: process count and memory of the tree |
//! | [`usage`] | the disk budget: a bounded measurement of the directory, the check before a write |
//! | [`setid`] | no set-uid or set-gid file stays in the directory: the walk's backstop |
//! | [`redact`] | host paths taken out of every text a teammate gets back |
//!
//! # Limits
//!
//! | [`ToolLimits`] field | default | bounds |
//! |---|---|---|
//! | `max_output_bytes` | 256 KiB | Read's text, Grep's text, each of Bash's stdout and stderr |
//! | `max_results` | 1,000 | Glob's paths, Grep's files and counts |
//! | `max_file_bytes` | 10 MiB | a file Edit rewrites, Write's content, a file Grep searches (bigger ones are skipped) |
//! | `read_default_lines` | 2,000 | lines Read returns when the input has no `limit` |
//! | `max_line_chars` | 2,000 | characters of one line in Read and Grep output (longer lines end in `…`) |
//! | `max_walk_entries` | 100,000 | directory entries one Glob or Grep visits |
//! | `bash_timeout` | 120 s | Bash without a `timeout` |
//! | `max_bash_timeout` | 600 s | the most a Bash `timeout` can ask for (longer is clamped) |
//! | `bash_memory_bytes` | 1 GiB (the host sets the teammate's `memory_bytes`) | memory of a Bash call's process tree (cgroup), else per process (`RLIMIT_AS`) |
//! | `bash_processes` | 128 | processes and threads of one Bash call alive at once (pids cgroup) |
//! | `bash_cpu` | 60 s (the host sets the teammate's `cpu_per_turn`) | CPU time of each process of a Bash call (`RLIMIT_CPU`) |
//! | `bash_max_file_bytes` | 1 GiB | largest file a Bash call writes (`RLIMIT_FSIZE`) |
//! | `bash_open_files` | 1,024 | descriptors per Bash process (`RLIMIT_NOFILE`) |
//!
//! Fixed bounds on host memory per call, whatever the file's shape: Read
//! keeps at most `4 × max_line_chars` bytes of a line and scans at most
//! [`read::MAX_SCAN_BYTES`] (64 MiB) per call; Grep holds one file of at
//! most `max_file_bytes` and skips one of more than [`grep::MAX_FILE_LINES`]
//! lines; a walk never lists more of a directory than its budget has left.
//! The disk budget of the directory ([`usage`]) comes from the teammate's
//! [`Limits`](crate::sandbox::Limits), given to
//! [`write_within`](ToolBox::write_within) and [`edit_within`](ToolBox::edit_within).

pub mod bash;
pub mod cgroup;
pub mod confine;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod netns;
pub mod read;
pub mod redact;
pub mod seccomp;
pub mod setid;
pub mod usage;
pub mod write;

pub use bash::{BashOutput, Confinement};
pub use confine::Enforcement;
pub use edit::EditOutput;
pub use glob::GlobOutput;
pub use grep::{GrepMode, GrepOutput};
pub use read::ReadOutput;
pub use redact::Redactor;
pub use usage::{DiskBudget, DiskUsage};
pub use write::WriteOutput;

use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use cap_std::fs::{File, OpenOptions, OpenOptionsExt};

use confine::Landlock;

mod dir_handle;

/// Sizes and times that bound every tool call. See the module docs for the
/// table of defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLimits {
    /// Most bytes of text one output carries (Read, Grep, each Bash stream).
    pub max_output_bytes: usize,
    /// Most paths Glob returns, most files or counts Grep returns.
    pub max_results: usize,
    /// Largest file Edit rewrites, Write writes or Grep searches.
    pub max_file_bytes: u64,
    /// Lines Read returns when the input gives no `limit`.
    pub read_default_lines: u64,
    /// Longest line, in characters, Read and Grep show.
    pub max_line_chars: usize,
    /// Most directory entries one Glob or Grep walk visits.
    pub max_walk_entries: usize,
    /// Bash's timeout when the input has none.
    pub bash_timeout: Duration,
    /// The longest timeout a Bash input can ask for.
    pub max_bash_timeout: Duration,
    /// Memory a Bash call's whole process tree may hold (a memory cgroup),
    /// or each of its processes may map where there is none (`RLIMIT_AS`).
    pub bash_memory_bytes: u64,
    /// Processes and threads a Bash call may have alive at once (a pids
    /// cgroup; unbounded where there is none).
    pub bash_processes: u64,
    /// CPU time each process of a Bash call may use (`RLIMIT_CPU`).
    pub bash_cpu: Duration,
    /// Largest file a Bash call's processes may write (`RLIMIT_FSIZE`).
    pub bash_max_file_bytes: u64,
    /// Descriptors each process of a Bash call may hold (`RLIMIT_NOFILE`).
    pub bash_open_files: u64,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            max_output_bytes: 256 * 1024,
            max_results: 1_000,
            max_file_bytes: 10 * 1024 * 1024,
            read_default_lines: 2_000,
            max_line_chars: 2_000,
            max_walk_entries: 100_000,
            bash_timeout: Duration::from_secs(120),
            max_bash_timeout: Duration::from_secs(600),
            bash_memory_bytes: 1 << 30,
            bash_processes: 128,
            bash_cpu: Duration::from_secs(60),
            bash_max_file_bytes: 1 << 30,
            bash_open_files: 1024,
        }
    }
}

/// Why a tool call failed. The host maps each variant to the WIT error kind
/// of the same name; the message is for the teammate.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The file or directory does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The input is malformed or asks for something the tool does not do
    /// (a bad regex, a binary file, a directory given to Read).
    #[error("{0}")]
    Invalid(String),
    /// The path leads outside the teammate's directory, or the OS refused.
    #[error("{0}")]
    Denied(String),
    /// Edit found `old_string` more than once without `replace_all`.
    #[error("{0}")]
    Conflict(String),
    /// A file or content is bigger than [`ToolLimits`] allows.
    #[error("{0}")]
    TooLarge(String),
    /// Bash needs kernel confinement this machine does not offer.
    #[error("{0}")]
    Unconfined(String),
    /// Any other I/O failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, and to which path.
        context: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl ToolError {
    /// An I/O error on `path` (relative to the capability directory) while
    /// doing `op`, classified: missing → [`NotFound`](ToolError::NotFound),
    /// a cap-std escape or `EACCES` → [`Denied`](ToolError::Denied).
    pub(crate) fn io(op: &str, path: &Path, err: io::Error) -> ToolError {
        let shown = show(path);
        match err.kind() {
            io::ErrorKind::NotFound => {
                ToolError::NotFound(format!("{shown}: no such file or directory"))
            }
            // cap-std's escape error carries no OS error code.
            io::ErrorKind::PermissionDenied if err.raw_os_error().is_none() => {
                ToolError::Denied(format!(
                    "{shown} leads outside the teammate's directory (through a symlink or `..`)"
                ))
            }
            io::ErrorKind::PermissionDenied => {
                ToolError::Denied(format!("{shown}: permission denied"))
            }
            _ => ToolError::Io {
                context: format!("{op} {shown}"),
                source: err,
            },
        }
    }
}

/// A path relative to the capability directory, for messages and results:
/// `/` separators, `.` for the directory itself.
pub(crate) fn show(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.to_string_lossy().into_owned()
    }
}

/// The path cap-std is given for `rel` (`.` for the directory itself).
pub(crate) fn cap_path(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// One teammate's tools, bound to its capability directory. Built once at
/// spawn; every call goes through the [`Dir`] it holds.
#[derive(Debug)]
pub struct ToolBox {
    /// The directory's descriptor, let go while the teammate idles.
    dir: dir_handle::DirHandle,
    /// The directory, canonical.
    root: PathBuf,
    /// The directory as given to [`ToolBox::open`], made absolute (absolute
    /// input paths may use either spelling).
    given: PathBuf,
    limits: ToolLimits,
    landlock: Landlock,
    /// The teammate's network namespace, once its network is ready
    /// ([`ToolBox::attach_network`]).
    network: std::sync::OnceLock<netns::Netns>,
}

impl ToolBox {
    /// Opens the capability directory `dir` (it must exist) and prepares the
    /// Landlock rule set Bash will run under. `dir` is canonicalised once,
    /// here.
    pub fn open(dir: &Path, limits: ToolLimits) -> Result<ToolBox, ToolError> {
        let given = std::path::absolute(dir)
            .map_err(|e| ToolError::io("resolve the capability directory", dir, e))?;
        let root = std::fs::canonicalize(dir).map_err(|e| ToolError::Io {
            context: format!("open the capability directory {}", dir.display()),
            source: e,
        })?;
        let dir = dir_handle::DirHandle::open(&root)?;
        let landlock = Landlock::prepare();
        Ok(ToolBox {
            dir,
            root,
            given: lexical(&given),
            limits,
            landlock,
            network: std::sync::OnceLock::new(),
        })
    }

    /// Gives this teammate's Bash calls a network: from now on each runs in
    /// `ns` (its proxy's listener inside), may connect to the proxy's port
    /// and open TCP sockets, and is told the proxy in `HTTP_PROXY`,
    /// `HTTPS_PROXY` and `ALL_PROXY`. Only where Bash gets namespaces
    /// ([`confine::namespaces`]); once per tool box (a second namespace is
    /// refused and dropped).
    pub fn attach_network(&self, ns: netns::Netns) -> Result<(), ToolError> {
        if !confine::namespaces() {
            return Err(ToolError::Unconfined(
                "a teammate's network needs Bash to run in namespaces of its own \
                 (CAP_SYS_ADMIN), which this host does not have"
                    .to_owned(),
            ));
        }
        self.network
            .set(ns)
            .map_err(|_| ToolError::Invalid("the teammate's network is attached already".into()))
    }

    /// Whether Bash runs with a network ([`Self::attach_network`]).
    pub fn has_network(&self) -> bool {
        self.network.get().is_some()
    }

    /// The capability directory, canonical.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Lets the directory's descriptor go until the next call needs it
    /// (the teammate is idle: see `dir_handle.rs`).
    pub fn release_dir(&self) {
        self.dir.release();
    }

    /// The limits this tool box applies.
    pub fn limits(&self) -> &ToolLimits {
        &self.limits
    }

    /// What confinement Bash gets on this machine: the Landlock ABI and what
    /// it covers, or why there is none.
    pub fn confinement(&self) -> Enforcement {
        self.landlock.enforcement()
    }

    /// Opens `rel` for reading if it is a regular file (a symlink to one
    /// inside the directory counts). Its type is looked at first, so a FIFO,
    /// socket or device node is refused without being opened (a device's
    /// open can do things); it is then opened non-blocking and checked again
    /// on the open descriptor, so one swapped in between cannot hang the
    /// call either.
    pub(crate) fn open_regular(&self, op: &str, rel: &Path) -> Result<File, ToolError> {
        let dir = self.dir.get()?;
        let before = dir
            .metadata(cap_path(rel))
            .map_err(|e| ToolError::io(op, rel, e))?;
        regular(rel, &before)?;
        let mut options = OpenOptions::new();
        options
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = dir
            .open_with(cap_path(rel), &options)
            .map_err(|e| ToolError::io(op, rel, e))?;
        let meta = file.metadata().map_err(|e| ToolError::io(op, rel, e))?;
        regular(rel, &meta)?;
        Ok(file)
    }

    /// `raw` (absolute, or relative to the capability directory) as a path
    /// relative to it, of plain names only; empty for the directory itself.
    /// Refuses what lies outside before any file is touched.
    pub(crate) fn relative(&self, raw: &str) -> Result<PathBuf, ToolError> {
        if raw.contains('\0') {
            return Err(ToolError::Invalid(format!(
                "{raw:?}: a path cannot contain NUL"
            )));
        }
        let path = Path::new(raw);
        if path.is_absolute() {
            let normal = lexical(path);
            [&self.root, &self.given]
                .into_iter()
                .find_map(|base| normal.strip_prefix(base).ok())
                .map(Path::to_path_buf)
                .ok_or_else(|| {
                    ToolError::Denied(format!("{raw} is outside the teammate's directory"))
                })
        } else {
            let mut rel = PathBuf::new();
            for comp in path.components() {
                match comp {
                    Component::Normal(name) => rel.push(name),
                    Component::CurDir => {}
                    Component::ParentDir => {
                        if !rel.pop() {
                            return Err(ToolError::Denied(format!(
                                "{raw} climbs outside the teammate's directory"
                            )));
                        }
                    }
                    Component::RootDir | Component::Prefix(_) => {
                        return Err(ToolError::Invalid(format!("{raw:?}: not a relative path")))
                    }
                }
            }
            Ok(rel)
        }
    }
}

/// `Ok` for a regular file; a directory or special file is refused, naming
/// what it is.
fn regular(rel: &Path, meta: &cap_std::fs::Metadata) -> Result<(), ToolError> {
    if meta.is_dir() {
        return Err(ToolError::Invalid(format!(
            "{} is a directory; use Glob to list it",
            show(rel)
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Invalid(format!(
            "{} is {}, not a regular file; the tools read and write regular files only",
            show(rel),
            kind_of(meta)
        )));
    }
    Ok(())
}

/// What kind of file `meta` describes, for messages ("a FIFO").
pub(crate) fn kind_of(meta: &cap_std::fs::Metadata) -> &'static str {
    use cap_std::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symlink"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// An absolute path with `.` dropped and `..` applied (staying at `/`).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for comp in path.components() {
        match comp {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    out
}
