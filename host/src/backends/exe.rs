//! The `teamhost` binary external teammates run ([`BackendOptions::exe`]),
//! checked before any process or tmux pane is started with it.
//!
//! A pane whose command cannot run dies at once, and tmux keeps nothing of
//! what it said; a child process that cannot start leaves only an OS error.
//! So the binary is checked first, and a failure says what failed and how
//! to fix it (`TEAMHOST_EXE`):
//!
//! | the binary | the check |
//! |---|---|
//! | a path | it exists and is executable |
//! | a bare name (`teamhost`: the fallback when this program is not named `teamhost`) | it is found on `PATH` (the pane gets this process's `PATH`) |
//! | either | `{exe} --version` exits 0 within [`VERSION_TIMEOUT`]; else the error quotes the first lines it wrote on stderr. Once per binary per process |

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::BackendOptions;
use crate::error::{Error, Result};

/// How long `{exe} --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How many of its stderr lines a failed check quotes.
const STDERR_LINES: usize = 5;

/// Binaries whose `--version` answered, in this process.
static ANSWERED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// The `teamhost` binary for external teammates, checked (see the module
/// docs): its path (a bare name resolved on `PATH`), or an error saying
/// what failed and how to fix it.
pub(crate) async fn checked_exe(opts: &BackendOptions) -> Result<PathBuf> {
    let exe = located(&opts.exe())?;
    if ANSWERED.lock().is_ok_and(|a| a.contains(&exe)) {
        return Ok(exe);
    }
    answers_version(&exe).await?;
    if let Ok(mut a) = ANSWERED.lock() {
        a.insert(exe.clone());
    }
    Ok(exe)
}

/// `exe` when it is an executable file, or the first executable `exe` on
/// `PATH` when it is a bare name.
fn located(exe: &Path) -> Result<PathBuf> {
    let fix = "set TEAMHOST_EXE (or BackendOptions::teamhost_exe) to the teamhost binary";
    if exe.components().count() > 1 {
        return match std::fs::metadata(exe) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(exe.to_path_buf()),
            Ok(_) => Err(Error::Backend(format!(
                "the teamhost binary {} is not an executable file; {fix}",
                exe.display()
            ))),
            Err(e) => Err(Error::Backend(format!(
                "the teamhost binary {} cannot be used ({e}); {fix}",
                exe.display()
            ))),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(exe))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| {
            let me = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "this program".into());
            Error::Backend(format!(
                "teammates in their own process or tmux pane run `{}`, and no such command is on PATH (this program, {me}, is not named teamhost, so it is not used itself); {fix}",
                exe.display()
            ))
        })
}

/// Runs `exe --version`: `Ok` when it exits 0 in time, else an error with
/// the first lines it wrote on stderr.
async fn answers_version(exe: &Path) -> Result<()> {
    let fix = "set TEAMHOST_EXE (or BackendOptions::teamhost_exe) to the teamhost binary";
    let run = tokio::process::Command::new(exe)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(VERSION_TIMEOUT, run).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            return Err(Error::Backend(format!(
                "the teamhost binary {} cannot be started ({e}); {fix}",
                exe.display()
            )))
        }
        Err(_) => {
            return Err(Error::Backend(format!(
                "the teamhost binary {} did not answer `--version` within {}s; {fix}",
                exe.display(),
                VERSION_TIMEOUT.as_secs()
            )))
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = said
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(STDERR_LINES)
        .collect();
    let said = if lines.is_empty() {
        "it wrote nothing on stderr".to_string()
    } else {
        format!(
            "its stderr: {}",
            crate::protocol::describe::printable_line(&lines.join(" / "))
        )
    };
    Err(Error::Backend(format!(
        "the teamhost binary {} does not run: `{} --version` ended with {} ({said}); {fix}",
        exe.display(),
        exe.display(),
        out.status
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_missing_from_path_names_the_command_and_the_fix() {
        let e = located(Path::new("teamhost-not-installed-anywhere"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`teamhost-not-installed-anywhere`"), "{e}");
        assert!(e.contains("PATH"), "{e}");
        assert!(e.contains("TEAMHOST_EXE"), "{e}");
    }

    #[test]
    fn a_path_that_is_not_executable_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("teamhost");
        std::fs::write(&f, "not a program").unwrap();
        let e = located(&f).unwrap_err().to_string();
        assert!(e.contains("not an executable file"), "{e}");
        assert!(e.contains("TEAMHOST_EXE"), "{e}");
        let e = located(&dir.path().join("gone")).unwrap_err().to_string();
        assert!(e.contains("cannot be used"), "{e}");
    }

    #[tokio::test]
    async fn a_binary_that_fails_at_once_is_refused_quoting_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("teamhost");
        std::fs::write(
            &f,
            "#!/bin/sh\necho 'error while loading shared libraries: libfoo.so' >&2\nexit 127\n",
        )
        .unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        let opts = BackendOptions {
            teamhost_exe: Some(f.clone()),
            ..Default::default()
        };
        let e = checked_exe(&opts).await.unwrap_err().to_string();
        assert!(e.contains("libfoo.so"), "{e}");
        assert!(e.contains("TEAMHOST_EXE"), "{e}");
        assert!(!e.contains(".log"), "{e}");
    }
}
