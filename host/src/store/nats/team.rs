//! A team's config, usage records and plans in its bucket: listing,
//! creating (a `create` on `config`, so two creators cannot both win),
//! compare-and-swap updates, deleting, and what happens to a config that
//! does not parse.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::answers::Fail;
use super::kv::{self, Slot};
use super::naming::{token, untoken, TeamNames};
use super::setup::{self, Which};
use super::NatsStore;
use crate::error::{Error, Result};
use crate::store::backend::ConfigChange;
use crate::store::names::agent_file_stem;
use crate::store::{ModelUsage, TeamConfig};

const CONFIG: &str = "config";

impl NatsStore {
    pub(super) fn team_list(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let lead = format!("KV_{}_", self.prefix());
        let streams =
            setup::stream_names(conn, &lead).map_err(|f| conn.error("list the teams", f))?;
        let mut teams = Vec::new();
        for s in streams {
            let team = &s[lead.len()..];
            // Team names are sanitised (no '_'): anything else belongs to
            // a longer prefix.
            if team.is_empty() || team.contains('_') {
                continue;
            }
            let slot = kv::get(conn, &self.names(team), CONFIG)
                .map_err(|f| conn.error("list the teams", f))?;
            if slot.value.is_some() {
                teams.push(team.to_string());
            }
        }
        Ok(teams)
    }

    pub(super) fn config_read(&self, team: &str) -> Result<Option<TeamConfig>> {
        let n = self.names(team);
        let slot = kv::get(self.conn(), &n, CONFIG)
            .map_err(|f| self.conn().error("read the team config", f))?;
        let Some(raw) = slot.value else {
            return Ok(None);
        };
        serde_json::from_slice(&raw)
            .map(Some)
            .map_err(|source| Error::Corrupt {
                path: self.location(team, CONFIG),
                moved_to: None,
                source,
            })
    }

    pub(super) fn config_create(&self, team: &str, config: &TeamConfig) -> Result<()> {
        let n = self.names(team);
        self.ensure(&n, Which::Kv)?;
        self.ensure(&n, Which::Mail)?;
        let conn = self.conn();
        let slot = kv::get(conn, &n, CONFIG).map_err(|f| conn.error("create the team", f))?;
        let exists = || Error::TeamExists {
            team: team.to_string(),
            path: self.location(team, CONFIG),
        };
        if slot.value.is_some() {
            return Err(exists());
        }
        match kv::put(conn, &n, CONFIG, to_json(config)?, Some(slot.rev)) {
            Ok(_) => Ok(()),
            Err(Fail::Conflict) => Err(exists()),
            Err(f) => Err(conn.error("create the team", f)),
        }
    }

    pub(super) fn config_update(&self, team: &str, change: ConfigChange<'_>) -> Result<()> {
        let n = self.names(team);
        let conn = self.conn();
        let what = "update the team config";
        loop {
            let Slot { rev, value } = kv::get(conn, &n, CONFIG).map_err(|f| conn.error(what, f))?;
            let Some(raw) = value else {
                return Err(Error::TeamNotFound {
                    team: team.to_string(),
                    path: self.location(team, CONFIG),
                });
            };
            let mut config: TeamConfig = match serde_json::from_slice(&raw) {
                Ok(c) => c,
                Err(source) => return Err(self.config_aside(team, &n, rev, raw, source)),
            };
            change(&mut config)?;
            match kv::put(conn, &n, CONFIG, to_json(&config)?, Some(rev)) {
                Ok(_) => return Ok(()),
                Err(Fail::Conflict) => continue,
                Err(Fail::NoStream) => {
                    return Err(Error::TeamNotFound {
                        team: team.to_string(),
                        path: self.location(team, CONFIG),
                    })
                }
                Err(f) => return Err(conn.error(what, f)),
            }
        }
    }

    /// A config that does not parse: kept under `aside.config.*`, then
    /// removed (only if nobody replaced it meanwhile), as the file store
    /// moves a corrupt file aside. The team cannot be rebuilt from nothing,
    /// so the caller fails with both places named.
    fn config_aside(
        &self,
        team: &str,
        n: &TeamNames,
        rev: u64,
        raw: Bytes,
        source: serde_json::Error,
    ) -> Error {
        let conn = self.conn();
        let moved = kv::set_aside(conn, n, CONFIG, raw)
            .and_then(|aside| kv::delete(conn, n, CONFIG, Some(rev)).map(|_| aside));
        match moved {
            Ok(aside) => {
                let err = Error::Corrupt {
                    path: self.location(team, CONFIG),
                    moved_to: Some(self.location(team, &aside)),
                    source,
                };
                tracing::warn!("{err}");
                err
            }
            Err(f) => {
                tracing::warn!(error = %conn.error("set a corrupt config aside", f), "left a corrupt config in place");
                Error::Corrupt {
                    path: self.location(team, CONFIG),
                    moved_to: None,
                    source,
                }
            }
        }
    }

    pub(super) fn team_delete(&self, team: &str) -> Result<()> {
        let n = self.names(team);
        let conn = self.conn();
        let what = "delete the team";
        // The config first: the team is gone for every reader at once, and
        // feeds hear of it (its deletion is stored, so republished).
        match kv::get(conn, &n, CONFIG) {
            Ok(Slot { value: Some(_), .. }) => match kv::delete(conn, &n, CONFIG, None) {
                Ok(_) | Err(Fail::NoStream) => {}
                Err(f) => return Err(conn.error(what, f)),
            },
            Ok(_) => {}
            Err(f) => return Err(conn.error(what, f)),
        }
        self.forget(&n);
        for stream in [&n.mail_stream, &n.kv_stream] {
            setup::delete(conn, stream).map_err(|f| conn.error(what, f))?;
        }
        Ok(())
    }

    pub(super) fn usage_write(&self, team: &str, agent: &str, usage: &ModelUsage) -> Result<()> {
        let stem = agent_file_stem(agent)?;
        let n = self.names(team);
        match kv::put(
            self.conn(),
            &n,
            &format!("usage.{}", token(&stem)),
            to_json(usage)?,
            None,
        ) {
            // The team is gone: nothing to bring back.
            Ok(_) | Err(Fail::NoStream) => Ok(()),
            Err(f) => Err(self.conn().error("write a usage record", f)),
        }
    }

    pub(super) fn usage_read(&self, team: &str) -> Result<BTreeMap<String, ModelUsage>> {
        let n = self.names(team);
        let conn = self.conn();
        let what = "read the usage records";
        let subjects = setup::subjects(conn, &n.kv_stream, &n.key("usage.*"))
            .map_err(|f| conn.error(what, f))?;
        let stems: Vec<String> = subjects
            .iter()
            .filter_map(|s| untoken(s.rsplit('.').next()?))
            .collect();
        let keys: Vec<String> = stems
            .iter()
            .map(|s| format!("usage.{}", token(s)))
            .collect();
        let slots = kv::get_many(conn, &n, &keys).map_err(|f| conn.error(what, f))?;
        let mut out = BTreeMap::new();
        for (stem, slot) in stems.into_iter().zip(slots) {
            let Some(raw) = slot.value else { continue };
            match serde_json::from_slice::<ModelUsage>(&raw) {
                Ok(u) => {
                    out.insert(stem, u);
                }
                Err(e) => {
                    tracing::warn!(agent = %stem, error = %e, "skipping an unreadable model usage record")
                }
            }
        }
        Ok(out)
    }

    pub(super) fn plan_write(&self, team: &str, agent: &str, plan: &str) -> Result<String> {
        let stem = agent_file_stem(agent)?;
        let n = self.names(team);
        self.ensure(&n, Which::Kv)?;
        let ms = crate::protocol::time::now_ms();
        let key = format!("plan.{}.{ms}", token(&stem));
        kv::put(self.conn(), &n, &key, Bytes::from(plan.to_string()), None)
            .map_err(|f| self.conn().error("keep a plan", f))?;
        Ok(self
            .location(team, &format!("plans/{stem}-{ms}.md"))
            .display()
            .to_string())
    }
}

/// Pretty JSON, as the file store writes it (an export is then the same
/// bytes).
pub(super) fn to_json<T: serde::Serialize>(v: &T) -> Result<Bytes> {
    serde_json::to_vec_pretty(v)
        .map(Bytes::from)
        .map_err(|e| Error::Encode(format!("cannot serialise: {e}")))
}
