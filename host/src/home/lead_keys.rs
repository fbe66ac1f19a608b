//! The lead's private keys for its keyed teammates, kept in the home so
//! that every process of the lead's signs with the key a teammate was
//! launched with: the host that made it, and `teamhost shutdown`,
//! `permit`, `plan` and `send` in processes of their own
//! ([`HomeKeyring`], the home's [`LeadKeyring`]).
//!
//! ```json
//! {"keyTimeMs":1795901406000,"seed":"<32 bytes, base64url>"}
//! ```
//!
//! One file per teammate, `{home}/lead-keys/{team}/{stem}.json`, and one
//! for the team's own key (`.team.json`, [`TEAM_KEY_SLOT`]), mode 0600
//! in directories of mode 0700, written whole (a new file renamed over the
//! old). Who can read it: every process of this user (a Claude Code
//! teammate in the same team included: a Claude Code lead keeps its keys
//! in memory only); no component (a teammate's directory never lies in
//! the home, `layout::check`) and no other machine (the store never holds
//! a private key). A key the host made is removed when its teammate ends,
//! one `team add-member --lead-key` made by `team remove-member`, and all
//! of a team's with the team.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::Home;
use crate::error::{Error, Result};
use crate::protocol::lead_sig::LeadSigningKey;
use crate::store::lead_guard::{LeadKeyring, TEAM_KEY_SLOT};

/// One kept key.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeptKey {
    key_time_ms: i64,
    seed: String,
}

/// The home's keyring (see the module docs).
#[derive(Debug, Clone)]
pub struct HomeKeyring {
    home: Home,
}

impl HomeKeyring {
    /// The keyring in `home`.
    pub fn new(home: Home) -> Self {
        HomeKeyring { home }
    }

    /// The file of `agent`'s key in `team`, or of the team's own.
    fn path(&self, team: &str, agent: &str) -> Result<std::path::PathBuf> {
        if agent == TEAM_KEY_SLOT {
            return Ok(self.home.team_lead_key(team));
        }
        self.home.lead_key(team, agent)
    }

    fn read(&self, path: &Path) -> Result<Option<LeadSigningKey>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", path, e)),
        };
        let kept: KeptKey = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Home(format!(
                "{} is not a lead key ({e}); remove it and start the teammate again",
                path.display()
            ))
        })?;
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(&kept.seed)
            .ok()
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| {
                Error::Home(format!(
                    "{}: its seed is not 32 bytes of base64url",
                    path.display()
                ))
            })?;
        Ok(Some(LeadSigningKey::from_seed(&seed, kept.key_time_ms)))
    }
}

impl LeadKeyring for HomeKeyring {
    fn load(&self, team: &str, agent: &str) -> Option<LeadSigningKey> {
        let path = self.path(team, agent).ok()?;
        match self.read(&path) {
            Ok(key) => key,
            Err(e) => {
                tracing::warn!(team = %team, teammate = %agent, error = %e,
                    "cannot read the lead's key for this teammate: what this process writes as the lead goes unsigned, and the teammate will not act on it");
                None
            }
        }
    }

    fn save(&self, team: &str, agent: &str, key: &LeadSigningKey) -> Result<()> {
        let path = self.path(team, agent)?;
        let dir = self.home.lead_keys_dir(team);
        make_private_dir(&dir)?;
        let kept = KeptKey {
            key_time_ms: key.verify_key().key_time_ms,
            seed: URL_SAFE_NO_PAD.encode(key.seed()),
        };
        let bytes = serde_json::to_vec(&kept).expect("a kept key serialises");
        write_private(&path, &bytes)
    }

    fn remove(&self, team: &str, agent: &str) {
        let Ok(path) = self.path(team, agent) else {
            return;
        };
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a lead key")
            }
        }
    }
}

/// Forgets every lead key of `team` (the team is deleted for good).
pub fn forget_team(home: &Home, team: &str) -> Result<()> {
    let dir = home.lead_keys_dir(team);
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", dir, e)),
        _ => Ok(()),
    }
}

/// Makes `dir` (and `{home}/lead-keys`) with mode 0700, and narrows an
/// existing one to it.
fn make_private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io("create", dir, e))?;
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io("chmod", d, e))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` through a new 0600 file renamed over it,
/// synced first: readers see the old key or the new one, whole.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = crate::durable::with_suffix(path, &format!(".tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("write", path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_saved_key_loads_as_the_same_key_from_a_file_only_its_owner_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path());
        let ring = HomeKeyring::new(home.clone());
        let key = LeadSigningKey::generate(1_795_901_406_000).unwrap();
        ring.save("t", "Alice@x", &key).unwrap();
        let path = home.lead_key("t", "Alice@x").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let dir_mode = |d: &Path| std::fs::metadata(d).unwrap().mode() & 0o777;
        assert_eq!(dir_mode(&home.lead_keys_dir("t")), 0o700);
        assert_eq!(dir_mode(home.lead_keys_dir("t").parent().unwrap()), 0o700);
        let back = ring.load("t", "Alice@x").unwrap();
        assert_eq!(back.verify_key(), key.verify_key());
        assert_eq!(back.seed(), key.seed());
        // Replaced whole by a newer key; removed with the teammate.
        let newer = LeadSigningKey::generate(1_795_901_407_000).unwrap();
        ring.save("t", "Alice@x", &newer).unwrap();
        assert_eq!(
            ring.load("t", "Alice@x").unwrap().verify_key(),
            newer.verify_key()
        );
        ring.remove("t", "Alice@x");
        assert!(ring.load("t", "Alice@x").is_none());
        ring.save("t", "bob", &key).unwrap();
        // The team's own key: a file no member's name reaches.
        ring.save("t", TEAM_KEY_SLOT, &newer).unwrap();
        assert_eq!(
            home.team_lead_key("t"),
            home.lead_keys_dir("t").join(".team.json")
        );
        assert!(home.lead_key("t", ".team").is_err());
        assert_eq!(
            ring.load("t", TEAM_KEY_SLOT).unwrap().verify_key(),
            newer.verify_key()
        );
        forget_team(&home, "t").unwrap();
        assert!(!home.lead_keys_dir("t").exists());
    }

    #[test]
    fn a_damaged_key_file_is_no_key_and_the_file_is_left_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path());
        let ring = HomeKeyring::new(home.clone());
        let path = home.lead_key("t", "a").unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"{\"keyTimeMs\":1,\"seed\":\"short\"}").unwrap();
        assert!(ring.load("t", "a").is_none());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"{\"keyTimeMs\":1,\"seed\":\"short\"}"
        );
        assert!(
            ring.load("t", "../escape").is_none(),
            "a bad name is no key"
        );
    }
}
