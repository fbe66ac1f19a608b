//! The team and its members (`teams/{team}/config.json` in the file store).
//!
//! Field names, order and optional-field presence follow the reference (seeds
//! 002 App. C.3 and the files the current CLI writes). Fields teamhost does not
//! know — on the team or on any member — are kept in `extra` and written back
//! unchanged by every read-modify-write, so other programs' data survives us.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::names::{agent_id, check_new_member_name};
use super::{StoreEvent, Team};
use crate::error::{Error, Result};
use crate::protocol::time::now_ms;

mod member_names;
use member_names::MemberNames;

/// Colours handed to teammates in join order, as the reference does.
pub const COLORS: [&str; 8] = [
    "blue", "green", "yellow", "purple", "orange", "pink", "cyan", "red",
];

/// Name of the lead member in teams teamhost creates.
pub const LEAD_NAME: &str = "team-lead";

/// The top-level `config.json` key of the team's lead key, public half
/// (`<ms>.<b64url SPKI>`, as `--lead-verify-key` spells it): what every
/// teamhost host screens its in-process teammates' inboxes with
/// ([`LeadGuard`](super::LeadGuard)). Written once, by the host that
/// creates the team; kept in `extra` by every other write.
pub const TEAM_LEAD_KEY_FIELD: &str = "teamhostLeadVerifyKey";

/// The top-level `config.json` key of the team's cost account (the
/// manifest's `[model] team_budget_usd` and what each process of the team
/// claimed of it: `model::team_account`), so that every teamhost process
/// of the team, on any store, spends from one budget. Written by the
/// processes that claim from it; kept in `extra` by every other write.
pub const TEAM_ACCOUNT_FIELD: &str = "teamhostTeamAccount";

/// The whole `config.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamConfig {
    /// Team name (the directory name).
    pub name: String,
    /// What the team is for (explicit teams only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Creation time, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// `name@team` of the lead.
    pub lead_agent_id: String,
    /// The lead's session UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_session_id: Option<String>,
    /// Every member, the lead first. Shared twice over: copying a config
    /// copies one pointer, however many members it has (a read from the
    /// store's cache is such a copy); changing the list or one member
    /// through `Arc::make_mut` copies the list's pointers once and that
    /// member only.
    #[serde(default)]
    pub members: Arc<Vec<Arc<Member>>>,
    /// Fields written by other programs, preserved as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TeamConfig {
    /// The member called `name`, or whose agent id is `name`.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members
            .iter()
            .find(|m| m.name == name || m.agent_id == name)
            .map(|m| &**m)
    }

    /// Names of every member, in config order.
    pub fn member_names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }

    /// The team's lead key ([`TEAM_LEAD_KEY_FIELD`]): `None` when the team
    /// has none (a team a Claude Code lead or an older teamhost made, or
    /// one made without a lead guard); `Some(Err)` when the value is not a
    /// key (its teammates then refuse every lead entry: a damaged key is
    /// never read as no key).
    pub fn team_lead_key(
        &self,
    ) -> Option<std::result::Result<crate::protocol::lead_sig::LeadVerifyKey, String>> {
        let v = self.extra.get(TEAM_LEAD_KEY_FIELD)?;
        Some(
            v.as_str()
                .ok_or_else(|| format!("{TEAM_LEAD_KEY_FIELD} is not a string"))
                .and_then(|s| {
                    crate::protocol::lead_sig::LeadVerifyKey::parse(s).map_err(|e| e.to_string())
                }),
        )
    }

    /// The lead's member name (from `leadAgentId`).
    pub fn lead_name(&self) -> &str {
        self.lead_agent_id
            .split_once('@')
            .map_or(self.lead_agent_id.as_str(), |(n, _)| n)
    }

    fn member_not_found(&self, name: &str) -> Error {
        Error::MemberNotFound {
            team: self.name.clone(),
            name: name.to_string(),
            members: self.member_names(),
        }
    }
}

/// One entry of `members`. Optional fields are omitted when unset; key order is
/// the current reference's. `Eq`, so that comparing two configs that share
/// a member's `Arc` skips comparing its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// `name@team`.
    pub agent_id: String,
    /// Name used in messages and as the inbox file name.
    pub name: String,
    /// Role (`team-lead`, `general-purpose`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// Display colour (teammates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// Join time, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined_at: Option<u64>,
    /// tmux pane id (`%N`), `"leader"` for the lead, `"in-process"` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_pane_id: Option<String>,
    /// Reserved by the reference; always `[]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscriptions: Option<Vec<Value>>,
    /// Model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Initial prompt given at spawn (teammates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Whether the teammate must get its plan approved before acting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_mode_required: Option<bool>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `"in-process"`, `"tmux"` or teamhost's `"process"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
    /// Git worktree path, when isolated in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
    /// Permission mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Tool rules allowed without asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Tool rules always denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disallowed_tools: Option<Vec<String>>,
    /// Active (`true`) or idle (`false`); teammates only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_active: Option<bool>,
    /// Fields written by other programs, preserved as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What [`Team::create`] needs. `Default` gives an explicit team led by
/// `team-lead` with a fresh session id and no description.
#[derive(Debug, Clone, Default)]
pub struct NewTeam {
    /// Team description (omitted from the file when `None`).
    pub description: Option<String>,
    /// The lead's session UUID; a new v4 UUID when `None`.
    pub lead_session_id: Option<String>,
    /// The lead's agent type; `"team-lead"` when `None`.
    pub lead_agent_type: Option<String>,
    /// The lead's model (omitted when `None`).
    pub lead_model: Option<String>,
    /// The lead's working directory; the current directory when `None`.
    pub cwd: Option<String>,
}

/// The name of the implicit team the current reference CLI creates for a session:
/// `session-` + the first 8 hex digits of the session id.
pub fn session_team_name(session_id: &str) -> String {
    let hex: String = session_id
        .chars()
        .filter(|c| c.is_ascii_hexdigit())
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    format!("session-{hex}")
}

/// What [`Team::add_member`] needs. Only `name` is required.
#[derive(Debug, Clone, Default)]
pub struct NewMember {
    /// Wanted name; made unique (`x`, `x-2`, …) if taken.
    pub name: String,
    /// Role; omitted when `None` (as the current reference does).
    pub agent_type: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Initial prompt.
    pub prompt: Option<String>,
    /// Colour; the next one in join order when `None`.
    pub color: Option<String>,
    /// Whether plan approval is required.
    pub plan_mode_required: bool,
    /// Working directory.
    pub cwd: Option<String>,
    /// Backend; `"in-process"` when `None`.
    pub backend_type: Option<String>,
    /// Pane id; the backend name (`"in-process"`) when `None`.
    pub tmux_pane_id: Option<String>,
    /// Permission mode; omitted when `None`.
    pub mode: Option<String>,
    /// Allowed tool rules; omitted when empty.
    pub allowed_tools: Vec<String>,
    /// Denied tool rules; omitted when empty.
    pub disallowed_tools: Vec<String>,
    /// Its `isActive` at registration (`None`: not written, as the reference
    /// does). An in-process teamhost teammate starts recorded idle, so its
    /// first short turn needs no config write.
    pub is_active: Option<bool>,
}

impl Team {
    /// Creates the team's `config.json` with the lead as its only member.
    /// Fails with [`Error::TeamExists`] when it is already there.
    ///
    /// With a [`LeadGuard`](super::LeadGuard) that keeps keys (a host's, a
    /// lead command's), the team gets a lead key: its public half goes in
    /// the config ([`TEAM_LEAD_KEY_FIELD`]), its private half to the guard
    /// (memory and the home's keyring), after the config is written (a team
    /// that already exists keeps its key). A key that cannot be kept
    /// deletes the team just made and fails.
    pub fn create(&self, new: NewTeam) -> Result<TeamConfig> {
        let key = match self.store().lead_guard() {
            Some(g) if g.makes_team_keys() => Some(g.new_team_key()?),
            _ => None,
        };
        let config = self.create_with(new, key.as_ref().map(|k| k.verify_key()))?;
        if let (Some(guard), Some(key)) = (self.store().lead_guard(), key) {
            if let Err(e) = guard.keep_team_key(self.name(), key) {
                if let Err(e2) = self.backend().delete_team(self.name()) {
                    tracing::error!(team = %self.name(), error = %e2, "could not delete a team whose lead key could not be kept");
                }
                return Err(e);
            }
        }
        Ok(config)
    }

    fn create_with(
        &self,
        new: NewTeam,
        key: Option<&crate::protocol::lead_sig::LeadVerifyKey>,
    ) -> Result<TeamConfig> {
        let cwd = new.cwd.unwrap_or_else(|| {
            std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        });
        let now = now_ms();
        let lead_id = agent_id(LEAD_NAME, self.name());
        let config = TeamConfig {
            name: self.name().to_string(),
            description: new.description,
            created_at: Some(now),
            lead_agent_id: lead_id.clone(),
            lead_session_id: Some(
                new.lead_session_id
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            ),
            members: Arc::new(vec![Arc::new(Member {
                agent_id: lead_id,
                name: LEAD_NAME.to_string(),
                agent_type: Some(new.lead_agent_type.unwrap_or_else(|| LEAD_NAME.into())),
                color: None,
                joined_at: Some(now),
                tmux_pane_id: Some("leader".into()),
                subscriptions: Some(Vec::new()),
                model: new.lead_model,
                prompt: None,
                plan_mode_required: None,
                cwd: Some(cwd),
                backend_type: Some("in-process".into()),
                worktree_path: None,
                mode: None,
                allowed_tools: None,
                disallowed_tools: None,
                is_active: None,
                extra: Map::new(),
            })]),
            extra: key
                .map(|k| Map::from_iter([(TEAM_LEAD_KEY_FIELD.to_string(), k.flag_value().into())]))
                .unwrap_or_default(),
        };
        self.backend().create_team(self.name(), &config)?;
        self.emit(StoreEvent::ConfigChanged {
            team: self.name().into(),
        });
        Ok(config)
    }

    /// Whether the team exists (an unreadable config counts as existing).
    pub fn exists(&self) -> bool {
        !matches!(self.backend().read_config(self.name()), Ok(None))
    }

    /// Whether the team exists, telling "no" from "cannot tell": a config
    /// that cannot be read (the home under a file, no permission, a server
    /// not answering) is that error, not a team that exists.
    pub fn try_exists(&self) -> Result<bool> {
        match self.backend().read_config(self.name()) {
            Ok(c) => Ok(c.is_some()),
            // A corrupt config is a team that exists (and is set aside).
            Err(Error::Corrupt { .. }) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Reads the config ([`Error::TeamNotFound`] when absent).
    pub fn config(&self) -> Result<TeamConfig> {
        self.backend()
            .read_config(self.name())?
            .ok_or_else(|| self.not_found())
    }

    /// Runs `change` on the config atomically and stores the result. A
    /// corrupt config is set aside and reported as [`Error::Corrupt`]: a
    /// team cannot be rebuilt from nothing, so nothing is written over it.
    /// `change` may run more than once (see [`super::backend`]): it must
    /// act only on its argument.
    pub fn update_config<T>(
        &self,
        mut change: impl FnMut(&mut TeamConfig) -> Result<T>,
    ) -> Result<T> {
        let mut out = None;
        self.backend().update_config(self.name(), &mut |config| {
            out = Some(change(config)?);
            Ok(())
        })?;
        self.emit(StoreEvent::ConfigChanged {
            team: self.name().into(),
        });
        Ok(out.expect("a successful update ran its change"))
    }

    /// Adds a teammate and returns its entry as written (final name and
    /// colour). The name must pass [`check_new_member_name`] (nothing that
    /// looks like the lead, the person, the host or a flag) and, once made
    /// unique (`echo` → `echo-2`), must not look like another member's
    /// ([`check_distinct`](crate::store::names::check_distinct)); the error says which.
    pub fn add_member(&self, new: NewMember) -> Result<Member> {
        check_new_member_name(&new.name)?;
        self.update_config(|config| {
            // Both questions from the index of this very list: no scan of
            // the members but after another process changed them
            // (`member_names.rs`).
            let mut names = MemberNames::take(&config.members);
            let mut colours = ColoursInUse::of(config);
            let added = push_member(config, &mut names, &mut colours, new.clone());
            names.keep(&config.members);
            added
        })
    }

    /// Adds several teammates in one write of the config, in order, each as
    /// [`Team::add_member`] would (names made unique against the members
    /// and the ones added before it, colours in join order). One entry per
    /// `new`, in its order: a name refused is that entry's error and the
    /// others are still added. The outer error is the write's own (the
    /// config cannot be read or written): then none was added.
    pub fn add_members(&self, new: Vec<NewMember>) -> Result<Vec<Result<Member>>> {
        self.update_config(|config| {
            let mut names = MemberNames::take(&config.members);
            let mut colours = ColoursInUse::of(config);
            let added = new
                .iter()
                .map(|n| {
                    check_new_member_name(&n.name)?;
                    push_member(config, &mut names, &mut colours, n.clone())
                })
                .collect();
            names.keep(&config.members);
            Ok(added)
        })
    }

    /// Removes the member with this name or agent id and returns its entry.
    pub fn remove_member(&self, name_or_id: &str) -> Result<Member> {
        self.update_config(|config| {
            let idx = config
                .members
                .iter()
                .position(|m| m.name == name_or_id || m.agent_id == name_or_id)
                .ok_or_else(|| config.member_not_found(name_or_id))?;
            Ok(Arc::unwrap_or_clone(
                Arc::make_mut(&mut config.members).remove(idx),
            ))
        })
    }

    /// Changes any fields of one member under the config lock.
    pub fn update_member<T>(
        &self,
        name_or_id: &str,
        mut change: impl FnMut(&mut Member) -> T,
    ) -> Result<T> {
        self.update_config(|config| {
            // The error lists every member: made only when it is needed.
            let Some(at) = config
                .members
                .iter()
                .position(|m| m.name == name_or_id || m.agent_id == name_or_id)
            else {
                return Err(config.member_not_found(name_or_id));
            };
            // An `isActive` flip keeps every name: the members' index goes
            // over to the changed list (a flip between two registrations
            // would otherwise cost the second a scan).
            let names = MemberNames::take_kept(&config.members);
            let member = Arc::make_mut(&mut Arc::make_mut(&mut config.members)[at]);
            let name = member.name.clone();
            let out = change(member);
            if let Some(names) = names.filter(|_| member.name == name) {
                names.keep(&config.members);
            }
            Ok(out)
        })
    }

    /// Sets a member's permission mode.
    pub fn set_mode(&self, name_or_id: &str, mode: &str) -> Result<()> {
        self.update_member(name_or_id, |m| m.mode = Some(mode.to_string()))
    }

    /// Marks a member active (`true`) or idle (`false`).
    pub fn set_active(&self, name_or_id: &str, active: bool) -> Result<()> {
        self.update_member(name_or_id, |m| m.is_active = Some(active))
    }

    /// Deletes the team and everything of it (config, inboxes, tasks). Refused with
    /// [`Error::TeamNotEmpty`] while members other than the lead remain, unless
    /// `force`.
    pub fn delete(&self, force: bool) -> Result<()> {
        let config = self.config()?;
        let lead = config.lead_name().to_string();
        let others: Vec<String> = config
            .members
            .iter()
            .filter(|m| m.name != lead)
            .map(|m| m.name.clone())
            .collect();
        if !others.is_empty() && !force {
            return Err(Error::TeamNotEmpty {
                team: self.name().to_string(),
                members: others,
            });
        }
        self.backend().delete_team(self.name())?;
        if let Some(guard) = self.store().lead_guard() {
            guard.forget_team(self.name());
        }
        self.emit(StoreEvent::ConfigChanged {
            team: self.name().into(),
        });
        Ok(())
    }

    fn not_found(&self) -> Error {
        Error::TeamNotFound {
            team: self.name().to_string(),
            path: self.location(),
        }
    }
}

/// Adds `new` to `config`'s members, its name made unique with `names`
/// (the index of this very list, told of the new name) and refused when it
/// looks like a member's; its colour the next one free in `colours`.
fn push_member(
    config: &mut TeamConfig,
    names: &mut MemberNames,
    colours: &mut ColoursInUse,
    new: NewMember,
) -> Result<Member> {
    let name = names.unique(&new.name);
    names.check_distinct(&name)?;
    let color = match new.color {
        Some(c) => c,
        None => colours.next(config.members.len()).to_string(),
    };
    colours.taken(&color);
    let backend = new.backend_type.unwrap_or_else(|| "in-process".into());
    let member = Member {
        agent_id: agent_id(&name, &config.name),
        name,
        agent_type: new.agent_type,
        color: Some(color),
        joined_at: Some(now_ms()),
        tmux_pane_id: Some(new.tmux_pane_id.unwrap_or_else(|| backend.clone())),
        subscriptions: Some(Vec::new()),
        model: new.model,
        prompt: new.prompt,
        plan_mode_required: Some(new.plan_mode_required),
        cwd: new.cwd,
        backend_type: Some(backend),
        worktree_path: None,
        mode: new.mode,
        allowed_tools: Some(new.allowed_tools).filter(|v| !v.is_empty()),
        disallowed_tools: Some(new.disallowed_tools).filter(|v| !v.is_empty()),
        is_active: new.is_active,
        extra: Map::new(),
    };
    Arc::make_mut(&mut config.members).push(Arc::new(member.clone()));
    names.insert(&member.name);
    Ok(member)
}

/// Which colours of the cycle the members have, found with one pass over
/// them and kept up to date as members are added (a batch of registrations
/// does not scan the list once per member).
struct ColoursInUse([bool; COLORS.len()]);

impl ColoursInUse {
    /// The pass stops once every colour is seen: members join in the
    /// cycle's order, so in a big team that is within the first few, and a
    /// registration costs the same however many members there are.
    fn of(config: &TeamConfig) -> ColoursInUse {
        let mut used = ColoursInUse([false; COLORS.len()]);
        for m in config.members.iter() {
            if let Some(c) = &m.color {
                used.taken(c);
                if used.0.iter().all(|u| *u) {
                    break;
                }
            }
        }
        used
    }

    fn taken(&mut self, colour: &str) {
        if let Some(i) = COLORS.iter().position(|c| *c == colour) {
            self.0[i] = true;
        }
    }

    /// The first colour of the cycle no member has; when all are taken, the
    /// cycle continues by `members` (the count before the new one).
    fn next(&self, members: usize) -> &'static str {
        match self.0.iter().position(|used| !used) {
            Some(i) => COLORS[i],
            None => COLORS[members.saturating_sub(1) % COLORS.len()],
        }
    }
}
