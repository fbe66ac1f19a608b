//! `teamhost completions SHELL` and `teamhost man`: the command line's own
//! reference, generated from its definition (`clap_complete`,
//! `clap_mangen`), so it never differs from what the binary accepts.

use clap::Args;
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
    let mut cmd = Cli::definition();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "teamhost", &mut buf);
    write_all(&buf)
}

/// Arguments of `teamhost man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand's page (`run` is teamhost-run(1), which teamhost(1)
    /// names under SEE ALSO); without one, teamhost(1).
    page: Option<String>,
    /// Write every page into DIR instead (teamhost.1, teamhost-run.1, …:
    /// `man -M` or MANPATH finds them under DIR/..).
    #[arg(long, value_name = "DIR", conflicts_with = "page")]
    dir: Option<std::path::PathBuf>,
}

/// Prints a manual page (roff) on stdout (`teamhost man | man -l -`,
/// `teamhost man run | man -l -`), or writes them all into `--dir`.
pub(super) fn man(a: &ManArgs) -> anyhow::Result<()> {
    // Built: global options (--home, --store, …) appear on every page, the
    // store's only where a store is opened.
    let root = Cli::definition();
    if let Some(dir) = &a.dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot make {}: {e}", dir.display()))?;
        for (file, cmd) in pages(&root) {
            let path = dir.join(format!("{file}.1"));
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut buf)?;
            std::fs::write(&path, buf)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        }
        return Ok(());
    }
    let cmd = match &a.page {
        None => root,
        Some(name) => pages(&root)
            .into_iter()
            .find(|(file, _)| *file == format!("teamhost-{name}"))
            .map(|(_, cmd)| cmd)
            .ok_or_else(|| {
                let names: Vec<String> = root
                    .get_subcommands()
                    .map(|c| c.get_name().to_string())
                    .collect();
                anyhow::anyhow!(
                    "no manual page {name:?}: `teamhost man` has one per subcommand: {}",
                    names.join(", ")
                )
            })?,
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    write_all(&buf)
}

/// Every page: teamhost(1), then teamhost-SUB(1) for each subcommand (named
/// so, as teamhost(1)'s SEE ALSO names them), by file stem.
fn pages(root: &clap::Command) -> Vec<(String, clap::Command)> {
    let mut all = vec![("teamhost".to_string(), root.clone())];
    for sub in root.get_subcommands() {
        let name = format!("teamhost-{}", sub.get_name());
        all.push((name.clone(), sub.clone().display_name(name)));
    }
    all
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
