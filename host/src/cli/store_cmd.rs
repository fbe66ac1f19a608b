//! `teamhost store export|import`: copy a team between a NATS store and
//! the reference's file layout, so a team on a server can be read with the
//! reference's tools (`--to DIR` is a home: `DIR/teams/T/…`, `DIR/tasks/T/…`)
//! and a file team moved onto a server. `teamhost store info`: the servers,
//! the one connected to, the replicas new teams get and each team stream's
//! replicas and leader.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;

use super::{Output, TeamArg};
use crate::home::Home;
use crate::store::nats::transfer::Transferred;
use crate::store::{FileStore, NatsStore, Store};

/// Store commands (need `--store nats://…`).
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Show the servers, the replicas new teams get, and each team stream's
    /// replicas and leader.
    Info,
    /// Write a team of the NATS store into the file layout under DIR.
    Export {
        #[command(flatten)]
        team: TeamArg,
        /// A home directory to write the team into (made when missing).
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
    },
    /// Read a team from the file layout under DIR into the NATS store.
    Import {
        #[command(flatten)]
        team: TeamArg,
        /// The home directory the team is in.
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
    },
}

/// Runs a store command on `store`, which must be a NATS store.
pub(super) fn run(store: &Store, out: &Output, c: StoreCommand) -> anyhow::Result<()> {
    let nats = store
        .nats_store()
        .context("`teamhost store` copies between a NATS store and files: give --store nats://HOST:PORT[/PREFIX] (or set TEAMHOST_STORE)")?;
    let (verb, team, dir, done) = match c {
        StoreCommand::Info => return info(nats, out),
        StoreCommand::Export { team, to } => {
            let t = store.team(&team.team)?;
            let files = FileStore::new(Home::new(&to));
            let done = nats
                .export_team(t.name(), &files)
                .with_context(|| format!("cannot export team {} to {}", t.name(), to.display()))?;
            ("exported", t.name().to_string(), to, done)
        }
        StoreCommand::Import { team, from } => {
            let t = store.team(&team.team)?;
            let files = FileStore::new(Home::new(&from));
            let done = nats.import_team(t.name(), &files).with_context(|| {
                format!("cannot import team {} from {}", t.name(), from.display())
            })?;
            ("imported", t.name().to_string(), from, done)
        }
    };
    let Transferred {
        agents,
        unread,
        history,
        tasks,
        high,
    } = &done;
    out.print(
        &json!({"team": team, "dir": dir, "store": nats.url().display(), "agents": agents, "unread": unread, "history": history, "tasks": tasks, "highestTaskId": high}),
        || {
            format!(
                "{verb} team {team} ({} inbox(es), {unread} unread, {history} in histories, {tasks} task(s)) between {} and {}\n",
                agents.len(),
                nats.url().display(),
                dir.display()
            )
        },
    )
}

fn info(nats: &NatsStore, out: &Output) -> anyhow::Result<()> {
    let d = nats.describe()?;
    out.print(&d, || {
        let mut s = format!(
            "store    {}\nservers  {}\nserver   {} (nats-server {}{})\nreplicas {} for the streams of new teams\n",
            d.store,
            d.servers.join(", "),
            d.connected,
            d.version,
            d.cluster
                .as_ref()
                .map(|c| format!(", cluster {c}"))
                .unwrap_or_default(),
            d.replicas
        );
        for st in &d.streams {
            s.push_str(&format!(
                "stream   {}: {} replica(s){}, {} message(s)\n",
                st.name,
                st.replicas,
                st.leader
                    .as_ref()
                    .map(|l| format!(", leader {l}"))
                    .unwrap_or_default(),
                st.messages
            ));
        }
        s
    })
}
