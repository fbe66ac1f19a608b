//! `teamhost watch --team T`: the live view of any team on disk ([`crate::view`]),
//! full screen on a terminal, plain timestamped lines otherwise (or with
//! `--lines`). It reads only; it writes when the person answers a request or
//! sends a message.

use clap::Args;

use super::{Output, TeamArg};
use crate::home::Home;
use crate::store::Store;
use crate::view::{self, WatchMode};

/// Arguments of `teamhost watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    team: TeamArg,
    /// Print plain timestamped lines even on a terminal (the default without
    /// one). They end when the team is deleted.
    #[arg(long)]
    lines: bool,
}

pub(super) fn watch(home: &Home, store: &Store, out: &Output, a: WatchArgs) -> anyhow::Result<()> {
    if out.is_json() {
        anyhow::bail!(
            "`teamhost watch` has no JSON form; `teamhost status --json` gives a snapshot"
        );
    }
    let team = store.team(&a.team.team)?;
    let mode = if a.lines || !view::terminal_available() {
        WatchMode::Lines
    } else {
        WatchMode::Screen
    };
    Ok(view::watch(team, Some(home.clone()), mode)?)
}
