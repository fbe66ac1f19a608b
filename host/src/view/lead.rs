//! The lead's seat behind the view: where the board is read from and how the
//! lead's answers are written. Watching from outside, it only reads until the
//! person acts; inside `teamhost run`, which is the lead, it also takes the
//! lead's unread messages (they move to its history, as `run`'s line mode
//! does) and knows the states the host keeps in memory.

use crate::approvals::{self, Answer, PermitAnswer, PlanAnswer};
use crate::embed::{decide, Answerer, Host};
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex};

use crate::home::Home;
use crate::store::{HistoryCache, OutgoingMessage, Team};

use super::board::Board;
use super::detail::Detail;
use super::keys::Action;

/// The team the view shows and acts on.
#[derive(Clone)]
pub struct Seat {
    team: Team,
    host: Option<Host>,
    /// The machine-local home, for the teammates' process records.
    home: Option<Home>,
    /// Histories read so far: each look parses only what is new.
    cache: Arc<Mutex<HistoryCache>>,
    /// This process is the lead (`run` without a lead component): each
    /// board read takes the lead's unread messages. Never when a lead
    /// component's runner reads them ([`Seat::beside_lead`]).
    takes_lead_mail: bool,
}

impl std::fmt::Debug for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seat")
            .field("team", &self.team.name())
            .field("host", &self.host.is_some())
            .finish()
    }
}

impl Seat {
    /// A view of `team` from outside: reads its files, writes only the
    /// answers and messages the person gives.
    pub fn watching(team: Team) -> Seat {
        Seat {
            team,
            host: None,
            home: None,
            cache: Default::default(),
            takes_lead_mail: false,
        }
    }

    /// Also reads the process records under the machine-local `home`
    /// (which teammates' processes are gone).
    pub fn with_home(mut self, home: Home) -> Seat {
        self.home = Some(home);
        self
    }

    /// The view of the lead that `host` runs `team` for: it consumes the
    /// lead's messages and shows the host's teammate states.
    pub fn running(host: Host, team: Team) -> Seat {
        Seat {
            team,
            home: Some(host.home().clone()),
            host: Some(host),
            cache: Default::default(),
            takes_lead_mail: true,
        }
    }

    /// The view of a team `host` runs whose lead is a component:
    /// the host's teammate states, as [`Seat::running`], but the lead's
    /// messages are the lead component's to take, never the view's.
    pub fn beside_lead(host: Host, team: Team) -> Seat {
        Seat {
            takes_lead_mail: false,
            ..Seat::running(host, team)
        }
    }

    /// The team.
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// Whether the team still exists on disk.
    pub fn exists(&self) -> bool {
        self.team.exists()
    }

    /// Reads the board now.
    pub fn board(&self) -> Result<Board> {
        let live = match &self.host {
            Some(host) => {
                if self.takes_lead_mail {
                    let lead = self.team.config()?.lead_name().to_string();
                    self.team.take_unread(&lead)?;
                }
                let mut live = host.teammates(self.team.name());
                live.extend(host.joining(self.team.name()));
                live
            }
            None => Vec::new(),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        Board::read_cached(&self.team, self.home.as_ref(), &live, &mut cache)
    }

    /// Reads what is recorded of teammate `name` now (its detail screen).
    pub fn detail(&self, name: &str) -> Detail {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        Detail::read(&self.team, self.home.as_ref(), name, &mut cache)
    }

    /// Answers `id` as the person, through the one approval path.
    fn answer(&self, id: &str, answer: Answer) -> Result<()> {
        let home = self.home.as_ref().ok_or_else(|| {
            Error::Approval(
                "this view has no home to record the decision in; answer with `teamhost permit` or `teamhost plan`".into(),
            )
        })?;
        decide(home, &self.team, &Answerer::Person, id, answer)?;
        Ok(())
    }

    /// Carries out what the person chose; answers what was done, for the
    /// footer. Approving a plan grants the `default` mode; approving a
    /// permission with `remember` applies the request's own suggestions.
    pub fn act(&self, action: &Action) -> Result<Option<String>> {
        let team = &self.team;
        Ok(Some(match action {
            Action::None | Action::Quit => return Ok(None),
            Action::Approve {
                id, kind: "plan", ..
            } => {
                self.answer(id, Answer::Plan(PlanAnswer::Approve { mode: None }))?;
                format!("approved plan {id}")
            }
            Action::Approve { id, remember, .. } => {
                let permission_updates = if *remember {
                    approvals::suggestions(team, id)?
                } else {
                    Vec::new()
                };
                let remembered = permission_updates.len();
                self.answer(
                    id,
                    Answer::Permit(PermitAnswer::Allow {
                        updated_input: None,
                        permission_updates,
                    }),
                )?;
                match remembered {
                    0 => format!("allowed {id}"),
                    n => format!("allowed {id} and applied its {n} suggestion(s)"),
                }
            }
            Action::Deny {
                id,
                kind: "plan",
                reason,
            } => {
                self.answer(
                    id,
                    Answer::Plan(PlanAnswer::Reject {
                        feedback: reason.clone(),
                    }),
                )?;
                format!("rejected plan {id}: {reason}")
            }
            Action::Deny { id, reason, .. } => {
                self.answer(
                    id,
                    Answer::Permit(PermitAnswer::Deny {
                        reason: reason.clone(),
                    }),
                )?;
                format!("denied {id}: {reason}")
            }
            Action::Send { to, text } => {
                let lead = team.config()?.lead_name().to_string();
                team.send(to, OutgoingMessage::new(lead, text.clone()))?;
                format!("sent to {to}")
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::{
        Parsed, PermissionOutcome, PermissionRequest, ProtocolMessage, WireMessage,
    };
    use crate::store::test_team;

    #[test]
    fn approve_and_remember_sends_the_requests_own_suggestions() {
        let (_tmp, team) = test_team(&["alice"]);
        let suggestion =
            json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"});
        let request = PermissionRequest::new("alice", "Write", "toolu_1", "Write x", json!({}))
            .with_suggestions(vec![suggestion.clone()]);
        team.send(
            "team-lead",
            OutgoingMessage::new("alice", request.to_text()),
        )
        .unwrap();

        let home = tempfile::tempdir().unwrap();
        let seat = Seat::watching(team.clone()).with_home(Home::new(home.path()));
        let note = seat
            .act(&Action::Approve {
                id: request.request_id.clone(),
                kind: "permission",
                remember: true,
            })
            .unwrap()
            .unwrap();
        assert!(note.contains("1 suggestion"), "{note}");
        let inbox = team.read_inbox("alice").unwrap();
        let Parsed::Protocol(ProtocolMessage::PermissionResponse(r)) =
            ProtocolMessage::parse(&inbox[0].text)
        else {
            panic!("{inbox:?}")
        };
        assert_eq!(inbox[0].from, "team-lead");
        match r.outcome().unwrap() {
            PermissionOutcome::Allowed(grant) => {
                assert_eq!(grant.permission_updates, vec![suggestion])
            }
            other => panic!("{other:?}"),
        }
        assert!(seat.board().unwrap().pending.is_empty());
        let recorded =
            crate::home::decisions::list(&Home::new(home.path()), team.name(), 0).unwrap();
        assert_eq!(
            recorded.len(),
            1,
            "the person's answer is recorded: {recorded:?}"
        );
        assert_eq!(recorded[0].decider, crate::approvals::Decider::Person);
    }

    #[tokio::test]
    async fn beside_a_lead_component_the_view_leaves_the_leads_mail_to_it() {
        let home = tempfile::tempdir().unwrap();
        let host = Host::new(Home::new(home.path())).unwrap();
        host.create_team("led", crate::store::NewTeam::default())
            .unwrap();
        let team = host.team("led").unwrap();
        team.send("team-lead", OutgoingMessage::new("alice", "done"))
            .unwrap();
        Seat::beside_lead(host.clone(), team.clone())
            .board()
            .unwrap();
        assert_eq!(
            team.read_inbox("team-lead").unwrap().len(),
            1,
            "the lead component's runner takes its mail, not the view"
        );
        Seat::running(host, team.clone()).board().unwrap();
        assert!(team.read_inbox("team-lead").unwrap().is_empty());
    }
}
