//! `teamhost team create|delete|list|show`.

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;

use super::output::push_line;
use super::team_state::TeamState;
use super::Output;
use crate::home::Home;
use crate::store::config::session_team_name;
use crate::store::{NewMember, NewTeam, Store};

/// The teams of `store`, as an error's hint: "the teams here are a, b" or
/// how to make one.
pub(super) fn existing_teams(store: &Store) -> String {
    match store.list_teams() {
        Ok(names) if names.is_empty() => {
            "no team exists here: create one with `teamhost team create NAME` or `teamhost run`"
                .into()
        }
        Ok(names) => format!("the teams here are: {}", names.join(", ")),
        Err(e) => format!("(the teams could not be listed: {e})"),
    }
}

/// Team commands.
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team with you as its lead (`team-lead`).
    Create {
        /// Team name (sanitised: non-alphanumerics become '-', lower case).
        /// Omit it with --session to get the reference's implicit `session-<8 hex>` team.
        name: Option<String>,
        /// What the team is for.
        #[arg(long)]
        description: Option<String>,
        /// The lead's session id (a new UUID by default).
        #[arg(long, value_name = "UUID")]
        session: Option<String>,
        /// The lead's model.
        #[arg(long)]
        model: Option<String>,
    },
    /// Delete a team's config, inboxes and tasks. Refused, even with
    /// --force, while a live teamhost host on this machine runs the team
    /// (the error names its process and how to stop it): stop that host
    /// instead, which deletes the team itself unless it runs with --keep. A
    /// team whose lead is Claude Code has no teamhost host: nothing tells
    /// whether it runs.
    Delete {
        /// Team name.
        name: String,
        /// Delete even if teammates are still registered (a host that died
        /// left them); first stop every process and tmux pane teamhost
        /// started for the team. It does not override a live host.
        #[arg(long)]
        force: bool,
        /// With --force: seconds between SIGTERM and SIGKILL.
        #[arg(long, value_name = "SECS", default_value_t = 10)]
        timeout: u64,
    },
    /// List the teams with their state (running, idle, stopped), members
    /// and host.
    List,
    /// Register a member (what a spawn does before starting the teammate).
    AddMember {
        /// Team name.
        team: String,
        /// Wanted name (made unique: x, x-2, …).
        name: String,
        /// Role.
        #[arg(long)]
        agent_type: Option<String>,
        /// Model id.
        #[arg(long)]
        model: Option<String>,
        /// Initial prompt (recorded, not delivered).
        #[arg(long)]
        prompt: Option<String>,
        /// Backend recorded in the entry.
        #[arg(long)]
        backend: Option<String>,
        /// Make a lead key for the member, as a Claude Code 2.1.332 lead
        /// does for a pane teammate: its private half is kept in the home
        /// (`lead-keys/`, mode 0600), so what teamhost writes into the
        /// member's inbox as the lead is signed; prints the value to start
        /// the teammate with (`--lead-verify-key`).
        #[arg(long)]
        lead_key: bool,
    },
    /// Remove a member by name or agent id.
    RemoveMember {
        /// Team name.
        team: String,
        /// Member name or agent id.
        name: String,
    },
    /// Show a team's config and members.
    Show {
        /// Team name.
        name: String,
    },
}

pub(super) fn run(
    home: &Home,
    store: &Store,
    out: &Output,
    cmd: TeamCommand,
) -> anyhow::Result<()> {
    match cmd {
        TeamCommand::Create {
            name,
            description,
            session,
            model,
        } => {
            let name = match (name, &session) {
                (Some(n), _) => n,
                (None, Some(s)) => session_team_name(s),
                (None, None) => anyhow::bail!(
                    "give a team name (`teamhost team create NAME`) or --session UUID for an implicit session team"
                ),
            };
            let team = store.team(&name)?;
            let config = team.create(NewTeam {
                description,
                lead_session_id: session,
                lead_model: model,
                ..Default::default()
            })?;
            out.print(&config, || {
                format!(
                    "created team {} at {}",
                    config.name,
                    team.location().display()
                )
            })
        }
        TeamCommand::Delete {
            name,
            force,
            timeout,
        } => {
            let team = store.team(&name)?;
            let done = crate::backends::teardown::delete_team(
                home,
                &team,
                force,
                std::time::Duration::from_secs(timeout),
            )?;
            let stopped = &done.stopped;
            if !stopped.stopped.is_empty() || !stopped.killed.is_empty() {
                eprintln!(
                    "stopped {} teammate process(es), killed {} after {timeout}s",
                    stopped.stopped.len(),
                    stopped.killed.len()
                );
            }
            let worktrees = done.worktrees;
            out.print(
                &json!({"deleted": team.name(), "worktrees_removed": worktrees.removed, "worktrees_kept": worktrees.kept}),
                || {
                    let mut s = format!("deleted team {}", team.name());
                    for kept in &worktrees.kept {
                        s.push_str(&format!("\nkept {} (it has changes)", kept.display()));
                    }
                    s
                },
            )
        }
        TeamCommand::AddMember {
            team,
            name,
            agent_type,
            model,
            prompt,
            backend,
            lead_key,
        } => {
            let m = store.team(&team)?.add_member(NewMember {
                name,
                agent_type,
                model,
                prompt,
                backend_type: backend,
                cwd: std::env::current_dir()
                    .ok()
                    .map(|d| d.display().to_string()),
                ..Default::default()
            })?;
            let flag = match lead_key {
                true => match make_lead_key(store, &team, &m.name) {
                    Ok(flag) => Some(flag),
                    // No member left behind without the key it was added for.
                    Err(e) => {
                        store.team(&team)?.remove_member(&m.name)?;
                        return Err(e.context(format!("{} was not added", m.name)));
                    }
                },
                false => None,
            };
            let mut shown = serde_json::to_value(&m)?;
            if let Some(flag) = &flag {
                shown["leadVerifyKey"] = json!(flag);
            }
            out.print(&shown, || {
                let mut s = format!(
                    "added {} ({})",
                    m.agent_id,
                    m.color.as_deref().unwrap_or("-")
                );
                if let Some(flag) = &flag {
                    s.push_str(&format!(
                        "\nstart it with --lead-verify-key {flag} (its lead's entries are signed from now on)"
                    ));
                }
                s
            })
        }
        TeamCommand::RemoveMember { team, name } => {
            let m = store.team(&team)?.remove_member(&name)?;
            if let Some(guard) = store.lead_guard() {
                guard.forget(&team, &m.name);
            }
            out.print(&m, || format!("removed {}", m.agent_id))
        }
        TeamCommand::List => {
            let mut rows = Vec::new();
            for name in store.list_teams()? {
                rows.push(TeamState::of(home, &store.team(&name)?)?);
            }
            out.print(&rows, || {
                if rows.is_empty() {
                    return format!("no teams in {}", super::store_select::describe(home, store));
                }
                let mut s = String::new();
                push_line(
                    &mut s,
                    format!("{:<24} {:<8} {:>7}  HOST", "TEAM", "STATE", "MEMBERS"),
                );
                for r in &rows {
                    let host = r.host.as_ref().map_or("-".into(), |h| h.describe());
                    push_line(
                        &mut s,
                        format!(
                            "{:<24} {:<8} {:>7}  {host}",
                            r.team,
                            r.state.name(),
                            r.members
                        ),
                    );
                }
                s
            })
        }
        TeamCommand::Show { name } => {
            let config = store.team(&name)?.config()?;
            out.print(&config, || {
                let mut s = format!("team {}", config.name);
                if let Some(d) = &config.description {
                    s.push_str(&format!(" — {d}"));
                }
                s.push('\n');
                for m in config.members.iter() {
                    s.push_str(&format!(
                        "  {:<20} {:<8} {:<12} {}\n",
                        m.name,
                        m.color.as_deref().unwrap_or("-"),
                        m.backend_type.as_deref().unwrap_or("-"),
                        match m.is_active {
                            Some(true) => "active",
                            Some(false) => "idle",
                            None => "",
                        }
                    ));
                }
                s
            })
        }
    }
}

/// A fresh lead key for member `name` of `team`, kept through the store's
/// guard (the home's keyring); returns its `--lead-verify-key` value.
fn make_lead_key(store: &Store, team: &str, name: &str) -> anyhow::Result<String> {
    let guard = store
        .lead_guard()
        .context("this command's store has no lead guard to keep a key with")?;
    let now = crate::protocol::time::now_ms() as i64;
    let key = crate::protocol::lead_sig::LeadSigningKey::generate(now)
        .context("cannot make a lead key: the system gave no randomness")?;
    let flag = key.verify_key().flag_value();
    guard.sign_for(team, name, std::sync::Arc::new(key))?;
    Ok(flag)
}
