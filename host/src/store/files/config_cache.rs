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
//!
//! This process's own write is known from the moment it is visible: its new
//! version is recorded as *staged* once synced, before the rename, and a
//! reader that finds that file (same inode, size and modification time; a
//! rename changes only the change time) takes the staged config. Without
//! it, every read between the rename and the record parsed the whole
//! config: at 10,000 members, one read in twenty, several megabytes each,
//! a third of a crowd's spawning CPU.

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
    entries: Mutex<HashMap<PathBuf, Entry>>,
}

/// What is known of one config file.
#[derive(Debug, Default)]
struct Entry {
    /// The version last read or written, and its stamp.
    known: Option<(Stamp, Arc<TeamConfig>)>,
    /// The version this process is renaming into place, under the
    /// config's lock, with the stamp its new file had before the rename.
    staged: Option<(Stamp, Arc<TeamConfig>)>,
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
        if let Some(config) = self.lock().get(path).and_then(|e| e.find(&stamp)) {
            return Ok(Some(config));
        }
        let Some(config) = read_json::<TeamConfig>(path)? else {
            return Ok(None);
        };
        // Only a stamp taken before the read vouches for what was read, and
        // only when it is not racy.
        if !is_racy(&meta) {
            self.lock().entry(path.to_path_buf()).or_default().known =
                Some((stamp, Arc::new(config.clone())));
        }
        Ok(Some(config))
    }

    /// The config at `path` for a read-modify-write, under its lock: from
    /// the cache when the file is the one recorded; a file that does not
    /// parse is moved aside ([`read_json_or_move_aside`]).
    pub(super) fn read_for_update(&self, path: &Path) -> Result<Option<TeamConfig>> {
        if let Ok(meta) = std::fs::metadata(path) {
            if let Some(config) = self
                .lock()
                .get(path)
                .and_then(|e| e.find(&Stamp::of(&meta)))
            {
                return Ok(Some(config));
            }
        }
        read_json_or_move_aside(path)
    }

    /// Records `config` as the version of `path` this process is renaming
    /// into place, its new file's metadata `meta` taken before the rename
    /// (called under the config's lock, between the sync and the rename:
    /// [`crate::durable::write_atomic_staged`]). Until [`Self::wrote`] or
    /// [`Self::unstage`], a reader finding that file takes `config`.
    pub(super) fn staged(&self, path: &Path, meta: &std::fs::Metadata, config: Arc<TeamConfig>) {
        self.lock().entry(path.to_path_buf()).or_default().staged = Some((Stamp::of(meta), config));
    }

    /// Forgets a staged version whose write failed.
    pub(super) fn unstage(&self, path: &Path) {
        if let Some(entry) = self.lock().get_mut(path) {
            entry.staged = None;
        }
    }

    /// Records `config` as what this process just wrote at `path` (called
    /// under the config's lock, right after the write), in place of the
    /// staged version.
    pub(super) fn wrote(&self, path: &Path, config: Arc<TeamConfig>) {
        match std::fs::metadata(path) {
            Ok(meta) => {
                self.lock().insert(
                    path.to_path_buf(),
                    Entry {
                        known: Some((Stamp::of(&meta), config)),
                        staged: None,
                    },
                );
            }
            Err(_) => self.forget(path),
        }
    }

    /// Drops what is known of `path`.
    pub(super) fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Entry {
    /// The config whose file has `stamp`: the known version, or the staged
    /// one once renamed into place.
    fn find(&self, stamp: &Stamp) -> Option<TeamConfig> {
        if let Some((seen, config)) = &self.known {
            if seen == stamp {
                return Some(TeamConfig::clone(config));
            }
        }
        let (staged, config) = self.staged.as_ref()?;
        stamp.is_renamed(staged).then(|| TeamConfig::clone(config))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::ConfigCache;
    use crate::store::{NewTeam, Store, TeamConfig};

    fn config(description: &str) -> TeamConfig {
        serde_json::from_value(serde_json::json!({
            "name": "c", "description": description, "leadAgentId": "team-lead@c", "members": []
        }))
        .unwrap()
    }

    fn description(cache: &ConfigCache, path: &Path) -> String {
        cache.read(path).unwrap().unwrap().description.unwrap()
    }

    /// Stages `staged` for a new file holding `text`, then renames it over
    /// `path`, as [`crate::durable::write_atomic_staged`] does.
    fn stage_and_rename(cache: &ConfigCache, path: &Path, text: &str, staged: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        let meta = std::fs::metadata(&tmp).unwrap();
        cache.staged(path, &meta, Arc::new(config(staged)));
        std::fs::rename(&tmp, path).unwrap();
    }

    #[test]
    fn a_staged_version_is_read_from_its_rename_until_it_is_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.json");
        let cache = ConfigCache::default();
        let on_disk = serde_json::to_string(&config("disk")).unwrap();
        // The staged config differs from the file's text only so that the
        // test can tell which one a read returns.
        stage_and_rename(&cache, &path, &on_disk, "staged");
        assert_eq!(
            description(&cache, &path),
            "staged",
            "no parse between the rename and the record"
        );
        cache.wrote(&path, Arc::new(config("recorded")));
        assert_eq!(description(&cache, &path), "recorded");
    }

    #[test]
    fn a_staged_version_never_stands_for_another_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.json");
        let cache = ConfigCache::default();
        stage_and_rename(
            &cache,
            &path,
            &serde_json::to_string(&config("aaaa")).unwrap(),
            "staged",
        );
        // Another writer's new file renamed over it: another inode.
        let other = tmp.path().join("other.json");
        std::fs::write(&other, serde_json::to_string(&config("bbbb")).unwrap()).unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(description(&cache, &path), "bbbb");
        // Staged again, then rewritten in place with a different size.
        stage_and_rename(
            &cache,
            &path,
            &serde_json::to_string(&config("aaaa")).unwrap(),
            "staged",
        );
        std::fs::write(&path, serde_json::to_string(&config("longer")).unwrap()).unwrap();
        assert_eq!(description(&cache, &path), "longer");
        // A write that failed forgets what it staged.
        stage_and_rename(
            &cache,
            &path,
            &serde_json::to_string(&config("cccc")).unwrap(),
            "staged",
        );
        cache.unstage(&path);
        assert_eq!(description(&cache, &path), "cccc");
    }

    #[test]
    fn a_teams_own_writes_are_read_back_through_the_staged_version() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path());
        let team = store.team("c").unwrap();
        team.create(NewTeam::default()).unwrap();
        for mode in ["plan", "default", "acceptEdits"] {
            team.set_mode("team-lead", mode).unwrap();
            let lead = team.config().unwrap().members[0].clone();
            assert_eq!(lead.mode.as_deref(), Some(mode));
        }
    }

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
