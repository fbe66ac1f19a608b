//! Fitting the live view into the terminal it has (80×24 and up), by
//! priorities rather than by cutting words: a state gets a short word chosen
//! to fit ([`state_word`]), less important columns go first, the keys bar
//! drops its least used keys but always keeps `? help` and `q quit`
//! ([`key_bar`]), and subjects wrap onto more lines ([`wrap`]); and what
//! moves on a busy board (the [`SPINNER`], a turn's [`elapsed`] time at a
//! [`Moment`]). Pure functions, so each rule has its own test.

use std::time::{Duration, SystemTime};

use ratatui::text::Line;

use super::board::MemberState;
use super::routing::WaitsFor;

/// The moment a frame is drawn: the time (for a turn's elapsed time) and
/// the spinner's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    /// Now.
    pub now: SystemTime,
    /// Counts redraws; picks the spinner's frame.
    pub tick: usize,
}

/// The spinner's frames, one per redraw while a teammate compiles, runs a
/// turn or waits on the model.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// How wide `text` is on a terminal (wide characters count two).
pub fn width(text: &str) -> usize {
    Line::raw(text).width()
}

/// The word shown for `state`: its full word ([`MemberState::word`]) when
/// `short` is false, else a word of at most 9 columns that still says the
/// same thing. `awaiting approval` becomes whom it waits for: `asks you`,
/// `asks lead` (a lead component), or `awaiting` when the view cannot tell
/// or the policy decides ([`short_wait`]).
pub fn state_word(state: &MemberState, short: bool) -> &'static str {
    state_word_for(state, short, None)
}

/// [`state_word`], for a teammate whose waiting request waits for `waits`.
pub fn state_word_for(state: &MemberState, short: bool, waits: Option<&WaitsFor>) -> &'static str {
    match (state, short) {
        (MemberState::AwaitingApproval, true) => short_wait(waits),
        _ => state.word(),
    }
}

/// `awaiting approval` in at most 9 columns, by whom it waits for.
fn short_wait(waits: Option<&WaitsFor>) -> &'static str {
    match waits {
        Some(WaitsFor::You | WaitsFor::Escalated { .. }) => "asks you",
        Some(WaitsFor::Lead) => "asks lead",
        Some(WaitsFor::Policy) | None => "awaiting",
    }
}

/// The widest word [`state_word`] gives with `short`.
pub fn state_width(short: bool) -> usize {
    if short {
        9
    } else {
        width(MemberState::AwaitingApproval.word())
    }
}

/// A turn's elapsed time in at most 6 columns: `9s`, `1m02s`, `12m30s`,
/// `1h03m`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// One key of the keys bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The key as shown (`a`, `⇧↑↓`, `Enter`).
    pub key: &'static str,
    /// What it does, in a word or two.
    pub what: &'static str,
    /// Lower is kept longer; `0` is always kept.
    pub rank: u8,
}

impl Key {
    /// `key what`.
    pub const fn new(key: &'static str, what: &'static str, rank: u8) -> Key {
        Key { key, what, rank }
    }

    fn text(&self) -> String {
        format!("{} {}", self.key, self.what)
    }
}

/// The separator between two keys of the bar.
const SEP: &str = " · ";

/// The keys bar for `width` columns: `keys` in their given order, leaving out
/// the highest ranks first until the bar fits. Keys of rank 0 stay whatever
/// the width (the bar is then as wide as they need).
pub fn key_bar(keys: &[Key], width: usize) -> String {
    let mut kept: Vec<bool> = vec![true; keys.len()];
    let bar = |kept: &[bool]| {
        keys.iter()
            .zip(kept)
            .filter(|(_, k)| **k)
            .map(|(k, _)| k.text())
            .collect::<Vec<_>>()
            .join(SEP)
    };
    let mut by_rank: Vec<usize> = (0..keys.len()).filter(|&i| keys[i].rank > 0).collect();
    // Highest rank first; among equals, the later key goes first.
    by_rank.sort_by_key(|&i| (std::cmp::Reverse(keys[i].rank), std::cmp::Reverse(i)));
    for i in by_rank {
        if self::width(&bar(&kept)) <= width {
            break;
        }
        kept[i] = false;
    }
    bar(&kept)
}

/// `text` wrapped at word boundaries into lines of at most `width` columns
/// (a word longer than a line is broken), at most `max_lines` lines; when
/// it needs more, the last line ends with `…`. Never empty.
pub fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = word.to_string();
        loop {
            let room = if line.is_empty() {
                width
            } else {
                width.saturating_sub(self::width(&line) + 1)
            };
            if self::width(&word) <= room {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(&word);
                break;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // A word longer than a whole line: break it.
            let (head, tail) = split_at_width(&word, width);
            lines.push(head);
            word = tail;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    if lines.len() > max_lines.max(1) {
        lines.truncate(max_lines.max(1));
        let last = lines.last_mut().expect("at least one line");
        while self::width(last) + 2 > width && last.pop().is_some() {}
        last.push_str(if last.is_empty() { "…" } else { " …" });
    }
    lines
}

/// `text` on one line of at most `width` columns: whole when it fits, else
/// cut and ended with `…`, at the last space when one leaves at least half
/// the room (so a word is cut only when it alone is longer than that), so
/// the reader always sees that something is left out.
pub fn clip(text: &str, width: usize) -> String {
    if self::width(text) <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let (head, rest) = split_at_width(text, width - 1);
    let whole_words = rest.starts_with(' ');
    let head = match head.rfind(' ') {
        _ if whole_words => head.trim_end(),
        Some(at) if self::width(&head[..at]) * 2 >= width => head[..at].trim_end(),
        _ => head.as_str(),
    };
    format!("{head}…")
}

/// The longest head of `word` that fits `width` columns (at least one
/// character), and the rest.
fn split_at_width(word: &str, width: usize) -> (String, String) {
    let mut head = String::new();
    for (i, c) in word.char_indices() {
        let mut next = head.clone();
        next.push(c);
        if self::width(&next) > width && !head.is_empty() {
            return (head, word[i..].to_string());
        }
        head = next;
    }
    (head, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [Key; 5] = [
        Key::new("?", "help", 0),
        Key::new("a", "approve", 1),
        Key::new("m", "message", 3),
        Key::new("PgUp/PgDn", "scroll", 4),
        Key::new("q", "quit", 0),
    ];

    #[test]
    fn the_keys_bar_drops_the_least_used_keys_first_and_keeps_help_and_quit() {
        assert_eq!(
            key_bar(&KEYS, 200),
            "? help · a approve · m message · PgUp/PgDn scroll · q quit"
        );
        assert_eq!(
            key_bar(&KEYS, 40),
            "? help · a approve · m message · q quit"
        );
        assert_eq!(key_bar(&KEYS, 27), "? help · a approve · q quit");
        assert_eq!(key_bar(&KEYS, 26), "? help · q quit");
        assert_eq!(key_bar(&KEYS, 3), "? help · q quit", "rank 0 always stays");
    }

    #[test]
    fn a_short_awaiting_approval_says_whom_it_waits_for() {
        let a = MemberState::AwaitingApproval;
        assert_eq!(state_word_for(&a, true, Some(&WaitsFor::You)), "asks you");
        assert_eq!(
            state_word_for(
                &a,
                true,
                Some(&WaitsFor::Escalated {
                    by: crate::approvals::Decider::Lead
                })
            ),
            "asks you"
        );
        assert_eq!(state_word_for(&a, true, Some(&WaitsFor::Lead)), "asks lead");
        assert_eq!(
            state_word_for(&a, true, Some(&WaitsFor::Policy)),
            "awaiting"
        );
        assert_eq!(state_word(&a, true), "awaiting");
        for w in ["asks you", "asks lead", "awaiting"] {
            assert!(width(w) <= state_width(true));
        }
    }

    #[test]
    fn a_short_state_word_fits_nine_columns_and_a_long_one_is_whole() {
        assert_eq!(
            state_word(&MemberState::AwaitingApproval, false),
            "awaiting approval"
        );
        for s in [
            MemberState::Compiling,
            MemberState::Starting,
            MemberState::Active,
            MemberState::Idle,
            MemberState::Stopping,
            MemberState::AwaitingApproval,
            MemberState::Failed("x".into()),
            MemberState::Killed,
            MemberState::Dead,
            MemberState::Stopped,
            MemberState::Unknown,
        ] {
            assert!(width(state_word(&s, true)) <= state_width(true), "{s:?}");
            assert!(width(state_word(&s, false)) <= state_width(false), "{s:?}");
        }
    }

    #[test]
    fn subjects_wrap_at_words_and_say_when_they_go_on() {
        assert_eq!(
            wrap("Write down the river story", 12, 3),
            ["Write down", "the river", "story"]
        );
        assert_eq!(
            wrap("Write down the river story", 12, 2),
            ["Write down", "the river …"]
        );
        assert_eq!(wrap("abcdefghij", 4, 5), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4, 2), [""]);
    }

    #[test]
    fn a_clipped_line_fits_and_says_it_was_cut() {
        assert_eq!(clip("bob", 5), "bob");
        assert_eq!(clip("bob-the-long-name", 10), "bob-the-l…");
        assert_eq!(clip("waiting for you", 12), "waiting for…");
        assert_eq!(clip("a verylongword", 8), "a veryl…");
        assert_eq!(clip("anything", 0), "");
        for (text, w) in [
            ("bob-the-long-name", 10),
            ("waiting for you", 12),
            ("日本語の名前", 5),
        ] {
            assert!(width(&clip(text, w)) <= w, "{text} at {w}");
        }
    }

    #[test]
    fn elapsed_time_stays_short() {
        assert_eq!(elapsed(Duration::from_secs(9)), "9s");
        assert_eq!(elapsed(Duration::from_secs(62)), "1m02s");
        assert_eq!(elapsed(Duration::from_secs(3780)), "1h03m");
    }
}
