//! The `teamhost` command: argument parsing and dispatch. Each command family
//! lives in its own file; all of them print human text, or JSON with `--json`.

mod approve;
mod check;
mod doctor;
mod examples;
mod logs;
mod message;
pub mod model_args;
mod new;
mod output;
mod ps;
mod reference;
mod run;
mod schema;
mod settings_args;
mod shutdown;
mod status;
mod stop_team;
mod store_cmd;
pub mod store_select;
mod task;
mod team;
mod team_state;
mod teammate;
mod tolerant;
mod watch;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::home::Home;

pub use output::{error_text, Output};
pub use tolerant::tolerate_unknown_flags;

/// Run AI-agent teammates as WebAssembly components, on Claude Code's
/// agent-teams protocol.
#[derive(Debug, Parser)]
#[command(
    name = "teamhost",
    version,
    about,
    propagate_version = true,
    after_help = examples::TOP,
    mut_subcommands = examples::attach
)]
pub struct Cli {
    /// Home directory (default: $TEAMHOST_HOME, else ~/.teamhost). Point it at
    /// ~/.claude to work on Claude Code's teams.
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,

    /// Where teams live: nats://HOST:PORT[/PREFIX] for a NATS JetStream
    /// server that teammates on several hosts share (default:
    /// $TEAMHOST_STORE, else the files under the home). The home then keeps
    /// only this machine's files (cache, logs, worktrees, process records).
    #[arg(
        long,
        global = true,
        env = "TEAMHOST_STORE",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub store: Option<String>,

    /// The NATS store's TLS files and credentials (`--store-ca`, …).
    #[command(flatten)]
    pub store_security: store_select::SecurityArgs,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
// `run` and `teammate` carry many flags; the value is parsed once per
// process, so its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, list, show and delete teams.
    #[command(subcommand)]
    Team(team::TeamCommand),
    /// Work with a team's shared task list.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Send a message to one member's inbox.
    Send(message::SendArgs),
    /// Send a message to every member but the sender.
    Broadcast(message::BroadcastArgs),
    /// Show (or consume with --take) a member's inbox.
    Inbox(message::InboxArgs),
    /// A one-shot snapshot: teammates, tasks, pending requests, latest messages.
    Status(status::StatusArgs),
    /// The live view of a team: teammates, task board, requests waiting for
    /// the lead (answered with a key) and messages; plain lines without a
    /// terminal.
    Watch(watch::WatchArgs),
    /// Answer a teammate's permission request (as the lead).
    Permit(approve::PermitArgs),
    /// Approve or reject a teammate's plan (as the lead).
    Plan(approve::PlanArgs),
    /// Ask a teammate to shut down (as the lead), with a shutdown_request.
    Shutdown(shutdown::ShutdownArgs),
    /// Run a team from a manifest until its tasks are done, then shut it down
    /// and print who did what.
    Run(run::RunArgs),
    /// Run one teammate whose member entry its lead already wrote (the program
    /// a Claude Code lead starts through CLAUDE_CODE_TEAMMATE_COMMAND).
    Teammate(teammate::TeammateArgs),
    /// Copy a team between a NATS store (--store) and the file layout.
    #[command(subcommand)]
    Store(store_cmd::StoreCommand),
    /// The teams this machine runs: their hosts and teammate processes,
    /// each alive or dead.
    Ps(ps::PsArgs),
    /// Print the teammates' logs (strip of escape sequences); -f follows
    /// them until the team's run ends.
    Logs(logs::LogsArgs),
    /// Stop a whole team: its host shuts every teammate down (the shutdown
    /// protocol), then ends; teammate processes left by a dead host are
    /// stopped too.
    Stop(stop_team::StopArgs),
    /// Validate a manifest and compile every component it names (warming
    /// the compile cache), creating nothing.
    Check(check::CheckArgs),
    /// What confinement this machine gives teammates, and what is missing.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(reference::CompletionsArgs),
    /// Print a manual page (roff), e.g. `teamhost man | man -l -` or
    /// `teamhost man run | man -l -`; `--dir DIR` writes them all.
    Man(reference::ManArgs),
    /// Print the JSON Schema of the team manifest, for editors.
    Schema,
    /// Create a teammate project (Rust, Python or JS) from a template
    /// shipped in teamhost, with its test team and the WIT contract.
    New(new::NewArgs),
}

/// The commands that open no store: the store's options (global, so that
/// they parse anywhere) are left out of their help, man page and
/// completions.
const NO_STORE: &[&str] = &["new", "check", "doctor", "completions", "man", "schema"];

/// The store's options, by id: `--store` and [`store_select::SecurityArgs`].
const STORE_OPTIONS: &[&str] = &[
    "store",
    "store_ca",
    "store_cert",
    "store_key",
    "store_creds",
    "store_nkey",
];

impl Cli {
    /// The command line's definition as `teamhost` parses it and shows it
    /// (`--help`, `man`, `completions`): [`Cli`]'s, built, with the
    /// store's options hidden under the commands that open no store.
    pub fn definition() -> clap::Command {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        // Built first: global options are copied into each subcommand then.
        cmd.build();
        for name in NO_STORE {
            // In place (`mut_args`): `mut_arg` moves an argument to the end,
            // which a built command's index of flags does not follow.
            cmd = cmd.mut_subcommand(name, |sub| {
                sub.mut_args(|a| {
                    let store = STORE_OPTIONS.contains(&a.get_id().as_str());
                    if store {
                        a.hide(true)
                    } else {
                        a
                    }
                })
            });
        }
        cmd
    }

    /// Parses `args` with [`Cli::definition`]; on an error or `--help`,
    /// prints and exits as clap does.
    pub fn parse_args<I, T>(args: I) -> Cli
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::FromArgMatches;
        let matches = Cli::definition().get_matches_from(args);
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// The team a command acts on: `--team`, else `$TEAMHOST_TEAM`.
#[derive(Debug, Clone, clap::Args)]
pub struct TeamArg {
    /// Team name.
    #[arg(
        long,
        env = "TEAMHOST_TEAM",
        hide_env_values = true,
        value_name = "TEAM"
    )]
    pub team: String,
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Teammate(a) = cli.command {
        // Its own home rules: it may have been started by Claude Code.
        return teammate::run(
            cli.home.as_deref(),
            cli.store.as_deref(),
            &cli.store_security.security(),
            &Output::new(cli.json),
            a,
        );
    }
    // Commands that need no home.
    match &cli.command {
        Command::Completions(a) => return reference::completions(a),
        Command::Man(a) => return reference::man(a),
        Command::Schema => return schema::print(),
        _ => {}
    }
    if let Command::New(a) = cli.command {
        // Needs no home: it only writes the new project.
        return new::new(&Output::new(cli.json), a);
    }
    let home = Home::resolve(cli.home.as_deref())?;
    if let Command::Doctor(a) = cli.command {
        // Reports an unusable home itself, among the other checks.
        return doctor::doctor(&home, &Output::new(cli.json), a);
    }
    home.check_usable()?;
    let out = Output::new(cli.json);
    if let Command::Run(a) = cli.command {
        // The manifest may name the store too.
        return run::run(
            &home,
            cli.store.as_deref(),
            &cli.store_security.security(),
            &out,
            a,
        );
    }
    if let Command::Check(a) = cli.command {
        // Reads the manifest only: no store is opened.
        return check::check(&home, &out, a);
    }
    let store = store_select::open(&home, cli.store.as_deref(), &cli.store_security.security())?;
    // What these commands write as the lead into a keyed teammate's inbox
    // is signed with the key the launching host kept in this home.
    let ring = std::sync::Arc::new(crate::home::lead_keys::HomeKeyring::new(home.clone()));
    let store = store.with_lead_guard(std::sync::Arc::new(crate::store::LeadGuard::from_keyring(
        ring,
    )));
    match cli.command {
        Command::Team(c) => team::run(&home, &store, &out, c),
        Command::Task(c) => task::run(&store, &out, c),
        Command::Send(a) => message::send(&store, &out, a),
        Command::Broadcast(a) => message::broadcast(&store, &out, a),
        Command::Inbox(a) => message::inbox(&store, &out, a),
        Command::Status(a) => status::status(&home, &store, &out, a),
        Command::Watch(a) => watch::watch(&home, &store, &out, a),
        Command::Permit(a) => approve::permit(&home, &store, &out, a),
        Command::Plan(a) => approve::plan(&home, &store, &out, a),
        Command::Shutdown(a) => shutdown::shutdown(&store, &out, a),
        Command::Store(c) => store_cmd::run(&store, &out, c),
        Command::Ps(a) => ps::ps(&home, &store, &out, a),
        Command::Logs(a) => logs::logs(&home, &store, &out, a),
        Command::Stop(a) => stop_team::stop(&home, &store, &out, a),
        Command::Run(_)
        | Command::Teammate(_)
        | Command::Check(_)
        | Command::Doctor(_)
        | Command::Completions(_)
        | Command::Man(_)
        | Command::Schema
        | Command::New(_) => unreachable!("handled above"),
    }
}
