//! The live view's keyboard: what each key does in each screen, as a pure
//! state machine ([`Ui::on_key`] turns a key into an [`Action`] for the lead
//! to carry out), so it can be tested without a terminal.
//!
//! | screen | keys |
//! |---|---|
//! | board | `↑`/`↓` (`k`/`j`) pick a pending request · `Enter`/`v` view it in full · `a` approve · `A` approve and remember (a permission's suggested rule or mode) · `d` deny (asks a reason) · `m` message a teammate · `PgUp`/`PgDn` scroll teammates · `q` quit |
//! | request | `a` approve · `A` approve and remember · `d` deny · `Esc`/`q` back |
//! | reason | type the reason · `Enter` deny with it · `Esc` cancel |
//! | message | `Tab`/`↑`/`↓` pick the teammate · type · `Enter` send · `Esc` cancel |
//!
//! `Ctrl-C` quits from every screen (raw mode turns it into a key).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::board::Board;

/// What the lead asked for with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do beyond redrawing.
    None,
    /// Leave the view.
    Quit,
    /// Approve the request (`permission` or `plan`) with this id.
    Approve {
        /// Request id.
        id: String,
        /// `permission` or `plan`.
        kind: &'static str,
        /// For a permission: also apply the request's suggestions (the rule
        /// or mode it proposed) for the rest of the teammate's session.
        remember: bool,
    },
    /// Deny the request with this id, with a reason.
    Deny {
        /// Request id.
        id: String,
        /// `permission` or `plan`.
        kind: &'static str,
        /// Why (the teammate reads it).
        reason: String,
    },
    /// Send a message from the lead.
    Send {
        /// Recipient.
        to: String,
        /// Text.
        text: String,
    },
}

/// Which screen is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// The team.
    Board,
    /// One pending request (by id) in full.
    Request(String),
    /// Typing the reason for denying a request (by id).
    Reason(String, String),
    /// Typing a message: recipient index into the teammates, text.
    Message(usize, String),
}

/// What the keyboard has chosen so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ui {
    /// The screen.
    pub screen: Screen,
    /// Index of the chosen pending request.
    pub selected: usize,
    /// First teammate row shown (scrolling).
    pub mates_offset: usize,
    /// The result of the last action, shown in the footer.
    pub note: Option<String>,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            screen: Screen::Board,
            selected: 0,
            mates_offset: 0,
            note: None,
        }
    }
}

/// The reason given when the lead denies without typing one.
pub const DEFAULT_REASON: &str = "denied by the lead";

impl Ui {
    /// Keeps the selection and scrolling inside `board` after it changed. A
    /// request open on screen that is no longer pending (answered elsewhere)
    /// closes, so a key never answers a request other than the one shown.
    pub fn clamp(&mut self, board: &Board) {
        self.selected = self.selected.min(board.pending.len().saturating_sub(1));
        self.mates_offset = self
            .mates_offset
            .min(board.teammates.len().saturating_sub(1));
        if let Screen::Request(id) | Screen::Reason(id, _) = &self.screen {
            if !board.pending.iter().any(|p| &p.request_id == id) {
                self.note = Some(format!("{id} is no longer waiting (answered elsewhere)"));
                self.screen = Screen::Board;
            }
        }
    }

    /// Handles one key press against what `board` shows.
    pub fn on_key(&mut self, key: KeyEvent, board: &Board) -> Action {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        match std::mem::replace(&mut self.screen, Screen::Board) {
            Screen::Board => self.on_board(key, board),
            Screen::Request(id) => match key.code {
                KeyCode::Esc | KeyCode::Char('q') => Action::None,
                KeyCode::Char('a') | KeyCode::Char('y') => approve(board, &id, false),
                KeyCode::Char('A') => approve(board, &id, true),
                KeyCode::Char('d') | KeyCode::Char('n') => {
                    self.screen = Screen::Reason(id, String::new());
                    Action::None
                }
                _ => {
                    self.screen = Screen::Request(id);
                    Action::None
                }
            },
            Screen::Reason(id, mut text) => match key.code {
                KeyCode::Esc => Action::None,
                KeyCode::Enter => match board.pending.iter().find(|p| p.request_id == id) {
                    Some(p) => Action::Deny {
                        id,
                        kind: p.kind,
                        reason: if text.trim().is_empty() {
                            DEFAULT_REASON.to_string()
                        } else {
                            text.trim().to_string()
                        },
                    },
                    None => Action::None,
                },
                code => {
                    edit(&mut text, code);
                    self.screen = Screen::Reason(id, text);
                    Action::None
                }
            },
            Screen::Message(mut to, mut text) => {
                let n = board.teammates.len().max(1);
                match key.code {
                    KeyCode::Esc => return Action::None,
                    KeyCode::Enter if !text.trim().is_empty() => {
                        if let Some(m) = board.teammates.get(to) {
                            return Action::Send {
                                to: m.name.clone(),
                                text: text.trim().to_string(),
                            };
                        }
                    }
                    KeyCode::Tab | KeyCode::Down => to = (to + 1) % n,
                    KeyCode::BackTab | KeyCode::Up => to = (to + n - 1) % n,
                    code => edit(&mut text, code),
                }
                self.screen = Screen::Message(to, text);
                Action::None
            }
        }
    }

    fn on_board(&mut self, key: KeyEvent, board: &Board) -> Action {
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(board.pending.len().saturating_sub(1))
            }
            KeyCode::PageUp => self.mates_offset = self.mates_offset.saturating_sub(10),
            KeyCode::PageDown => {
                self.mates_offset =
                    (self.mates_offset + 10).min(board.teammates.len().saturating_sub(1))
            }
            KeyCode::Enter | KeyCode::Char('v') => {
                if let Some(p) = board.pending.get(self.selected) {
                    self.screen = Screen::Request(p.request_id.clone())
                }
            }
            KeyCode::Char(c @ ('a' | 'y' | 'A')) => match board.pending.get(self.selected) {
                Some(p) => return approve(board, &p.request_id, c == 'A'),
                None => self.note = Some("nothing waits for approval".into()),
            },
            KeyCode::Char('d') | KeyCode::Char('n') => {
                if let Some(p) = board.pending.get(self.selected) {
                    self.screen = Screen::Reason(p.request_id.clone(), String::new())
                }
            }
            KeyCode::Char('m') if !board.teammates.is_empty() => {
                self.screen = Screen::Message(0, String::new())
            }
            _ => {}
        }
        Action::None
    }
}

/// Approves the pending request `id`, if it still waits.
fn approve(board: &Board, id: &str, remember: bool) -> Action {
    match board.pending.iter().find(|p| p.request_id == id) {
        Some(p) => Action::Approve {
            id: p.request_id.clone(),
            kind: p.kind,
            remember,
        },
        None => Action::None,
    }
}

/// Applies a typing key to a line of text.
fn edit(text: &mut String, code: KeyCode) {
    match code {
        KeyCode::Char(c) => text.push(c),
        KeyCode::Backspace => {
            text.pop();
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::PendingView;

    fn board(pending: usize) -> Board {
        Board {
            team: "t".into(),
            description: None,
            lead: "team-lead".into(),
            teammates: vec![
                super::super::board::MateRow {
                    name: "alice".into(),
                    color: None,
                    state: super::super::board::MateState::Idle,
                    backend: None,
                    task: None,
                    last_activity: None,
                    model: None,
                    subagents: None,
                },
                super::super::board::MateRow {
                    name: "bob".into(),
                    color: None,
                    state: super::super::board::MateState::Idle,
                    backend: None,
                    task: None,
                    last_activity: None,
                    model: None,
                    subagents: None,
                },
            ],
            tasks: vec![],
            completed: 0,
            pending: (0..pending)
                .map(|i| PendingView {
                    kind: "permission",
                    request_id: format!("perm-{i}"),
                    from: "alice".into(),
                    what: "Write".into(),
                    detail: "Write x".into(),
                })
                .collect(),
            feed: vec![],
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(ui: &mut Ui, b: &Board, text: &str) {
        for c in text.chars() {
            assert_eq!(ui.on_key(key(KeyCode::Char(c)), b), Action::None);
        }
    }

    #[test]
    fn a_approves_the_selected_request() {
        let b = board(2);
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Down), &b);
        assert_eq!(
            ui.on_key(key(KeyCode::Char('a')), &b),
            Action::Approve {
                id: "perm-1".into(),
                kind: "permission",
                remember: false
            }
        );
    }

    #[test]
    fn shift_a_approves_and_remembers() {
        let b = board(1);
        let mut ui = Ui::default();
        assert_eq!(
            ui.on_key(key(KeyCode::Char('A')), &b),
            Action::Approve {
                id: "perm-0".into(),
                kind: "permission",
                remember: true
            }
        );
    }

    #[test]
    fn d_asks_a_reason_and_enter_denies_with_it() {
        let b = board(1);
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Char('d')), &b);
        typed(&mut ui, &b, "not there");
        ui.on_key(key(KeyCode::Backspace), &b);
        assert_eq!(
            ui.on_key(key(KeyCode::Enter), &b),
            Action::Deny {
                id: "perm-0".into(),
                kind: "permission",
                reason: "not ther".into()
            }
        );
        assert_eq!(ui.screen, Screen::Board);
    }

    #[test]
    fn an_empty_reason_gets_the_default_and_esc_cancels() {
        let b = board(1);
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Char('d')), &b);
        assert_eq!(ui.on_key(key(KeyCode::Esc), &b), Action::None);
        assert_eq!(ui.screen, Screen::Board);
        ui.on_key(key(KeyCode::Char('v')), &b);
        assert_eq!(ui.screen, Screen::Request("perm-0".into()));
        ui.on_key(key(KeyCode::Char('d')), &b);
        match ui.on_key(key(KeyCode::Enter), &b) {
            Action::Deny { reason, .. } => assert_eq!(reason, DEFAULT_REASON),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn m_picks_a_teammate_with_tab_and_sends_the_typed_text() {
        let b = board(0);
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Char('m')), &b);
        ui.on_key(key(KeyCode::Tab), &b);
        typed(&mut ui, &b, "quit q"); // `q` is text here, not quit
        assert_eq!(
            ui.on_key(key(KeyCode::Enter), &b),
            Action::Send {
                to: "bob".into(),
                text: "quit q".into()
            }
        );
    }

    #[test]
    fn a_request_answered_elsewhere_closes_and_a_key_cannot_answer_another() {
        let b = board(2);
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Char('v')), &b);
        assert_eq!(ui.screen, Screen::Request("perm-0".into()));
        // perm-0 was answered by someone else; perm-1 is now first.
        let mut after = board(2);
        after.pending.remove(0);
        ui.clamp(&after);
        assert_eq!(ui.screen, Screen::Board);
        assert!(ui.note.as_deref().unwrap().contains("perm-0"));
        // Denying from the reason screen also names its own request only.
        ui.on_key(key(KeyCode::Char('d')), &after);
        assert_eq!(ui.screen, Screen::Reason("perm-1".into(), String::new()));
        assert_eq!(ui.on_key(key(KeyCode::Enter), &board(0)), Action::None);
    }

    #[test]
    fn with_nothing_pending_approve_says_so_and_q_quits() {
        let b = board(0);
        let mut ui = Ui::default();
        assert_eq!(ui.on_key(key(KeyCode::Char('a')), &b), Action::None);
        assert!(ui.note.is_some());
        assert_eq!(ui.on_key(key(KeyCode::Char('q')), &b), Action::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        ui.screen = Screen::Message(0, String::new());
        assert_eq!(ui.on_key(ctrl_c, &b), Action::Quit);
    }
}
