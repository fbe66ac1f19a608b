//! The team's cost account ([`TeamAccount`]) kept in the team's config,
//! under [`TEAM_ACCOUNT_FIELD`] beside the other keys teamhost adds, so that
//! every process of the team (this host, its `teamhost teammate` panes, one
//! a Claude Code lead started, a standby) claims from the same budget, on
//! the file store and on NATS alike: each claim is one read-modify-write of
//! the config under its lock (compare-and-swap on NATS).
//!
//! [`open`] opens a team's purse in the host's broker on that account:
//!
//! | the broker | the config | then |
//! |---|---|---|
//! | has a team budget (the manifest's `[model] team_budget_usd`) | no account | the account is made, with what the team's usage records say it spent before as its first claim |
//! | the same | an account | its budget becomes the manifest's; its claims stay |
//! | has none | an account | the purse spends from it (a teammate started without the manifest) |
//! | has none | no account | no team budget |
//!
//! An account that cannot be read is an error naming the key: a damaged
//! account is never read as no budget.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::team_account::{AccountStore, TeamAccount};
use crate::model::ModelHub;
use crate::store::config::TEAM_ACCOUNT_FIELD;
use crate::store::{Team, TeamConfig};

/// A team's account in its config.
#[derive(Debug)]
struct ConfigAccount {
    team: Team,
}

/// The account `config` holds: `None` without one; an error naming the key
/// when it is not an account.
fn read(config: &TeamConfig) -> Result<Option<TeamAccount>> {
    let Some(value) = config.extra.get(TEAM_ACCOUNT_FIELD) else {
        return Ok(None);
    };
    serde_json::from_value(value.clone())
        .map(Some)
        .map_err(|e| {
            Error::ModelSetup(format!(
                "team {:?}'s cost account ({TEAM_ACCOUNT_FIELD} in its config) is damaged: {e}; \
             no model call is made against it until it is repaired or removed",
                config.name
            ))
        })
}

fn write(config: &mut TeamConfig, account: &TeamAccount) -> Result<()> {
    let value = serde_json::to_value(account)
        .map_err(|e| Error::Encode(format!("cannot serialise the team's account: {e}")))?;
    config.extra.insert(TEAM_ACCOUNT_FIELD.to_string(), value);
    Ok(())
}

impl AccountStore for ConfigAccount {
    fn update(
        &self,
        change: &mut dyn FnMut(&mut TeamAccount) -> bool,
    ) -> std::result::Result<TeamAccount, String> {
        self.team
            .update_config(|config| {
                let mut account = read(config)?.ok_or_else(|| {
                    Error::ModelSetup(format!(
                        "team {:?} has no cost account ({TEAM_ACCOUNT_FIELD}) in its config any more",
                        config.name
                    ))
                })?;
                if change(&mut account) {
                    write(config, &account)?;
                }
                Ok(account)
            })
            .map_err(|e| e.to_string())
    }
}

/// Opens `team`'s purse in `hub` on the team's account (see the module
/// docs), once per team and broker; a new account's first claim is what
/// the team's usage records say it spent.
pub(crate) fn open(hub: &ModelHub, team: &Team) -> Result<()> {
    open_counting(hub, team, || spent_before(team))
}

/// What the team's usage records say it spent (a team resumed, or one
/// whose budget was set late: its budget is for its whole life).
fn spent_before(team: &Team) -> u64 {
    team.model_usage()
        .map(|all| all.values().map(|u| u.cost_microdollars).sum())
        .unwrap_or_else(|e| {
            tracing::warn!(team = %team.name(), error = %e, "the team's usage records are unreadable: its budget counts nothing spent before");
            0
        })
}

/// [`open`], `spent_before` asked only when an account is made.
fn open_counting(hub: &ModelHub, team: &Team, spent_before: impl FnOnce() -> u64) -> Result<()> {
    if hub.has_team_purse(team.name()) {
        return Ok(());
    }
    let account = match hub.team_budget() {
        Some(budget) => {
            let earlier = std::cell::OnceCell::new();
            let mut spent_before = Some(spent_before);
            team.update_config(|config| {
                let account = match read(config)? {
                    Some(mut account) => {
                        account.budget_microdollars = budget;
                        account
                    }
                    None => {
                        let spent = *earlier.get_or_init(|| spent_before.take().map_or(0, |f| f()));
                        TeamAccount::new(budget, spent)
                    }
                };
                write(config, &account)?;
                Ok(account)
            })?
        }
        None => match read(&team.config()?)? {
            Some(account) => account,
            None => return Ok(()),
        },
    };
    let store = Arc::new(ConfigAccount { team: team.clone() });
    hub.open_team_account(team.name(), &account, store);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewTeam, Store};

    fn team() -> (tempfile::TempDir, Team) {
        let dir = tempfile::tempdir().unwrap();
        let t = Store::new(dir.path()).team("t").unwrap();
        t.create(NewTeam::default()).unwrap();
        (dir, t)
    }

    #[test]
    fn the_manifest_s_budget_makes_the_account_and_a_budgetless_process_joins_it() {
        let (_dir, t) = team();
        let config = crate::model::ModelConfig::default();
        let host = ModelHub::new(config.clone(), crate::model::CassetteMode::Live, None).unwrap();
        host.set_team_budget(Some(1_000_000));
        open_counting(&host, &t, || 250_000).unwrap();
        let made = read(&t.config().unwrap()).unwrap().unwrap();
        assert_eq!(made, TeamAccount::new(1_000_000, 250_000));
        // Another process, without the manifest: the same account.
        let child = ModelHub::new(config, crate::model::CassetteMode::Live, None).unwrap();
        assert_eq!(child.team_budget(), None);
        open_counting(&child, &t, || unreachable!("only a new account asks")).unwrap();
        assert!(child.has_team_purse("t"));
    }

    #[test]
    fn a_damaged_account_is_an_error_naming_the_key_not_no_budget() {
        let (_dir, t) = team();
        t.update_config(|c| {
            c.extra
                .insert(TEAM_ACCOUNT_FIELD.into(), serde_json::json!("lots"));
            Ok(())
        })
        .unwrap();
        let hub = ModelHub::new(
            crate::model::ModelConfig::default(),
            crate::model::CassetteMode::Live,
            None,
        )
        .unwrap();
        let e = open(&hub, &t).unwrap_err().to_string();
        assert!(
            e.contains(TEAM_ACCOUNT_FIELD) && e.contains("damaged"),
            "{e}"
        );
        assert!(!hub.has_team_purse("t"));
    }
}
