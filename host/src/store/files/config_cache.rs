//! Team configs as last read or written, so reading a config whose file has
//! not changed costs a `stat` and a copy instead of parsing it again. A
//! config holds every member, so with a thousand teammates a parse is most of
//! what a spawn, a message's recipient check or a status costs.
//!
//! An entry is used only while the file's [`Stamp`] is the one recorded. A
//! config this process wrote is recorded right after the write, under the
//! config's lock; one it read is recorded only when its stamp is not racy
//! ([`super::stamp`]), since a second write in the same clock tick could
//! hide behind it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::stamp::{is_racy, Stamp};
use crate::durable::{read_json, read_json_or_move_aside};
use crate::error::{Error, Result};
use crate::store::TeamConfig;

/// The configs of every team this store touched, by path.
#[derive(Debug, Default)]
pub(super) struct ConfigCache {
    entries: Mutex<HashMap<PathBuf, (Stamp, Arc<TeamConfig>)>>,
}

impl ConfigCache {
    /// The config at `path` (`None` when there is none); from the cache when
    /// the file is the one recorded. A file that does not parse is
    /// [`Error::Corrupt`], as with a direct read.
    pub(super) fn read(&self, path: &Path) -> Result<Option<TeamConfig>> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.forget(path);
                return Ok(None);
            }
            Err(e) => return Err(Error::io("stat", path, e)),
        };
        let stamp = Stamp::of(&meta);
        if let Some((seen, config)) = self.lock().get(path) {
            if *seen == stamp {
                return Ok(Some(TeamConfig::clone(config)));
            }
        }
        let Some(config) = read_json::<TeamConfig>(path)? else {
            return Ok(None);
        };
        // Only a stamp taken before the read vouches for what was read, and
        // only when it is not racy.
        if !is_racy(&meta) {
            self.lock()
                .insert(path.to_path_buf(), (stamp, Arc::new(config.clone())));
        }
        Ok(Some(config))
    }

    /// The config at `path` for a read-modify-write, under its lock: from
    /// the cache when the file is the one recorded; a file that does not
    /// parse is moved aside ([`read_json_or_move_aside`]).
    pub(super) fn read_for_update(&self, path: &Path) -> Result<Option<TeamConfig>> {
        if let Ok(meta) = std::fs::metadata(path) {
            if let Some((seen, config)) = self.lock().get(path) {
                if *seen == Stamp::of(&meta) {
                    return Ok(Some(TeamConfig::clone(config)));
                }
            }
        }
        read_json_or_move_aside(path)
    }

    /// Records `config` as what this process just wrote at `path` (called
    /// under the config's lock, right after the write).
    pub(super) fn wrote(&self, path: &Path, config: TeamConfig) {
        match std::fs::metadata(path) {
            Ok(meta) => {
                self.lock()
                    .insert(path.to_path_buf(), (Stamp::of(&meta), Arc::new(config)));
            }
            Err(_) => self.forget(path),
        }
    }

    /// Drops what is known of `path`.
    pub(super) fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (Stamp, Arc<TeamConfig>)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{NewTeam, Store};

    #[test]
    fn a_config_changed_in_place_behind_the_caches_back_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path());
        let team = store.team("c").unwrap();
        team.create(NewTeam {
            description: Some("aaaa".into()),
            ..Default::default()
        })
        .unwrap();
        // Written (and recorded) by this process, then read from the cache.
        team.set_mode("team-lead", "default").unwrap();
        assert_eq!(team.config().unwrap().description.as_deref(), Some("aaaa"));
        // Claude Code rewrites the file in place, same size.
        let path = team.file_paths().unwrap().config();
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("aaaa", "bbbb");
        std::fs::write(&path, text).unwrap();
        assert_eq!(team.config().unwrap().description.as_deref(), Some("bbbb"));
        // And a read-modify-write starts from what is on disk.
        team.set_mode("team-lead", "plan").unwrap();
        let on_disk = std::fs::read_to_string(&path).unwrap();
        assert!(
            on_disk.contains("bbbb") && on_disk.contains("\"plan\""),
            "{on_disk}"
        );
    }

    #[test]
    fn a_config_that_does_not_parse_is_an_error_even_after_a_cached_read() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path());
        let team = store.team("c").unwrap();
        team.create(NewTeam::default()).unwrap();
        team.set_mode("team-lead", "default").unwrap();
        team.config().unwrap();
        let path = team.file_paths().unwrap().config();
        std::fs::write(&path, b"{ torn").unwrap();
        let err = team.config().unwrap_err().to_string();
        assert!(
            err.contains("config.json") && err.contains("not valid JSON"),
            "{err}"
        );
    }
}
