//! The lead's live view of a team: who is doing what, the task board with its
//! progress, what waits for the lead's answer, and the messages to the lead.
//! On a terminal it is a full-screen view that answers permission and plan
//! requests with a key and sends the lead's messages; without one the same
//! changes print as plain timestamped lines. `teamhost run` shows it for the
//! team it runs, `teamhost watch` for any team on disk (a Claude Code team
//! included: nothing is written unless the person answers or sends).
//!
//! It redraws when something changes (the store's change feed, and the
//! host's events inside `run`), reading the board once per burst of changes;
//! a timer only turns the spinner (and the turns' elapsed time) while a
//! teammate compiles, runs a turn or waits on the model. When it ends it
//! leaves its last frame on the terminal, with every failed teammate's
//! whole reason under it.
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`Input`], [`LiveView`] (the view on its own thread, for `run`), [`watch`] |
//! | `board.rs` | [`Board`]: what is shown, read from the files plus the host's states |
//! | `detail.rs` | [`Detail`]: one teammate's recent turns, tool calls and log tail |
//! | `keys.rs` | [`Ui`]: the keys of each screen as a state machine, and the [`Action`]s they ask for (the help lists them) |
//! | `render.rs` | drawing a board with ratatui |
//! | `fit.rs` | what gives way on a small terminal (short state words, columns, keys, wrapped subjects); the spinner and elapsed time at a [`Moment`] |
//! | `overlay.rs` | the screens over the board: a request, a typed line, a teammate's detail, the help |
//! | `style.rs` | colours of states and teammates |
//! | `lead.rs` | [`Seat`]: where the board comes from and how answers are written (through the one approval path, `embed::decide`) |
//! | `routing.rs` | who each waiting request waits for (the person, escalated, the lead, the policy) and the latest decision |
//! | `changes.rs` | the store's change feed and host events → [`Input::Changed`] |
//! | `tui.rs` | the terminal: raw mode, the key thread, the redraw loop |
//! | `lines.rs` | the plain-line mode |
//! | `stderr.rs` | log lines held back while the full screen is up |

mod board;
mod changes;
mod detail;
mod fit;
mod keys;
mod lead;
mod lines;
mod overlay;
mod render;
mod routing;
mod stderr;
mod style;
mod tui;

use std::io::IsTerminal;
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use ratatui::crossterm::event::KeyEvent;

use crate::embed::Host;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::store::Team;

pub use board::{clock, Board, MateRow, MemberState, TaskRow, FEED_LEN};
pub use changes::Changes;
pub use detail::Detail;
pub use fit::Moment;
pub use keys::{Action, Focus, Screen, Ui, DEFAULT_REASON, HELP};
pub use lead::Seat;
pub use lines::{changes as line_changes, opening as opening_lines};
pub use render::draw;
pub use stderr::StderrUnlessViewing;
pub use tui::Ended;

/// What the view loop reacts to.
#[derive(Debug, Clone)]
pub enum Input {
    /// A key press.
    Key(KeyEvent),
    /// The terminal changed size.
    Resize,
    /// Something in the team may have changed: read the board again.
    Changed,
    /// A line from the program running the view (`who`, `what`), shown in the
    /// footer.
    Note(String, String),
    /// End the view.
    Stop,
}

/// Whether the full-screen view can run here: stdin and stdout are both
/// terminals.
pub fn terminal_available() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// The full-screen view running on its own thread, for a program that goes on
/// meanwhile (`teamhost run`). Stop it with [`LiveView::stop`] before printing
/// anything: until then it owns the terminal.
pub struct LiveView {
    tx: Sender<Input>,
    thread: Option<JoinHandle<std::io::Result<Ended>>>,
    quit: tokio::sync::watch::Receiver<Option<&'static str>>,
    forward: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveView").finish_non_exhaustive()
    }
}

impl LiveView {
    /// Starts the view of `seat`'s team, titled `title`. With a host seat it
    /// also follows the host's events, so it must be called inside a tokio
    /// runtime.
    pub fn start(seat: Seat, host: Option<&Host>, title: &str) -> Result<LiveView> {
        let (tx, rx) = mpsc::channel();
        let _changes = Changes::start(seat.team(), tx.clone())?;
        let forward = host.map(|h| changes::forward_host_events(h, seat.team().name(), tx.clone()));
        let (quit_tx, quit) = tokio::sync::watch::channel(None);
        let keys_tx = tx.clone();
        let title = title.to_string();
        let thread = std::thread::Builder::new()
            .name("teamhost-view".into())
            .spawn(move || {
                let ended = tui::run(&seat, &title, keys_tx, rx);
                if let Ok(Ended::Quit(how)) = &ended {
                    let _ = quit_tx.send(Some(*how));
                }
                ended
            })
            .map_err(|e| Error::HostTask(format!("cannot start the live view: {e}")))?;
        Ok(LiveView {
            tx,
            thread: Some(thread),
            quit,
            forward,
        })
    }

    /// Shows a line of the program's own (`who`, `what`) in the footer; once
    /// the person has quit the view, on stderr.
    pub fn note(&self, who: &str, what: impl Into<String>) {
        let what = what.into();
        if self.quit.borrow().is_some() {
            use crate::protocol::describe::printable_line;
            eprintln!("{}: {}", printable_line(who), printable_line(&what));
        } else {
            let _ = self.tx.send(Input::Note(who.into(), what));
        }
    }

    /// Resolves when the person quits the view, saying how (`q in the live
    /// view`, `Ctrl-C in the live view`: raw mode makes Ctrl-C a key), or
    /// when the view ended otherwise (`the live view ended`).
    pub async fn quit_requested(&self) -> &'static str {
        let mut quit = self.quit.clone();
        let how = match quit.wait_for(Option::is_some).await {
            Ok(how) => how.unwrap_or("the live view ended"),
            Err(_) => "the live view ended",
        };
        how
    }

    /// Ends the view and gives the terminal back.
    pub fn stop(mut self) -> Result<()> {
        let _ = self.tx.send(Input::Stop);
        if let Some(f) = self.forward.take() {
            f.abort();
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => Err(Error::LiveView(format!("the live view failed: {e}"))),
            Some(Err(_)) => Err(Error::HostTask("the live view panicked".into())),
            _ => Ok(()),
        }
    }
}

/// How [`watch`] shows the team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// The full-screen view (needs a terminal).
    Screen,
    /// Plain timestamped lines on stdout.
    Lines,
}

/// Watches `team` until the person quits (full screen) or the team is
/// deleted (lines). Blocks the calling thread.
pub fn watch(team: Team, home: Option<Home>, mode: WatchMode) -> Result<()> {
    if !team.exists() {
        return Err(Error::LiveView(format!(
            "no team {:?} at {}; `teamhost team list` shows the teams under this home (--home ~/.claude for Claude Code's)",
            team.name(),
            team.location().display()
        )));
    }
    let (tx, rx) = mpsc::channel();
    let _changes = Changes::start(&team, tx.clone())?;
    let seat = match home {
        Some(h) => Seat::watching(team).with_home(h),
        None => Seat::watching(team),
    };
    match mode {
        WatchMode::Screen => tui::run(&seat, "teamhost watch", tx, rx)
            .map(|_| ())
            .map_err(|e| Error::LiveView(format!("the live view failed: {e}"))),
        WatchMode::Lines => match lines::run(&seat, rx, &mut std::io::stdout().lock()) {
            // The reader went away (`| head`): the watch is over.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r.map_err(|e| Error::LiveView(format!("cannot print the team's changes: {e}"))),
        },
    }
}
