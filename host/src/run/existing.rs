//! What a run does with a team that already exists, before it creates or
//! touches anything ([`super::Start`]: plain is `Fresh`):
//!
//! | the team | plain run | `--replace` | `--resume` |
//! |---|---|---|---|
//! | does not exist | created | created | refused: nothing to resume |
//! | run by a live host on this machine | refused, naming the host and how to stop it | refused, the same | refused, the same |
//! | left by a host that died, or by none of this machine | refused, pointing to `--resume` (and to `--replace` to throw it away) | deleted ([`teardown::delete_team`], with what teamhost started for it), then created | resumed |
//!
//! "A live host" is [`live_host::find`]: one teamhost process on this
//! machine whose records (the run's claim, its spawn and process records)
//! name it for this team. A team whose lead is Claude Code has none of
//! these: nothing here can tell whether it runs. Whether the team exists is
//! asked so that an unreadable home is that error, never "already exists".

use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use super::narrator::Narrator;
use super::plan::Start;
use crate::backends::{live_host, teardown};
use crate::home::Home;
use crate::store::Team;

/// How long the processes a dead host left get between SIGTERM and SIGKILL
/// when `--replace` deletes its team.
const REPLACE_STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Checks the team against the table above, and deletes it for
/// `--replace`. `Ok` means: go on (create it, or resume it).
pub async fn existing_team(
    home: &Home,
    team: &Team,
    start: Start,
    manifest_file: &Path,
    narrator: &dyn Narrator,
) -> anyhow::Result<()> {
    let resume = start == Start::Resume;
    let (h, t) = (home.clone(), team.clone());
    let (exists, live, dead) = crate::blocking::run("looking at the existing team", move || {
        let exists = t.try_exists().with_context(|| {
            format!(
                "cannot tell whether team {:?} exists at {}",
                t.name(),
                t.location().display()
            )
        })?;
        if !exists {
            return Ok::<_, anyhow::Error>((false, None, Vec::new()));
        }
        let live = live_host::find(&h, &t)?;
        Ok((true, live, live_host::dead_hosts(&h, t.name())))
    })
    .await??;
    let manifest = manifest_file.display();
    if !exists {
        if resume {
            anyhow::bail!(
                "team {:?} does not exist at {}: there is nothing to resume; run without --resume to start it",
                team.name(),
                team.location().display()
            );
        }
        return Ok(());
    }
    if let Some(host) = live {
        let what = if resume {
            "resume brings back a team whose host died, and two hosts would run the same teammates"
                .to_string()
        } else if start == Start::Replace {
            "--replace would delete the tasks, inboxes and requests it is using".to_string()
        } else {
            format!(
                "a second run would run the same teammates twice (to run this manifest beside it, change [team] name in {manifest})"
            )
        };
        return Err(host.refusal(&what).into());
    }
    if resume {
        return Ok(());
    }
    if start != Start::Replace {
        let who = match dead.first() {
            Some(pid) => format!(", left by teamhost process {pid}, which is no longer running"),
            None => ", and no teamhost host on this machine runs it".to_string(),
        };
        anyhow::bail!(
            "team {:?} already exists at {}{who}: continue it with `teamhost run --resume {manifest}` (its teammates come back and take up their unfinished tasks), or throw it away and start afresh with `teamhost run --replace {manifest}` (deletes its tasks, inboxes and histories), or change [team] name in {manifest}",
            team.name(),
            team.location().display(),
        );
    }
    let (h, t) = (home.clone(), team.clone());
    let done = crate::blocking::run("deleting the existing team", move || {
        teardown::delete_team(&h, &t, true, REPLACE_STOP_TIMEOUT)
    })
    .await?
    .with_context(|| format!("cannot delete the existing team {:?}", team.name()))?;
    let stopped = done.stopped.stopped.len() + done.stopped.killed.len();
    let also = if stopped > 0 {
        format!(", after stopping {stopped} teammate process(es) its dead host left")
    } else {
        String::new()
    };
    narrator.line(
        "run",
        format!(
            "deleted the existing team {} (--replace){also}",
            team.name()
        ),
    );
    Ok(())
}

/// Records this process as the team's host ([`crate::home::run_claim::claim`]), so that
/// another run, `--replace`, `--resume` or `teamhost team delete` refuses
/// while it runs, from before its first teammate is spawned. A claim that
/// cannot be written is logged: the spawn records still name this host once
/// teammates run.
pub fn claim(home: &Home, team: &Team) {
    if let Err(e) = crate::home::run_claim::claim(home, team.name()) {
        tracing::warn!(team = %team.name(), error = %e, "could not record this run as the team's host");
    }
}
