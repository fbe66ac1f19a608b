//! `teamhost completions SHELL` and `teamhost man`: the command line's own
//! reference, generated from its definition (`clap_complete`,
//! `clap_mangen`), so it never differs from what the binary accepts.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;

/// Arguments of `teamhost completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: Shell,
}

/// Prints the completion script for `a.shell` on stdout.
pub(super) fn completions(a: &CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "teamhost", &mut buf);
    write_all(&buf)
}

/// Prints the manual page (roff) on stdout: `teamhost man | man -l -`.
pub(super) fn man() -> anyhow::Result<()> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut buf)?;
    write_all(&buf)
}

/// Writes `bytes` to stdout; a reader that went away is not an error.
fn write_all(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write to stdout: {e}"))
        }
        _ => Ok(()),
    }
}
