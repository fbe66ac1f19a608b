//! The live view's keyboard: what each key does in each screen, as a pure
//! state machine ([`Ui::on_key`] turns a key into an [`Action`] for the lead
//! to carry out), so it can be tested without a terminal.
//!
//! | screen | keys |
//! |---|---|
//! | board | `↑`/`↓` (`k`/`j`) move in the focused list (the requests while one waits, else the teammates) · `Shift-↑`/`Shift-↓` pick a teammate (focus on teammates) · `Tab` switch focus · `Enter` open the focused one (a request, or the teammate's detail) · `v` view the request · `a` approve · `A` approve and remember (a permission's suggested rule or mode) · `d` deny (asks a reason) · `m` message a teammate · `PgUp`/`PgDn` scroll teammates · `?` help · `q` quit |
//! | request | `a` approve · `A` approve and remember · `d` deny · `Esc`/`q` back |
//! | reason | type the reason · `Enter` deny with it · `Esc` cancel |
//! | message | `Tab`/`↑`/`↓` pick the teammate · type · `Enter` send · `Esc` cancel |
//! | teammate detail | `m` message it · `Esc`/`q`/`Enter` back |
//! | help | any key back |
//!
//! `Ctrl-C` quits from every screen (raw mode turns it into a key). [`HELP`]
//! is this table as the help screen shows it.

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
    /// One teammate (by name) in detail: recent turns, tool calls, log.
    Detail(String),
    /// The help: every key.
    Help,
}

/// Which list of the board `↑`/`↓` and `Enter` act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Focus {
    /// The requests waiting for the lead (when one waits).
    #[default]
    Requests,
    /// The teammates.
    Teammates,
}

/// Every key of every screen, as the help screen lists them: (screen,
/// keys, what they do).
pub const HELP: &[(&str, &str, &str)] = &[
    (
        "board",
        "↑ ↓  k j",
        "move in the requests (teammates when none waits)",
    ),
    ("board", "Shift-↑ Shift-↓", "pick a teammate"),
    ("board", "Tab", "focus requests / teammates"),
    (
        "board",
        "Enter",
        "open the request, or the teammate's detail",
    ),
    ("board", "v", "view the selected request in full"),
    (
        "board",
        "a  A",
        "approve · approve and remember its suggestion",
    ),
    ("board", "d", "deny (type a reason)"),
    ("board", "m", "message a teammate"),
    ("board", "PgUp PgDn", "scroll the teammates"),
    ("board", "?", "this help"),
    ("board", "q  Ctrl-C", "quit"),
    (
        "request",
        "a  A  d",
        "approve · approve and remember · deny",
    ),
    ("request", "Esc  q", "back"),
    (
        "reason",
        "Enter  Esc",
        "deny with the typed reason · cancel",
    ),
    (
        "message",
        "Tab ↑ ↓",
        "pick the teammate (Enter send · Esc cancel)",
    ),
    ("teammate", "m", "message this teammate"),
    (
        "teammate",
        "PgUp PgDn  ↑ ↓",
        "scroll its log back and forth",
    ),
    ("teammate", "Esc  q  Enter", "back"),
    ("help", "any key", "back"),
];

/// What the keyboard has chosen so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ui {
    /// The screen.
    pub screen: Screen,
    /// Index of the chosen pending request.
    pub selected: usize,
    /// First teammate row shown (scrolling).
    pub mates_offset: usize,
    /// Index of the chosen teammate.
    pub mate: usize,
    /// How many lines a teammate's detail has its log scrolled back from
    /// the end (0: the last lines; the drawing keeps it in range).
    pub detail_back: usize,
    /// Which list `↑`/`↓` and `Enter` act on.
    pub focus: Focus,
    /// The result of the last action, shown in the footer.
    pub note: Option<String>,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            screen: Screen::Board,
            selected: 0,
            mates_offset: 0,
            mate: 0,
            detail_back: 0,
            focus: Focus::Requests,
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
        self.mate = self.mate.min(board.teammates.len().saturating_sub(1));
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
            Screen::Detail(name) => match key.code {
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => Action::None,
                KeyCode::Char('m') => {
                    let to = board.teammates.iter().position(|m| m.name == name);
                    self.screen = match to {
                        Some(to) => Screen::Message(to, String::new()),
                        None => Screen::Detail(name),
                    };
                    Action::None
                }
                KeyCode::PageUp | KeyCode::Up | KeyCode::Char('k') => {
                    let by = if key.code == KeyCode::PageUp { 10 } else { 1 };
                    self.detail_back = self.detail_back.saturating_add(by);
                    self.screen = Screen::Detail(name);
                    Action::None
                }
                KeyCode::PageDown | KeyCode::Down | KeyCode::Char('j') => {
                    let by = if key.code == KeyCode::PageDown { 10 } else { 1 };
                    self.detail_back = self.detail_back.saturating_sub(by);
                    self.screen = Screen::Detail(name);
                    Action::None
                }
                _ => {
                    self.screen = Screen::Detail(name);
                    Action::None
                }
            },
            // Any key closes the help.
            Screen::Help => Action::None,
        }
    }

    /// Whether `↑`/`↓` and `Enter` act on the requests now: focus is there
    /// and one waits.
    fn on_requests(&self, board: &Board) -> bool {
        self.focus == Focus::Requests && !board.pending.is_empty()
    }

    /// Moves the teammate selection by `down` rows (negative: up).
    fn move_mate(&mut self, board: &Board, down: isize) {
        let last = board.teammates.len().saturating_sub(1);
        self.mate = self.mate.saturating_add_signed(down).min(last);
        self.focus = Focus::Teammates;
    }

    fn on_board(&mut self, key: KeyEvent, board: &Board) -> Action {
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') => self.screen = Screen::Help,
            KeyCode::Up if shift => self.move_mate(board, -1),
            KeyCode::Down if shift => self.move_mate(board, 1),
            KeyCode::Tab | KeyCode::BackTab => {
                self.focus = match self.focus {
                    Focus::Requests => Focus::Teammates,
                    Focus::Teammates => Focus::Requests,
                }
            }
            KeyCode::Up | KeyCode::Char('k') if !self.on_requests(board) => {
                self.move_mate(board, -1)
            }
            KeyCode::Down | KeyCode::Char('j') if !self.on_requests(board) => {
                self.move_mate(board, 1)
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(board.pending.len().saturating_sub(1))
            }
            KeyCode::Enter if !self.on_requests(board) => {
                if let Some(m) = board.teammates.get(self.mate) {
                    self.detail_back = 0;
                    self.screen = Screen::Detail(m.name.clone())
                }
            }
            // Scrolling carries the chosen teammate along, so it stays in sight.
            KeyCode::PageUp => {
                self.mates_offset = self.mates_offset.saturating_sub(10);
                self.mate = self.mate.saturating_sub(10);
            }
            KeyCode::PageDown => {
                let last = board.teammates.len().saturating_sub(1);
                self.mates_offset = (self.mates_offset + 10).min(last);
                self.mate = (self.mate + 10).min(last);
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
                let to = match self.focus {
                    Focus::Teammates => self.mate.min(board.teammates.len() - 1),
                    Focus::Requests => 0,
                };
                self.screen = Screen::Message(to, String::new())
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
                    state: super::super::board::MemberState::Idle,
                    backend: None,
                    task: None,
                    last_activity: None,
                    model: None,
                    subagents: None,
                    turn_started: None,
                    thinking: false,
                },
                super::super::board::MateRow {
                    name: "bob".into(),
                    color: None,
                    state: super::super::board::MemberState::Idle,
                    backend: None,
                    task: None,
                    last_activity: None,
                    model: None,
                    subagents: None,
                    turn_started: None,
                    thinking: false,
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
            routing: Default::default(),
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

    #[test]
    fn shift_down_picks_a_teammate_enter_opens_its_detail_and_esc_goes_back() {
        let b = board(1);
        let mut ui = Ui::default();
        let shift_down = KeyEvent::new(KeyCode::Down, KeyModifiers::SHIFT);
        assert_eq!(ui.on_key(shift_down, &b), Action::None);
        assert_eq!((ui.mate, ui.focus), (1, Focus::Teammates));
        ui.on_key(key(KeyCode::Enter), &b);
        assert_eq!(ui.screen, Screen::Detail("bob".into()));
        ui.on_key(key(KeyCode::Char('a')), &b);
        assert_eq!(
            ui.screen,
            Screen::Detail("bob".into()),
            "a key of the board does nothing here"
        );
        // PgUp / PgDn and ↑ / ↓ scroll the log, never below its end.
        ui.on_key(key(KeyCode::PageUp), &b);
        ui.on_key(key(KeyCode::Up), &b);
        assert_eq!(ui.detail_back, 11);
        ui.on_key(key(KeyCode::PageDown), &b);
        ui.on_key(key(KeyCode::PageDown), &b);
        assert_eq!(
            (ui.detail_back, &ui.screen),
            (0, &Screen::Detail("bob".into()))
        );
        ui.on_key(key(KeyCode::Esc), &b);
        assert_eq!(ui.screen, Screen::Board);
        // Tab gives the focus back to the request, which Enter opens.
        ui.on_key(key(KeyCode::Tab), &b);
        ui.on_key(key(KeyCode::Enter), &b);
        assert_eq!(ui.screen, Screen::Request("perm-0".into()));
    }

    #[test]
    fn with_nothing_pending_arrows_and_jk_move_between_teammates() {
        let b = board(0);
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Char('j')), &b);
        assert_eq!(ui.mate, 1);
        ui.on_key(key(KeyCode::Down), &b);
        assert_eq!(ui.mate, 1, "stays on the last teammate");
        ui.on_key(key(KeyCode::Up), &b);
        assert_eq!(ui.mate, 0);
        ui.on_key(key(KeyCode::Char('m')), &b);
        assert_eq!(ui.screen, Screen::Message(0, String::new()));
    }

    #[test]
    fn question_mark_opens_the_help_and_any_key_closes_it() {
        let b = board(1);
        let mut ui = Ui::default();
        ui.on_key(key(KeyCode::Char('?')), &b);
        assert_eq!(ui.screen, Screen::Help);
        assert_eq!(
            ui.on_key(key(KeyCode::Char('a')), &b),
            Action::None,
            "a does not approve behind the help"
        );
        assert_eq!(ui.screen, Screen::Board);
    }

    #[test]
    fn the_help_names_every_key_of_the_board() {
        for k in [
            "Shift-↑",
            "Enter",
            "?",
            "q",
            "a  A",
            "d",
            "m",
            "v",
            "Tab",
            "PgUp",
        ] {
            assert!(HELP.iter().any(|(_, keys, _)| keys.contains(k)), "{k}");
        }
    }
}
