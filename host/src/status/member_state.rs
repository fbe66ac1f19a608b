//! A member's state, decided in one place ([`MemberState::decide`]) from
//! every fact a reader has: what the team's files say (`isActive`, a
//! shutdown request not answered, a permission or plan request waiting for
//! the lead), whether the process that ran it is gone, and, inside the host
//! that runs it, what that host knows. `teamhost status` and its `--json`,
//! `watch`, the live view and its detail, and `teamhost run`'s summary all
//! name a member's state through it, so no two screens disagree. (Only
//! the live view shortens a word, when its column is narrow:
//! `awaiting approval` becomes whom the request waits for, `view/fit.rs`.)
//!
//! | state | the facts | shown |
//! |---|---|---|
//! | `compiling` | the host compiles its component (the host only) | cyan |
//! | `starting` | registered, its first turn not started (the host only) | |
//! | `active` | in a turn (`isActive: true`) | green |
//! | `idle` | waiting for a message or a task (`isActive: false`) | dim |
//! | `awaiting approval` | a permission or plan request of its waits for an answer; wins over every state but the last four | yellow |
//! | `stopping` | asked to shut down, has not answered yet | magenta |
//! | `stopped` | approved its shutdown and ended (the host only) | dim |
//! | `failed` | trapped or broke a limit (the host only; the reason beside it) | red |
//! | `killed` | the host killed it (a kill, or a shutdown not approved in time; the host only) | red |
//! | `dead` | its process, or the host that ran it, is gone | red |
//! | `unknown` | its files say nothing either way (no `isActive`) | |

use serde::{Serialize, Serializer};

use crate::teammate::TeammateState;

/// A member's state as every screen and `--json` names it ([`Self::word`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberState {
    /// Its component compiles; it joins once that is done (only a host that
    /// runs it knows).
    Compiling,
    /// Registered, its first turn not started.
    Starting,
    /// In a turn.
    Active,
    /// Waiting for a message or a task.
    Idle,
    /// A permission or plan request of its waits for an answer.
    AwaitingApproval,
    /// Asked to shut down; it has not answered yet.
    Stopping,
    /// Approved its shutdown and stopped.
    Stopped,
    /// Trapped or broke a limit (why).
    Failed(String),
    /// The host killed it (a kill, or a shutdown not approved in time).
    Killed,
    /// Its process, or the host that ran it, is gone.
    Dead,
    /// Its files say nothing either way.
    Unknown,
}

/// What a reader knows of one member, for [`MemberState::decide`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateFacts {
    /// What the host that runs it says, when the reader is that host.
    pub host: Option<TeammateState>,
    /// Its process, or the in-process teammate's host, is gone.
    pub gone: bool,
    /// A shutdown request to it has no answer yet.
    pub asked_to_stop: bool,
    /// The config's `isActive`.
    pub is_active: Option<bool>,
    /// A permission or plan request of its has no answer yet.
    pub waits_for_answer: bool,
}

impl MemberState {
    /// The one rule. The host's own knowledge wins over the files (it knows
    /// a teammate compiles, failed or stopped); a dead process wins over
    /// what its files last said; a request waiting for an answer wins over
    /// every state but an ended one.
    pub fn decide(f: &StateFacts) -> MemberState {
        let base = match &f.host {
            Some(state) => Self::of_host(state),
            None if f.gone => MemberState::Dead,
            None if f.asked_to_stop => MemberState::Stopping,
            None => match f.is_active {
                Some(true) => MemberState::Active,
                Some(false) => MemberState::Idle,
                None => MemberState::Unknown,
            },
        };
        if f.waits_for_answer && !base.ended() && base != MemberState::Compiling {
            MemberState::AwaitingApproval
        } else {
            base
        }
    }

    fn of_host(state: &TeammateState) -> MemberState {
        match state {
            TeammateState::Compiling => MemberState::Compiling,
            TeammateState::Starting => MemberState::Starting,
            TeammateState::Active => MemberState::Active,
            TeammateState::Idle => MemberState::Idle,
            TeammateState::AwaitingPlanApproval => MemberState::AwaitingApproval,
            TeammateState::ShutdownRequested => MemberState::Stopping,
            TeammateState::Completed => MemberState::Stopped,
            TeammateState::Failed(why) => MemberState::Failed(why.clone()),
            TeammateState::Killed => MemberState::Killed,
        }
    }

    /// The word every screen and `--json` shows for it.
    pub fn word(&self) -> &'static str {
        match self {
            MemberState::Compiling => "compiling",
            MemberState::Starting => "starting",
            MemberState::Active => "active",
            MemberState::Idle => "idle",
            MemberState::AwaitingApproval => "awaiting approval",
            MemberState::Stopping => "stopping",
            MemberState::Stopped => "stopped",
            MemberState::Failed(_) => "failed",
            MemberState::Killed => "killed",
            MemberState::Dead => "dead",
            MemberState::Unknown => "unknown",
        }
    }

    /// Whether it has ended for good: stopped, failed, killed or dead.
    pub fn ended(&self) -> bool {
        matches!(
            self,
            MemberState::Stopped | MemberState::Failed(_) | MemberState::Killed | MemberState::Dead
        )
    }
}

impl Serialize for MemberState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.word())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(is_active: Option<bool>) -> StateFacts {
        StateFacts {
            is_active,
            ..Default::default()
        }
    }

    #[test]
    fn the_files_alone_give_active_idle_or_unknown() {
        assert_eq!(MemberState::decide(&disk(Some(true))), MemberState::Active);
        assert_eq!(MemberState::decide(&disk(Some(false))), MemberState::Idle);
        assert_eq!(MemberState::decide(&disk(None)), MemberState::Unknown);
    }

    #[test]
    fn a_waiting_request_wins_over_active_and_stopping_but_not_an_end() {
        for f in [
            disk(Some(true)),
            StateFacts {
                asked_to_stop: true,
                ..disk(Some(true))
            },
            StateFacts {
                host: Some(TeammateState::Active),
                ..Default::default()
            },
        ] {
            let waiting = StateFacts {
                waits_for_answer: true,
                ..f
            };
            assert_eq!(MemberState::decide(&waiting), MemberState::AwaitingApproval);
        }
        for host in [
            TeammateState::Completed,
            TeammateState::Killed,
            TeammateState::Failed("trap".into()),
            TeammateState::Compiling,
        ] {
            let f = StateFacts {
                host: Some(host),
                waits_for_answer: true,
                ..Default::default()
            };
            assert_ne!(MemberState::decide(&f), MemberState::AwaitingApproval);
        }
        let gone = StateFacts {
            gone: true,
            waits_for_answer: true,
            ..disk(Some(true))
        };
        assert_eq!(MemberState::decide(&gone), MemberState::Dead);
    }

    #[test]
    fn the_host_wins_over_the_files() {
        let f = StateFacts {
            host: Some(TeammateState::Completed),
            is_active: Some(true),
            gone: true,
            ..Default::default()
        };
        assert_eq!(MemberState::decide(&f), MemberState::Stopped);
    }

    #[test]
    fn the_hosts_event_lines_use_the_same_words() {
        for state in [
            TeammateState::Compiling,
            TeammateState::Starting,
            TeammateState::Active,
            TeammateState::Idle,
            TeammateState::AwaitingPlanApproval,
            TeammateState::ShutdownRequested,
            TeammateState::Completed,
            TeammateState::Failed("x".into()),
            TeammateState::Killed,
        ] {
            let f = StateFacts {
                host: Some(state.clone()),
                ..Default::default()
            };
            assert_eq!(MemberState::decide(&f).word(), state.as_str());
        }
    }

    #[test]
    fn json_carries_the_screen_word() {
        let json = serde_json::to_string(&MemberState::AwaitingApproval).unwrap();
        assert_eq!(json, "\"awaiting approval\"");
        assert_eq!(
            serde_json::to_string(&MemberState::Failed("x".into())).unwrap(),
            "\"failed\""
        );
    }
}
