//! What the live view and its plain-line mode show: a [`Board`] read from a
//! team's files ([`status::snapshot_with`]), sharpened by what the host that
//! runs the teammates knows when there is one (a failed teammate, one handling
//! its shutdown, one waiting for its plan to be approved). Every text a
//! teammate could have written is made [`printable`] here, once: one-line
//! fields (names, subjects, summaries) through [`printable_line`], so none
//! can start a line of its own; multi-line bodies (a plan, a request's
//! input) keep their newlines.

use std::collections::BTreeMap;
use std::time::SystemTime;

use chrono::{DateTime, Local, Utc};

use crate::embed::TeammateInfo;
use crate::error::Result;
use crate::home::{Home, Kept};
use crate::protocol::describe::{printable, printable_line};
pub use crate::status::MemberState;
use crate::status::{self, FeedItem, PendingView, StateFacts};
use crate::store::tasks::open_blockers;
use crate::store::{HistoryCache, Task, TaskStatus, Team};

/// How many of the lead's latest messages the feed keeps.
pub const FEED_LEN: usize = 200;

/// One teammate's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MateRow {
    /// Member name.
    pub name: String,
    /// Its colour (the reference's names: `blue`, `green`, …).
    pub color: Option<String>,
    /// Its state.
    pub state: MemberState,
    /// `in-process`, `process`, `tmux` (when recorded).
    pub backend: Option<String>,
    /// The task it is working on: `(id, what)`, `what` being the task's
    /// `activeForm` when it has one, else its subject.
    pub task: Option<(String, String)>,
    /// Its model use in a few words (`thinking…` while it waits on the
    /// model, else calls and cost); `None` when it never used one.
    pub model: Option<String>,
    /// Its sub-agents in a few characters (`subs 1/3 d2/2`: running /
    /// started, deepest / depth limit); `None` when it never started one.
    pub subagents: Option<String>,
    /// When it last did something the files show (ISO 8601).
    pub last_activity: Option<String>,
    /// When its turn in progress started (the home's turn journal, written
    /// when a turn takes its message); `None` between turns or without a
    /// home.
    pub turn_started: Option<SystemTime>,
    /// Whether it waits on the model now.
    pub thinking: bool,
}

impl MateRow {
    /// Whether its row moves (a spinner) until the next redraw: it compiles,
    /// runs a turn or waits on the model.
    pub fn busy(&self) -> bool {
        self.thinking
            || matches!(self.state, MemberState::Compiling)
            || (self.turn_started.is_some() && !self.state.ended())
    }
}

/// One task's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    /// Task id.
    pub id: String,
    /// `pending`, `in_progress`, `completed`.
    pub status: String,
    /// Owner, if any.
    pub owner: Option<String>,
    /// Ids of the tasks that block it and are not completed.
    pub blocked_by: Vec<String>,
    /// Subject.
    pub subject: String,
}

/// Everything the view shows of one team at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    /// Team name.
    pub team: String,
    /// Its description.
    pub description: Option<String>,
    /// The lead's member name.
    pub lead: String,
    /// Teammates in join order; ones the host ran that have left the team
    /// (failed, done), then ones whose component still compiles, come last.
    pub teammates: Vec<MateRow>,
    /// Tasks by id.
    pub tasks: Vec<TaskRow>,
    /// How many tasks are completed.
    pub completed: usize,
    /// Requests waiting for the lead, oldest first.
    pub pending: Vec<PendingView>,
    /// The lead's latest messages, newest first.
    pub feed: Vec<FeedItem>,
    /// Who each waiting request waits for, and the latest decision.
    pub routing: super::routing::Routing,
}

impl Board {
    /// Reads `team`'s files. `live` is what the host running the teammates
    /// reports (`Host::teammates`, then `Host::compiling`), empty when
    /// watching from outside.
    pub fn read(team: &Team, live: &[TeammateInfo]) -> Result<Board> {
        Board::read_cached(team, None, live, &mut HistoryCache::new())
    }

    /// [`Board::read`], reading histories through `cache`, so reading the
    /// board again costs the messages that are new since the last read.
    pub fn read_cached(
        team: &Team,
        home: Option<&Home>,
        live: &[TeammateInfo],
        cache: &mut HistoryCache,
    ) -> Result<Board> {
        let snap = status::snapshot_cached(team, home, FEED_LEN, cache)?;
        let waiting: Vec<_> = if home.is_some() && !snap.pending_requests.is_empty() {
            crate::approvals::requests_cached(team, cache)?
                .into_iter()
                .filter(|r| snap.pending_requests.iter().any(|p| p.request_id == r.id()))
                .collect()
        } else {
            Vec::new()
        };
        let routing = super::routing::read(team, home, &waiting);
        // What a teammate is doing, as the reference shows it: the task's
        // `activeForm` ("Counting the river story"), else its subject.
        let doing: BTreeMap<&str, &str> = snap
            .tasks
            .iter()
            .map(|t| {
                let form = t.active_form.as_deref().filter(|f| !f.trim().is_empty());
                (t.id.as_str(), form.unwrap_or(t.subject.as_str()))
            })
            .collect();
        let mut teammates: Vec<MateRow> = snap
            .teammates
            .iter()
            .map(|t| {
                let host = live.iter().find(|l| l.name == t.name);
                let state = MemberState::decide(&StateFacts {
                    host: host.map(|h| h.state.clone()),
                    ..t.facts.clone()
                });
                let state_finished = state.ended();
                MateRow {
                    name: shown_line(&t.name),
                    color: t.color.as_deref().map(shown_line),
                    backend: t.backend.as_deref().map(shown_line),
                    task: t.current_task.as_ref().map(|id| {
                        let what = doing.get(id.as_str()).unwrap_or(&"");
                        (shown_line(id), shown_line(what))
                    }),
                    last_activity: t.last_message.clone(),
                    model: t.model.as_ref().map(model_note),
                    subagents: t.subagents.as_ref().map(|r| r.short()),
                    turn_started: (!state_finished)
                        .then(|| home.and_then(|h| turn_started(h, team.name(), &t.name)))
                        .flatten(),
                    thinking: t.model.as_ref().is_some_and(|u| u.waiting_since.is_some()),
                    state,
                }
            })
            .collect();
        // Teammates the host knows that are not members: they ended, or
        // they wait for their component to compile.
        for l in live {
            if !teammates.iter().any(|t| t.name == l.name) {
                teammates.push(MateRow {
                    name: shown_line(&l.name),
                    color: Some(shown_line(&l.color)).filter(|c| !c.is_empty()),
                    state: MemberState::decide(&StateFacts {
                        host: Some(l.state.clone()),
                        ..Default::default()
                    }),
                    backend: None,
                    task: None,
                    last_activity: None,
                    model: None,
                    subagents: None,
                    turn_started: None,
                    thinking: false,
                });
            }
        }
        Ok(Board {
            team: snap.team,
            description: snap.description.as_deref().map(shown),
            lead: shown_line(&snap.lead),
            teammates,
            tasks: snap
                .tasks
                .iter()
                .map(|t| task_row(t, &snap.tasks))
                .collect(),
            completed: snap.completed,
            pending: snap
                .pending_requests
                .into_iter()
                .map(|p| PendingView {
                    from: shown_line(&p.from),
                    what: shown_line(&p.what),
                    detail: shown(&p.detail),
                    ..p
                })
                .collect(),
            feed: snap
                .recent_messages
                .into_iter()
                .map(|m| FeedItem {
                    from: shown_line(&m.from),
                    text: shown_line(&m.text),
                    ..m
                })
                .collect(),
            routing,
        })
    }

    /// `completed / total` as a ratio in `0.0..=1.0` (1.0 with no tasks).
    pub fn progress(&self) -> f64 {
        if self.tasks.is_empty() {
            1.0
        } else {
            self.completed as f64 / self.tasks.len() as f64
        }
    }
}

fn task_row(t: &Task, all: &[Task]) -> TaskRow {
    TaskRow {
        id: shown_line(&t.id),
        status: t.status.as_str().to_string(),
        owner: t.owner.as_deref().map(shown_line),
        blocked_by: if t.status == TaskStatus::Completed {
            Vec::new()
        } else {
            open_blockers(t, all)
        },
        subject: shown_line(&t.subject),
    }
}

/// When `name`'s turn in progress started: the time its turn journal was
/// written (it is removed when the turn's idle notification is stored).
fn turn_started(home: &Home, team: &str, name: &str) -> Option<SystemTime> {
    let path = home.kept(team, name, Kept::Turn).ok()?;
    std::fs::metadata(path).ok()?.modified().ok()
}

/// Text a teammate may have written, made safe for the terminal.
fn shown(text: &str) -> String {
    printable(text).into_owned()
}

/// A one-line field a teammate may have written, made safe for the
/// terminal and kept on one line.
fn shown_line(text: &str) -> String {
    printable_line(text).into_owned()
}

/// An ISO 8601 time as local `HH:MM:SS`; the text as it is when it does not
/// parse.
pub fn clock(timestamp: &str) -> String {
    match timestamp.parse::<DateTime<Utc>>() {
        Ok(t) => t.with_timezone(&Local).format("%H:%M:%S").to_string(),
        Err(_) => timestamp.to_string(),
    }
}

/// A teammate's model use in a few words for its row.
fn model_note(u: &crate::store::ModelUsage) -> String {
    let spent = format!(
        "{} call{}, ${:.4}",
        u.calls,
        if u.calls == 1 { "" } else { "s" },
        u.cost_microdollars as f64 / 1e6
    );
    if u.waiting_since.is_some() {
        format!("thinking… ({spent})")
    } else {
        spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::TeammateState;
    use crate::store::{test_team, NewTask, TaskUpdate};

    #[test]
    fn a_teammate_waiting_on_the_model_shows_it_with_what_it_spent() {
        let (_tmp, team) = test_team(&["alice", "bob"]);
        let mut usage = crate::store::ModelUsage {
            calls: 3,
            cost_microdollars: 12_300,
            waiting_since: Some("2026-11-24T07:00:00.000Z".into()),
            ..Default::default()
        };
        team.write_model_usage("alice", &usage).unwrap();
        let board = Board::read(&team, &[]).unwrap();
        let row = |name: &str| {
            board
                .teammates
                .iter()
                .find(|t| t.name == name)
                .unwrap()
                .model
                .clone()
        };
        assert_eq!(
            row("alice").as_deref(),
            Some("thinking… (3 calls, $0.0123)")
        );
        assert_eq!(
            row("bob"),
            None,
            "a teammate that never used a model shows nothing"
        );
        usage.waiting_since = None;
        team.write_model_usage("alice", &usage).unwrap();
        let board = Board::read(&team, &[]).unwrap();
        assert_eq!(
            board
                .teammates
                .iter()
                .find(|t| t.name == "alice")
                .unwrap()
                .model
                .as_deref(),
            Some("3 calls, $0.0123")
        );
    }

    #[test]
    fn a_teammate_whose_component_compiles_shows_as_compiling_after_the_members() {
        let (_tmp, team) = test_team(&["alice"]);
        let compiling = TeammateInfo {
            team: team.name().into(),
            name: "py".into(),
            agent_id: crate::store::agent_id("py", team.name()),
            color: String::new(),
            state: TeammateState::Compiling,
            turns: 0,
        };
        let board = Board::read(&team, &[compiling]).unwrap();
        let rows: Vec<_> = board
            .teammates
            .iter()
            .map(|t| (t.name.as_str(), t.state.word(), t.color.as_deref()))
            .collect();
        assert_eq!(
            rows[1..],
            [("py", "compiling", None)],
            "a member first, then the teammate that is not one yet, without a colour: {rows:?}"
        );
        assert_eq!(rows[0].0, "alice");
    }

    #[test]
    fn a_teammate_at_work_shows_its_tasks_active_form() {
        let (_tmp, team) = test_team(&["alice"]);
        for (subject, form) in [("Write tests", Some("Writing tests")), ("Review", None)] {
            team.create_task(NewTask {
                subject: subject.into(),
                active_form: form.map(str::to_string),
                ..Default::default()
            })
            .unwrap();
        }
        let start = |id: &str| {
            team.update_task(
                id,
                TaskUpdate {
                    owner: Some(Some("alice".into())),
                    status: Some(TaskStatus::InProgress),
                    ..Default::default()
                },
                "team-lead",
            )
            .unwrap();
        };
        start("1");
        let board = Board::read(&team, &[]).unwrap();
        assert_eq!(
            board.teammates[0].task,
            Some(("1".into(), "Writing tests".into()))
        );
        team.update_task(
            "1",
            TaskUpdate {
                status: Some(TaskStatus::Completed),
                ..Default::default()
            },
            "alice",
        )
        .unwrap();
        start("2");
        let board = Board::read(&team, &[]).unwrap();
        assert_eq!(board.teammates[0].task, Some(("2".into(), "Review".into())));
        assert_eq!((board.completed, board.progress()), (1, 0.5));
    }

    #[test]
    fn a_turn_in_progress_shows_when_it_started_and_keeps_the_row_moving() {
        let (tmp, team) = test_team(&["alice", "bob"]);
        let home = Home::new(tmp.path().join("home"));
        let read = || {
            Board::read_cached(&team, Some(&home), &[], &mut HistoryCache::new())
                .unwrap()
                .teammates
        };
        assert!(read().iter().all(|m| m.turn_started.is_none() && !m.busy()));
        let journal = crate::home::kept::TurnJournal::of(&home, team.name(), "alice").unwrap();
        journal
            .open(
                &serde_json::from_str(
                    r#"{"from":"team-lead","text":"go","timestamp":"","read":true}"#,
                )
                .unwrap(),
            )
            .unwrap();
        let rows = read();
        let alice = rows.iter().find(|m| m.name == "alice").unwrap();
        let since = alice.turn_started.expect("the journal's time");
        assert!(since.elapsed().unwrap() < std::time::Duration::from_secs(60));
        assert!(alice.busy(), "a turn in progress turns the spinner");
        assert!(!rows.iter().find(|m| m.name == "bob").unwrap().busy());
        journal.close().unwrap();
        assert!(read().iter().all(|m| m.turn_started.is_none()));
    }
}
