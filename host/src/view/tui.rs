//! The terminal side of the live view: raw mode and the alternate screen
//! (restored on every way out, a panic included), a thread that turns key
//! presses and resizes into [`Input`]s, and the loop that reads the board
//! again after each burst of changes, redraws, and carries out what the
//! person chose.

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

use super::board::Board;
use super::keys::{Action, Ui};
use super::lead::Seat;
use super::render::draw;
use super::Input;

/// How often the key thread looks up from waiting for a key to see whether
/// the view has ended (it cannot be interrupted while it reads).
const KEY_POLL: Duration = Duration::from_millis(100);

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The person quit (`q`, `Ctrl-C`).
    Quit,
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
    let ended = event_loop(&mut terminal, seat, title, &rx);
    keys.stop();
    let restored = ratatui::try_restore();
    super::stderr::hold(false);
    restored?;
    ended
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    seat: &Seat,
    title: &str,
    rx: &Receiver<Input>,
) -> io::Result<Ended> {
    let mut ui = Ui::default();
    let mut board = read(seat, None, &mut ui);
    loop {
        match &board {
            Some(b) => {
                ui.clamp(b);
                terminal.draw(|f| draw(f, b, &ui, title))?;
            }
            None => {
                let text = format!(
                    "{}\n\n(q quits)",
                    ui.note.as_deref().unwrap_or("reading the team…")
                );
                terminal.draw(|f| f.render_widget(Paragraph::new(text), f.area()))?;
            }
        }
        let Ok(first) = rx.recv() else {
            return Ok(Ended::Stopped);
        };
        // A burst of inputs is handled before the board is read again.
        let mut changed = false;
        for input in std::iter::once(first).chain(rx.try_iter()) {
            match input {
                Input::Stop => return Ok(Ended::Stopped),
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
                            return Ok(Ended::Quit);
                        }
                        continue;
                    };
                    let action = ui.on_key(key, b);
                    if action == Action::Quit {
                        return Ok(Ended::Quit);
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
        if changed {
            board = read(seat, board, &mut ui);
        }
    }
}

fn is_quit(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('q')
        || (key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL))
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
