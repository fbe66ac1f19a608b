//! Compiling a team's components before its teammates are spawned
//! ([`Host::compile`](super::Host::compile)), and who waits to join
//! meanwhile ([`Host::joining`](super::Host::joining)): the teammates the
//! live view shows as `compiling`, then `starting`, before they are members.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{Event, TeammateInfo, TeammateState};
use crate::error::{Error, Result};

impl super::Host {
    /// Compiles the component at `path`, or loads it from the cache, for
    /// the teammates `names` of `team` that are about to be spawned from it.
    /// Returns how long that took.
    ///
    /// Each of them is listed by [`Host::joining`](Self::joining) from now
    /// until its [`Host::spawn`](Self::spawn) (or the team's shutdown): in
    /// state [`TeammateState::Compiling`] while the component compiles, then
    /// [`TeammateState::Starting`], each change announced by an
    /// [`Event::StateChanged`]. A component that cannot be loaded takes them
    /// off the list with a change to [`TeammateState::Failed`]. Calls for
    /// different components compile in turn, a few at once (half the
    /// cores: each compilation uses every core); a component already
    /// compiled never waits; two calls for one component share one
    /// compilation. `teamhost
    /// run` compiles every component of its manifest this way before the
    /// first teammate starts, so no spawn waits for a compilation.
    /// `Host::spawn` compiles an uncompiled component itself, but shows
    /// nothing while it does.
    pub async fn compile(&self, team: &str, path: &Path, names: &[String]) -> Result<Duration> {
        let team = self.team(team)?.name().to_string();
        let keys: Vec<(String, String)> = names.iter().map(|n| (team.clone(), n.clone())).collect();
        self.set_joining(&keys, Some(TeammateState::Compiling));

        let started = Instant::now();
        let (runtime, file) = (self.inner.runtime.clone(), path.to_path_buf());
        let loaded =
            crate::blocking::run("component loading", move || runtime.compile(&file)).await;
        let took = started.elapsed();

        let result = match loaded {
            Err(e) => Err(e),
            Ok(Err(e)) => Err(Error::Component {
                path: path.to_path_buf(),
                message: format!("{e:#}"),
            }),
            Ok(Ok(_)) => Ok(took),
        };
        match &result {
            Ok(_) => self.set_joining(&keys, Some(TeammateState::Starting)),
            Err(e) => {
                self.set_joining(&keys, None);
                self.announce(&keys, TeammateState::Failed(e.to_string()));
            }
        }
        result
    }

    /// The teammates of `team` that [`Host::compile`](Self::compile)
    /// prepares and that are not spawned yet: [`TeammateState::Compiling`]
    /// or [`TeammateState::Starting`], by name. They are not members yet (no
    /// colour, no turns); [`Host::teammates`](Self::teammates) lists them
    /// once they are spawned.
    pub fn joining(&self, team: &str) -> Vec<TeammateInfo> {
        let Ok(team) = self.team(team) else {
            return Vec::new();
        };
        self.inner
            .joining
            .lock()
            .expect("joining lock")
            .iter()
            .filter(|((t, _), _)| t == team.name())
            .map(|((t, name), state)| TeammateInfo {
                team: t.clone(),
                name: name.clone(),
                agent_id: crate::store::agent_id(name, t),
                color: String::new(),
                state: state.clone(),
                turns: 0,
            })
            .collect()
    }

    /// Takes `name` of `team` (sanitised) off the joining list: its spawn
    /// is over, whatever came of it.
    pub(super) fn joined(&self, team: &str, name: &str) {
        let mut joining = self.inner.joining.lock().expect("joining lock");
        if !joining.is_empty() {
            joining.remove(&(team.to_string(), name.to_string()));
        }
    }

    /// Empties `team`'s joining list (sanitised name).
    pub(super) fn forget_joining(&self, team: &str) {
        self.inner
            .joining
            .lock()
            .expect("joining lock")
            .retain(|(t, _), _| t != team);
    }

    /// Puts `keys` on the joining list in `state` (and announces it), or
    /// takes them off it (`None`, announcing nothing).
    fn set_joining(&self, keys: &[(String, String)], state: Option<TeammateState>) {
        {
            let mut joining = self.inner.joining.lock().expect("joining lock");
            for key in keys {
                match &state {
                    Some(s) => joining.insert(key.clone(), s.clone()),
                    None => joining.remove(key),
                };
            }
        }
        if let Some(state) = state {
            self.announce(keys, state);
        }
    }

    fn announce(&self, keys: &[(String, String)], state: TeammateState) {
        for (team, name) in keys {
            let _ = self.inner.events.send(Event::StateChanged {
                team: team.clone(),
                name: name.clone(),
                state: state.clone(),
            });
        }
    }
}
