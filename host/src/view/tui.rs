//! The terminal side of the live view: raw mode and the alternate screen
//! (restored on every way out, a panic included), a thread that turns key
//! presses and resizes into [`Input`]s, and the loop that reads the board
//! again after each burst of changes, redraws, and carries out what the
//! person chose. While a teammate is busy it also redraws every
//! [`SPIN`] for the spinner. Once the alternate screen is gone it prints the
//! last frame as plain text, and every failed teammate's whole reason, so
//! the end of a run stays on the terminal.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ratatui::crossterm::event::{
    self, Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use ratatui::widgets::Paragraph;

use super::board::{Board, MemberState};
use super::detail::Detail;
use super::fit::Moment;
use super::keys::{Action, Screen, Ui};
use super::lead::Seat;
use super::render::draw;
use super::Input;
use crate::protocol::describe::printable_line;

/// How often the key thread looks up from waiting for a key to see whether
/// the view has ended (it cannot be interrupted while it reads).
const KEY_POLL: Duration = Duration::from_millis(100);

/// How often the spinner turns while a teammate is busy.
const SPIN: Duration = Duration::from_millis(200);

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The person quit: how (`q in the live view`, `Ctrl-C in the live
    /// view`: raw mode makes Ctrl-C a key).
    Quit(&'static str),
    /// The program asked it to stop ([`Input::Stop`]) or every sender is gone.
    Stopped,
}

/// Runs the view on this thread's terminal until the person quits or
/// [`Input::Stop`] arrives. `tx` is the sending side of `rx`, for the key
/// thread.
pub fn run(seat: &Seat, title: &str, tx: Sender<Input>, rx: Receiver<Input>) -> io::Result<Ended> {
    let mut terminal = ratatui::try_init()?;
    super::stderr::hold(true);
    let keys = KeyThread::start(tx);
    let mut last = LastFrame::default();
    let ended = event_loop(&mut terminal, seat, title, &rx, &mut last);
    keys.stop();
    let restored = ratatui::try_restore();
    if restored.is_ok() {
        last.print(&mut io::stdout().lock())?;
    }
    super::stderr::hold(false);
    restored?;
    ended
}

/// What the view showed last, kept to be printed once the alternate screen
/// is gone.
#[derive(Debug, Default)]
struct LastFrame {
    /// The frame's lines, trailing blanks trimmed.
    lines: Vec<String>,
    /// Every failed teammate's whole reason (`name failed: why`).
    reasons: Vec<String>,
}

impl LastFrame {
    fn keep(&mut self, buffer: &ratatui::buffer::Buffer, board: Option<&Board>) {
        self.lines = (0..buffer.area.height)
            .map(|y| {
                let line: String = (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect();
                line.trim_end().to_string()
            })
            .collect();
        while self.lines.last().is_some_and(|l| l.is_empty()) {
            self.lines.pop();
        }
        self.reasons = board
            .into_iter()
            .flat_map(|b| &b.teammates)
            .filter_map(|m| match &m.state {
                MemberState::Failed(why) => {
                    Some(format!("{} failed: {}", m.name, printable_line(why)))
                }
                _ => None,
            })
            .collect();
    }

    /// Prints the frame, then the reasons. The frame holds only what the
    /// board made printable.
    fn print(&self, out: &mut impl io::Write) -> io::Result<()> {
        for l in self.lines.iter().chain(&self.reasons) {
            writeln!(out, "{l}")?;
        }
        out.flush()
    }
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    seat: &Seat,
    title: &str,
    rx: &Receiver<Input>,
    last: &mut LastFrame,
) -> io::Result<Ended> {
    let mut ui = Ui::default();
    let mut board = read(seat, None, &mut ui);
    let mut detail: Option<Detail> = None;
    let mut tick = 0usize;
    let mut stopping = false;
    loop {
        match &board {
            Some(b) => {
                ui.clamp(b);
                let moment = Moment {
                    now: std::time::SystemTime::now(),
                    tick,
                };
                let frame = terminal.draw(|f| draw(f, b, &ui, title, &moment, detail.as_ref()))?;
                last.keep(frame.buffer, Some(b));
            }
            None => {
                let text = format!(
                    "{}\n\n(q quits)",
                    ui.note.as_deref().unwrap_or("reading the team…")
                );
                let frame = terminal.draw(|f| f.render_widget(Paragraph::new(text), f.area()))?;
                last.keep(frame.buffer, None);
            }
        }
        // The frame just drawn read the board after the stop arrived: it is
        // the one left on the terminal.
        if stopping {
            return Ok(Ended::Stopped);
        }
        let busy = board
            .as_ref()
            .is_some_and(|b| b.teammates.iter().any(|m| m.busy()));
        let first = if busy {
            match rx.recv_timeout(SPIN) {
                Ok(input) => input,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    tick = tick.wrapping_add(1);
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(Ended::Stopped),
            }
        } else {
            match rx.recv() {
                Ok(input) => input,
                Err(_) => return Ok(Ended::Stopped),
            }
        };
        tick = tick.wrapping_add(1);
        // A burst of inputs is handled before the board is read again.
        let mut changed = false;
        for input in std::iter::once(first).chain(rx.try_iter()) {
            match input {
                // Drawn once more first: the last frame shows the team as
                // the stop found it (teammates stopped, not as they were
                // at the last change the view had read).
                Input::Stop => {
                    stopping = true;
                    changed = true;
                }
                Input::Changed | Input::Resize => changed = true,
                Input::Note(who, what) => {
                    use crate::protocol::describe::printable_line;
                    ui.note = Some(format!(
                        "{}: {}",
                        printable_line(&who),
                        printable_line(&what)
                    ))
                }
                Input::Key(key) => {
                    let Some(b) = &board else {
                        if is_quit(&key) {
                            return Ok(Ended::Quit(quit_how(&key)));
                        }
                        continue;
                    };
                    let action = ui.on_key(key, b);
                    if action == Action::Quit {
                        return Ok(Ended::Quit(quit_how(&key)));
                    }
                    if action != Action::None {
                        ui.note = Some(match seat.act(&action) {
                            Ok(note) => note.unwrap_or_default(),
                            Err(e) => format!("could not do that: {e}"),
                        });
                        changed = true;
                    }
                }
            }
        }
        let opened = match (&ui.screen, &detail) {
            (Screen::Detail(name), Some(d)) => &d.name != name,
            (Screen::Detail(_), None) => true,
            _ => false,
        };
        if changed {
            board = read(seat, board, &mut ui);
        }
        detail = match &ui.screen {
            Screen::Detail(name) if changed || opened => Some(seat.detail(name)),
            Screen::Detail(_) => detail,
            _ => None,
        };
    }
}

fn is_quit(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('q') || is_ctrl_c(key)
}

fn is_ctrl_c(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

/// How the person quit with `key`, as a run reports it.
fn quit_how(key: &KeyEvent) -> &'static str {
    if is_ctrl_c(key) {
        "Ctrl-C in the live view"
    } else {
        "q in the live view"
    }
}

/// Reads the board again; keeps the last one (and says why) when the team
/// cannot be read.
fn read(seat: &Seat, last: Option<Board>, ui: &mut Ui) -> Option<Board> {
    match seat.board() {
        Ok(b) => Some(b),
        Err(e) => {
            ui.note = Some(if seat.exists() {
                format!("cannot read the team: {e}")
            } else {
                "the team was deleted (q quits)".to_string()
            });
            last
        }
    }
}

/// Reads the terminal's events on its own thread.
struct KeyThread {
    stop: Arc<AtomicBool>,
    join: JoinHandle<()>,
}

impl KeyThread {
    fn start(tx: Sender<Input>) -> KeyThread {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let join = std::thread::Builder::new()
            .name("teamhost-keys".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match event::poll(KEY_POLL) {
                        Ok(false) => continue,
                        Ok(true) => {}
                        Err(_) => return,
                    }
                    let input = match event::read() {
                        Ok(TermEvent::Key(k)) if k.kind != KeyEventKind::Release => Input::Key(k),
                        Ok(TermEvent::Resize(..)) => Input::Resize,
                        Ok(_) => continue,
                        Err(_) => return,
                    };
                    if tx.send(input).is_err() {
                        return;
                    }
                }
            })
            .expect("spawn the key thread");
        KeyThread { stop, join }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.join.join();
    }
}
