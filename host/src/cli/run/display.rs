//! Where `teamhost run` shows the run: the live view on a terminal
//! ([`crate::view::LiveView`]: answers permission and plan requests with a
//! key), else one timestamped line per event ([`Reporter`]); and what the
//! library's run narrates to (`crate::run::Narrator`).

use super::report::Reporter;
use crate::view::LiveView;

/// The run's display.
pub(super) enum Display {
    /// Plain event lines.
    Lines(Reporter),
    /// The full-screen live view.
    Screen(LiveView),
}

impl Display {
    /// A line of the run's own.
    pub(super) fn line(&self, who: &str, what: impl Into<String>) {
        match self {
            Display::Lines(r) => r.line(who, what),
            Display::Screen(v) => v.note(who, what),
        }
    }

    /// Resolves when the person quits the live view, saying how (`q in
    /// the live view`, `Ctrl-C in the live view`); never in line mode
    /// (Ctrl-C is a signal there).
    pub(super) async fn quit_requested(&self) -> &'static str {
        match self {
            Display::Lines(_) => std::future::pending().await,
            Display::Screen(v) => v.quit_requested().await,
        }
    }

    /// Ends the display: the last lines are printed, or the terminal is
    /// given back. A view that failed is reported on stderr; the run's
    /// summary still follows.
    pub(super) async fn stop(self) {
        match self {
            Display::Lines(r) => r.stop().await,
            Display::Screen(v) => match tokio::task::spawn_blocking(move || v.stop()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("teamhost run: {e}"),
                Err(e) => eprintln!("teamhost run: the live view panicked: {e}"),
            },
        }
    }
}

impl crate::run::Narrator for Display {
    fn line(&self, who: &str, what: String) {
        Display::line(self, who, what);
    }
}

impl crate::run::Narrator for super::report::Log {
    fn line(&self, who: &str, what: String) {
        super::report::Log::line(self, who, what);
    }
}

/// The display, with the watchdog armed when the work phase starts: what
/// `teamhost run` gives [`crate::run::Run::until_done`].
pub(super) struct Narration<'a> {
    pub(super) display: &'a Display,
    pub(super) watchdog: &'a super::watchdog::Watchdog,
}

impl crate::run::Narrator for Narration<'_> {
    fn line(&self, who: &str, what: String) {
        self.display.line(who, what);
    }

    fn work_started(&self, deadline: std::time::Instant) {
        self.watchdog.set_deadline(Some(deadline));
    }
}
