//! The record of a lead component's seat, kept at
//! `{home}/kept/{team}/.lead.json` (see [`super::kept`]) so that a led team
//! outlives its host: written by the seat (`embed/lead/record.rs`) when the
//! lead starts and after each change, read by `Host::resume_led`.
//!
//! | kept | why a resume needs it |
//! |---|---|
//! | the lead component, by path and SHA-256 | only the component that led the team leads it again: one changed meanwhile is refused, as a teammate's is |
//! | formed | a resumed lead does not form its team twice, and may delete it |
//! | who it spawned, from which entry | its teammates' entries bound its answers to their requests |
//! | the teammates it asked to stop | a shutdown request the resume withdrew is asked again |
//! | the budgets it gave, its spawns over its life, its refusals over its life | its purse, `max_spawns_total` and `max_refused_answers_total` go on from there instead of from zero |
//! | its goal | a host adopting the lead on a shared store gives it again, with the conversation lost |
//!
//! What the lead spent itself is its own spent record, as a teammate's
//! ([`super::kept::SpentRecord`]); its conversation is its conversation
//! file. The home is the host's: no teammate's directory may lie in it
//! (the `layout` module), so no teammate can write this file.
//!
//! On a store shared by several hosts the same record also rides in the
//! lead's run record in the store (`embed/lead/shared.rs`), which a host
//! adopting the lead after this machine died goes on from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::spawn_record::{sha256_of, short};
use super::Home;
use crate::error::{Error, Result};

/// A lead component's seat as it was last kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeadRecord {
    /// The lead component, absolute.
    pub component: PathBuf,
    /// SHA-256 of its bytes when it started, hex.
    pub component_sha256: String,
    /// It formed its team (`create_team`) and has not deleted it.
    pub formed: bool,
    /// What it spawned: member name → catalogue entry.
    pub spawned: BTreeMap<String, String>,
    /// The teammates it asked to shut down.
    pub asked_to_stop: BTreeSet<String>,
    /// The model budgets it gave, in microdollars.
    pub given_microdollars: u64,
    /// The teammates it spawned over its life.
    pub spawns: usize,
    /// Its answers refused over its life.
    pub refused_total: u32,
    /// The goal it was given when it started. A resume on this machine
    /// does not give it again (the conversation holds it); a host that
    /// adopts the lead after its machine died does, since the conversation
    /// died with that machine. Empty in records kept before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub goal: String,
}

impl LeadRecord {
    /// The record of a lead starting with `component`: nothing done yet.
    pub fn starting(component: &Path) -> Result<LeadRecord> {
        let component =
            std::path::absolute(component).map_err(|e| Error::io("resolve", component, e))?;
        Ok(LeadRecord {
            component_sha256: sha256_of(&component)?,
            component,
            ..LeadRecord::default()
        })
    }

    /// `team`'s record on this machine; `None` when no lead component of
    /// this machine's teamhost led it. A record that does not parse is an
    /// error naming the file (it is the only account of the lead's purse).
    pub fn load(home: &Home, team: &str) -> Result<Option<LeadRecord>> {
        crate::durable::read_json(&home.lead_record(team))
    }

    /// Replaces `team`'s record with this one, synced.
    pub fn write(&self, home: &Home, team: &str) -> Result<()> {
        crate::durable::write_json(&home.lead_record(team), self)
    }

    /// Checks that `component` is the one the lead started with: a
    /// resumed team is led only by the component that led it.
    pub fn check_component(&self, component: &Path) -> Result<()> {
        let now = sha256_of(component)?;
        if now == self.component_sha256 {
            return Ok(());
        }
        Err(Error::Spawn(format!(
            "the lead component {} is not the one that led this team ({} with SHA-256 {} then, {} now); \
             teamhost resumes a led team only with the component that led it: rebuild that one, or \
             start afresh with --replace",
            component.display(),
            self.component.display(),
            short(&self.component_sha256),
            short(&now)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_written_is_loaded_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let component = dir.path().join("lead.wasm");
        std::fs::write(&component, b"lead v1").unwrap();
        assert_eq!(LeadRecord::load(&home, "t").unwrap(), None);
        let mut record = LeadRecord::starting(&component).unwrap();
        record.formed = true;
        record.spawned.insert("w1".into(), "worker".into());
        record.given_microdollars = 250_000;
        record.spawns = 1;
        record.write(&home, "t").unwrap();
        assert_eq!(LeadRecord::load(&home, "t").unwrap(), Some(record));
    }

    #[test]
    fn a_changed_component_is_refused_naming_both_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let component = dir.path().join("lead.wasm");
        std::fs::write(&component, b"lead v1").unwrap();
        let record = LeadRecord::starting(&component).unwrap();
        record.check_component(&component).unwrap();
        std::fs::write(&component, b"lead v2").unwrap();
        let e = record.check_component(&component).unwrap_err().to_string();
        assert!(e.contains("not the one that led this team"), "{e}");
        assert!(e.contains(&record.component_sha256[..12]), "{e}");
    }

    #[test]
    fn a_corrupt_record_is_an_error_not_a_fresh_seat() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        std::fs::create_dir_all(home.kept_dir("t")).unwrap();
        std::fs::write(home.lead_record("t"), b"{ not json").unwrap();
        assert!(LeadRecord::load(&home, "t").is_err());
    }
}
