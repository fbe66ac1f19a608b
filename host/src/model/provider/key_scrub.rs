//! Takes a provider key out of a text: the key itself and every piece of it
//! long enough to matter.
//!
//! A provider may echo what it was sent, credentials included, in an error
//! body; the host passes such texts on to a guest, its log and its
//! transcript. Replacing only the whole key is not enough: a guest that pads
//! its request can place any later cut (of the message, of a log line) inside
//! an echoed key and receive the part before it. So [`KeyScrub`] masks every
//! run of the text that is covered by pieces of the key at least
//! [`MIN_FRAGMENT`] bytes long, wherever they come from in the key, and texts
//! are cut only after they have been scrubbed.
//!
//! Keys shorter than [`MIN_FRAGMENT`] bytes are masked whole (only when they
//! are at least 4 bytes: shorter "keys" are the placeholders a local server
//! takes, and masking every `x` would destroy the text, not protect it).
//! Keys are matched byte for byte: providers' keys are ASCII letters, digits,
//! `-` and `_`, which JSON and URL encoding leave as they are.

use std::collections::HashSet;

/// The shortest piece of a key that is masked wherever it appears.
pub const MIN_FRAGMENT: usize = 8;

/// What replaces a masked run.
pub const MASK: &str = "<redacted>";

/// One key's scrubber. Build it once per key; [`KeyScrub::scrub`] is linear
/// in the text.
#[derive(Clone)]
pub struct KeyScrub {
    /// Every `MIN_FRAGMENT`-byte window of the key.
    windows: HashSet<[u8; MIN_FRAGMENT]>,
    /// A key shorter than a window, masked whole.
    short: Option<String>,
}

impl std::fmt::Debug for KeyScrub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyScrub(<hidden>)")
    }
}

impl KeyScrub {
    /// The scrubber of `key`; `None` when there is nothing to scrub (a key
    /// shorter than 4 bytes).
    pub fn new(key: &str) -> Option<KeyScrub> {
        let bytes = key.as_bytes();
        if bytes.len() < 4 {
            return None;
        }
        if bytes.len() < MIN_FRAGMENT {
            return Some(KeyScrub {
                windows: HashSet::new(),
                short: Some(key.to_string()),
            });
        }
        let windows = bytes
            .windows(MIN_FRAGMENT)
            .map(|w| <[u8; MIN_FRAGMENT]>::try_from(w).expect("a window of MIN_FRAGMENT bytes"))
            .collect();
        Some(KeyScrub {
            windows,
            short: None,
        })
    }

    /// `text` with every run covered by pieces of the key (each at least
    /// [`MIN_FRAGMENT`] bytes) replaced by [`MASK`]. Runs are widened to
    /// character boundaries, so the result is always valid UTF-8.
    pub fn scrub(&self, text: &str) -> String {
        if let Some(key) = &self.short {
            return text.replace(key.as_str(), MASK);
        }
        let bytes = text.as_bytes();
        if bytes.len() < MIN_FRAGMENT {
            return text.to_string();
        }
        // covered[i]: byte i lies in a window that is a piece of the key.
        // `until` is the end of the last matching window seen so far.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut until = 0usize;
        for (start, w) in bytes.windows(MIN_FRAGMENT).enumerate() {
            let w: &[u8; MIN_FRAGMENT] = w.try_into().expect("window size");
            if !self.windows.contains(w) {
                continue;
            }
            let end = start + MIN_FRAGMENT;
            match runs.last_mut() {
                Some(last) if start <= until => last.1 = end,
                _ => runs.push((start, end)),
            }
            until = end;
        }
        if runs.is_empty() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (mut start, mut end) in runs {
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            while !text.is_char_boundary(end) {
                end += 1;
            }
            if start < at {
                // Widening joined it to the run before.
                start = at;
                out.truncate(out.len() - MASK.len());
            }
            out.push_str(&text[at..start]);
            out.push_str(MASK);
            at = end;
        }
        out.push_str(&text[at..]);
        out
    }
}

/// `text` cut to at most `max` characters, with `…` when something was cut.
/// Call it on scrubbed text only.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-0123456789abcdefghijKLMNOPQRSTUV";

    /// The first piece of the key, `MIN_FRAGMENT` bytes long, in `text`.
    fn leaks(text: &str) -> Option<&str> {
        (0..=KEY.len() - MIN_FRAGMENT)
            .map(|i| &KEY[i..i + MIN_FRAGMENT])
            .find(|piece| text.contains(piece))
    }

    #[test]
    fn the_whole_key_and_every_piece_of_eight_or_more_go() {
        let s = KeyScrub::new(KEY).unwrap();
        assert_eq!(s.scrub(&format!("bad key {KEY}.")), "bad key <redacted>.");
        for len in MIN_FRAGMENT..=KEY.len() {
            for start in 0..=KEY.len() - len {
                let piece = &KEY[start..start + len];
                let out = s.scrub(&format!("#{piece}#"));
                assert_eq!(out, "#<redacted>#", "piece {start}+{len}");
            }
        }
    }

    #[test]
    fn pieces_shorter_than_eight_and_other_text_stay() {
        let s = KeyScrub::new(KEY).unwrap();
        let short = &KEY[3..10];
        assert_eq!(s.scrub(&format!("x {short} y")), format!("x {short} y"));
        assert_eq!(s.scrub("nothing to see"), "nothing to see");
        assert_eq!(s.scrub(""), "");
    }

    #[test]
    fn two_pieces_side_by_side_and_overlapping_runs_make_one_mask() {
        let s = KeyScrub::new(KEY).unwrap();
        let text = format!("{}{} end", &KEY[20..], &KEY[..12]);
        let out = s.scrub(&text);
        assert!(leaks(&out).is_none(), "{out}");
        assert!(out.ends_with(" end"));
    }

    #[test]
    fn a_cut_after_the_scrub_leaves_nothing_of_the_key() {
        let s = KeyScrub::new(KEY).unwrap();
        for pad in 250..300 {
            let text = format!("{}{KEY} trailing", "p".repeat(pad));
            let out = cut(&s.scrub(&text), 300);
            assert!(leaks(&out).is_none(), "pad {pad}: {out}");
            assert!(out.chars().count() <= 301);
        }
    }

    #[test]
    fn multibyte_text_around_a_key_stays_valid() {
        let s = KeyScrub::new(KEY).unwrap();
        let out = s.scrub(&format!("é{KEY}ü…{}", &KEY[5..30]));
        assert_eq!(out, "é<redacted>ü…<redacted>");
    }

    #[test]
    fn short_keys_are_masked_whole_and_tiny_ones_not_at_all() {
        let s = KeyScrub::new("abcd12").unwrap();
        assert_eq!(s.scrub("key abcd12!"), "key <redacted>!");
        assert!(KeyScrub::new("x").is_none());
    }

    #[test]
    fn debug_hides_the_key() {
        let s = KeyScrub::new(KEY).unwrap();
        assert!(!format!("{s:?}").contains("sk-test"));
    }
}
