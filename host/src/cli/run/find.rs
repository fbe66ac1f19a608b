//! Which manifest `teamhost run` reads when none is given: `team.toml` in
//! the current directory (as `cargo` finds `Cargo.toml` and `spin up` finds
//! `spin.toml`), said on stderr so the person knows which file ran.

use std::path::PathBuf;

/// The file `teamhost run` looks for in the current directory.
pub(super) const DEFAULT_MANIFEST: &str = "team.toml";

/// `./team.toml` when it is a file (and says so on stderr), else an error
/// naming the file looked for and the commands that make or name one.
pub(super) fn manifest_here() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().map_err(|e| {
        anyhow::anyhow!(
            "cannot tell the current directory ({e}); give the manifest: teamhost run TEAM.toml"
        )
    })?;
    let file = cwd.join(DEFAULT_MANIFEST);
    if file.is_file() {
        eprintln!("teamhost run: using {}", file.display());
        return Ok(file);
    }
    anyhow::bail!(
        "no manifest given and no {} here (looked for {}): give one (teamhost run TEAM.toml), or make a teammate project with its team.toml: teamhost new NAME && cd NAME && teamhost run",
        DEFAULT_MANIFEST,
        file.display()
    )
}
