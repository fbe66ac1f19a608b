//! The teammates this host runs, by team and name, with an index of the
//! directories they run in: what [`Host::spawn`](super::Host::spawn)'s
//! layout check asks of them is which of them runs in a directory that
//! holds the new teammate's component. Asked of every teammate, that was a
//! tenth of the CPU of spawning 10,000; asked of the component's ancestors
//! (a handful), it costs the same however many run.
//!
//! The index records each teammate's directory as it was when the
//! teammate was put in ([`Running::insert`]): that is the directory its
//! sandbox was given, and a sandbox's directory does not change. Every
//! change to the set goes through [`Running`]'s own methods (reads go
//! through [`std::ops::Deref`] to the map), so the index and the map are
//! changed together, under the one lock that guards both; no method hands
//! out a teammate to change, only [`Running::set_state`] changes one in
//! place, so no caller can move a teammate's directory under the index.

use std::collections::BTreeMap;
use std::path::Path;

use hashbrown::HashMap;

use crate::backends::Spawned;

type Key = (String, String);

/// The running teammates (see the module docs).
#[derive(Default)]
pub(crate) struct Running {
    /// Boxed: a B-tree node holds eleven entries in place, and with half a
    /// KiB each its unused slots cost more than the box.
    map: BTreeMap<Key, Box<Spawned>>,
    /// Team → directory → the names running in it, for the directories
    /// written as a canonical path is ([`plain`]).
    dirs: HashMap<String, HashMap<String, Vec<String>>>,
    /// Team and name → directory, for every teammate with one: what the
    /// index recorded, to take it out again.
    recorded: HashMap<Key, String>,
    /// The same, for the directories not written as a canonical path is
    /// (no backend records one; compared one by one).
    crooked: BTreeMap<Key, String>,
}

impl std::ops::Deref for Running {
    type Target = BTreeMap<Key, Box<Spawned>>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Running {
    /// Puts a teammate in (replacing and returning one of the same team and
    /// name), recording its directory.
    pub(crate) fn insert(&mut self, key: Key, spawned: Spawned) -> Option<Spawned> {
        self.unrecord(&key);
        if let Some(dir) = spawned.member.cwd.clone() {
            if plain(&dir) {
                let names = self.dirs.entry_ref(key.0.as_str()).or_default();
                names
                    .entry_ref(dir.as_str())
                    .or_default()
                    .push(key.1.clone());
            } else {
                self.crooked.insert(key.clone(), dir.clone());
            }
            self.recorded.insert(key.clone(), dir);
        }
        self.map.insert(key, Box::new(spawned)).map(|s| *s)
    }

    /// Takes a teammate out.
    pub(crate) fn remove(&mut self, key: &Key) -> Option<Spawned> {
        self.unrecord(key);
        self.map.remove(key).map(|s| *s)
    }

    /// Keeps only the teammates `keep` says to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Key, &Spawned) -> bool) {
        let gone: Vec<Key> = self
            .map
            .iter()
            .filter(|(k, s)| !keep(k, s))
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// Gives a teammate the state `state` reports (a killed one's, which
    /// no runner will send any more). The one change made to a teammate in
    /// place, so nothing else of it, its directory above all, can differ
    /// from what the index recorded. `false`: no such teammate.
    pub(crate) fn set_state(
        &mut self,
        key: &Key,
        state: tokio::sync::watch::Receiver<crate::teammate::TeammateState>,
    ) -> bool {
        match self.map.get_mut(key) {
            Some(s) => {
                s.state = state;
                true
            }
            None => false,
        }
    }

    /// The teammates of `team` but `except`, with the directory they run
    /// in, whose directory holds `path` (or is it): by path components, as
    /// [`Path::starts_with`] compares. `path` should be canonical (a
    /// directory is recorded as its teammate was given it, which the
    /// backends canonicalise); one that is not is compared with every
    /// directory.
    pub(crate) fn holding<'a>(
        &'a self,
        team: &str,
        path: &'a Path,
        except: &'a str,
    ) -> Vec<(&'a str, &'a str)> {
        let mut found = Vec::new();
        let mine = |(t, name): &Key| t == team && name != except;
        if !path.to_str().is_some_and(plain) {
            for (key, dir) in &self.recorded {
                if mine(key) && path.starts_with(dir) {
                    found.push((key.1.as_str(), dir.as_str()));
                }
            }
            return found;
        }
        // A plain directory holds a plain path exactly when it is one of
        // the path's ancestors, spelled the same.
        if let Some(dirs) = self.dirs.get(team) {
            for ancestor in path.ancestors() {
                let Some((dir, names)) = ancestor.to_str().and_then(|a| dirs.get_key_value(a))
                else {
                    continue;
                };
                found.extend(
                    names
                        .iter()
                        .filter(|n| *n != except)
                        .map(|n| (n.as_str(), dir.as_str())),
                );
            }
        }
        // Directories not written canonically, which no backend records:
        // compared by components, one by one.
        for (key, dir) in &self.crooked {
            if mine(key) && path.starts_with(dir) {
                found.push((key.1.as_str(), dir.as_str()));
            }
        }
        found
    }

    fn unrecord(&mut self, key: &Key) {
        let Some(dir) = self.recorded.remove(key) else {
            return;
        };
        if self.crooked.remove(key).is_some() {
            return;
        }
        let Some(team) = self.dirs.get_mut(key.0.as_str()) else {
            return;
        };
        if let Some(names) = team.get_mut(dir.as_str()) {
            names.retain(|n| *n != key.1);
            if names.is_empty() {
                team.remove(dir.as_str());
            }
        }
        if team.is_empty() {
            self.dirs.remove(key.0.as_str());
        }
    }
}

/// Whether `path` is written as a canonical path is: not empty (an empty
/// path is a prefix of every path, and no ancestor of one), no `//`, no
/// `.` component, no `/` at the end (but for `/` itself).
fn plain(path: &str) -> bool {
    !(path.is_empty()
        || path.contains("//")
        || path.contains("/./")
        || path.ends_with("/.")
        || path == "."
        || path.starts_with("./")
        || (path.len() > 1 && path.ends_with('/')))
}

#[cfg(test)]
mod tests;
